#include <gtest/gtest.h>

#include "sim_test_util.h"

namespace mroce::sim::testing {
namespace {

std::string two_planes(const std::string& failure) {
  return std::string(kSmallFabric) +
         "planes = 2\n[transport.gbn]\nrto = \"50us\"\n[[workload]]\nkind = \"permutation\"\n"
         "bytes = \"4MiB\"\n" +
         failure;
}

TEST(Failure, SilentPlaneFailureBlackHolesUntilRecovery) {
  RunResult r = run_toml(two_planes(
      "[[failure]]\ntarget = \"plane\"\nplane = 1\nat = \"50us\"\nrecover = \"400us\"\n"));
  EXPECT_TRUE(r.complete);  // go-back-N waits out the hole, then recovers
  EXPECT_GT(r.drops[DropCause::kBlackHole], 0u);
  EXPECT_EQ(r.drops[DropCause::kLinkDown], 0u);
  ASSERT_EQ(r.failures.size(), 2u);
  EXPECT_EQ(r.failures[0].time, 50 * kUs);
  EXPECT_EQ(r.failures[1].time, 400 * kUs);
}

TEST(Failure, SilentSwitchFailureStallsTheSinglePathFlowsThroughIt) {
  RunResult healthy = run_toml(two_planes(""), {"stop=3ms"});
  RunResult failed = run_toml(
      two_planes("[[failure]]\ntarget = \"switch\"\nnode = \"spine2\"\nplane = 0\n"), {"stop=3ms"});
  EXPECT_TRUE(healthy.complete);
  EXPECT_EQ(healthy.drops[DropCause::kBlackHole], 0u);
  // Routing never learns of a silent failure: flows hashed through spine2 are stuck,
  // the others finish.
  EXPECT_GT(failed.drops[DropCause::kBlackHole], 0u);
  EXPECT_FALSE(failed.complete);
  EXPECT_GT(failed.workloads[0].completed, 0u);
}

TEST(Failure, VisibleLinkFailureReroutesAroundIt) {
  const std::string f =
      "[[failure]]\ntarget = \"link\"\nnode = \"leaf0\"\npeer = \"spine1\"\nmode = "
      "\"visible\"\nat = \"0us\"\n";
  RunResult r = run_toml(two_planes(f));
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.drops[DropCause::kBlackHole], 0u);
  EXPECT_EQ(r.drops[DropCause::kNoRoute], 0u);
  // It failed before any traffic and routing converged at once: nothing is lost.
  EXPECT_EQ(r.drops[DropCause::kLinkDown], 0u);
  ASSERT_EQ(r.failures.size(), 2u);  // down, then routes recomputed
}

TEST(Failure, RerouteDelayBlackHolesUntilRoutingConverges) {
  const std::string f =
      "[[failure]]\ntarget = \"link\"\nnode = \"leaf0\"\npeer = \"spine1\"\nmode = "
      "\"visible\"\nat = \"20us\"\nreroute_delay = \"100us\"\n";
  RunResult r = run_toml(two_planes(f));
  EXPECT_TRUE(r.complete);
  EXPECT_GT(r.drops[DropCause::kLinkDown], 0u);
  ASSERT_EQ(r.failures.size(), 2u);
  EXPECT_EQ(r.failures[1].time, 120 * kUs);
}

TEST(Failure, ScriptedFailuresActOnEveryPartitionAtTheirTime) {
  // Failures and route changes run between windows, when no partition runs: the same
  // log, the same kinds of loss, the same outcome as on one partition.
  const std::string silent =
      "[[failure]]\ntarget = \"plane\"\nplane = 1\nat = \"50us\"\nrecover = \"400us\"\n";
  const std::string visible =
      "[[failure]]\ntarget = \"link\"\nnode = \"leaf0\"\npeer = \"spine1\"\nmode = "
      "\"visible\"\nat = \"20us\"\nreroute_delay = \"100us\"\n";
  for (const std::string& f : {silent, visible}) {
    RunResult one = run_toml(two_planes(f));
    RunResult two = run_toml(two_planes(f), {"partitions=2"});
    ASSERT_TRUE(two.complete) << f;
    ASSERT_EQ(two.failures.size(), one.failures.size()) << f;
    for (std::size_t i = 0; i < one.failures.size(); ++i) {
      EXPECT_EQ(two.failures[i].time, one.failures[i].time) << f;
      EXPECT_EQ(two.failures[i].what, one.failures[i].what) << f;
    }
    for (DropCause c : {DropCause::kBlackHole, DropCause::kLinkDown}) {
      EXPECT_EQ(two.drops[c] > 0, one.drops[c] > 0) << f << to_string(c);
    }
    EXPECT_NEAR(double(two.fct.max), double(one.fct.max), 0.1 * double(one.fct.max)) << f;
  }
}

TEST(Failure, UnknownSwitchIsAConfigError) {
  EXPECT_THROW(run_toml(two_planes("[[failure]]\ntarget = \"switch\"\nnode = \"spine99\"\n")),
               ConfigError);
  EXPECT_THROW(run_toml(two_planes("[[failure]]\ntarget = \"plane\"\nplane = 2\n")), ConfigError);
}

}  // namespace
}  // namespace mroce::sim::testing
