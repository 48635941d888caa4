// 24-bit packet sequence numbers and their circular arithmetic (IBA 9.7.1).
#pragma once

#include <cstdint>

namespace mroce::baseline {

inline constexpr std::uint32_t kPsnMask = 0xffffff;
// Requests more than half the PSN space apart cannot be ordered.
inline constexpr std::uint32_t kPsnWindow = 1u << 23;

constexpr std::uint32_t psn_add(std::uint32_t psn, std::uint32_t n) {
  return (psn + n) & kPsnMask;
}

// Signed distance a - b, in [-2^23, 2^23).
constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(((a - b) & kPsnMask) << 8) >> 8;
}

constexpr bool psn_lt(std::uint32_t a, std::uint32_t b) {
  return psn_diff(a, b) < 0;
}
constexpr bool psn_le(std::uint32_t a, std::uint32_t b) {
  return psn_diff(a, b) <= 0;
}

}  // namespace mroce::baseline
