#include "sim/topology.h"

#include <gtest/gtest.h>

#include "sim/errors.h"
#include "sim/network.h"

namespace mroce::sim {
namespace {

std::size_t count_tier(const TopologyGraph& g, std::uint8_t tier) {
  std::size_t n = 0;
  for (auto t : g.tier) n += t == tier;
  return n;
}

TEST(Topology, FatTreeHasTheTextbookSizes) {
  for (std::uint32_t k : {4u, 8u, 16u}) {
    TopologySpec spec;
    spec.k = k;
    const TopologyGraph g = build_topology(spec);
    EXPECT_EQ(g.hosts, k * k * k / 4) << k;
    EXPECT_EQ(count_tier(g, kTierLeaf), k * k / 2);
    EXPECT_EQ(count_tier(g, kTierSpine), k * k / 2);
    EXPECT_EQ(count_tier(g, kTierCore), k * k / 4);
    EXPECT_EQ(g.cables.size(), k * k * k / 2);  // k^3/4 tor-agg + k^3/4 agg-core
    EXPECT_EQ(g.max_hops, 6u);
  }
}

TEST(Topology, TwoDataCentersJoinTheirCoresByLongHaul) {
  TopologySpec spec;
  spec.k = 4;
  spec.data_centers = 2;
  spec.long_haul_links = 2;
  const TopologyGraph g = build_topology(spec);
  EXPECT_EQ(g.hosts, 32u);
  EXPECT_EQ(g.hosts_per_dc, 16u);
  EXPECT_EQ(count_tier(g, kTierCore), 8u);
  EXPECT_EQ(g.leaves.size(), 16u);
  std::size_t long_haul = 0;
  for (const auto& c : g.cables) {
    if (!c.long_haul) continue;
    ++long_haul;
    EXPECT_EQ(g.tier[c.lower], kTierCore);
    EXPECT_EQ(g.tier[c.upper], kTierCore);
    EXPECT_EQ(g.name[c.upper], "dc1." + g.name[c.lower].substr(4));
  }
  EXPECT_EQ(long_haul, 4u * 2);
  EXPECT_EQ(g.cables.size(), 2u * 32 + 8);
  EXPECT_EQ(g.host_leaf[15], 7u);  // the second data center's hosts on its own leaves
  EXPECT_EQ(g.host_leaf[16], 8u);
  EXPECT_EQ(g.max_hops, 7u);
  EXPECT_EQ(g.long_haul_hops, 1u);
  EXPECT_EQ(g.dc_max_hops, 6u);
  spec.long_haul_delay = 5 * kMs;
  EXPECT_EQ(base_rtt(spec, g.max_hops, g.long_haul_hops), 2 * (2 * kUs + 4 * kUs + 5 * kMs));
  spec.hosts = 7;
  EXPECT_THROW(build_topology(spec), ConfigError);
  spec.hosts = 0;
  spec.data_centers = 3;
  EXPECT_THROW(build_topology(spec), ConfigError);
}

TEST(Topology, FatTreeOversubscriptionPutsMoreHostsPerTor) {
  TopologySpec spec;
  spec.k = 8;
  spec.oversubscription = 2;
  const TopologyGraph g = build_topology(spec);
  EXPECT_EQ(g.hosts, 256u);
  EXPECT_EQ(g.host_leaf[7], 0u);
  EXPECT_EQ(g.host_leaf[8], 1u);
}

TEST(Topology, LeafSpineSizesAndPartialFill) {
  TopologySpec spec;
  spec.kind = TopologyKind::kLeafSpine;
  spec.hosts = 20;
  spec.hosts_per_leaf = 8;
  spec.oversubscription = 2;  // 4 spines
  const TopologyGraph g = build_topology(spec);
  EXPECT_EQ(g.hosts, 20u);
  EXPECT_EQ(g.leaves.size(), 3u);
  EXPECT_EQ(count_tier(g, kTierSpine), 4u);
  EXPECT_EQ(g.cables.size(), 12u);
  EXPECT_EQ(g.max_hops, 4u);
}

TEST(Topology, RejectsImpossibleShapes) {
  TopologySpec spec;
  spec.k = 7;
  EXPECT_THROW(build_topology(spec), ConfigError);
  spec.k = 4;
  spec.hosts = 17;
  EXPECT_THROW(build_topology(spec), ConfigError);
  spec.hosts = 0;
  spec.planes = 9;
  EXPECT_THROW(build_topology(spec), ConfigError);
}

TEST(Topology, MultiplaneCopiesTheFabricPerPlane) {
  SimContext ctx;
  NetworkConfig c;
  c.topology.k = 4;
  c.topology.planes = 4;
  Network net(ctx, c);
  EXPECT_EQ(net.switch_count(), 4u * 20u);
  // Per plane: 32 cables + 16 host cables, two links each.
  EXPECT_EQ(net.links().size(), 4u * 2u * (32u + 16u));
  for (std::uint32_t h = 0; h < net.host_count(); ++h) {
    EXPECT_EQ(net.host(h).planes(), 4u);
  }
  EXPECT_EQ(net.base_rtt(), 12 * kUs);
  EXPECT_EQ(net.bdp_bytes(), 150'000u);  // 100 Gbit/s x 12 us
}

}  // namespace
}  // namespace mroce::sim
