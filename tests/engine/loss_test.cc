// Properties that must hold on any lossy, reordering, duplicating network, checked over
// many seeds: every message arrives exactly once and byte-exact, completions keep
// stream order, and without duplication or cross-path reordering every retransmission
// answers exactly one drop.
#include "engine/workload.h"
#include "wire/codec.h"

namespace mroce::testing {
namespace {

constexpr int kSeeds = 12;

struct Impairment {
  const char* name;
  double loss;
  double duplicate;
  bool reorder;  // different delay and jitter per spine
};

class LossProperty : public ::testing::TestWithParam<std::tuple<Impairment, int>> {};

TEST_P(LossProperty, ExactlyOnceInOrderByteExact) {
  const auto [imp, seed] = GetParam();
  Cluster cl(2, 1, 4, std::uint64_t(seed));
  for (int s = 0; s < 4; ++s) {
    SpineParams& sp = cl.net.spine(0, s);
    sp.loss = imp.loss;
    sp.loss_all = true;  // ACKs, NACKs and set-up are lost too
    sp.duplicate = imp.duplicate;
    if (imp.reorder) {
      sp.delay = Time(5 + 7 * s) * kMicrosecond;
      sp.jitter = 3 * kMicrosecond;
    }
  }
  Workload w(cl, 4, 120, 40000, std::uint64_t(seed));
  w.post_all();
  ASSERT_TRUE(w.run(20 * kSecond)) << "transfer did not finish";
  w.verify();
}

const Impairment kImpairments[] = {
    {"clean", 0, 0, true},        {"loss1", 0.01, 0, true}, {"loss5", 0.05, 0.01, true},
    {"loss10", 0.10, 0.02, true}, {"dup5", 0, 0.05, true},
};

INSTANTIATE_TEST_SUITE_P(Seeds, LossProperty,
                         ::testing::Combine(::testing::ValuesIn(kImpairments),
                                            ::testing::Range(1, kSeeds + 1)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_seed" +
                                  std::to_string(std::get<1>(info.param));
                         });

class RetransmitProperty : public ::testing::TestWithParam<int> {};

TEST_P(RetransmitProperty, RetransmissionsEqualDrops) {
  const int seed = GetParam();
  Cluster cl(2, 1, 4, std::uint64_t(seed));
  for (int s = 0; s < 4; ++s) cl.net.spine(0, s).loss = 0.02;  // data only, same delay
  Workload w(cl, 3, 100, 30000, std::uint64_t(seed), /*with_reads=*/false);
  w.post_all();
  ASSERT_TRUE(w.run(20 * kSecond));
  w.verify();
  const std::uint64_t drops = cl.net.total_content_drops();
  EXPECT_GT(drops, 0u);
  EXPECT_EQ(cl.engine(0).counters().tx_retransmits, drops);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RetransmitProperty, ::testing::Range(1, kSeeds + 1));

// A lost packet leaves again when the ACK that shows the gap arrives, not at the
// pacer's next departure: a sender paced to 100 Mbit/s has a departure every 330 us,
// the ACK comes back in 20 us.
TEST(Resend, LeavesWhenTheGapArrivesNotBehindThePacer) {
  Cluster cl(2, 1, 1, 7, [](int, EngineConfig& c) {
    c.paths = 1;
    c.line_rate_bps = 100'000'000;
    c.pacing_burst_bytes = 1024;
  });
  auto [a, b] = cl.connect(0, 1);
  (void)b;
  Buffer src(cl.engine(0), 16 * 4096), dst(cl.engine(1), 16 * 4096);
  cl.net.run_for(1 * kMillisecond);  // set-up done
  bool dropped = false;
  std::uint32_t lost_psn = 0;
  cl.net.set_drop([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
    wire::Packet p;
    if (dropped || host != 0 || wire::decode(bytes, {}, &p) != wire::DecodeError::kOk ||
        p.common.type != wire::PacketType::kData || p.data.payload_length == 0) {
      return false;
    }
    lost_psn = p.data.psn;
    return dropped = true;
  });
  Time gap_ack_sent = 0, resent = 0;
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
    wire::Packet p;
    if (wire::decode(bytes, {}, &p) != wire::DecodeError::kOk) return;
    const bool gap = p.ack.sack[0] | p.ack.sack[1] | p.ack.sack[2] | p.ack.sack[3];
    if (host == 1 && p.common.type == wire::PacketType::kAck && gap && gap_ack_sent == 0) {
      gap_ack_sent = cl.net.now();
    }
    if (host == 0 && p.common.type == wire::PacketType::kData && dropped &&
        p.data.psn == lost_psn && resent == 0) {
      resent = cl.net.now();
    }
  });
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 16 * 4096, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 1 * kSecond));
  ASSERT_TRUE(dropped);
  ASSERT_NE(gap_ack_sent, 0);
  ASSERT_NE(resent, 0);
  // The ACK crosses one spine (10 us); the resend leaves as it lands.
  EXPECT_EQ(resent, gap_ack_sent + 10 * kMicrosecond);
}

}  // namespace
}  // namespace mroce::testing
