"""One case's fixture: a fresh tester endpoint, a QP on the target, and the connection
between them, opened from either side."""

import time

from . import codec as c
from .peer import Conn, Tester
from .target import Target


class Fail(Exception):
    pass


class Skip(Exception):
    pass


class Env:
    """What the run knows: the target's control address, the device's UDP addressing, the
    tester's planes. Each session takes the next tester port, so each case starts on a
    connection of its own."""

    def __init__(self, control, port_base=4793, tester_planes=None, first_slot=1, paths=4,
                 setup_wait=2.0, counters_cmd=None):
        host, port = control.rsplit(":", 1)
        self.target = Target(host.strip("[]"), int(port))
        self.port_base = port_base
        gids = self.target.info()["gids"]
        self.device_planes = [c.unmapped(g) for g in gids]
        self.tester_planes = tester_planes or self.device_planes
        self.slot = first_slot
        self.paths = paths
        self.setup_wait = setup_wait
        self.counters_cmd = counters_cmd

    def counters_or_none(self):
        """counters(), or None when the device exposes none (remembered)."""
        if getattr(self, "_no_counters", False):
            return None
        try:
            return self.counters()
        except Skip:
            self._no_counters = True
            return None

    def counters(self):
        """The device's counters as {name: number}, or raises Skip saying why there are none:
        from `counters_cmd` (a shell command printing JSON: a flat object, an object with
        "counters", or an array of such, the first taken), else the target's sysfs view."""
        if self.counters_cmd:
            import json
            import subprocess
            out = subprocess.run(self.counters_cmd, shell=True, capture_output=True, text=True,
                                 timeout=10)
            if out.returncode != 0:
                raise Skip("the counters command failed: %s" % (out.stderr.strip() or
                                                                 out.returncode))
            doc = json.loads(out.stdout)
            if isinstance(doc, list):
                doc = doc[0] if doc else {}
            doc = doc.get("counters", doc)
        else:
            info = self.target.counters()
            if not info.get("available"):
                raise Skip("the target reports no counters: %s" % info.get("reason"))
            doc = info["counters"]
        return {k: int(v) for k, v in doc.items() if str(v).lstrip("-").isdigit()}

    def next_slot(self):
        slot = self.slot
        self.slot += 1
        if slot > 254:
            raise Skip("out of tester ports (255 slots)")
        return slot

    def close(self):
        self.target.close()


class Session:
    """Tester stream `stream` at tester slot k has QPN (k + 1) << 16 | stream; the device's
    QPN names its UDP port and stream the same way (docs/SPEC.md, Appendix A)."""

    def __init__(self, env, paths=None, stream=1, mss=4096, pool=8, planes=None, isn=None):
        self.env = env
        self.target = env.target
        self.slot = env.next_slot()
        self.tester = Tester(planes or env.tester_planes, env.port_base + self.slot, pool)
        self.stream = stream
        for name in self.target.info()["regions"]:
            self.target.reset_mem(name)
        self.target.poll(4096, 0)  # what earlier sessions left behind
        self.qpn = self.target.create_qp()
        self.dev_stream = self.qpn & 0xFFFF
        self.dev_port = env.port_base + (self.qpn >> 16) - 1
        self.conn = Conn(self.tester, env.device_planes[0], self.dev_port,
                         paths or env.paths, mss, isn)
        self.msn = 0
        self.ssn = 0
        self.closed = False

    @property
    def tester_qpn(self):
        return (self.slot + 1) << 16 | self.stream

    def bind(self, **kw):
        """Connects the target's QP to the tester's QPN."""
        self.target.connect(self.qpn, self.tester.planes[0], self.tester_qpn, **kw)

    def wait(self, kind, seconds=None, src_id=None):
        """The next set-up packet of `kind` from the device (others are kept)."""
        deadline = time.monotonic() + (seconds or self.env.setup_wait)
        while True:
            for rx in self.conn.setup:
                if rx.type == kind and not getattr(rx, "taken", False):
                    rx.taken = True
                    return rx
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.conn.pump(left, lambda: any(r.type == kind and not getattr(r, "taken", False)
                                             for r in self.conn.setup))

    def open_by_device(self, accept_pair=True, **bind):
        """The device connects (its QP bound first); the tester accepts. Returns the
        CONNECT received."""
        self.bind(**bind)
        rx = self.wait(c.CONNECT)
        if rx is None:
            raise Fail("no CONNECT from the device within %.1f s of binding its QP"
                       % self.env.setup_wait)
        self.conn.learn(rx.pkt)
        self.send_accept(copies=2 if accept_pair else 1)
        confirm = self.wait(c.CONFIRM)
        if confirm is None:
            raise Fail("no CONFIRM after the ACCEPT")
        return rx

    def send_accept(self, copies=2, **kw):
        for i in range(copies):
            self.tester.send(self.conn.my_setup(c.ACCEPT, **kw), self.conn.dst(0), 0, i)

    def send_connect(self, copies=2, **kw):
        for i in range(copies):
            self.tester.send(self.conn.my_setup(c.CONNECT, **kw), self.conn.dev, 0, i)

    def open_by_tester(self):
        """The tester connects first; then the device binds its QP. Returns the first
        ACCEPT received."""
        self.send_connect()
        rx = self.wait(c.ACCEPT)
        if rx is None:
            self.bind()
            rx = self.wait(c.ACCEPT)
        else:
            self.bind()
        if rx is None:
            raise Fail("no ACCEPT to the tester's CONNECT")
        self.tester.send(self.conn.bare(c.CONFIRM), self.conn.dst(0), 0, 2)
        self.tester.send(self.conn.bare(c.CONFIRM), self.conn.dst(0), 0, 3)
        return rx

    def open(self):
        return self.open_by_device()

    # ---- work on the device's memory -------------------------------------------------------
    def write(self, region, offset, payload, path=0, msn=None, **kw):
        """The tester WRITEs one segment into a target region; returns the PSN."""
        r = self.target.region(region)
        if msn is None:
            msn = self.msn
            self.msn += 1
        return self.conn.send_data(path, self.dev_stream, msn, c.WRITE, payload,
                                   raddr=r["addr"] + offset, rkey=r["rkey"], **kw)

    def next_msn(self):
        msn = self.msn
        self.msn += 1
        return msn

    def next_ssn(self):
        ssn = self.ssn
        self.ssn += 1
        return ssn

    def close(self):
        if self.closed:
            return
        self.closed = True
        try:
            self.target.destroy_qp(self.qpn)
            self.conn.pump(0.05)
        finally:
            self.tester.close()


def env_has(env, need):
    if need == "planes2":
        return len(env.device_planes) >= 2 and len(env.tester_planes) >= 2
    if need == "root":
        import os
        return os.geteuid() == 0
    return False


Env.has = env_has
