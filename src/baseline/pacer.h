// Spaces packets at a rate: each packet sent pushes the earliest time of the next one by
// its serialization time. Kept in picoseconds so that rounding never drifts the rate.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/types.h"

namespace mroce::baseline {

class Pacer {
 public:
  // Earliest time the next packet may leave (nanoseconds, rounded up).
  Time next() const { return Time((next_ps_ + 999) / 1000); }
  bool ready(Time now) const { return next() <= now; }

  void on_sent(Time now, std::uint64_t bytes, std::uint64_t rate_bps) {
    const std::uint64_t now_ps = now * 1000;
    // Idle time is not banked: a rate limiter allows no burst after a pause.
    const std::uint64_t start = std::max(next_ps_, now_ps);
    next_ps_ = start + (rate_bps ? bytes * 8'000'000'000'000ull / rate_bps : 0);
  }

 private:
  std::uint64_t next_ps_ = 0;
};

}  // namespace mroce::baseline
