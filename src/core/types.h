// Vocabulary shared by every transport engine and every driver: time, addresses,
// packet metadata, work requests and completions. Numeric values of the Verbs-like
// enums match rdma-core's so a Verbs layer can pass them through unchanged.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

namespace mroce {

// Nanoseconds on the driver's monotonic clock (simulated or real).
using Time = std::uint64_t;
inline constexpr Time kNever = ~Time{0};
inline constexpr Time kMicrosecond = 1000;
inline constexpr Time kMillisecond = 1000 * kMicrosecond;
inline constexpr Time kSecond = 1000 * kMillisecond;

// An IPv6 address, or an IPv4 address in its IPv4-mapped form (::ffff:a.b.c.d).
// Engines treat it as an opaque value; only drivers interpret it.
struct Address {
  std::array<std::uint8_t, 16> bytes{};

  static Address ipv4(std::uint32_t host_order) {
    Address a;
    a.bytes[10] = 0xff;
    a.bytes[11] = 0xff;
    a.bytes[12] = static_cast<std::uint8_t>(host_order >> 24);
    a.bytes[13] = static_cast<std::uint8_t>(host_order >> 16);
    a.bytes[14] = static_cast<std::uint8_t>(host_order >> 8);
    a.bytes[15] = static_cast<std::uint8_t>(host_order);
    return a;
  }
  bool is_ipv4() const {
    static constexpr std::uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(bytes.data(), kPrefix, 12) == 0;
  }
  std::uint32_t ipv4_value() const {
    return std::uint32_t{bytes[12]} << 24 | std::uint32_t{bytes[13]} << 16 |
           std::uint32_t{bytes[14]} << 8 | bytes[15];
  }
  bool is_zero() const { return *this == Address{}; }
  std::string to_string() const;
  friend bool operator==(const Address&, const Address&) = default;
};

// Where a peer listens: an address and the fixed UDP destination port.
struct Endpoint {
  Address addr;
  std::uint16_t port = 0;
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

// The two-bit ECN field of the IP header (RFC 3168).
enum class Ecn : std::uint8_t { kNotEct = 0, kEct1 = 1, kEct0 = 2, kCe = 3 };

// What the driver knows about a datagram it received.
struct RxMeta {
  Address src;
  Address dst;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint8_t plane = 0;  // index of the local interface it arrived on
  Ecn ecn = Ecn::kNotEct;
};

enum class PacketClass : std::uint8_t { kData, kAck, kControl };

// What the driver must do with a datagram the engine produced.
struct TxMeta {
  Address src;
  Address dst;
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
  std::uint8_t plane = 0;  // local interface to send it from
  Ecn ecn = Ecn::kNotEct;
  std::uint32_t length = 0;       // bytes written into the caller's buffer
  std::uint32_t wire_length = 0;  // UDP payload size on the wire, counting payload not carried
  PacketClass cls = PacketClass::kData;
  // Zero-copy (EngineConfig::payload_by_reference): the datagram is the `length` bytes
  // in the caller's buffer followed by `payload_length` bytes of registered memory at
  // `payload`, which the engine did not copy. The driver must hand both to the kernel
  // before the memory can change: sendmsg copies them before it returns, and the
  // application may reuse or deregister the memory only after the work completes,
  // which takes an acknowledgement of this very datagram. Null and 0 otherwise.
  const std::uint8_t* payload = nullptr;
  std::uint32_t payload_length = 0;
};

// Stream (queue pair) number, local to one engine. 24 bits are used, as for a QPN.
using StreamId = std::uint32_t;
inline constexpr StreamId kNoStream = 0;
// Local connection handle (slot and generation); 0 is never a valid handle.
using ConnId = std::uint32_t;
// A shared receive queue of one engine; 0 names none (the stream's own queue).
using SrqId = std::uint32_t;
inline constexpr SrqId kNoSrq = 0;

// Return codes of the control API.
enum class Errc : std::uint8_t {
  kOk = 0,
  kInvalidArgument,
  kNoResources,   // a queue or table is full
  kNotFound,      // unknown stream, key or connection
  kInvalidState,  // e.g. posting to a stream in error, connecting twice
  kNotSupported,
};
const char* to_string(Errc);

// Memory access rights (values of enum ibv_access_flags).
namespace access {
inline constexpr std::uint32_t kLocalWrite = 1;
inline constexpr std::uint32_t kRemoteWrite = 2;
inline constexpr std::uint32_t kRemoteRead = 4;
inline constexpr std::uint32_t kRemoteAtomic = 8;
inline constexpr std::uint32_t kAll = 0xf;
}  // namespace access

// Work request flags (values of enum ibv_send_flags).
namespace send_flags {
inline constexpr std::uint32_t kFence = 1;
inline constexpr std::uint32_t kSignaled = 2;
inline constexpr std::uint32_t kSolicited = 4;
inline constexpr std::uint32_t kInline = 8;
}  // namespace send_flags

// Values of enum ibv_wr_opcode.
enum class WrOpcode : std::uint8_t {
  kRdmaWrite = 0,
  kRdmaWriteWithImm = 1,
  kSend = 2,
  kSendWithImm = 3,
  kRdmaRead = 4,
  kAtomicCmpSwp = 5,
  kAtomicFetchAdd = 6,
};

// Values of enum ibv_wc_status (the subset a transport produces).
enum class WcStatus : std::uint8_t {
  kSuccess = 0,
  kLocLenErr = 1,
  kLocQpOpErr = 2,
  kLocProtErr = 4,
  kWrFlushErr = 5,
  kRemInvReqErr = 9,
  kRemAccessErr = 10,
  kRemOpErr = 11,
  kRetryExcErr = 12,
  kRnrRetryExcErr = 13,
  kGeneralErr = 21,
};
const char* to_string(WcStatus);

// Values of enum ibv_wc_opcode.
enum class WcOpcode : std::uint8_t {
  kSend = 0,
  kRdmaWrite = 1,
  kRdmaRead = 2,
  kCompSwap = 3,
  kFetchAdd = 4,
  kRecv = 128,
  kRecvRdmaWithImm = 129,
};

// The completion opcode of a work request's own completion.
inline WcOpcode completion_opcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
    case WrOpcode::kRdmaWriteWithImm:
      return WcOpcode::kRdmaWrite;
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
      return WcOpcode::kSend;
    case WrOpcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpSwp:
      return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAdd:
      return WcOpcode::kFetchAdd;
  }
  return WcOpcode::kSend;
}

inline constexpr int kMaxSge = 6;  // UCX asks 5 (RC) and 6 (UD) send SGEs

// A scatter/gather element: local memory named by a registered region's lkey.
struct Sge {
  std::uint64_t addr = 0;
  std::uint32_t length = 0;
  std::uint32_t lkey = 0;
};

struct SendWr {
  std::uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  std::uint32_t flags = send_flags::kSignaled;
  std::uint8_t num_sge = 0;
  Sge sg[kMaxSge];
  std::uint64_t remote_addr = 0;  // WRITE, READ, atomics
  std::uint32_t rkey = 0;
  std::uint32_t imm = 0;          // *_WITH_IMM, in network order as Verbs carries it
  std::uint64_t compare_add = 0;  // atomic compare (CAS) or addend (FAA)
  std::uint64_t swap = 0;         // atomic swap value (CAS)
};

struct RecvWr {
  std::uint64_t wr_id = 0;
  std::uint8_t num_sge = 0;
  Sge sg[kMaxSge];
};

struct Completion {
  std::uint64_t wr_id = 0;
  StreamId stream = kNoStream;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  bool is_recv = false;
  bool has_imm = false;
  std::uint32_t byte_len = 0;
  std::uint32_t imm = 0;
  // Receives of datagram queue pairs: the sender's endpoint (address and listening port)
  // and queue pair; port 0 otherwise.
  Endpoint src;
  StreamId src_stream = kNoStream;
};

struct MrKeys {
  std::uint32_t lkey = 0;
  std::uint32_t rkey = 0;
};

}  // namespace mroce

template <>
struct std::hash<mroce::Address> {
  std::size_t operator()(const mroce::Address& a) const noexcept {
    std::uint64_t h = 1469598103934665603ull;
    for (auto b : a.bytes) h = (h ^ b) * 1099511628211ull;
    return h;
  }
};
