// The real engines, as mroce-sim registers them, on a small fabric.
#include <gtest/gtest.h>

#include "sim/simulation.h"
#include "transports.h"

namespace mroce::sim {
namespace {

TEST(BuiltinTransports, EachCompletesASmallPermutation) {
  TransportRegistry registry;
  register_builtin_transports(registry);
  ASSERT_FALSE(registry.all().empty()) << "mroce-sim was built without an engine";
  const Scenario s = load_scenario("smoke", {"workload.0.bytes=\"256KiB\"", "stop=\"50ms\""});
  for (const TransportInfo& t : registry.all()) {
    Simulation sim(s, t);
    RunResult r = sim.run();
    EXPECT_TRUE(r.complete) << t.name;
    EXPECT_EQ(r.workloads[0].completed, 16u) << t.name;
    EXPECT_GT(r.connections, 0u) << t.name;
    if (r.pfc) {
      EXPECT_EQ(r.drops.total(), 0u) << t.name;  // lossless
    }
  }
}

TEST(BuiltinTransports, MetaRoceRetriesALostSetUpWithinTenFabricRoundTrips) {
  // The whole fabric drops everything for the first 20 us, so every set-up pair is
  // lost. The simulator's retry interval is ten base round trips of the fabric (about
  // 60 us here), not the engine's 1 ms, unless the scenario sets one.
  TransportRegistry registry;
  register_builtin_transports(registry);
  const TransportInfo* mroce = nullptr;
  for (const TransportInfo& t : registry.all()) {
    if (t.name == "mroce") mroce = &t;
  }
  ASSERT_NE(mroce, nullptr);
  std::string text = find_builtin("smoke")->toml;
  text += "\n[[failure]]\ntarget = \"plane\"\nplane = 0\nat = \"0us\"\nrecover = \"20us\"\n";
  const auto slowest_flow_us = [&](std::vector<std::string> overrides) {
    overrides.push_back("stop=\"50ms\"");
    Simulation sim(parse_scenario(text, "smoke with a lost set-up", overrides), *mroce);
    const RunResult r = sim.run();
    EXPECT_TRUE(r.complete);
    return double(r.workloads[0].fct.max) / kUs;
  };
  EXPECT_LT(slowest_flow_us({}), 500);
  EXPECT_GT(slowest_flow_us({"transport.mroce.connect_retry=\"1ms\""}), 1000);
}

}  // namespace
}  // namespace mroce::sim
