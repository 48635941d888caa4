#include "sim/link.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace mroce::sim {
namespace {

// Collects what a link delivers; counts what its queue releases.
struct Sink final : Node {
  SimContext* ctx;
  std::vector<std::pair<SimTime, PacketId>> got;
  std::vector<Ecn> ecn;
  int dequeued = 0;
  void receive(SimTime now, PacketId p, std::uint16_t) override {
    got.emplace_back(now, p);
    ecn.push_back(ctx->packets[p].ecn);
    ctx->packets.release(p);
  }
  void on_dequeue(SimTime, const Packet&, std::uint16_t) override { ++dequeued; }
};

struct LinkTest : ::testing::Test {
  SimContext ctx;
  Sink from, to;
  LinkTest() {
    from.ctx = &ctx;
    to.ctx = &ctx;
  }
  PacketId packet(std::uint32_t udp_payload, Ecn ecn = Ecn::kEct0) {
    PacketId p = ctx.packets.alloc();
    ctx.packets[p].frame_bytes = udp_payload + kFrameOverhead;
    ctx.packets[p].ecn = ecn;
    return p;
  }
  void run() {
    while (ctx.events.run_one()) {
    }
  }
};

TEST_F(LinkTest, SerializesAtLineRateThenPropagates) {
  LinkParams lp;
  lp.rate_bps = 100'000'000'000;
  lp.delay = kUs;
  Link link(ctx, lp, &from, 0, &to, 0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(link.enqueue(0, packet(4154)));  // 4200-byte frame
  run();
  ASSERT_EQ(to.got.size(), 3u);
  const SimTime ser = (4200 + kWireGap) * 80;
  for (int i = 0; i < 3; ++i) EXPECT_EQ(to.got[i].first, (i + 1) * ser + kUs) << i;
  EXPECT_EQ(from.dequeued, 3);
  EXPECT_EQ(link.stats().tx_packets, 3u);
  EXPECT_EQ(ctx.packets.live(), 0u);
}

TEST_F(LinkTest, TailDropsAboveTheLimit) {
  LinkParams lp;
  lp.queue.limit_bytes = 10'000;
  Link link(ctx, lp, &from, 0, &to, 0);
  int accepted = 0;
  for (int i = 0; i < 10; ++i) accepted += link.enqueue(0, packet(954));  // 1000-byte frames
  EXPECT_EQ(accepted, 10);
  EXPECT_FALSE(link.enqueue(0, packet(954)));
  EXPECT_EQ(ctx.drops[DropCause::kQueueFull], 1u);
  EXPECT_EQ(link.stats().tail_drops, 1u);
  EXPECT_EQ(link.stats().max_bytes, 10'000u);
  run();
  EXPECT_EQ(to.got.size(), 10u);
}

TEST_F(LinkTest, MarksEctPacketsBetweenThresholdsOnly) {
  LinkParams lp;
  lp.queue.ecn = true;
  lp.queue.ecn_min_bytes = 5'000;
  lp.queue.ecn_max_bytes = 5'000;  // step marking at 5 KB
  Link link(ctx, lp, &from, 0, &to, 0);
  for (int i = 0; i < 10; ++i) link.enqueue(0, packet(954, i % 2 ? Ecn::kEct0 : Ecn::kNotEct));
  run();
  ASSERT_EQ(to.ecn.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    // Packet i met an occupancy of i * 1000 bytes.
    const bool ect = i % 2;
    const Ecn want = ect && i * 1000 >= 5000 ? Ecn::kCe : (ect ? Ecn::kEct0 : Ecn::kNotEct);
    EXPECT_EQ(to.ecn[i], want) << i;
  }
  EXPECT_EQ(link.stats().ecn_marks, 3u);  // ECT packets 5, 7 and 9
}

TEST_F(LinkTest, MarksAtDequeueOnTheBytesLeftBehind) {
  // Ten 1000-byte frames at once: at dequeue packet i leaves (9 - i) * 1000 bytes behind,
  // so with step marking at 5 KB the first five ECT packets of ten are marked, the
  // opposite of marking at enqueue (test above).
  LinkParams lp;
  lp.queue.ecn = true;
  lp.queue.ecn_min_bytes = 5'000;
  lp.queue.ecn_max_bytes = 5'000;
  lp.queue.ecn_at_dequeue = true;
  Link link(ctx, lp, &from, 0, &to, 0);
  for (int i = 0; i < 10; ++i) link.enqueue(0, packet(954, i % 2 ? Ecn::kEct0 : Ecn::kNotEct));
  run();
  ASSERT_EQ(to.ecn.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    const bool ect = i % 2;
    const Ecn want = ect && (9 - i) * 1000 >= 5000 ? Ecn::kCe : (ect ? Ecn::kEct0 : Ecn::kNotEct);
    EXPECT_EQ(to.ecn[i], want) << i;
  }
  EXPECT_EQ(link.stats().ecn_marks, 2u);  // ECT packets 1 and 3
}

TEST_F(LinkTest, RandomLossMatchesTheConfiguredRate) {
  LinkParams lp;
  lp.loss_rate = 0.05;
  lp.seed = 42;
  Link link(ctx, lp, &from, 0, &to, 0);
  const int n = 100'000;
  for (int i = 0; i < n; ++i) {
    link.enqueue(ctx.now(), packet(100));
    ctx.events.run_one();  // keep the queue short
  }
  run();
  const double lost = static_cast<double>(ctx.drops[DropCause::kRandomLoss]);
  const double sigma = std::sqrt(n * 0.05 * 0.95);
  EXPECT_NEAR(lost, n * 0.05, 5 * sigma);
  EXPECT_EQ(to.got.size() + ctx.drops[DropCause::kRandomLoss], static_cast<std::size_t>(n));
}

TEST_F(LinkTest, BlackHoleSwallowsAndDownRefuses) {
  LinkParams lp;
  Link link(ctx, lp, &from, 0, &to, 0);
  link.enqueue(0, packet(100));
  link.set_state(0, LinkState::kBlackHole);
  link.enqueue(0, packet(100));
  run();
  EXPECT_TRUE(to.got.empty());  // the first was in flight when the hole opened
  EXPECT_EQ(ctx.drops[DropCause::kBlackHole], 2u);
  link.set_state(ctx.now(), LinkState::kDown);
  EXPECT_FALSE(link.enqueue(ctx.now(), packet(100)));
  EXPECT_EQ(ctx.drops[DropCause::kLinkDown], 1u);
  link.set_state(ctx.now(), LinkState::kUp);
  EXPECT_TRUE(link.enqueue(ctx.now(), packet(100)));
  run();
  EXPECT_EQ(to.got.size(), 1u);
}

TEST_F(LinkTest, PauseHoldsTheQueueUntilResume) {
  LinkParams lp;
  lp.delay = kUs;
  Link link(ctx, lp, &from, 0, &to, 0);
  link.send_pause(0, true);  // takes effect after the flight time: 1 us
  ctx.events.run_one();
  ASSERT_TRUE(link.paused());
  link.enqueue(ctx.now(), packet(954));
  link.enqueue(ctx.now(), packet(954));
  EXPECT_TRUE(ctx.events.empty());  // nothing moves while paused
  link.send_pause(ctx.now() + 5 * kUs, false);
  run();
  ASSERT_EQ(to.got.size(), 2u);
  EXPECT_GE(to.got[0].first, 7 * kUs);
  EXPECT_EQ(link.stats().pauses, 1u);
  EXPECT_EQ(link.stats().paused_time, 6 * kUs);
}

}  // namespace
}  // namespace mroce::sim
