// Loss recovery the RoCEv2 way: one path per QP, in-order acceptance, go-back-N, the
// retransmission timer as last resort; and the properties the comparison relies on
// (24-bit PSN wrap, duplicates never executed twice, determinism).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "baseline/codec.h"
#include "baseline/psn.h"
#include "tests/baseline/roce_pair.h"

namespace mroce::baseline::testing {
namespace {

// WRITEs, SENDs and READs of varied sizes from A to B; checks every byte afterwards.
struct Transfer {
  explicit Transfer(RocePair& p, int messages = 60, std::uint32_t size = 64 * 1024)
      : pair(p),
        messages(messages),
        size(size),
        src(p.a, std::size_t(messages) * size),
        dst(p.b, std::size_t(messages) * size),
        rbuf(p.b, std::size_t(messages) * size),
        back(p.a, std::size_t(messages) * size) {
    fill_pattern(src.bytes, 11);
    fill_pattern(dst.bytes, 12);  // READ source, overwritten by WRITEs only where they land
    for (int i = 0; i < messages; ++i) {
      const std::uint64_t off = std::uint64_t(i) * size;
      const std::uint32_t len = size - std::uint32_t(i * 37 % 4096);
      switch (i % 3) {
        case 0:
          EXPECT_EQ(
              p.a.post_send(p.net.now(), p.qa,
                            remote(make_wr(i, WrOpcode::kRdmaWrite, src, off, len), dst, off)),
              Errc::kOk);
          break;
        case 1:
          EXPECT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(i, rbuf, off, size)), Errc::kOk);
          EXPECT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(i, WrOpcode::kSend, src, off, len)),
                    Errc::kOk);
          break;
        case 2:
          EXPECT_EQ(
              p.a.post_send(p.net.now(), p.qa,
                            remote(make_wr(i, WrOpcode::kRdmaRead, back, off, len), dst, off)),
              Errc::kOk);
          break;
      }
      lengths.push_back(len);
    }
  }

  bool run(Time limit = 2000 * kMillisecond) {
    const std::size_t recvs = std::size_t(messages + 1) / 3;
    return pair.run_for_completions(std::size_t(messages), recvs, limit);
  }

  void verify() const {
    ASSERT_EQ(pair.ra.completions.size(), std::size_t(messages));
    for (int i = 0; i < messages; ++i) {
      const Completion& c = pair.ra.completions[i];
      EXPECT_EQ(c.wr_id, std::uint64_t(i));  // completions keep posting order
      EXPECT_EQ(c.status, WcStatus::kSuccess);
      const std::uint64_t off = std::uint64_t(i) * size;
      switch (i % 3) {
        case 0:
          EXPECT_TRUE(same_bytes(src.bytes, off, dst.bytes, off, lengths[i])) << i;
          break;
        case 1:
          EXPECT_TRUE(same_bytes(src.bytes, off, rbuf.bytes, off, lengths[i])) << i;
          break;
        case 2:
          EXPECT_TRUE(same_bytes(dst.bytes, off, back.bytes, off, lengths[i])) << i;
          break;
      }
    }
    for (const Completion& c : pair.rb.completions) {
      EXPECT_EQ(c.status, WcStatus::kSuccess);
      EXPECT_EQ(c.byte_len, lengths[c.wr_id]);
    }
  }

  RocePair& pair;
  int messages;
  std::uint32_t size;
  Buffer src, dst, rbuf, back;
  std::vector<std::uint32_t> lengths;
};

TEST(BaselineRecovery, GoBackNRecoversOnePercentLossAtACost) {
  PairOptions o;
  o.seed = 7;
  RocePair p(o);
  // Every packet may be lost, acknowledgements included.
  p.all_spines([](auto& s) {
    s.loss = 0.01;
    s.loss_all = true;
  });
  Transfer t(p);
  ASSERT_TRUE(t.run());
  t.verify();
  const std::uint64_t drops = p.spine_drops();
  const std::uint64_t retransmits = p.a.counters().tx_retransmits + p.b.counters().tx_retransmits;
  EXPECT_GT(drops, 10u);
  // Go-back-N resends everything in flight behind each loss, not just the lost packet.
  EXPECT_GT(retransmits, 3 * drops);
  EXPECT_GT(p.b.counters().drop(DropReason::kOutOfWindow), 0u);  // discarded out of order
  PathStats ps;
  ASSERT_TRUE(p.a.path_stats(p.qa, 0, &ps));
  EXPECT_GT(ps.lost_packets, 0u);
  EXPECT_EQ(ps.retransmits, p.a.counters().tx_retransmits);
  EXPECT_GE(ps.srtt, 20 * kMicrosecond);  // two 10 us spine crossings at least
}

TEST(BaselineRecovery, LossFreeRunHasNoRetransmissions) {
  RocePair p;
  Transfer t(p);
  ASSERT_TRUE(t.run());
  t.verify();
  EXPECT_EQ(p.a.counters().tx_retransmits + p.b.counters().tx_retransmits, 0u);
  EXPECT_EQ(p.a.counters().total_drops() + p.b.counters().total_drops(), 0u);
}

TEST(BaselineRecovery, EachQpUsesOneSourcePortOnOnePlane) {
  PairOptions o;
  o.planes = 2;
  RocePair p(o);
  std::vector<StreamId> qas{p.qa}, qbs{p.qb};
  for (int i = 0; i < 5; ++i) {
    StreamId x, y;
    ASSERT_EQ(p.a.create_stream({}, &x), Errc::kOk);
    ASSERT_EQ(p.b.create_stream({}, &y), Errc::kOk);
    p.connect(x, y);
    qas.push_back(x);
    qbs.push_back(y);
  }
  std::map<std::uint32_t, std::set<std::pair<std::uint16_t, std::uint8_t>>> seen;  // by dest QP
  p.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> bytes) {
    if (host != p.ha) return;
    const std::uint32_t dest = std::uint32_t(bytes[5]) << 16 | bytes[6] << 8 | bytes[7];
    seen[dest].insert({m.src_port, m.plane});
    EXPECT_EQ(m.dst_port, kRoceV2Port);
  });
  Buffer src(p.a, 1 << 20), dst(p.b, 1 << 20);
  for (std::size_t q = 0; q < qas.size(); ++q) {
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(p.a.post_send(p.net.now(), qas[q],
                              remote(make_wr(i, WrOpcode::kRdmaWrite, src, 0, 100000), dst, 0)),
                Errc::kOk);
    }
  }
  ASSERT_TRUE(p.run_for_completions(4 * qas.size()));
  ASSERT_EQ(seen.size(), qas.size());
  std::set<std::uint8_t> planes;
  for (std::size_t q = 0; q < qas.size(); ++q) {
    const auto& tuples = seen[qbs[q]];
    ASSERT_EQ(tuples.size(), 1u) << "QP " << qas[q];
    const auto [port, plane] = *tuples.begin();
    EXPECT_EQ(port, p.a.src_port_for(qas[q], qbs[q]));
    EXPECT_GE(port, p.a.config().src_port_base);
    EXPECT_LT(port, p.a.config().src_port_base + p.a.config().src_port_count);
    EXPECT_EQ(plane, q % 2);  // round-robin over the planes
    planes.insert(plane);
    PathStats ps;
    ASSERT_TRUE(p.a.path_stats(qas[q], 0, &ps));
    EXPECT_EQ(ps.src_port, port);
    EXPECT_FALSE(p.a.path_stats(qas[q], 1, &ps));
  }
  EXPECT_EQ(planes.size(), 2u);
  int connections = 0;
  p.a.for_each_connection([&](ConnId) { ++connections; });
  EXPECT_EQ(connections, int(qas.size()));
}

TEST(BaselineRecovery, BlackHoleExhaustsRetriesThenFlushes) {
  RocePair p;
  Buffer src(p.a, 64 * 1024), dst(p.b, 64 * 1024);
  p.all_spines([](auto& s) { s.blackhole = true; });
  const Time start = p.net.now();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                            remote(make_wr(i, WrOpcode::kRdmaWrite, src, 0, 20000), dst, 0)),
              Errc::kOk);
  }
  ASSERT_TRUE(p.run_for_completions(3));
  const Time took = p.net.now() - start;
  ASSERT_EQ(p.ra.completions.size(), 3u);
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(p.ra.completions[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(p.ra.completions[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(p.a.stream_state(p.qa), StreamState::kError);
  const RoceConfig& cfg = p.a.config();
  PathStats ps;
  ASSERT_TRUE(p.a.path_stats(p.qa, 0, &ps));
  EXPECT_EQ(ps.timeouts, cfg.retry_cnt + 1u);
  EXPECT_EQ(ps.state, PathState::kFailed);
  // retry_cnt + 1 timeouts of ack_timeout each, give or take the sending time.
  EXPECT_GE(took, (cfg.retry_cnt + 1u) * cfg.ack_timeout);
  EXPECT_LT(took, (cfg.retry_cnt + 2u) * cfg.ack_timeout);
  bool failed_event = false;
  for (const auto& e : p.ra.events) failed_event |= e.kind == EventKind::kConnFailed;
  EXPECT_TRUE(failed_event);
  ConnStats cs;
  ASSERT_TRUE(p.a.connection_stats(p.qa, &cs));
  EXPECT_EQ(cs.state, ConnState::kFailed);
}

// Adaptive (the software stack's setting), the k-th timeout in a row waits 2^k timeouts:
// retry_cnt + 1 of them take 2^(retry_cnt + 1) - 1 in all.
TEST(BaselineRecovery, AdaptiveAckTimeoutBacksOff) {
  PairOptions o;
  o.config.adaptive_ack_timeout = true;
  RocePair p(o);
  Buffer src(p.a, 64 * 1024), dst(p.b, 64 * 1024);
  // One transfer that makes progress first: its timeouts must start from one timeout.
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(0, WrOpcode::kRdmaWrite, src, 0, 20000), dst, 0)),
            Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1));
  ASSERT_EQ(p.ra.completions[0].status, WcStatus::kSuccess);
  p.all_spines([](auto& s) { s.blackhole = true; });
  const Time start = p.net.now();
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(1, WrOpcode::kRdmaWrite, src, 0, 20000), dst, 0)),
            Errc::kOk);
  const RoceConfig& cfg = p.a.config();
  ASSERT_TRUE(p.run_for_completions(2, 0, 300 * cfg.ack_timeout));
  const Time took = p.net.now() - start;
  EXPECT_EQ(p.ra.completions[1].status, WcStatus::kRetryExcErr);
  PathStats ps;
  ASSERT_TRUE(p.a.path_stats(p.qa, 0, &ps));
  EXPECT_EQ(ps.timeouts, cfg.retry_cnt + 1u);
  const Time timeout = std::max(cfg.ack_timeout, 2 * ps.srtt);
  const Time total = ((Time{1} << (cfg.retry_cnt + 1)) - 1) * timeout;
  EXPECT_GE(took, total);
  EXPECT_LT(took, total + timeout);
}

// An RTT of twice the configured timeout: the fixed timeout fires on every window, the
// adaptive one only before the first RTT sample.
TEST(BaselineRecovery, AdaptiveAckTimeoutFollowsTheRtt) {
  std::uint64_t timeouts[2] = {};
  for (const bool adaptive : {false, true}) {
    PairOptions o;
    o.config.adaptive_ack_timeout = adaptive;
    RocePair p(o);
    p.all_spines([&](auto& s) { s.delay = p.a.config().ack_timeout; });
    Buffer src(p.a, 64 * 1024), dst(p.b, 64 * 1024);
    for (int i = 0; i < 40; ++i) {
      ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                              remote(make_wr(i, WrOpcode::kRdmaWrite, src, 0, 20000), dst, 0)),
                Errc::kOk);
      ASSERT_TRUE(p.run_for_completions(std::size_t(i) + 1, 0, 200 * kMillisecond));
    }
    PathStats ps;
    ASSERT_TRUE(p.a.path_stats(p.qa, 0, &ps));
    timeouts[adaptive] = ps.timeouts;
    if (adaptive) {
      for (const auto& c : p.ra.completions) EXPECT_EQ(c.status, WcStatus::kSuccess);
    }
  }
  EXPECT_GE(timeouts[0], 20u);
  EXPECT_LE(timeouts[1], 2u);
}

TEST(BaselineRecovery, PsnWrapsAroundTwentyFourBits) {
  for (const double loss : {0.0, 0.02}) {
    PairOptions o;
    o.config.initial_psn = kPsnMask - 40;
    o.seed = 3;
    RocePair p(o);
    p.all_spines([&](auto& s) {
      s.loss = loss;
      s.loss_all = true;
    });
    std::uint32_t lowest = kPsnMask, highest = 0;
    p.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> bytes) {
      if (host != p.ha || m.cls != PacketClass::kData) return;
      const std::uint32_t psn = std::uint32_t(bytes[9]) << 16 | bytes[10] << 8 | bytes[11];
      lowest = std::min(lowest, psn);
      highest = std::max(highest, psn);
    });
    Transfer t(p, 9, 32 * 1024);  // about 70 PSNs
    ASSERT_TRUE(t.run());
    t.verify();
    EXPECT_GT(highest, kPsnMask - 41);  // before the wrap...
    EXPECT_LT(lowest, 40u);             // ...and after it
  }
}

TEST(BaselineRecovery, DuplicatesAreAcknowledgedNeverExecutedTwice) {
  PairOptions o;
  o.seed = 5;
  o.stream.sq_depth = 512;
  o.stream.rq_depth = 256;
  RocePair p(o);
  p.all_spines([](auto& s) {
    s.duplicate = 0.05;
    s.loss = 0.01;
    s.loss_all = true;
  });
  Buffer local(p.a, 8 * 200), counter(p.b, 8, access::kLocalWrite | access::kRemoteAtomic);
  Buffer src(p.a, 4096), rbuf(p.b, 4096 * 200);
  for (int i = 0; i < 200; ++i) {
    SendWr faa = remote(make_wr(i, WrOpcode::kAtomicFetchAdd, local, 8 * i, 8), counter, 0);
    faa.compare_add = 3;
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, faa), Errc::kOk);
    ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(i, rbuf, 4096 * i, 4096)), Errc::kOk);
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(1000 + i, WrOpcode::kSend, src, 0, 100)),
              Errc::kOk);
  }
  ASSERT_TRUE(p.run_for_completions(400, 200));
  std::uint64_t total;
  std::memcpy(&total, counter.bytes.data(), 8);
  EXPECT_EQ(total, 600u);  // each add executed exactly once
  std::set<std::uint64_t> originals;
  for (int i = 0; i < 200; ++i) {
    std::uint64_t v;
    std::memcpy(&v, local.bytes.data() + 8 * i, 8);
    originals.insert(v);
  }
  EXPECT_EQ(originals.size(), 200u);                      // every FAA saw a distinct value
  EXPECT_EQ(p.rb.count(true, WcStatus::kSuccess), 200u);  // each SEND delivered once
  EXPECT_GT(p.b.counters().drop(DropReason::kDuplicate), 0u);
}

TEST(BaselineRecovery, SameSeedSameRun) {
  const auto run = [](std::uint64_t seed) {
    PairOptions o;
    o.seed = seed;
    auto p = std::make_unique<RocePair>(o);
    p->all_spines([](auto& s) {
      s.loss = 0.02;
      s.loss_all = true;
      s.ce = 0.01;
      s.jitter = 2 * kMicrosecond;
    });
    Transfer t(*p, 30);
    EXPECT_TRUE(t.run());
    return std::make_tuple(p->a.counters(), p->b.counters(), p->net.now(), p->net.events());
  };
  const auto first = run(21);
  const auto second = run(21);
  const auto other = run(22);
  const auto same = [](const Counters& x, const Counters& y) {
    return std::memcmp(&x, &y, sizeof(Counters)) == 0;
  };
  EXPECT_TRUE(same(std::get<0>(first), std::get<0>(second)));
  EXPECT_TRUE(same(std::get<1>(first), std::get<1>(second)));
  EXPECT_EQ(std::get<2>(first), std::get<2>(second));
  EXPECT_EQ(std::get<3>(first), std::get<3>(second));
  EXPECT_GT(std::get<0>(first).tx_retransmits, 0u);
  EXPECT_NE(std::get<3>(first), std::get<3>(other));  // the seed does drive the run
}

}  // namespace
}  // namespace mroce::baseline::testing
