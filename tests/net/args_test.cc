// Bad arguments get one clear line and no crash: device options, environment variables
// and misuse of the objects.
#include <dirent.h>
#include <sched.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "net_fixture.h"

namespace mroce::testing {
namespace {

// Device::open refuses `o` with one line that mentions `needle`.
void expect_refused(const DeviceOptions& o, const std::string& needle) {
  std::string error;
  auto d = Device::open(o, &error);
  EXPECT_EQ(d, nullptr);
  EXPECT_NE(error.find(needle), std::string::npos) << "error: '" << error << "'";
  EXPECT_EQ(error.find('\n'), std::string::npos) << "more than one line: " << error;
  EXPECT_FALSE(error.empty());
}

TEST(Arguments, BadDeviceOptionsAreRefusedWithOneLine) {
  DeviceOptions o = loopback_options();
  o.addresses = {"not-an-address"};
  expect_refused(o, "not-an-address");
  o.addresses = {"0.0.0.0"};
  expect_refused(o, "unspecified");
  o.addresses = {"127.0.0.1", "127.0.0.1"};
  expect_refused(o, "twice");
  o.addresses = {"192.0.2.77"};  // TEST-NET-1: not an address of this host
  expect_refused(o, "192.0.2.77");
  o = loopback_options();
  o.paths = 0;
  expect_refused(o, "paths");
  o = loopback_options();
  o.mtu = 100;
  expect_refused(o, "mtu");
  o = loopback_options();
  o.src_port_count = 0;
  expect_refused(o, "src_port_count");
  o = loopback_options();
  o.src_port_base = 65500;
  o.src_port_count = 64;
  expect_refused(o, "65535");
  o = loopback_options();
  o.line_rate_bps = 10;
  expect_refused(o, "line_rate");
  o = loopback_options();
  o.addresses = std::vector<std::string>(9, "127.0.0.1");
  expect_refused(o, "planes");
  o = loopback_options();
  o.progress_threads = 0;
  expect_refused(o, "progress_threads=0: must be 1..16");
  o.progress_threads = 17;
  expect_refused(o, "progress_threads=17");
  o = loopback_options({"127.0.0.1"}, Progress::kManual);
  o.progress_threads = 2;
  expect_refused(o, "thread progress mode");
}

TEST(Arguments, APortInUseIsNamed) {
  auto first = open_device(loopback_options());
  ASSERT_TRUE(first);
  DeviceOptions o = loopback_options();
  o.port = first->endpoint().port;
  expect_refused(o, "port " + std::to_string(o.port));
  o = loopback_options();
  o.src_port_base = first->options().src_port_base;
  expect_refused(o, "bind");
}

TEST(Arguments, EnvironmentOverridesAndRejects) {
  DeviceOptions o;
  std::string error;
  setenv("MROCE_PATHS", "8", 1);
  setenv("MROCE_ADDRS", "127.0.0.1,127.0.0.2", 1);
  setenv("MROCE_TRANSPORT", "roce", 1);
  setenv("MROCE_PROGRESS", "manual", 1);
  setenv("MROCE_RATE_MBIT", "2500", 1);
  ASSERT_TRUE(apply_environment(&o, &error)) << error;
  EXPECT_EQ(o.paths, 8);
  EXPECT_EQ(o.addresses.size(), 2u);
  EXPECT_EQ(o.transport, TransportKind::kRoceV2);
  EXPECT_EQ(o.progress, Progress::kManual);
  EXPECT_EQ(o.line_rate_bps, 2'500'000'000u);
  for (const char* name : {"MROCE_ADDRS", "MROCE_TRANSPORT", "MROCE_PROGRESS", "MROCE_RATE_MBIT"}) {
    unsetenv(name);
  }
  setenv("MROCE_PATHS", "300", 1);
  const DeviceOptions before = o;
  EXPECT_FALSE(apply_environment(&o, &error));
  EXPECT_NE(error.find("MROCE_PATHS"), std::string::npos) << error;
  EXPECT_EQ(o.paths, before.paths) << "options changed although refused";
  setenv("MROCE_PATHS", "8x", 1);
  EXPECT_FALSE(apply_environment(&o, &error));
  unsetenv("MROCE_PATHS");
  setenv("MROCE_TRANSPORT", "tcp", 1);
  EXPECT_FALSE(apply_environment(&o, &error));
  EXPECT_NE(error.find("mroce or roce"), std::string::npos) << error;
  unsetenv("MROCE_TRANSPORT");
  setenv("MROCE_PROGRESS_THREADS", "4", 1);
  ASSERT_TRUE(apply_environment(&o, &error)) << error;
  EXPECT_EQ(o.progress_threads, 4);
  setenv("MROCE_PROGRESS_THREADS", "0", 1);
  EXPECT_FALSE(apply_environment(&o, &error));
  EXPECT_NE(error.find("MROCE_PROGRESS_THREADS=0: must be 1..16"), std::string::npos) << error;
  unsetenv("MROCE_PROGRESS_THREADS");
  setenv("MROCE_ENGINE", "min_rto_us=oops", 1);
  expect_refused(loopback_options(), "MROCE_ENGINE");
  unsetenv("MROCE_ENGINE");
}

// The progress thread's scheduling policy, found by its name; -1 when there is none.
int find_progress_thread_policy() {
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return -1;
  int policy = -1;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (std::getline(comm, name) && name == "mroce-progress") {
      policy = sched_getscheduler(static_cast<pid_t>(std::atoi(e->d_name)));
    }
  }
  closedir(dir);
  return policy;
}

// The same, once the new thread has named itself (it does so as it starts).
int progress_thread_policy() {
  for (int i = 0; i < 200; ++i) {
    const int policy = find_progress_thread_policy();
    if (policy != -1) return policy;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

// Asked for, real-time priority is had or refused with one line, never ignored.
TEST(Arguments, RealtimeProgressIsHadOrRefused) {
  setenv("MROCE_PROGRESS_RT", "2", 1);
  DeviceOptions o = loopback_options();
  std::string error;
  EXPECT_FALSE(apply_environment(&o, &error));
  EXPECT_NE(error.find("MROCE_PROGRESS_RT"), std::string::npos) << error;
  setenv("MROCE_PROGRESS_RT", "1", 1);
  ASSERT_TRUE(apply_environment(&o, &error)) << error;
  unsetenv("MROCE_PROGRESS_RT");
  ASSERT_TRUE(o.progress_realtime);
  auto d = Device::open(o, &error);
  if (!d) {
    EXPECT_NE(error.find("SCHED_FIFO refused"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    GTEST_SKIP() << "not permitted here: " << error;
  }
  EXPECT_EQ(progress_thread_policy(), SCHED_FIFO);
  d.reset();
  o.progress_realtime = false;
  d = Device::open(o, &error);
  ASSERT_TRUE(d) << error;
  EXPECT_EQ(progress_thread_policy(), SCHED_OTHER);
}

TEST(Arguments, EngineOverridesOutOfRangeAreRefused) {
  // Each of these was taken: a window of 0 hung transfers, a maximum timeout of 0 caused
  // a retransmission storm, -1 wrapped to 2^64-1.
  for (const char* text : {"initial_window_kb=0", "max_rto_us=0", "min_rto_us=-1",
                           "path_window_packets=100000", "ack_every=nan", "min_rto_us=1e9"}) {
    setenv("MROCE_ENGINE", text, 1);
    expect_refused(loopback_options(), std::string("MROCE_ENGINE: ") + text + ": must be ");
  }
  setenv("MROCE_ENGINE", "max_rto_us=5000", 1);  // below the stack's 20 ms min_rto
  expect_refused(loopback_options(), "min_rto (20ms) is above max_rto (5ms)");
  setenv("MROCE_ENGINE", "paths=4", 1);  // the device's options set it
  expect_refused(loopback_options(), "MROCE_ENGINE: 'paths' is set by the device's options");
  setenv("MROCE_ENGINE", "initial_window_kb=64,max_rto_us=200000", 1);
  std::string error;
  EXPECT_NE(Device::open(loopback_options(), &error), nullptr) << error;
  unsetenv("MROCE_ENGINE");
}

TEST(Arguments, EnvironmentNumbersOutOfRangeAreRefusedAlike) {
  for (const char* name : {"MROCE_PATHS", "MROCE_MTU", "MROCE_PORT", "MROCE_SRC_PORTS",
                           "MROCE_RATE_MBIT", "MROCE_RX_RATE_MBIT", "MROCE_GSO", "MROCE_SEED"}) {
    for (const char* value : {"-1", " 1", "nan", "99999999999999999999999", "oops", "", "0x10"}) {
      setenv(name, value, 1);
      DeviceOptions o;
      std::string error;
      EXPECT_FALSE(apply_environment(&o, &error)) << name << "='" << value << "'";
      EXPECT_EQ(error.rfind(std::string(name) + "=" + value + ": must be ", 0), 0u) << error;
      unsetenv(name);
    }
  }
  setenv("MROCE_PATHS", "0", 1);
  DeviceOptions o;
  std::string error;
  EXPECT_FALSE(apply_environment(&o, &error));
  EXPECT_EQ(error, "MROCE_PATHS=0: must be 1..256");
  unsetenv("MROCE_PATHS");
}

TEST(Arguments, MisusedObjectsSayWhyAndNothingBreaks) {
  Side a = make_side(loopback_options());
  Side b = make_side(loopback_options());
  ASSERT_TRUE(a.dev && b.dev);
  EXPECT_EQ(a.dev->reg_mr(nullptr, 100, access::kAll), nullptr);
  EXPECT_NE(a.dev->last_error().find("reg_mr"), std::string::npos);
  std::vector<std::uint8_t> buf(4096);
  EXPECT_EQ(a.dev->reg_mr(buf.data(), buf.size(), 0x100), nullptr);
  EXPECT_EQ(a.dev->create_cq(0), nullptr);
  EXPECT_NE(a.dev->last_error().find("create_cq"), std::string::npos);

  QpOptions foreign;
  foreign.send_cq = foreign.recv_cq = b.cq.get();  // another device's queue
  EXPECT_EQ(a.dev->create_qp(foreign), nullptr);
  EXPECT_NE(a.dev->last_error().find("this device"), std::string::npos) << a.dev->last_error();
  QpOptions none;
  EXPECT_EQ(a.dev->create_qp(none), nullptr);
  QpOptions deep;
  deep.send_cq = deep.recv_cq = a.cq.get();
  deep.stream.sq_depth = 0;
  EXPECT_EQ(a.dev->create_qp(deep), nullptr);
  EXPECT_NE(a.dev->last_error().find("create_qp"), std::string::npos);

  connect_qps(a, b);
  EXPECT_EQ(a.qp().set_rnr_policy(3, 50 * kMicrosecond), Errc::kOk);
  Region r(*a.dev, 4096, 1);
  SendWr wr = make_send(WrOpcode::kRdmaWrite, r.sge(0, 64), 1);
  wr.sg[0].lkey ^= 0x4000;  // no such region
  EXPECT_EQ(a.qp().post_send(wr), Errc::kInvalidArgument);
  wr = make_send(WrOpcode::kRdmaWrite, r.sge(4000, 200), 1);  // past the region's end
  EXPECT_EQ(a.qp().post_send(wr), Errc::kInvalidArgument);
  wr = make_send(WrOpcode::kAtomicFetchAdd, r.sge(0, 4), 1);  // atomics take 8 bytes
  EXPECT_EQ(a.qp().post_send(wr), Errc::kInvalidArgument);
  wr.opcode = static_cast<WrOpcode>(42);
  EXPECT_EQ(a.qp().post_send(wr), Errc::kInvalidArgument);
  EXPECT_EQ(a.qp().connect(b.dev->endpoint(), b.qp().qp_num()), Errc::kInvalidState)
      << "connecting twice";
  QpOptions qo;
  qo.send_cq = qo.recv_cq = a.cq.get();
  auto fresh = a.dev->create_qp(qo);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->connect(Endpoint{b.dev->endpoint().addr, 0}, 1), Errc::kInvalidArgument);
  EXPECT_EQ(fresh->connect(b.dev->endpoint(), 0), Errc::kInvalidArgument);

  // The queue pair still works after all that.
  Region dst(*b.dev, 4096, 2);
  wr = make_send(WrOpcode::kRdmaWrite, r.sge(0, 4096), 9);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr->rkey();
  ASSERT_EQ(a.qp().post_send(wr), Errc::kOk);
  const auto done = wait_for(*a.cq, 1, std::chrono::seconds(5));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(r.bytes, dst.bytes);
}

TEST(Arguments, ARemoteAccessErrorCompletesWithAnErrorNotACrash) {
  Side a = make_side(loopback_options());
  Side b = make_side(loopback_options());
  ASSERT_TRUE(a.dev && b.dev);
  connect_qps(a, b);
  Region src(*a.dev, 4096, 1);
  Region dst(*b.dev, 4096, 2, access::kLocalWrite | access::kRemoteRead);
  SendWr wr = make_send(WrOpcode::kRdmaWrite, src.sge(0, 4096), 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.mr->rkey();
  ASSERT_EQ(a.qp().post_send(wr), Errc::kOk);
  const auto done = wait_for(*a.cq, 1, std::chrono::seconds(5));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(a.qp().state(), StreamState::kError);
  EXPECT_GT(b.dev->counters().drop(DropReason::kAccessDenied), 0u);
}

}  // namespace
}  // namespace mroce::testing
