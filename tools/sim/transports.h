// The transports built into mroce-sim: the MetaRoCE engine and the RoCEv2 baseline,
// each present when its library is part of the build.
#pragma once

#include "sim/transport_registry.h"

namespace mroce::sim {

void register_builtin_transports(TransportRegistry& registry);

}  // namespace mroce::sim
