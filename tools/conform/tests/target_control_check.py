#!/usr/bin/python3
"""Checks that a running mroce-target answers bad control requests with one error line and
keeps serving: target_control_check.py HOST:PORT. Exits non-zero on the first miss."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from mroce_conform.target import Target  # noqa: E402

BAD = [
    ("not JSON", "this is not json"),
    ("not an object", "[1, 2, 3]"),
    ("no op", "{}"),
    ("unknown op", '{"op": "fly"}'),
    ("missing field", '{"op": "read_mem", "region": "rw"}'),
    ("wrong type", '{"op": "read_mem", "region": "rw", "length": "eight"}'),
    ("unknown region", '{"op": "read_mem", "region": "nowhere", "length": 8}'),
    ("outside the region", '{"op": "read_mem", "region": "rw", "offset": 65530, "length": 8}'),
    ("unknown qp", '{"op": "post_recv", "qpn": 12345, "length": 8}'),
    ("bad opcode", '{"op": "post_send", "qpn": 1, "opcode": "jump", "length": 8}'),
    ("bad gid", '{"op": "connect", "qpn": 1, "gid": "nowhere", "remote_qpn": 65537}'),
    ("odd hex", '{"op": "write_mem", "region": "rw", "hex": "abc"}'),
]


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    t = Target(host, int(port))
    for what, line in BAD:
        reply = t.raw(line)
        if reply.get("ok") is not False or not reply.get("error"):
            print("target_control_check: %s: answered %s" % (what, json.dumps(reply)))
            return 1
        if t.raw('{"op": "info"}').get("ok") is not True:
            print("target_control_check: the target stopped serving after: %s" % what)
            return 1
    print("target_control_check: %d bad requests, each one error line, target still serving"
          % len(BAD))
    return 0


if __name__ == "__main__":
    sys.exit(main())
