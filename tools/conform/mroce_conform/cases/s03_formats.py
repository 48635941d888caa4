"""SPEC 3: every field and reserved bit, malformed variants dropped."""

from .. import codec as c
from ..checks import (expect_dropped, fresh, need, valid_write, alive, SETTLE, wait_nack,
                      mem_unchanged, device_write, device_data, completions)
from ..registry import case


def _mutate(offset, fn):
    """A mutation of a valid WRITE's bytes at `offset` of the datagram."""
    def apply(raw):
        raw = bytearray(raw)
        raw[offset] = fn(raw[offset]) & 0xFF
        return bytes(raw)
    return apply


def _set_u16(offset, value):
    def apply(raw):
        raw = bytearray(raw)
        raw[offset:offset + 2] = value.to_bytes(2, "big")
        return bytes(raw)
    return apply


def _set_u32(offset, value):
    def apply(raw):
        raw = bytearray(raw)
        raw[offset:offset + 4] = value.to_bytes(4, "big")
        return bytes(raw)
    return apply


D = c.COMMON_LEN  # start of the DATA base header
# name, level, what the mutation breaks, mutation of a valid 8-byte WRITE at offset 0 of "rw"
MALFORMED = [
    ("3.1-version-0-dropped", "MUST", "version 0", _mutate(0, lambda b: b & 0x0F)),
    ("3.1-version-2-dropped", "MUST", "version 2", _mutate(0, lambda b: 0x20 | b & 0x0F)),
    ("3.1-version-15-dropped", "MUST", "version 15", _mutate(0, lambda b: 0xF0 | b & 0x0F)),
    ("3.1-type-0-dropped", "MUST", "type 0", _mutate(0, lambda b: b & 0xF0)),
    ("3.1-type-10-dropped", "MUST", "type 10", _mutate(0, lambda b: b & 0xF0 | 10)),
    ("3.1-type-15-dropped", "MUST", "type 15", _mutate(0, lambda b: b & 0xF0 | 15)),
] + [
    ("3.1-flag-bit-%d-reserved" % bit, "MUST", "reserved flag bit %d (0x%02x)" % (bit, 1 << bit),
     _mutate(1, lambda b, bit=bit: b | 1 << bit)) for bit in range(2, 8)
] + [
    ("3.2-data-flag-bit-%d-reserved" % bit, "MUST",
     "reserved data flag bit %d (0x%02x)" % (bit, 1 << bit),
     _mutate(D + 17, lambda b, bit=bit: b | 1 << bit)) for bit in range(2, 8)
] + [
    ("3.2-opcode-10-dropped", "MUST", "opcode 10", _mutate(D + 16, lambda b: 10)),
    ("3.2-opcode-255-dropped", "MUST", "opcode 255", _mutate(D + 16, lambda b: 255)),
    ("3.2-payload-length-long-dropped", "MUST", "payload length 1 more than carried",
     _set_u16(D + 18, 9)),
    ("3.2-payload-length-short-dropped", "MUST", "payload length 1 less than carried",
     _set_u16(D + 18, 7)),
    ("3.2-beyond-message-dropped", "MUST", "offset + payload length > message length",
     _set_u32(D + 24, 7)),
    ("3.2-trailing-byte-dropped", "MUST", "one byte after the payload",
     lambda raw: raw + b"\x00"),
    ("3.2-truncated-extension-dropped", "MUST", "datagram ends inside the extension",
     lambda raw: raw[:D + c.DATA_BASE_LEN + 6]),
    ("3.2-truncated-base-dropped", "MUST", "datagram ends inside the base header",
     lambda raw: raw[:D + 10]),
    ("3.1-truncated-common-dropped", "MUST", "datagram shorter than the common header",
     lambda raw: raw[:12]),
]


def _malformed_case(name, level, what, mutate):
    @case(name, level, "DATA with %s is dropped, never answered or placed" % what)
    def run(env):
        s = fresh(env)
        try:
            pkt, psn = valid_write(s)
            return expect_dropped(s, mutate(bytes(pkt)), psn, what=what)
        finally:
            s.close()
    return run


for _args in MALFORMED:
    _malformed_case(*_args)


def _nonpayload_case(name, what, opcode, region, build):
    @case(name, "MUST", "%s is dropped as malformed" % what)
    def run(env):
        s = fresh(env)
        try:
            r = s.target.region(region)
            psn = s.conn.take_psn(0)
            raw = build(s, psn, r)
            return expect_dropped(s, raw, psn, region=region, what=what)
        finally:
            s.close()
    return run


def _bytes(s, psn, opcode, payload=b"", **kw):
    return bytes(c.data(s.conn.peer_id, s.conn.peer_token, 0, 0, psn, s.dev_stream, s.next_msn(),
                        opcode, payload, flags=c.ACK_REQUEST, **kw))


_nonpayload_case("3.2-read-request-with-payload-dropped", "READ_REQUEST carrying payload",
                 c.READ_REQUEST, "rw",
                 lambda s, psn, r: _patch_opcode(_bytes(s, psn, c.WRITE, b"\x11" * 12,
                                                        raddr=r["addr"], rkey=r["rkey"]),
                                                 c.READ_REQUEST))
_nonpayload_case("3.2-nop-with-length-dropped", "NOP with a message length", c.NOP, "rw",
                 lambda s, psn, r: _bytes(s, psn, c.NOP, message_length=8))
_nonpayload_case("3.2-fetch-add-length-16-dropped", "FETCH_ADD with message length 16",
                 c.FETCH_ADD, "atomic",
                 lambda s, psn, r: _bytes(s, psn, c.FETCH_ADD, raddr=r["addr"], rkey=r["rkey"],
                                          add=1, message_length=16))
_nonpayload_case("3.2-compare-swap-offset-dropped", "COMPARE_SWAP with offset 8",
                 c.COMPARE_SWAP, "atomic",
                 lambda s, psn, r: _bytes(s, psn, c.COMPARE_SWAP, raddr=r["addr"],
                                          rkey=r["rkey"], compare=0, swap=1, offset=8))
_nonpayload_case("3.2-read-request-offset-dropped", "READ_REQUEST with offset 4096",
                 c.READ_REQUEST, "rw",
                 lambda s, psn, r: _bytes(s, psn, c.READ_REQUEST, raddr=r["addr"],
                                          rkey=r["rkey"], offset=4096, message_length=8192))


def _patch_opcode(raw, opcode):
    """Rewrites a WRITE's opcode and extension into READ_REQUEST's, keeping the payload:
    WRITE's 12-byte extension becomes READ_REQUEST's first 12, the payload's first 4 bytes
    its response rate."""
    raw = bytearray(raw)
    raw[D + 16] = opcode
    return bytes(raw)


def _refused_segment(s, raw, psn, what):
    since = len(s.tester.log)
    s.tester.send(raw, s.conn.dst(0), 0, 0)
    s.conn.pump(SETTLE)
    acked = [rx for rx in s.tester.log[since:] if rx.type == c.ACK and rx.pkt[c.Ack].acked(psn)]
    need(not acked, "the %s segment was acknowledged" % what)
    need(mem_unchanged(s, "rw", 0, 2048), "the %s segment was placed" % what)
    n = wait_nack(s, psn, seconds=0.1)
    need(n is not None, "the %s segment was not refused with a NACK" % what)
    need(n.pkt[c.Nack].code == c.INVALID_REQUEST, "refused with %s, expected INVALID_REQUEST"
         % c.NACK_CODES.get(n.pkt[c.Nack].code, n.pkt[c.Nack].code))
    return "refused with INVALID_REQUEST, not placed"


@case("3.3-offset-not-segment-boundary", "MUST",
      "a segment whose offset is not a multiple of mss is refused with INVALID_REQUEST")
def offset_not_boundary(env):
    s = fresh(env, mss=1024)
    try:
        r = s.target.region("rw")
        psn = s.conn.take_psn(0)
        raw = _bytes(s, psn, c.WRITE, b"\x22" * 1024, offset=512, message_length=2048,
                     raddr=r["addr"], rkey=r["rkey"])
        return _refused_segment(s, raw, psn, "misaligned")
    finally:
        s.close()


@case("3.3-short-segment-refused", "MUST",
      "a non-final segment shorter than mss is refused with INVALID_REQUEST")
def short_segment(env):
    s = fresh(env, mss=1024)
    try:
        r = s.target.region("rw")
        psn = s.conn.take_psn(0)
        raw = _bytes(s, psn, c.WRITE, b"\x22" * 512, offset=0, message_length=2048,
                     raddr=r["addr"], rkey=r["rkey"])
        return _refused_segment(s, raw, psn, "short")
    finally:
        s.close()


@case("3.3-device-segments-at-mss", "MUST",
      "the device cuts a message at the agreed mss (the smaller side's), offset k*mss")
def device_segments(env):
    s = fresh(env, mss=1024)
    try:
        length = 5 * 1024 + 300
        device_write(s, length)
        s.conn.pump(1.0, lambda: sum(rx.pkt[c.Data].opcode == c.WRITE
                                      for rx in device_data(s)) >= 6)
        wc = completions(s)
        segs = sorted({(rx.pkt[c.Data].offset, rx.pkt[c.Data].payload_length)
                       for rx in device_data(s, c.WRITE)})
        want = [(k * 1024, min(1024, length - k * 1024)) for k in range(6)]
        need(segs == want, "segments %s, expected %s" % (segs, want))
        need(wc and wc[0]["status"] == 0, "the WRITE did not complete: %s" % wc)
        need(bytes(s.conn.memory[:length]) == s.target.read_mem("local", 0, length),
             "the bytes the tester received differ from the target's")
        return "6 segments at offsets k*1024, last 300 bytes; message length %d" % length
    finally:
        s.close()


@case("3-device-packets-well-formed", "MUST",
      "every packet the device sends passes SPEC 3 (reserved bits zero, lengths exact)")
def device_well_formed(env):
    s = fresh(env)
    try:
        device_write(s, 20000)
        s.target.post_send(s.qpn, "read", 5000, region="local", remote_addr=s.conn.mem_addr,
                           rkey=s.conn.mem_rkey, wr_id=2)
        s.write("rw", 0, b"x" * 100, flags=c.ACK_REQUEST)
        s.conn.pump(0.2)
        bad = [rx for rx in s.tester.log if rx.error]
        need(not bad, "malformed: %s" % bad[:3])
        for rx in s.tester.log:
            p = rx.pkt
            if rx.type != c.DATA:
                need(p.flags == 0, "%s with flags %s" % (c.TYPES[rx.type], p.flags))
            if rx.type == c.DATA and p[c.Data].opcode == c.NOP:
                need(p[c.Data].stream == 0 and p[c.Data].msn == 0,
                     "a NOP with stream %d MSN %d" % (p[c.Data].stream, p[c.Data].msn))
            if rx.type in c.SETUP_TYPES:
                need(p.path == 0 and p.generation == 0,
                     "%s with path %d generation %d" % (c.TYPES[rx.type], p.path, p.generation))
        return "%d packets, all well formed" % len(s.tester.log)
    finally:
        s.close()


@case("3.4-ack-fields", "MUST",
      "an ACK names the path, echoes the DATA timestamp, counts received packets")
def ack_fields(env):
    s = fresh(env)
    try:
        ts = 0x12345678
        s.write("rw", 0, b"a" * 8, timestamp=ts)
        p1 = s.write("rw", 8, b"b" * 8, timestamp=ts + 1, flags=c.ACK_REQUEST)
        a = s.conn.wait_ack(0, p1)
        need(a is not None, "no ACK")
        ack = a.pkt[c.Ack]
        need(len(a.raw) == 72, "ACK of %d bytes" % len(a.raw))
        need(a.pkt.path == 0 and a.pkt.generation == 0, "path/generation %d/%d" %
             (a.pkt.path, a.pkt.generation))
        need(a.pkt.conn_id == s.conn.my_id and a.pkt.token == s.conn.my_token,
             "ACK not addressed with the tester's id and token")
        need(ack.cumulative == (p1 + 1) & 0xFFFFFFFF, "cumulative %d, expected %d" %
             (ack.cumulative, p1 + 1))
        need(ack.echo_ts == ts + 1, "echoed %#x, expected %#x" % (ack.echo_ts, ts + 1))
        need(ack.received == 2, "received counter %d, expected 2" % ack.received)
        need(ack.ce == 0, "CE counter %d without marks" % ack.ce)
        need(not ack.sack_bits(), "SACK bits %s with nothing missing" % ack.sack_bits())
        return "72 bytes, cumulative PSN+1, timestamp echoed, 2 received"
    finally:
        s.close()


@case("3.4-sack-bitmap", "MUST",
      "bit i of the SACK bitmap (bit 0 = LSB of word 0) means PSN cumulative+1+i")
def sack_bitmap(env):
    s = fresh(env)
    try:
        base = s.conn.take_psn(0)  # left missing
        psns = [base + 1, base + 64, base + 65, base + 200]
        for p in psns:
            s.write("rw", 8 * (p - base), b"s" * 8, psn=p, flags=c.ACK_REQUEST)
        s.conn.next_psn[0] = base + 201
        s.conn.pump(0.1, lambda: any(a.pkt[c.Ack].sack_bits() == [0, 63, 64, 199]
                                     for a in s.conn.acks))
        last = s.conn.acks[-1].pkt[c.Ack] if s.conn.acks else None
        need(last is not None, "no ACK")
        need(last.cumulative == base, "cumulative %d, expected %d" % (last.cumulative, base))
        need(last.sack_bits() == [0, 63, 64, 199], "bits %s, expected [0, 63, 64, 199]" %
             last.sack_bits())
        return "bits 0, 63, 64, 199 across words 0 to 3"
    finally:
        s.close()


@case("3.4-sack-full-span", "MUST",
      "PSN cumulative+256 is in the window and reported as bit 255; +257 is not")
def sack_full_span(env):
    s = fresh(env)
    try:
        base = s.conn.take_psn(0)
        far = s.write("rw", 0, b"f" * 8, psn=base + 256, flags=c.ACK_REQUEST)
        a = s.conn.wait_ack(0, far, 0.5)
        need(a is not None, "PSN cumulative+256 was not acknowledged")
        need(a.pkt[c.Ack].sack_bits() == [255], "bits %s, expected [255]" %
             a.pkt[c.Ack].sack_bits())
        pkt, _ = valid_write(s, offset=64)
        pkt[c.Data].psn = base + 257
        since = len(s.tester.log)
        s.tester.send(pkt, s.conn.dst(0), 0, 0)
        s.conn.pump(SETTLE)
        got = [rx for rx in s.tester.log[since:] if rx.type in (c.ACK, c.NACK)]
        need(not got, "a DATA 257 above the cumulative point was answered: %s" % got)
        need(mem_unchanged(s, "rw", 64, 8), "a DATA 257 above the cumulative point was placed")
        return "+256 acknowledged as bit 255, +257 dropped unanswered"
    finally:
        s.close()


@case("3.5-nack-fields", "MUST",
      "a NACK is 36 bytes, repeats the refused packet's PSN, stream, MSN, timestamp")
def nack_fields(env):
    s = fresh(env)
    try:
        r = s.target.region("rw")
        msn = s.next_msn()
        psn = s.conn.send_data(0, s.dev_stream, msn, c.WRITE, b"k" * 8, raddr=r["addr"],
                               rkey=r["rkey"] ^ 0x5A5A, flags=c.ACK_REQUEST, timestamp=777)
        n = wait_nack(s, psn)
        need(n is not None, "no NACK for a WRITE with a bad rkey")
        nk = n.pkt[c.Nack]
        need(len(n.raw) == 36, "NACK of %d bytes" % len(n.raw))
        need(nk.code == c.REMOTE_ACCESS, "code %d, expected REMOTE_ACCESS" % nk.code)
        need(nk.stream == s.dev_stream and nk.msn == msn, "stream/MSN %d/%d, expected %d/%d"
             % (nk.stream, nk.msn, s.dev_stream, msn))
        need(nk.echo_ts == 777, "echoed timestamp %d, expected 777" % nk.echo_ts)
        need(nk.reserved == 0, "reserved bits %#x" % nk.reserved)
        need(n.pkt.path == 0 and n.pkt.generation == 0, "path/generation wrong")
        need(mem_unchanged(s, "rw", 0, 8), "the refused WRITE was placed")
        return "REMOTE_ACCESS, PSN, stream, MSN and timestamp repeated"
    finally:
        s.close()


@case("3.6-device-connect-fields", "MUST",
      "the device's CONNECT: id non-zero, header id/token 0, mss and paths valid, "
      "its planes and listening port")
def device_connect_fields(env):
    from ..session import Session
    s = Session(env)
    try:
        rx = s.open_by_device()
        p, st = rx.pkt, rx.pkt[c.Setup]
        need(p.conn_id == 0 and p.token == 0, "CONNECT header id/token %#x/%#x" %
             (p.conn_id, p.token))
        need(st.src_id != 0, "source connection id 0")
        need(st.mss > 0, "mss 0")
        need(1 <= st.paths <= 256, "paths %d" % st.paths)
        need(st.hflags == 0, "handshake flags %#x" % st.hflags)
        need(st.listen_port == s.dev_port, "listening port %d, the device's QPN says %d" %
             (st.listen_port, s.dev_port))
        addrs = [c.unmapped(a) for a in st.addrs]
        need(addrs[:len(env.device_planes)] == env.device_planes,
             "addresses %s, the device's GIDs say %s" % (addrs, env.device_planes))
        need(len(rx.raw) == 44 + 16 * len(addrs), "length %d" % len(rx.raw))
        return "id %#x, mss %d, %d paths, %s port %d" % (st.src_id, st.mss, st.paths, addrs,
                                                         st.listen_port)
    finally:
        s.close()


def _connect_variant(name, what, **kw):
    mutate = kw.pop("mutate", None)
    xfail = kw.pop("xfail", None)

    @case(name, "MUST", "a CONNECT with %s is dropped (no ACCEPT)" % what, xfail=xfail)
    def run(env):
        from ..session import Session
        s = Session(env)
        try:
            raw = bytes(s.conn.my_setup(c.CONNECT, **kw))
            if mutate:
                raw = mutate(raw)
            s.tester.send(raw, s.conn.dev, 0, 0)
            s.conn.pump(SETTLE)
            got = [rx for rx in s.tester.log if rx.type == c.ACCEPT]
            need(not got, "answered with %s" % got[0] if got else "")
            # The device still accepts a valid CONNECT from this tester.
            s.send_connect(copies=1)
            need(s.wait(c.ACCEPT, 1.0) is not None,
                 "no ACCEPT to a valid CONNECT afterwards")
            return "no ACCEPT; a valid CONNECT then is accepted"
        finally:
            s.close()
    return run


_connect_variant("3.6-connect-id-zero-dropped", "source connection id 0", src_id=0)
_connect_variant("3.6-connect-mss-zero-dropped", "MSS 0", mss=0)
_connect_variant("3.6-connect-paths-zero-dropped", "paths 0", paths=0)
_connect_variant("3.6-connect-paths-257-dropped", "paths 257", paths=257)
_connect_variant("3.6-connect-handshake-reserved-dropped", "reserved handshake flag 0x02",
                 hflags=2)
_connect_variant("3.6-connect-no-address-dropped", "address count 0",
                 mutate=lambda raw: raw[:43] + b"\x00")
_connect_variant("3.6-connect-9-addresses-dropped", "address count 9",
                 mutate=lambda raw: raw[:43] + b"\x09" + raw[44:] + raw[44:60] * 8)
_connect_variant("3.6-connect-trailing-byte-dropped", "a byte after the last address",
                 mutate=lambda raw: raw + b"\x00")
_connect_variant("3.6-connect-truncated-address-dropped", "a truncated address",
                 mutate=lambda raw: raw[:-1])
_connect_variant("3.1-connect-flags-dropped", "common-header flags set (DATA only)",
                 mutate=lambda raw: raw[:1] + b"\x01" + raw[2:])
_connect_variant("3.1-connect-path-dropped", "Path 1 (set-up packets carry 0)",
                 mutate=lambda raw: raw[:2] + b"\x01" + raw[3:])
_connect_variant("3.1-connect-generation-dropped", "Generation 1 (set-up packets carry 0)",
                 mutate=lambda raw: raw[:3] + b"\x01" + raw[4:])
_connect_variant("3.1-connect-id-dropped", "a non-zero destination connection id",
                 mutate=lambda raw: raw[:4] + b"\x00\x00\x00\x07" + raw[8:])
_connect_variant("3.1-connect-token-dropped", "a non-zero token",
                 mutate=lambda raw: raw[:15] + b"\x01" + raw[16:])


@case("3.7-confirm-close-length", "MUST",
      "CONFIRM, CLOSE and CLOSE_ACK from the device are the 16-byte common header")
def bare_lengths(env):
    s = fresh(env)
    s.target.destroy_qp(s.qpn)
    s.closed = True
    try:
        s.conn.pump(0.5, lambda: any(rx.type == c.CLOSE for rx in s.tester.log))
        kinds = {}
        for rx in s.tester.log:
            if rx.type in (c.CONFIRM, c.CLOSE, c.CLOSE_ACK):
                kinds.setdefault(c.TYPES[rx.type], set()).add(len(rx.raw))
        need("CONFIRM" in kinds, "no CONFIRM seen")
        need(all(v == {16} for v in kinds.values()), "lengths %s" % kinds)
        need(all(rx.pkt.conn_id == s.conn.my_id and rx.pkt.token == s.conn.my_token
                 for rx in s.tester.log if rx.type in (c.CONFIRM, c.CLOSE)),
             "CONFIRM/CLOSE not addressed with the tester's id and token")
        return "lengths %s" % {k: sorted(v) for k, v in kinds.items()}
    finally:
        s.tester.close()


@case("2-headers-only-mismatch-refused", "MUST",
      "a CONNECT of the other mode (NO_PAYLOAD) gets one CLOSE to its source with its id "
      "and token, no ACCEPT")
def headers_only(env):
    from ..session import Session
    s = Session(env)
    try:
        s.tester.send(s.conn.my_setup(c.CONNECT, hflags=c.NO_PAYLOAD), s.conn.dev, 0, 2)
        s.conn.pump(0.05)
        need(not [rx for rx in s.tester.log if rx.type == c.ACCEPT], "answered with ACCEPT")
        closes = [rx for rx in s.tester.log if rx.type == c.CLOSE]
        need(len(closes) == 1, "%d CLOSE in answer, expected 1" % len(closes))
        cl = closes[0]
        need(cl.local[1] == s.tester.sock(0, 2).port, "the CLOSE went to %s, not the source" %
             (cl.local,))
        need(cl.pkt.conn_id == s.conn.my_id and cl.pkt.token == s.conn.my_token,
             "the CLOSE is not addressed with the CONNECT's id and token")
        return "one CLOSE to the source, no ACCEPT"
    finally:
        s.close()


@case("3.1-data-path-beyond-count-dropped", "MUST",
      "DATA whose Path is at or above the path count the tester announced is dropped")
def data_path_range(env):
    s = fresh(env, paths=4)
    try:
        r = s.target.region("rw")
        psn = s.conn.isn
        raw = bytes(c.data(s.conn.peer_id, s.conn.peer_token, 4, 0, psn, s.dev_stream,
                           s.next_msn(), c.WRITE, b"P" * 8, raddr=r["addr"], rkey=r["rkey"],
                           flags=c.ACK_REQUEST))
        since = len(s.tester.log)
        s.tester.send(raw, s.conn.dst(0), 0, 4)
        s.conn.pump(SETTLE)
        got = [rx for rx in s.tester.log[since:] if rx.type in (c.ACK, c.NACK)]
        need(not got, "answered DATA on path 4 of 4: %s" % got)
        need(mem_unchanged(s, "rw", 0, 8), "placed DATA on path 4 of 4")
        alive(s)
        return "dropped"
    finally:
        s.close()


@case("3.2-nop-stream-msn-ignored", "MUST",
      "a NOP is recorded whatever its stream and MSN say")
def nop_ignored_fields(env):
    s = fresh(env)
    try:
        psn = s.conn.send_data(0, 0xABCDE, 12345, c.NOP, flags=c.ACK_REQUEST)
        need(s.conn.wait_ack(0, psn, 0.5) is not None,
             "a NOP naming an unknown stream was not acknowledged")
        return "acknowledged"
    finally:
        s.close()


# SPEC 3.8: DATAGRAM. The device's datagram queue pairs are not reachable through the
# target's control protocol, so these cases send to a queue pair number that names no
# datagram queue pair: a well-formed DATAGRAM is then dropped as a bad stream, and each
# malformed variant must be dropped as malformed before that check.
_DG_QP, _DG_SRC, _DG_QKEY = 0x00FFFF01, 0x000001, 0x11111111


def _datagram_counts(s, raw):
    """Sends one DATAGRAM; returns the counters that grew (the device must not answer)."""
    before = s.env.counters()
    since = len(s.tester.log)
    s.tester.send(raw, s.conn.dev, 0, 0)
    s.conn.pump(SETTLE)
    answered = [rx for rx in s.tester.log[since:] if not rx.error]
    need(not answered, "the device answered a DATAGRAM: %s" % (answered[0] if answered else ""))
    after = s.env.counters()
    return [k for k in after if k.startswith("drop_") and after[k] > before.get(k, 0)]


@case("3.8-datagram-well-formed-unknown-qp", "MUST",
      "a well-formed DATAGRAM to no datagram queue pair is dropped unanswered as a bad stream")
def datagram_unknown_qp(env):
    from ..session import Session
    s = Session(env)
    try:
        grew = _datagram_counts(s, c.datagram(_DG_QP, _DG_SRC, _DG_QKEY, payload=b"UD" * 8))
        need("drop_bad_stream" in grew and not any("malformed" in k for k in grew),
             "counters that grew: %s (expected drop_bad_stream only)" % grew)
        return "dropped, counted as drop_bad_stream"
    finally:
        s.close()


def _datagram_malformed(name, what, build):
    @case(name, "MUST", "a DATAGRAM with %s is dropped unanswered as malformed" % what)
    def run(env):
        from ..session import Session
        s = Session(env)
        try:
            grew = _datagram_counts(s, build())
            need(any("malformed" in k for k in grew),
                 "counters that grew: %s (expected a malformed drop)" % grew)
            return "dropped, counted as %s" % [k for k in grew if "malformed" in k][0]
        finally:
            s.close()
    return run


def _dg(**kw):
    args = dict(dst_qp=_DG_QP, src_qp=_DG_SRC, qkey=_DG_QKEY, payload=b"UD" * 8)
    args.update(kw)
    return lambda: c.datagram(**args)


_datagram_malformed("3.8-datagram-flags-dropped", "common-header flags set", _dg(flags=1))
_datagram_malformed("3.8-datagram-path-dropped", "Path 1", _dg(path=1))
_datagram_malformed("3.8-datagram-generation-dropped", "Generation 1", _dg(generation=1))
_datagram_malformed("3.8-datagram-conn-id-dropped", "a destination connection id",
                    _dg(conn_id=7))
_datagram_malformed("3.8-datagram-token-dropped", "a token", _dg(token=1))
_datagram_malformed("3.8-datagram-qp-top-bits-dropped", "a queue pair's top 8 bits set",
                    _dg(dst_qp=0x01000001))
_datagram_malformed("3.8-datagram-qp-zero-dropped", "destination queue pair 0", _dg(dst_qp=0))
_datagram_malformed("3.8-datagram-source-qp-zero-dropped", "source queue pair 0",
                    _dg(src_qp=0))
_datagram_malformed("3.8-datagram-opcode-dropped", "opcode 3", _dg(opcode=3))
_datagram_malformed("3.8-datagram-send-imm-nonzero-dropped", "SEND with immediate data",
                    _dg(imm=5))
_datagram_malformed("3.8-datagram-trailing-byte-dropped", "a byte after its payload",
                    lambda: c.datagram(_DG_QP, _DG_SRC, _DG_QKEY, payload=b"UD" * 8) + b"\x00")
_datagram_malformed("3.8-datagram-truncated-dropped", "a payload shorter than its length",
                    lambda: c.datagram(_DG_QP, _DG_SRC, _DG_QKEY, payload=b"UD" * 8)[:-1])

