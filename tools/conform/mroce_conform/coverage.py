"""Which cases cover which requirement of docs/SPEC.md: every MUST, MUST NOT, SHOULD and
SHOULD NOT of the SPEC, found by scanning its text, mapped to the cases that check it.

A requirement is one occurrence of an RFC 2119 keyword in SPEC.md (a mention such as
`a SHOULD` or `"MUST"` is not one). COVERAGE below names each by its SPEC section and a
phrase of the SPEC's own text that contains it; a requirement no case checks from the
wire is listed, with a one-line reason, under "Not testable from the wire" in
docs/COMPLIANCE.md. `mroce-conform --coverage` prints the map and exits 1 when a
requirement is neither covered nor listed, or when an entry no longer matches the SPEC.
"""

import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "..", "..", "docs")
SPEC = os.path.join(DOCS, "SPEC.md")
COMPLIANCE = os.path.join(DOCS, "COMPLIANCE.md")

KEYWORD = re.compile(r'\b(MUST NOT|MUST|SHOULD NOT|SHOULD)\b')

# (SPEC section, a phrase of the SPEC containing the keyword(s), the cases checking it)
COVERAGE = [
    ("2", "Senders MUST send with the UDP checksum enabled", ["2-udp-checksum-sent"]),
    ("2", "receivers MUST drop datagrams that fail it", ["2-udp-checksum-bad-dropped"]),
    ("2", "MUST receive on all of them", ["5.1-paths-spread", "6.1-duplicate-psn-not-placed-twice"]),
    ("2", "Reserved bits and fields MUST be sent as zero", ["3-device-packets-well-formed"]),
    ("2", "a packet with any of them set MUST be dropped",
     ["3.1-flag-bit-2-reserved", "3.2-data-flag-bit-2-reserved", "3.5-nack-reserved-dropped",
      "3.6-connect-handshake-reserved-dropped"]),
    ("2", "an endpoint MUST refuse a set-up whose mode differs from its own",
     ["2-headers-only-mismatch-refused"]),
    ("3.1", "a receiver MUST drop one with a non-zero Path or Generation",
     ["3.1-connect-path-dropped", "3.1-connect-generation-dropped", "3.1-accept-path-dropped"]),
    ("3.2", "Its stream and MSN MUST be sent as 0", ["3-device-packets-well-formed"]),
    ("3.2", "MUST be ignored on receipt", ["3.2-nop-stream-msn-ignored"]),
    ("3.2", "Its payload length, offset and message length MUST be 0",
     ["3.2-nop-with-length-dropped"]),
    ("3.2", "The datagram MUST end exactly after the payload",
     ["3.2-trailing-byte-dropped", "3.2-payload-length-long-dropped",
      "3.2-payload-length-short-dropped"]),
    ("3.3", "a receiver MUST refuse (§6.1 step 3) with INVALID_REQUEST",
     ["3.3-offset-not-segment-boundary", "3.3-short-segment-refused"]),
    ("3.4", "A sender MUST drop an ACK of another generation",
     ["3.4-ack-other-generation-dropped", "3.4-ack-unsent-psn-dropped",
      "3.4-ack-behind-isn-dropped"]),
    ("3.6", "the peer MUST put them in the common header",
     ["3.4-ack-fields", "9-bad-token-dropped"]),
    ("3.6", "The id MUST NOT be 0", ["3.6-device-connect-fields", "3.6-connect-id-zero-dropped"]),
    ("3.6", "The datagram MUST end exactly after the last address",
     ["3.6-connect-trailing-byte-dropped", "3.6-connect-truncated-address-dropped"]),
    ("3.8", "Destination connection id and Token MUST be 0",
     ["3.8-datagram-flags-dropped", "3.8-datagram-path-dropped",
      "3.8-datagram-generation-dropped", "3.8-datagram-conn-id-dropped",
      "3.8-datagram-token-dropped"]),
    ("3.8", "the top 8 bits MUST be 0 and 0 names nothing",
     ["3.8-datagram-qp-top-bits-dropped", "3.8-datagram-qp-zero-dropped",
      "3.8-datagram-source-qp-zero-dropped"]),
    ("3.8", "the datagram MUST end exactly after them",
     ["3.8-datagram-trailing-byte-dropped", "3.8-datagram-truncated-dropped"]),
    ("3.8", "SEND: MUST be 0", ["3.8-datagram-send-imm-nonzero-dropped"]),
    ("4.2", "An initiator MUST accept any number of ACCEPTs",
     ["4.2-duplicate-accept-one-confirm", "4.2-confirm-pair"]),
    ("5.2", "A sender MUST NOT have more than 256 PSNs outstanding",
     ["5.2-psn-span-at-most-256"]),
    ("6.2", "a receiver SHOULD send it within `ack_delay`", ["6.2-delayed-ack-bound"]),
    ("6.2", "receiver SHOULD acknowledge at once on every path", ["6.2-ack-on-message-complete"]),
    ("6.2", "and MUST send it eventually", ["6.2-ack-sent-eventually"]),
    ("6.2", "it MUST NOT wait for a later packet", ["6.2-ack-sent-eventually"]),
    ("6.2", "A sender MUST NOT depend on the bound", ["6.2-late-ack-tolerated"]),
    ("7.5", "MUST NOT start one beyond the peer's advertised",
     ["7.5-max-messages-respected", "7.5-max-responses-respected"]),
    ("A", "the Verbs API MUST map a Verbs address", ["A-qpn-rule"]),
    ("A", "MUST NOT hand out a QP number that does not decode", ["A-qpn-rule"]),
]


def _squash(text):
    return re.sub(r"\s+", " ", text).strip()


def blocks(spec_text):
    """(section, text) for every paragraph, bullet and table row of the SPEC, whitespace
    squashed. A section is "2", "3.4", "A" (the appendix)."""
    section, out, cur = "0", [], []

    def flush():
        if cur:
            out.append((section, _squash(" ".join(cur))))
            cur.clear()
    for line in spec_text.splitlines():
        head = re.match(r"#+\s+(?:Appendix\s+)?([0-9A-Z]+(?:\.[0-9]+)?)[.\s]", line)
        if head:
            flush()
            section = head.group(1)
            continue
        if not line.strip():
            flush()
        elif line.lstrip().startswith(("- ", "|")):
            flush()
            cur.append(line)
        else:
            cur.append(line)
    flush()
    return out


def requirements(spec_text):
    """Every keyword occurrence that states a requirement: (section, keyword, block index,
    offset in the block, the sentence it is in)."""
    reqs = []
    for i, (section, text) in enumerate(blocks(spec_text)):
        for m in KEYWORD.finditer(text):
            before = text[:m.start()]
            if before.endswith(('"', "a ")) or text[m.end():m.end() + 1] == '"':
                continue  # a mention of the word, not a requirement
            start = max(before.rfind(". "), before.rfind("; "), before.rfind(": "))
            start = 0 if start < 0 else start + 2
            stop = re.search(r"[.;](\s|$)", text[m.end():])
            sentence = text[start:m.end() + (stop.start() + 1 if stop else len(text))]
            reqs.append((section, m.group(1), i, m.start(), sentence))
    return reqs


def not_testable(compliance_text):
    """{(section, phrase): reason} from docs/COMPLIANCE.md's "Not testable from the wire"
    list: lines `- §SEC "PHRASE": reason`."""
    part = compliance_text.split("## Not testable from the wire", 1)
    if len(part) < 2:
        return {}
    body = part[1].split("\n## ", 1)[0]
    out = {}
    for m in re.finditer(r'^- §([0-9A-Z.]+) "([^"]+)": (.+)$', body, re.M):
        out[(m.group(1), m.group(2))] = m.group(3).strip()
    return out


def check(spec_text, compliance_text, case_names):
    """Matches COVERAGE and the not-testable list against the SPEC. Returns (rows,
    problems): rows are (section, keyword, sentence, cases or None, reason or None) per
    requirement in SPEC order; problems are lines saying what is wrong."""
    reqs = requirements(spec_text)
    bl = blocks(spec_text)
    claimed = {}
    problems = []
    entries = [(sec, phrase, cases, None) for sec, phrase, cases in COVERAGE]
    entries += [(sec, phrase, None, why) for (sec, phrase), why in
                not_testable(compliance_text).items()]
    for sec, phrase, cases, why in entries:
        hits = []
        for i, (bsec, text) in enumerate(bl):
            if bsec != sec:
                continue
            at = text.find(_squash(phrase))
            while at >= 0:
                hits += [r for r in reqs if r[2] == i and at <= r[3] < at + len(phrase)]
                at = text.find(_squash(phrase), at + 1)
        if not hits:
            problems.append('§%s "%s" names no MUST or SHOULD of the SPEC (stale entry)'
                            % (sec, phrase))
        for r in hits:
            if (r[2], r[3]) in claimed:
                problems.append('§%s "%s": its %s is claimed twice' % (sec, phrase, r[1]))
            claimed[(r[2], r[3])] = (cases, why)
        for name in cases or []:
            if name not in case_names:
                problems.append('§%s "%s": no case named %s' % (sec, phrase, name))
    rows = []
    for sec, kw, i, at, sentence in reqs:
        cases, why = claimed.get((i, at), (None, None))
        if cases is None and why is None:
            problems.append('§%s %s not covered: "%s"' % (sec, kw, sentence))
        rows.append((sec, kw, sentence, cases, why))
    return rows, problems


def report(out, case_names):
    with open(SPEC, encoding="utf-8") as f:
        spec = f.read()
    with open(COMPLIANCE, encoding="utf-8") as f:
        compliance = f.read()
    rows, problems = check(spec, compliance, case_names)
    for sec, kw, sentence, cases, why in rows:
        out.write("§%-4s %-10s %s\n" % (sec, kw, sentence))
        if cases:
            out.write("      -> %s\n" % ", ".join(cases))
        elif why:
            out.write("      -> not testable from the wire: %s\n" % why)
    covered = sum(1 for r in rows if r[3])
    listed = sum(1 for r in rows if not r[3] and r[4])
    out.write("\n%d requirements: %d covered by cases, %d not testable from the wire, "
              "%d uncovered\n" % (len(rows), covered, listed, len(rows) - covered - listed))
    for p in problems:
        out.write("problem: %s\n" % p)
    return 1 if problems else 0


def section_table(cases):
    """The markdown table of docs/COMPLIANCE.md: cases per SPEC section, from the list."""
    counts = {}
    for c in cases:
        counts[c.section] = counts.get(c.section, 0) + 1
    order = sorted(counts, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    rows = ["| SPEC section | cases |", "|---|---|"]
    rows += ["| %s | %d |" % (s, counts[s]) for s in order]
    rows.append("| all | %d |" % len(cases))
    return "\n".join(rows)
