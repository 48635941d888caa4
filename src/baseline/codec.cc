#include "baseline/codec.h"

#include <algorithm>
#include <cstring>

#include "baseline/endian.h"

namespace mroce::baseline {

namespace {

constexpr std::uint8_t kTver = 0;

std::uint8_t pad_for(std::uint32_t payload_length) {
  return std::uint8_t(-payload_length & 3);
}

bool valid_syndrome(std::uint8_t s) {
  if (s & 0x80) return false;
  switch (static_cast<AckType>((s >> 5) & 3)) {
    case AckType::kAck:
    case AckType::kRnrNak:
      return true;
    case AckType::kNak:
      return (s & 0x1f) < kNakCodeCount;
    case AckType::kReserved:
      return false;
  }
  return false;
}

}  // namespace

bool decode(std::span<const std::uint8_t> bytes, bool carry_payload, Packet* out) {
  if (bytes.size() < kBthSize + kIcrcSize) return false;
  const std::uint8_t* b = bytes.data();
  const OpcodeInfo info = opcode_info(b[0]);
  if (info.kind == OpKind::kInvalid) return false;
  if ((b[1] & 0x0f) != kTver || (b[8] & 0x7f) != 0) return false;

  Packet p;
  p.bth.opcode = static_cast<Opcode>(b[0]);
  p.bth.solicited = b[1] & 0x80;
  p.bth.migreq = b[1] & 0x40;
  p.bth.pad = (b[1] >> 4) & 3;
  p.bth.pkey = load16(b + 2);
  p.bth.dest_qp = load24(b + 5);  // b[4] is reserved and masked by the ICRC: ignored
  p.bth.ack_req = b[8] & 0x80;
  p.bth.psn = load24(b + 9);

  const std::size_t hdr = header_size(info.headers);
  if (bytes.size() < hdr + kIcrcSize) return false;
  std::size_t at = kBthSize;
  if (info.headers & ext::kReth) {
    p.reth = {load64(b + at), load32(b + at + 8), load32(b + at + 12)};
    if (p.reth.length > kMaxMessage) return false;
    at += 16;
  }
  if (info.headers & ext::kAtomicEth) {
    p.atomic = {load64(b + at), load32(b + at + 8), load64(b + at + 12), load64(b + at + 20)};
    at += 28;
  }
  if (info.headers & ext::kAeth) {
    p.aeth = {b[at], load24(b + at + 1)};
    if (!valid_syndrome(p.aeth.syndrome)) return false;
    at += 4;
  }
  if (info.headers & ext::kAtomicAck) {
    p.atomic_orig = load64(b + at);
    at += 8;
  }
  if (info.headers & ext::kImm) {
    std::memcpy(&p.imm, b + at, 4);
    at += 4;
  }
  if (info.headers & ext::kCnpPad) {
    for (std::size_t i = 0; i < 16; ++i) {
      if (b[at + i] != 0) return false;
    }
    at += 16;
  }

  const std::size_t body = bytes.size() - hdr - kIcrcSize;
  if (!info.payload) {
    if (body != 0 || p.bth.pad != 0) return false;
  } else if (carry_payload) {
    if (body % 4 != 0 || p.bth.pad > body) return false;
    p.payload_length = std::uint32_t(body - p.bth.pad);
    if (p.payload_length == 0 && p.bth.pad != 0) return false;
    p.payload = bytes.subspan(hdr, p.payload_length);
  } else {
    if (body != kLengthFieldSize) return false;
    p.payload_length = load32(b + hdr);
    if (p.payload_length > 0xffff || p.bth.pad != pad_for(p.payload_length)) return false;
  }
  p.wire_length = std::uint32_t(hdr + p.payload_length + p.bth.pad + kIcrcSize);
  *out = p;
  return true;
}

std::size_t write_headers(const Packet& p, std::span<std::uint8_t> out) {
  const OpcodeInfo info = opcode_info(static_cast<std::uint8_t>(p.bth.opcode));
  const std::size_t hdr = header_size(info.headers);
  if (info.kind == OpKind::kInvalid || out.size() < hdr) return 0;
  std::uint8_t* b = out.data();
  const std::uint8_t pad = info.payload ? pad_for(p.payload_length) : 0;
  b[0] = static_cast<std::uint8_t>(p.bth.opcode);
  b[1] = std::uint8_t((p.bth.solicited ? 0x80 : 0) | (p.bth.migreq ? 0x40 : 0) | pad << 4 | kTver);
  store16(b + 2, p.bth.pkey);
  b[4] = 0;
  store24(b + 5, p.bth.dest_qp);
  b[8] = p.bth.ack_req ? 0x80 : 0;
  store24(b + 9, p.bth.psn);
  std::size_t at = kBthSize;
  if (info.headers & ext::kReth) {
    store64(b + at, p.reth.va);
    store32(b + at + 8, p.reth.rkey);
    store32(b + at + 12, p.reth.length);
    at += 16;
  }
  if (info.headers & ext::kAtomicEth) {
    store64(b + at, p.atomic.va);
    store32(b + at + 8, p.atomic.rkey);
    store64(b + at + 12, p.atomic.swap_add);
    store64(b + at + 20, p.atomic.compare);
    at += 28;
  }
  if (info.headers & ext::kAeth) {
    b[at] = p.aeth.syndrome;
    store24(b + at + 1, p.aeth.msn);
    at += 4;
  }
  if (info.headers & ext::kAtomicAck) {
    store64(b + at, p.atomic_orig);
    at += 8;
  }
  if (info.headers & ext::kImm) {
    std::memcpy(b + at, &p.imm, 4);
    at += 4;
  }
  if (info.headers & ext::kCnpPad) {
    std::memset(b + at, 0, 16);
    at += 16;
  }
  return at;
}

std::size_t finish(const Packet& p, bool carry_payload, std::span<std::uint8_t> out,
                   std::uint32_t* wire_length) {
  const OpcodeInfo info = opcode_info(static_cast<std::uint8_t>(p.bth.opcode));
  const std::size_t hdr = header_size(info.headers);
  const std::uint32_t payload = info.payload ? p.payload_length : 0;
  const std::uint8_t pad = pad_for(payload);
  const std::size_t body = carry_payload ? payload + pad : (info.payload ? kLengthFieldSize : 0);
  const std::size_t length = hdr + body + kIcrcSize;
  if (out.size() < length) return 0;
  std::uint8_t* b = out.data();
  if (carry_payload) {
    std::memset(b + hdr + payload, 0, pad);
  } else if (info.payload) {
    store32(b + hdr, payload);
  }
  std::memset(b + hdr + body, 0, kIcrcSize);
  *wire_length = std::uint32_t(hdr + payload + pad + kIcrcSize);
  return length;
}

std::size_t max_datagram(std::uint32_t mtu) {
  const std::size_t atomic = header_size(ext::kAtomicEth) + kIcrcSize;
  return std::max(atomic, kMaxHeaderSize + mtu + 3 + kLengthFieldSize + kIcrcSize);
}

}  // namespace mroce::baseline
