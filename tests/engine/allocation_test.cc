// No heap allocation per packet in the MetaRoCE engine: two engines wired back to back,
// once their connection is up, move megabytes of WRITE, SEND and READ over 16 paths with
// loss and CE marks, while every operator new in the process is counted.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "core/engine.h"
#include "harness/allocation_counter.h"

namespace mroce {
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

struct Pair {
  explicit Pair(const EngineConfig& config) : a(with(config, 1)), b(with(config, 2)) {
    a.set_sink(&sa);
    b.set_sink(&sb);
  }
  static EngineConfig with(EngineConfig c, std::uint32_t host) {
    c.planes = {Address::ipv4(0x0a000000u | host)};
    c.seed = host;
    return c;
  }
  // Moves every packet across once, dropping every 97th and CE-marking every 50th ECT one;
  // then advances the clock to the next deadline if nothing moved.
  void step() {
    bool moved = false;
    Engine* engines[2] = {&a, &b};
    for (int side = 0; side < 2; ++side) {
      Engine& e = *engines[side];
      if (e.next_deadline() <= now) e.on_timer(now);
      TxMeta m;
      while (e.poll_transmit(now, buf, &m)) {
        moved = true;
        ++sent;
        if (sent % 97 == 0) {
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
    now = moved ? now + kMicrosecond
                : std::max(now + 1, std::min(a.next_deadline(), b.next_deadline()));
  }
  Engine a, b;
  CountingSink sa, sb;
  std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(a.max_packet_size());
  std::uint64_t sent = 0, lost = 0;
  Time now = 1000;
};

TEST(EngineAllocation, SteadyStateAllocatesNothingPerPacket) {
  EngineConfig config;
  config.paths = 16;
  config.min_rto = 200 * kMicrosecond;
  Pair p(config);
  StreamId qa, qb;
  ASSERT_EQ(p.a.create_stream(StreamConfig{.sq_depth = 256, .rq_depth = 256}, &qa), Errc::kOk);
  ASSERT_EQ(p.b.create_stream(StreamConfig{.sq_depth = 256, .rq_depth = 256}, &qb), Errc::kOk);
  ASSERT_EQ(p.a.connect_stream(p.now, qa, {p.b.config().planes[0], kDefaultPort}, qb), Errc::kOk);
  ASSERT_EQ(p.b.connect_stream(p.now, qb, {p.a.config().planes[0], kDefaultPort}, qa), Errc::kOk);
  std::vector<std::uint8_t> src(1 << 20, 1), dst(1 << 20), back(1 << 20);
  MrKeys ka, kb, kback;
  ASSERT_EQ(p.a.reg_mr(std::uint64_t(src.data()), src.size(), access::kAll, src.data(), &ka),
            Errc::kOk);
  ASSERT_EQ(p.a.reg_mr(std::uint64_t(back.data()), back.size(), access::kAll, back.data(), &kback),
            Errc::kOk);
  ASSERT_EQ(p.b.reg_mr(std::uint64_t(dst.data()), dst.size(), access::kAll, dst.data(), &kb),
            Errc::kOk);
  // Set-up allocates (the connection, and its tables once established at each end); the
  // steady state must not.
  const auto established = [&](Engine& e, StreamId s) {
    ConnStats cs;
    return e.connection_stats(e.stream_connection(s), &cs) && cs.state == ConnState::kEstablished;
  };
  for (int i = 0; i < 1000 && !(established(p.a, qa) && established(p.b, qb)); ++i) p.step();
  ASSERT_TRUE(established(p.a, qa) && established(p.b, qb));

  const int kMessages = 192;
  const auto post_batch = [&](int round) {
    for (int i = 0; i < kMessages; ++i) {
      SendWr wr;
      wr.wr_id = std::uint64_t(round * kMessages + i);
      wr.opcode = i % 3 == 0   ? WrOpcode::kRdmaWrite
                  : i % 3 == 1 ? WrOpcode::kSend
                               : WrOpcode::kRdmaRead;
      wr.num_sge = 1;
      wr.sg[0] = {std::uint64_t((wr.opcode == WrOpcode::kRdmaRead ? back : src).data()), 60000,
                  wr.opcode == WrOpcode::kRdmaRead ? kback.lkey : ka.lkey};
      wr.remote_addr = std::uint64_t(dst.data());
      wr.rkey = kb.rkey;
      ASSERT_EQ(p.a.post_send(p.now, qa, wr), Errc::kOk);
      if (wr.opcode == WrOpcode::kSend) {
        RecvWr r;
        r.num_sge = 1;
        r.sg[0] = {std::uint64_t(dst.data()), 65536, kb.lkey};
        ASSERT_EQ(p.b.post_recv(p.now, qb, r), Errc::kOk);
      }
    }
  };
  // One round: a batch posted, then stepped until it completed, allocations counted.
  const auto run_round = [&](int round) {
    post_batch(round);
    testing::count_allocations(true);
    while (p.sa.completions < std::uint64_t((round + 1) * kMessages) && p.now < 20 * kSecond) {
      p.step();
    }
    testing::count_allocations(false);
    return p.sa.completions == std::uint64_t((round + 1) * kMessages);
  };
  // The first rounds take the per-path rings, message slots and response slots their
  // windows reach (a few per path, however many packets); once the pool holds as many
  // as the busiest moment needs, a round at the same windows reuses them.
  const int kWarmUp = 3;
  std::uint64_t warm_up = 0;
  for (int round = 0; round < kWarmUp; ++round) {
    ASSERT_TRUE(run_round(round)) << "round " << round << " did not complete";
    std::printf("round %d: %llu allocations, %llu packets so far\n", round,
                static_cast<unsigned long long>(testing::allocations() - warm_up),
                static_cast<unsigned long long>(p.sent));
    warm_up = testing::allocations();
  }
  EXPECT_LT(warm_up, p.sent / 20);
  // Warm, a pool still grows when the windows reach a new high-water mark (one more ring
  // of a size, a table's slots doubled): a few allocations in tens of thousands of
  // packets, bounded by the paths and the tables, however long the run. An allocation
  // per packet, per ACK or per message would show thousands here.
  const int kMeasured = 8;
  const std::uint64_t warm_sent = p.sent;
  for (int round = kWarmUp; round < kWarmUp + kMeasured; ++round) {
    ASSERT_TRUE(run_round(round)) << "round " << round << " did not complete";
  }
  const std::uint64_t warm = testing::allocations() - warm_up;
  std::printf("warm: %llu allocations in %llu packets\n", static_cast<unsigned long long>(warm),
              static_cast<unsigned long long>(p.sent - warm_sent));
  EXPECT_EQ(p.sa.failures, 0u);
  EXPECT_GT(p.sent - warm_sent, 30000u);
  EXPECT_GT(p.lost, 300u);
  EXPECT_GT(p.a.counters().tx_retransmits, 0u);
  EXPECT_GT(p.b.counters().rx_ce_packets, 0u);
  EXPECT_LE(warm, 2u * config.paths) << "more than a pool's high-water growth";
}

// UD queue pairs: once created (their queues sized then), sending and receiving datagrams
// allocates nothing either.
TEST(EngineAllocation, DatagramsAllocateNothingPerPacket) {
  Pair p(EngineConfig{});
  StreamId qa, qb;
  ASSERT_EQ(p.a.create_datagram({.sq_depth = 256, .rq_depth = 512, .qkey = 9}, &qa), Errc::kOk);
  ASSERT_EQ(p.b.create_datagram({.sq_depth = 256, .rq_depth = 512, .qkey = 9}, &qb), Errc::kOk);
  std::vector<std::uint8_t> src(1 << 16, 1), dst(1 << 16);
  MrKeys ka, kb;
  ASSERT_EQ(p.a.reg_mr(std::uint64_t(src.data()), src.size(), access::kAll, src.data(), &ka),
            Errc::kOk);
  ASSERT_EQ(p.b.reg_mr(std::uint64_t(dst.data()), dst.size(), access::kAll, dst.data(), &kb),
            Errc::kOk);
  RecvWr r;
  r.num_sge = 1;
  r.sg[0] = {std::uint64_t(dst.data()), 4096 + kGrhSize, kb.lkey};
  SendWr w;
  w.num_sge = 1;
  w.sg[0] = {std::uint64_t(src.data()), 4096, ka.lkey};
  const DatagramDest d{{p.b.config().planes[0], kDefaultPort}, qb, 9, 0};
  for (int i = 0; i < 512; ++i) ASSERT_EQ(p.b.post_recv(p.now, qb, r), Errc::kOk);
  const std::uint64_t before = testing::allocations();  // earlier tests' count stays
  testing::count_allocations(true);
  for (int round = 0; round < 4; ++round) {
    const std::uint64_t done = p.sb.completions;
    for (int i = 0; i < 128; ++i) ASSERT_EQ(p.a.post_datagram(p.now, qa, w, d), Errc::kOk);
    p.step();
    for (std::uint64_t i = done; i < p.sb.completions; ++i) {
      ASSERT_EQ(p.b.post_recv(p.now, qb, r), Errc::kOk);  // what each datagram took
    }
  }
  testing::count_allocations(false);
  EXPECT_EQ(p.sb.completions, 512u - p.lost);  // the harness drops every 97th: unreliable
  EXPECT_GT(p.lost, 0u);
  EXPECT_EQ(p.sb.failures, 0u);
  EXPECT_EQ(testing::allocations() - before, 0u);
}

}  // namespace
}  // namespace mroce
