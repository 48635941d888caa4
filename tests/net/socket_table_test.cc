// SocketTable: a fixed source-port pool beside a listening port the kernel chooses. The
// kernel picks that port from its ephemeral range, where a fixed pool may lie; bound after
// the pool it can never be one of the pool's ports.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "net/socket_table.h"
#include "net/udp_socket.h"

namespace mroce::net {
namespace {

// The kernel's ephemeral range [first, last].
std::pair<std::uint32_t, std::uint32_t> ephemeral_range() {
  std::uint32_t first = 32768, last = 60999;
  std::ifstream f("/proc/sys/net/ipv4/ip_local_port_range");
  f >> first >> last;
  return {first, last};
}

TEST(SocketTable, AFreeListeningPortIsNeverOneOfAFixedPool) {
  // As many pool sockets as the descriptor limit allows (up to 16,384), inside the kernel's
  // ephemeral range: a listener bound first would land in the pool in most rounds.
  rlimit lim{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
  const auto [first, last] = ephemeral_range();
  const std::uint32_t span = last - first + 1;
  const auto count = static_cast<std::uint16_t>(
      std::min<rlim_t>({16384, span / 2, lim.rlim_cur > 256 ? lim.rlim_cur - 256 : 0}));
  ASSERT_GE(count, 256u) << "too few descriptors for the test: " << lim.rlim_cur;

  SocketTableConfig config;
  config.planes = {Address::ipv4(0x7f4d0001)};  // 127.77.0.1: no other test's address
  config.pool_count = count;
  int opened = 0;
  for (int round = 0; round < 12; ++round) {
    config.pool_base = static_cast<std::uint16_t>(first + (span - count) * round / 12);
    SocketTable table;
    std::string error;
    if (!table.open(config, &error)) {
      // Another process may hold a port of the range; the pool must never clash with
      // its own listener.
      EXPECT_EQ(error.find("listening port"), std::string::npos) << error;
      continue;
    }
    ++opened;
    EXPECT_EQ(table.pool_base(), config.pool_base);
    const std::uint32_t port = table.listen_port();
    EXPECT_TRUE(port < config.pool_base || port >= std::uint32_t(config.pool_base) + count)
        << "listener " << port << " inside the pool " << config.pool_base << "+" << count;
  }
  EXPECT_GE(opened, 6) << "the pool's ports were taken in most rounds";
}

TEST(SocketTable, AChosenListeningPortInsideThePoolIsRefused) {
  // Refused from the configuration alone, whether or not another process holds 47005.
  SocketTableConfig config;
  config.planes = {Address::ipv4(0x7f4d0001)};
  config.pool_count = 16;
  config.pool_base = 47000;
  config.listen_port = 47005;
  SocketTable table;
  std::string error;
  ASSERT_FALSE(table.open(config, &error));
  EXPECT_NE(error.find("include the listening port 47005"), std::string::npos) << error;
  EXPECT_EQ(table.size(), 0u) << "a failed open keeps no socket";
}

TEST(SocketTable, AFailedOpenReleasesTheListenersItBound) {
  // A chosen listening port is bound before the pool; a pool port held elsewhere then
  // fails the open, which must release the listener.
  const Address addr = Address::ipv4(0x7f4d0002);  // 127.77.0.2
  UdpSocket held;
  std::string error;
  ASSERT_TRUE(held.open(addr, 0, SocketOptions{}, &error)) << error;
  int checked = 0;
  for (int attempt = 0; attempt < 8 && checked == 0; ++attempt) {
    UdpSocket probe;  // a free port for the listener, released at once
    ASSERT_TRUE(probe.open(addr, 0, SocketOptions{}, &error)) << error;
    const std::uint16_t listen = probe.port();
    probe.close();
    if (listen == held.port()) continue;

    SocketTableConfig config;
    config.planes = {addr};
    config.pool_count = 1;
    config.pool_base = held.port();
    config.listen_port = listen;
    SocketTable table;
    ASSERT_FALSE(table.open(config, &error));
    // Another process may have taken the listener's port meanwhile: then try another.
    if (error.find("port " + std::to_string(held.port())) == std::string::npos) continue;
    ++checked;
    EXPECT_EQ(table.size(), 0u) << "a failed open keeps no socket";
    UdpSocket again;
    EXPECT_TRUE(again.open(addr, listen, SocketOptions{}, &error))
        << "the failed open kept listening port " << listen << ": " << error;
  }
  EXPECT_EQ(checked, 1) << "the listener's port was taken in every attempt";
}

}  // namespace
}  // namespace mroce::net
