// The BTH opcodes of the RC transport this baseline speaks (IBA table 38), plus the RoCEv2
// congestion notification packet, and what each one carries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mroce::baseline {

enum class Opcode : std::uint8_t {
  kSendFirst = 0x00,
  kSendMiddle = 0x01,
  kSendLast = 0x02,
  kSendLastImm = 0x03,
  kSendOnly = 0x04,
  kSendOnlyImm = 0x05,
  kWriteFirst = 0x06,
  kWriteMiddle = 0x07,
  kWriteLast = 0x08,
  kWriteLastImm = 0x09,
  kWriteOnly = 0x0a,
  kWriteOnlyImm = 0x0b,
  kReadRequest = 0x0c,
  kReadResponseFirst = 0x0d,
  kReadResponseMiddle = 0x0e,
  kReadResponseLast = 0x0f,
  kReadResponseOnly = 0x10,
  kAck = 0x11,
  kAtomicAck = 0x12,
  kCompareSwap = 0x13,
  kFetchAdd = 0x14,
  kCnp = 0x81,
};
const char* to_string(Opcode);

enum class OpKind : std::uint8_t {
  kInvalid,
  kSend,
  kWrite,
  kReadRequest,
  kReadResponse,
  kAck,
  kAtomicAck,
  kAtomic,
  kCnp,
};

// Where a packet sits in its message.
enum class Position : std::uint8_t { kFirst, kMiddle, kLast, kOnly };

// Extended transport headers following the BTH, in wire order.
namespace ext {
inline constexpr std::uint8_t kReth = 0x01;       // 16 bytes
inline constexpr std::uint8_t kAtomicEth = 0x02;  // 28 bytes
inline constexpr std::uint8_t kAeth = 0x04;       // 4 bytes
inline constexpr std::uint8_t kAtomicAck = 0x08;  // 8 bytes
inline constexpr std::uint8_t kImm = 0x10;        // 4 bytes
inline constexpr std::uint8_t kCnpPad = 0x20;     // 16 reserved bytes of a CNP
}  // namespace ext

inline constexpr std::size_t kBthSize = 12;
inline constexpr std::size_t kIcrcSize = 4;
inline constexpr std::size_t kLengthFieldSize = 4;                // headers-only mode only
inline constexpr std::size_t kMaxHeaderSize = kBthSize + 16 + 4;  // RETH + ImmDt (WRITE only imm)

struct OpcodeInfo {
  OpKind kind = OpKind::kInvalid;
  Position position = Position::kOnly;
  std::uint8_t headers = 0;  // ext:: bits
  bool payload = false;
  bool immediate = false;
};

// kind == kInvalid for opcodes this transport does not accept.
OpcodeInfo opcode_info(std::uint8_t opcode);
// BTH plus the extended headers named by `headers`.
std::size_t header_size(std::uint8_t headers);

bool is_request(OpKind k);
// The opcode of a request or READ response packet at `position` of its message.
Opcode send_opcode(Position position, bool immediate);
Opcode write_opcode(Position position, bool immediate);
Opcode read_response_opcode(Position position);
// Position of packet `index` among `count` (count >= 1).
Position position_of(std::uint32_t index, std::uint32_t count);

}  // namespace mroce::baseline
