// Encoding and strict decoding of MetaRoCE packets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wire/packet.h"

namespace mroce::wire {

enum class DecodeError : std::uint8_t {
  kOk = 0,
  kTruncated,  // shorter than its headers
  kBadVersion,
  kBadType,
  kReservedBits,  // a reserved bit or field is not zero
  kBadOpcode,
  kBadLength,  // payload or packet length disagrees with the headers
  kBadAddressCount,
};
const char* to_string(DecodeError);

struct DecodeOptions {
  // False: DATA packets carry no payload bytes (headers-only mode); payload_length is
  // still checked against the message but no bytes may follow the headers.
  bool carry_payload = true;
};

DecodeError decode(std::span<const std::uint8_t> bytes, const DecodeOptions& options, Packet* out);

// Each encoder writes its headers at the start of `out` and returns the bytes written,
// or 0 when `out` is too small. encode_data writes headers only: the caller copies
// payload_length bytes after them when payload is carried.
std::size_t encode_data(const CommonHeader& common, const DataHeader& data,
                        std::span<std::uint8_t> out);
std::size_t encode_ack(const CommonHeader& common, const AckHeader& ack,
                       std::span<std::uint8_t> out);
std::size_t encode_nack(const CommonHeader& common, const NackHeader& nack,
                        std::span<std::uint8_t> out);
std::size_t encode_handshake(const CommonHeader& common, const HandshakeHeader& hs,
                             std::span<std::uint8_t> out);
// CONFIRM, CLOSE and CLOSE_ACK: the common header alone.
std::size_t encode_bare(const CommonHeader& common, std::span<std::uint8_t> out);

// The largest packet this format produces for a given payload size.
inline std::size_t max_packet_size(std::size_t mss) {
  std::size_t data = kCommonSize + kDataBaseSize + 32 + mss;
  std::size_t hs = handshake_size(kMaxPlanes);
  return data > hs ? data : hs;
}

}  // namespace mroce::wire
