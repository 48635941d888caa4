// The receive window behind every ACK: cumulative point plus a 256-bit bitmap, across
// sequence-number wrap-around, a full bitmap, duplicates and packets beyond the window;
// and the sender's side: old and bogus ACKs change nothing.
#include "core/rx_path.h"
#include "engine/workload.h"
#include "wire/codec.h"

namespace mroce::testing {
namespace {

TEST(SackWindow, InOrderAdvancesCumulative) {
  SackWindow w;
  w.reset(100);
  for (std::uint32_t psn = 100; psn < 110; ++psn) {
    ASSERT_EQ(w.classify(psn), SackWindow::Verdict::kNew);
    w.mark(psn);
  }
  EXPECT_EQ(w.cum(), 110u);
  EXPECT_FALSE(w.has_gap());
  EXPECT_EQ(w.classify(105), SackWindow::Verdict::kDuplicate);
}

TEST(SackWindow, GapIsReportedAndFillingItAdvancesPastEverything) {
  SackWindow w;
  w.reset(0);
  for (std::uint32_t psn = 1; psn <= 200; ++psn) w.mark(psn);  // 0 missing
  EXPECT_EQ(w.cum(), 0u);
  EXPECT_TRUE(w.has_gap());
  wire::AckHeader a;
  w.fill(&a);
  for (std::uint32_t i = 0; i < 200; ++i) EXPECT_TRUE(a.sacked(i)) << i;
  EXPECT_FALSE(a.sacked(200));
  EXPECT_EQ(w.classify(150), SackWindow::Verdict::kDuplicate);
  w.mark(0);
  EXPECT_EQ(w.cum(), 201u);
  EXPECT_FALSE(w.has_gap());
}

TEST(SackWindow, FullBitmapAndBeyondTheWindow) {
  SackWindow w;
  w.reset(0);
  for (std::uint32_t psn = 1; psn <= 256; ++psn) {
    ASSERT_EQ(w.classify(psn), SackWindow::Verdict::kNew) << psn;
    w.mark(psn);
  }
  EXPECT_EQ(w.classify(257), SackWindow::Verdict::kOutOfWindow);
  wire::AckHeader a;
  w.fill(&a);
  for (auto word : a.sack) EXPECT_EQ(word, ~0ull);
  w.mark(0);
  EXPECT_EQ(w.cum(), 257u);
  EXPECT_EQ(w.classify(257), SackWindow::Verdict::kNew);
}

TEST(SackWindow, WrapsAroundTheSequenceSpace) {
  SackWindow w;
  const std::uint32_t isn = 0xffffff80u;
  w.reset(isn);
  for (std::uint32_t i = 1; i < 256; i += 2) w.mark(isn + i);  // every other, across 2^32
  EXPECT_EQ(w.cum(), isn);
  for (std::uint32_t i = 0; i < 256; i += 2) w.mark(isn + i);
  EXPECT_EQ(w.cum(), isn + 256);  // wrapped past zero
  EXPECT_EQ(w.classify(isn + 10), SackWindow::Verdict::kDuplicate);
  EXPECT_EQ(w.classify(isn + 256 + 256 + 1), SackWindow::Verdict::kOutOfWindow);
}

TEST(SackWindow, MixedOrderEqualsSortedOrder) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    SackWindow w;
    w.reset(trial * 1000u);
    std::vector<std::uint32_t> psns(256);
    for (std::uint32_t i = 0; i < 256; ++i) psns[i] = trial * 1000u + i;
    std::shuffle(psns.begin(), psns.end(), rng);
    for (auto psn : psns) {
      ASSERT_EQ(w.classify(psn), SackWindow::Verdict::kNew);
      w.mark(psn);
    }
    EXPECT_EQ(w.cum(), trial * 1000u + 256);
    EXPECT_FALSE(w.has_gap());
  }
}

TEST(Sack, TransfersAcrossSequenceWrap) {
  Cluster cl(2, 1, 4, 8, [](int, EngineConfig& c) {
    c.initial_psn = 0xffffffff - 40;
    c.paths = 2;
  });
  for (int s = 0; s < 4; ++s) cl.net.spine(0, s).loss = 0.05;
  Workload w(cl, 2, 60, 40000, 8, true);
  w.post_all();
  ASSERT_TRUE(w.run(10 * kSecond));
  w.verify();
}

// Replays, late copies and forged ACKs: nothing acknowledged twice, nothing unsent
// acknowledged, transfers unaffected.
TEST(Sack, OldAndBogusAcksAreHarmless) {
  Cluster cl(2, 1, 4, 9);
  std::vector<std::vector<std::uint8_t>> acks;
  cl.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> b) {
    if (host == 1 && m.cls == PacketClass::kAck && acks.size() < 5000) {
      acks.emplace_back(b.begin(), b.end());
    }
  });
  Workload w(cl, 2, 80, 40000, 9, false);
  w.post_all();
  RxMeta meta;
  meta.src = host_address(1, 0);
  meta.dst = host_address(0, 0);
  std::size_t replayed = 0;
  std::uint64_t bad_before = cl.engine(0).counters().drop(DropReason::kBadAck);
  bool forged = false;
  ASSERT_TRUE(cl.net.run_until(
      [&] {
        // Every so often replay an old ACK and forge one that claims unsent packets.
        if (acks.size() > replayed + 20) {
          cl.net.inject(0, meta, acks[replayed]);
          auto f = acks.back();
          wire::Packet p;
          if (wire::decode(f, {}, &p) == wire::DecodeError::kOk) {
            p.ack.cum_psn += 100000;
            wire::encode_ack(p.common, p.ack, f);
            cl.net.inject(0, meta, f);
            forged = true;
          }
          replayed += 10;
        }
        return cl.rec(0).completions.size() >= 80 && cl.rec(1).completions.size() > 0;
      },
      cl.net.now() + 10 * kSecond));
  ASSERT_TRUE(w.run(10 * kSecond));
  w.verify();
  EXPECT_TRUE(forged);
  EXPECT_GT(cl.engine(0).counters().drop(DropReason::kBadAck), bad_before);
}

// An ACK that arrives after a later one of its path (reordered, or a late duplicate)
// carries smaller receive and CE counters: it adds no marks, so congestion control
// keeps sane figures (a negative difference once read as 4 billion marks).
TEST(Sack, LateAcksAddNoCeMarks) {
  Cluster cl(2, 1, 4, 10, [](int, EngineConfig& c) { c.paths = 4; });
  for (int s = 0; s < 4; ++s) cl.net.spine(0, s).ce = 0.3;
  std::vector<std::vector<std::uint8_t>> acks;
  cl.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> b) {
    if (host == 1 && m.cls == PacketClass::kAck && acks.size() < 5000) {
      acks.emplace_back(b.begin(), b.end());
    }
  });
  Workload w(cl, 2, 80, 40000, 10, false);
  w.post_all();
  RxMeta meta;
  meta.src = host_address(1, 0);
  meta.dst = host_address(0, 0);
  std::size_t replayed = 0;
  ASSERT_TRUE(cl.net.run_until(
      [&] {
        if (acks.size() > replayed + 20) {
          cl.net.inject(0, meta, acks[replayed]);
          replayed += 7;
        }
        return cl.rec(0).completions.size() >= 80;
      },
      cl.net.now() + 10 * kSecond));
  ASSERT_TRUE(w.run(10 * kSecond));
  w.verify();
  EXPECT_GT(replayed, 0u);
  std::uint64_t marks = 0;
  cl.engine(0).for_each_connection([&](ConnId c) {
    ConnStats cs;
    ASSERT_TRUE(cl.engine(0).connection_stats(c, &cs));
    EXPECT_GE(cs.cwnd_bytes, 4u * cl.engine(0).config().mss);
    for (std::uint16_t i = 0; i < cs.paths; ++i) {
      PathStats ps;
      ASSERT_TRUE(cl.engine(0).path_stats(c, i, &ps));
      EXPECT_LE(ps.ce_packets, ps.tx_packets) << "path " << i;
      marks += ps.ce_packets;
    }
  });
  EXPECT_GT(marks, 0u);
}

}  // namespace
}  // namespace mroce::testing
