// The connection manager's messages on its TCP side channel (docs/VERBS.md, "Connection
// manager"). Every message is an 8-byte header (magic "MRCM", version 1, type, body
// length, big-endian) and a body; decoding is strict: a wrong magic, version or type, a
// body of the wrong size or private data past the type's limit is refused.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace mroce::rdmacm {

enum class MsgType : std::uint8_t {
  kReq = 1,   // active -> passive: connect to this listener
  kRep = 2,   // passive -> active: accepted, here is my queue pair
  kRtu = 3,   // active -> passive: my queue pair is ready to send
  kRej = 4,   // either way: refused (reason, private data)
  kDreq = 5,  // either way: disconnect
  kDrep = 6,  // answer to kDreq
};

inline constexpr std::size_t kHeaderSize = 8;
inline constexpr std::size_t kMaxBody = 512;
// Private data limits of the IB CM messages for the TCP port space, as librdmacm has them.
inline constexpr std::size_t kMaxReqPrivate = 56;
inline constexpr std::size_t kMaxRepPrivate = 196;
inline constexpr std::size_t kMaxRejPrivate = 148;

// What REQ and REP carry: the sender's queue pair and its connection parameters.
struct Endpoint {
  std::array<std::uint8_t, 16> gid{};
  std::uint32_t qpn = 0;  // 24 bits
  std::uint32_t psn = 0;  // 24 bits
  std::uint32_t qkey = 0;
  std::uint16_t port_space = 0;
  std::uint8_t responder_resources = 0;
  std::uint8_t initiator_depth = 0;
  std::uint8_t flow_control = 0;
  std::uint8_t retry_count = 0;
  std::uint8_t rnr_retry_count = 0;
  std::uint8_t srq = 0;
};

struct Message {
  MsgType type = MsgType::kReq;
  Endpoint ep;                             // kReq, kRep
  std::uint16_t reason = 0;                // kRej
  std::vector<std::uint8_t> private_data;  // kReq, kRep, kRej
};

// The private data limit of a message type (0 for those without private data).
std::size_t private_limit(MsgType type);

// Appends the encoded message to *out. False (nothing appended) if the private data is
// over the type's limit.
bool encode(const Message& m, std::vector<std::uint8_t>* out);

enum class DecodeResult { kOk, kNeedMore, kMalformed };

// Decodes one message from the front of `in`; on kOk sets *used to its size.
DecodeResult decode(std::span<const std::uint8_t> in, Message* out, std::size_t* used);

}  // namespace mroce::rdmacm
