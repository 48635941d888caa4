"""A small MetaRoCE device of the suite's own, with the control protocol of mroce-target,
for the suite's self-tests: faithful, it passes the selected cases; with a fault switched
on, the suite must catch it. It does only what those cases need: set-up from its side,
WRITEs in (placed, acknowledged with SACK) and WRITEs out (sprayed over paths, loss
resent from the SACK)."""

import json
import os
import select
import socket
import socketserver
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from mroce_conform import codec as c  # noqa: E402
from mroce_conform.peer import PathRx  # noqa: E402
from mroce_conform.target import pattern  # noqa: E402

FAULTS = ("resend-wrong-path", "resend-late", "duplicate-placed-twice",
          "reserved-bit-accepted", "ack-delay-bound-assumed")
LATE = 0.030  # how late the "resend-late" fault resends: every time, far past any host noise
# The "ack-delay-bound-assumed" fault resends a segment not acknowledged this long after
# it left: a sender that takes the ack_delay bound (20 us) for granted.
ASSUMED_ACK_BOUND = 0.0001
PATHS = 4
MSS = 4096


class Region:
    def __init__(self, name, addr, length, seed):
        self.name, self.addr, self.seed = name, addr, seed
        self.rkey = 0x1000 + seed
        self.mem = bytearray(pattern(seed, 0, length))

    def reset(self):
        self.mem[:] = pattern(self.seed, 0, len(self.mem))


class Qp:
    def __init__(self, qpn):
        self.qpn = qpn
        self.peer = None
        self.stream = None


class Conn:
    def __init__(self, dev, peer):
        self.dev, self.peer = dev, peer
        self.my_id = int.from_bytes(os.urandom(4), "big") | 1
        self.my_token = int.from_bytes(os.urandom(8), "big") | 1
        self.isn = int.from_bytes(os.urandom(4), "big")
        self.peer_id = self.peer_token = None
        self.rx = {}
        self.next_psn = [self.isn] * PATHS
        self.out = {}       # (path, psn) -> [segment bytes, transmissions, wr]
        self.acked = set()
        self.msn = 0
        self.sent = 0


class MockDevice:
    def __init__(self, port_base, fault=None):
        assert fault in (None,) + FAULTS
        self.fault = fault
        self.addr = "127.0.0.1"
        self.port = port_base
        self.port_base = port_base
        self.lock = threading.Lock()
        self.listen = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.listen.bind((self.addr, port_base))
        self.pool = []
        for _ in range(PATHS + 4):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind((self.addr, 0))
            self.pool.append(s)
        self.setup_next = 0
        self.regions = {n: Region(n, 0x10000000 * (i + 1), size, i + 1) for i, (n, size) in
                        enumerate((("rw", 65536), ("local", 262144)))}
        self.qps = {}
        self.conns = {}
        self.wcs = []
        self.sendq = []  # new DATA waiting for the datapath thread
        self.running = True
        self.udp = threading.Thread(target=self._udp_loop, daemon=True)
        self.udp.start()
        dev = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                for line in self.rfile:
                    reply = dev.control(line.decode())
                    self.wfile.write((json.dumps(reply) + "\n").encode())

        self.tcp = socketserver.ThreadingTCPServer((self.addr, 0), Handler)
        self.tcp.daemon_threads = True
        self.control_port = self.tcp.server_address[1]
        threading.Thread(target=self.tcp.serve_forever, daemon=True).start()

    def close(self):
        self.running = False
        self.tcp.shutdown()
        self.tcp.server_close()
        self.udp.join()
        for s in [self.listen] + self.pool:
            s.close()

    # ---- control protocol ----------------------------------------------------------------
    def control(self, line):
        try:
            req = json.loads(line)
            if req["op"] == "post_send":  # builds its packets outside the lock
                out = self.op_post_send(req)
            else:
                with self.lock:
                    out = getattr(self, "op_" + req["op"])(req)
            out["ok"] = True
            return out
        except Exception as e:  # the target's rule: one error line, keep serving
            return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}

    def op_info(self, req):
        return {"device": "mock0", "gids": ["::ffff:" + self.addr], "mtu": MSS,
                "regions": {n: {"addr": r.addr, "length": len(r.mem), "rkey": r.rkey,
                                "lkey": r.rkey, "seed": r.seed, "access": []}
                            for n, r in self.regions.items()}}

    def op_reset_mem(self, req):
        self.regions[req["region"]].reset()
        return {}

    def op_read_mem(self, req):
        r, o = self.regions[req["region"]], req.get("offset", 0)
        return {"hex": bytes(r.mem[o:o + req["length"]]).hex()}

    def op_write_mem(self, req):
        r, o, b = self.regions[req["region"]], req.get("offset", 0), bytes.fromhex(req["hex"])
        r.mem[o:o + len(b)] = b
        return {}

    def op_poll(self, req):
        n = req.get("count", 1)
        out, self.wcs = self.wcs[:n], self.wcs[n:]
        return {"wc": out}

    def op_create_qp(self, req):
        qpn = 1 << 16 | (len(self.qps) + 1)
        self.qps[qpn] = Qp(qpn)
        return {"qpn": qpn}

    def op_destroy_qp(self, req):
        self.qps.pop(req["qpn"])
        return {}

    def op_counters(self, req):
        return {"available": False, "reason": "the mock device keeps none"}

    def op_connect(self, req):
        qp = self.qps[req["qpn"]]
        rq = req["remote_qpn"]
        peer = (c.unmapped(req["gid"]), self.port_base + (rq >> 16) - 1)
        qp.peer, qp.stream = peer, rq & 0xFFFF
        conn = self.conns.get(peer)
        if conn is None:
            conn = self.conns[peer] = Conn(self, peer)
            pkt = c.setup(c.CONNECT, conn.my_id, conn.my_token, conn.isn, self.port,
                          [self.addr], mss=MSS, paths=PATHS)
            self._setup_send(pkt, peer, copies=2)
        return {}

    def op_post_send(self, req):
        qp = self.qps[req["qpn"]]
        assert req["opcode"] == "write", "the mock device only writes"
        conn = self.conns[qp.peer]
        local = self.regions[req.get("region", "local")]
        data = bytes(local.mem[req.get("offset", 0):req.get("offset", 0) + req["length"]])
        wr = {"wr_id": req.get("wr_id", 0), "qpn": qp.qpn, "left": 0}
        msn = conn.msn
        conn.msn += 1
        nseg = max(1, -(-len(data) // MSS))
        # Built here (scapy is slow); the datapath thread sends them one at a time, reading
        # what arrived before each, so a resend goes out ahead of new data.
        built = []
        for k in range(nseg):
            seg = data[k * MSS:(k + 1) * MSS]
            path = conn.sent % PATHS
            conn.sent += 1
            flags = c.ACK_REQUEST if k == nseg - 1 else 0
            pkt = c.data(conn.peer_id, conn.peer_token, path, 0, 0, qp.stream, msn, c.WRITE,
                         seg, offset=k * MSS, message_length=len(data), flags=flags,
                         raddr=req["remote_addr"] + 0, rkey=req["rkey"])
            wr["left"] += 1
            built.append((path, bytes(pkt)))
        with self.lock:
            self.sendq.extend((conn, path, raw, wr) for path, raw in built)
        return {}

    # ---- datapath ------------------------------------------------------------------------
    def _setup_send(self, pkt, dst, copies=1):
        for _ in range(copies):
            self.pool[PATHS + self.setup_next % 4].sendto(bytes(pkt), dst)
            self.setup_next += 1

    def _send_new(self, conn, path, raw, wr):
        """Sends a DATA datagram (bytes built beforehand) under the next PSN of `path`;
        only struct on this path, so the mock answers as fast as Python can."""
        raw = bytearray(raw)
        psn = conn.next_psn[path]
        conn.next_psn[path] = (psn + 1) & 0xFFFFFFFF
        raw[2] = path
        struct.pack_into("!II", raw, 16, psn, time.monotonic_ns() & 0xFFFFFFFF)
        conn.out[(path, psn)] = [raw, 1, wr, time.monotonic()]
        self.pool[path].sendto(raw, conn.peer)

    def _resend_unacknowledged(self):
        """The "ack-delay-bound-assumed" fault: a segment whose ACK is later than the bound
        is resent, on its path under its PSN."""
        now = time.monotonic()
        for conn in self.conns.values():
            for (p, psn), entry in sorted(conn.out.items()):
                if entry[1] == 1 and now - entry[3] > ASSUMED_ACK_BOUND:
                    entry[1] += 1
                    raw = entry[0]
                    raw[1] |= c.ACK_REQUEST
                    raw[16 + 17] |= c.RETRANSMIT
                    self.pool[p].sendto(raw, conn.peer)

    def _udp_loop(self):
        socks = [self.listen] + self.pool
        while self.running:
            timed = self.fault == "ack-delay-bound-assumed" and any(
                x.out for x in self.conns.values())
            ready, _, _ = select.select(socks, [], [], 0 if self.sendq else
                                        ASSUMED_ACK_BOUND if timed else 0.01)
            for s in ready:
                try:
                    raw, src = s.recvfrom(65536)
                except OSError:
                    continue
                with self.lock:
                    self._on_packet(raw, src)
            with self.lock:
                if self.sendq and not ready:
                    self._send_new(*self.sendq.pop(0))
                if timed:
                    self._resend_unacknowledged()

    def _on_packet(self, raw, src):
        if self.fault == "reserved-bit-accepted" and len(raw) > 1:
            raw = raw[:1] + bytes([raw[1] & 0x03]) + raw[2:]  # reserved flag bits ignored
        if c.validate(raw) is not None:
            return
        if raw[0] & 0x0F == c.ACK:
            return self._on_raw_ack(raw)
        pkt = c.Common(raw)
        conn = next((x for x in self.conns.values() if x.my_id == pkt.conn_id), None)
        if pkt.type == c.ACCEPT and conn is not None:
            st = pkt[c.Setup]
            first = conn.peer_id is None
            conn.peer_id, conn.peer_token, conn.peer_isn = st.src_id, st.src_token, st.isn
            self._setup_send(c.common(c.CONFIRM, conn.peer_id, conn.peer_token), conn.peer,
                             copies=2 if first else 1)
            return
        if conn is None or pkt.token != conn.my_token:
            return
        if pkt.type == c.DATA:
            self._on_data(conn, pkt, src)


    def _on_data(self, conn, pkt, src):
        d = pkt[c.Data]
        st = conn.rx.setdefault(pkt.path, PathRx(conn.peer_isn))
        verdict = st.record(d.psn)
        if verdict == "out of window":
            return
        if verdict is None or self.fault == "duplicate-placed-twice":
            if d.opcode == c.WRITE:
                r = next((x for x in self.regions.values() if x.rkey == d.rkey), None)
                at = d.raddr + d.offset - r.addr if r else -1
                payload = c.data_payload(pkt)
                if r is None or at < 0 or at + len(payload) > len(r.mem):
                    return
                r.mem[at:at + len(payload)] = payload
        if verdict is None:
            st.received += 1
        st.last_ts = d.timestamp
        ack = c.ack(conn.peer_id, conn.peer_token, pkt.path, pkt.generation, st.cum,
                    st.sack(), echo_ts=d.timestamp, received=st.received)
        self.listen.sendto(bytes(ack), src)

    def _on_raw_ack(self, raw):
        """ACKs come in bursts: decoded with struct, not scapy, so the mock keeps up."""
        conn_id, token = struct.unpack("!IQ", raw[4:16])
        conn = next((x for x in self.conns.values() if x.my_id == conn_id), None)
        if conn is None or token != conn.my_token:
            return
        cum = struct.unpack("!I", raw[16:20])[0]
        words = struct.unpack("!4Q", raw[40:72])

        class A:
            @staticmethod
            def acked(psn):
                d = c.serial_diff(psn, cum)
                if d < 0:
                    return True
                if d == 0 or d > 256:
                    return False
                return bool(words[(d - 1) // 64] >> ((d - 1) % 64) & 1)
        self._on_ack(conn, None, A, raw[2])

    def _on_ack(self, conn, pkt, a=None, path=None):
        if pkt is not None:
            a, path = pkt[c.Ack], pkt.path
        newest = None
        for (p, psn), entry in list(conn.out.items()):
            if p == path and a.acked(psn):
                del conn.out[(p, psn)]
                wr = entry[2]
                wr["left"] -= 1
                if wr["left"] == 0:
                    self.wcs.append({"wr_id": wr["wr_id"], "status": 0, "status_str": "success",
                                     "opcode": "write", "byte_len": 0, "qpn": wr["qpn"]})
                if newest is None or c.serial_diff(psn, newest) > 0:
                    newest = psn
        if newest is None:
            return
        # A gap below the newest acknowledged PSN is loss: resend it once, at once.
        for (p, psn), entry in sorted(conn.out.items()):
            if p == path and c.serial_diff(psn, newest) < 0 and entry[1] == 1:
                entry[1] += 1
                raw = entry[0]
                raw[1] |= c.ACK_REQUEST
                raw[16 + 17] |= c.RETRANSMIT
                if self.fault == "resend-wrong-path":
                    del conn.out[(p, psn)]
                    self._send_new(conn, (p + 1) % PATHS, raw, entry[2])
                elif self.fault == "resend-late":
                    threading.Timer(LATE, self.pool[p].sendto, (bytes(raw), conn.peer)).start()
                else:
                    self.pool[p].sendto(raw, conn.peer)


def main():
    """mock_device.py PORT_BASE [FAULT]: serves until stdin closes; prints its control port."""
    sys.setswitchinterval(0.0001)  # the datapath thread must not wait 5 ms for the control's
    try:
        os.nice(-10)  # a device answers at once; on a loaded host a plain process waits for a CPU
    except OSError:
        pass
    dev = MockDevice(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None)
    print(dev.control_port, flush=True)
    sys.stdin.read()
    dev.close()


if __name__ == "__main__":
    main()
