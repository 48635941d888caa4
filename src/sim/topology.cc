#include "sim/topology.h"

#include <algorithm>

#include "sim/addressing.h"
#include "sim/errors.h"

namespace mroce::sim {

const char* to_string(TopologyKind k) {
  return k == TopologyKind::kFatTree ? "fat_tree" : "leaf_spine";
}

const char* tier_name(TopologyKind kind, std::uint8_t tier) {
  switch (tier) {
    case kTierHost:
      return "host";
    case kTierLeaf:
      return kind == TopologyKind::kFatTree ? "tor" : "leaf";
    case kTierSpine:
      return kind == TopologyKind::kFatTree ? "agg" : "spine";
    case kTierCore:
      return "core";
  }
  return "?";
}

namespace {

std::uint32_t add_switch(TopologyGraph& g, std::uint8_t tier, std::string name) {
  g.tier.push_back(tier);
  g.name.push_back(std::move(name));
  return static_cast<std::uint32_t>(g.tier.size() - 1);
}

// Hangs `hosts` hosts on the leaves in order, `per_leaf` each.
void place_hosts(TopologyGraph& g, std::uint32_t hosts, std::uint32_t per_leaf) {
  g.hosts = hosts;
  for (std::uint32_t h = 0; h < hosts; ++h) {
    g.host_leaf.push_back(h / per_leaf);
    g.host_slot.push_back(static_cast<std::uint16_t>(h % per_leaf));
  }
}

std::uint32_t host_count(const TopologySpec& spec, std::uint32_t slots) {
  if (spec.hosts > slots) {
    throw ConfigError("topology.hosts = " + std::to_string(spec.hosts) + " exceeds the " +
                      std::to_string(slots) + " host ports of this fabric");
  }
  std::uint32_t n = spec.hosts ? spec.hosts : slots;
  if (n < 2) throw ConfigError("topology needs at least 2 hosts");
  if (n > kMaxHosts) {
    throw ConfigError("topology has " + std::to_string(n) + " hosts; at most " +
                      std::to_string(kMaxHosts) + " are addressable");
  }
  return n;
}

TopologyGraph leaf_spine(const TopologySpec& spec) {
  if (spec.hosts_per_leaf == 0) throw ConfigError("topology.hosts_per_leaf must be positive");
  if (spec.oversubscription == 0) throw ConfigError("topology.oversubscription must be positive");
  const std::uint32_t spines =
      spec.spines ? spec.spines : std::max(1u, spec.hosts_per_leaf / spec.oversubscription);
  const std::uint32_t wanted = spec.hosts ? spec.hosts : spec.hosts_per_leaf * 2;
  const std::uint32_t leaves = (wanted + spec.hosts_per_leaf - 1) / spec.hosts_per_leaf;
  if (spec.links_per_spine == 0) throw ConfigError("topology.links_per_spine must be positive");
  TopologyGraph g;
  g.kind = TopologyKind::kLeafSpine;
  for (std::uint32_t l = 0; l < leaves; ++l) {
    g.leaves.push_back(add_switch(g, kTierLeaf, "leaf" + std::to_string(l)));
  }
  std::vector<std::uint32_t> spine_ids;
  for (std::uint32_t s = 0; s < spines; ++s) {
    spine_ids.push_back(add_switch(g, kTierSpine, "spine" + std::to_string(s)));
  }
  for (std::uint32_t l = 0; l < leaves; ++l) {
    for (std::uint32_t s : spine_ids) {
      for (std::uint32_t i = 0; i < spec.links_per_spine; ++i) g.cables.push_back({g.leaves[l], s});
    }
  }
  place_hosts(g, host_count(spec, leaves * spec.hosts_per_leaf), spec.hosts_per_leaf);
  g.max_hops = leaves > 1 ? 4 : 2;
  return g;
}

TopologyGraph fat_tree(const TopologySpec& spec) {
  const std::uint32_t k = spec.k;
  if (k < 2 || k % 2 != 0 || k > 128) {
    throw ConfigError("topology.k must be an even number from 2 to 128, not " + std::to_string(k));
  }
  if (spec.oversubscription == 0) throw ConfigError("topology.oversubscription must be positive");
  const std::uint32_t half = k / 2;
  const std::uint32_t per_tor = half * spec.oversubscription;
  TopologyGraph g;
  g.kind = TopologyKind::kFatTree;
  std::vector<std::uint32_t> cores;
  for (std::uint32_t pod = 0; pod < k; ++pod) {
    std::vector<std::uint32_t> aggs;
    for (std::uint32_t i = 0; i < half; ++i) {
      g.leaves.push_back(
          add_switch(g, kTierLeaf, "pod" + std::to_string(pod) + ".tor" + std::to_string(i)));
    }
    for (std::uint32_t i = 0; i < half; ++i) {
      aggs.push_back(
          add_switch(g, kTierSpine, "pod" + std::to_string(pod) + ".agg" + std::to_string(i)));
    }
    for (std::uint32_t t = 0; t < half; ++t) {
      for (std::uint32_t a : aggs) g.cables.push_back({g.leaves[pod * half + t], a});
    }
    if (pod == 0) {
      for (std::uint32_t c = 0; c < half * half; ++c) {
        cores.push_back(add_switch(g, kTierCore, "core" + std::to_string(c)));
      }
    }
    // Aggregation switch i reaches cores i*k/2 .. i*k/2 + k/2 - 1.
    for (std::uint32_t i = 0; i < half; ++i) {
      for (std::uint32_t j = 0; j < half; ++j) g.cables.push_back({aggs[i], cores[i * half + j]});
    }
  }
  const std::uint32_t slots = k * half * per_tor;
  place_hosts(g, host_count(spec, slots), per_tor);
  const std::uint32_t used_tors = (g.hosts + per_tor - 1) / per_tor;
  g.max_hops = used_tors <= 1 ? 2 : (used_tors <= half ? 4 : 6);
  return g;
}

// Two copies of one data center's graph, names prefixed "dc0." and "dc1.", hosts of the
// second after those of the first, top-tier switches cabled pairwise by long haul.
TopologyGraph two_data_centers(const TopologyGraph& one, const TopologySpec& spec) {
  TopologyGraph g;
  g.kind = one.kind;
  g.data_centers = 2;
  g.hosts_per_dc = one.hosts;
  g.hosts = 2 * one.hosts;
  const auto n = static_cast<std::uint32_t>(one.switches());
  const auto leaves = static_cast<std::uint32_t>(one.leaves.size());
  const std::uint8_t top = *std::max_element(one.tier.begin(), one.tier.end());
  for (std::uint32_t dc = 0; dc < 2; ++dc) {
    for (std::uint32_t s = 0; s < n; ++s) {
      add_switch(g, one.tier[s], "dc" + std::to_string(dc) + "." + one.name[s]);
    }
    for (std::uint32_t l : one.leaves) g.leaves.push_back(dc * n + l);
    for (const auto& c : one.cables) g.cables.push_back({dc * n + c.lower, dc * n + c.upper});
    for (std::uint32_t h = 0; h < one.hosts; ++h) {
      g.host_leaf.push_back(dc * leaves + one.host_leaf[h]);
      g.host_slot.push_back(one.host_slot[h]);
    }
  }
  for (std::uint32_t s = 0; s < n; ++s) {
    if (one.tier[s] != top) continue;
    for (std::uint32_t i = 0; i < spec.long_haul_links; ++i) g.cables.push_back({s, n + s, true});
  }
  // Up to the top tier, across, and down: the top tier is one hop below it on each side.
  const std::uint32_t up = top;  // links from a host to a top-tier switch
  g.max_hops = 2 * up + 1;
  g.long_haul_hops = 1;
  g.dc_max_hops = one.max_hops;
  return g;
}

}  // namespace

TopologyGraph build_topology(const TopologySpec& spec) {
  if (spec.planes == 0 || spec.planes > kMaxPlanes) {
    throw ConfigError("topology.planes must be from 1 to " + std::to_string(kMaxPlanes));
  }
  if (spec.host_rate_bps == 0 || spec.fabric_rate_bps == 0) {
    throw ConfigError("link rates must be positive");
  }
  if (spec.data_centers == 0 || spec.data_centers > 2) {
    throw ConfigError("topology.data_centers must be 1 or 2");
  }
  if (spec.data_centers == 1) {
    TopologyGraph g = spec.kind == TopologyKind::kFatTree ? fat_tree(spec) : leaf_spine(spec);
    g.dc_max_hops = g.max_hops;
    g.hosts_per_dc = g.hosts;
    return g;
  }
  if (spec.hosts % 2 != 0) {
    throw ConfigError("topology.hosts = " + std::to_string(spec.hosts) +
                      " does not split evenly between 2 data centers");
  }
  if (spec.long_haul_rate_bps == 0) throw ConfigError("topology.long_haul_rate must be positive");
  if (spec.long_haul_links == 0) throw ConfigError("topology.long_haul_links must be positive");
  TopologySpec half = spec;
  half.hosts = spec.hosts / 2;
  half.data_centers = 1;
  const TopologyGraph one = half.kind == TopologyKind::kFatTree ? fat_tree(half) : leaf_spine(half);
  if (2 * std::uint64_t{one.hosts} > kMaxHosts) {
    throw ConfigError("topology has " + std::to_string(2 * one.hosts) + " hosts; at most " +
                      std::to_string(kMaxHosts) + " are addressable");
  }
  return two_data_centers(one, spec);
}

}  // namespace mroce::sim
