// One run: a scenario, one transport, one seed. Builds the network and the hosts'
// engines, sets up the workloads and failures, runs the event loop until the work is
// done (or the stop time), and returns what it measured.
#pragma once

#include <memory>
#include <string>

#include "sim/context.h"
#include "sim/network.h"
#include "sim/results.h"
#include "sim/scenario.h"
#include "sim/traffic.h"
#include "sim/transport_registry.h"

namespace mroce::sim {

struct RunOptions {
  bool progress = false;  // a rate-limited progress line on stderr
};

// The network settings a scenario resolves to for a transport (queue sizes from the
// BDP, ECN thresholds, PFC on or off).
NetworkConfig resolve_network(const Scenario& scenario, const TransportInfo& transport);

class Simulation {
 public:
  // Throws ConfigError for settings the transport or the network reject.
  Simulation(const Scenario& scenario, const TransportInfo& transport);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  RunResult run(const RunOptions& options = {});

  // For tests and tools that drive the pieces directly.
  SimContext& context() { return *ctx_; }
  Network& network() { return *network_; }
  Traffic& traffic() { return *traffic_; }

 private:
  class Sampler;
  class FailureScript;

  void collect(RunResult& r) const;

  Scenario scenario_;
  std::string transport_name_;
  std::unique_ptr<SimContext> ctx_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<Traffic> traffic_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<FailureScript> failures_;
  std::vector<std::uint32_t> link_class_;  // per link
  std::vector<std::string> link_class_names_;
};

}  // namespace mroce::sim
