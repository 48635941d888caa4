// The traffic patterns: permutation, N-to-1 incast, all-to-all and ring all-reduce.
// Several can run in one scenario (a mix); each has its own random stream.
#pragma once

#include <memory>

#include "sim/rng.h"
#include "sim/scenario.h"
#include "sim/traffic.h"

namespace mroce::sim {

// Throws ConfigError when the spec does not fit the network (e.g. too few hosts).
std::unique_ptr<Workload> make_workload(const WorkloadSpec& spec, std::uint32_t hosts,
                                        std::uint64_t seed);

}  // namespace mroce::sim
