"""SPEC 2: transport mapping (ports, reverse 5-tuple, ECN, checksum, planes)."""

import socket
import struct

from .. import codec as c
from ..checks import (fresh, need, SETTLE, mem_unchanged, device_write, device_data,
                      completions, valid_write, skip)
from ..peer import CE, ECT0, NOT_ECT
from ..registry import case


@case("2-data-to-listening-port", "MUST",
      "the device sends DATA to the tester's listening port, from its own pool")
def data_to_listening(env):
    s = fresh(env)
    try:
        device_write(s, 3 * 4096)
        s.conn.pump(0.5, lambda: len(device_data(s)) >= 3)
        got = device_data(s)
        need(got, "no DATA from the device")
        wrong = [rx for rx in got if rx.local[1] != s.tester.listen_port]
        need(not wrong, "DATA to port %d, not the listening port %d" %
             (wrong[0].local[1] if wrong else 0, s.tester.listen_port))
        return "%d DATA packets to port %d" % (len(got), s.tester.listen_port)
    finally:
        s.close()


@case("2-ack-on-reverse-tuple", "MUST",
      "ACKs leave the device's listening port for the source of the path's latest DATA")
def ack_reverse(env):
    s = fresh(env)
    try:
        p0 = s.write("rw", 0, b"a" * 8, source=0, flags=c.ACK_REQUEST)
        a0 = s.conn.wait_ack(0, p0)
        p1 = s.write("rw", 8, b"b" * 8, source=5, flags=c.ACK_REQUEST)
        a1 = s.conn.wait_ack(0, p1)
        need(a0 and a1, "no ACK")
        src0, src5 = s.tester.sock(0, 0), s.tester.sock(0, 5)
        need(a0.local == (src0.addr, src0.port), "first ACK went to %s, DATA came from %s" %
             (a0.local, (src0.addr, src0.port)))
        need(a1.local == (src5.addr, src5.port),
             "after the path's source port changed, the ACK went to %s, not %s" %
             (a1.local, (src5.addr, src5.port)))
        need(a0.src[1] == s.dev_port and a1.src[1] == s.dev_port,
             "ACKs from port %d/%d, not the listening port %d" % (a0.src[1], a1.src[1],
                                                                   s.dev_port))
        return "ACKs from port %d to the latest source port" % s.dev_port
    finally:
        s.close()


@case("2-ecn-data-ect0", "MUST", "the device sends DATA ECT(0) and everything else Not-ECT")
def ecn_codepoints(env):
    s = fresh(env)
    try:
        device_write(s, 8192)
        s.write("rw", 0, b"e" * 8, flags=c.ACK_REQUEST)
        s.conn.pump(0.2)
        data = [rx.tos for rx in s.tester.log if rx.type == c.DATA]
        other = [(c.TYPES.get(rx.type), rx.tos) for rx in s.tester.log if rx.type != c.DATA]
        need(data, "no DATA seen")
        need(all(t == ECT0 for t in data), "DATA ECN codepoints %s" % sorted(set(data)))
        need(all(t == NOT_ECT for _, t in other), "control packets with ECN %s" %
             [o for o in other if o[1] != NOT_ECT][:3])
        return "%d DATA ECT(0), %d others Not-ECT" % (len(data), len(other))
    finally:
        s.close()


def _udp_checksum(src, dst, sport, dport, payload):
    length = 8 + len(payload)
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 17, length)
    data = pseudo + struct.pack("!HHHH", sport, dport, length, 0) + payload
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total & 0xFFFF) or 0xFFFF


@case("2-udp-checksum-bad-dropped", "MUST",
      "a DATA datagram whose UDP checksum fails is dropped", needs=("root",))
def bad_checksum(env):
    s = fresh(env)
    try:
        if ":" in s.conn.dev[0]:
            skip("the raw-socket sender is IPv4 only")
        pkt, psn = valid_write(s)
        payload = bytes(pkt)
        src = s.tester.sock(0, 0)
        good = _udp_checksum(src.addr, s.conn.dev[0], src.port, s.dev_port, payload)
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        try:
            hdr = struct.pack("!HHHH", src.port, s.dev_port, 8 + len(payload), good ^ 0x0101)
            raw.sendto(hdr + payload, (s.conn.dev[0], 0))
        finally:
            raw.close()
        since = len(s.tester.log)
        s.conn.pump(SETTLE)
        got = [rx for rx in s.tester.log[since:] if rx.type in (c.ACK, c.NACK)]
        need(not got, "answered a datagram with a bad checksum: %s" % got)
        need(mem_unchanged(s, "rw", 0, 8), "a datagram with a bad checksum was placed")
        # The same bytes with the right checksum are taken: the drop was the checksum's.
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        try:
            hdr = struct.pack("!HHHH", src.port, s.dev_port, 8 + len(payload), good)
            raw.sendto(hdr + payload, (s.conn.dev[0], 0))
        finally:
            raw.close()
        need(s.conn.wait_ack(0, psn, 1.0) is not None,
             "the same datagram with a good checksum was not acknowledged")
        return "dropped; the same datagram with a good checksum is acknowledged"
    finally:
        s.close()


@case("2-ce-counted", "MUST", "the device counts CE-marked DATA per path in its ACKs")
def ce_counted(env):
    s = fresh(env)
    try:
        s.write("rw", 0, b"1" * 8, tos=CE)
        s.write("rw", 8, b"2" * 8, tos=ECT0)
        p = s.write("rw", 16, b"3" * 8, tos=CE, flags=c.ACK_REQUEST)
        a = s.conn.wait_ack(0, p)
        need(a is not None, "no ACK")
        s.conn.pump(0.02)
        last = [x for x in s.conn.acks if x.pkt.path == 0][-1].pkt[c.Ack]
        need(last.ce == 2 and last.received == 3, "CE %d of %d received, expected 2 of 3" %
             (last.ce, last.received))
        return "CE 2 of 3 received"
    finally:
        s.close()


@case("2-planes-paired-by-index", "MUST",
      "path i of the device uses its plane i mod P towards the tester's plane i mod P",
      needs=("planes2",))
def planes_by_index(env):
    s = fresh(env)
    try:
        device_write(s, 16 * 4096)
        s.conn.pump(1.0, lambda: len({rx.pkt.path for rx in device_data(s)}) >= 2 and
                    len(device_data(s)) >= 16)
        completions(s)
        P = min(len(s.conn.peer_addrs), len(s.tester.planes))
        bad = [(rx.pkt.path, rx.src[0], rx.local[0]) for rx in device_data(s)
               if rx.src[0] != s.conn.peer_addrs[rx.pkt.path % P]
               or rx.local[0] != s.tester.planes[rx.pkt.path % P]]
        need(not bad, "path, from, to: %s" % bad[:3])
        used = sorted({rx.pkt.path % P for rx in device_data(s)})
        need(used == list(range(P)), "only planes %s used" % used)
        return "%d DATA packets over %d planes, paired by index" % (len(device_data(s)), P)
    finally:
        s.close()


@case("2-planes-ack-by-plane", "MUST",
      "the device acknowledges the tester's path on the plane it arrived on",
      needs=("planes2",))
def planes_ack(env):
    s = fresh(env)
    try:
        r = s.target.region("rw")
        psn = s.conn.send_data(1, s.dev_stream, s.next_msn(), c.WRITE, b"p" * 8,
                               raddr=r["addr"], rkey=r["rkey"], flags=c.ACK_REQUEST, plane=1)
        a = s.conn.wait_ack(1, psn)
        need(a is not None, "no ACK for path 1 on plane 1")
        need(a.src[0] == s.conn.peer_addrs[1] and a.local[0] == s.tester.planes[1],
             "ACK from %s to %s" % (a.src, a.local))
        return "ACK from %s" % a.src[0]
    finally:
        s.close()


@case("2-udp-checksum-sent", "MUST",
      "the device sends its datagrams with the UDP checksum enabled (IPv4: field non-zero)",
      needs=("root",))
def checksum_sent(env):
    s = fresh(env)
    try:
        if ":" in s.conn.dev[0]:
            skip("the capture is IPv4 only")
        cap = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        cap.setblocking(False)
        try:
            device_write(s, 3 * 4096)
            s.conn.pump(0.2, lambda: len(device_data(s)) >= 3)
            completions(s)
            sums = []
            while True:
                try:
                    frame = cap.recv(65536)
                except BlockingIOError:
                    break
                ip = frame[14:] if frame[12:14] == b"\x08\x00" else None
                if not ip or ip[9] != 17:
                    continue
                udp = ip[(ip[0] & 15) * 4:]
                sport, dport, _, csum = struct.unpack("!HHHH", udp[:8])
                if dport == s.tester.listen_port and sport != s.tester.listen_port:
                    sums.append(csum)
        finally:
            cap.close()
        need(sums, "no datagram of the device captured")
        need(all(x != 0 for x in sums), "%d of %d datagrams without a checksum" %
             (sums.count(0), len(sums)))
        return "%d datagrams, every checksum field set" % len(sums)
    finally:
        s.close()
