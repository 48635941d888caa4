// One run: a scenario, one transport, one seed. Builds the network and the hosts'
// engines, sets up the workloads and failures, runs the event loop until the work is
// done (or the stop time), and returns what it measured.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "sim/context.h"
#include "sim/network.h"
#include "sim/ranks.h"
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
  // Throws ConfigError for settings the transport or the network reject. With `ranks`
  // of more than one process, every rank builds the same simulation and runs its share
  // of the partitions (at least one each: partitions is raised to the ranks' number);
  // run() returns the whole run's result on every rank.
  Simulation(const Scenario& scenario, const TransportInfo& transport, Ranks* ranks = nullptr);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  RunResult run(const RunOptions& options = {});

  // For tests and tools that drive the pieces directly (the first partition's).
  SimContext& context() { return *parts_.front(); }
  Network& network() { return *network_; }
  Traffic& traffic() { return *traffic_; }

 private:
  class Sampler;
  class FailureScript;

  // What this process measured (over ranks: its own partitions' share), then merged
  // over ranks, then what follows from the flows.
  void collect(RunResult& r) const;
  void merge_ranks(RunResult& r) const;
  bool split() const { return ranks_ != nullptr && ranks_->size() > 1; }
  // The largest of every rank's `t` (every rank calls it together).
  SimTime max_over_ranks(SimTime t) const;
  // The event loop of one partition, or of several on as many threads, in windows of
  // the network's lookahead.
  void run_single(const RunOptions& options);
  void run_partitioned(const RunOptions& options);
  void print_progress();  // at most once a second
  SimTime now() const;
  DropCounters drops() const;  // over every partition
  std::size_t live_packets() const;
  bool events_pending() const;
  // Where scripted actions (failures, recoveries, route changes) are scheduled: the
  // queue itself on one partition; on several, a queue of their own that runs between
  // windows, when no partition is running.
  EventQueue& script() { return parts_.size() == 1 ? parts_.front()->events : script_; }

  Scenario scenario_;
  std::string transport_name_;
  Ranks* ranks_ = nullptr;
  std::uint32_t local_first_ = 0, local_end_ = 0;   // the partitions this process runs
  std::vector<std::unique_ptr<SimContext>> parts_;  // one per partition
  std::unique_ptr<Network> network_;
  std::unique_ptr<Traffic> traffic_;
  std::unique_ptr<Sampler> sampler_;
  EventQueue script_;
  std::unique_ptr<FailureScript> failures_;
  std::vector<std::uint32_t> link_class_;  // per link
  std::vector<std::string> link_class_names_;
  // Progress line state.
  std::chrono::steady_clock::time_point wall_start_, last_print_;
  bool printed_ = false;
  std::uint64_t windows_ = 0;
  double sync_seconds_ = 0;
};

}  // namespace mroce::sim
