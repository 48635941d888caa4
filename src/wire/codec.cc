#include "wire/codec.h"

#include "wire/bytes.h"

namespace mroce::wire {

const char* to_string(PacketType t) {
  switch (t) {
    case PacketType::kData:
      return "DATA";
    case PacketType::kAck:
      return "ACK";
    case PacketType::kNack:
      return "NACK";
    case PacketType::kConnect:
      return "CONNECT";
    case PacketType::kAccept:
      return "ACCEPT";
    case PacketType::kConfirm:
      return "CONFIRM";
    case PacketType::kClose:
      return "CLOSE";
    case PacketType::kCloseAck:
      return "CLOSE_ACK";
    case PacketType::kDatagram:
      return "DATAGRAM";
  }
  return "?";
}

const char* to_string(DataOp op) {
  switch (op) {
    case DataOp::kNop:
      return "NOP";
    case DataOp::kSend:
      return "SEND";
    case DataOp::kSendImm:
      return "SEND_IMM";
    case DataOp::kWrite:
      return "WRITE";
    case DataOp::kWriteImm:
      return "WRITE_IMM";
    case DataOp::kReadRequest:
      return "READ_REQUEST";
    case DataOp::kReadResponse:
      return "READ_RESPONSE";
    case DataOp::kFetchAdd:
      return "FETCH_ADD";
    case DataOp::kCompareSwap:
      return "COMPARE_SWAP";
    case DataOp::kAtomicResponse:
      return "ATOMIC_RESPONSE";
  }
  return "?";
}

const char* to_string(NackCode c) {
  switch (c) {
    case NackCode::kReceiverNotReady:
      return "RECEIVER_NOT_READY";
    case NackCode::kRemoteAccess:
      return "REMOTE_ACCESS";
    case NackCode::kInvalidRequest:
      return "INVALID_REQUEST";
    case NackCode::kRemoteOperation:
      return "REMOTE_OPERATION";
    case NackCode::kNoResources:
      return "NO_RESOURCES";
  }
  return "?";
}

const char* to_string(DecodeError e) {
  switch (e) {
    case DecodeError::kOk:
      return "ok";
    case DecodeError::kTruncated:
      return "truncated";
    case DecodeError::kBadVersion:
      return "bad version";
    case DecodeError::kBadType:
      return "bad type";
    case DecodeError::kReservedBits:
      return "reserved bits set";
    case DecodeError::kBadOpcode:
      return "bad opcode";
    case DecodeError::kBadLength:
      return "bad length";
    case DecodeError::kBadAddressCount:
      return "bad address count";
  }
  return "?";
}

std::size_t extension_size(DataOp op) {
  switch (op) {
    case DataOp::kNop:
      return 0;
    case DataOp::kSend:
      return 4;  // ssn
    case DataOp::kSendImm:
      return 8;  // ssn, imm
    case DataOp::kWrite:
      return 12;  // va, rkey
    case DataOp::kWriteImm:
      return 20;  // va, rkey, ssn, imm
    case DataOp::kReadRequest:
      return 16;  // va, rkey, rate
    case DataOp::kReadResponse:
      return 0;
    case DataOp::kFetchAdd:
      return 20;  // va, rkey, addend
    case DataOp::kCompareSwap:
      return 28;  // va, rkey, compare, swap
    case DataOp::kAtomicResponse:
      return 8;  // original value
  }
  return 0;
}

bool op_has_payload(DataOp op) {
  switch (op) {
    case DataOp::kSend:
    case DataOp::kSendImm:
    case DataOp::kWrite:
    case DataOp::kWriteImm:
    case DataOp::kReadResponse:
      return true;
    default:
      return false;
  }
}

namespace {

void write_common(RawWriter& w, const CommonHeader& c) {
  w.u8(std::uint8_t(kVersion << 4 | std::uint8_t(c.type)));
  w.u8(c.flags);
  w.u8(c.path);
  w.u8(c.generation);
  w.u32(c.dst_conn);
  w.u64(c.token);
}

bool has_remote(DataOp op) {
  switch (op) {
    case DataOp::kWrite:
    case DataOp::kWriteImm:
    case DataOp::kReadRequest:
    case DataOp::kFetchAdd:
    case DataOp::kCompareSwap:
      return true;
    default:
      return false;
  }
}

bool has_ssn(DataOp op) {
  return op == DataOp::kSend || op == DataOp::kSendImm || op == DataOp::kWriteImm;
}
bool has_imm(DataOp op) {
  return op == DataOp::kSendImm || op == DataOp::kWriteImm;
}

// Checks the relations between length fields that every receiver relies on.
bool data_lengths_valid(const DataHeader& d) {
  switch (d.op) {
    case DataOp::kNop:
      return d.payload_length == 0 && d.offset == 0 && d.message_length == 0;
    case DataOp::kReadRequest:
      return d.payload_length == 0 && d.offset == 0;
    case DataOp::kFetchAdd:
    case DataOp::kCompareSwap:
    case DataOp::kAtomicResponse:
      return d.payload_length == 0 && d.offset == 0 && d.message_length == 8;
    default:
      return std::uint64_t{d.offset} + d.payload_length <= d.message_length;
  }
}

}  // namespace

std::size_t encode_data(const CommonHeader& common, const DataHeader& d,
                        std::span<std::uint8_t> out) {
  const std::size_t size = data_header_size(d.op);
  if (out.size() < size) return 0;
  RawWriter w(out.data());
  write_common(w, common);
  w.u32(d.psn);
  w.u32(d.timestamp);
  w.u32(d.stream);
  w.u32(d.msn);
  w.u8(std::uint8_t(d.op));
  w.u8(d.flags);
  w.u16(d.payload_length);
  w.u32(d.offset);
  w.u32(d.message_length);
  if (has_remote(d.op)) {
    w.u64(d.remote_addr);
    w.u32(d.rkey);
  }
  if (has_ssn(d.op)) w.u32(d.ssn);
  if (has_imm(d.op)) w.u32(d.imm);
  switch (d.op) {
    case DataOp::kReadRequest:
      w.u32(d.rate_kbps);
      break;
    case DataOp::kFetchAdd:
    case DataOp::kAtomicResponse:
      w.u64(d.operand);
      break;
    case DataOp::kCompareSwap:
      w.u64(d.operand);
      w.u64(d.swap);
      break;
    default:
      break;
  }
  return size;
}

std::size_t encode_ack(const CommonHeader& common, const AckHeader& a,
                       std::span<std::uint8_t> out) {
  if (out.size() < kCommonSize + kAckSize) return 0;
  RawWriter w(out.data());
  write_common(w, common);
  w.u32(a.cum_psn);
  w.u32(a.echo_timestamp);
  w.u32(a.ack_delay);
  w.u32(a.rx_packets);
  w.u32(a.ce_packets);
  w.u32(a.rate_kbps);
  for (std::uint64_t word : a.sack) w.u64(word);
  return kCommonSize + kAckSize;
}

std::size_t encode_nack(const CommonHeader& common, const NackHeader& n,
                        std::span<std::uint8_t> out) {
  if (out.size() < kCommonSize + kNackSize) return 0;
  RawWriter w(out.data());
  write_common(w, common);
  w.u32(n.psn);
  w.u8(std::uint8_t(n.code));
  w.zeros(3);
  w.u32(n.stream);
  w.u32(n.msn);
  w.u32(n.echo_timestamp);
  return kCommonSize + kNackSize;
}

std::size_t encode_handshake(const CommonHeader& common, const HandshakeHeader& hs,
                             std::span<std::uint8_t> out) {
  if (hs.address_count == 0 || hs.address_count > kMaxPlanes) return 0;
  const std::size_t size = handshake_size(hs.address_count);
  if (out.size() < size) return 0;
  RawWriter w(out.data());
  write_common(w, common);
  w.u32(hs.src_conn);
  w.u64(hs.src_token);
  w.u32(hs.isn);
  w.u16(hs.listen_port);
  w.u16(hs.mss);
  w.u16(hs.max_messages);
  w.u16(hs.max_responses);
  w.u16(hs.paths);
  w.u8(hs.flags);
  w.u8(hs.address_count);
  for (std::size_t i = 0; i < hs.address_count; ++i) w.bytes(hs.addresses[i].data(), 16);
  return size;
}

std::size_t encode_bare(const CommonHeader& common, std::span<std::uint8_t> out) {
  if (out.size() < kCommonSize) return 0;
  RawWriter w(out.data());
  write_common(w, common);
  return kCommonSize;
}

namespace {

DecodeError decode_data(ByteReader& r, const DecodeOptions& options, Packet* out) {
  DataHeader& d = out->data;
  d.psn = r.u32();
  d.timestamp = r.u32();
  d.stream = r.u32();
  d.msn = r.u32();
  const std::uint8_t op = r.u8();
  d.flags = r.u8();
  d.payload_length = r.u16();
  d.offset = r.u32();
  d.message_length = r.u32();
  d.remote_addr = d.operand = d.swap = 0;
  d.rkey = d.ssn = d.imm = d.rate_kbps = 0;
  if (!r.ok()) return DecodeError::kTruncated;
  if (op >= kDataOpCount) return DecodeError::kBadOpcode;
  d.op = DataOp(op);
  if (d.flags & ~data_flags::kMask) return DecodeError::kReservedBits;
  if (has_remote(d.op)) {
    d.remote_addr = r.u64();
    d.rkey = r.u32();
  }
  if (has_ssn(d.op)) d.ssn = r.u32();
  if (has_imm(d.op)) d.imm = r.u32();
  switch (d.op) {
    case DataOp::kReadRequest:
      d.rate_kbps = r.u32();
      break;
    case DataOp::kFetchAdd:
    case DataOp::kAtomicResponse:
      d.operand = r.u64();
      break;
    case DataOp::kCompareSwap:
      d.operand = r.u64();
      d.swap = r.u64();
      break;
    default:
      break;
  }
  if (!r.ok()) return DecodeError::kTruncated;
  if (!data_lengths_valid(d)) return DecodeError::kBadLength;
  const std::size_t expected = options.carry_payload ? d.payload_length : 0;
  if (r.remaining() != expected) return DecodeError::kBadLength;
  out->payload = r.rest();
  return DecodeError::kOk;
}

DecodeError decode_handshake(ByteReader& r, Packet* out) {
  HandshakeHeader& hs = out->handshake;
  hs.src_conn = r.u32();
  hs.src_token = r.u64();
  hs.isn = r.u32();
  hs.listen_port = r.u16();
  hs.mss = r.u16();
  hs.max_messages = r.u16();
  hs.max_responses = r.u16();
  hs.paths = r.u16();
  hs.flags = r.u8();
  hs.address_count = r.u8();
  if (!r.ok()) return DecodeError::kTruncated;
  if (hs.flags & ~handshake_flags::kMask) return DecodeError::kReservedBits;
  if (hs.address_count == 0 || hs.address_count > kMaxPlanes) {
    return DecodeError::kBadAddressCount;
  }
  if (r.remaining() != 16 * std::size_t{hs.address_count}) return DecodeError::kBadLength;
  for (std::size_t i = 0; i < hs.address_count; ++i) r.bytes(hs.addresses[i].data(), 16);
  if (hs.src_conn == 0 || hs.mss == 0 || hs.paths == 0) return DecodeError::kBadLength;
  return DecodeError::kOk;
}

}  // namespace

DecodeError decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, Packet* out) {
  ByteReader r(bytes);
  const std::uint8_t vt = r.u8();
  CommonHeader& c = out->common;
  c.flags = r.u8();
  c.path = r.u8();
  c.generation = r.u8();
  c.dst_conn = r.u32();
  c.token = r.u64();
  if (!r.ok()) return DecodeError::kTruncated;
  if ((vt >> 4) != kVersion) return DecodeError::kBadVersion;
  const std::uint8_t type = vt & 0x0f;
  if (type < std::uint8_t(PacketType::kData) || type > std::uint8_t(PacketType::kDatagram)) {
    return DecodeError::kBadType;
  }
  c.type = PacketType(type);
  out->payload = {};
  if (c.type != PacketType::kData && c.flags != 0) return DecodeError::kReservedBits;
  if (c.flags & ~flags::kMask) return DecodeError::kReservedBits;
  // Set-up packets name no path, and CONNECT no connection of the receiver yet.
  if (c.type >= PacketType::kConnect && (c.path != 0 || c.generation != 0)) {
    return DecodeError::kReservedBits;
  }
  if ((c.type == PacketType::kConnect || c.type == PacketType::kDatagram) &&
      (c.dst_conn != 0 || c.token != 0)) {
    return DecodeError::kReservedBits;
  }

  switch (c.type) {
    case PacketType::kData:
      return decode_data(r, options, out);
    case PacketType::kAck: {
      AckHeader& a = out->ack;
      a.cum_psn = r.u32();
      a.echo_timestamp = r.u32();
      a.ack_delay = r.u32();
      a.rx_packets = r.u32();
      a.ce_packets = r.u32();
      a.rate_kbps = r.u32();
      for (auto& word : a.sack) word = r.u64();
      if (!r.ok()) return DecodeError::kTruncated;
      return r.remaining() == 0 ? DecodeError::kOk : DecodeError::kBadLength;
    }
    case PacketType::kNack: {
      NackHeader& n = out->nack;
      n.psn = r.u32();
      const std::uint8_t code = r.u8();
      const std::uint8_t r0 = r.u8();
      const std::uint16_t r1 = r.u16();
      n.stream = r.u32();
      n.msn = r.u32();
      n.echo_timestamp = r.u32();
      if (!r.ok()) return DecodeError::kTruncated;
      if (r0 != 0 || r1 != 0) return DecodeError::kReservedBits;
      if (code < std::uint8_t(NackCode::kReceiverNotReady) ||
          code > std::uint8_t(NackCode::kNoResources)) {
        return DecodeError::kBadOpcode;
      }
      n.code = NackCode(code);
      return r.remaining() == 0 ? DecodeError::kOk : DecodeError::kBadLength;
    }
    case PacketType::kConnect:
    case PacketType::kAccept:
      return decode_handshake(r, out);
    case PacketType::kConfirm:
    case PacketType::kClose:
    case PacketType::kCloseAck:
      return r.remaining() == 0 ? DecodeError::kOk : DecodeError::kBadLength;
    case PacketType::kDatagram:
      return decode_datagram_body(r.rest(), &out->datagram, &out->payload);
  }
  return DecodeError::kBadType;
}

}  // namespace mroce::wire
