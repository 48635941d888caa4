// Simulated time. The simulator counts picoseconds so that serialization at any
// common link rate is exact; engines count nanoseconds (mroce::Time). Conversions
// are exact one way (ns -> ps) and floor the other.
#pragma once

#include <cstdint>

#include "core/types.h"

namespace mroce::sim {

using SimTime = std::uint64_t;  // picoseconds
inline constexpr SimTime kSimNever = ~SimTime{0};
inline constexpr SimTime kPsPerNs = 1000;
inline constexpr SimTime kNs = kPsPerNs;
inline constexpr SimTime kUs = 1000 * kNs;
inline constexpr SimTime kMs = 1000 * kUs;
inline constexpr SimTime kSec = 1000 * kMs;

inline constexpr SimTime from_ns(Time ns) {
  return ns >= kNever / kPsPerNs ? kSimNever : ns * kPsPerNs;
}
inline constexpr Time to_ns(SimTime ps) {
  return ps == kSimNever ? kNever : ps / kPsPerNs;
}

// Time to put `bytes` on a link of `rate_bps`, rounded up to a whole picosecond.
inline constexpr SimTime serialization_time(std::uint64_t bytes, std::uint64_t rate_bps) {
  return (bytes * 8'000'000'000'000ull + rate_bps - 1) / rate_bps;
}

}  // namespace mroce::sim
