"""SPEC 7: streams and messages: placement on arrival, every operation's completion and
error semantics, stream order, RNR, the device as requester."""

import struct
import time

from .. import codec as c
from ..checks import (fresh, need, device_write, device_data, completions,
                      mem_unchanged, wait_nack, WC_SUCCESS, WC_REM_ACCESS_ERR,
                      WC_WR_FLUSH_ERR, WC_RNR_RETRY_EXC_ERR)
from ..peer import nack_for
from ..registry import case
from ..target import pattern


def _seed(s, region):
    return s.target.region(region)["seed"]


def _send_msg(s, payload, msn=None, ssn=None, opcode=c.SEND, path=0, stream=None, **kw):
    msn = s.next_msn() if msn is None else msn
    ssn = s.next_ssn() if ssn is None else ssn
    return s.conn.send_data(path, s.dev_stream if stream is None else stream, msn, opcode,
                            payload, ssn=ssn, flags=c.ACK_REQUEST, **kw)


@case("7.3-write-segments-any-order", "MUST",
      "a WRITE's segments are placed as they land, in any order")
def write_any_order(env):
    s = fresh(env, mss=1024)
    try:
        r = s.target.region("rw")
        msn = s.next_msn()
        data = bytes((i * 13) & 0xFF for i in range(3000))
        psns = []
        for k in (2, 0, 1):
            seg = data[k * 1024:(k + 1) * 1024]
            psns.append(s.conn.send_data(k % 2, s.dev_stream, msn, c.WRITE, seg,
                                         offset=k * 1024, message_length=3000,
                                         raddr=r["addr"], rkey=r["rkey"],
                                         flags=c.ACK_REQUEST))
        s.conn.pump(0.05)
        need(s.target.read_mem("rw", 0, 3000) == data, "the message is not in memory as sent")
        return "3 segments in order 2, 0, 1 over 2 paths, placed"
    finally:
        s.close()


@case("7.3-write-last-byte-held", "MUST",
      "a WRITE's last byte is published only when the message completes in stream order")
def last_byte(env):
    s = fresh(env, mss=1024)
    try:
        r = s.target.region("rw")
        m0, m1 = s.next_msn(), s.next_msn()
        # Message 0: 2 segments at offset 0; only its second is sent at first.
        s.conn.send_data(0, s.dev_stream, m0, c.WRITE, b"\x11" * 1024, offset=1024,
                         message_length=2048, raddr=r["addr"], rkey=r["rkey"])
        # Message 1: one segment at 8192, complete, but behind message 0.
        p1 = s.conn.send_data(0, s.dev_stream, m1, c.WRITE, b"\x22" * 100,
                              raddr=r["addr"] + 8192, rkey=r["rkey"], flags=c.ACK_REQUEST)
        need(s.conn.wait_ack(0, p1), "message 1 not acknowledged")
        got = s.target.read_mem("rw", 8192, 100)
        old_last = pattern(_seed(s, "rw"), 8192 + 99, 1)
        need(got[:99] == b"\x22" * 99, "message 1's first 99 bytes not placed on arrival")
        need(got[99:] == old_last, "message 1's last byte published before message 0 completed")
        p0 = s.conn.send_data(1, s.dev_stream, m0, c.WRITE, b"\x11" * 1024, offset=0,
                              message_length=2048, raddr=r["addr"], rkey=r["rkey"],
                              flags=c.ACK_REQUEST)
        need(s.conn.wait_ack(1, p0), "message 0's first segment not acknowledged")
        s.conn.pump(0.01)
        need(s.target.read_mem("rw", 8192 + 99, 1) == b"\x22", "message 1's last byte never "
             "published")
        need(s.target.read_mem("rw", 0, 2048) == b"\x11" * 2048, "message 0 not in memory")
        return "held until the message before it completed"
    finally:
        s.close()


def _refused_write(name, what, region, offset, length, rkey_xor=0):
    @case(name, "MUST", "a WRITE %s is refused with REMOTE_ACCESS, nothing placed" % what)
    def run(env):
        s = fresh(env)
        try:
            r = s.target.region(region)
            psn = s.conn.send_data(0, s.dev_stream, s.next_msn(), c.WRITE, b"w" * length,
                                   raddr=r["addr"] + offset, rkey=r["rkey"] ^ rkey_xor,
                                   flags=c.ACK_REQUEST)
            n = wait_nack(s, psn)
            need(n is not None, "no NACK")
            need(n.pkt[c.Nack].code == c.REMOTE_ACCESS, "NACK code %d" % n.pkt[c.Nack].code)
            lo = max(0, offset)
            need(mem_unchanged(s, region, lo, min(length, r["length"] - lo)),
                 "the refused WRITE was placed")
            return "REMOTE_ACCESS, not placed"
        finally:
            s.close()
    return run


_refused_write("7.3-write-bad-rkey", "with an rkey naming no region", "rw", 0, 8, 0x5A5A00)
_refused_write("7.3-write-past-region-end", "running past the region's end", "rw", 65536 - 4,
               8)
_refused_write("7.3-write-no-write-right", "into a region without remote write", "ro", 0, 8)
_refused_write("7.3-write-no-rights", "into a region without remote rights", "none", 0, 8)


def _request(s, opcode, region, offset=0, length=8, **kw):
    r = s.target.region(region)
    msn = s.next_msn()
    psn = s.conn.send_data(0, s.dev_stream, msn, opcode, raddr=r["addr"] + offset,
                           rkey=r["rkey"], message_length=length, flags=c.ACK_REQUEST, **kw)
    return msn, psn


def _responses(s, msn, opcode, count, seconds=1.0):
    def done():
        return len([rx for rx in s.conn.data if rx.pkt[c.Data].opcode == opcode and
                    rx.pkt[c.Data].msn == msn]) >= count
    s.conn.pump(seconds, done)
    return [rx for rx in s.conn.data if rx.pkt[c.Data].opcode == opcode and
            rx.pkt[c.Data].msn == msn]


@case("7.5-read-response", "MUST",
      "a READ is answered with READ_RESPONSE segments of the range, the request's MSN, "
      "on the tester's stream")
def read_response(env):
    s = fresh(env)
    try:
        msn, _ = _request(s, c.READ_REQUEST, "ro", 100, 6000)
        got = _responses(s, msn, c.READ_RESPONSE, 2)
        need(got, "no READ_RESPONSE")
        parts = {rx.pkt[c.Data].offset: c.data_payload(rx.pkt) for rx in got}
        need(sorted(parts) == [0, 4096], "response offsets %s" % sorted(parts))
        data = parts[0] + parts[4096]
        need(data == pattern(_seed(s, "ro"), 100, 6000), "the response's bytes are not the "
             "region's")
        need(all(rx.pkt[c.Data].stream == s.stream for rx in got),
             "responses on stream %s, the tester's is %d" %
             ({rx.pkt[c.Data].stream for rx in got}, s.stream))
        need(all(rx.pkt[c.Data].message_length == 6000 for rx in got), "message length wrong")
        return "2 segments, bytes of the region, MSN %d" % msn
    finally:
        s.close()


def _refused_request(name, what, opcode, region, offset, code, **kw):
    @case(name, "MUST", "%s is refused with %s" % (what, c.NACK_CODES[code]))
    def run(env):
        s = fresh(env)
        try:
            length = kw.pop("length", 8)
            _, psn = _request(s, opcode, region, offset, length, **kw)
            n = wait_nack(s, psn)
            need(n is not None, "no NACK")
            need(n.pkt[c.Nack].code == code, "NACK code %s, expected %s" %
                 (c.NACK_CODES.get(n.pkt[c.Nack].code, n.pkt[c.Nack].code), c.NACK_CODES[code]))
            need(not [rx for rx in s.conn.data if rx.pkt[c.Data].opcode in
                      (c.READ_RESPONSE, c.ATOMIC_RESPONSE)], "a response was sent anyway")
            need(mem_unchanged(s, region, 0, 64), "memory changed")
            return c.NACK_CODES[code]
        finally:
            s.close()
    return run


_refused_request("7.3-read-no-read-right", "a READ of a region without remote read",
                 c.READ_REQUEST, "wo", 0, c.REMOTE_ACCESS)
_refused_request("7.3-read-past-region-end", "a READ running past the region's end",
                 c.READ_REQUEST, "ro", 16384 - 100, c.REMOTE_ACCESS, length=200)
_refused_request("7.3-atomic-unaligned", "a FETCH_ADD at an address not 8-byte aligned",
                 c.FETCH_ADD, "atomic", 4, c.INVALID_REQUEST, add=1)
_refused_request("7.3-atomic-no-atomic-right", "a FETCH_ADD on a region without remote atomic",
                 c.FETCH_ADD, "rw", 0, c.REMOTE_ACCESS, add=1)
_refused_request("7.3-cswap-past-region-end", "a COMPARE_SWAP past the region's end",
                 c.COMPARE_SWAP, "atomic", 4096, c.REMOTE_ACCESS, compare=0, swap=1)


def _word(b):
    """The 64-bit word in the responder's byte order (the target reports its own memory;
    x86 and arm64 targets are little-endian)."""
    return struct.unpack("<Q", b)[0]


@case("7.5-fetch-add", "MUST",
      "FETCH_ADD adds atomically and answers the original value in ATOMIC_RESPONSE")
def fetch_add(env):
    s = fresh(env)
    try:
        before = _word(s.target.read_mem("atomic", 8, 8))
        msn, _ = _request(s, c.FETCH_ADD, "atomic", 8, add=0x1000000001)
        got = _responses(s, msn, c.ATOMIC_RESPONSE, 1)
        need(got, "no ATOMIC_RESPONSE")
        need(got[0].pkt[c.Data].orig == before, "original %#x, memory held %#x" %
             (got[0].pkt[c.Data].orig, before))
        after = _word(s.target.read_mem("atomic", 8, 8))
        need(after == (before + 0x1000000001) & (2**64 - 1), "memory %#x after adding" % after)
        return "original %#x, memory %#x" % (before, after)
    finally:
        s.close()


@case("7.5-compare-swap", "MUST",
      "COMPARE_SWAP swaps only on a match and always answers the original value")
def compare_swap(env):
    s = fresh(env)
    try:
        before = _word(s.target.read_mem("atomic", 16, 8))
        msn, _ = _request(s, c.COMPARE_SWAP, "atomic", 16, compare=before ^ 1, swap=7)
        got = _responses(s, msn, c.ATOMIC_RESPONSE, 1)
        need(got and got[0].pkt[c.Data].orig == before, "mismatch: response %s" % got)
        need(_word(s.target.read_mem("atomic", 16, 8)) == before, "swapped on a mismatch")
        msn, _ = _request(s, c.COMPARE_SWAP, "atomic", 16, compare=before, swap=7)
        got = _responses(s, msn, c.ATOMIC_RESPONSE, 1)
        need(got and got[0].pkt[c.Data].orig == before, "match: response %s" % got)
        need(_word(s.target.read_mem("atomic", 16, 8)) == 7, "not swapped on a match")
        return "no swap on a mismatch, swap on a match"
    finally:
        s.close()


@case("7.6-send-without-receive-rnr", "MUST",
      "a SEND with no receive posted is refused with RECEIVER_NOT_READY")
def send_rnr(env):
    s = fresh(env)
    try:
        psn = _send_msg(s, b"nobody home")
        n = wait_nack(s, psn)
        need(n is not None, "no NACK")
        need(n.pkt[c.Nack].code == c.RECEIVER_NOT_READY, "code %d" % n.pkt[c.Nack].code)
        s.target.post_recv(s.qpn, 64, wr_id=5)
        s.conn.send_data(0, 0, 0, c.NOP, psn=None, flags=c.ACK_REQUEST)
        s.ssn -= 1
        s.msn -= 1
        psn = _send_msg(s, b"now")  # the retry: new PSN, same MSN and SSN
        need(s.conn.wait_ack(0, psn), "the retry after posting a receive was not acknowledged")
        wc = completions(s)
        need(wc and wc[0]["wr_id"] == 5 and wc[0]["byte_len"] == 3, "completion %s" % wc)
        return "RECEIVER_NOT_READY, then the retry completes the receive"
    finally:
        s.close()


@case("7.3-send-longer-than-receive", "MUST",
      "a SEND longer than its receive is refused with INVALID_REQUEST")
def send_too_long(env):
    s = fresh(env)
    try:
        s.target.post_recv(s.qpn, 16, wr_id=9)
        psn = _send_msg(s, b"x" * 64)
        n = wait_nack(s, psn)
        need(n is not None, "no NACK")
        need(n.pkt[c.Nack].code == c.INVALID_REQUEST, "code %d" % n.pkt[c.Nack].code)
        return "INVALID_REQUEST"
    finally:
        s.close()


@case("7.5-send-completion", "MUST",
      "a SEND completes its receive (RECV, length) with the bytes in the receive's buffer")
def send_completion(env):
    s = fresh(env)
    try:
        s.target.post_recv(s.qpn, 256, wr_id=3, offset=512)
        _send_msg(s, b"hello, target")
        wc = completions(s)
        need(wc, "no completion")
        w = wc[0]
        need(w["status"] == WC_SUCCESS and w["opcode"] == "recv" and w["byte_len"] == 13 and
             w["wr_id"] == 3 and "imm" not in w, "completion %s" % w)
        need(s.target.read_mem("local", 512, 13) == b"hello, target", "bytes not in the buffer")
        return "RECV, 13 bytes"
    finally:
        s.close()


@case("7.5-send-imm-completion", "MUST", "SEND_IMM's receive completes with its immediate")
def send_imm(env):
    s = fresh(env)
    try:
        s.target.post_recv(s.qpn, 256, wr_id=4)
        _send_msg(s, b"imm", opcode=c.SEND_IMM, imm=0xCAFEF00D)
        wc = completions(s)
        need(wc and wc[0]["byte_len"] == 3, "completion %s" % wc)
        need(wc[0].get("imm") == 0xCAFEF00D, "immediate 0xcafef00d on the wire completed as "
             "imm_data %#010x (read in network order)" % wc[0].get("imm", 0))
        return "immediate 0xcafef00d"
    finally:
        s.close()


@case("7.5-write-imm-completion", "MUST",
      "WRITE_IMM places its bytes and completes a receive as RECV_RDMA_WITH_IMM, length = "
      "message length")
def write_imm(env):
    s = fresh(env)
    try:
        s.target.post_recv(s.qpn, 0, wr_id=6)
        r = s.target.region("rw")
        s.conn.send_data(0, s.dev_stream, s.next_msn(), c.WRITE_IMM, b"W" * 40,
                         raddr=r["addr"] + 256, rkey=r["rkey"], ssn=s.next_ssn(), imm=77,
                         flags=c.ACK_REQUEST)
        wc = completions(s)
        need(wc and wc[0]["opcode"] == "recv_rdma_imm" and wc[0]["byte_len"] == 40,
             "completion %s" % wc)
        need(wc[0].get("imm") == 77, "immediate 77 on the wire completed as imm_data %#010x "
             "(read in network order)" % wc[0].get("imm", 0))
        need(s.target.read_mem("rw", 256, 40) == b"W" * 40, "bytes not placed")
        return "RECV_RDMA_WITH_IMM, 40 bytes, immediate 77"
    finally:
        s.close()


@case("7.5-completion-in-stream-order", "MUST",
      "messages of a stream complete in MSN order, whatever order they land in")
def stream_order(env):
    s = fresh(env)
    try:
        s.target.post_recv(s.qpn, 64, wr_id=10)
        s.target.post_recv(s.qpn, 64, wr_id=11, offset=64)
        m0, m1 = s.next_msn(), s.next_msn()
        _send_msg(s, b"second", msn=m1, ssn=1)
        wc = completions(s, 1, 50)
        need(not wc, "a later message completed before the earlier one arrived: %s" % wc)
        _send_msg(s, b"first", msn=m0, ssn=0, path=1)
        wc = completions(s, 2)
        need([w["wr_id"] for w in wc] == [10, 11], "completions %s" % wc)
        need(s.target.read_mem("local", 64, 6) == b"second", "second SEND not in receive 11")
        return "completed 0 then 1"
    finally:
        s.close()


@case("7.1-no-order-across-streams", "MUST",
      "a stream's message completes while another stream of the connection waits")
def across_streams(env):
    s = fresh(env, mss=1024)
    qp2 = s.target.create_qp()
    try:
        s.target.connect(qp2, s.tester.planes[0], (s.slot + 1) << 16 | 2)
        s.target.post_recv(s.qpn, 4096, wr_id=20)
        s.target.post_recv(qp2, 64, wr_id=21)
        # Stream A: a 2-segment SEND missing its first segment.
        s.conn.send_data(0, s.dev_stream, 0, c.SEND, b"a" * 1024, offset=1024,
                         message_length=2048, ssn=0)
        # Stream B: a complete SEND.
        s.conn.send_data(1, qp2 & 0xFFFF, 0, c.SEND, b"b", ssn=0, flags=c.ACK_REQUEST)
        wc = completions(s, 1, 1000, qpns=(s.qpn, qp2))
        need(wc and wc[0]["wr_id"] == 21, "stream B did not complete while A waited: %s" % wc)
        return "stream B completed, stream A still incomplete"
    finally:
        s.target.destroy_qp(qp2)
        s.close()


@case("7.3-refused-message-stays-refused", "MUST",
      "a copy of a refused message is refused again; later messages are not executed")
def refused_stays(env):
    s = fresh(env)
    try:
        s.target.post_recv(s.qpn, 64, wr_id=30)
        r = s.target.region("ro")
        msn = s.next_msn()
        p0 = s.conn.send_data(0, s.dev_stream, msn, c.WRITE, b"x" * 8, raddr=r["addr"],
                              rkey=r["rkey"], flags=c.ACK_REQUEST)
        need(wait_nack(s, p0), "no NACK")
        s.conn.send_data(0, 0, 0, c.NOP, psn=p0, flags=c.ACK_REQUEST)
        p1 = s.conn.send_data(1, s.dev_stream, msn, c.WRITE, b"x" * 8, raddr=r["addr"],
                              rkey=r["rkey"], flags=c.ACK_REQUEST, dflags=c.RETRANSMIT)
        n = wait_nack(s, p1, path=1)
        need(n is not None and n.pkt[c.Nack].code == c.REMOTE_ACCESS,
             "the copy was not refused with REMOTE_ACCESS: %s" % n)
        _send_msg(s, b"later", path=0)
        wc = completions(s, 1, 100)
        need(not wc, "a message after the refused one was executed: %s" % wc)
        return "copy refused again, the next SEND not executed"
    finally:
        s.close()


@case("7.3-response-without-request-ignored", "MUST",
      "a READ_RESPONSE matching no outstanding READ is acknowledged and ignored")
def stray_response(env):
    s = fresh(env)
    try:
        psn = s.conn.send_data(0, s.dev_stream, 42, c.READ_RESPONSE, b"r" * 8,
                               flags=c.ACK_REQUEST)
        a = s.conn.wait_ack(0, psn, 0.5)
        n = [x for x in s.conn.nacks if x.pkt[c.Nack].psn == psn]
        need(a is not None or n, "no answer")
        from ..checks import alive
        alive(s)
        return "acknowledged" if a else "NACKed %s" % c.NACK_CODES.get(n[0].pkt[c.Nack].code)
    finally:
        s.close()


# ---- the device as requester -------------------------------------------------------------

@case("7.2-device-read", "MUST",
      "the device's READ goes as one READ_REQUEST and completes on the tester's responses")
def device_read(env):
    s = fresh(env)
    try:
        s.conn.memory[0:6000] = bytes((i * 5 + 3) & 0xFF for i in range(6000))
        s.target.post_send(s.qpn, "read", 6000, region="local", offset=1000,
                           remote_addr=s.conn.mem_addr, rkey=s.conn.mem_rkey, wr_id=40)
        s.conn.pump(0.5, lambda: s.conn.responses)
        need(s.conn.responses, "no READ_REQUEST")
        req = next(iter(s.conn.responses.values()))
        d = req.pkt[c.Data]
        need(d.opcode == c.READ_REQUEST and d.raddr == s.conn.mem_addr and
             d.rkey == s.conn.mem_rkey and d.message_length == 6000 and d.offset == 0 and
             d.payload_length == 0 and d.stream == s.stream,
             "READ_REQUEST fields: %s" % d.summary())
        mss = s.conn.agreed_mss
        for off in range(0, 6000, mss):
            chunk = bytes(s.conn.memory[off:min(6000, off + mss)])
            s.conn.send_data(off // mss % s.conn.paths, s.dev_stream, d.msn, c.READ_RESPONSE,
                             chunk, offset=off, message_length=6000, flags=c.ACK_REQUEST)
        wc = completions(s)
        need(wc and wc[0]["status"] == WC_SUCCESS and wc[0]["opcode"] == "read",
             "completion %s" % wc)
        need(s.target.read_mem("local", 1000, 6000) == bytes(s.conn.memory[0:6000]),
             "the read bytes are not in the target's buffer")
        return "READ_REQUEST of 6000 bytes, completed, bytes in place"
    finally:
        s.close()


@case("7.2-device-fetch-add", "MUST",
      "the device's FETCH_ADD carries address, key and addend, and completes on the response")
def device_fetch_add(env):
    s = fresh(env)
    try:
        s.target.post_send(s.qpn, "fetch_add", 8, region="local", offset=2048,
                           remote_addr=s.conn.mem_addr + 64, rkey=s.conn.mem_rkey,
                           compare_add=5, wr_id=41)
        s.conn.pump(0.5, lambda: s.conn.responses)
        need(s.conn.responses, "no FETCH_ADD")
        req = next(iter(s.conn.responses.values()))
        d = req.pkt[c.Data]
        need(d.opcode == c.FETCH_ADD and d.add == 5 and d.raddr == s.conn.mem_addr + 64 and
             d.message_length == 8, "FETCH_ADD fields: %s" % d.summary())
        s.conn.send_data(0, s.dev_stream, d.msn, c.ATOMIC_RESPONSE, orig=0x0102030405060708,
                         flags=c.ACK_REQUEST)
        wc = completions(s)
        need(wc and wc[0]["status"] == WC_SUCCESS and wc[0]["opcode"] == "fetch_add",
             "completion %s" % wc)
        got = s.target.read_mem("local", 2048, 8)
        need(_word(got) == 0x0102030405060708, "local buffer %s" % got.hex())
        return "addend 5, original value in the local buffer"
    finally:
        s.close()


@case("7.2-device-send-imm", "MUST", "the device's SEND_IMM carries SSN 0 and the immediate")
def device_send_imm(env):
    s = fresh(env)
    try:
        s.target.post_send(s.qpn, "send_imm", 10, region="local", imm=0x01020304, wr_id=42)
        s.conn.pump(0.5, lambda: device_data(s, c.SEND_IMM))
        got = device_data(s, c.SEND_IMM)
        need(got, "no SEND_IMM")
        d = got[0].pkt[c.Data]
        need(d.imm == 0x01020304, "immediate %#010x on the wire, the work request's "
             "imm_data (network order) holds 0x01020304" % d.imm)
        need(d.ssn == 0 and d.msn == 0 and d.stream == s.stream,
             "SSN %d MSN %d stream %d" % (d.ssn, d.msn, d.stream))
        need(c.data_payload(got[0].pkt) == s.target.read_mem("local", 0, 10), "payload")
        wc = completions(s)
        need(wc and wc[0]["status"] == WC_SUCCESS, "completion %s" % wc)
        return "SSN 0, immediate 0x01020304, completed"
    finally:
        s.close()


def _device_retry(name, code):
    @case(name, "MUST",
          "on %s the device sends the PSN again as a NOP at once and the segment again after "
          "the RNR timer, under a new PSN" % c.NACK_CODES[code])
    def run(env):
        s = fresh(env)
        try:
            state = {}

            def refuse_first(rx):
                d = rx.pkt[c.Data]
                if d.opcode == c.SEND and "nacked" not in state:
                    state["nacked"] = rx
                    s.tester.send(nack_for(s.conn, rx, code), rx.src)
                    return False
                return True
            s.conn.rx_filter = refuse_first
            s.target.post_send(s.qpn, "send", 100, region="local", wr_id=43)
            wc = completions(s, 1, 2000)
            first = state.get("nacked")
            need(first is not None, "no SEND")
            need(wc and wc[0]["status"] == WC_SUCCESS, "completion %s" % wc)
            p, d = first.pkt, first.pkt[c.Data]
            nop = [rx for rx in s.conn.data if rx.pkt.path == p.path and
                   rx.pkt[c.Data].psn == d.psn and rx.pkt[c.Data].opcode == c.NOP]
            need(nop, "the NACKed PSN was not sent again as a NOP")
            again = [rx for rx in s.conn.data if rx.pkt[c.Data].opcode == c.SEND]
            need(again, "the SEND was not retried")
            re = again[0]
            need((re.pkt.path, re.pkt[c.Data].psn) != (p.path, d.psn),
                 "retried under the same PSN")
            wait = re.when - first.when
            need(wait >= 0.00005, "retried %.0f us after the NACK, before the RNR timer" %
                 (wait * 1e6))
            return "NOP at the PSN, SEND again after %.0f us" % (wait * 1e6)
        finally:
            s.close()
    return run


_device_retry("7.7-device-rnr-retry", c.RECEIVER_NOT_READY)
_device_retry("7.7-device-no-resources-retry", c.NO_RESOURCES)


@case("7.7-rnr-retries-exhausted", "MUST",
      "when every try meets RECEIVER_NOT_READY, the work request fails with RNR-retry-"
      "exceeded once its retries are used (rnr_retry 2: three tries)")
def rnr_exhausted(env):
    from ..session import Session
    s = Session(env)
    try:
        s.open_by_device(rnr_retry=2)
        tries = []

        def refuse(rx):
            if rx.pkt[c.Data].opcode == c.SEND:
                tries.append(rx)
                s.tester.send(nack_for(s.conn, rx, c.RECEIVER_NOT_READY), rx.src)
                return False
            return True
        s.conn.rx_filter = refuse
        s.target.post_send(s.qpn, "send", 100, region="local", wr_id=44)
        wc = completions(s, 1, 3000)
        need(wc, "no completion in 3 s: %d tries seen" % len(tries))
        need(wc[0]["status"] == WC_RNR_RETRY_EXC_ERR,
             "completion %s after %d tries, expected RNR_RETRY_EXC_ERR" % (wc[0], len(tries)))
        need(len(tries) == 3, "%d tries with rnr_retry 2, expected 3 (the first and 2 retries)"
             % len(tries))
        gaps = ["%.0f" % ((b.when - a.when) * 1e6) for a, b in zip(tries, tries[1:])]
        return "3 tries (gaps %s us), then RNR_RETRY_EXC_ERR" % ", ".join(gaps)
    finally:
        s.close()


@case("7.2-fence-waits-for-read", "MUST",
      "a work request with the fence flag does not start until the stream's earlier READ "
      "has completed")
def fence(env):
    s = fresh(env)
    try:
        s.conn.memory[0:100] = bytes(range(100))
        s.target.post_send(s.qpn, "read", 100, region="local", offset=0,
                           remote_addr=s.conn.mem_addr, rkey=s.conn.mem_rkey, wr_id=70)
        device_write(s, 64, tester_offset=8192, local_offset=4096, wr_id=71, fence=True)
        s.conn.pump(0.5, lambda: s.conn.responses)
        need(s.conn.responses, "no READ_REQUEST")
        s.conn.pump(0.05)
        early = device_data(s, c.WRITE)
        need(not early, "the fenced WRITE left while the READ was outstanding")
        req = next(iter(s.conn.responses.values()))
        answered = time.time()
        s.conn.send_data(0, s.dev_stream, req.pkt[c.Data].msn, c.READ_RESPONSE,
                         bytes(s.conn.memory[0:100]), message_length=100, flags=c.ACK_REQUEST)
        wc = completions(s, 2, 2000)
        need([w["wr_id"] for w in wc] == [70, 71] and all(w["status"] == WC_SUCCESS
                                                           for w in wc),
             "completions %s" % wc)
        writes = device_data(s, c.WRITE)
        need(writes and writes[0].when >= answered, "no WRITE after the READ completed")
        return "the WRITE left %.0f us after the READ's response" % (
            (writes[0].when - answered) * 1e6)
    finally:
        s.close()


@case("7.7-device-remote-access-error", "MUST",
      "on REMOTE_ACCESS the work request fails with a remote access error and later ones "
      "are flushed")
def device_remote_access(env):
    s = fresh(env)
    try:
        def refuse(rx):
            if rx.pkt[c.Data].opcode == c.WRITE and rx.pkt[c.Data].msn == 0:
                s.tester.send(nack_for(s.conn, rx, c.REMOTE_ACCESS), rx.src)
                return False
            return True
        s.conn.rx_filter = refuse
        device_write(s, 100, wr_id=50)
        device_write(s, 100, wr_id=51, tester_offset=4096)
        wc = completions(s, 2, 2000)
        need(len(wc) == 2, "completions %s" % wc)
        need(wc[0]["wr_id"] == 50 and wc[0]["status"] == WC_REM_ACCESS_ERR,
             "first: %s" % wc[0])
        need(wc[1]["wr_id"] == 51 and wc[1]["status"] == WC_WR_FLUSH_ERR, "second: %s" % wc[1])
        return "REM_ACCESS_ERR, then WR_FLUSH_ERR"
    finally:
        s.close()


@case("7.5-max-messages-respected", "MUST",
      "the device never has more messages outstanding than the tester's max messages")
def max_messages(env):
    from ..session import Session
    s = Session(env)
    try:
        s.bind()
        con = s.wait(c.CONNECT)
        need(con is not None, "no CONNECT")
        s.conn.learn(con.pkt)
        s.send_accept(max_messages=2)
        need(s.wait(c.CONFIRM), "no CONFIRM")
        s.conn.ack_policy = "none"
        for i in range(6):
            device_write(s, 64, tester_offset=64 * i, wr_id=60 + i)
        s.conn.pump(0.05)
        msns = {rx.pkt[c.Data].msn for rx in device_data(s, c.WRITE)}
        need(msns, "no WRITE")
        need(len(msns) <= 2, "%d messages started against max messages 2" % len(msns))
        s.conn.ack_policy = "every"
        for path in list(s.conn.rx):
            s.conn.ack_path(path)
        wc = completions(s, 6, 3000)
        need(len(wc) == 6, "%d of 6 completed once acknowledged" % len(wc))
        return "at most %d messages in flight, all 6 complete" % len(msns)
    finally:
        s.close()


@case("7.5-max-responses-respected", "MUST",
      "the device never has more READ and atomic requests outstanding than the tester's "
      "max responses")
def max_responses(env):
    from ..session import Session
    s = Session(env)
    try:
        s.bind()
        con = s.wait(c.CONNECT)
        need(con is not None, "no CONNECT")
        s.conn.learn(con.pkt)
        s.send_accept(max_responses=2)
        need(s.wait(c.CONFIRM), "no CONFIRM")
        for i in range(5):
            s.target.post_send(s.qpn, "read", 64, region="local", offset=64 * i,
                               remote_addr=s.conn.mem_addr + 64 * i, rkey=s.conn.mem_rkey,
                               wr_id=80 + i)
        s.conn.pump(0.05)
        started = dict(s.conn.responses)
        need(started, "no READ_REQUEST")
        need(len(started) <= 2, "%d READs started against max responses 2" % len(started))
        answered = set()
        most = len(started)
        deadline = time.monotonic() + 3
        while len(answered) < 5 and time.monotonic() < deadline:
            for key, rx in sorted(s.conn.responses.items(), key=lambda kv: kv[1].when):
                if key in answered:
                    continue
                d = rx.pkt[c.Data]
                s.conn.send_data(0, s.dev_stream, d.msn, c.READ_RESPONSE, b"r" * 64,
                                 message_length=64, flags=c.ACK_REQUEST)
                answered.add(key)
            s.conn.pump(0.02)
            open_now = len(set(s.conn.responses) - answered)
            most = max(most, open_now)
        need(most <= 2, "%d READs outstanding at once against max responses 2" % most)
        wc = completions(s, 5, 2000)
        need(len(wc) == 5 and all(w["status"] == WC_SUCCESS for w in wc),
             "%d of 5 READs completed: %s" % (len(wc), wc))
        return "at most %d READs outstanding, all 5 complete" % most
    finally:
        s.close()
