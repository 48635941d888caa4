// Errors a Verbs user sees: remote access, receiver not ready, length, local protection,
// invalid requests. Each ends the QPs the way an RC QP ends, with flushed work requests.
#include <gtest/gtest.h>

#include "baseline/codec.h"
#include "tests/baseline/roce_pair.h"

namespace mroce::baseline::testing {
namespace {

std::size_t count_events(const Recorder& r, EventKind kind) {
  std::size_t n = 0;
  for (const auto& e : r.events) n += e.kind == kind;
  return n;
}

TEST(BaselineErrors, BadRkeyIsRemoteAccessErrorAndNothingIsPlaced) {
  RocePair p;
  Buffer src(p.a, 8192), dst(p.b, 8192), rbuf(p.b, 64);
  fill_pattern(src.bytes, 1);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(50, rbuf, 0, 64)), Errc::kOk);
  SendWr bad = remote(make_wr(1, WrOpcode::kRdmaWrite, src, 0, 6000), dst, 0);
  bad.rkey ^= 0x100;  // another slot: no such region
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, bad), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(2, WrOpcode::kSend, src, 0, 8)), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(2, 1));
  ASSERT_EQ(p.ra.completions.size(), 2u);
  EXPECT_EQ(p.ra.completions[0].wr_id, 1u);
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(p.ra.completions[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(p.b.counters().drop(DropReason::kBadKey), 1u);
  EXPECT_EQ(dst.bytes, std::vector<std::uint8_t>(8192, 0));
  // The responder's QP is in error too: its posted receive is flushed.
  EXPECT_EQ(p.rb.completions.at(0).status, WcStatus::kWrFlushErr);
  EXPECT_EQ(p.a.stream_state(p.qa), StreamState::kError);
  EXPECT_EQ(p.b.stream_state(p.qb), StreamState::kError);
  EXPECT_EQ(count_events(p.ra, EventKind::kConnFailed), 1u);
  EXPECT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(3, WrOpcode::kSend, src, 0, 8)),
            Errc::kInvalidState);
}

TEST(BaselineErrors, RangeAndRightsAreChecked) {
  struct Case {
    WrOpcode op;
    std::uint32_t access;
    std::uint64_t offset;
    DropReason reason;
  };
  const Case cases[] = {
      {WrOpcode::kRdmaWrite, access::kLocalWrite | access::kRemoteWrite, 4000,
       DropReason::kOutOfRange},
      {WrOpcode::kRdmaWrite, access::kRemoteRead, 0, DropReason::kAccessDenied},
      {WrOpcode::kRdmaRead, access::kLocalWrite | access::kRemoteWrite, 0,
       DropReason::kAccessDenied},
      {WrOpcode::kAtomicFetchAdd, access::kLocalWrite | access::kRemoteWrite, 0,
       DropReason::kAccessDenied},
  };
  for (const Case& c : cases) {
    RocePair p;
    Buffer local(p.a, 8192), target(p.b, 4096, c.access);
    const std::uint32_t len = c.op == WrOpcode::kAtomicFetchAdd ? 8 : 200;
    ASSERT_EQ(
        p.a.post_send(p.net.now(), p.qa, remote(make_wr(1, c.op, local, 0, len), target, c.offset)),
        Errc::kOk);
    ASSERT_TRUE(p.run_for_completions(1));
    EXPECT_EQ(p.ra.completions.at(0).status, WcStatus::kRemAccessErr);
    EXPECT_EQ(p.b.counters().drop(c.reason), 1u);
    EXPECT_EQ(target.bytes, std::vector<std::uint8_t>(4096, 0));
  }
}

TEST(BaselineErrors, MessageLongerThanTheReceive) {
  RocePair p;
  Buffer src(p.a, 16384), dst(p.b, 16384), spare(p.b, 64);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(1, dst, 0, 5000)), Errc::kOk);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(2, spare, 0, 64)), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(1, WrOpcode::kSend, src, 0, 9000)), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1, 2));
  EXPECT_EQ(p.ra.completions.at(0).status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(p.rb.completions.at(0).wr_id, 1u);
  EXPECT_EQ(p.rb.completions.at(0).status, WcStatus::kLocLenErr);
  EXPECT_EQ(p.rb.completions.at(1).status, WcStatus::kWrFlushErr);
}

TEST(BaselineErrors, BadLocalKeyIsLocalProtectionError) {
  RocePair p;
  Buffer src(p.a, 4096), dst(p.b, 4096);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(1, WrOpcode::kRdmaWrite, src, 0, 100), dst, 0)),
            Errc::kOk);
  SendWr bad = remote(make_wr(2, WrOpcode::kRdmaWrite, src, 0, 100), dst, 0);
  bad.sg[0].lkey = 0xffff00;
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, bad), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(3, WrOpcode::kRdmaWrite, src, 0, 100), dst, 0)),
            Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(3));
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kSuccess);  // earlier work completes first
  EXPECT_EQ(p.ra.completions[1].status, WcStatus::kLocProtErr);
  EXPECT_EQ(p.ra.completions[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(p.a.counters().tx_data_packets, 1u);  // nothing after the bad request is sent
}

TEST(BaselineErrors, MisalignedAtomicIsInvalidRequest) {
  RocePair p;
  Buffer local(p.a, 64), target(p.b, 64, access::kLocalWrite | access::kRemoteAtomic);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(1, WrOpcode::kAtomicFetchAdd, local, 0, 8), target, 4)),
            Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1));
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kRemInvReqErr);
  EXPECT_EQ(p.b.counters().drop(DropReason::kInvalidRequest), 1u);
}

TEST(BaselineErrors, ReceiverNotReadyIsRetriedUntilAReceiveIsPosted) {
  RocePair p;
  Buffer src(p.a, 16384), dst(p.b, 16384);
  fill_pattern(src.bytes, 2);
  std::uint64_t sequence_naks = 0;
  p.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
    if (host == p.hb && bytes[0] == std::uint8_t(Opcode::kAck) && bytes[12] == 0x60)
      ++sequence_naks;
  });
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(1, WrOpcode::kSend, src, 0, 10000)),
            Errc::kOk);
  p.net.run_for(2 * kMillisecond);
  EXPECT_TRUE(p.ra.completions.empty());
  const std::uint64_t rnr = p.b.counters().drop(DropReason::kReceiverNotReady);
  // RNR timer 100 us rounds up to the 120 us code: about one retry per 120 us plus an RTT.
  EXPECT_GE(rnr, 8u);
  EXPECT_LE(rnr, 17u);
  // The packets behind the refused one are discarded without a sequence NAK each.
  EXPECT_EQ(p.b.counters().drop(DropReason::kOutOfWindow), 2 * rnr);
  EXPECT_EQ(sequence_naks, 0u);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(4, dst, 0, 16384)), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1, 1));
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.rb.completions[0].byte_len, 10000u);
  EXPECT_TRUE(same_bytes(src.bytes, 0, dst.bytes, 0, 10000));
}

TEST(BaselineErrors, ReceiverNotReadyRetriesRunOut) {
  PairOptions o;
  o.stream.rnr_retry = 2;
  RocePair p(o);
  Buffer src(p.a, 4096);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(1, WrOpcode::kSend, src, 0, 100)), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(2, WrOpcode::kSend, src, 0, 100)), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(2));
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(p.ra.completions[1].status, WcStatus::kWrFlushErr);
  // The first attempt and two retries.
  EXPECT_EQ(p.b.counters().drop(DropReason::kReceiverNotReady), 3u);
}

TEST(BaselineErrors, WriteWithImmediateWaitsForAReceive) {
  RocePair p;
  Buffer src(p.a, 16384), dst(p.b, 16384), rbuf(p.b, 64);
  fill_pattern(src.bytes, 3);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(1, WrOpcode::kRdmaWriteWithImm, src, 0, 9000), dst, 0)),
            Errc::kOk);
  p.net.run_for(500 * kMicrosecond);
  EXPECT_GT(p.b.counters().drop(DropReason::kReceiverNotReady), 0u);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(1, rbuf, 0, 64)), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1, 1));
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.rb.completions[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_TRUE(same_bytes(src.bytes, 0, dst.bytes, 0, 9000));
}

TEST(BaselineErrors, ApiRefusesWhatVerbsRefuses) {
  RocePair p;
  Buffer buf(p.a, 64);
  StreamId s;
  EXPECT_EQ(p.a.create_stream(StreamConfig{.sq_depth = 0}, &s), Errc::kInvalidArgument);
  ASSERT_EQ(p.a.create_stream({}, &s), Errc::kOk);
  EXPECT_EQ(p.a.stream_state(s), StreamState::kIdle);
  EXPECT_EQ(p.a.stream_connection(s), 0u);
  EXPECT_EQ(p.a.connect_stream(0, s, {kAddrB, kRoceV2Port}, 0), Errc::kInvalidArgument);
  EXPECT_EQ(p.a.connect_stream(0, s, {kAddrB, kRoceV2Port}, 1u << 24), Errc::kInvalidArgument);
  EXPECT_EQ(p.a.connect_stream(0, p.qa, {kAddrB, kRoceV2Port}, p.qb), Errc::kInvalidState);
  EXPECT_EQ(p.a.bind_plane(s, 3), Errc::kInvalidArgument);
  EXPECT_EQ(p.a.post_send(0, 0x777777, make_wr(1, WrOpcode::kSend, buf, 0, 8)), Errc::kNotFound);
  SendWr atomic = make_wr(1, WrOpcode::kAtomicFetchAdd, buf, 0, 4);
  EXPECT_EQ(p.a.post_send(0, p.qa, atomic), Errc::kInvalidArgument);
  MrKeys k;
  EXPECT_EQ(p.a.reg_mr(0, 64, access::kRemoteWrite, nullptr, &k), Errc::kInvalidArgument);
  ASSERT_EQ(p.a.reg_mr(0, 64, access::kLocalWrite, nullptr, &k), Errc::kOk);
  EXPECT_EQ(p.a.dereg_mr(k.lkey), Errc::kOk);
  EXPECT_EQ(p.a.dereg_mr(k.lkey), Errc::kNotFound);
  EXPECT_EQ(p.a.destroy_stream(0, s), Errc::kOk);
  EXPECT_EQ(p.a.stream_state(s), StreamState::kDestroyed);
  StreamId again;
  ASSERT_EQ(p.a.create_stream({}, &again), Errc::kOk);
  EXPECT_NE(again, s);  // a recycled slot gets a new QPN
}

}  // namespace
}  // namespace mroce::baseline::testing
