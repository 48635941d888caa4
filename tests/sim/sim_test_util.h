// Runs small scenarios with the go-back-N test transport.
#pragma once

#include <string>
#include <vector>

#include "gbn_registration.h"
#include "sim/errors.h"
#include "sim/scenario.h"
#include "sim/simulation.h"

namespace mroce::sim::testing {

inline const TransportRegistry& test_transports() {
  static const TransportRegistry r = [] {
    TransportRegistry reg;
    register_gbn(reg);
    return reg;
  }();
  return r;
}

inline RunResult run_scenario(const Scenario& s, const std::string& transport = "gbn") {
  Simulation sim(s, *test_transports().find(transport));
  return sim.run();
}

inline RunResult run_toml(const std::string& toml, const std::vector<std::string>& overrides = {}) {
  return run_scenario(parse_scenario(toml, "test", overrides));
}

// 16 hosts on two leaves under 4 spines.
inline const char* kSmallFabric = R"(
[topology]
kind = "leaf_spine"
hosts = 16
hosts_per_leaf = 8
spines = 4
)";

}  // namespace mroce::sim::testing
