// Serial-number arithmetic (RFC 1982) for 32-bit sequence numbers that wrap.
#pragma once

#include <cstdint>

namespace mroce {

// Signed distance from a to b: positive when b is after a.
inline std::int32_t seq_diff(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(b - a);
}
inline bool seq_lt(std::uint32_t a, std::uint32_t b) {
  return seq_diff(a, b) > 0;
}
inline bool seq_le(std::uint32_t a, std::uint32_t b) {
  return seq_diff(a, b) >= 0;
}

// 8-bit path generations: `g` is newer than `current` when at most 127 steps ahead.
inline bool generation_newer(std::uint8_t current, std::uint8_t g) {
  const std::uint8_t d = static_cast<std::uint8_t>(g - current);
  return d != 0 && d < 128;
}

}  // namespace mroce
