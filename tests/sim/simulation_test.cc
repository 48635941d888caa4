#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "sim/report.h"
#include "sim_test_util.h"

namespace mroce::sim::testing {
namespace {

// The JSON report without the fields that describe the simulator process itself.
nlohmann::json simulated(const Scenario& s, const RunResult& r) {
  auto j = nlohmann::json::parse(to_json(s, {r}));
  for (auto& run : j["runs"]) run.erase("simulator");
  return j;
}

const char* kLossy = R"(
seed = 7
[topology]
kind = "fat_tree"
k = 4
[loss]
rate = 0.01
scope = "all"
[transport.gbn]
rto = "40us"
[output]
sample_interval = "5us"
[[workload]]
kind = "permutation"
bytes = "1MiB"
jitter = "3us"
)";

TEST(Simulation, SameSeedSameResultsBitForBit) {
  const Scenario s = parse_scenario(kLossy, "lossy");
  RunResult a = run_scenario(s);
  RunResult b = run_scenario(s);
  ASSERT_TRUE(a.complete);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.sim_time, b.sim_time);
  EXPECT_EQ(simulated(s, a).dump(), simulated(s, b).dump());
  // Every flow time, to the picosecond.
  ASSERT_EQ(a.flows.size(), b.flows.size());
  for (std::size_t i = 0; i < a.flows.size(); ++i) EXPECT_EQ(a.flows[i].end, b.flows[i].end);
}

TEST(Simulation, AnotherSeedGivesAnotherRun) {
  RunResult a = run_scenario(parse_scenario(kLossy, "lossy"));
  RunResult b = run_scenario(parse_scenario(kLossy, "lossy", {"seed=8"}));
  EXPECT_NE(a.sim_time, b.sim_time);
}

TEST(Simulation, RandomLossRateIsWhatWasAsked) {
  RunResult r = run_scenario(parse_scenario(kLossy, "lossy", {"loss.rate=0.05"}));
  ASSERT_TRUE(r.complete);
  // Every link is lossy ("all"): losses over transmissions estimate the rate.
  std::uint64_t tx = 0;
  for (const auto& c : r.link_classes) tx += c.tx_packets;
  const double lost = static_cast<double>(r.drops[DropCause::kRandomLoss]);
  const double n = static_cast<double>(tx);
  EXPECT_NEAR(lost / n, 0.05, 5 * std::sqrt(0.05 * 0.95 / n));
  EXPECT_GT(r.transport_totals.tx_retransmits, 0u);
}

TEST(Simulation, SmokeScenarioCompletesWithoutLossOrFailures) {
  RunResult r = run_scenario(load_scenario("smoke"));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.workloads[0].completed, 16u);
  EXPECT_EQ(r.drops[DropCause::kRandomLoss] + r.drops[DropCause::kBlackHole], 0u);
  EXPECT_GT(r.workloads[0].goodput_gbps, 100);
  EXPECT_FALSE(r.samples.empty());
  EXPECT_FALSE(r.path_samples.empty());  // gbn reports one path per stream
}

TEST(Simulation, ARunOverTwoPartitionsIsBitForBitRepeatable) {
  const Scenario s = parse_scenario(kLossy, "lossy", {"partitions=2"});
  RunResult a = run_scenario(s);
  RunResult b = run_scenario(s);
  ASSERT_TRUE(a.complete);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(simulated(s, a).dump(), simulated(s, b).dump());
}

TEST(Simulation, ARunOverPartitionsDoesTheWorkOfOne) {
  // Lossless, so that every flow's bytes cross once; the runs differ only in the order
  // of events of the same picosecond.
  const std::vector<std::string> lossless = {"loss.rate=0"};
  RunResult one = run_scenario(parse_scenario(kLossy, "lossless", lossless));
  for (const char* n : {"partitions=2", "partitions=4"}) {
    std::vector<std::string> o = lossless;
    o.push_back(n);
    RunResult r = run_scenario(parse_scenario(kLossy, "lossless", o));
    ASSERT_TRUE(r.complete) << n;
    EXPECT_EQ(r.workloads[0].completed, one.workloads[0].completed) << n;
    EXPECT_EQ(r.payload_bytes_delivered, one.payload_bytes_delivered) << n;
    EXPECT_EQ(r.drops.total(), one.drops.total()) << n;
    EXPECT_NEAR(static_cast<double>(r.fct.mean), static_cast<double>(one.fct.mean),
                0.02 * static_cast<double>(one.fct.mean))
        << n;
    EXPECT_NEAR(static_cast<double>(r.events), static_cast<double>(one.events),
                0.01 * static_cast<double>(one.events))
        << n;
    EXPECT_FALSE(r.samples.empty()) << n;
  }
}

TEST(Simulation, PfcPausesCrossPartitions) {
  // An incast under PFC: the receiver's leaf pauses the spines, which are split across
  // partitions, and they pause the senders' leaves in turn.
  const std::string incast = std::string(kSmallFabric) + R"(
[pfc]
mode = "on"
[[workload]]
kind = "incast"
receiver = 0
senders = 15
bytes = "256KiB"
)";
  RunResult one = run_toml(incast);
  RunResult two = run_toml(incast, {"partitions=2"});
  ASSERT_TRUE(two.complete);
  EXPECT_EQ(two.drops.total(), 0u);  // lossless
  EXPECT_GT(two.pause_frames, 0u);
  EXPECT_NEAR(double(two.pause_frames), double(one.pause_frames), 0.1 * double(one.pause_frames));
  EXPECT_NEAR(double(two.fct.max), double(one.fct.max), 0.02 * double(one.fct.max));
}

TEST(Simulation, ARingAllReduceRunsOverPartitions) {
  // A rank's next step waits on its own receive, so each step starts in the partition
  // of the host that sends it; the iteration ends when the last rank, anywhere, is done.
  const std::string ring = std::string(kSmallFabric) + R"(
[[workload]]
kind = "ring_allreduce"
bytes = "1MiB"
op = "send"
iterations = 2
)";
  RunResult one = run_toml(ring);
  RunResult two = run_toml(ring, {"partitions=2"});
  ASSERT_TRUE(two.complete);
  ASSERT_EQ(two.workloads[0].iteration_times.size(), 2u);
  ASSERT_EQ(one.workloads[0].iteration_times.size(), 2u);
  EXPECT_LT(two.workloads[0].iteration_times[0], two.workloads[0].iteration_times[1]);
  EXPECT_NEAR(two.workloads[0].algbw_gbps, one.workloads[0].algbw_gbps,
              0.02 * one.workloads[0].algbw_gbps);
}

TEST(Simulation, PartitionsNeedLinksWithDelayAndALeafEach) {
  const auto refused = [](const std::vector<std::string>& o, const std::string& why) {
    try {
      run_scenario(parse_scenario(kLossy, "test", o));
      ADD_FAILURE() << "accepted: " << why;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  refused({"partitions=2", "topology.link_delay=\"0ns\""}, "no delay");
  refused({"partitions=9"}, "8 leaves");
  refused({"partitions=0"}, "partitions");
}

TEST(Simulation, EveryNamedScenarioParsesAndBuilds) {
  for (const auto& named : builtin_scenarios()) {
    const Scenario s = load_scenario(named.name);
    EXPECT_FALSE(s.workloads.empty()) << named.name;
    EXPECT_NO_THROW(resolve_network(s, *test_transports().find("gbn"))) << named.name;
  }
}

}  // namespace
}  // namespace mroce::sim::testing
