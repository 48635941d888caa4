"""The MetaRoCE wire format of docs/SPEC.md section 3, as scapy layers.

Bit numbering: the SPEC's diagrams are MSB-first; "flag bit 0" is the least significant
bit of its byte (0x01). Every multi-byte field is big-endian."""

from scapy.fields import (BitField, ByteEnumField, ByteField, ConditionalField, FieldLenField,
                          FieldListField, FlagsField, IntField, LongField, ShortField,
                          X3BytesField, XIntField, XLongField, IP6Field)
from scapy.packet import Packet, Raw, bind_layers
import socket
import struct

VERSION = 1

DATA, ACK, NACK, CONNECT, ACCEPT, CONFIRM, CLOSE, CLOSE_ACK = range(1, 9)
TYPES = {DATA: "DATA", ACK: "ACK", NACK: "NACK", CONNECT: "CONNECT", ACCEPT: "ACCEPT",
         CONFIRM: "CONFIRM", CLOSE: "CLOSE", CLOSE_ACK: "CLOSE_ACK"}
SETUP_TYPES = (CONNECT, ACCEPT, CONFIRM, CLOSE, CLOSE_ACK)
DATAGRAM = 9  # SPEC 3.8: connectionless, between datagram queue pairs
DG_SEND, DG_SEND_IMM = 1, 2
DATAGRAM_LEN = 20  # the DATAGRAM header after the common header

# Common-header flags (DATA only), bit 0 = 0x01.
ACK_REQUEST, BACKLOG = 0x01, 0x02
FLAGS_RESERVED = 0xFC
# DATA flags.
SOLICITED, RETRANSMIT = 0x01, 0x02
DATA_FLAGS_RESERVED = 0xFC
# Handshake flags.
NO_PAYLOAD = 0x01
HANDSHAKE_RESERVED = 0xFE

NOP, SEND, SEND_IMM, WRITE, WRITE_IMM, READ_REQUEST, READ_RESPONSE, FETCH_ADD, \
    COMPARE_SWAP, ATOMIC_RESPONSE = range(10)
OPCODES = {NOP: "NOP", SEND: "SEND", SEND_IMM: "SEND_IMM", WRITE: "WRITE",
           WRITE_IMM: "WRITE_IMM", READ_REQUEST: "READ_REQUEST", READ_RESPONSE: "READ_RESPONSE",
           FETCH_ADD: "FETCH_ADD", COMPARE_SWAP: "COMPARE_SWAP",
           ATOMIC_RESPONSE: "ATOMIC_RESPONSE"}
WITH_PAYLOAD = (SEND, SEND_IMM, WRITE, WRITE_IMM, READ_RESPONSE)
# Extension fields by opcode, in wire order (name, bytes).
EXTENSIONS = {
    NOP: (),
    SEND: (("ssn", 4),),
    SEND_IMM: (("ssn", 4), ("imm", 4)),
    WRITE: (("raddr", 8), ("rkey", 4)),
    WRITE_IMM: (("raddr", 8), ("rkey", 4), ("ssn", 4), ("imm", 4)),
    READ_REQUEST: (("raddr", 8), ("rkey", 4), ("rate", 4)),
    READ_RESPONSE: (),
    FETCH_ADD: (("raddr", 8), ("rkey", 4), ("add", 8)),
    COMPARE_SWAP: (("raddr", 8), ("rkey", 4), ("compare", 8), ("swap", 8)),
    ATOMIC_RESPONSE: (("orig", 8),),
}

RECEIVER_NOT_READY, REMOTE_ACCESS, INVALID_REQUEST, REMOTE_OPERATION, NO_RESOURCES = range(1, 6)
NACK_CODES = {RECEIVER_NOT_READY: "RECEIVER_NOT_READY", REMOTE_ACCESS: "REMOTE_ACCESS",
              INVALID_REQUEST: "INVALID_REQUEST", REMOTE_OPERATION: "REMOTE_OPERATION",
              NO_RESOURCES: "NO_RESOURCES"}

COMMON_LEN, DATA_BASE_LEN, ACK_LEN, NACK_LEN = 16, 28, 72, 36
SETUP_FIXED_LEN = 28  # CONNECT/ACCEPT body before the addresses


class Common(Packet):
    """SPEC 3.1: the 16-byte common header of every packet."""
    name = "MetaRoCE"
    fields_desc = [
        BitField("version", VERSION, 4),
        BitField("type", DATA, 4),
        FlagsField("flags", 0, 8, ["ACK_REQUEST", "BACKLOG", "r2", "r3", "r4", "r5", "r6", "r7"]),
        ByteField("path", 0),
        ByteField("generation", 0),
        XIntField("conn_id", 0),
        XLongField("token", 0),
    ]


def _has(opcode_names):
    return lambda p: p.opcode in opcode_names


class Data(Packet):
    """SPEC 3.2: DATA base header and the extension of its opcode."""
    name = "MetaRoCE DATA"
    fields_desc = [
        IntField("psn", 0),
        IntField("timestamp", 0),
        IntField("stream", 0),
        IntField("msn", 0),
        ByteEnumField("opcode", NOP, OPCODES),
        FlagsField("dflags", 0, 8, ["SOLICITED", "RETRANSMIT", "r2", "r3", "r4", "r5", "r6", "r7"]),
        ShortField("payload_length", 0),
        IntField("offset", 0),
        IntField("message_length", 0),
        ConditionalField(IntField("ssn", 0), _has((SEND, SEND_IMM))),
        ConditionalField(IntField("imm", 0), _has((SEND_IMM,))),
        ConditionalField(LongField("raddr", 0),
                         _has((WRITE, WRITE_IMM, READ_REQUEST, FETCH_ADD, COMPARE_SWAP))),
        ConditionalField(IntField("rkey", 0),
                         _has((WRITE, WRITE_IMM, READ_REQUEST, FETCH_ADD, COMPARE_SWAP))),
        ConditionalField(IntField("wi_ssn", 0), _has((WRITE_IMM,))),
        ConditionalField(IntField("wi_imm", 0), _has((WRITE_IMM,))),
        ConditionalField(IntField("rate", 0), _has((READ_REQUEST,))),
        ConditionalField(LongField("add", 0), _has((FETCH_ADD,))),
        ConditionalField(LongField("compare", 0), _has((COMPARE_SWAP,))),
        ConditionalField(LongField("swap", 0), _has((COMPARE_SWAP,))),
        ConditionalField(LongField("orig", 0), _has((ATOMIC_RESPONSE,))),
    ]


class Ack(Packet):
    """SPEC 3.4."""
    name = "MetaRoCE ACK"
    fields_desc = [
        IntField("cumulative", 0),
        IntField("echo_ts", 0),
        IntField("ack_delay", 0),
        IntField("received", 0),
        IntField("ce", 0),
        IntField("rate_hint", 0),
        LongField("sack0", 0), LongField("sack1", 0), LongField("sack2", 0), LongField("sack3", 0),
    ]

    def sack_bits(self):
        """Offsets i (0..255) whose bit is set: PSN cumulative + 1 + i was received."""
        words = (self.sack0, self.sack1, self.sack2, self.sack3)
        return [w * 64 + b for w in range(4) for b in range(64) if words[w] >> b & 1]

    def acked(self, psn):
        d = serial_diff(psn, self.cumulative)
        if d < 0:
            return True
        if d == 0 or d > 256:
            return False
        return (d - 1) in self.sack_bits()


def sack_words(offsets):
    words = [0, 0, 0, 0]
    for i in offsets:
        words[i // 64] |= 1 << (i % 64)
    return dict(sack0=words[0], sack1=words[1], sack2=words[2], sack3=words[3])


class Nack(Packet):
    """SPEC 3.5."""
    name = "MetaRoCE NACK"
    fields_desc = [
        IntField("psn", 0),
        ByteEnumField("code", 0, NACK_CODES),
        X3BytesField("reserved", 0),
        IntField("stream", 0),
        IntField("msn", 0),
        IntField("echo_ts", 0),
    ]


class Setup(Packet):
    """SPEC 3.6: CONNECT and ACCEPT."""
    name = "MetaRoCE CONNECT/ACCEPT"
    fields_desc = [
        XIntField("src_id", 0),
        XLongField("src_token", 0),
        IntField("isn", 0),
        ShortField("listen_port", 0),
        ShortField("mss", 4096),
        ShortField("max_messages", 256),
        ShortField("max_responses", 64),
        ShortField("paths", 16),
        ByteField("hflags", 0),
        FieldLenField("addr_count", None, fmt="B", count_of="addrs"),
        FieldListField("addrs", [], IP6Field("", "::"), count_from=lambda p: p.addr_count),
    ]


bind_layers(Common, Data, type=DATA)
bind_layers(Common, Ack, type=ACK)
bind_layers(Common, Nack, type=NACK)
bind_layers(Common, Setup, type=CONNECT)
bind_layers(Common, Setup, type=ACCEPT)


def serial_diff(a, b):
    """a - b in 32-bit serial arithmetic (RFC 1982), as a signed number."""
    d = (a - b) & 0xFFFFFFFF
    return d - (1 << 32) if d & 0x80000000 else d


def mapped(addr):
    """A plane address as carried in CONNECT/ACCEPT: IPv6, or IPv4-mapped."""
    return addr if ":" in addr else "::ffff:" + addr


def unmapped(addr):
    return addr[7:] if addr.startswith("::ffff:") and "." in addr else addr


class Decoded:
    """A received datagram judged against SPEC 3: either `pkt` or `error` is set."""

    def __init__(self, raw):
        self.raw = raw
        self.pkt = None
        self.error = validate(raw)
        if self.error is None:
            self.pkt = View(raw)

    @property
    def type(self):
        return self.raw[0] & 0x0F if self.raw else None


def validate(raw, mss=None, headers_only=False):
    """The reason a datagram fails SPEC 3, or None."""
    if len(raw) < COMMON_LEN:
        return "shorter than the common header"
    version, ptype, flags = raw[0] >> 4, raw[0] & 0x0F, raw[1]
    if version != VERSION:
        return "version %d" % version
    if ptype not in TYPES:
        return "unknown type %d" % ptype
    if ptype != DATA and flags:
        return "flags 0x%02x on a %s" % (flags, TYPES[ptype])
    if flags & FLAGS_RESERVED:
        return "reserved flag bits 0x%02x" % (flags & FLAGS_RESERVED)
    body = raw[COMMON_LEN:]
    if ptype == DATA:
        if len(body) < DATA_BASE_LEN:
            return "DATA shorter than its base header"
        opcode, dflags = body[16], body[17]
        if opcode not in OPCODES:
            return "unknown opcode %d" % opcode
        if dflags & DATA_FLAGS_RESERVED:
            return "reserved data flags 0x%02x" % dflags
        plen = int.from_bytes(body[18:20], "big")
        offset = int.from_bytes(body[20:24], "big")
        mlen = int.from_bytes(body[24:28], "big")
        ext = sum(n for _, n in EXTENSIONS[opcode])
        want = DATA_BASE_LEN + ext + (0 if headers_only else plen)
        if len(body) != want:
            return "DATA of %d bytes, expected %d" % (len(body) + COMMON_LEN, want + COMMON_LEN)
        if opcode in WITH_PAYLOAD:
            if offset + plen > mlen:
                return "offset + payload beyond the message"
            if mss and (offset % mss or plen != min(mss, mlen - offset)):
                return "segment not cut at mss %d" % mss
        else:
            if plen:
                return "payload on a %s" % OPCODES[opcode]
            if opcode in (NOP,) and (offset or mlen):
                return "NOP with offset or length"
            if opcode == READ_REQUEST and offset:
                return "READ_REQUEST with offset"
            if opcode in (FETCH_ADD, COMPARE_SWAP, ATOMIC_RESPONSE) and (offset or mlen != 8):
                return "atomic with offset or length not 8"
        return None
    if ptype == ACK:
        return None if len(raw) == ACK_LEN else "ACK of %d bytes" % len(raw)
    if ptype == NACK:
        if len(raw) != NACK_LEN:
            return "NACK of %d bytes" % len(raw)
        return "NACK reserved bits set" if any(body[5:8]) else None
    if ptype in (CONNECT, ACCEPT):
        if len(body) < SETUP_FIXED_LEN:
            return "%s too short" % TYPES[ptype]
        count = body[27]
        if not 1 <= count <= 8:
            return "address count %d" % count
        if len(body) != SETUP_FIXED_LEN + 16 * count:
            return "%s does not end after its last address" % TYPES[ptype]
        if body[26] & HANDSHAKE_RESERVED:
            return "reserved handshake flags"
        if int.from_bytes(body[0:4], "big") == 0:
            return "source connection id 0"
        if int.from_bytes(body[18:20], "big") == 0:
            return "MSS 0"
        if int.from_bytes(body[24:26], "big") == 0 or int.from_bytes(body[24:26], "big") > 256:
            return "paths not 1..256"
        return None
    return None if len(raw) == COMMON_LEN else "%s of %d bytes" % (TYPES[ptype], len(raw))


def common(ptype, conn_id=0, token=0, flags=0, path=0, generation=0):
    return Common(type=ptype, flags=flags, path=path, generation=generation, conn_id=conn_id,
                  token=token)


def data(conn_id, token, path, generation, psn, stream, msn, opcode, payload=b"", offset=0,
         message_length=None, flags=0, dflags=0, timestamp=0, **ext):
    """A DATA packet. `ext` holds the extension fields: ssn, imm, raddr, rkey, rate, add,
    compare, swap, orig (WRITE_IMM's ssn and imm are given as ssn and imm too)."""
    if opcode == WRITE_IMM:
        ext = dict(ext)
        if "ssn" in ext:
            ext["wi_ssn"] = ext.pop("ssn")
        if "imm" in ext:
            ext["wi_imm"] = ext.pop("imm")
    if message_length is None:
        message_length = 8 if opcode in (FETCH_ADD, COMPARE_SWAP, ATOMIC_RESPONSE) else \
            (offset + len(payload) if opcode in WITH_PAYLOAD else 0)
    pkt = common(DATA, conn_id, token, flags, path, generation) / Data(
        psn=psn & 0xFFFFFFFF, timestamp=timestamp & 0xFFFFFFFF, stream=stream, msn=msn,
        opcode=opcode, dflags=dflags, payload_length=len(payload), offset=offset,
        message_length=message_length, **ext)
    if payload:
        pkt = pkt / Raw(payload)
    return pkt


def ack(conn_id, token, path, generation, cumulative, sack=(), echo_ts=0, received=0, ce=0,
        rate_hint=0, ack_delay=0):
    return common(ACK, conn_id, token, 0, path, generation) / Ack(
        cumulative=cumulative & 0xFFFFFFFF, echo_ts=echo_ts, ack_delay=ack_delay,
        received=received & 0xFFFFFFFF, ce=ce & 0xFFFFFFFF, rate_hint=rate_hint,
        **sack_words(sack))


def setup(ptype, src_id, src_token, isn, listen_port, addrs, conn_id=0, token=0, mss=4096,
          paths=16, max_messages=256, max_responses=64, hflags=0):
    return common(ptype, conn_id, token) / Setup(
        src_id=src_id, src_token=src_token, isn=isn, listen_port=listen_port, mss=mss,
        max_messages=max_messages, max_responses=max_responses, paths=paths, hflags=hflags,
        addrs=[mapped(a) for a in addrs])


def data_payload(pkt):
    """The payload bytes of a decoded DATA packet."""
    return bytes(pkt[Raw].load) if Raw in pkt else b""


# ---- fast decoding ---------------------------------------------------------------------
# scapy dissects a packet in hundreds of microseconds, too slow for a tester that must
# acknowledge a burst as it lands; received packets are read with struct into a View that
# answers the same questions (pkt.path, pkt[Data].psn, pkt[Ack].acked(psn), Data in pkt).

class _Layer:
    def __init__(self, name, fields):
        self._name = name
        self.__dict__.update(fields)

    def summary(self):
        return "%s %s" % (self._name, " ".join("%s=%s" % (k, v) for k, v in self.__dict__.items()
                                                if not k.startswith("_")))


class _AckLayer(_Layer):
    def sack_bits(self):
        words = (self.sack0, self.sack1, self.sack2, self.sack3)
        return [w * 64 + b for w in range(4) for b in range(64) if words[w] >> b & 1]

    def acked(self, psn):
        d = serial_diff(psn, self.cumulative)
        if d < 0:
            return True
        if d == 0 or d > 256:
            return False
        words = (self.sack0, self.sack1, self.sack2, self.sack3)
        return bool(words[(d - 1) // 64] >> ((d - 1) % 64) & 1)


class View:
    """A received packet, already validated, read with struct."""

    def __init__(self, raw):
        self.raw = raw
        self.version, self.type = raw[0] >> 4, raw[0] & 0x0F
        self.flags, self.path, self.generation = raw[1], raw[2], raw[3]
        self.conn_id, self.token = struct.unpack_from("!IQ", raw, 4)
        self.layers = {}
        if self.type == DATA:
            f = dict(zip(("psn", "timestamp", "stream", "msn", "opcode", "dflags",
                          "payload_length", "offset", "message_length"),
                         struct.unpack_from("!IIIIBBHII", raw, 16)))
            at = 16 + DATA_BASE_LEN
            for name, size in EXTENSIONS[f["opcode"]]:
                if f["opcode"] == WRITE_IMM and name in ("ssn", "imm"):
                    name = "wi_" + name
                f[name] = int.from_bytes(raw[at:at + size], "big")
                at += size
            self.layers[Data] = _Layer("DATA", f)
            if raw[at:]:
                self.layers[Raw] = _Layer("Raw", {"load": raw[at:]})
        elif self.type == ACK:
            self.layers[Ack] = _AckLayer("ACK", dict(zip(
                ("cumulative", "echo_ts", "ack_delay", "received", "ce", "rate_hint", "sack0",
                 "sack1", "sack2", "sack3"), struct.unpack_from("!6I4Q", raw, 16))))
        elif self.type == NACK:
            psn, code, r0, r1, r2, stream, msn, echo = struct.unpack_from("!IBBBBIII", raw, 16)
            self.layers[Nack] = _Layer("NACK", dict(psn=psn, code=code,
                                                    reserved=r0 << 16 | r1 << 8 | r2,
                                                    stream=stream, msn=msn, echo_ts=echo))
        elif self.type in (CONNECT, ACCEPT):
            vals = struct.unpack_from("!IQIHHHHHBB", raw, 16)
            f = dict(zip(("src_id", "src_token", "isn", "listen_port", "mss", "max_messages",
                          "max_responses", "paths", "hflags", "addr_count"), vals))
            f["addrs"] = [socket.inet_ntop(socket.AF_INET6, raw[44 + 16 * i:60 + 16 * i])
                          for i in range(f["addr_count"])]
            self.layers[Setup] = _Layer("SETUP", f)

    def __getitem__(self, layer):
        return self.layers[layer]

    def __contains__(self, layer):
        return layer in self.layers

    def summary(self):
        return "%s path %d gen %d %s" % (TYPES[self.type], self.path, self.generation,
                                         " / ".join(v._name for v in self.layers.values()))


def datagram(dst_qp, src_qp, qkey, opcode=DG_SEND, payload=b"", imm=0, dgflags=0,
             length=None, **common_fields):
    """SPEC 3.8: a DATAGRAM's bytes (common header fields default to 0, as required)."""
    head = bytes(common(DATAGRAM, **common_fields))
    body = struct.pack("!IIIBBHI", dst_qp, src_qp, qkey, opcode, dgflags,
                       len(payload) if length is None else length, imm)
    return head + body + payload

