// The shape of one plane: which switches exist, at which tier, how they are wired and
// where hosts hang. Builders for a two-tier leaf-spine and a three-tier k-ary fat-tree
// produce the same plain description; Network instantiates it once per plane. Either
// can be built twice, as two data centers whose top-tier switches are joined pairwise
// by long-haul cables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/time.h"

namespace mroce::sim {

enum class TopologyKind : std::uint8_t { kLeafSpine, kFatTree };
const char* to_string(TopologyKind);

struct TopologySpec {
  TopologyKind kind = TopologyKind::kFatTree;
  std::uint32_t hosts = 0;  // hosts attached (0: every host slot of the fabric)
  std::uint32_t planes = 1;
  // Hosts per leaf over uplinks per leaf (bandwidth ratio when rates are equal).
  std::uint32_t oversubscription = 1;
  // Fat-tree: switch radix.
  std::uint32_t k = 8;
  // Leaf-spine.
  std::uint32_t hosts_per_leaf = 16;
  std::uint32_t spines = 0;  // 0: hosts_per_leaf / oversubscription
  std::uint32_t links_per_spine = 1;
  // Links.
  std::uint64_t host_rate_bps = 100'000'000'000;
  std::uint64_t fabric_rate_bps = 100'000'000'000;
  SimTime host_delay = kUs;
  SimTime fabric_delay = kUs;
  // Data centers: 1, or 2 copies of the fabric, hosts split evenly between them (the
  // first half in the first), top-tier switch i of one cabled to switch i of the other.
  std::uint32_t data_centers = 1;
  std::uint32_t long_haul_links = 1;  // cables per pair of top-tier switches
  std::uint64_t long_haul_rate_bps = 400'000'000'000;
  SimTime long_haul_delay = kMs;
};

// Tier numbers: 0 hosts, 1 leaves (ToR), 2 spines (fat-tree: aggregation), 3 cores.
inline constexpr std::uint8_t kTierHost = 0;
inline constexpr std::uint8_t kTierLeaf = 1;
inline constexpr std::uint8_t kTierSpine = 2;
inline constexpr std::uint8_t kTierCore = 3;
const char* tier_name(TopologyKind kind, std::uint8_t tier);

struct TopologyGraph {
  struct Cable {  // one bidirectional cable between two switches, lower tier first
    std::uint32_t lower;
    std::uint32_t upper;
    bool long_haul = false;  // between data centers: long-haul rate, delay and queue
  };
  TopologyKind kind = TopologyKind::kFatTree;
  std::uint32_t hosts = 0;
  std::vector<std::uint8_t> tier;        // per switch
  std::vector<std::string> name;         // per switch, e.g. "leaf3", "pod1.agg2", "core5"
  std::vector<std::uint32_t> leaves;     // leaf index -> switch
  std::vector<std::uint32_t> host_leaf;  // host -> leaf index
  std::vector<std::uint16_t> host_slot;  // host -> position on its leaf
  std::vector<Cable> cables;
  std::uint32_t max_hops = 0;        // links on the longest host-to-host shortest path
  std::uint32_t long_haul_hops = 0;  // long-haul links on that path (0 or 1)
  std::uint32_t dc_max_hops = 0;     // links on the longest path inside one data center
  std::uint32_t data_centers = 1;
  std::uint32_t hosts_per_dc = 0;

  std::size_t switches() const { return tier.size(); }
};

// Throws ConfigError on impossible parameters.
TopologyGraph build_topology(const TopologySpec& spec);

}  // namespace mroce::sim
