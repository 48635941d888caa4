#!/usr/bin/env python3
"""SACK-to-resend delay from a capture at the sender (pcap, any snap length >= 96).

For every path (addresses, path index, generation) it follows the sender's DATA and the
receiver's ACKs (docs/SPEC.md section 3): a PSN is shown missing by the first ACK whose
SACK has a bit set above it while it is not acknowledged; its resend is the next DATA of
that path with that PSN. The delay is the time between the two on the capture's clock.
A PSN sent again before any ACK showed it missing (a timer's or a tail probe's business)
is counted apart. Prints one JSON object: count, median, p90, p99 and max in
microseconds, and the early resends.

usage: resend_delay.py CAPTURE.pcap [--port LISTEN_PORT]"""

import argparse
import json
import struct
import sys

DATA, ACK = 1, 2


def frames(path):
    """(time in seconds, IP packet bytes) of each frame of a classic pcap file."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise ValueError("not a pcap file (too short)")
        magic = struct.unpack("<I", head[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            endian = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            endian = ">"
        else:
            raise ValueError("not a classic pcap file (pcapng? capture with dumpcap -P)")
        scale = 1e-9 if magic in (0xA1B23C4D, 0x4D3CB2A1) else 1e-6
        link = struct.unpack(endian + "I", head[20:24])[0]
        skip = {1: 14, 113: 16, 276: 20, 101: 0, 0: 4}.get(link)
        if skip is None:
            raise ValueError("link type %d not handled" % link)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, incl, _ = struct.unpack(endian + "IIII", rec)
            data = f.read(incl)
            if link == 1 and len(data) >= 18 and data[12:14] == b"\x81\x00":
                yield sec + frac * scale, data[18:]
            else:
                yield sec + frac * scale, data[skip:]


def udp(ip):
    """(src, dst, sport, dport, payload) of an IPv4 or IPv6 UDP packet, else None."""
    if not ip:
        return None
    v = ip[0] >> 4
    if v == 4:
        ihl = (ip[0] & 15) * 4
        if ip[9] != 17:
            return None
        src, dst, at = ip[12:16], ip[16:20], ihl
    elif v == 6:
        if ip[6] != 17:
            return None
        src, dst, at = ip[8:24], ip[24:40], 40
    else:
        return None
    sport, dport = struct.unpack_from("!HH", ip, at)
    return src, dst, sport, dport, ip[at + 8:]


def percentile(xs, q):
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def analyse(path, port=None):
    sent = {}    # path key -> {psn: last send time}
    shown = {}   # path key -> {psn: when first shown missing}
    delays, early = [], 0
    for when, ip in frames(path):
        u = udp(ip)
        if u is None:
            continue
        src, dst, sport, dport, m = u
        if len(m) < 20 or m[0] >> 4 != 1:
            continue
        kind, p, gen = m[0] & 15, m[2], m[3]
        if kind == DATA and (port is None or dport == port):
            key = (src, dst, p, gen)
            psn = struct.unpack_from("!I", m, 16)[0]
            seen = sent.setdefault(key, {})
            gaps = shown.get(key, {})
            if psn in gaps:
                delays.append(when - gaps.pop(psn))
            elif psn in seen:
                early += 1
            seen[psn] = when
        elif kind == ACK and len(m) >= 72 and (port is None or sport == port):
            key = (dst, src, p, gen)
            cum = struct.unpack_from("!I", m, 16)[0]
            words = struct.unpack_from("!4Q", m, 40)
            bits = 0
            for w in range(4):
                bits |= words[w] << (64 * w)
            if bits == 0:
                continue
            top = bits.bit_length()  # bit i: PSN cum + 1 + i received
            gaps = shown.setdefault(key, {})
            for i in range(-1, top - 1):
                if i >= 0 and bits >> i & 1:
                    continue
                psn = (cum + 1 + i) & 0xFFFFFFFF
                if psn not in gaps:
                    gaps[psn] = when
            # What the cumulative point passed is settled.
            for psn in [q for q in gaps if (cum - q) & 0xFFFFFFFF < 1 << 31 and q != cum]:
                del gaps[psn]
    delays.sort()
    out = {"resends": len(delays), "early_resends": early}
    if delays:
        us = [d * 1e6 for d in delays]
        out.update(median_us=round(percentile(us, 0.5), 1), p90_us=round(percentile(us, 0.9), 1),
                   p99_us=round(percentile(us, 0.99), 1), max_us=round(us[-1], 1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture")
    ap.add_argument("--port", type=int, default=None,
                    help="the receiver's listening port (DATA goes to it, ACKs leave it)")
    args = ap.parse_args()
    try:
        print(json.dumps(analyse(args.capture, args.port)))
    except (OSError, ValueError) as e:
        print("resend_delay.py: %s: %s" % (args.capture, e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
