// No heap allocation per packet: two engines wired back to back move megabytes, with
// loss and CE marks, while every operator new in the process is counted.
#include <gtest/gtest.h>

#include <vector>

#include "baseline/roce_engine.h"
#include "harness/allocation_counter.h"

namespace mroce::baseline {
namespace {

class CountingSink : public Sink {
 public:
  void on_completion(const Completion& c) override {
    ++completions;
    failures += c.status != WcStatus::kSuccess;
  }
  std::uint64_t completions = 0;
  std::uint64_t failures = 0;
};

TEST(BaselineAllocation, SteadyStateAllocatesNothingPerPacket) {
  const Address addr[2] = {Address::ipv4(0x0a000001), Address::ipv4(0x0a000002)};
  RoceConfig config;
  config.ack_timeout = 100 * kMicrosecond;
  RoceConfig ca = config, cb = config;
  ca.planes = {addr[0]};
  cb.planes = {addr[1]};
  RoceEngine a(ca), b(cb);
  RoceEngine* engines[2] = {&a, &b};
  CountingSink sa, sb;
  a.set_sink(&sa);
  b.set_sink(&sb);
  StreamId qa, qb;
  ASSERT_EQ(a.create_stream(StreamConfig{.sq_depth = 256, .rq_depth = 256}, &qa), Errc::kOk);
  ASSERT_EQ(b.create_stream(StreamConfig{.sq_depth = 256, .rq_depth = 256}, &qb), Errc::kOk);
  ASSERT_EQ(a.connect_stream(0, qa, {addr[1], kRoceV2Port}, qb), Errc::kOk);
  ASSERT_EQ(b.connect_stream(0, qb, {addr[0], kRoceV2Port}, qa), Errc::kOk);
  std::vector<std::uint8_t> src(1 << 20, 1), dst(1 << 20), back(1 << 20);
  MrKeys ka, kb, kback;
  ASSERT_EQ(a.reg_mr(std::uint64_t(src.data()), src.size(), access::kAll, src.data(), &ka),
            Errc::kOk);
  ASSERT_EQ(a.reg_mr(std::uint64_t(back.data()), back.size(), access::kAll, back.data(), &kback),
            Errc::kOk);
  ASSERT_EQ(b.reg_mr(std::uint64_t(dst.data()), dst.size(), access::kAll, dst.data(), &kb),
            Errc::kOk);
  const int kMessages = 192;
  for (int i = 0; i < kMessages; ++i) {
    SendWr wr;
    wr.wr_id = std::uint64_t(i);
    wr.opcode = i % 3 == 0   ? WrOpcode::kRdmaWrite
                : i % 3 == 1 ? WrOpcode::kSend
                             : WrOpcode::kRdmaRead;
    wr.num_sge = 1;
    wr.sg[0] = {std::uint64_t((wr.opcode == WrOpcode::kRdmaRead ? back : src).data()), 60000,
                wr.opcode == WrOpcode::kRdmaRead ? kback.lkey : ka.lkey};
    wr.remote_addr = std::uint64_t(dst.data());
    wr.rkey = kb.rkey;
    ASSERT_EQ(a.post_send(0, qa, wr), Errc::kOk);
    if (wr.opcode == WrOpcode::kSend) {
      RecvWr r;
      r.num_sge = 1;
      r.sg[0] = {std::uint64_t(dst.data()), 65536, kb.lkey};
      ASSERT_EQ(b.post_recv(0, qb, r), Errc::kOk);
    }
  }

  std::vector<std::uint8_t> buf(a.max_packet_size());
  std::uint64_t sent = 0, lost = 0;
  Time now = 0;
  mroce::testing::count_allocations(true);
  while (sa.completions < std::uint64_t(kMessages) && now < 1 * kSecond) {
    bool moved = false;
    for (int side = 0; side < 2; ++side) {
      RoceEngine& e = *engines[side];
      if (e.next_deadline() <= now) e.on_timer(now);
      TxMeta m;
      while (e.poll_transmit(now, buf, &m)) {
        moved = true;
        ++sent;
        if (sent % 97 == 0) {  // a deterministic 1% loss
          ++lost;
          continue;
        }
        RxMeta rx;
        rx.src = m.src;
        rx.dst = m.dst;
        rx.src_port = m.src_port;
        rx.dst_port = m.dst_port;
        rx.ecn = (m.ecn == Ecn::kEct0 && sent % 50 == 0) ? Ecn::kCe : m.ecn;
        engines[1 - side]->on_packet(now, rx, std::span(buf.data(), m.length));
      }
    }
    if (!moved) now = std::max(now + 1, std::min(a.next_deadline(), b.next_deadline()));
  }
  mroce::testing::count_allocations(false);
  EXPECT_EQ(sa.completions, std::uint64_t(kMessages));
  EXPECT_EQ(sa.failures, 0u);
  EXPECT_GT(sent, 3000u);
  EXPECT_GT(lost, 30u);
  EXPECT_GT(a.counters().tx_retransmits, 0u);
  EXPECT_GT(b.counters().rx_ce_packets, 0u);
  EXPECT_EQ(mroce::testing::allocations(), 0u);
}

}  // namespace
}  // namespace mroce::baseline
