// Registers the test-only go-back-N transport as "gbn" (settings: window, rto, ecn,
// spread_planes, mss).
#pragma once

#include "sim/transport_registry.h"

namespace mroce::sim::testing {

void register_gbn(TransportRegistry& registry);

}  // namespace mroce::sim::testing
