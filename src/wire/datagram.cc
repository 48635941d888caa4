#include "wire/datagram.h"

#include "wire/bytes.h"
#include "wire/codec.h"

namespace mroce::wire {

namespace {

bool valid_qp(std::uint32_t qp) {
  return qp != 0 && qp <= kMaxDatagramQp;
}

}  // namespace

std::size_t encode_datagram(const DatagramHeader& d, std::span<std::uint8_t> out) {
  if (out.size() < kDatagramHeaderSize || !valid_qp(d.dst_qp) || !valid_qp(d.src_qp) ||
      (d.op != DatagramOp::kSend && d.op != DatagramOp::kSendImm) ||
      (d.flags & ~datagram_flags::kMask) || (d.op == DatagramOp::kSend && d.imm != 0)) {
    return 0;
  }
  RawWriter w(out.data());
  w.u8(std::uint8_t(kVersion << 4 | std::uint8_t(PacketType::kDatagram)));
  w.zeros(15);  // flags, path, generation, connection id and token: none
  w.u32(d.dst_qp);
  w.u32(d.src_qp);
  w.u32(d.qkey);
  w.u8(std::uint8_t(d.op));
  w.u8(d.flags);
  w.u16(d.payload_length);
  w.u32(d.imm);
  return kDatagramHeaderSize;
}

DecodeError decode_datagram_body(std::span<const std::uint8_t> rest, DatagramHeader* out,
                                 std::span<const std::uint8_t>* payload) {
  ByteReader r(rest);
  DatagramHeader& d = *out;
  d.dst_qp = r.u32();
  d.src_qp = r.u32();
  d.qkey = r.u32();
  const std::uint8_t op = r.u8();
  d.flags = r.u8();
  d.payload_length = r.u16();
  d.imm = r.u32();
  if (!r.ok()) return DecodeError::kTruncated;
  if (op != std::uint8_t(DatagramOp::kSend) && op != std::uint8_t(DatagramOp::kSendImm)) {
    return DecodeError::kBadOpcode;
  }
  d.op = DatagramOp(op);
  if (d.flags & ~datagram_flags::kMask) return DecodeError::kReservedBits;
  if (d.op == DatagramOp::kSend && d.imm != 0) return DecodeError::kReservedBits;
  if (!valid_qp(d.dst_qp) || !valid_qp(d.src_qp)) return DecodeError::kReservedBits;
  if (r.remaining() != d.payload_length) return DecodeError::kBadLength;
  *payload = r.rest();
  return DecodeError::kOk;
}

}  // namespace mroce::wire
