// What one run measured, ready for reports. Everything is derived from simulated
// events except wall_seconds and peak_rss_bytes, which describe the simulator itself.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/transport.h"
#include "sim/drops.h"
#include "sim/time.h"
#include "sim/traffic.h"

namespace mroce::sim {

struct FctStats {
  std::uint64_t count = 0;
  SimTime p50 = 0;
  SimTime p99 = 0;
  SimTime max = 0;
  SimTime mean = 0;
};
FctStats fct_stats(std::vector<SimTime> fcts);

struct WorkloadResult {
  std::string name;
  std::string kind;
  std::uint64_t flows = 0;
  std::uint64_t completed = 0;
  std::uint64_t failed = 0;
  std::uint64_t bytes = 0;  // completed
  FctStats fct;
  SimTime start = 0;
  SimTime finish = 0;       // last completion (or end of run if incomplete)
  double goodput_gbps = 0;  // bytes over (finish - start)
  double algbw_gbps = 0;    // collectives: data per rank over completion time
  double busbw_gbps = 0;    // ring all-reduce: algbw * 2(R-1)/R
  std::vector<SimTime> iteration_times;
};

// Per class of link, e.g. "tor>agg" (switch output queues feeding that hop).
struct LinkClassResult {
  std::uint64_t links = 0;
  std::uint64_t max_queue_bytes = 0;
  std::uint64_t tx_packets = 0;  // transmissions started, packets then lost included
  std::uint64_t tx_bytes = 0;
  std::uint64_t ecn_marks = 0;
  std::uint64_t tail_drops = 0;
  std::uint64_t pauses = 0;
  SimTime paused_time = 0;
};

struct Sample {
  SimTime time = 0;
  double rx_gbps = 0;       // data payload delivered to hosts (duplicates included)
  double goodput_gbps = 0;  // bytes of messages completed in the interval
  std::uint64_t drops = 0;  // network drops in the interval
  std::uint32_t paused_links = 0;
  std::uint64_t packets_in_network = 0;
};

struct QueueSample {
  SimTime time = 0;
  std::uint32_t link_class = 0;  // index into RunResult::link_class_names
  std::uint64_t max_bytes = 0;   // largest occupancy seen in the interval
};

struct PathSample {
  SimTime time = 0;
  std::uint32_t host = 0;
  ConnId conn = 0;
  std::uint16_t path = 0;
  PathStats stats;
};

struct TransportTotals {
  std::uint64_t tx_packets = 0;
  std::uint64_t tx_bytes = 0;
  std::uint64_t tx_data_packets = 0;
  std::uint64_t tx_retransmits = 0;
  std::uint64_t rx_packets = 0;
  std::uint64_t rx_ce_packets = 0;
  std::uint64_t path_failures = 0;  // paths declared failed
  std::uint64_t reentropies = 0;    // new source ports taken
  std::uint64_t paths_home = 0;     // paths brought back to their home port
  std::array<std::uint64_t, static_cast<int>(DropReason::kCount)> drops{};
};

struct FailureRecord {
  SimTime time;
  std::string what;
};

struct RunResult {
  std::string scenario;
  std::string transport;
  bool pfc = false;
  bool complete = false;  // every flow finished
  SimTime sim_time = 0;
  double wall_seconds = 0;
  std::uint64_t events = 0;
  std::uint64_t packets_sent = 0;
  std::uint64_t data_packets_sent = 0;
  std::uint64_t data_packets_delivered = 0;
  std::uint64_t payload_bytes_delivered = 0;
  std::uint64_t peak_packets = 0;  // pool capacity reached
  std::uint64_t peak_rss_bytes = 0;
  // Partitioned runs: windows run, and (over ranks) the first rank's wall time in the
  // exchanges between windows, waiting for the other ranks included.
  std::uint64_t windows = 0;
  double rank_sync_seconds = 0;
  std::uint64_t hosts = 0;
  std::uint64_t switches = 0;
  std::uint64_t links = 0;
  std::uint64_t connections = 0;
  SimTime base_rtt = 0;
  std::uint64_t queue_bytes = 0;
  std::uint64_t pause_frames = 0;

  std::vector<Flow> flows;
  FctStats fct;
  std::vector<WorkloadResult> workloads;
  DropCounters drops;
  std::vector<std::string> link_class_names;
  std::vector<LinkClassResult> link_classes;
  TransportTotals transport_totals;
  std::map<std::string, std::uint64_t> transport_events;
  std::vector<Traffic::EventRecord> event_log;
  std::vector<FailureRecord> failures;
  std::vector<Sample> samples;
  std::vector<QueueSample> queue_samples;
  std::vector<PathSample> path_samples;
};

}  // namespace mroce::sim
