#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim_test_util.h"

namespace mroce::sim::testing {
namespace {

TEST(Workload, RingAllReduceStepWaitsForThePreviousReceive) {
  RunResult r = run_toml(std::string(kSmallFabric) +
                         "[[workload]]\nkind = \"ring_allreduce\"\nhosts = 8\nbytes = \"1MiB\"\n"
                         "op = \"send\"\niterations = 2\n");
  ASSERT_TRUE(r.complete);
  const std::uint32_t ranks = 8, steps = 2 * (ranks - 1) * 2;
  ASSERT_EQ(r.flows.size(), ranks * steps);
  // flow(r, g) is index r * steps + g; it goes from rank r to rank r+1.
  auto flow = [&](std::uint32_t rank, std::uint32_t g) { return r.flows[rank * steps + g]; };
  for (std::uint32_t rank = 0; rank < ranks; ++rank) {
    EXPECT_EQ(flow(rank, 0).start, 0u);
    for (std::uint32_t g = 1; g < steps; ++g) {
      const Flow& f = flow(rank, g);
      const Flow& before = flow((rank + ranks - 1) % ranks, g - 1);
      EXPECT_EQ(f.initiator, rank);
      EXPECT_EQ(f.target, (rank + 1) % ranks);
      EXPECT_EQ(f.bytes, (1u << 20) / ranks);
      // Rank r sends step g the moment it has received step g-1.
      EXPECT_EQ(f.start, before.end) << rank << " " << g;
    }
  }
  const auto& w = r.workloads[0];
  ASSERT_EQ(w.iteration_times.size(), 2u);
  EXPECT_LT(w.iteration_times[0], w.iteration_times[1]);
  EXPECT_GT(w.algbw_gbps, 0);
  EXPECT_NEAR(w.busbw_gbps, w.algbw_gbps * 2 * 7 / 8, 1e-9);
}

TEST(Workload, PermutationIsADerangement) {
  RunResult r = run_toml(std::string(kSmallFabric) +
                         "[[workload]]\nkind = \"permutation\"\nbytes = \"64KiB\"\n");
  ASSERT_TRUE(r.complete);
  std::set<std::uint32_t> src, dst;
  for (const Flow& f : r.flows) {
    EXPECT_NE(f.initiator, f.target);
    src.insert(f.initiator);
    dst.insert(f.target);
  }
  EXPECT_EQ(src.size(), 16u);
  EXPECT_EQ(dst.size(), 16u);
}

TEST(Workload, AllToAllIncastAndReads) {
  RunResult a2a = run_toml(std::string(kSmallFabric) +
                           "[[workload]]\nkind = \"all_to_all\"\nhosts = 6\nbytes = \"16KiB\"\n"
                           "messages = 2\n");
  ASSERT_TRUE(a2a.complete);
  EXPECT_EQ(a2a.flows.size(), 6u * 5u * 2u);
  EXPECT_GT(a2a.workloads[0].algbw_gbps, 0);

  RunResult reads = run_toml(std::string(kSmallFabric) +
                             "[[workload]]\nkind = \"incast\"\nreceiver = 3\nsenders = 12\n"
                             "bytes = \"100KB\"\nop = \"read\"\n");
  ASSERT_TRUE(reads.complete);
  ASSERT_EQ(reads.flows.size(), 12u);
  for (const Flow& f : reads.flows) {
    EXPECT_EQ(f.dst(), 3u);  // data flows to the reader
    EXPECT_EQ(f.initiator, 3u);
    EXPECT_NE(f.src(), 3u);
  }
  // Every byte read arrived at host 3 as payload.
  EXPECT_GE(reads.payload_bytes_delivered, 12u * 100'000u);
}

TEST(Workload, SparseAllToAllSendsToAndHearsFromPeersHostsEach) {
  RunResult r = run_toml(std::string(kSmallFabric) +
                         "[[workload]]\nkind = \"all_to_all\"\npeers = 3\nbytes = \"16KiB\"\n");
  ASSERT_TRUE(r.complete);
  ASSERT_EQ(r.flows.size(), 16u * 3u);
  std::map<std::uint32_t, std::set<std::uint32_t>> to, from;
  for (const Flow& f : r.flows) {
    EXPECT_NE(f.initiator, f.target);
    to[f.initiator].insert(f.target);
    from[f.target].insert(f.initiator);
  }
  ASSERT_EQ(to.size(), 16u);
  for (const auto& [host, peers] : to) EXPECT_EQ(peers.size(), 3u) << host;
  for (const auto& [host, peers] : from) EXPECT_EQ(peers.size(), 3u) << host;
  // Spread over the fabric, not only the neighbours: host 0 reaches past its leaf.
  EXPECT_GT(*to[0].rbegin(), 8u);
  EXPECT_THROW(
      run_toml(std::string(kSmallFabric) + "[[workload]]\nkind = \"all_to_all\"\npeers = 16\n"),
      ConfigError);
}

TEST(Workload, MixRunsSeveralWorkloadsAndStartsAtTheirTimes) {
  RunResult r = run_toml(std::string(kSmallFabric) +
                         "[[workload]]\nkind = \"permutation\"\nbytes = \"256KiB\"\n"
                         "[[workload]]\nname = \"late\"\nkind = \"incast\"\nreceiver = 5\n"
                         "senders = 4\nbytes = \"64KiB\"\nop = \"send\"\nstart = \"100us\"\n"
                         "jitter = \"10us\"\n");
  ASSERT_TRUE(r.complete);
  ASSERT_EQ(r.workloads.size(), 2u);
  EXPECT_EQ(r.workloads[1].name, "late");
  for (const Flow& f : r.flows) {
    if (f.workload != 1) continue;
    EXPECT_GE(f.start, 100 * kUs);
    EXPECT_LT(f.start, 110 * kUs);
  }
}

TEST(Workload, TooFewHostsIsAConfigError) {
  EXPECT_THROW(
      run_toml(std::string(kSmallFabric) + "[[workload]]\nkind = \"incast\"\nsenders = 16\n"),
      ConfigError);
  EXPECT_THROW(
      run_toml(std::string(kSmallFabric) + "[[workload]]\nkind = \"permutation\"\nhosts = 17\n"),
      ConfigError);
}

}  // namespace
}  // namespace mroce::sim::testing
