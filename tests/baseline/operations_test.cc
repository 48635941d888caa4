// Every operation of the RC transport, byte for byte, on a clean network.
#include <gtest/gtest.h>

#include "baseline/codec.h"
#include "tests/baseline/roce_pair.h"

namespace mroce::baseline::testing {
namespace {

constexpr std::uint32_t kMtu = 4096;

TEST(BaselineOperations, SendSpanningPacketsLandsByteExact) {
  RocePair p;
  Buffer src(p.a, 64 * 1024), dst(p.b, 64 * 1024);
  fill_pattern(src.bytes, 1);
  const std::uint32_t len = 3 * kMtu + 1234;
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(7, dst, 100, 40000)), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(1, WrOpcode::kSend, src, 10, len)), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1, 1));
  ASSERT_EQ(p.ra.completions.size(), 1u);
  EXPECT_EQ(p.ra.completions[0].status, WcStatus::kSuccess);
  EXPECT_EQ(p.ra.completions[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(p.ra.completions[0].wr_id, 1u);
  const Completion& r = p.rb.completions.at(0);
  EXPECT_EQ(r.status, WcStatus::kSuccess);
  EXPECT_EQ(r.opcode, WcOpcode::kRecv);
  EXPECT_EQ(r.wr_id, 7u);
  EXPECT_EQ(r.byte_len, len);
  EXPECT_FALSE(r.has_imm);
  EXPECT_TRUE(same_bytes(src.bytes, 10, dst.bytes, 100, len));
  EXPECT_EQ(dst.bytes[99], 0);
  EXPECT_EQ(dst.bytes[100 + len], 0);
  EXPECT_EQ(p.a.counters().tx_data_packets, 4u);
  EXPECT_EQ(p.a.counters().tx_retransmits, 0u);
  EXPECT_EQ(p.b.counters().total_drops(), 0u);
}

TEST(BaselineOperations, SendWithImmediateScattersAcrossElements) {
  RocePair p;
  Buffer src(p.a, 32 * 1024), dst(p.b, 32 * 1024);
  fill_pattern(src.bytes, 2);
  SendWr wr = make_wr(3, WrOpcode::kSendWithImm, src, 0, 5000);
  wr.num_sge = 3;
  wr.sg[1] = {src.addr() + 9000, 3000, src.keys.lkey};
  wr.sg[2] = {src.addr() + 20000, 10, src.keys.lkey};
  wr.imm = 0xdeadbeef;
  RecvWr rwr = make_recv(9, dst, 0, 4000);
  rwr.num_sge = 2;
  rwr.sg[1] = {dst.addr() + 10000, 8000, dst.keys.lkey};
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, rwr), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, wr), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1, 1));
  const Completion& r = p.rb.completions.at(0);
  EXPECT_EQ(r.status, WcStatus::kSuccess);
  EXPECT_EQ(r.byte_len, 8010u);
  EXPECT_TRUE(r.has_imm);
  EXPECT_EQ(r.imm, 0xdeadbeefu);
  std::vector<std::uint8_t> sent(src.bytes.begin(), src.bytes.begin() + 5000);
  sent.insert(sent.end(), src.bytes.begin() + 9000, src.bytes.begin() + 12000);
  sent.insert(sent.end(), src.bytes.begin() + 20000, src.bytes.begin() + 20010);
  std::vector<std::uint8_t> got(dst.bytes.begin(), dst.bytes.begin() + 4000);
  got.insert(got.end(), dst.bytes.begin() + 10000, dst.bytes.begin() + 14010);
  EXPECT_EQ(sent, got);
}

TEST(BaselineOperations, WriteLandsByteExact) {
  RocePair p;
  Buffer src(p.a, 1 << 20), dst(p.b, 1 << 20, access::kLocalWrite | access::kRemoteWrite);
  fill_pattern(src.bytes, 3);
  const std::uint32_t len = (1 << 20) - 4096 - 3;
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(5, WrOpcode::kRdmaWrite, src, 3, len), dst, 4096)),
            Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1));
  EXPECT_EQ(p.ra.completions.at(0).status, WcStatus::kSuccess);
  EXPECT_EQ(p.ra.completions.at(0).opcode, WcOpcode::kRdmaWrite);
  EXPECT_TRUE(same_bytes(src.bytes, 3, dst.bytes, 4096, len));
  EXPECT_TRUE(p.rb.completions.empty());  // a plain WRITE is invisible to the responder
  ConnStats s;
  ASSERT_TRUE(p.b.connection_stats(p.qb, &s));
  EXPECT_EQ(s.rx_data_bytes, len);
}

TEST(BaselineOperations, WriteWithImmediateConsumesAReceive) {
  RocePair p;
  Buffer src(p.a, 16 * 1024), dst(p.b, 16 * 1024), unused(p.b, 64);
  fill_pattern(src.bytes, 4);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(11, unused, 0, 64)), Errc::kOk);
  SendWr wr = remote(make_wr(6, WrOpcode::kRdmaWriteWithImm, src, 0, 9000), dst, 100);
  wr.imm = 0x01020304;
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, wr), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1, 1));
  const Completion& r = p.rb.completions.at(0);
  EXPECT_EQ(r.status, WcStatus::kSuccess);
  EXPECT_EQ(r.opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(r.wr_id, 11u);
  EXPECT_EQ(r.byte_len, 9000u);
  EXPECT_TRUE(r.has_imm);
  EXPECT_EQ(r.imm, 0x01020304u);
  EXPECT_TRUE(same_bytes(src.bytes, 0, dst.bytes, 100, 9000));
  EXPECT_EQ(unused.bytes, std::vector<std::uint8_t>(64, 0));  // its buffer is not written
}

TEST(BaselineOperations, ReadFetchesByteExact) {
  RocePair p;
  Buffer local(p.a, 256 * 1024), target(p.b, 256 * 1024, access::kRemoteRead);
  fill_pattern(target.bytes, 5);
  const std::uint32_t len = 200 * 1024 + 17;
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(8, WrOpcode::kRdmaRead, local, 1, len), target, 33)),
            Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1));
  const Completion& c = p.ra.completions.at(0);
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(c.opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(c.byte_len, len);
  EXPECT_TRUE(same_bytes(target.bytes, 33, local.bytes, 1, len));
  EXPECT_EQ(local.bytes[0], 0);
  EXPECT_EQ(local.bytes[1 + len], 0);
  // One request from A; the responses are B's data packets.
  EXPECT_EQ(p.a.counters().tx_data_packets, 1u);
  EXPECT_EQ(p.b.counters().tx_data_packets, (len + kMtu - 1) / kMtu);
}

TEST(BaselineOperations, AtomicsReturnTheOriginalValue) {
  RocePair p;
  Buffer local(p.a, 64), target(p.b, 64, access::kLocalWrite | access::kRemoteAtomic);
  std::uint64_t v = 1000;
  std::memcpy(target.bytes.data() + 8, &v, 8);

  SendWr faa = remote(make_wr(1, WrOpcode::kAtomicFetchAdd, local, 0, 8), target, 8);
  faa.compare_add = 23;
  SendWr cas_hit = remote(make_wr(2, WrOpcode::kAtomicCmpSwp, local, 8, 8), target, 8);
  cas_hit.compare_add = 1023;
  cas_hit.swap = 77;
  SendWr cas_miss = remote(make_wr(3, WrOpcode::kAtomicCmpSwp, local, 16, 8), target, 8);
  cas_miss.compare_add = 1;
  cas_miss.swap = 5;
  for (const SendWr& wr : {faa, cas_hit, cas_miss})
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, wr), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(3));
  ASSERT_EQ(p.ra.count(false), 3u);
  EXPECT_EQ(p.ra.completions[0].opcode, WcOpcode::kFetchAdd);
  EXPECT_EQ(p.ra.completions[1].opcode, WcOpcode::kCompSwap);
  EXPECT_EQ(p.ra.completions[0].byte_len, 8u);
  std::uint64_t got[3];
  std::memcpy(got, local.bytes.data(), 24);
  EXPECT_EQ(got[0], 1000u);
  EXPECT_EQ(got[1], 1023u);
  EXPECT_EQ(got[2], 77u);
  std::memcpy(&v, target.bytes.data() + 8, 8);
  EXPECT_EQ(v, 77u);
}

TEST(BaselineOperations, InlineDataIsCopiedAtPostTime) {
  PairOptions o;
  o.stream.max_inline = 256;
  RocePair p(o);
  Buffer src(p.a, 1024), dst(p.b, 1024);
  fill_pattern(src.bytes, 6);
  const std::vector<std::uint8_t> original(src.bytes.begin(), src.bytes.begin() + 200);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(1, dst, 0, 1024)), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          make_wr(1, WrOpcode::kSend, src, 0, 200,
                                  send_flags::kSignaled | send_flags::kInline)),
            Errc::kOk);
  std::fill(src.bytes.begin(), src.bytes.end(), 0xee);  // the application reuses its buffer
  ASSERT_TRUE(p.run_for_completions(1, 1));
  EXPECT_TRUE(same_bytes(original, 0, dst.bytes, 0, 200));
  // Too long for the inline limit, or inline on a READ: refused at post time.
  EXPECT_EQ(p.a.post_send(p.net.now(), p.qa,
                          make_wr(2, WrOpcode::kSend, src, 0, 257,
                                  send_flags::kSignaled | send_flags::kInline)),
            Errc::kInvalidArgument);
  EXPECT_EQ(p.a.post_send(p.net.now(), p.qa,
                          make_wr(3, WrOpcode::kRdmaRead, src, 0, 8,
                                  send_flags::kSignaled | send_flags::kInline)),
            Errc::kInvalidArgument);
}

TEST(BaselineOperations, ZeroLengthMessages) {
  RocePair p;
  Buffer src(p.a, 64), dst(p.b, 64);
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(1, dst, 0, 64)), Errc::kOk);
  SendWr send = make_wr(1, WrOpcode::kSend, src, 0, 0);
  send.num_sge = 0;
  SendWr write = remote(make_wr(2, WrOpcode::kRdmaWrite, src, 0, 0), dst, 0);
  write.num_sge = 0;
  write.rkey = 0x12345;  // a zero-length WRITE names no memory: its key is not checked
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, send), Errc::kOk);
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, write), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(2, 1));
  EXPECT_EQ(p.ra.count(false, WcStatus::kSuccess), 2u);
  EXPECT_EQ(p.rb.completions.at(0).byte_len, 0u);
}

TEST(BaselineOperations, UnsignaledRequestsCompleteWithoutEntries) {
  RocePair p;
  Buffer src(p.a, 64 * 1024), dst(p.b, 64 * 1024);
  fill_pattern(src.bytes, 7);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                            remote(make_wr(100 + i, WrOpcode::kRdmaWrite, src, i * 5000, 5000, 0),
                                   dst, i * 5000)),
              Errc::kOk);
  }
  ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                          remote(make_wr(999, WrOpcode::kRdmaWrite, src, 50000, 1000), dst, 50000)),
            Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(1));
  p.net.run_for(1 * kMillisecond);
  ASSERT_EQ(p.ra.completions.size(), 1u);
  EXPECT_EQ(p.ra.completions[0].wr_id, 999u);
  EXPECT_TRUE(same_bytes(src.bytes, 0, dst.bytes, 0, 51000));
}

TEST(BaselineOperations, UnsignaledSlotsAreReusedOnceAcknowledged) {
  PairOptions o;
  o.stream.sq_depth = 4;
  RocePair p(o);
  Buffer src(p.a, 4096), dst(p.b, 4096);
  int posted = 0;
  for (int round = 0; round < 50; ++round) {
    while (p.a.post_send(p.net.now(), p.qa,
                         remote(make_wr(posted, WrOpcode::kRdmaWrite, src, 0, 64,
                                        posted % 8 == 7 ? send_flags::kSignaled : 0),
                                dst, 0)) == Errc::kOk) {
      ++posted;
    }
    p.net.run_for(50 * kMicrosecond);
  }
  p.net.run_for(1 * kMillisecond);
  EXPECT_GT(posted, 4 * 20);  // far more than the queue holds: unsignaled slots came back
  EXPECT_EQ(p.ra.count(false), std::size_t(posted / 8));
}

TEST(BaselineOperations, FenceWaitsForAnEarlierRead) {
  for (const bool fenced : {false, true}) {
    RocePair p;
    Buffer local(p.a, 64 * 1024), target(p.b, 64 * 1024, access::kRemoteRead);
    std::vector<std::pair<int, std::uint8_t>> order;  // (host, opcode) as sent
    p.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> bytes) {
      if (m.cls == PacketClass::kData) order.emplace_back(host, bytes[0]);
    });
    Buffer rbuf(p.b, 64);
    ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, make_recv(1, rbuf, 0, 64)), Errc::kOk);
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa,
                            remote(make_wr(1, WrOpcode::kRdmaRead, local, 0, 8 * kMtu), target, 0)),
              Errc::kOk);
    const std::uint32_t flags = send_flags::kSignaled | (fenced ? send_flags::kFence : 0);
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, make_wr(2, WrOpcode::kSend, local, 0, 8, flags)),
              Errc::kOk);
    ASSERT_TRUE(p.run_for_completions(2, 1));
    // Position of A's SEND among everything sent, against the last READ response.
    std::size_t send_at = 0, last_response_at = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      if (order[i].first == p.ha && order[i].second == std::uint8_t(Opcode::kSendOnly)) send_at = i;
      if (order[i].first == p.hb) last_response_at = i;
    }
    if (fenced) {
      EXPECT_GT(send_at, last_response_at);
    } else {
      EXPECT_LT(send_at, last_response_at);
    }
  }
}

TEST(BaselineOperations, ReadsInFlightAreBoundedByMaxRdAtomic) {
  PairOptions o;
  o.config.max_rd_atomic = 2;
  RocePair p(o);
  Buffer local(p.a, 64 * 1024), target(p.b, 64 * 1024, access::kRemoteRead);
  fill_pattern(target.bytes, 8);
  int requests_before_first_response = 0;
  bool response_seen = false;
  p.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
    if (host == p.hb && opcode_info(bytes[0]).kind == OpKind::kReadResponse) response_seen = true;
    if (host == p.ha && bytes[0] == std::uint8_t(Opcode::kReadRequest) && !response_seen)
      ++requests_before_first_response;
  });
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(p.a.post_send(
                  p.net.now(), p.qa,
                  remote(make_wr(i, WrOpcode::kRdmaRead, local, i * 8192, 8192), target, i * 8192)),
              Errc::kOk);
  }
  ASSERT_TRUE(p.run_for_completions(6));
  EXPECT_EQ(requests_before_first_response, 2);
  EXPECT_EQ(p.ra.count(false, WcStatus::kSuccess), 6u);
  EXPECT_TRUE(same_bytes(target.bytes, 0, local.bytes, 0, 6 * 8192));
}

TEST(BaselineOperations, HeadersOnlyModeMovesNoBytesButCompletes) {
  PairOptions o;
  o.config.carry_payload = false;
  RocePair p(o);
  // Regions without host bytes, as the simulator registers them.
  MrKeys la, lb;
  ASSERT_EQ(p.a.reg_mr(0x10000, 1 << 20, access::kAll, nullptr, &la), Errc::kOk);
  ASSERT_EQ(p.b.reg_mr(0x20000, 1 << 20, access::kAll, nullptr, &lb), Errc::kOk);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes;  // (datagram, wire) of A's data
  p.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t>) {
    if (host == p.ha && m.cls == PacketClass::kData) sizes.emplace_back(m.length, m.wire_length);
  });
  SendWr write;
  write.wr_id = 1;
  write.opcode = WrOpcode::kRdmaWrite;
  write.num_sge = 1;
  write.sg[0] = {0x10000, 10000, la.lkey};
  write.remote_addr = 0x20000;
  write.rkey = lb.rkey;
  SendWr send = write;
  send.wr_id = 2;
  send.opcode = WrOpcode::kSend;
  send.sg[0].length = 5000;
  SendWr read = write;
  read.wr_id = 3;
  read.opcode = WrOpcode::kRdmaRead;
  RecvWr recv;
  recv.num_sge = 1;
  recv.sg[0] = {0x20000, 8192, lb.lkey};
  ASSERT_EQ(p.b.post_recv(p.net.now(), p.qb, recv), Errc::kOk);
  for (const SendWr& wr : {write, send, read})
    ASSERT_EQ(p.a.post_send(p.net.now(), p.qa, wr), Errc::kOk);
  ASSERT_TRUE(p.run_for_completions(3, 1));
  EXPECT_EQ(p.ra.count(false, WcStatus::kSuccess), 3u);
  EXPECT_EQ(p.rb.completions.at(0).byte_len, 5000u);
  // WRITE first: BTH + RETH, a 4-byte length in place of 4096 payload bytes, ICRC.
  ASSERT_GE(sizes.size(), 3u);
  EXPECT_EQ(sizes[0].first, 12u + 16 + 4 + 4);
  EXPECT_EQ(sizes[0].second, 12u + 16 + 4096 + 4);
  // WRITE last: 10000 - 8192 = 1808 bytes.
  EXPECT_EQ(sizes[2].second, 12u + 1808 + 4);
  ConnStats s;
  ASSERT_TRUE(p.b.connection_stats(p.qb, &s));
  EXPECT_EQ(s.rx_data_bytes, 15000u);
}

}  // namespace
}  // namespace mroce::baseline::testing
