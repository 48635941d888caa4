"""The tester's side of MetaRoCE: UDP sockets on one or several planes, and the state a
peer of the device under test needs (connection ids, tokens, per-path PSNs, receive
state for the device's paths). It keeps the rules of docs/SPEC.md only as far as the
cases need them, and lets a case break any of them on purpose."""

import os
import select
import socket
import struct
import time

from . import codec as c

IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
IPV6_RECVTCLASS = getattr(socket, "IPV6_RECVTCLASS", 66)
IPV6_TCLASS = getattr(socket, "IPV6_TCLASS", 67)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
RCVBUF = 4 << 20
NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3


def family_of(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


class Rx:
    """One datagram received by the tester."""

    def __init__(self, raw, src, local, tos, when):
        self.raw, self.src, self.local, self.tos, self.when = raw, src, local, tos, when
        self.decoded = c.Decoded(raw)
        self.pkt = self.decoded.pkt
        self.error = self.decoded.error

    @property
    def type(self):
        return self.decoded.type

    def __repr__(self):
        return "Rx(%s from %s to %s: %s)" % (c.TYPES.get(self.type, self.type), self.src,
                                              self.local, self.error or self.pkt.summary())


class Sock:
    def __init__(self, addr, port):
        self.family = family_of(addr)
        self.s = socket.socket(self.family, socket.SOCK_DGRAM)
        self.s.bind((addr, port))
        if self.family == socket.AF_INET:
            self.s.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        else:
            self.s.setsockopt(socket.IPPROTO_IPV6, IPV6_RECVTCLASS, 1)
        self.s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        # Room for the device's bursts while the tester is busy: a datagram the tester's
        # kernel drops would look like the device's loss. Above rmem_max with root only.
        for opt in (SO_RCVBUFFORCE, socket.SO_RCVBUF):
            try:
                self.s.setsockopt(socket.SOL_SOCKET, opt, RCVBUF)
                break
            except OSError:
                pass
        self.s.setblocking(False)
        self.addr = addr
        self.port = self.s.getsockname()[1]
        self._tos = None

    def send(self, raw, dst, tos=0):
        if tos != self._tos:
            if self.family == socket.AF_INET:
                self.s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
            else:
                self.s.setsockopt(socket.IPPROTO_IPV6, IPV6_TCLASS, tos)
            self._tos = tos
        self.s.sendto(raw, dst)

    def recv(self):
        """A datagram, its source, its ECN field and the kernel's arrival time
        (CLOCK_REALTIME, as time.time()), so a busy tester still times the device right."""
        raw, anc, _, src = self.s.recvmsg(65536, socket.CMSG_SPACE(4) + socket.CMSG_SPACE(16))
        tos, when = 0, None
        for level, kind, value in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                when = sec + nsec * 1e-9
            elif value:
                tos = value[0] if len(value) < 4 else struct.unpack("i", value[:4])[0]
        return raw, (src[0], src[1]), tos & 3, when or time.time()


class Tester:
    """The tester's endpoint: on each plane a listening socket and a pool of source ports."""

    def __init__(self, planes, listen_port, pool=8):
        self.planes = list(planes)
        self.listen = [Sock(a, listen_port) for a in self.planes]
        self.pool = [[Sock(a, 0) for _ in range(pool)] for a in self.planes]
        self.listen_port = listen_port
        self.log = []
        self._pending = []

    def close(self):
        for s in self.listen + [s for p in self.pool for s in p]:
            s.s.close()

    def all_socks(self):
        return self.listen + [s for p in self.pool for s in p]

    def sock(self, plane=0, source=None):
        """The listening socket (source None) or source port `source` of a plane's pool."""
        return self.listen[plane] if source is None else \
            self.pool[plane][source % len(self.pool[plane])]

    def send(self, pkt, dst, plane=0, source=None, tos=0):
        raw = pkt if isinstance(pkt, (bytes, bytearray)) else bytes(pkt)
        self.sock(plane, source).send(raw, dst, tos)

    def _drain(self, timeout):
        socks = self.all_socks()
        ready, _, _ = select.select([s.s for s in socks], [], [], max(0.0, timeout))
        batch = []
        for s in socks:
            if s.s in ready:
                while True:
                    try:
                        raw, src, tos, when = s.recv()
                    except BlockingIOError:
                        break
                    batch.append(Rx(raw, src, (s.addr, s.port), tos, when))
        batch.sort(key=lambda rx: rx.when)  # arrival order across the sockets
        self.log.extend(batch)
        self._pending.extend(batch)

    def recv(self, timeout=1.0):
        """The next datagram, or None after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self._drain(left)
        return self._pending.pop(0)

    def quiet(self, seconds):
        """Everything that arrives in the next `seconds`."""
        out = []
        deadline = time.monotonic() + seconds
        while True:
            rx = self.recv(max(0.0, deadline - time.monotonic()))
            if rx is None:
                return out
            out.append(rx)


class PathRx:
    """What the tester, as receiver, keeps for one of the device's paths (SPEC 6.1)."""

    def __init__(self, isn):
        self.generation = 0
        self.reset(isn)

    def reset(self, isn):
        self.cum = isn
        self.bits = set()
        self.received = 0
        self.ce = 0
        self.reply_to = None
        self.last_ts = 0

    def record(self, psn):
        d = c.serial_diff(psn, self.cum)
        if d < 0 or psn in self.bits:
            return "duplicate"
        if d > 256:
            return "out of window"
        self.bits.add(psn)
        while self.cum in self.bits:
            self.bits.discard(self.cum)
            self.cum = (self.cum + 1) & 0xFFFFFFFF
        return None

    def sack(self):
        return [c.serial_diff(p, self.cum) - 1 for p in self.bits
                if 0 < c.serial_diff(p, self.cum) <= 256]


class Conn:
    """One connection between the tester and the device under test."""

    def __init__(self, tester, device_addr, device_port, paths=4, mss=4096, isn=None):
        self.t = tester
        self.dev = (device_addr, device_port)
        self.my_id = int.from_bytes(os.urandom(4), "big") | 1
        self.my_token = int.from_bytes(os.urandom(8), "big") | 1
        self.isn = int.from_bytes(os.urandom(4), "big") if isn is None else isn
        self.paths = paths
        self.mss = mss
        self.peer_id = self.peer_token = self.peer_isn = None
        self.peer_mss = self.peer_paths = None
        self.peer_addrs = []
        self.peer_listen = None
        self.next_psn = [self.isn] * paths
        self.gen = [0] * paths
        self.rx = {}
        self.acks = []
        self.nacks = []
        self.data = []
        self.setup = []
        self.rx_filter = None   # DATA from the device: return False to drop it unseen
        self.ack_policy = "every"  # or "none": the case acknowledges by hand
        self.memory = bytearray(65536)
        self.mem_addr = 0x7E5700000000
        self.mem_rkey = 0x5EED
        self.responses = {}
        self.acked_at = {}  # (path, psn) -> when the tester first acknowledged it
        self.gap_shown = {}  # (path, psn) -> when an ACK first showed it missing
        self.close_acked_at = None  # when the tester first answered a CLOSE

    # ---- set-up -------------------------------------------------------------------------
    def my_setup(self, ptype, **kw):
        args = dict(src_id=self.my_id, src_token=self.my_token, isn=self.isn,
                    listen_port=self.t.listen_port, addrs=self.t.planes, mss=self.mss,
                    paths=self.paths)
        if ptype == c.ACCEPT:
            args.update(conn_id=self.peer_id, token=self.peer_token)
        args.update(kw)
        return c.setup(ptype, **args)

    def learn(self, pkt):
        s = pkt[c.Setup]
        self.peer_id, self.peer_token, self.peer_isn = s.src_id, s.src_token, s.isn
        self.peer_mss, self.peer_paths = s.mss, s.paths
        self.peer_addrs = [c.unmapped(a) for a in s.addrs]
        self.peer_listen = s.listen_port

    def bare(self, ptype):
        return c.common(ptype, self.peer_id, self.peer_token)

    @property
    def agreed_mss(self):
        return min(self.mss, self.peer_mss or self.mss)

    # ---- sending --------------------------------------------------------------------------
    def dst(self, plane=0):
        if self.peer_addrs and plane < len(self.peer_addrs):
            return (self.peer_addrs[plane], self.peer_listen or self.dev[1])
        return self.dev

    def take_psn(self, path):
        psn = self.next_psn[path]
        self.next_psn[path] = (psn + 1) & 0xFFFFFFFF
        return psn

    def send_data(self, path, stream, msn, opcode, payload=b"", psn=None, source=None,
                  plane=None, tos=ECT0, **kw):
        """A DATA packet on one of the tester's paths; returns its PSN."""
        if psn is None:
            psn = self.take_psn(path)
        kw.setdefault("timestamp", time.monotonic_ns())
        pkt = c.data(self.peer_id, self.peer_token, path, self.gen[path], psn, stream, msn,
                     opcode, payload, **kw)
        if plane is None:
            plane = path % max(1, min(len(self.t.planes), len(self.peer_addrs) or 1))
        self.t.send(pkt, self.dst(plane), plane, path if source is None else source, tos)
        return psn

    def ack_path(self, path, psn=None, source_plane=0, **kw):
        st = self.rx[path]
        args = dict(cumulative=st.cum, sack=st.sack(), echo_ts=st.last_ts,
                    received=st.received, ce=st.ce)
        args.update(kw)
        pkt = c.ack(self.peer_id, self.peer_token, path, st.generation, **args)
        now = time.time()
        self.t.send(pkt, st.reply_to, source_plane)
        if args["sack"]:
            top = max(args["sack"])
            for i in range(top + 1):
                psn = (args["cumulative"] + i) & 0xFFFFFFFF
                if i == 0 or (i - 1) not in args["sack"]:
                    self.gap_shown.setdefault((path, psn), now)

    # ---- receiving ---------------------------------------------------------------------------
    def on_data(self, rx):
        pkt = rx.pkt
        d = pkt[c.Data]
        path, gen = pkt.path, pkt.generation
        st = self.rx.get(path)
        if st is None:
            st = self.rx[path] = PathRx(self.peer_isn)
            st.generation = gen
        elif gen != st.generation and 0 < (gen - st.generation) % 256 < 128:
            st.generation = gen
            st.reset(self.peer_isn)
        elif gen != st.generation:
            return
        if self.rx_filter is not None and not self.rx_filter(rx):
            return
        st.reply_to = rx.src
        st.last_ts = d.timestamp
        verdict = st.record(d.psn)
        if verdict is None:
            self.acked_at.setdefault((path, d.psn), time.time())
            st.received += 1
            if rx.tos == CE:
                st.ce += 1
        rx.verdict = verdict
        self.data.append(rx)
        if verdict is None:
            self.respond(rx)
        if self.ack_policy == "every" and verdict != "out of window":
            plane = self.t.planes.index(rx.local[0]) if rx.local[0] in self.t.planes else 0
            self.ack_path(path, source_plane=plane)

    def respond(self, rx):
        """Answers the device's READ and atomic requests aimed at the tester's memory."""
        d = rx.pkt[c.Data]
        key = (d.stream, d.msn)
        if d.opcode == c.WRITE or d.opcode == c.WRITE_IMM:
            at = d.raddr + d.offset - self.mem_addr
            payload = c.data_payload(rx.pkt)
            if 0 <= at and at + len(payload) <= len(self.memory):
                self.memory[at:at + len(payload)] = payload
        elif d.opcode in (c.READ_REQUEST, c.FETCH_ADD, c.COMPARE_SWAP):
            self.responses[key] = rx

    def pump(self, seconds, until=None):
        """Processes what arrives for `seconds` or until `until()` holds; returns it all."""
        out = []
        deadline = time.monotonic() + seconds
        while True:
            if until is not None and until():
                return out
            rx = self.t.recv(max(0.0, deadline - time.monotonic()))
            if rx is None:
                return out
            out.append(rx)
            self.dispatch(rx)

    def dispatch(self, rx):
        if rx.error is not None:
            return
        kind = rx.type
        if kind == c.DATA:
            if rx.pkt.conn_id == self.my_id:
                self.on_data(rx)
        elif kind == c.ACK:
            self.acks.append(rx)
        elif kind == c.NACK:
            self.nacks.append(rx)
        else:
            self.setup.append(rx)
            if kind == c.ACCEPT and self.peer_id is None:
                self.learn(rx.pkt)
            if kind == c.CLOSE and rx.pkt.conn_id == self.my_id:
                self.t.send(self.bare(c.CLOSE_ACK), rx.src)
                if self.close_acked_at is None:
                    self.close_acked_at = time.time()

    def wait_ack(self, path, psn, seconds=1.0):
        """The first ACK that acknowledges `psn` on `path`, or None."""
        def acked():
            return any(a.pkt.path == path and a.pkt[c.Ack].acked(psn) for a in self.acks)
        self.pump(seconds, acked)
        for a in self.acks:
            if a.pkt.path == path and a.pkt[c.Ack].acked(psn):
                return a
        return None


def nack_for(conn, rx, code):
    """A NACK refusing the device's DATA packet `rx` (SPEC 3.5)."""
    p, d = rx.pkt, rx.pkt[c.Data]
    return c.common(c.NACK, conn.peer_id, conn.peer_token, 0, p.path, p.generation) / c.Nack(
        psn=d.psn, code=code, stream=d.stream, msn=d.msn, echo_ts=d.timestamp)
