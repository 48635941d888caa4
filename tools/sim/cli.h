// The mroce-sim command line, as a function so that tests and benchmark drivers can run
// it in-process with their own set of transports.
#pragma once

#include "sim/transport_registry.h"

namespace mroce::sim {

// Returns the process exit code: 0 success, 1 a failed run, 2 bad usage or input.
int run_cli(int argc, const char* const* argv, const TransportRegistry& transports);

}  // namespace mroce::sim
