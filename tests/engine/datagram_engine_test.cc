// Datagram queue pairs in the engine (SPEC 3.8): a DATAGRAM lands behind its GRH in the
// oldest receive and names its sender; what cannot be delivered is dropped and counted
// by reason (wrong Q_Key, unknown queue pair, no receive posted, receive too short).
#include <gtest/gtest.h>

#include <vector>

#include "core/engine.h"
#include "wire/datagram.h"

namespace mroce {
namespace {

struct Sink1 : Sink {
  void on_completion(const Completion& c) override { got.push_back(c); }
  std::vector<Completion> got;
};

struct Two {
  Two() : a(with(1)), b(with(2)) {
    a.set_sink(&sa);
    b.set_sink(&sb);
    EXPECT_EQ(a.create_datagram({.qkey = 7}, &qa), Errc::kOk);
    EXPECT_EQ(b.create_datagram({.qkey = 7}, &qb), Errc::kOk);
    EXPECT_EQ(a.reg_mr(std::uint64_t(abuf.data()), abuf.size(), access::kAll, abuf.data(), &ka),
              Errc::kOk);
    EXPECT_EQ(b.reg_mr(std::uint64_t(bbuf.data()), bbuf.size(), access::kAll, bbuf.data(), &kb),
              Errc::kOk);
  }
  static EngineConfig with(std::uint32_t host) {
    EngineConfig c;
    c.planes = {Address::ipv4(0x0a000000u | host)};
    c.seed = host;
    return c;
  }
  // Posts a receive of `length` bytes at b's buffer.
  void recv(std::uint64_t wr_id, std::uint32_t length) {
    RecvWr r;
    r.wr_id = wr_id;
    r.num_sge = 1;
    r.sg[0] = {std::uint64_t(bbuf.data()), length, kb.lkey};
    ASSERT_EQ(b.post_recv(0, qb, r), Errc::kOk);
  }
  // Sends `length` bytes from a to b's queue pair `to` with Q_Key qkey; moves the datagram.
  void send(std::uint32_t length, std::uint32_t qkey, StreamId to = 0) {
    SendWr w;
    w.opcode = WrOpcode::kSendWithImm;
    w.imm = 0x01020304;
    w.num_sge = 1;
    w.sg[0] = {std::uint64_t(abuf.data()), length, ka.lkey};
    const DatagramDest d{{b.config().planes[0], kDefaultPort}, to ? to : qb, qkey, 0};
    ASSERT_EQ(a.post_datagram(0, qa, w, d), Errc::kOk);
    TxMeta m;
    ASSERT_TRUE(a.poll_transmit(0, buf, &m));
    EXPECT_EQ(m.length, wire::kDatagramHeaderSize + length);
    EXPECT_EQ(m.src_port, kDefaultPort);  // from the listening port
    RxMeta rx{m.src, m.dst, m.src_port, m.dst_port, 0, m.ecn};
    b.on_packet(0, rx, std::span(buf.data(), m.length));
    EXPECT_FALSE(a.poll_transmit(0, buf, &m));
  }
  std::uint64_t drops(DropReason r) const { return b.counters().drop(r); }

  Engine a, b;
  Sink1 sa, sb;
  StreamId qa = 0, qb = 0;
  std::vector<std::uint8_t> abuf = std::vector<std::uint8_t>(8192, 0x33);
  std::vector<std::uint8_t> bbuf = std::vector<std::uint8_t>(8192);
  MrKeys ka, kb;
  std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(a.max_packet_size());
};

TEST(DatagramEngine, LandsBehindTheGrhAndNamesItsSender) {
  Two t;
  t.recv(42, 4096 + kGrhSize);
  t.send(4096, 7);
  ASSERT_EQ(t.sb.got.size(), 1u);
  const Completion& c = t.sb.got[0];
  EXPECT_EQ(c.wr_id, 42u);
  EXPECT_EQ(c.status, WcStatus::kSuccess);
  EXPECT_EQ(c.byte_len, 4096 + kGrhSize);
  EXPECT_TRUE(c.has_imm);
  EXPECT_EQ(c.imm, 0x01020304u);
  EXPECT_EQ(c.src.addr, t.a.config().planes[0]);
  EXPECT_EQ(c.src.port, kDefaultPort);
  EXPECT_EQ(c.src_stream, t.qa);
  EXPECT_EQ(t.bbuf[20], 0x45);
  EXPECT_EQ(t.bbuf[kGrhSize + 4095], 0x33);
  ASSERT_EQ(t.sa.got.size(), 1u);  // the send's own completion (signaled by default)
  EXPECT_EQ(t.sa.got[0].status, WcStatus::kSuccess);
}

TEST(DatagramEngine, UndeliverableDatagramsAreDroppedAndCounted) {
  Two t;
  t.send(64, 7);  // no receive posted
  EXPECT_EQ(t.drops(DropReason::kReceiverNotReady), 1u);
  t.recv(1, 64 + kGrhSize);
  t.send(64, 8);
  EXPECT_EQ(t.drops(DropReason::kBadQkey), 1u);
  t.send(64, 7, t.qb + 1);
  EXPECT_EQ(t.drops(DropReason::kBadStream), 1u);
  EXPECT_TRUE(t.sb.got.empty());
  t.send(65, 7);  // one byte more than the receive holds: it completes in error
  EXPECT_EQ(t.drops(DropReason::kInvalidRequest), 1u);
  ASSERT_EQ(t.sb.got.size(), 1u);
  EXPECT_EQ(t.sb.got[0].status, WcStatus::kLocLenErr);
}

TEST(DatagramEngine, PostingChecksLengthOpcodeAndDepth) {
  Two t;
  SendWr w;
  w.num_sge = 1;
  w.sg[0] = {std::uint64_t(t.abuf.data()), t.a.config().mss + 1u, t.ka.lkey};
  const DatagramDest d{{t.b.config().planes[0], kDefaultPort}, t.qb, 7, 0};
  EXPECT_EQ(t.a.post_datagram(0, t.qa, w, d), Errc::kInvalidArgument);
  w.sg[0].length = 8;
  w.opcode = WrOpcode::kRdmaWrite;
  EXPECT_EQ(t.a.post_datagram(0, t.qa, w, d), Errc::kInvalidArgument);
  w.opcode = WrOpcode::kSend;
  w.sg[0].lkey ^= 0x100;
  EXPECT_EQ(t.a.post_datagram(0, t.qa, w, d), Errc::kInvalidArgument);
  w.sg[0].lkey = t.ka.lkey;
  for (int i = 0; i < 256; ++i) ASSERT_EQ(t.a.post_datagram(0, t.qa, w, d), Errc::kOk);
  EXPECT_EQ(t.a.post_datagram(0, t.qa, w, d), Errc::kNoResources);
  EXPECT_EQ(t.a.stream_state(t.qa), StreamState::kReady);
  EXPECT_EQ(t.a.destroy_stream(0, t.qa), Errc::kOk);
  TxMeta m;
  EXPECT_FALSE(t.a.poll_transmit(0, t.buf, &m));  // a destroyed QP's sends never leave
}

}  // namespace
}  // namespace mroce
