// Whatever arrives, the engine counts it, drops what does not belong, and never crashes:
// malformed packets, strangers, wrong partitions, corrupted bits, random mutations.
#include <gtest/gtest.h>

#include <random>

#include "baseline/codec.h"
#include "baseline/icrc.h"
#include "tests/baseline/roce_pair.h"

namespace mroce::baseline::testing {
namespace {

RxMeta from_a(const RocePair& p) {
  RxMeta m;
  m.src = kAddrA;
  m.dst = kAddrB;
  m.src_port = p.a.src_port_for(p.qa, p.qb);
  m.dst_port = kRoceV2Port;
  return m;
}

// A valid SEND ONLY from A's QP to B's, with a correct ICRC.
std::vector<std::uint8_t> send_only(const RocePair& p, std::uint32_t psn) {
  Packet pk;
  pk.bth.opcode = Opcode::kSendOnly;
  pk.bth.dest_qp = p.qb;
  pk.bth.psn = psn;
  pk.payload_length = 8;
  std::vector<std::uint8_t> buf(64);
  const std::size_t at = write_headers(pk, buf);
  std::fill(buf.begin() + long(at), buf.begin() + long(at) + 8, 0x5a);
  std::uint32_t wire;
  buf.resize(finish(pk, true, buf, &wire));
  TxMeta m;
  m.src = kAddrA;
  m.dst = kAddrB;
  m.src_port = p.a.src_port_for(p.qa, p.qb);
  m.dst_port = kRoceV2Port;
  stamp_icrc(m, buf);
  return buf;
}

TEST(BaselineRobustness, MalformedPacketsAreCountedAndDropped) {
  RocePair p;
  const RxMeta meta = from_a(p);
  std::vector<std::vector<std::uint8_t>> bad = {
      {},
      {0x04},
      std::vector<std::uint8_t>(15, 0),
  };
  auto b = send_only(p, 0);
  b[0] = 0x1f;
  bad.push_back(b);
  b = send_only(p, 0);
  b[1] |= 0x02;
  bad.push_back(b);
  b = send_only(p, 0);
  b[8] |= 0x40;
  bad.push_back(b);
  b = send_only(p, 0);
  b.pop_back();
  bad.push_back(b);
  b = send_only(p, 0);
  b[14] ^= 0x10;  // payload bit flipped: the ICRC no longer matches
  bad.push_back(b);
  for (std::size_t i = 0; i < bad.size(); ++i) {
    p.net.inject(p.hb, meta, bad[i]);
    EXPECT_EQ(p.b.counters().drop(DropReason::kMalformed), i + 1) << i;
  }
  EXPECT_EQ(p.b.counters().rx_packets, bad.size());
  EXPECT_EQ(p.b.counters().total_drops(), bad.size());
  // The QP is unharmed.
  Buffer src(p.a, 4096), dst(p.b, 4096);
  fill_pattern(src.bytes, 1);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(1, dst, 0, 4096)), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(1, WrOpcode::kSend, src, 0, 3000)), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1, 1));
  EXPECT_EQ(p.rb.completions[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(same_bytes(src.bytes, 0, dst.bytes, 0, 3000));
}

TEST(BaselineRobustness, PacketsThatDoNotBelongAreDropped) {
  RocePair p;
  RxMeta meta = from_a(p);
  auto wrong_qp = send_only(p, 0);
  wrong_qp[7] ^= 0x55;
  TxMeta tx;
  tx.src = meta.src;
  tx.dst = meta.dst;
  tx.src_port = meta.src_port;
  tx.dst_port = meta.dst_port;
  stamp_icrc(tx, wrong_qp);
  p.net.inject(p.hb, meta, wrong_qp);
  EXPECT_EQ(p.b.counters().drop(DropReason::kUnknownConn), 1u);

  RxMeta stranger = meta;
  stranger.src = Address::ipv4(0x0a0000ff);
  auto from_stranger = send_only(p, 0);
  tx.src = stranger.src;
  stamp_icrc(tx, from_stranger);
  p.net.inject(p.hb, stranger, from_stranger);
  EXPECT_EQ(p.b.counters().drop(DropReason::kUnknownConn), 2u);

  auto wrong_pkey = send_only(p, 0);
  wrong_pkey[3] = 0x07;
  tx.src = meta.src;
  stamp_icrc(tx, wrong_pkey);
  p.net.inject(p.hb, meta, wrong_pkey);
  EXPECT_EQ(p.b.counters().drop(DropReason::kBadToken), 1u);
  EXPECT_TRUE(p.rb.completions.empty());
}

TEST(BaselineRobustness, CorruptedBitsAreCaughtByTheIcrcAndRecovered) {
  PairOptions o;
  o.seed = 9;
  RocePair p(o);
  p.all_spines([](auto& s) { s.corrupt = 0.01; });
  Buffer src(p.a, 4 << 20), dst(p.b, 4 << 20);
  fill_pattern(src.bytes, 4);
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(
        p.a.post_send(p.net.now(), p.qa,
                      remote(make_wr(i, WrOpcode::kRdmaWrite, src, std::uint64_t(i) << 20, 1 << 20),
                             dst, std::uint64_t(i) << 20)),
        Errc::kOk);
  }
  ASSERT_TRUE(p.run_for_completions(4));
  EXPECT_EQ(p.ra.count(false, WcStatus::kSuccess), 4u);
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_GT(
      p.a.counters().drop(DropReason::kMalformed) + p.b.counters().drop(DropReason::kMalformed),
      0u);
}

TEST(BaselineRobustness, RandomMutationsNeverCrash) {
  // Record a real exchange, then replay mutated copies of its packets into a fresh pair.
  std::vector<std::pair<int, std::vector<std::uint8_t>>> recorded;
  {
    RocePair p;
    p.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
      recorded.emplace_back(host, std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
    });
    Buffer src(p.a, 64 * 1024), dst(p.b, 64 * 1024), rbuf(p.b, 64 * 1024);
    Buffer word(p.b, 8);
    ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(1, rbuf, 0, 65536)), Errc::kOk);
    p.a.post_send(p.net.now(), p.qa, make_wr(1, WrOpcode::kSendWithImm, src, 0, 9000));
    p.a.post_send(p.net.now(), p.qa,
                  remote(make_wr(2, WrOpcode::kRdmaWrite, src, 0, 9000), dst, 0));
    p.a.post_send(p.net.now(), p.qa, remote(make_wr(3, WrOpcode::kRdmaRead, src, 0, 9000), dst, 0));
    p.a.post_send(p.net.now(), p.qa,
                  remote(make_wr(4, WrOpcode::kAtomicCmpSwp, src, 0, 8), word, 0));
    ASSERT_TRUE(p.run_for_completions(4, 1));
  }
  ASSERT_GT(recorded.size(), 10u);
  for (const bool carry : {true, false}) {
    PairOptions o;
    o.config.carry_payload = carry;
    o.config.icrc = false;  // let mutations through to the transport
    RocePair p(o);
    Buffer dst(p.b, 64 * 1024), rbuf(p.b, 64 * 1024);
    for (int i = 0; i < 8; ++i) p.b.post_recv(p.net.now(), p.qb, make_recv(i, rbuf, 0, 65536));
    std::mt19937_64 rng(carry ? 1 : 2);
    std::uint64_t injected = 0;
    for (int round = 0; round < 20000; ++round) {
      const auto& [host, original] = recorded[rng() % recorded.size()];
      auto bytes = original;
      // The QPNs of the fresh pair, so that mutations reach the transport.
      const StreamId dest = host == 0 ? p.qb : p.qa;
      if (bytes.size() >= 8) {
        bytes[5] = std::uint8_t(dest >> 16);
        bytes[6] = std::uint8_t(dest >> 8);
        bytes[7] = std::uint8_t(dest);
      }
      const int flips = int(rng() % 4);
      for (int f = 0; f < flips && !bytes.empty(); ++f)
        bytes[rng() % bytes.size()] ^= std::uint8_t(1u << (rng() % 8));
      if (rng() % 8 == 0 && !bytes.empty()) bytes.resize(rng() % bytes.size());
      RxMeta meta;
      meta.src = host == 0 ? kAddrA : kAddrB;
      meta.dst = host == 0 ? kAddrB : kAddrA;
      meta.dst_port = kRoceV2Port;
      meta.ecn = rng() % 16 == 0 ? Ecn::kCe : Ecn::kEct0;
      p.net.inject(host == 0 ? p.hb : p.ha, meta, bytes);
      ++injected;
      if (round % 100 == 0) p.net.run_for(10 * kMicrosecond);
    }
    p.net.run_for(10 * kMillisecond);
    EXPECT_GE(p.a.counters().rx_packets + p.b.counters().rx_packets, injected);
    EXPECT_GT(p.a.counters().total_drops() + p.b.counters().total_drops(), 0u);
  }
}

}  // namespace
}  // namespace mroce::baseline::testing
