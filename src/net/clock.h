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

}  // namespace mroce::net
