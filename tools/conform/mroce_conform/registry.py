"""Cases, named by the SPEC clause they check, and their results."""

import fnmatch
import re
import time
import traceback

from .session import Fail, Skip

CASES = []


class Case:
    def __init__(self, name, level, title, fn, xfail=None, needs=()):
        self.name, self.level, self.title, self.fn = name, level, title, fn
        self.xfail = xfail
        self.needs = needs

    @property
    def section(self):
        """The SPEC section: the number before the first dot or dash ("A" for the
        appendix)."""
        return re.match(r"[0-9A-Z]+", self.name).group(0)


def case(name, level, title, xfail=None, needs=()):
    """Registers a case. `level` is the SPEC's word (MUST, SHOULD, or - for a check of a
    plain statement); `xfail` names a known defect of the device under test."""
    def register(fn):
        if any(c.name == name for c in CASES):
            raise ValueError("two cases named " + name)
        CASES.append(Case(name, level, title, fn, xfail, needs))
        return fn
    return register


def select(patterns):
    if not patterns:
        return list(CASES)
    out = []
    for c in CASES:
        if any(fnmatch.fnmatch(c.name, p) or p in c.name for p in patterns):
            out.append(c)
    return out


class Result:
    def __init__(self, case, status, reason, seconds):
        self.case, self.status, self.reason, self.seconds = case, status, reason, seconds

    @property
    def failed(self):
        return self.status in ("fail", "error")


def run_case(c, env):
    start = time.monotonic()
    try:
        missing = [n for n in c.needs if not env.has(n)]
        if missing:
            raise Skip("needs " + ", ".join(missing))
        reason = c.fn(env) or "as specified"
        status = "pass"
    except Fail as e:
        status, reason = "fail", str(e)
    except Skip as e:
        status, reason = "skip", str(e)
    except Exception as e:  # a crash of the case or a broken target is an error, not a pass
        status = "error"
        reason = "%s: %s (%s)" % (type(e).__name__, e,
                                  traceback.extract_tb(e.__traceback__)[-1].lineno)
    if c.level == "SHOULD" and status == "fail":
        status = "warn"  # a SHOULD not met is reported, and fails no run (RFC 2119)
    elif c.xfail and status == "fail":
        status, reason = "xfail", "%s [known: %s]" % (reason, c.xfail)
    elif c.xfail and status == "pass":
        status, reason = "xpass", "%s [passes; marked as known: %s]" % (reason, c.xfail)
    return Result(c, status, reason, time.monotonic() - start)
