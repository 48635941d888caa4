// DeviceOptions checked and resolved before anything is opened: every bad value is
// reported as one line naming the option.
#pragma once

#include <string>
#include <vector>

#include "mroce/mroce.h"

namespace mroce::net {

struct ResolvedOptions {
  std::vector<Address> planes;
  std::uint64_t seed = 0;  // never 0
};

bool resolve_options(const DeviceOptions& options, ResolvedOptions* out, std::string* error);

}  // namespace mroce::net
