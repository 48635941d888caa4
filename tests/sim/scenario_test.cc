#include "sim/scenario.h"

#include <gtest/gtest.h>

#include "sim/errors.h"
#include "sim/units.h"

namespace mroce::sim {
namespace {

const char* kBase = R"(
name = "t"
[topology]
kind = "leaf_spine"
hosts = 8
hosts_per_leaf = 4
[[workload]]
kind = "permutation"
bytes = "32MB"
)";

// The message of the ConfigError that parsing throws, or "" if none.
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_scenario(text, "file.toml", overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Scenario, ReadsKvCacheAndLongHaulKeys) {
  const std::vector<std::string> kv = {"workload.0.kind=kv_cache", "workload.0.readers=2",
                                       "workload.0.fanout=3", "workload.0.sizes=\"16KiB, 1MiB\""};
  Scenario s = parse_scenario(kBase, "file.toml", kv);
  ASSERT_EQ(s.workloads.size(), 1u);
  EXPECT_EQ(s.workloads[0].kind, WorkloadKind::kKvCache);
  EXPECT_EQ(s.workloads[0].op, WrOpcode::kRdmaRead);  // kv_cache reads unless told
  EXPECT_EQ(s.workloads[0].sizes, (std::vector<std::uint64_t>{16384, 1 << 20}));
  EXPECT_NE(error_of(kBase, {"workload.0.kind=kv_cache", "workload.0.readers=2",
                             "workload.0.fanout=3", "workload.0.sizes=\"16KiB, lots\""}),
            "");
  EXPECT_NE(error_of(kBase, {"workload.0.kind=kv_cache", "workload.0.readers=2"}), "");
  EXPECT_NE(error_of(kBase, {"workload.0.sizes=\"16KiB\""}), "");  // not kv_cache
  s = parse_scenario(kBase, "file.toml",
                     {"topology.data_centers=2", "topology.long_haul_delay=\"5ms\"",
                      "topology.long_haul_rate=\"800Gbps\"", "queue.long_haul_bytes=\"1GB\""});
  EXPECT_EQ(s.network.topology.data_centers, 2u);
  EXPECT_EQ(s.network.topology.long_haul_delay, 5 * kMs);
  EXPECT_EQ(s.network.topology.long_haul_rate_bps, 800'000'000'000u);
  EXPECT_EQ(s.long_haul_queue_bytes, 1'000'000'000u);
  EXPECT_NE(error_of(kBase, {"topology.data_centers=3"}), "");
}

TEST(Units, ParseSizesTimesAndRates) {
  EXPECT_EQ(parse_bytes("32MB"), 32'000'000u);
  EXPECT_EQ(parse_bytes("4 KiB"), 4096u);
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536u);
  EXPECT_EQ(parse_bytes("100"), 100u);
  EXPECT_FALSE(parse_bytes("1.3B"));
  EXPECT_FALSE(parse_bytes("12 parsecs"));
  EXPECT_EQ(parse_time("1.5us"), 1'500'000u);
  EXPECT_EQ(parse_time("2ms"), 2 * kMs);
  EXPECT_FALSE(parse_time("10"));  // a unit is required in text
  EXPECT_EQ(parse_rate("400Gbps"), 400'000'000'000u);
  EXPECT_EQ(parse_rate("25"), 25'000'000'000u);
  EXPECT_FALSE(parse_rate("fast"));
}

TEST(Scenario, ReadsAndOverrides) {
  Scenario s = parse_scenario(kBase, "file.toml",
                              {"topology.hosts=6", "workload.0.bytes=\"1MiB\"", "loss.rate=0.1",
                               "transport.name=gbn", "transport.gbn.window=8"});
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.network.topology.kind, TopologyKind::kLeafSpine);
  EXPECT_EQ(s.network.topology.hosts, 6u);
  ASSERT_EQ(s.workloads.size(), 1u);
  EXPECT_EQ(s.workloads[0].bytes, 1u << 20);
  EXPECT_DOUBLE_EQ(s.network.loss_rate, 0.1);
  EXPECT_EQ(s.transport, "gbn");
  ASSERT_EQ(s.transport_settings.count("gbn"), 1u);
  EXPECT_EQ(s.transport_settings.at("gbn").get_uint("window", 0), 8u);
}

TEST(Scenario, RejectsUnknownKeysWrongTypesAndBadValues) {
  EXPECT_EQ(error_of(std::string(kBase) + "[queue]\nbdpp = 2\n"), "unknown key 'queue.bdpp'");
  EXPECT_EQ(error_of(kBase, {"topology.hots=3"}), "unknown key 'topology.hots'");
  EXPECT_EQ(
      error_of(kBase, {"topology.hosts=\"many\""}).rfind("topology.hosts=\"many\": must be ", 0),
      0u);
  EXPECT_EQ(error_of(kBase, {"loss.rate=2"}), "loss.rate=2: must be 0..1");
  EXPECT_EQ(error_of(kBase, {"loss.rate=nan"}), "loss.rate=nan: must be 0..1");
  EXPECT_EQ(error_of(kBase, {"loss.rate=-0.5"}), "loss.rate=-0.5: must be 0..1");
  EXPECT_NE(error_of(kBase, {"topology.kind=torus"}).find("expected one of fat_tree, leaf_spine"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"workload.0.bytes=\"12 parsecs\""}).find("expected a size"),
            std::string::npos);
  EXPECT_NE(error_of(kBase, {"workload.3.bytes=1"}).find("no element '3'"), std::string::npos);
  EXPECT_NE(error_of(kBase, {"nonsense"}).find("expected key=value"), std::string::npos);
  EXPECT_NE(error_of("name = \n").find("file.toml:1:"), std::string::npos);
  EXPECT_NE(error_of("name = \"x\"\n").find("nothing would end the run"), std::string::npos);
  EXPECT_NE(
      error_of(std::string(kBase) + "[[workload]]\nkind = \"ring_allreduce\"\nop = \"write\"\n")
          .find("ring_allreduce needs"),
      std::string::npos);
  EXPECT_NE(error_of(std::string(kBase) + "[[failure]]\ntarget = \"link\"\nnode = \"leaf0\"\n")
                .find("needs node and peer"),
            std::string::npos);
}

TEST(Scenario, NamedScenariosAndFiles) {
  EXPECT_NE(find_builtin("htsim-perm"), nullptr);
  Scenario s = load_scenario("htsim-perm");
  EXPECT_EQ(s.network.topology.k, 8u);
  EXPECT_EQ(s.workloads[0].bytes, 32'000'000u);
  EXPECT_THROW(load_scenario("/nonexistent/scenario.toml"), ConfigError);
}

}  // namespace
}  // namespace mroce::sim
