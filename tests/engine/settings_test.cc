// The engine's settings table and MROCE_ENGINE's parser: every setting takes its range
// and nothing else, with the same one-line error.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "baseline/settings.h"
#include "core/settings.h"

namespace mroce {
namespace {

std::string env_key(const Setting& s) {
  return std::string(s.name) + std::string(env_suffix(s.unit));
}

// A value in MROCE_ENGINE's unit for the setting (ratios: as they are).
std::string env_text(const Setting& s, double stored) {
  if (s.unit == SettingUnit::kRatio) return std::to_string(stored);
  return std::to_string(static_cast<std::uint64_t>(stored / env_scale(s.unit)));
}

class EngineSetting : public ::testing::TestWithParam<Setting> {};

TEST_P(EngineSetting, DefaultIsTheConfigsAndWithinRange) {
  const Setting& s = GetParam();
  EXPECT_EQ(s.get(EngineConfig{}), s.def);
  EXPECT_LE(s.min, s.def);
  EXPECT_LE(s.def, s.max);
  EXPECT_LT(s.max, std::ldexp(1.0, 53)) << "not exact in a double";
}

TEST_P(EngineSetting, OverrideTakesItsLimits) {
  const Setting& s = GetParam();
  for (double stored : {s.min, s.max}) {
    // Limits in the environment's unit, rounded into the range.
    const double scale = env_scale(s.unit);
    const double v = s.unit == SettingUnit::kRatio ? stored
                                                   : (stored == s.min ? std::ceil(stored / scale)
                                                                      : std::floor(stored / scale));
    EngineConfig c;
    c.min_rto = kMicrosecond;  // keep min_rto <= max_rto and probe_interval <= max
    c.probe_interval = kMicrosecond;
    c.max_rto = c.max_probe_interval = 60 * kSecond;
    const std::string text =
        s.unit == SettingUnit::kRatio ? std::to_string(v) : std::to_string(std::uint64_t(v));
    std::string error;
    EXPECT_TRUE(apply_engine_overrides(env_key(s) + "=" + text, &c, &error)) << error;
    if (s.unit == SettingUnit::kRatio) {
      EXPECT_NEAR(s.get(c), v, 1e-9);
    } else {
      EXPECT_EQ(s.get(c), v * scale);
    }
  }
}

TEST_P(EngineSetting, OverrideRefusesZeroNegativeNanHugeAndWords) {
  const Setting& s = GetParam();
  std::vector<std::string> bad = {
      "-1",   "nan", "inf",   "-nan", "1e400", "99999999999999999999999",
      "oops", "",    "12abc", "0x10", "+5"};
  if (s.min > 0) bad.push_back(s.unit == SettingUnit::kRatio ? "0" : env_text(s, 0));
  // One step past the maximum in the environment's unit.
  bad.push_back(s.unit == SettingUnit::kRatio ? "1.5" : env_text(s, s.max + env_scale(s.unit)));
  if (s.unit != SettingUnit::kRatio) bad.push_back("1.5");
  for (const std::string& value : bad) {
    EngineConfig c;
    const EngineConfig before = c;
    std::string error;
    const std::string item = env_key(s) + "=" + value;
    EXPECT_FALSE(apply_engine_overrides(item, &c, &error)) << item;
    EXPECT_EQ(error.rfind("MROCE_ENGINE: " + item + ": must be ", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
    EXPECT_EQ(s.get(c), s.get(before)) << item << " changed the config although refused";
  }
}

TEST_P(EngineSetting, SimulatorFormsCheckTheSameRange) {
  const Setting& s = GetParam();
  std::string error;
  EXPECT_TRUE(check_setting(s, s.def, "k", "v", &error)) << error;
  for (double v : {s.min - 1, s.max * 2 + 1, double(NAN), double(INFINITY), -double(INFINITY)}) {
    EXPECT_FALSE(check_setting(s, v, "transport.mroce.k", "x", &error)) << v;
    EXPECT_EQ(error, "transport.mroce.k=x: must be " + range_text(s));
  }
}

INSTANTIATE_TEST_SUITE_P(Table, EngineSetting, ::testing::ValuesIn(kEngineSettings),
                         [](const ::testing::TestParamInfo<Setting>& info) {
                           return std::string(info.param.name);
                         });

TEST(EngineSettings, TheIssuesCasesAreRefused) {
  for (const char* item : {"initial_window_kb=0", "max_rto_us=0", "min_rto_us=-1"}) {
    EngineConfig c;
    std::string error;
    EXPECT_FALSE(apply_engine_overrides(item, &c, &error)) << item;
  }
  EngineConfig c;
  std::string error;
  EXPECT_FALSE(apply_engine_overrides("initial_window_kb=0", &c, &error));
  EXPECT_EQ(error, "MROCE_ENGINE: initial_window_kb=0: must be 1..65536");
}

TEST(EngineSettings, SeveralItemsApplyTogetherOrNotAtAll) {
  EngineConfig c;
  std::string error;
  ASSERT_TRUE(
      apply_engine_overrides("min_rto_us=500, ack_every=4,,initial_window_kb=64", &c, &error))
      << error;
  EXPECT_EQ(c.min_rto, 500 * kMicrosecond);
  EXPECT_EQ(c.ack_every, 4u);
  EXPECT_EQ(c.initial_window_bytes, 64u * 1024);
  EngineConfig d;
  EXPECT_FALSE(apply_engine_overrides("ack_every=4,paths=0", &d, &error));
  EXPECT_EQ(d.ack_every, EngineConfig{}.ack_every);
  EXPECT_FALSE(apply_engine_overrides("warp=9", &d, &error));
  EXPECT_EQ(error, "MROCE_ENGINE: unknown key 'warp'");
  EXPECT_FALSE(apply_engine_overrides("paths", &d, &error));
}

TEST(EngineSettings, TimersThatMustAgreeAreChecked) {
  EngineConfig c;
  std::string error;
  EXPECT_FALSE(apply_engine_overrides("max_rto_us=500", &c, &error));  // below min_rto 1 ms
  EXPECT_EQ(error, "MROCE_ENGINE: min_rto (1ms) is above max_rto (500us)");
  EXPECT_FALSE(apply_engine_overrides("probe_interval_us=200000", &c, &error));
  EXPECT_TRUE(apply_engine_overrides("max_rto_us=500,min_rto_us=400", &c, &error)) << error;
}

TEST(EngineSettings, TheStackPageListsEveryRowAsTheTableSays) {
  std::ifstream f(std::string(MROCE_SOURCE_DIR) + "/docs/STACK.md");
  std::stringstream page;
  page << f.rdbuf();
  ASSERT_FALSE(page.str().empty());
  for (const Setting& s : kEngineSettings) {
    const std::string row = "| `" + std::string(s.name) + "` | `" + env_key(s) + "` | " +
                            format_value(s.unit, s.def) + " | " + range_text(s) + " | " +
                            std::string(s.meaning) + " |";
    EXPECT_NE(page.str().find(row), std::string::npos) << "docs/STACK.md lacks " << row;
  }
}

TEST(EngineSettings, TheSimulatorPageListsEveryRoceRowAsTheTableSays) {
  std::ifstream f(std::string(MROCE_SOURCE_DIR) + "/docs/SIMULATOR.md");
  std::stringstream page;
  page << f.rdbuf();
  ASSERT_FALSE(page.str().empty());
  for (const baseline::RoceSetting& s : baseline::roce_settings()) {
    EXPECT_LE(s.min, s.def);
    EXPECT_LE(s.def, s.max);
    EXPECT_EQ(s.get(baseline::RoceConfig{}), s.def);
    const std::string row = "| `" + std::string(s.name) + "` | " + format_value(s.unit, s.def) +
                            " | " + range_text(s) + " | " + std::string(s.meaning) + " |";
    EXPECT_NE(page.str().find(row), std::string::npos) << "docs/SIMULATOR.md lacks " << row;
  }
}

TEST(EngineSettings, ValuesAreWrittenInTheSimulatorsForms) {
  EXPECT_EQ(format_value(SettingUnit::kBytes, 256 * 1024), "256KiB");
  EXPECT_EQ(format_value(SettingUnit::kBytes, 1500), "1500");
  EXPECT_EQ(format_value(SettingUnit::kBytes, 10'000'000), "10000000");
  EXPECT_EQ(format_value(SettingUnit::kBytes, double(1ull << 40)), "1024GiB");
  EXPECT_EQ(format_value(SettingUnit::kTime, 20 * kMicrosecond), "20us");
  EXPECT_EQ(format_value(SettingUnit::kTime, 1500), "1500ns");
  EXPECT_EQ(format_value(SettingUnit::kTime, 10 * kSecond), "10s");
  EXPECT_EQ(format_value(SettingUnit::kRate, 100e9), "100Gbps");
  EXPECT_EQ(format_value(SettingUnit::kRatio, 0.0625), "0.0625");
}

}  // namespace
}  // namespace mroce
