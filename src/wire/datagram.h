// DATAGRAM packets (type 9): the connectionless, unreliable messages of unreliable-
// datagram queue pairs. docs/SPEC.md section 3.8 is the normative layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mroce::wire {

enum class DatagramOp : std::uint8_t {
  kSend = 1,
  kSendImm = 2,
};

// Bits of the datagram header's flags byte.
namespace datagram_flags {
inline constexpr std::uint8_t kSolicited = 0x01;
inline constexpr std::uint8_t kMask = 0x01;
}  // namespace datagram_flags

struct DatagramHeader {
  std::uint32_t dst_qp = 0;  // the receiver's queue pair (stream number), 1..2^24-1
  std::uint32_t src_qp = 0;  // the sender's, on the endpoint at the datagram's source
  std::uint32_t qkey = 0;
  DatagramOp op = DatagramOp::kSend;
  std::uint8_t flags = 0;
  std::uint16_t payload_length = 0;
  std::uint32_t imm = 0;  // SEND_IMM; 0 in SEND
};
inline constexpr std::size_t kDatagramSize = 20;        // after the common header
inline constexpr std::size_t kDatagramHeaderSize = 36;  // common header included
inline constexpr std::uint32_t kMaxDatagramQp = (1u << 24) - 1;

// The 20 bytes after the common header, and the payload that follows them: strict, as
// decode() (codec.h) is. `rest` starts right after the common header.
enum class DecodeError : std::uint8_t;
DecodeError decode_datagram_body(std::span<const std::uint8_t> rest, DatagramHeader* out,
                                 std::span<const std::uint8_t>* payload);

// Writes the common header (type 9, every other field 0) and the datagram header at the
// start of `out`; the caller copies payload_length bytes after them. Returns the bytes
// written (kDatagramHeaderSize), or 0 when `out` is too small or the header is invalid.
std::size_t encode_datagram(const DatagramHeader& d, std::span<std::uint8_t> out);

}  // namespace mroce::wire
