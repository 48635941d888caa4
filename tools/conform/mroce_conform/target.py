"""Client of mroce-target's control protocol (JSON lines over TCP, docs/COMPLIANCE.md)."""

import json
import socket


class TargetError(Exception):
    pass


class Target:
    def __init__(self, host, port, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.file = self.sock.makefile("rw", encoding="ascii", newline="\n")
        self._info = None

    def close(self):
        self.file.close()
        self.sock.close()

    def raw(self, line):
        """Sends one line as is; returns the decoded reply."""
        self.file.write(line + "\n")
        self.file.flush()
        reply = self.file.readline()
        if not reply:
            raise TargetError("the target closed the control connection")
        return json.loads(reply)

    def call(self, op, **args):
        reply = self.raw(json.dumps(dict(op=op, **args)))
        if not reply.get("ok"):
            raise TargetError("%s: %s" % (op, reply.get("error")))
        return reply

    def info(self):
        if self._info is None:
            self._info = self.call("info")
        return self._info

    def region(self, name):
        return self.info()["regions"][name]

    def create_qp(self, depth=256):
        return self.call("create_qp", depth=depth)["qpn"]

    def connect(self, qpn, gid, remote_qpn, psn=0, rnr_retry=None):
        extra = {} if rnr_retry is None else {"rnr_retry": rnr_retry}
        self.call("connect", qpn=qpn, gid=gid, remote_qpn=remote_qpn, psn=psn, **extra)

    def destroy_qp(self, qpn):
        self.call("destroy_qp", qpn=qpn)

    def query_qp(self, qpn):
        return self.call("query_qp", qpn=qpn)["state"]

    def post_recv(self, qpn, length, wr_id=0, region="local", offset=0):
        self.call("post_recv", qpn=qpn, length=length, wr_id=wr_id, region=region, offset=offset)

    def post_send(self, qpn, opcode, length, **kw):
        self.call("post_send", qpn=qpn, opcode=opcode, length=length, **kw)

    def poll(self, count=1, timeout_ms=1000):
        return self.call("poll", count=count, timeout_ms=timeout_ms)["wc"]

    def read_mem(self, region, offset, length):
        return bytes.fromhex(self.call("read_mem", region=region, offset=offset,
                                       length=length)["hex"])

    def write_mem(self, region, offset, data):
        self.call("write_mem", region=region, offset=offset, hex=bytes(data).hex())

    def reset_mem(self, region):
        self.call("reset_mem", region=region)

    def counters(self):
        return self.call("counters")


def pattern(seed, offset, length):
    """The bytes mroce-target fills a region with: byte i = (i * 7 + seed) % 251."""
    return bytes(((i * 7 + seed) % 251) for i in range(offset, offset + length))
