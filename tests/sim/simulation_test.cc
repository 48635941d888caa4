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

TEST(Simulation, EveryNamedScenarioParsesAndBuilds) {
  for (const auto& named : builtin_scenarios()) {
    const Scenario s = load_scenario(named.name);
    EXPECT_FALSE(s.workloads.empty()) << named.name;
    EXPECT_NO_THROW(resolve_network(s, *test_transports().find("gbn"))) << named.name;
  }
}

}  // namespace
}  // namespace mroce::sim::testing
