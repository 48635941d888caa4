// RoCEv2 packets (the UDP payload: BTH, extended headers, payload, pad, ICRC) as values,
// with a strict decoder and a two-step encoder that lets the caller place the payload
// straight into the datagram.
//
// Headers-only mode (carry_payload = false): a packet that would carry payload carries,
// in the payload's place, a 4-byte big-endian payload length instead; the BTH pad count
// still describes the payload that is not there. wire_length is what the packet would
// occupy with its payload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "baseline/aeth.h"
#include "baseline/opcode.h"

namespace mroce::baseline {

struct Bth {
  Opcode opcode = Opcode::kSendOnly;
  bool solicited = false;
  bool migreq = false;
  std::uint8_t pad = 0;  // decoded only; the encoder derives it from the payload length
  std::uint16_t pkey = 0xffff;
  std::uint32_t dest_qp = 0;  // 24 bits
  bool ack_req = false;
  std::uint32_t psn = 0;  // 24 bits
};

struct Reth {
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t length = 0;
};

struct AtomicEth {
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint64_t swap_add = 0;
  std::uint64_t compare = 0;
};

// The largest DMA length a RETH may name (IBA: 2^31 bytes).
inline constexpr std::uint32_t kMaxMessage = 1u << 31;

struct Packet {
  Bth bth;
  Reth reth;
  AtomicEth atomic;
  Aeth aeth;
  std::uint64_t atomic_orig = 0;  // AtomicAckETH
  std::uint32_t imm = 0;          // ImmDt as Verbs holds it: its bytes in memory are the wire's
  std::uint32_t payload_length = 0;
  std::span<const std::uint8_t> payload;  // empty in headers-only mode
  std::uint32_t wire_length = 0;          // set by decode
};

// Parses and validates one datagram. False for anything malformed: short, unknown opcode,
// non-zero transport version or reserved bits, bad AETH syndrome, length not matching the
// opcode's headers, pad and mode.
bool decode(std::span<const std::uint8_t> bytes, bool carry_payload, Packet* out);

// Writes the BTH and extended headers of `p` (pad count from p.payload_length) and returns
// the offset where the payload goes, or 0 when `out` is too short.
std::size_t write_headers(const Packet& p, std::span<std::uint8_t> out);

// Completes the packet after its headers (and payload, when carried): writes the pad, the
// headers-only length field and a zero ICRC. Returns the datagram length (0 when `out` is
// too short) and the wire length in *wire_length.
std::size_t finish(const Packet& p, bool carry_payload, std::span<std::uint8_t> out,
                   std::uint32_t* wire_length);

// Bytes a datagram needs at most with this MTU.
std::size_t max_datagram(std::uint32_t mtu);

}  // namespace mroce::baseline
