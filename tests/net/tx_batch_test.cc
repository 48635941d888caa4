// TxBatch over loopback (no namespaces): the batch is regrouped by socket, each socket's
// order kept; runs of equal-sized datagrams to one destination with one ECN value become
// one GSO message (a shorter one may end a run; 64 segments and 65,507 bytes at most);
// and every datagram arrives as itself, also when its payload is referenced (zero-copy:
// header and payload as two iovecs), and when every socket's messages go in one io_uring
// submission.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "net/socket_table.h"
#include "net/tx_batch.h"

namespace mroce::net {
namespace {

struct Datagram {
  int port = 0;  // index into the pool
  int dst = 0;   // receiver 0 or 1
  std::uint32_t length = 0;
  Ecn ecn = Ecn::kEct0;
};

// Port 0: a run of 5, a shorter one that ends it, then a run of 2 (2 messages).
// Port 1: 3 then 2 with another ECN value (2 messages).
// Port 2: 2 to one receiver, 2 to the other, then a longer one alone (3, two of GSO).
// Port 3: 70 small ones: 64 + 6 (the segment cap). Port 4: 47 of 1400 bytes: 46 + 1
// (the byte cap). Port 5 is outside the pool: dropped.
std::vector<Datagram> plan() {
  std::vector<std::vector<Datagram>> by_port(6);
  for (int i = 0; i < 5; ++i) by_port[0].push_back({0, 0, 1000});
  by_port[0].push_back({0, 0, 600});
  for (int i = 0; i < 2; ++i) by_port[0].push_back({0, 0, 1000});
  for (int i = 0; i < 3; ++i) by_port[1].push_back({1, 0, 1000});
  for (int i = 0; i < 2; ++i) by_port[1].push_back({1, 0, 1000, Ecn::kCe});
  for (int i = 0; i < 2; ++i) by_port[2].push_back({2, 0, 1000});
  for (int i = 0; i < 2; ++i) by_port[2].push_back({2, 1, 1000});
  by_port[2].push_back({2, 1, 1200});
  for (int i = 0; i < 70; ++i) by_port[3].push_back({3, 1, 100});
  for (int i = 0; i < 47; ++i) by_port[4].push_back({4, 0, 1400});
  by_port[5].push_back({5, 0, 100});
  // Interleaved as the engine sprays them over paths.
  std::vector<Datagram> out;
  for (std::size_t i = 0; i < 70; ++i)
    for (auto& p : by_port)
      if (i < p.size()) out.push_back(p[i]);
  return out;
}

class TxBatchTest : public ::testing::TestWithParam<std::tuple<bool, bool, bool>> {
 protected:
  void SetUp() override {
    std::string error;
    SocketTableConfig config;
    config.planes = {Address::ipv4(0x7f000001)};
    config.pool_count = 5;
    ASSERT_TRUE(table.open(config, &error)) << error;
    SocketOptions plain;
    plain.gro = false;  // one datagram per read
    for (UdpSocket& r : receivers) ASSERT_TRUE(r.open(config.planes[0], 0, plain, &error)) << error;
  }

  // Every datagram the receivers got: (receiver, payload).
  std::vector<std::pair<int, std::vector<std::uint8_t>>> receive(std::size_t expected) {
    std::vector<std::pair<int, std::vector<std::uint8_t>>> got;
    std::vector<std::uint8_t> buf(70000);
    while (got.size() < expected) {
      pollfd fds[2] = {{receivers[0].fd(), POLLIN, 0}, {receivers[1].fd(), POLLIN, 0}};
      if (poll(fds, 2, 2000) <= 0) break;
      for (int r = 0; r < 2; ++r) {
        if (!(fds[r].revents & POLLIN)) continue;
        const ssize_t n = recv(receivers[r].fd(), buf.data(), buf.size(), MSG_DONTWAIT);
        if (n > 0) got.push_back({r, {buf.begin(), buf.begin() + n}});
      }
    }
    return got;
  }

  SocketTable table;
  UdpSocket receivers[2];
};

// The byte at `at` of datagram i.
std::uint8_t pattern(std::size_t i, std::size_t at) {
  return std::uint8_t(i * 31 + at * 7);
}

TEST_P(TxBatchTest, GroupsRunsPerSocketAndDeliversEveryDatagramInOrder) {
  const auto [gso, by_reference, uring] = GetParam();
  const std::vector<Datagram> datagrams = plan();
  TxBatch batch(datagrams.size(), 1500, gso, uring);
  // Zero-copy: the slot holds a 16-byte header, the rest is referenced from here.
  constexpr std::uint32_t kHeader = 16;
  std::vector<std::vector<std::uint8_t>> payloads(datagrams.size());
  std::size_t valid = 0;
  for (std::size_t i = 0; i < datagrams.size(); ++i) {
    const Datagram& d = datagrams[i];
    std::vector<std::uint8_t> bytes(d.length);
    for (std::size_t k = 0; k < bytes.size(); ++k) bytes[k] = pattern(i, k);
    const std::uint32_t tag = std::uint32_t(d.port) << 16 | std::uint32_t(i);
    std::memcpy(bytes.data(), &tag, 4);
    const std::uint32_t in_slot = by_reference ? kHeader : d.length;
    std::span<std::uint8_t> slot = batch.slot();
    std::memcpy(slot.data(), bytes.data(), in_slot);
    payloads[i].assign(bytes.begin() + in_slot, bytes.end());
    TxMeta* m = batch.slot_meta();
    *m = TxMeta{};
    m->src = m->dst = Address::ipv4(0x7f000001);
    m->src_port = std::uint16_t(table.pool_base() + d.port);
    m->dst_port = receivers[d.dst].port();
    m->ecn = d.ecn;
    m->length = in_slot;
    m->wire_length = d.length;
    if (by_reference) {
      m->payload = payloads[i].data();
      m->payload_length = d.length - in_slot;
    }
    batch.commit();
    valid += d.port < 5;
  }
  DatapathCounters counters;
  batch.send(table, &counters);
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(counters.tx_dropped, 1u);  // the port outside the pool
  EXPECT_EQ(counters.tx_datagrams, valid);
  EXPECT_EQ(counters.tx_gso_fallbacks, 0u);
  EXPECT_EQ(counters.tx_syscalls, uring ? 1u : 5u);  // one submission, or a sendmmsg per socket
  // Messages of several segments: port 0: 6 and 2; port 1: 3 and 2; port 2: 2 and 2;
  // port 3: 64 and 6; port 4: 46 (and 1 alone).
  EXPECT_EQ(counters.tx_gso_sends, gso ? 9u : 0u);

  const auto got = receive(valid);
  ASSERT_EQ(got.size(), valid);
  std::map<std::pair<int, int>, std::uint32_t> last;  // per (port, receiver): the last index
  for (const auto& [r, bytes] : got) {
    std::uint32_t tag;
    std::memcpy(&tag, bytes.data(), 4);
    const int port = int(tag >> 16);
    const std::uint32_t index = tag & 0xffff;
    ASSERT_LT(index, datagrams.size());
    const Datagram& d = datagrams[index];
    EXPECT_EQ(d.port, port);
    EXPECT_EQ(d.dst, r);
    ASSERT_EQ(bytes.size(), d.length);
    for (std::size_t k = 4; k < bytes.size(); ++k) {
      ASSERT_EQ(bytes[k], pattern(index, k)) << "datagram " << index << " byte " << k;
    }
    const auto key = std::make_pair(port, r);
    if (last.count(key)) {
      EXPECT_GT(index, last[key]) << "port " << port << " reordered";
    }
    last[key] = index;
  }
}

INSTANTIATE_TEST_SUITE_P(Gso, TxBatchTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "Gso" : "Single") +
                                  (std::get<1>(info.param) ? "Referenced" : "Copied") +
                                  (std::get<2>(info.param) ? "Uring" : "Sendmmsg");
                         });

}  // namespace
}  // namespace mroce::net
