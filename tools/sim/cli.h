// The mroce-sim command line, as a function so that tests and benchmark drivers can run
// it in-process with their own set of transports.
#pragma once

#include "sim/ranks.h"
#include "sim/scenario.h"
#include "sim/transport_registry.h"

namespace mroce::sim {

// Returns the process exit code: 0 success, 1 a failed run, 2 bad usage or input. With
// `ranks` of several processes, runs are split over them and the first rank alone
// prints and writes the results.
int run_cli(int argc, const char* const* argv, const TransportRegistry& transports,
            Ranks* ranks = nullptr);

// The scenario as `run` gives it to `transport`: on a fabric of several planes, the RoCEv2
// baseline (a QP sits on one NIC port) gets one stream per plane per pair with every
// message split over them (WorkloadSpec::per_plane), as a multi-NIC RoCE deployment
// drives its NICs; MetaRoCE keeps one connection per pair that sprays over every plane.
Scenario scenario_for(const Scenario& s, const std::string& transport);

}  // namespace mroce::sim
