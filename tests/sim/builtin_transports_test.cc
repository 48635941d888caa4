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

}  // namespace
}  // namespace mroce::sim
