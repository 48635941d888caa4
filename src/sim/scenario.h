// A scenario: topology, buffers, loss, failures, workloads, transport settings and
// output options, read from TOML (docs/SIMULATOR.md describes every key). Reading is
// strict: an unknown key, a wrong type or an impossible value is a ConfigError.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "sim/network.h"
#include "sim/params.h"

namespace mroce::sim {

enum class WorkloadKind : std::uint8_t {
  kPermutation,
  kIncast,
  kAllToAll,
  kRingAllReduce,
  kKvCache,
};
const char* to_string(WorkloadKind);

struct WorkloadSpec {
  WorkloadKind kind = WorkloadKind::kPermutation;
  std::string name;
  std::uint32_t hosts = 0;  // participants: hosts 0 .. hosts-1 (0: every host)
  std::uint64_t bytes = 1 << 20;
  WrOpcode op = WrOpcode::kRdmaWrite;
  SimTime start = 0;
  SimTime jitter = 0;            // each flow starts uniformly in [start, start + jitter)
  std::uint32_t messages = 1;    // messages per pair, back to back (not ring)
  std::uint32_t senders = 0;     // incast: 0 means every other participant
  std::uint32_t peers = 0;       // all_to_all: peers each host sends to, 0 means all
  std::uint32_t receiver = 0;    // incast
  std::uint32_t iterations = 1;  // ring all-reduce
  std::uint32_t readers = 0;     // kv_cache: hosts that read, spread evenly over the hosts
  std::uint32_t fanout = 0;      // kv_cache: storage hosts each reader reads from at once
  // kv_cache: READ sizes, each READ drawing one uniformly (empty: `bytes` alone).
  std::vector<std::uint64_t> sizes;
  // One stream per plane between each pair, bound to that plane, every message split
  // evenly across them (as a collective library drives one RoCE QP per NIC). Off: one
  // stream per pair, the transport picks planes. mroce-sim turns it on for transports
  // whose streams live on one plane when the fabric has several.
  bool per_plane = false;
};

enum class FailureTarget : std::uint8_t { kPlane, kSwitch, kLink, kHostLink };
const char* to_string(FailureTarget);

struct FailureSpec {
  FailureTarget target = FailureTarget::kPlane;
  std::uint32_t plane = 0;
  std::string node;        // switch name (switch, link)
  std::string peer;        // other switch (link)
  std::uint32_t host = 0;  // host link
  bool visible = false;    // false: silent black hole
  SimTime at = 0;
  SimTime recover = kSimNever;
  SimTime reroute_delay = 0;  // visible: routing converges this long after the change
};

enum class PfcMode : std::uint8_t { kAuto, kOn, kOff };

struct OutputSpec {
  SimTime sample_interval = 10 * kUs;
  std::uint32_t trace_host = 0;         // whose connections' paths are traced
  std::uint32_t trace_connections = 2;  // how many of them
};

struct Scenario {
  std::string name;
  std::string description;
  std::uint64_t seed = 1;
  SimTime stop = kSimNever;  // end of the run even if work remains
  // Threads the network is split over. Runs are bit-identical for a given count; counts
  // differ only in the order of events of the same picosecond.
  std::uint32_t partitions = 1;
  std::string transport = "mroce";
  std::uint32_t mtu = 4096;  // payload bytes per data packet the transports should use

  NetworkConfig network;
  double queue_bdp = 1.0;         // queue size in bandwidth-delay products, unless
  std::uint64_t queue_bytes = 0;  // a size is given
  // Queues onto long-haul links: in bandwidth-delay products of the long-haul round
  // trip at the long-haul rate, unless a size is given. ECN thresholds take the same
  // fractions of them as of the others.
  double long_haul_queue_bdp = 1.0;
  std::uint64_t long_haul_queue_bytes = 0;
  double ecn_min_fraction = 0.2;  // of the queue, unless sizes are given
  double ecn_max_fraction = 0.8;
  std::uint64_t ecn_min_bytes = 0;
  std::uint64_t ecn_max_bytes = 0;
  PfcMode pfc = PfcMode::kAuto;
  std::uint64_t pfc_xoff_bytes = 0;  // 0: half the queue
  std::uint64_t pfc_xon_bytes = 0;   // 0: xoff minus two full frames

  std::map<std::string, Params> transport_settings;  // by transport name
  std::vector<WorkloadSpec> workloads;
  std::vector<FailureSpec> failures;
  OutputSpec output;
};

// Parses TOML text. `source` names it in messages; `overrides` are "key.path=value"
// strings applied before reading (value in TOML syntax, or a bare string).
Scenario parse_scenario(std::string_view text, const std::string& source,
                        const std::vector<std::string>& overrides = {});

struct NamedScenario {
  const char* name;
  const char* summary;
  const char* toml;
};
const std::vector<NamedScenario>& builtin_scenarios();
const NamedScenario* find_builtin(const std::string& name);

// Loads a built-in scenario by name, or else a file.
Scenario load_scenario(const std::string& name_or_path,
                       const std::vector<std::string>& overrides = {});

}  // namespace mroce::sim
