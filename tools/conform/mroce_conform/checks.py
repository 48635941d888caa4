"""Judgements the cases share."""

import time

from . import codec as c
from .session import Fail, Session, Skip
from .target import pattern

SETTLE = 0.03  # seconds to wait for an answer that must not come


def fresh(env, **kw):
    """A session whose connection the device opened and the tester accepted."""
    s = Session(env, **kw)
    try:
        s.open_by_device()
    except Exception:
        s.close()
        raise
    return s


def answers_to(s, psn, path, since):
    """ACKs and NACKs from the device, received after `since`, that concern `psn`."""
    out = []
    for rx in s.tester.log[since:]:
        if rx.error or rx.pkt.path != path:
            continue
        if rx.type == c.ACK and rx.pkt[c.Ack].acked(psn):
            out.append(rx)
        if rx.type == c.NACK and rx.pkt[c.Nack].psn == psn:
            out.append(rx)
    return out


def mem_unchanged(s, region, offset, length):
    got = s.target.read_mem(region, offset, length)
    want = pattern(s.target.region(region)["seed"], offset, length)
    return got == want


def alive(s, path=0):
    """A valid WRITE with ACK_REQUEST is acknowledged: the device still serves the
    connection (so a missing answer before it was a drop, not a dead device)."""
    r = s.target.region("rw")
    psn = s.conn.send_data(path, s.dev_stream, s.next_msn(), c.WRITE, b"\x00" * 8,
                           raddr=r["addr"] + 65536 - 8, rkey=r["rkey"], flags=c.ACK_REQUEST)
    if s.conn.wait_ack(path, psn, 1.0) is None:
        raise Fail("the device stopped answering valid DATA on path %d afterwards" % path)


def expect_dropped(s, raw, psn, path=0, region="rw", offset=0, length=8, what="packet"):
    """Sends a malformed or forbidden DATA packet; it must be neither answered nor placed.
    Its PSN is then filled by a valid packet so the path carries on."""
    before = s.env.counters_or_none()
    since = len(s.tester.log)
    s.tester.send(raw, s.conn.dst(path % max(1, len(s.conn.peer_addrs))), 0, path)
    s.conn.pump(SETTLE)
    got = answers_to(s, psn, path, since)
    if got:
        raise Fail("the device answered the %s: %s" % (what, got[0]))
    if not mem_unchanged(s, region, offset, length):
        raise Fail("the %s was placed in memory" % what)
    counted = ""
    if before is not None:  # where counters can be read, the drop is counted as malformed
        after = s.env.counters()
        grew = [k for k in after if "malformed" in k and after[k] > before.get(k, 0)]
        if not grew:
            raise Fail("the %s was dropped but not counted as malformed" % what)
        counted = ", counted as %s" % grew[0]
    # Fill the PSN with a NOP so later PSNs are in order.
    s.conn.send_data(path, 0, 0, c.NOP, psn=psn, flags=c.ACK_REQUEST)
    if s.conn.wait_ack(path, psn, 1.0) is None:
        raise Fail("a valid NOP at the dropped %s's PSN was not acknowledged" % what)
    return "dropped, not answered, not placed" + counted


def valid_write(s, path=0, region="rw", offset=0, payload=b"MROCE!!!", flags=c.ACK_REQUEST,
                **kw):
    """A valid single-segment WRITE as a scapy packet plus its PSN (not sent)."""
    r = s.target.region(region)
    psn = s.conn.take_psn(path)
    pkt = c.data(s.conn.peer_id, s.conn.peer_token, path, s.conn.gen[path], psn,
                 s.dev_stream, s.next_msn(), c.WRITE, payload, raddr=r["addr"] + offset,
                 rkey=r["rkey"], flags=flags, timestamp=time.monotonic_ns(), **kw)
    return pkt, psn


def wait_nack(s, psn, path=0, seconds=0.5):
    def found():
        return any(n.pkt[c.Nack].psn == psn and n.pkt.path == path for n in s.conn.nacks)
    s.conn.pump(seconds, found)
    for n in s.conn.nacks:
        if n.pkt[c.Nack].psn == psn and n.pkt.path == path:
            return n
    return None


def device_write(s, length, tester_offset=0, local_offset=0, wr_id=1, opcode="write", **kw):
    """Has the target WRITE `length` bytes of its local region into the tester's memory."""
    s.target.post_send(s.qpn, opcode, length, region="local", offset=local_offset,
                       remote_addr=s.conn.mem_addr + tester_offset, rkey=s.conn.mem_rkey,
                       wr_id=wr_id, **kw)


def device_data(s, opcode=None):
    return [rx for rx in s.conn.data if opcode is None or rx.pkt[c.Data].opcode == opcode]


def completions(s, count=1, timeout_ms=1000, qpns=None):
    """Completions of the session's QPs (or `qpns`); the tester keeps serving the
    connection while it waits."""
    qpns = qpns or (s.qpn,)
    out = []
    deadline = time.monotonic() + timeout_ms / 1000.0
    while True:
        out += [w for w in s.target.poll(count - len(out), 0) if w["qpn"] in qpns]
        if len(out) >= count or time.monotonic() >= deadline:
            return out
        s.conn.pump(0.002)


def need(cond, why):
    if not cond:
        raise Fail(why)


def skip(why):
    raise Skip(why)


WC_SUCCESS, WC_LOC_LEN_ERR, WC_WR_FLUSH_ERR, WC_REM_INV_REQ_ERR, WC_REM_ACCESS_ERR, \
    WC_REM_OP_ERR, WC_RETRY_EXC_ERR, WC_RNR_RETRY_EXC_ERR = 0, 1, 5, 9, 10, 11, 12, 13
