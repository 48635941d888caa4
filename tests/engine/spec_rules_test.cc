// Rules that docs/SPEC.md settles at the edges of set-up, tear-down and acknowledgement:
// the zero fields of set-up packets (§3.1), a bad ACK behind the ISN (§3.4), where set-up
// answers go (§4.2), time-wait after CLOSE (§4.3), and a headers-only mismatch answered
// with CLOSE (§2).
#include <algorithm>
#include <array>
#include <optional>

#include "engine/fixture.h"
#include "wire/codec.h"

namespace mroce::testing {
namespace {

constexpr Time kLimit = 100 * kMillisecond;

RxMeta from(const Address& src, std::uint16_t src_port, const Endpoint& to) {
  RxMeta m;
  m.src = src;
  m.src_port = src_port;
  m.dst = to.addr;
  m.dst_port = to.port;
  return m;
}

int connections(Engine& e) {
  int n = 0;
  e.for_each_connection([&](ConnId) { ++n; });
  return n;
}

std::vector<std::uint8_t> handshake_bytes(const wire::CommonHeader& c, std::uint16_t listen_port) {
  wire::HandshakeHeader hs;
  hs.src_conn = 0x4242;
  hs.src_token = 0x77;
  hs.isn = 1;
  hs.listen_port = listen_port;
  hs.mss = 4096;
  hs.max_messages = 256;
  hs.max_responses = 64;
  hs.paths = 16;
  hs.address_count = 1;
  hs.addresses[0] = host_address(5, 0).bytes;
  std::vector<std::uint8_t> out(512);
  out.resize(wire::encode_handshake(c, hs, out));
  return out;
}

std::vector<std::uint8_t> bare_bytes(const wire::CommonHeader& c) {
  std::vector<std::uint8_t> out(64);
  out.resize(wire::encode_bare(c, out));
  return out;
}

std::optional<wire::Packet> decoded(std::span<const std::uint8_t> bytes) {
  wire::Packet p;
  if (wire::decode(bytes, {}, &p) != wire::DecodeError::kOk) return std::nullopt;
  return p;
}

// Two hosts with one stream pair, the common headers each sends the other recorded.
class Rules : public ::testing::Test {
 protected:
  explicit Rules(const std::function<void(int, EngineConfig&)>& tweak = {})
      : cl(2, 1, 4, 91, tweak) {
    cl.net.set_tap([this](int host, const TxMeta& m, std::span<const std::uint8_t> b) {
      const auto p = decoded(b);
      if (!p) return;
      if (p->common.type == wire::PacketType::kData) to_peer[host] = p->common;
      if (tap) tap(host, m, *p, b);
    });
    std::tie(a, b) = cl.connect(0, 1);
  }

  // Moves one WRITE from host 0 to host 1, so both sides have sent DATA and ACKs.
  void write_once() {
    Buffer src(cl.engine(0), 4096), dst(cl.engine(1), 4096);
    SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 4096, 1);
    wr.remote_addr = dst.addr();
    wr.rkey = dst.keys.rkey;
    ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
    ASSERT_TRUE(cl.run_until_completions(0, 1, kLimit));
    cl.net.run_for(1 * kMillisecond);
  }

  Cluster cl;
  StreamId a = 0, b = 0;
  wire::CommonHeader to_peer[2];  // the latest DATA header each host sent
  std::function<void(int, const TxMeta&, const wire::Packet&, std::span<const std::uint8_t>)> tap;
};

TEST_F(Rules, SetUpPacketsWithAPathGenerationOrConnectIdAreDropped) {
  write_once();
  Engine& e = cl.engine(1);
  const Endpoint me = cl.hosts[1]->endpoint();
  const Address stranger = host_address(5, 0);

  // A CONNECT that names a connection of ours creates nothing.
  wire::CommonHeader c;
  c.type = wire::PacketType::kConnect;
  c.dst_conn = 1;
  cl.net.inject(1, from(stranger, 4793, me), handshake_bytes(c, 4793));
  EXPECT_EQ(connections(e), 1) << "a CONNECT with a destination id opened a connection";
  EXPECT_EQ(e.counters().drop(DropReason::kMalformed), 1u);

  // A CLOSE with the right id and token but a path number leaves the connection alone.
  c = to_peer[0];
  c.type = wire::PacketType::kClose;
  c.flags = 0;
  c.path = 1;
  c.generation = 0;
  cl.net.inject(1, from(cl.hosts[0]->endpoint().addr, 4793, me), bare_bytes(c));
  EXPECT_EQ(e.counters().drop(DropReason::kMalformed), 2u);
  EXPECT_EQ(e.stream_state(b), StreamState::kReady) << "a CLOSE with a path closed the stream";
}

class BadAck : public Rules {
 protected:
  BadAck()
      : Rules([](int h, EngineConfig& c) {
          if (h == 0) c.initial_psn = 1000;
        }) {}
};

TEST_F(BadAck, AnAckBehindTheIsnIsABadAckAnOldOneIsNot) {
  std::optional<wire::Packet> ack;
  std::optional<TxMeta> ack_meta;
  tap = [&](int host, const TxMeta& m, const wire::Packet& p, std::span<const std::uint8_t>) {
    if (host == 1 && p.common.type == wire::PacketType::kAck) {
      ack = p;
      ack_meta = m;
    }
  };
  write_once();
  ASSERT_TRUE(ack.has_value());
  ASSERT_EQ(cl.engine(0).counters().drop(DropReason::kBadAck), 0u);
  const RxMeta meta = from(ack_meta->src, ack_meta->src_port, cl.hosts[0]->endpoint());
  wire::AckHeader a2 = ack->ack;
  a2.sack = {};
  std::vector<std::uint8_t> out(256);

  a2.cum_psn = 1000;  // the ISN itself: an old ACK, acknowledging nothing new
  out.resize(wire::encode_ack(ack->common, a2, out));
  cl.net.inject(0, meta, out);
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kBadAck), 0u);

  a2.cum_psn = 999;  // behind the ISN: no receiver ever had that point
  out.resize(256);
  out.resize(wire::encode_ack(ack->common, a2, out));
  cl.net.inject(0, meta, out);
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kBadAck), 1u);
}

TEST_F(Rules, SetUpAnswersGoToTheSourceOfWhatTheyAnswer) {
  std::optional<std::vector<std::uint8_t>> connect, accept;
  std::optional<TxMeta> answer;
  wire::PacketType answer_type{};
  tap = [&](int host, const TxMeta& m, const wire::Packet& p, std::span<const std::uint8_t> b) {
    if (host == 0 && p.common.type == wire::PacketType::kConnect && !connect) {
      connect.emplace(b.begin(), b.end());
    }
    if (host == 1 && p.common.type == wire::PacketType::kAccept && !accept) {
      accept.emplace(b.begin(), b.end());
    }
    if (p.common.type >= wire::PacketType::kAccept && m.dst_port >= 50000) {
      answer = m;
      answer_type = p.common.type;
    }
  };
  write_once();
  answer.reset();
  ASSERT_TRUE(connect && accept);
  const Address addr0 = cl.hosts[0]->endpoint().addr, addr1 = cl.hosts[1]->endpoint().addr;

  // A copy of the CONNECT from another port of host 0: the ACCEPT goes back there.
  cl.net.inject(1, from(addr0, 50001, cl.hosts[1]->endpoint()), *connect);
  cl.net.run_for(10 * kMicrosecond);
  ASSERT_TRUE(answer.has_value()) << "the ACCEPT went to the listening port";
  EXPECT_EQ(answer_type, wire::PacketType::kAccept);
  EXPECT_EQ(answer->dst_port, 50001);

  // A copy of the ACCEPT from another port of host 1: the CONFIRM goes back there.
  answer.reset();
  cl.net.inject(0, from(addr1, 50002, cl.hosts[0]->endpoint()), *accept);
  cl.net.run_for(10 * kMicrosecond);
  ASSERT_TRUE(answer.has_value()) << "the CONFIRM went to the listening port";
  EXPECT_EQ(answer_type, wire::PacketType::kConfirm);
  EXPECT_EQ(answer->dst_port, 50002);

  // A CLOSE from another port of host 0: the CLOSE_ACK goes back there.
  answer.reset();
  wire::CommonHeader c = to_peer[0];
  c.type = wire::PacketType::kClose;
  c.flags = 0;
  c.path = c.generation = 0;
  cl.net.inject(1, from(addr0, 50003, cl.hosts[1]->endpoint()), bare_bytes(c));
  cl.net.run_for(10 * kMicrosecond);
  ASSERT_TRUE(answer.has_value()) << "the CLOSE_ACK went to the listening port";
  EXPECT_EQ(answer_type, wire::PacketType::kCloseAck);
  EXPECT_EQ(answer->dst_port, 50003);
}

// A CLOSE pair read in one batch, before the engine sends anything: one CLOSE_ACK to
// each CLOSE, each to its own source (the connection keeps one answer pending).
TEST_F(Rules, EachCloseOfAPairReadTogetherGetsItsOwnCloseAck) {
  write_once();
  wire::CommonHeader c = to_peer[0];
  c.type = wire::PacketType::kClose;
  c.flags = 0;
  c.path = c.generation = 0;
  const std::vector<std::uint8_t> close = bare_bytes(c);
  const Address addr0 = cl.hosts[0]->endpoint().addr;
  const Time now = cl.net.now();
  Engine& e = cl.engine(1);
  e.on_packet(now, from(addr0, 50011, cl.hosts[1]->endpoint()), close);
  e.on_packet(now, from(addr0, 50012, cl.hosts[1]->endpoint()), close);
  std::vector<std::uint16_t> ports;
  std::array<std::uint8_t, 9000> buf{};
  TxMeta m;
  while (e.poll_transmit(now, buf, &m)) {
    const auto p = decoded(std::span<const std::uint8_t>(buf.data(), m.length));
    if (p && p->common.type == wire::PacketType::kCloseAck) ports.push_back(m.dst_port);
  }
  std::sort(ports.begin(), ports.end());
  EXPECT_EQ(ports, (std::vector<std::uint16_t>{50011, 50012}));
}

TEST_F(Rules, AClosedConnectionAnswersARetriedCloseInTimeWait) {
  write_once();
  // Both CLOSE_ACKs answering host 0's CLOSE pair are lost.
  int close_acks = 0;
  cl.net.set_drop([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
    const auto p = decoded(bytes);
    return host == 1 && p && p->common.type == wire::PacketType::kCloseAck && ++close_acks <= 2;
  });
  const Time closed_at = cl.net.now();
  ASSERT_EQ(cl.engine(0).destroy_stream(closed_at, a), Errc::kOk);
  ASSERT_TRUE(cl.net.run_until([&] { return connections(cl.engine(0)) == 0; }, closed_at + kLimit))
      << "the closer still waits for a CLOSE_ACK";
  EXPECT_GE(close_acks, 3);
  EXPECT_EQ(cl.engine(1).stream_state(b), StreamState::kError);
  EXPECT_EQ(connections(cl.engine(1)), 1) << "not in time-wait";

  // Time-wait does not hold up a new connection between the two, and it ends.
  auto [a2, b2] = cl.connect(0, 1);
  a = a2;
  cl.rec(0).completions.clear();
  write_once();
  EXPECT_EQ(cl.rec(0).completions.at(0).status, WcStatus::kSuccess);
  cl.net.run_for(1100 * kMillisecond);
  EXPECT_EQ(connections(cl.engine(1)), 1) << "time-wait did not end";
  EXPECT_EQ(cl.engine(1).stream_state(b2), StreamState::kReady);
}

TEST(HeadersOnly, AConnectOfTheOtherModeIsAnsweredWithClose) {
  Cluster cl(2, 1, 4, 93, [](int h, EngineConfig& c) {
    if (h == 0) c.carry_payload = false;
  });
  StreamId s = 0;
  ASSERT_EQ(cl.engine(0).create_stream({}, &s), Errc::kOk);
  ASSERT_EQ(cl.engine(0).connect_stream(0, s, cl.hosts[1]->endpoint(), 1), Errc::kOk);
  Buffer src(cl.engine(0), 4096);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 4096, 7);
  ASSERT_EQ(cl.engine(0).post_send(0, s, wr), Errc::kOk);
  // Within a round trip, not after the set-up timeout.
  ASSERT_TRUE(cl.run_until_completions(0, 1, kLimit)) << "the initiator still waits";
  EXPECT_EQ(cl.rec(0).completions[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(cl.engine(0).stream_state(s), StreamState::kError);
  EXPECT_GE(cl.engine(1).counters().drop(DropReason::kMalformed), 1u);
  EXPECT_EQ(connections(cl.engine(1)), 0);
}

}  // namespace
}  // namespace mroce::testing
