#include "sim/network.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "sim/addressing.h"
#include "sim/ecmp.h"
#include "sim/errors.h"

namespace mroce::sim {
namespace {

// The switches a packet visits from src to dst on a plane, following select_port.
std::vector<std::uint32_t> trace(Network& net, std::uint32_t src, std::uint32_t dst,
                                 std::uint16_t sport, std::uint32_t plane = 0) {
  Packet p;
  p.src_ip = host_ip(src, plane);
  p.dst_ip = host_ip(dst, plane);
  p.src_port = sport;
  p.dst_port = 4793;
  p.flow_hash = flow_hash(p);
  std::vector<std::uint32_t> hops;
  Node* at = net.host(src).nic(plane)->to();
  while (auto* sw = dynamic_cast<Switch*>(at)) {
    hops.push_back(sw->id());
    const std::uint16_t port = sw->select_port(p);
    if (port == Switch::kNoPort || hops.size() > 10) return {};
    at = sw->out_link(port)->to();
  }
  if (at != &net.host(dst)) return {};
  return hops;
}

NetworkConfig fat_tree(std::uint32_t k) {
  NetworkConfig c;
  c.topology.k = k;
  return c;
}

TEST(Partitions, AFatTreeSplitsByPodsAndOnlyLinksAboveTheAggregationCross) {
  SimContext a, b;
  NetworkConfig c = fat_tree(4);
  c.topology.host_delay = 1 * kUs;
  c.topology.fabric_delay = 2 * kUs;
  Network net({&a, &b}, c);
  ASSERT_EQ(net.partitions(), 2u);
  // Pods 0-1 (hosts 0-7) in the first, pods 2-3 in the second; hosts with their ToR.
  for (std::uint32_t h = 0; h < 16; ++h) {
    EXPECT_EQ(net.partition_of_host(h), h < 8 ? 0u : 1u) << h;
    EXPECT_EQ(&net.host(h).context(), h < 8 ? &a : &b) << h;
  }
  EXPECT_EQ(net.lookahead(), 2 * kUs);
  // Only aggregation-core cables join pods; half of them cross.
  std::size_t crossing = 0;
  for (const LinkInfo& li : net.links()) {
    if (!li.link->crosses()) continue;
    ++crossing;
    EXPECT_TRUE((li.from_tier == kTierSpine && li.to_tier == kTierCore) ||
                (li.from_tier == kTierCore && li.to_tier == kTierSpine));
  }
  EXPECT_EQ(crossing, 16u);  // 16 of 32 aggregation-core directions
  SimContext one;
  EXPECT_EQ(Network(one, c).lookahead(), kSimNever);  // nothing crosses
  SimContext x, y, z;
  EXPECT_THROW(Network({&x, &y, &z, &one, &a}, fat_tree(2)), ConfigError);  // 2 leaves
  c.topology.fabric_delay = 0;
  EXPECT_THROW(Network({&x, &y}, c), ConfigError);  // no partition could run ahead
}

// Records what arrives.
struct Arrivals final : EventHandler {
  std::vector<std::pair<SimTime, std::uint64_t>> got;
  void on_event(SimTime now, std::uint64_t arg) override { got.emplace_back(now, arg); }
};

TEST(Partitions, ACrossingHandsPacketAndHeaderToTheOtherPoolAtItsTime) {
  SimContext a, b;
  Crossing crossing(a, b);
  Arrivals sink;
  const PacketId id = a.packets.alloc();
  a.packets[id].frame_bytes = static_cast<std::uint16_t>(kFrameOverhead + 100 + 3);
  a.packets[id].payload_bytes = 100;
  a.packets[id].src_port = 777;
  std::memcpy(a.packets.header(id), "abc", 3);
  b.packets.alloc();  // so that the new id differs from the old one
  crossing.send(5 * kUs, &sink, std::uint64_t{9} << 56, id);
  EXPECT_EQ(a.packets.live(), 0u);  // released by the sender at once
  EXPECT_TRUE(b.events.empty());    // nothing arrives before delivery
  crossing.deliver();
  ASSERT_EQ(b.packets.live(), 2u);
  ASSERT_TRUE(b.events.run_one());
  ASSERT_EQ(sink.got.size(), 1u);
  EXPECT_EQ(sink.got[0].first, 5 * kUs);
  EXPECT_EQ(sink.got[0].second >> 56, 9u);
  const auto moved = static_cast<PacketId>(sink.got[0].second);
  EXPECT_NE(moved, id);
  EXPECT_EQ(b.packets[moved].src_port, 777);
  EXPECT_EQ(b.packets[moved].header_len(), 3u);
  EXPECT_EQ(std::memcmp(b.packets.header(moved), "abc", 3), 0);
  crossing.deliver();  // delivered once only
  EXPECT_TRUE(b.events.empty());
}

TEST(Ecmp, SourcePortsSpreadOverEveryShortestPathAndEachPortIsPinned) {
  SimContext ctx;
  Network net(ctx, fat_tree(8));
  // Host 0 and host 127 sit in different pods: (k/2)^2 = 16 shortest paths of 5 switches.
  std::set<std::vector<std::uint32_t>> paths;
  for (std::uint16_t port = 49152; port < 49152 + 512; ++port) {
    auto hops = trace(net, 0, 127, port);
    ASSERT_EQ(hops.size(), 5u) << port;
    EXPECT_EQ(trace(net, 0, 127, port), hops);  // the same port always takes the same path
    paths.insert(hops);
  }
  EXPECT_EQ(paths.size(), 16u);
  // Same pod, different ToR: 4 paths through the aggregation layer.
  std::set<std::vector<std::uint32_t>> pod;
  for (std::uint16_t port = 1000; port < 1200; ++port) pod.insert(trace(net, 0, 4, port));
  EXPECT_EQ(pod.size(), 4u);
  // Same ToR: one hop.
  EXPECT_EQ(trace(net, 0, 1, 1234).size(), 1u);
}

TEST(Ecmp, SpreadIsRoughlyUniform) {
  SimContext ctx;
  Network net(ctx, fat_tree(8));
  std::map<std::vector<std::uint32_t>, int> count;
  const int n = 16000;
  for (int i = 0; i < n; ++i) ++count[trace(net, 3, 100, static_cast<std::uint16_t>(i))];
  ASSERT_EQ(count.size(), 16u);
  for (const auto& [path, c] : count) {
    EXPECT_GT(c, n / 16.0 * 0.8);
    EXPECT_LT(c, n / 16.0 * 1.2);
  }
}

TEST(Routing, VisibleFailureRemovesALinkFromEcmpGroups) {
  SimContext ctx;
  Network net(ctx, fat_tree(4));
  const auto tor = *net.find_switch("pod0.tor0");
  const auto agg = *net.find_switch("pod0.agg0");
  for (Link* l : net.cable_links(0, tor, agg)) l->set_state(0, LinkState::kDown);
  net.recompute_routes(0);
  for (std::uint16_t port = 0; port < 200; ++port) {
    auto hops = trace(net, 0, 15, port);
    ASSERT_EQ(hops.size(), 5u);
    EXPECT_NE(hops[1], agg);  // every path now leaves through pod0.agg1
  }
}

TEST(Routing, PlanesAreIndependent) {
  SimContext ctx;
  NetworkConfig c = fat_tree(4);
  c.topology.planes = 2;
  Network net(ctx, c);
  auto p0 = trace(net, 0, 15, 5, 0);
  auto p1 = trace(net, 0, 15, 5, 1);
  ASSERT_EQ(p0.size(), 5u);
  ASSERT_EQ(p1.size(), 5u);
  for (auto s : p1) EXPECT_EQ(net.switch_by_global(s).plane(), 1);
  // An address of plane 0 does not route on plane 1.
  Packet p;
  p.dst_ip = host_ip(15, 0);
  EXPECT_EQ(net.switch_at(1, net.graph().leaves[0]).select_port(p), Switch::kNoPort);
}

TEST(Addressing, EveryHostAndPlaneReadsBackBeyondSixteenBitsOfHosts) {
  // The first 65,535 hosts are 10.plane.hi.lo; later ones move on to 11, 12, ...
  EXPECT_EQ(host_ip(0, 3), 10u << 24 | 3u << 16 | 1u);
  EXPECT_EQ(host_ip(65534, 0), 10u << 24 | 0xffffu);
  EXPECT_EQ(host_ip(65535, 2), 11u << 24 | 2u << 16);
  for (std::uint32_t host : {0u, 1u, 65534u, 65535u, 65536u, 101'306u, kMaxHosts - 1}) {
    for (std::uint32_t plane = 0; plane < kMaxPlanes; ++plane) {
      const auto nic = decode_ip(host_ip(host, plane));
      ASSERT_TRUE(nic.has_value()) << host;
      EXPECT_EQ(nic->host, host);
      EXPECT_EQ(nic->plane, plane);
    }
  }
  EXPECT_FALSE(decode_ip(9u << 24 | 1u).has_value());
  EXPECT_FALSE(decode_ip(10u << 24 | 1u << 16).has_value());  // hi.lo = 0 names no host
}

}  // namespace
}  // namespace mroce::sim
