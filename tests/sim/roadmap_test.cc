// The roadmap scenarios scale-across, scale-across-a2a and kv-cache, on small versions
// of themselves with the real engines (MetaRoCE and the RoCEv2 baseline) as mroce-sim
// runs them: every flow completes, every byte arrives, and no completion beats the
// physical floor of serialization plus propagation. bench/sim/roadmap.sh runs the full
// sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "cli.h"
#include "sim/simulation.h"
#include "transports.h"

namespace mroce::sim {
namespace {

const TransportRegistry& registry() {
  static const TransportRegistry r = [] {
    TransportRegistry reg;
    register_builtin_transports(reg);
    return reg;
  }();
  return r;
}

RunResult run(const std::string& name, const std::string& transport,
              const std::vector<std::string>& overrides) {
  const Scenario s = load_scenario(name, overrides);
  Simulation sim(scenario_for(s, transport), *registry().find(transport));
  return sim.run();
}

// Data packets the flows need at the least: every message in mtu-sized packets. The
// run counts every data packet that reached a host, so delivering fewer means lost bytes.
std::uint64_t packets_needed(const RunResult& r, std::uint32_t mtu) {
  std::uint64_t n = 0;
  for (const Flow& f : r.flows) n += (f.bytes + mtu - 1) / mtu;
  return n;
}

const LinkClassResult* link_class(const RunResult& r, const std::string& name) {
  for (std::size_t i = 0; i < r.link_class_names.size(); ++i) {
    if (r.link_class_names[i] == name) return &r.link_classes[i];
  }
  return nullptr;
}

// Serialization of `bytes` of payload at `bps` in ps, headers not counted (a floor).
SimTime serialization(std::uint64_t bytes, std::uint64_t bps) {
  return static_cast<SimTime>(static_cast<unsigned __int128>(bytes) * 8 * kSec / bps);
}

class Roadmap : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (registry().find(GetParam()) == nullptr) GTEST_SKIP() << GetParam() << " not built";
  }
};

// Ring all-reduce over both data centers: 8 ranks (k=2 fat-trees hold 2 hosts each,
// so k=4 with 4 hosts per data center), 1 MiB, 200 us one way over long haul.
TEST_P(Roadmap, ScaleAcrossRingCompletesAboveTheFloor) {
  const std::vector<std::string> set = {"topology.hosts=8", "topology.long_haul_delay=200us",
                                        "workload.0.bytes=1MiB"};
  const Scenario s = load_scenario("scale-across", set);
  const RunResult r = run("scale-across", GetParam(), set);
  ASSERT_TRUE(r.complete);
  ASSERT_EQ(r.workloads.size(), 1u);
  const WorkloadResult& w = r.workloads[0];
  EXPECT_EQ(w.completed, w.flows);
  EXPECT_EQ(w.failed, 0u);
  EXPECT_GE(r.data_packets_delivered, packets_needed(r, s.mtu));
  ASSERT_EQ(w.iteration_times.size(), 1u);
  // 2(R-1) steps in a chain, each a chunk serialized at the host rate, and the chain
  // crosses between the data centers at least twice.
  const std::uint32_t ranks = 8;
  const std::uint64_t chunk = (s.workloads[0].bytes + ranks - 1) / ranks;
  const SimTime floor = 2 * (ranks - 1) * serialization(chunk, s.network.topology.host_rate_bps) +
                        2 * s.network.topology.long_haul_delay;
  EXPECT_GT(w.iteration_times[0], floor);
  const LinkClassResult* lh = link_class(r, "core>core");
  ASSERT_NE(lh, nullptr);
  EXPECT_EQ(lh->links, 8u);  // 4 core pairs, both directions
  EXPECT_GT(lh->tx_bytes, 2 * chunk);
}

// All-to-all over both: every flow that crosses takes at least the long-haul round trip
// (its completion needs the ACK), the others less than that.
TEST_P(Roadmap, ScaleAcrossAllToAllCompletesAboveTheFloor) {
  const std::vector<std::string> set = {"topology.hosts=8", "topology.long_haul_delay=200us",
                                        "workload.0.bytes=64KiB"};
  const Scenario s = load_scenario("scale-across-a2a", set);
  const RunResult r = run("scale-across-a2a", GetParam(), set);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.flows.size(), 56u);
  EXPECT_GE(r.data_packets_delivered, packets_needed(r, s.mtu));
  const auto& t = s.network.topology;
  std::size_t across = 0;
  for (const Flow& f : r.flows) {
    ASSERT_TRUE(f.done() && !f.failed);
    const bool crosses = (f.src() < 4) != (f.dst() < 4);
    across += crosses;
    const SimTime fct = f.end - f.start;
    EXPECT_GT(fct, serialization(f.bytes, t.host_rate_bps) + 4 * t.host_delay);
    if (crosses) {
      EXPECT_GT(fct, 2 * t.long_haul_delay);
    }
  }
  EXPECT_EQ(across, 32u);
}

// KV-cache: 4 readers on a k=4 fat-tree, each READ from 6 storage hosts at once, mixed
// sizes. Every READ completes no sooner than its floor (request and response each cross
// two host links at least, the response serialized at the host rate), and the readers
// are incast targets at the same time.
TEST_P(Roadmap, KvCacheCompletesAboveTheFloor) {
  const std::vector<std::string> set = {"topology.k=4", "workload.0.readers=4",
                                        "workload.0.fanout=6", "workload.0.messages=2"};
  const Scenario s = load_scenario("kv-cache", set);
  const RunResult r = run("kv-cache", GetParam(), set);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.flows.size(), 4u * 6 * 2);
  EXPECT_GE(r.data_packets_delivered, packets_needed(r, s.mtu));
  const auto& t = s.network.topology;
  std::set<std::uint32_t> readers;
  std::set<std::uint64_t> sizes;
  SimTime first_end = kSimNever, last_start = 0;
  for (const Flow& f : r.flows) {
    ASSERT_TRUE(f.done() && !f.failed);
    EXPECT_EQ(f.op, WrOpcode::kRdmaRead);
    readers.insert(f.initiator);
    sizes.insert(f.bytes);
    EXPECT_GT(f.end - f.start, serialization(f.bytes, t.host_rate_bps) + 4 * t.host_delay);
    first_end = std::min(first_end, f.end);
    last_start = std::max(last_start, f.start);
  }
  EXPECT_EQ(readers.size(), 4u);
  EXPECT_GE(sizes.size(), 2u);       // mixed sizes drawn
  EXPECT_LT(last_start, first_end);  // every reader's fan-out at once
}

INSTANTIATE_TEST_SUITE_P(Transports, Roadmap, ::testing::Values("mroce", "roce"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace mroce::sim
