// MetaRoCE packet headers as values. docs/SPEC.md section 3 is the normative layout;
// this file and codec.cc are its one implementation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/datagram.h"

namespace mroce::wire {

inline constexpr std::uint8_t kVersion = 1;
inline constexpr std::size_t kMaxPlanes = 8;
inline constexpr std::size_t kSackBits = 256;

// An IPv6 address or an IPv4-mapped one, as carried in set-up packets.
using AddressBytes = std::array<std::uint8_t, 16>;

enum class PacketType : std::uint8_t {
  kData = 1,
  kAck = 2,
  kNack = 3,
  kConnect = 4,
  kAccept = 5,
  kConfirm = 6,
  kClose = 7,
  kCloseAck = 8,
  kDatagram = 9,  // connectionless: wire/datagram.h
};
const char* to_string(PacketType);

// Bits of the common header's flags byte.
namespace flags {
inline constexpr std::uint8_t kAckRequest = 0x01;  // DATA: acknowledge at once
inline constexpr std::uint8_t kBacklog = 0x02;     // DATA: sender has more queued for us
inline constexpr std::uint8_t kMask = 0x03;
}  // namespace flags

enum class DataOp : std::uint8_t {
  kNop = 0,  // fills a sequence number; carries nothing
  kSend = 1,
  kSendImm = 2,
  kWrite = 3,
  kWriteImm = 4,
  kReadRequest = 5,
  kReadResponse = 6,
  kFetchAdd = 7,
  kCompareSwap = 8,
  kAtomicResponse = 9,
};
inline constexpr std::uint8_t kDataOpCount = 10;
const char* to_string(DataOp);

// Bits of the data header's flags byte.
namespace data_flags {
inline constexpr std::uint8_t kSolicited = 0x01;
inline constexpr std::uint8_t kRetransmit = 0x02;  // informational
inline constexpr std::uint8_t kMask = 0x03;
}  // namespace data_flags

enum class NackCode : std::uint8_t {
  kReceiverNotReady = 1,  // no receive posted: retry after the RNR timer
  kRemoteAccess = 2,      // bad key, range or rights: fatal for the stream
  kInvalidRequest = 3,    // e.g. longer than the receive buffer: fatal
  kRemoteOperation = 4,   // responder could not execute: fatal
  kNoResources = 5,       // message table full: retry after the RNR timer
};
const char* to_string(NackCode);

struct CommonHeader {
  PacketType type = PacketType::kData;
  std::uint8_t flags = 0;
  std::uint8_t path = 0;
  std::uint8_t generation = 0;
  std::uint32_t dst_conn = 0;
  std::uint64_t token = 0;
};
inline constexpr std::size_t kCommonSize = 16;

struct DataHeader {
  std::uint32_t psn = 0;
  std::uint32_t timestamp = 0;  // sender clock, ns mod 2^32, echoed by the ACK
  std::uint32_t stream = 0;     // destination stream
  std::uint32_t msn = 0;        // message sequence number within the stream
  DataOp op = DataOp::kNop;
  std::uint8_t flags = 0;
  std::uint16_t payload_length = 0;
  std::uint32_t offset = 0;  // of this payload within the message
  std::uint32_t message_length = 0;
  // Extensions, present according to op (see extension_size()).
  std::uint64_t remote_addr = 0;  // WRITE*, READ request, atomics
  std::uint32_t rkey = 0;
  std::uint32_t ssn = 0;        // SEND*, WRITE_IMM: index of the receive it consumes
  std::uint32_t imm = 0;        // *_IMM
  std::uint64_t operand = 0;    // FETCH_ADD addend, CMP_SWAP compare, ATOMIC_RESPONSE value
  std::uint64_t swap = 0;       // CMP_SWAP
  std::uint32_t rate_kbps = 0;  // READ_REQUEST: the requester's share for the response
};
inline constexpr std::size_t kDataBaseSize = 28;

struct AckHeader {
  std::uint32_t cum_psn = 0;  // next expected: every earlier PSN was received
  std::uint32_t echo_timestamp = 0;
  std::uint32_t ack_delay = 0;   // ns between that arrival and this ACK
  std::uint32_t rx_packets = 0;  // packets accepted on this path generation, mod 2^32
  std::uint32_t ce_packets = 0;  // of which CE-marked, mod 2^32
  std::uint32_t rate_kbps = 0;   // receiver's fair share for this sender; 0: no hint
  // Bit i (word i/64, bit i%64) set: PSN cum_psn + 1 + i was received.
  std::array<std::uint64_t, 4> sack{};

  bool sacked(std::uint32_t i) const { return (sack[i >> 6] >> (i & 63)) & 1; }
  void set_sacked(std::uint32_t i) { sack[i >> 6] |= std::uint64_t{1} << (i & 63); }
};
inline constexpr std::size_t kAckSize = 24 + 32;

struct NackHeader {
  std::uint32_t psn = 0;
  NackCode code = NackCode::kReceiverNotReady;
  std::uint32_t stream = 0;  // the refused packet's destination stream and message
  std::uint32_t msn = 0;
  std::uint32_t echo_timestamp = 0;
};
inline constexpr std::size_t kNackSize = 20;

namespace handshake_flags {
inline constexpr std::uint8_t kNoPayload = 0x01;  // headers-only mode (simulator)
inline constexpr std::uint8_t kMask = 0x01;
}  // namespace handshake_flags

struct HandshakeHeader {
  std::uint32_t src_conn = 0;
  std::uint64_t src_token = 0;
  std::uint32_t isn = 0;  // first PSN of every path generation the sender opens
  std::uint16_t listen_port = 0;
  std::uint16_t mss = 0;
  std::uint16_t max_messages = 0;
  std::uint16_t max_responses = 0;
  std::uint16_t paths = 0;
  std::uint8_t flags = 0;
  std::uint8_t address_count = 0;
  std::array<AddressBytes, kMaxPlanes> addresses{};
};
inline constexpr std::size_t kHandshakeBaseSize = 28;

// A decoded packet. Only the header matching common.type is meaningful.
struct Packet {
  CommonHeader common;
  DataHeader data;
  AckHeader ack;
  NackHeader nack;
  HandshakeHeader handshake;
  DatagramHeader datagram;
  std::span<const std::uint8_t> payload;  // DATA or DATAGRAM payload bytes, when carried
};

// Bytes of the op-specific extension that follow the data base header.
std::size_t extension_size(DataOp op);
// Whether payload bytes follow the headers for this op.
bool op_has_payload(DataOp op);
// Bytes from the start of the UDP payload to the first payload byte.
inline std::size_t data_header_size(DataOp op) {
  return kCommonSize + kDataBaseSize + extension_size(op);
}
inline std::size_t handshake_size(std::size_t address_count) {
  return kCommonSize + kHandshakeBaseSize + 16 * address_count;
}

}  // namespace mroce::wire
