"""SPEC 9: what must never reach memory: unknown connections, wrong tokens, bad streams,
bogus ACKs; CONNECT floods and reflection."""

import os

from .. import codec as c
from ..checks import (fresh, need, SETTLE, mem_unchanged, device_write, completions,
                      alive)
from ..registry import case
from ..session import Session


def _silent(s, raw, region="rw", offset=0, length=8, path=0):
    since = len(s.tester.log)
    s.tester.send(raw, s.conn.dst(0), 0, path)
    s.conn.pump(SETTLE)
    got = [rx for rx in s.tester.log[since:] if rx.type in (c.ACK, c.NACK)]
    return got, mem_unchanged(s, region, offset, length)


def _write_raw(s, conn_id, token, stream=None, psn=None):
    r = s.target.region("rw")
    return bytes(c.data(conn_id, token, 0, 0, s.conn.isn if psn is None else psn,
                        s.dev_stream if stream is None else stream, 0, c.WRITE, b"!" * 8,
                        raddr=r["addr"], rkey=r["rkey"], flags=c.ACK_REQUEST))


@case("9-unknown-connection-dropped", "MUST",
      "DATA naming no live connection is dropped: no answer, nothing placed")
def unknown_connection(env):
    s = fresh(env)
    try:
        got, same = _silent(s, _write_raw(s, s.conn.peer_id ^ 0x00ABC000, s.conn.peer_token))
        need(not got, "answered: %s" % got)
        need(same, "placed")
        alive(s)
        return "dropped"
    finally:
        s.close()


@case("9-bad-token-dropped", "MUST", "DATA with the right id and a wrong token is dropped")
def bad_token(env):
    s = fresh(env)
    try:
        got, same = _silent(s, _write_raw(s, s.conn.peer_id, s.conn.peer_token ^ 1 << 63))
        need(not got, "answered: %s" % got)
        need(same, "placed")
        alive(s)
        return "dropped"
    finally:
        s.close()


@case("9-bad-stream-not-placed", "MUST",
      "a request for a stream not bound to the connection is refused with INVALID_REQUEST, "
      "never placed")
def bad_stream(env):
    s = fresh(env)
    try:
        got, same = _silent(s, _write_raw(s, s.conn.peer_id, s.conn.peer_token,
                                          stream=(s.dev_stream + 77) & 0xFFFF))
        need(same, "placed")
        acks = [rx for rx in got if rx.type == c.ACK and rx.pkt[c.Ack].acked(s.conn.isn)]
        need(not acks, "acknowledged")
        nacks = [rx for rx in got if rx.type == c.NACK]
        need(nacks, "dropped without a NACK")
        need(nacks[0].pkt[c.Nack].code == c.INVALID_REQUEST, "refused with %s" %
             c.NACK_CODES.get(nacks[0].pkt[c.Nack].code, nacks[0].pkt[c.Nack].code))
        return "INVALID_REQUEST, not placed"
    finally:
        s.close()


@case("9-stream-above-24-bits-not-placed", "MUST",
      "a destination stream of 2^24 or more is never valid, never placed")
def stream_24(env):
    s = fresh(env)
    try:
        got, same = _silent(s, _write_raw(s, s.conn.peer_id, s.conn.peer_token,
                                          stream=s.dev_stream | 1 << 24))
        need(same, "placed")
        need(not [rx for rx in got if rx.type == c.ACK and rx.pkt[c.Ack].acked(s.conn.isn)],
             "acknowledged")
        return "not placed"
    finally:
        s.close()


def _bogus_ack_case(name, what, mutate, xfail=None):
    @case(name, "MUST", "an ACK %s is dropped: the device's work does not complete on it"
          % what, xfail=xfail)
    def run(env):
        s = fresh(env)
        try:
            s.conn.ack_policy = "none"
            device_write(s, 100, wr_id=90)
            s.conn.pump(0.2, lambda: s.conn.data)
            need(s.conn.data, "no DATA")
            rx = s.conn.data[0]
            st = s.conn.rx[rx.pkt.path]
            ack = c.ack(s.conn.peer_id, s.conn.peer_token, rx.pkt.path, st.generation,
                        st.cum, echo_ts=st.last_ts, received=st.received)
            s.tester.send(bytes(mutate(s, ack)), rx.src)
            wc = completions(s, 1, 30)
            need(not wc, "the WRITE completed on it: %s" % wc)
            s.conn.ack_policy = "every"
            s.conn.ack_path(rx.pkt.path)
            wc = completions(s, 1, 2000)
            need(wc and wc[0]["status"] == 0, "the right ACK did not complete it: %s" % wc)
            return "ignored; the right ACK completes the WRITE"
        finally:
            s.close()
    return run


def _set(**fields):
    def mutate(s, ack):
        for k, v in fields.items():
            setattr(ack[c.Ack] if k in ("cumulative",) else ack, k, v)
        return ack
    return mutate


_bogus_ack_case("3.4-ack-other-generation-dropped", "of another generation",
                _set(generation=5))
_bogus_ack_case("9-ack-bad-token-dropped", "with a wrong token",
                lambda s, a: _set(token=a.token ^ 0xFF)(s, a))
_bogus_ack_case("3.4-ack-unsent-psn-dropped", "acknowledging PSNs never sent",
                lambda s, a: _set(cumulative=(a[c.Ack].cumulative + 50) & 0xFFFFFFFF)(s, a))


_bogus_ack_case("3.4-ack-behind-isn-dropped", "whose cumulative PSN is behind the ISN",
                lambda s, a: _behind_isn(s, a))


def _behind_isn(s, a):
    a[c.Ack].cumulative = (s.conn.peer_isn - 1) & 0xFFFFFFFF
    a[c.Ack].sack0 = 1  # bit 0: the ISN itself
    return a


@case("3.5-nack-unknown-code-dropped", "MUST",
      "a NACK with a code outside 1-5 is dropped: the work neither fails nor retries on it")
def nack_unknown_code(env):
    s = fresh(env)
    try:
        from ..peer import nack_for
        state = {}

        def refuse(rx):
            if rx.pkt[c.Data].opcode == c.WRITE and "done" not in state:
                state["done"] = rx
                s.tester.send(nack_for(s.conn, rx, 6), rx.src)
                s.tester.send(nack_for(s.conn, rx, 0), rx.src)
                return False
            return True
        s.conn.rx_filter = refuse
        device_write(s, 100, wr_id=95)
        wc = completions(s, 1, 3000)
        need(wc and wc[0]["status"] == 0, "the WRITE did not complete after NACKs of codes 6 "
             "and 0: %s" % wc)
        return "ignored; the WRITE completed"
    finally:
        s.close()


@case("3.5-nack-reserved-dropped", "MUST",
      "a NACK with its reserved bits set is dropped: the work neither fails nor retries on it")
def nack_reserved(env):
    s = fresh(env)
    try:
        from ..peer import nack_for
        state = {}

        def refuse(rx):
            if rx.pkt[c.Data].opcode == c.WRITE and "done" not in state:
                state["done"] = rx
                n = nack_for(s.conn, rx, c.REMOTE_ACCESS)
                n[c.Nack].reserved = 0x000100
                s.tester.send(n, rx.src)
                return False
            return True
        s.conn.rx_filter = refuse
        device_write(s, 100, wr_id=97)
        wc = completions(s, 1, 3000)
        need(wc and wc[0]["status"] == 0, "the WRITE did not complete after a REMOTE_ACCESS "
             "NACK with reserved bits: %s" % wc)
        return "ignored; the WRITE completed"
    finally:
        s.close()


@case("7.3-msn-far-ahead-refused", "MUST",
      "a request whose MSN is 2^20 or more ahead of the stream is refused with "
      "INVALID_REQUEST")
def msn_far_ahead(env):
    s = fresh(env)
    try:
        r = s.target.region("rw")
        psn = s.conn.send_data(0, s.dev_stream, 1 << 20, c.WRITE, b"F" * 8, raddr=r["addr"],
                               rkey=r["rkey"], flags=c.ACK_REQUEST)
        from ..checks import wait_nack
        n = wait_nack(s, psn)
        need(n is not None, "no NACK")
        need(n.pkt[c.Nack].code == c.INVALID_REQUEST, "code %s" % c.NACK_CODES.get(
            n.pkt[c.Nack].code, n.pkt[c.Nack].code))
        need(mem_unchanged(s, "rw", 0, 8), "placed")
        return "INVALID_REQUEST"
    finally:
        s.close()


@case("7.3-responder-sends-after-refusal", "MUST",
      "a refused request does not stop the responder's own sends on its stream")
def sends_after_refusal(env):
    s = fresh(env)
    try:
        r = s.target.region("ro")
        psn = s.conn.send_data(0, s.dev_stream, s.next_msn(), c.WRITE, b"x" * 8,
                               raddr=r["addr"], rkey=r["rkey"], flags=c.ACK_REQUEST)
        from ..checks import wait_nack
        need(wait_nack(s, psn) is not None, "no NACK")
        device_write(s, 100, wr_id=96)
        wc = completions(s, 1, 2000)
        need(wc and wc[0]["status"] == 0, "the target's WRITE after the refusal: %s" % wc)
        return "the target's WRITE still completes"
    finally:
        s.close()


@case("9-connect-answer-bounded", "MUST",
      "every CONNECT gets at most one ACCEPT, to its source, at most 3x its bytes")
def connect_bounded(env):
    s = Session(env)
    try:
        raw = bytes(s.conn.my_setup(c.CONNECT))
        for i in range(8):
            s.tester.send(raw, s.conn.dev, 0, i)
        s.conn.pump(0.05)
        acc = [rx for rx in s.tester.log if rx.type == c.ACCEPT]
        need(len(acc) <= 8, "%d ACCEPT to 8 CONNECT" % len(acc))
        need(acc, "no ACCEPT at all")
        need(all(len(a.raw) <= 3 * len(raw) for a in acc), "an ACCEPT of %d bytes against a "
             "CONNECT of %d" % (max(len(a.raw) for a in acc), len(raw)))
        sources = {s.tester.sock(0, i).port for i in range(8)}
        need(all(a.local[1] in sources for a in acc), "an ACCEPT went elsewhere than a source")
        need(len(s.tester.log) == len(acc), "also sent %s" % [
            rx for rx in s.tester.log if rx.type != c.ACCEPT][:2])
        return "%d ACCEPT of %d bytes to 8 CONNECT of %d" % (len(acc), len(acc[0].raw),
                                                              len(raw))
    finally:
        s.close()


@case("9-connect-flood-bounded", "MUST",
      "a flood of 300 half-open CONNECTs does not stop a genuine set-up afterwards")
def connect_flood(env):
    s = Session(env)
    try:
        for i in range(300):
            raw = bytes(s.conn.my_setup(c.CONNECT, listen_port=40000 + i,
                                        src_id=int.from_bytes(os.urandom(4), "big") | 1))
            s.tester.send(raw, s.conn.dev, 0, i)
            if i % 50 == 49:
                s.conn.pump(0.002)
        s.conn.pump(0.05)
        s.tester.log.clear()
        s.conn.setup.clear()
    finally:
        s.close()
    t = fresh(env)
    try:
        alive(t)
        return "a set-up after 300 half-open CONNECTs succeeds"
    finally:
        t.close()


def _counted_case(name, what, key, build):
    @case(name, "MUST", "a packet dropped for %s is counted under its reason" % what)
    def run(env):
        env.counters()  # skips when the device exposes none
        s = fresh(env)
        try:
            before = env.counters()
            got, same = _silent(s, build(s))
            need(not got and same, "the packet was not dropped: %s" % got)
            after = env.counters()
            names = [k for k in after if key in k]
            need(names, "no counter named like '%s' among %s" % (key, sorted(after)))
            grew = [k for k in names if after[k] > before.get(k, 0)]
            need(grew, "%s did not grow" % names)
            return "%s %d -> %d" % (grew[0], before.get(grew[0], 0), after[grew[0]])
        finally:
            s.close()
    return run


_counted_case("9-drop-counted-unknown-connection", "an unknown connection",
              "unknown_connection",
              lambda s: _write_raw(s, s.conn.peer_id ^ 0x00ABC000, s.conn.peer_token))
_counted_case("9-drop-counted-bad-token", "a wrong token", "bad_token",
              lambda s: _write_raw(s, s.conn.peer_id, s.conn.peer_token ^ 1))
_counted_case("9-drop-counted-malformed", "a reserved flag bit (malformed)", "malformed",
              lambda s: _with_flags(_write_raw(s, s.conn.peer_id, s.conn.peer_token), 0x80))


def _with_flags(raw, flags):
    return raw[:1] + bytes([raw[1] | flags]) + raw[2:]


@case("9-halfopen-bound-oldest-evicted", "MUST",
      "the device holds 256 half-open connections; a 257th frees the oldest, counted as "
      "set-up evicted, while the newest 256 stay")
def halfopen_bound(env):
    s = Session(env)
    try:
        before = env.counters_or_none()
        ids = [int.from_bytes(os.urandom(4), "big") | 1 for _ in range(257)]

        def connect(i):  # from forged peer endpoint i: a listening port and id of its own
            raw = bytes(s.conn.my_setup(c.CONNECT, listen_port=41000 + i, src_id=ids[i]))
            s.tester.send(raw, s.conn.dev, 0, i)

        def accepts(i, since):
            return [rx for rx in s.tester.log[since:] if rx.type == c.ACCEPT and
                    rx.pkt.conn_id == ids[i]]

        def held(i):
            """The device's id and token in its ACCEPT to a (repeated) CONNECT i."""
            since = len(s.tester.log)
            connect(i)
            s.conn.pump(0.5, lambda: accepts(i, since))
            got = accepts(i, since)
            need(got, "no ACCEPT to CONNECT %d" % i)
            return (got[0].pkt[c.Setup].src_id, got[0].pkt[c.Setup].src_token)
        first = {}
        for i in range(256):
            since = len(s.tester.log)
            connect(i)
            if i % 16 == 15 or i == 0:
                s.conn.pump(0.002)
            s.conn.pump(0.2, lambda: accepts(i, since) or i % 16 != 15)
        s.conn.pump(0.05)
        for i in range(256):
            got = accepts(i, 0)
            need(got, "no ACCEPT to half-open CONNECT %d of 256" % i)
            first[i] = (got[0].pkt[c.Setup].src_id, got[0].pkt[c.Setup].src_token)
        first[256] = held(256)  # one more: frees the oldest, CONNECT 0's
        need(held(0) != first[0], "CONNECT 0's half-open connection outlived 256 newer ones")
        # CONNECT 0 again made one more, freeing CONNECT 1's; 2 to 256 are still held.
        need(held(2) == first[2], "CONNECT 2's half-open connection was freed with only 256 "
             "newer ones")
        need(held(256) == first[256], "the newest half-open connection was freed")
        counted = ""
        if before is not None:
            s.conn.pump(0.1)  # counters read from files may lag the packets a little
            after = env.counters()
            names = [k for k in after if "evicted" in k]
            need(names and after[names[0]] >= before.get(names[0], 0) + 2,
                 "no eviction counted: %s" % {k: after[k] for k in names})
            counted = ", %s +%d" % (names[0], after[names[0]] - before.get(names[0], 0))
        return "oldest freed, the 256 newest held" + counted
    finally:
        s.close()
