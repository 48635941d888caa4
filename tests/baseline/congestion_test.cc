// DCQCN end to end: CE marks become CNPs (at most one per QP per interval), CNPs cut the
// sender's rate, the rate recovers once marking stops; and the sender's packets really
// leave at its current rate.
#include <gtest/gtest.h>

#include "baseline/codec.h"
#include "tests/baseline/roce_pair.h"

namespace mroce::baseline::testing {
namespace {

// Keeps A writing to B: tops up the send queue whenever a write completes.
class Stream {
 public:
  explicit Stream(RocePair& p) : p_(p), src_(p.a, 1 << 20), dst_(p.b, 1 << 20) {
    for (int i = 0; i < 16; ++i) post();
  }
  void keep_going() {
    while (completed_ < p_.ra.completions.size()) {
      EXPECT_EQ(p_.ra.completions[completed_++].status, WcStatus::kSuccess);
      post();
    }
  }
  // Runs for `duration`, keeping the queue full; returns the lowest pacing rate seen.
  std::uint64_t run_for(Time duration) {
    const Time end = p_.net.now() + duration;
    std::uint64_t lowest = ~std::uint64_t{0};
    p_.net.run_until(
        [&] {
          keep_going();
          ConnStats s;
          if (p_.a.connection_stats(p_.qa, &s)) lowest = std::min(lowest, s.pacing_rate_bps);
          return false;
        },
        end);
    return lowest;
  }

 private:
  void post() {
    EXPECT_EQ(
        p_.a.post_send(p_.net.now(), p_.qa,
                       remote(make_wr(0, WrOpcode::kRdmaWrite, src_, 0, 256 * 1024), dst_, 0)),
        Errc::kOk);
  }
  RocePair& p_;
  Buffer src_, dst_;
  std::size_t completed_ = 0;
};

ConnStats stats(const RoceEngine& e, StreamId q) {
  ConnStats s;
  EXPECT_TRUE(e.connection_stats(q, &s));
  return s;
}

TEST(BaselineCongestion, CnpsCutTheRateWhichRecoversAfter) {
  PairOptions o;
  o.config.line_rate_bps = 10'000'000'000;
  RocePair p(o);
  std::uint64_t cnps = 0, ect = 0, data = 0;
  std::vector<Time> cnp_times;
  p.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> bytes) {
    if (host == p.hb && bytes[0] == std::uint8_t(Opcode::kCnp)) {
      ++cnps;
      cnp_times.push_back(p.net.now());
      EXPECT_EQ(m.ecn, Ecn::kNotEct);
      EXPECT_EQ(m.cls, PacketClass::kControl);
    }
    if (host == p.ha && m.cls == PacketClass::kData) {
      ++data;
      ect += m.ecn == Ecn::kEct0;
    }
    if (m.cls == PacketClass::kAck) {
      EXPECT_EQ(m.ecn, Ecn::kNotEct);
    }
  });
  Stream s(p);
  s.run_for(2 * kMillisecond);
  const std::uint64_t line = o.config.line_rate_bps;
  EXPECT_EQ(stats(p.a, p.qa).pacing_rate_bps, line);  // no marks, no cut
  EXPECT_EQ(cnps, 0u);

  p.all_spines([](auto& sp) { sp.ce = 0.05; });
  const Time marking_start = p.net.now();
  const std::uint64_t cut = s.run_for(5 * kMillisecond);
  EXPECT_LT(cut, line / 4);
  EXPECT_GT(p.b.counters().rx_ce_packets, cnps);  // many marks, fewer CNPs
  EXPECT_LE(cnps, (p.net.now() - marking_start) / o.config.dcqcn.cnp_interval + 1);
  for (std::size_t i = 1; i < cnp_times.size(); ++i) {
    EXPECT_GE(cnp_times[i] - cnp_times[i - 1], o.config.dcqcn.cnp_interval);
  }
  PathStats ps;
  ASSERT_TRUE(p.a.path_stats(p.qa, 0, &ps));
  EXPECT_EQ(ps.ce_packets, cnps);  // CNPs the sender received
  EXPECT_EQ(ect, data);            // every data packet was ECN-capable

  p.all_spines([](auto& sp) { sp.ce = 0; });
  // Paper parameters: fast recovery, then R_AI = 40 Mb/s per 55 us timer event (the 10 MB
  // byte counter is too slow here to reach hyper increase): about 0.7 Gb/s per ms.
  s.run_for(5 * kMillisecond);
  EXPECT_LT(stats(p.a, p.qa).pacing_rate_bps, line * 95 / 100);
  s.run_for(15 * kMillisecond);
  EXPECT_GE(stats(p.a, p.qa).pacing_rate_bps, line * 95 / 100);
}

TEST(BaselineCongestion, PacketsLeaveAtTheCurrentRate) {
  for (const std::uint64_t rate : {10'000'000'000ull, 40'000'000'000ull}) {
    PairOptions o;
    o.config.line_rate_bps = rate;
    RocePair p(o);
    Time first = kNever, last = 0;
    std::uint64_t bytes = 0;
    p.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t>) {
      if (host != p.ha || m.cls != PacketClass::kData) return;
      if (first == kNever) {
        first = p.net.now();
      } else {
        bytes += m.wire_length + o.config.frame_overhead;  // what the gap before it paid for
      }
      last = p.net.now();
    });
    Buffer src(p.a, 4 << 20), dst(p.b, 4 << 20);
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                            remote(make_wr(1, WrOpcode::kRdmaWrite, src, 0, 4 << 20), dst, 0)),
              Errc::kOk);
    ASSERT_TRUE(p.run_for_completions(1));
    const double seconds = double(last - first) / 1e9;
    const double measured = double(bytes) * 8 / seconds;
    EXPECT_NEAR(measured / double(rate), 1.0, 0.01) << rate;
  }
}

TEST(BaselineCongestion, QpsShareTheLineRate) {
  PairOptions o;
  o.config.line_rate_bps = 10'000'000'000;
  RocePair p(o);
  StreamId qa2, qb2;
  ASSERT_EQ(p.a.create_stream({}, &qa2), Errc::kOk);
  ASSERT_EQ(p.b.create_stream({}, &qb2), Errc::kOk);
  p.connect(qa2, qb2);
  Buffer src(p.a, 2 << 20), dst(p.b, 4 << 20);
  Time done[2] = {0, 0};
  for (int q = 0; q < 2; ++q) {
    ASSERT_EQ(p.a.post_send(p.net.now(), q ? qa2 : p.qa,
                            remote(make_wr(q, WrOpcode::kRdmaWrite, src, 0, 2 << 20), dst,
                                   std::uint64_t(q) << 21)),
              Errc::kOk);
  }
  const Time start = p.net.now();
  ASSERT_TRUE(p.run_until([&] {
    for (const auto& c : p.ra.completions) done[c.stream == qa2] = p.net.now();
    return p.ra.completions.size() == 2;
  }));
  // Together at line rate, so each finishes in about twice its alone time, both together.
  const double alone = double(2 << 20) * 8 / 1e10 * 1e9;
  for (const Time t : done) {
    EXPECT_GT(double(t - start), 1.9 * alone);
    EXPECT_LT(double(t - start), 2.2 * alone);
  }
}

TEST(BaselineCongestion, EachPlanePortHasItsShareOfTheLineRate) {
  PairOptions o;
  o.planes = 2;
  o.config.line_rate_bps = 20'000'000'000;  // two 10 Gb/s ports
  RocePair p(o);
  StreamId qa2, qb2;
  ASSERT_EQ(p.a.create_stream({}, &qa2), Errc::kOk);
  ASSERT_EQ(p.b.create_stream({}, &qb2), Errc::kOk);
  p.connect(qa2, qb2);
  ASSERT_NE(p.a.stream_plane(p.qa), p.a.stream_plane(qa2));
  EXPECT_EQ(stats(p.a, p.qa).pacing_rate_bps, 10'000'000'000u);
  Buffer src(p.a, 2 << 20), dst(p.b, 4 << 20);
  for (int q = 0; q < 2; ++q) {
    ASSERT_EQ(p.a.post_send(p.net.now(), q ? qa2 : p.qa,
                            remote(make_wr(q, WrOpcode::kRdmaWrite, src, 0, 2 << 20), dst,
                                   std::uint64_t(q) << 21)),
              Errc::kOk);
  }
  const Time start = p.net.now();
  ASSERT_TRUE(p.run_for_completions(2));
  // Each QP alone on its port: both finish in about the time one takes at 10 Gb/s.
  const double alone = double(2 << 20) * 8 / 1e10 * 1e9;
  EXPECT_GT(double(p.net.now() - start), 0.95 * alone);
  EXPECT_LT(double(p.net.now() - start), 1.1 * alone);
}

TEST(BaselineCongestion, PlaneHintBindsTheQpToThatPort) {
  PairOptions o;
  o.planes = 2;
  o.config.line_rate_bps = 20'000'000'000;  // two 10 Gb/s ports
  RocePair p(o);
  // Without a hint QPs take ports round-robin; with one, every QP sits where it is told,
  // so two QPs can share a port and leave the other idle.
  StreamConfig on1;
  on1.plane = 1;
  StreamId qa1, qb1, qa1b, qb1b;
  ASSERT_EQ(p.a.create_stream(on1, &qa1), Errc::kOk);
  ASSERT_EQ(p.a.create_stream(on1, &qa1b), Errc::kOk);
  ASSERT_EQ(p.b.create_stream(on1, &qb1), Errc::kOk);
  ASSERT_EQ(p.b.create_stream(on1, &qb1b), Errc::kOk);
  EXPECT_EQ(p.a.stream_plane(qa1), 1);
  EXPECT_EQ(p.a.stream_plane(qa1b), 1);
  EXPECT_EQ(p.b.stream_plane(qb1), 1);
  StreamConfig on0;
  on0.plane = 0;
  StreamId q0;
  ASSERT_EQ(p.a.create_stream(on0, &q0), Errc::kOk);
  EXPECT_EQ(p.a.stream_plane(q0), 0);
  StreamConfig beyond;
  beyond.plane = 2;
  StreamId bad;
  EXPECT_EQ(p.a.create_stream(beyond, &bad), Errc::kInvalidArgument);
  beyond.plane = -2;
  EXPECT_EQ(p.a.create_stream(beyond, &bad), Errc::kInvalidArgument);

  // Two QPs on one 10 Gb/s port share it: each takes about twice its alone time.
  p.connect(qa1, qb1);
  p.connect(qa1b, qb1b);
  Buffer src(p.a, 2 << 20), dst(p.b, 4 << 20);
  for (int q = 0; q < 2; ++q) {
    ASSERT_EQ(p.a.post_send(p.net.now(), q ? qa1b : qa1,
                            remote(make_wr(q, WrOpcode::kRdmaWrite, src, 0, 2 << 20), dst,
                                   std::uint64_t(q) << 21)),
              Errc::kOk);
  }
  const Time start = p.net.now();
  ASSERT_TRUE(p.run_for_completions(2));
  const double alone = double(2 << 20) * 8 / 1e10 * 1e9;
  EXPECT_GT(double(p.net.now() - start), 1.9 * alone);
  EXPECT_LT(double(p.net.now() - start), 2.2 * alone);
  PathStats ps;
  ASSERT_TRUE(p.a.path_stats(qa1, 0, &ps));
  EXPECT_EQ(ps.plane, 1);
}

}  // namespace
}  // namespace mroce::baseline::testing
