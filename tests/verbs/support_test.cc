// The Verbs layer's own pieces without the ABI: QPN addressing and its settings.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "verbs/hw_counters.h"
#include "verbs/port_slot.h"
#include "verbs/qpn.h"
#include "verbs/settings.h"

namespace mroce::verbs {
namespace {

TEST(Qpn, RoundTripsSlotAndStream) {
  for (int slot : {0, 1, 17, kMaxSlots - 1}) {
    for (StreamId stream : {1u, 2u, 300u, kMaxStream}) {
      const std::uint32_t qpn = encode_qpn(slot, stream);
      EXPECT_LE(qpn, 0xffffffu);
      EXPECT_GT(qpn, 1u);
      auto parts = decode_qpn(qpn);
      ASSERT_TRUE(parts.has_value());
      EXPECT_EQ(parts->slot, slot);
      EXPECT_EQ(parts->stream, stream);
    }
  }
}

TEST(Qpn, RejectsNumbersNoContextHands) {
  EXPECT_FALSE(decode_qpn(0).has_value());
  EXPECT_FALSE(decode_qpn(1).has_value());          // slot byte 0
  EXPECT_FALSE(decode_qpn(0x010000).has_value());   // stream 0
  EXPECT_FALSE(decode_qpn(0x1000001).has_value());  // beyond 24 bits
}

TEST(Qpn, SlotPortStaysInRange) {
  EXPECT_EQ(slot_port(4793, 0), 4793);
  EXPECT_EQ(slot_port(4793, 3), 4796);
  EXPECT_EQ(slot_port(65535, 1), 0);
}

using Vars = std::map<std::string, std::string>;

class Env {
 public:
  explicit Env(Vars vars) : vars_(std::move(vars)) {}
  EnvLookup lookup() const {
    return [this](const char* name) -> const char* {
      auto it = vars_.find(name);
      return it == vars_.end() ? nullptr : it->second.c_str();
    };
  }

 private:
  Vars vars_;
};

// Two processes that start together look for a free slot at once, and each one's look
// binds the port for a moment. An open that meets the other's look must not fail: the
// port is free, and the slot is the right one.
TEST(PortSlot, AnotherProcessLookingAtTheSlotDoesNotFailTheOpen) {
  constexpr std::uint16_t kBase = 23700;
  const std::vector<std::string> addresses{"127.0.0.1"};
  ASSERT_FALSE(port_in_use(addresses, kBase)) << "port " << kBase << " is taken";
  std::atomic<bool> stop{false};
  std::thread other([&] {
    while (!stop.load(std::memory_order_relaxed)) port_in_use(addresses, kBase);
  });
  DeviceOptions options;
  options.addresses = addresses;
  int opened = 0;
  std::string error;
  for (int round = 0; round < 100 && error.empty(); ++round) {
    int slot = -1;
    if (open_on_free_slot(options, kBase, &slot, &error)) ++opened;
  }
  stop = true;
  other.join();
  EXPECT_EQ(opened, 100) << "an open failed: " << error;
}

TEST(Settings, DefaultsWithoutVariables) {
  Settings s;
  std::string error;
  ASSERT_TRUE(parse_verbs_settings(Env(Vars{}).lookup(), &s, &error)) << error;
  EXPECT_TRUE(s.devices.empty());
  EXPECT_EQ(s.base_port, 4793);
  EXPECT_FALSE(s.peer.has_value());
  EXPECT_EQ(s.max_inline, 4096u);
  EXPECT_TRUE(s.poll_yield);
}

TEST(Settings, DevicesAndPlanes) {
  Settings s;
  std::string error;
  Env env(Vars{{"MROCE_DEVICES", "10.0.0.1, 10.1.0.1;10.2.0.1"},
               {"MROCE_PEER", "10.9.0.2"},
               {"MROCE_PORT", "5000"},
               {"MROCE_MAX_INLINE", "256"},
               {"MROCE_POLL_YIELD", "0"},
               {"MROCE_DEBUG", "1"}});
  ASSERT_TRUE(parse_verbs_settings(env.lookup(), &s, &error)) << error;
  ASSERT_EQ(s.devices.size(), 2u);
  EXPECT_EQ(s.devices[0], (std::vector<std::string>{"10.0.0.1", "10.1.0.1"}));
  EXPECT_EQ(s.devices[1], (std::vector<std::string>{"10.2.0.1"}));
  ASSERT_TRUE(s.peer.has_value());
  EXPECT_EQ(s.peer->to_string(), "10.9.0.2");
  EXPECT_EQ(s.base_port, 5000);
  EXPECT_EQ(s.max_inline, 256u);
  EXPECT_FALSE(s.poll_yield);
  EXPECT_TRUE(s.debug);
}

TEST(Settings, AddrsIsOneDeviceFromTheStackOptions) {
  Settings s;
  s.device.addresses = {"10.0.0.1", "10.1.0.1"};  // what apply_environment parsed
  std::string error;
  ASSERT_TRUE(
      parse_verbs_settings(Env(Vars{{"MROCE_ADDRS", "10.0.0.1,10.1.0.1"}}).lookup(), &s, &error));
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.devices[0].size(), 2u);
}

TEST(Settings, BadValuesNameTheVariable) {
  const Vars cases[] = {
      {{"MROCE_DEVICES", "10.0.0.1;not-an-address"}},
      {{"MROCE_PEER", "nowhere"}},
      {{"MROCE_PORT", "0"}},
      {{"MROCE_PORT", "70000"}},
      {{"MROCE_MAX_INLINE", "5000"}},
      {{"MROCE_POLL_YIELD", "yes"}},
      {{"MROCE_HW_COUNTERS_MS", "0"}},
      {{"MROCE_ADDRS", "10.0.0.1"}, {"MROCE_DEVICES", "10.0.0.2"}},
  };
  for (const auto& vars : cases) {
    Settings s;
    std::string error;
    EXPECT_FALSE(parse_verbs_settings(Env(vars).lookup(), &s, &error)) << vars.begin()->first;
    EXPECT_NE(error.find("MROCE_"), std::string::npos) << error;
  }
}

TEST(Settings, NumbersOutOfRangeGetTheOneLineEverySettingGets) {
  const std::pair<const char*, const char*> ranges[] = {{"MROCE_PORT", "1..65535"},
                                                        {"MROCE_MAX_INLINE", "0..4096"},
                                                        {"MROCE_POLL_YIELD", "0..1"},
                                                        {"MROCE_HW_COUNTERS_MS", "1..10000"}};
  for (const auto& [name, range] : ranges) {
    for (const char* value :
         {"-1", "nan", "99999999999999999999999", "oops", " 1", "1.5", "70000"}) {
      Settings s;
      std::string error;
      EXPECT_FALSE(parse_verbs_settings(Env(Vars{{name, value}}).lookup(), &s, &error))
          << name << "=" << value;
      EXPECT_EQ(error, std::string(name) + "=" + value + ": must be " + range);
    }
  }
}

TEST(Settings, ManualProgressIsRefused) {
  Settings s;
  s.device.progress = Progress::kManual;
  std::string error;
  EXPECT_FALSE(parse_verbs_settings(Env(Vars{}).lookup(), &s, &error));
  EXPECT_NE(error.find("MROCE_PROGRESS"), std::string::npos);
}

TEST(Settings, SysfsDirectoryAndInterval) {
  Settings s;
  std::string error;
  ASSERT_TRUE(parse_verbs_settings(Env(Vars{}).lookup(), &s, &error)) << error;
  EXPECT_TRUE(s.sysfs_dir.empty());
  Env env(Vars{{"MROCE_SYSFS_DIR", "/sys/class/infiniband"}, {"MROCE_HW_COUNTERS_MS", "5"}});
  ASSERT_TRUE(parse_verbs_settings(env.lookup(), &s, &error)) << error;
  EXPECT_EQ(s.sysfs_dir, "/sys/class/infiniband");
  EXPECT_EQ(s.hw_counters_ms, 5u);
}

// A directory of its own under the test's temporary directory, removed at the end.
class HwCounters : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hw_counters_test." + std::to_string(getpid()) + "." +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string read(const std::string& name) const {
    std::ifstream in(dir_ / name);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  std::filesystem::path dir_;
};

TEST_F(HwCounters, OneFilePerCounterKeptCurrentWhileRunning) {
  std::atomic<std::uint64_t> rx{7};
  auto source = [&rx] {
    return std::vector<NamedCounter>{{"rx_packets", rx.load()}, {"drop_malformed", 0}};
  };
  std::string error;
  auto files = HwCounterFiles::start(dir_, source, std::chrono::milliseconds(1), &error);
  ASSERT_TRUE(files) << error;
  EXPECT_EQ(read("rx_packets"), "7\n");  // written before start returns
  EXPECT_EQ(read("drop_malformed"), "0\n");
  rx = 123456789012;
  std::string seen;
  for (int i = 0; i < 2000 && seen != "123456789012\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    seen = read("rx_packets");
  }
  EXPECT_EQ(seen, "123456789012\n");  // refreshed by the thread, no call needed
  int entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2);  // no temporary file left beside them
  rx = 9;
  files.reset();
  EXPECT_EQ(read("rx_packets"), "9\n");  // the last values stay after the device closes
}

TEST_F(HwCounters, OneWriterPerDirectoryAndMissingDirectoryRefused) {
  auto source = [] { return std::vector<NamedCounter>{{"rx_packets", 1}}; };
  std::string error;
  auto first = HwCounterFiles::start(dir_, source, std::chrono::milliseconds(50), &error);
  ASSERT_TRUE(first) << error;
  EXPECT_FALSE(HwCounterFiles::start(dir_, source, std::chrono::milliseconds(50), &error));
  EXPECT_NE(error.find("another process"), std::string::npos) << error;
  first.reset();
  EXPECT_TRUE(HwCounterFiles::start(dir_, source, std::chrono::milliseconds(50), &error));
  EXPECT_FALSE(
      HwCounterFiles::start(dir_ / "absent", source, std::chrono::milliseconds(50), &error));
  EXPECT_NE(error.find("absent"), std::string::npos) << error;
}

}  // namespace
}  // namespace mroce::verbs
