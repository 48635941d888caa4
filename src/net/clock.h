// The one clock of the UDP stack: CLOCK_MONOTONIC in nanoseconds, the engines' Time.
#pragma once

#include <time.h>

#include "core/types.h"

namespace mroce::net {

inline Time monotonic_now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Time(ts.tv_sec) * kSecond + Time(ts.tv_nsec);
}

// A span of the engines' Time as the kernel's timeouts take it.
inline timespec to_timespec(Time span) {
  return timespec{static_cast<time_t>(span / kSecond), static_cast<long>(span % kSecond)};
}

}  // namespace mroce::net
