"""SPEC 5: path identity, sequence spaces, generations and re-entropy."""

from .. import codec as c
from ..checks import fresh, need, SETTLE, device_write, device_data, completions, mem_unchanged
from ..registry import case


@case("5.1-paths-spread", "MUST",
      "the device sprays a message over several paths, each path on its own source port, "
      "path ids below its announced count")
def paths_spread(env):
    s = fresh(env)
    try:
        # Four messages of 16 segments, posted together: more than one train (§8.2 lets a
        # path send a run of consecutive packets, e.g. a 64 KiB segmentation-offload
        # message) and more than one path's share of the initial window.
        for k in range(4):
            device_write(s, 16 * 4096, wr_id=1 + k)
        s.conn.pump(1.0, lambda: len(device_data(s)) >= 64)
        completions(s, 4)
        got = device_data(s)
        ids = {rx.pkt.path for rx in got}
        need(len(ids) >= 2, "four messages of 16 segments used paths %s only" % sorted(ids))
        need(max(ids) < s.conn.peer_paths, "path id %d, the device announced %d paths" %
             (max(ids), s.conn.peer_paths))
        ports = {}
        for rx in got:  # a re-entropied path (a new generation) moves, legitimately
            ports.setdefault((rx.pkt.path, rx.pkt.generation), set()).add(rx.src[1])
        need(all(len(p) == 1 for p in ports.values()),
             "a path generation changed source port: %s" % ports)
        distinct = {next(iter(p)) for p in ports.values()}
        need(len(distinct) == len(ports), "two paths share a source port: %s" % ports)
        return "%d paths, %d source ports" % (len(ids), len(distinct))
    finally:
        s.close()


@case("5.2-path-starts-at-isn", "MUST",
      "every path of the device starts at the ISN of its CONNECT, PSNs dense")
def starts_at_isn(env):
    s = fresh(env)
    try:
        device_write(s, 16 * 4096)
        s.conn.pump(1.0, lambda: len(device_data(s)) >= 16)
        completions(s)
        by_path = {}
        for rx in device_data(s):
            if rx.pkt.generation == 0:
                by_path.setdefault(rx.pkt.path, set()).add(rx.pkt[c.Data].psn)
        for path, psns in by_path.items():
            got = sorted(c.serial_diff(p, s.conn.peer_isn) for p in psns)
            need(got == list(range(len(got))), "path %d sent PSNs ISN%+d.., not ISN onwards, "
                 "dense" % (path, got[0]))
        return "%d paths from ISN %d" % (len(by_path), s.conn.peer_isn)
    finally:
        s.close()


@case("5.2-psn-span-at-most-256", "MUST",
      "unacknowledged, the device keeps at most 256 PSNs outstanding per path")
def psn_span(env):
    s = fresh(env, mss=256)
    try:
        s.conn.ack_policy = "none"
        device_write(s, 200000)
        s.conn.pump(0.3)
        by_path = {}
        for rx in device_data(s):
            if rx.pkt.generation == 0:
                by_path.setdefault(rx.pkt.path, set()).add(rx.pkt[c.Data].psn)
        need(by_path, "no DATA")
        worst = max(max(c.serial_diff(p, s.conn.peer_isn) for p in v) + 1
                    for v in by_path.values())
        need(worst <= 256, "a path reached %d PSNs outstanding" % worst)
        return "at most %d PSNs outstanding on a path" % worst
    finally:
        s.close()


@case("5.3-receiver-newer-generation-resets", "MUST",
      "DATA of a newer generation resets the device's receive state for that path")
def newer_generation(env):
    s = fresh(env)
    try:
        for i in range(3):
            s.write("rw", 8 * i, b"g" * 8)
        s.conn.gen[0] = 1
        s.conn.next_psn[0] = s.conn.isn
        p = s.write("rw", 64, b"h" * 8, flags=c.ACK_REQUEST)
        s.conn.pump(0.1, lambda: any(a.pkt.generation == 1 for a in s.conn.acks))
        acks = [a for a in s.conn.acks if a.pkt.generation == 1]
        need(acks, "no ACK of generation 1")
        a = acks[-1].pkt[c.Ack]
        need(a.cumulative == (p + 1) & 0xFFFFFFFF and a.received == 1,
             "generation 1 ACK: cumulative %d received %d, expected %d and 1" %
             (a.cumulative, a.received, p + 1))
        return "ACK of generation 1 counts from the ISN"
    finally:
        s.close()


@case("5.3-stale-generation-dropped", "MUST",
      "DATA of an older generation is dropped, unanswered and not placed")
def stale_generation(env):
    s = fresh(env)
    try:
        s.conn.gen[0] = 2
        p = s.write("rw", 0, b"n" * 8, flags=c.ACK_REQUEST)
        need(s.conn.wait_ack(0, p) is not None, "no ACK for generation 2")
        s.conn.gen[0] = 1
        since = len(s.tester.log)
        s.write("rw", 64, b"o" * 8, flags=c.ACK_REQUEST)
        s.conn.pump(SETTLE)
        got = [rx for rx in s.tester.log[since:] if rx.type in (c.ACK, c.NACK)]
        need(not got, "answered stale DATA: %s" % got)
        need(mem_unchanged(s, "rw", 64, 8), "placed stale DATA")
        return "generation 1 after 2: dropped"
    finally:
        s.close()


@case("5.3-generation-128-ahead-dropped", "MUST",
      "a generation 128 steps ahead is not newer (1 to 127 only): dropped")
def gen_128(env):
    s = fresh(env)
    try:
        s.write("rw", 0, b"a" * 8, flags=c.ACK_REQUEST)
        s.conn.pump(SETTLE)
        s.conn.gen[0] = 128
        s.conn.next_psn[0] = s.conn.isn
        since = len(s.tester.log)
        s.write("rw", 64, b"o" * 8, flags=c.ACK_REQUEST)
        s.conn.pump(SETTLE)
        got = [rx for rx in s.tester.log[since:] if rx.type in (c.ACK, c.NACK)]
        need(not got, "answered DATA of generation 128 after 0: %s" % got)
        need(mem_unchanged(s, "rw", 64, 8), "placed DATA of generation 128 after 0")
        return "dropped"
    finally:
        s.close()


@case("5.3-reentropy-silent-path", "MUST",
      "a silent path gets a new generation and source port, is probed with a NOP at the ISN, "
      "and its content moves to other paths")
def reentropy(env):
    s = fresh(env)
    try:
        victim = {}

        def drop(rx):
            p = rx.pkt
            if "path" not in victim:
                victim["path"] = p.path
                victim["port"] = rx.src[1]
                victim["t0"] = rx.when
            return not (p.path == victim["path"] and p.generation == 0)
        s.conn.rx_filter = drop
        device_write(s, 8 * 4096)
        s.conn.pump(2.0, lambda: any(rx.pkt.path == victim.get("path") and
                                     rx.pkt.generation != 0 for rx in s.conn.data))
        newer = [rx for rx in s.conn.data if rx.pkt.path == victim.get("path")
                 and rx.pkt.generation != 0]
        need(newer, "path %s never re-entropied in 2 s of silence" % victim.get("path"))
        probe = newer[0]
        d = probe.pkt[c.Data]
        need(probe.pkt.generation == 1, "new generation %d, expected 1" % probe.pkt.generation)
        need(probe.src[1] != victim["port"], "the new generation kept source port %d" %
             victim["port"])
        need(d.opcode == c.NOP and d.psn == s.conn.peer_isn and probe.pkt.flags & c.ACK_REQUEST,
             "first packet of the new generation: %s PSN %d flags %s" %
             (c.OPCODES.get(d.opcode), d.psn, probe.pkt.flags))
        wc = completions(s, 1, 2000)
        need(wc and wc[0]["status"] == 0, "the WRITE did not complete: %s" % wc)
        need(bytes(s.conn.memory[:8 * 4096]) == s.target.read_mem("local", 0, 8 * 4096),
             "the WRITE's bytes did not all arrive by the other paths")
        return "path %d: generation 1 after %.1f ms, new port, NOP probe at the ISN" % (
            victim["path"], (probe.when - victim["t0"]) * 1e3)
    finally:
        s.close()


@case("5.3-first-generation-taken", "MUST",
      "the first DATA on a path sets its generation, whatever its value")
def first_generation(env):
    s = fresh(env)
    try:
        s.conn.gen[2] = 3
        p = s.write("rw", 0, b"3" * 8, path=2, flags=c.ACK_REQUEST)
        a = s.conn.wait_ack(2, p, 0.5)
        need(a is not None, "a path's first DATA at generation 3 was not acknowledged")
        need(a.pkt.generation == 3, "ACK of generation %d" % a.pkt.generation)
        need(s.target.read_mem("rw", 0, 8) == b"3" * 8, "not placed")
        return "taken at generation 3"
    finally:
        s.close()


@case("5.3-probe-interval-doubles", "MUST",
      "an unanswered probe of a failed path is sent again from another new source port, "
      "same generation and PSN, at an interval starting at 1 ms or more and doubling")
def probe_doubling(env):
    s = fresh(env)
    try:
        victim = {}

        def drop(rx):  # the victim path is silent in every generation
            if "path" not in victim:
                victim["path"] = rx.pkt.path
            return rx.pkt.path != victim["path"]
        s.conn.rx_filter = drop

        def probes():
            return [rx for rx in s.tester.log if rx.type == c.DATA and not rx.error and
                    rx.pkt.conn_id == s.conn.my_id and rx.pkt.path == victim.get("path") and
                    rx.pkt.generation != 0]
        device_write(s, 8 * 4096)
        s.conn.pump(3.0, lambda: len(probes()) >= 7)
        got = probes()
        need(got, "path %s never re-entropied" % victim.get("path"))
        need(len(got) >= 5, "%d probes in 3 s of silence, expected a probe repeated at "
             "doubling intervals" % len(got))
        gens = {rx.pkt.generation for rx in got}
        psns = {rx.pkt[c.Data].psn for rx in got}
        need(len(gens) == 1 and len(psns) == 1, "probes of generations %s, PSNs %s: one "
             "generation and one PSN per failure" % (sorted(gens), sorted(psns)))
        need(all(rx.pkt[c.Data].opcode == c.NOP for rx in got), "a probe that is not a NOP")
        ports = [rx.src[1] for rx in got]
        need(all(a != b for a, b in zip(ports, ports[1:])),
             "a probe repeated from the same source port: %s" % ports)
        # Probe k (from 0) is due no earlier than 1 + 2 + ... ms (each interval at most
        # 100 ms) after the first: late on a loaded host, never early.
        at = [(rx.when - got[0].when) * 1e3 for rx in got]
        due = [sum(min(2 ** j, 100) for j in range(k)) for k in range(len(at))]
        early = [k for k in range(len(at)) if at[k] < 0.9 * due[k]]
        need(not early, "probe %d came %.2f ms after the first, before its %d ms" % (
            early[0], at[early[0]], due[early[0]]) if early else "")
        gaps = [b - a for a, b in zip(at, at[1:])]
        need(max(gaps) <= 100 * 1.5 + 50, "a gap of %.0f ms: the interval stops at 100 ms" %
             max(gaps))
        return "%d probes, gaps %s ms, each from a new port" % (
            len(got), ", ".join("%.1f" % g for g in gaps[:6]))
    finally:
        s.close()
