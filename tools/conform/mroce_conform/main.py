"""Command line of the compliance suite: mroce-conform --target HOST:PORT [options]."""

import argparse
import collections
import sys
import xml.etree.ElementTree as ET

from . import cases  # noqa: F401  (registers the cases)
from . import coverage
from .registry import CASES, select, run_case
from .session import Env
from .target import TargetError


def parse(argv):
    p = argparse.ArgumentParser(
        prog="mroce-conform",
        description="Black-box MetaRoCE compliance suite: plays the peer of a device under "
                    "test over UDP and judges its answers against docs/SPEC.md.")
    p.add_argument("--target", metavar="HOST:PORT", default="127.0.0.1:18515",
                   help="control address of the device's mroce-target (default %(default)s)")
    p.add_argument("--port-base", type=int, default=4793,
                   help="UDP port of QPN slot 0 (docs/SPEC.md Appendix A; default %(default)s)")
    p.add_argument("--tester-planes", metavar="A[,B...]",
                   help="the tester's local addresses, one per plane (default: the device's)")
    p.add_argument("--first-slot", type=int, default=1,
                   help="first tester slot: its UDP port is port-base + slot (default 1)")
    p.add_argument("--paths", type=int, default=4, help="paths the tester announces")
    p.add_argument("--counters", metavar="CMD",
                   help="shell command printing the device's counters as JSON (default: the "
                        "target's sysfs hw_counters)")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--coverage", action="store_true",
                   help="map every MUST and SHOULD of docs/SPEC.md to its cases and exit "
                        "(1 when one is uncovered)")
    p.add_argument("--only", action="append", metavar="PATTERN",
                   help="run the cases whose name matches (glob or substring); repeatable")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per case as it runs")
    args = p.parse_args(argv)
    if not 1 <= args.paths <= 256:
        p.error("--paths must be 1..256")
    if not 1 <= args.port_base <= 65535 - 256:
        p.error("--port-base must leave room for 256 slots")
    return args


def junit(results, path):
    suite = ET.Element("testsuite", name="mroce-conform", tests=str(len(results)),
                       failures=str(sum(r.failed for r in results)),
                       skipped=str(sum(r.status in ("skip", "xfail") for r in results)))
    for r in results:
        tc = ET.SubElement(suite, "testcase", classname="SPEC." + r.case.section,
                           name=r.case.name, time="%.3f" % r.seconds)
        if r.failed:
            ET.SubElement(tc, "failure", message=r.reason).text = r.case.title
        elif r.status in ("skip", "xfail"):
            ET.SubElement(tc, "skipped", message="%s: %s" % (r.status, r.reason))
        ET.SubElement(tc, "system-out").text = r.reason
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def summary(results, out):
    width = max(len(r.case.name) for r in results)
    for r in results:
        out.write("%-5s %-*s  %s\n" % (r.status.upper(), width, r.case.name, r.reason))
    by_section = collections.OrderedDict()
    for r in sorted(results, key=lambda r: (not r.case.section.isdigit(),
                                            int(r.case.section) if r.case.section.isdigit()
                                            else 0, r.case.section)):
        by_section.setdefault(r.case.section, collections.Counter())[r.status] += 1
    out.write("\nby SPEC section:\n")
    for sec, counts in by_section.items():
        out.write("  %-3s %s\n" % (sec, ", ".join("%d %s" % (n, s) for s, n in
                                                  sorted(counts.items()))))
    total = collections.Counter(r.status for r in results)
    out.write("total: %d cases, %s\n" % (len(results), ", ".join(
        "%d %s" % (n, s) for s, n in sorted(total.items()))))


def main(argv=None):
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.coverage:
        return coverage.report(sys.stdout, {c.name for c in CASES})
    chosen = select(args.only or [])
    if args.list:
        for c in chosen:
            print("%-40s %-6s %s" % (c.name, c.level, c.title))
        return 0
    if not chosen:
        print("mroce-conform: no case matches %s" % args.only, file=sys.stderr)
        return 2
    try:
        env = Env(args.target, args.port_base,
                  args.tester_planes.split(",") if args.tester_planes else None,
                  args.first_slot, args.paths, counters_cmd=args.counters)
    except (OSError, TargetError, ValueError) as e:
        print("mroce-conform: cannot reach the target at %s: %s" % (args.target, e),
              file=sys.stderr)
        return 2
    results = []
    for c in chosen:
        r = run_case(c, env)
        if args.verbose:
            print("%-5s %s  %s" % (r.status.upper(), c.name, r.reason), flush=True)
        results.append(r)
    env.close()
    if args.verbose:
        print()
    summary(results, sys.stdout)
    if args.junit:
        junit(results, args.junit)
    return 1 if any(r.failed for r in results) else 0
