// The real engines, as mroce-sim registers them, on a small fabric.
#include <gtest/gtest.h>

#include <cmath>

#include "core/settings.h"
#ifdef MROCE_SIM_HAVE_BASELINE
#include "baseline/settings.h"
#endif
#include "sim/errors.h"
#include "sim/simulation.h"
#include "transports.h"

namespace mroce::sim {
namespace {

const TransportInfo* builtin(const std::string& name) {
  static const TransportRegistry registry = [] {
    TransportRegistry r;
    register_builtin_transports(r);
    return r;
  }();
  return registry.find(name);
}

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

TEST(BuiltinTransports, MetaRoceSettingsOutOfRangeAreRefusedWithOneLine) {
  const TransportInfo* mroce = builtin("mroce");
  ASSERT_NE(mroce, nullptr);
  const std::vector<Params::Value> bad = {std::int64_t{-1}, std::int64_t{1} << 62, double(NAN),
                                          double(INFINITY), std::string("oops"),   1e300};
  for (const Setting& s : engine_settings()) {
    const std::string key(s.name);
    std::vector<Params::Value> values = bad;
    // 0 is refused unless it is in range or asks the simulator to derive the value.
    const bool zero_ok = s.min == 0 || key == "mss" || key == "line_rate" || key == "initial_rtt" ||
                         key == "connect_retry";
    if (!zero_ok) values.push_back(std::int64_t{0});
    for (const Params::Value& v : values) {
      Params p("transport.mroce");
      p.set(key, v);
      try {
        mroce->configure(p);
        ADD_FAILURE() << key << " took a bad value";
      } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind("transport.mroce." + key + "=", 0), 0u) << what;
        EXPECT_NE(what.find(": must be " + range_text(s)), std::string::npos) << what;
      }
    }
    Params p("transport.mroce");
    p.set(key, s.unit == SettingUnit::kRatio ? Params::Value{s.max}
                                             : Params::Value{std::int64_t(s.max)});
    if (s.unit == SettingUnit::kRate) p.set(key, std::string(format_value(s.unit, s.max)));
    if (key == "min_rto") p.set("max_rto", std::string("60s"));
    if (key == "probe_interval") p.set("max_probe_interval", std::string("60s"));
    EXPECT_NO_THROW(mroce->configure(p)) << key << " refused its maximum";
  }
}

#ifdef MROCE_SIM_HAVE_BASELINE
TEST(BuiltinTransports, RoceSettingsOutOfRangeAreRefusedWithOneLine) {
  const TransportInfo* roce = builtin("roce");
  ASSERT_NE(roce, nullptr);
  for (const baseline::RoceSetting& s : baseline::roce_settings()) {
    const std::string key(s.name);
    std::vector<Params::Value> values = {std::int64_t{-1}, std::int64_t{1} << 62, double(NAN),
                                         std::string("oops")};
    if (s.min > 0 && key != "mtu" && key != "line_rate") values.push_back(std::int64_t{0});
    for (const Params::Value& v : values) {
      Params p("transport.roce");
      p.set(key, v);
      try {
        roce->configure(p);
        ADD_FAILURE() << key << " took a bad value";
      } catch (const ConfigError& e) {
        EXPECT_EQ(std::string(e.what()), "transport.roce." + key + "=" + Params::describe(v) +
                                             ": must be " + range_text(s));
      }
    }
  }
}
#endif

TEST(BuiltinTransports, MetaRoceRetriesALostSetUpWithinTenFabricRoundTrips) {
  // The whole fabric drops everything for the first 20 us, so every set-up pair is
  // lost. The simulator's retry interval is ten base round trips of the fabric (about
  // 60 us here), not the engine's 1 ms, unless the scenario sets one.
  const TransportInfo* mroce = builtin("mroce");
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

TEST(BuiltinTransports, MetaRoceRunsOverTwoPartitionsAsOverOne) {
  // Every packet between the two leaves changes partition (and pool) at a spine: the
  // engine decodes each header after its copy, so a damaged one would be counted as
  // malformed or as naming something that does not exist.
  const TransportInfo* mroce = builtin("mroce");
  ASSERT_NE(mroce, nullptr);
  const auto run = [&](const char* partitions) {
    Simulation sim(load_scenario("smoke", {"workload.0.bytes=\"2MiB\"", partitions}), *mroce);
    return sim.run();
  };
  const RunResult one = run("partitions=1");
  const RunResult two = run("partitions=2");
  ASSERT_TRUE(two.complete);
  EXPECT_EQ(two.workloads[0].completed, 16u);
  EXPECT_GE(two.payload_bytes_delivered, 16u * 2 * 1024 * 1024);
  for (DropReason d : {DropReason::kMalformed, DropReason::kUnknownConn, DropReason::kBadToken,
                       DropReason::kBadStream, DropReason::kBadKey, DropReason::kOutOfRange,
                       DropReason::kBadAck, DropReason::kWrongPeer}) {
    EXPECT_EQ(two.transport_totals.drops[static_cast<int>(d)], 0u) << to_string(d);
  }
  // The same work, in a different order of simultaneous events: the 16 flows of this
  // permutation meet at the leaves' queues, so drops and retransmissions differ a little.
  EXPECT_NEAR(double(two.fct.max), double(one.fct.max), 0.05 * double(one.fct.max));
  EXPECT_NEAR(double(two.transport_totals.tx_data_packets),
              double(one.transport_totals.tx_data_packets),
              0.02 * double(one.transport_totals.tx_data_packets));
}

}  // namespace
}  // namespace mroce::sim
