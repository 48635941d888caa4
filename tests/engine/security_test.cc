// A packet that does not belong to a live connection, carries the wrong token, or names
// memory outside a region or without the right, is dropped and counted and never
// placed; garbage never crashes the engine nor corrupts a transfer in progress.
#include <map>
#include <optional>

#include "engine/workload.h"
#include "wire/codec.h"

namespace mroce::testing {
namespace {

struct Captured {
  std::vector<std::uint8_t> bytes;
  TxMeta meta;
};

RxMeta rx_of(const TxMeta& m) {
  RxMeta r;
  r.src = m.src;
  r.dst = m.dst;
  r.src_port = m.src_port;
  r.dst_port = m.dst_port;
  r.plane = m.plane;
  r.ecn = m.ecn;
  return r;
}

class Security : public ::testing::Test {
 protected:
  Security() : cl(2, 1, 4, 77) {
    cl.net.set_tap([this](int host, const TxMeta& m, std::span<const std::uint8_t> b) {
      wire::Packet p;
      if (host == 0 && wire::decode(b, {}, &p) == wire::DecodeError::kOk &&
          p.common.type == wire::PacketType::kData && p.data.op == wire::DataOp::kWrite && !write) {
        write = Captured{{b.begin(), b.end()}, m};
      }
    });
    std::tie(a, b) = cl.connect(0, 1);
  }

  // Sends one WRITE so a genuine packet is captured, then returns it decoded.
  wire::Packet genuine_write(Buffer& src, Buffer& dst) {
    SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 512, 1);
    wr.remote_addr = dst.addr();
    wr.rkey = dst.keys.rkey;
    EXPECT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
    EXPECT_TRUE(cl.run_until_completions(0, 1, 100 * kMillisecond));
    wire::Packet p;
    EXPECT_EQ(wire::decode(write->bytes, {}, &p), wire::DecodeError::kOk);
    return p;
  }

  // Re-encodes a modified copy of the captured WRITE and delivers it to host 1.
  void forge(wire::Packet p, std::span<const std::uint8_t> payload) {
    std::vector<std::uint8_t> out(9000);
    const std::size_t n = wire::encode_data(p.common, p.data, out);
    std::copy(payload.begin(), payload.end(), out.begin() + n);
    out.resize(n + payload.size());
    cl.net.inject(1, rx_of(write->meta), out);
  }

  Cluster cl;
  StreamId a = 0, b = 0;
  std::optional<Captured> write;
};

TEST_F(Security, UnknownConnectionAndWrongTokenAreDroppedNeverPlaced) {
  Buffer src(cl.engine(0), 4096), dst(cl.engine(1), 4096);
  wire::Packet p = genuine_write(src, dst);
  std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
  const std::vector<std::uint8_t> evil(p.data.payload_length, 0xee);
  const Counters before = cl.engine(1).counters();

  wire::Packet q = p;
  q.data.psn += 1;  // a new sequence number, so only identity checks can stop it
  q.common.token ^= 1;
  forge(q, evil);
  q = p;
  q.data.psn += 2;
  q.common.dst_conn ^= 0x00100000;  // same slot, other generation
  forge(q, evil);
  q.common.dst_conn = 0x000fffff;  // no such slot
  forge(q, evil);

  const Counters& after = cl.engine(1).counters();
  EXPECT_EQ(after.drop(DropReason::kBadToken), before.drop(DropReason::kBadToken) + 1);
  EXPECT_EQ(after.drop(DropReason::kUnknownConn), before.drop(DropReason::kUnknownConn) + 2);
  EXPECT_EQ(dst.bytes, std::vector<std::uint8_t>(4096, 0));
}

TEST_F(Security, MemoryOutsideRegionOrWithoutRightIsRefused) {
  Buffer src(cl.engine(0), 4096), dst(cl.engine(1), 4096);
  Buffer readonly(cl.engine(1), 4096, access::kLocalWrite | access::kRemoteRead);
  wire::Packet p = genuine_write(src, dst);
  std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
  const std::vector<std::uint8_t> evil(p.data.payload_length, 0xee);
  const Counters before = cl.engine(1).counters();
  std::uint32_t psn = p.data.psn;
  std::uint32_t msn = p.data.msn;
  const auto attempt = [&](std::uint64_t addr, std::uint32_t rkey) {
    wire::Packet q = p;
    q.data.psn = ++psn;
    q.data.msn = ++msn;
    q.data.remote_addr = addr;
    q.data.rkey = rkey;
    forge(q, evil);
  };
  attempt(dst.addr() + 4000, dst.keys.rkey);     // runs past the end
  attempt(dst.addr() - 512, dst.keys.rkey);      // starts before
  attempt(dst.addr(), dst.keys.rkey + 1);        // no such key
  attempt(readonly.addr(), readonly.keys.rkey);  // no remote write right
  const Counters& after = cl.engine(1).counters();
  EXPECT_EQ(after.drop(DropReason::kOutOfRange), before.drop(DropReason::kOutOfRange) + 2);
  EXPECT_EQ(after.drop(DropReason::kBadKey), before.drop(DropReason::kBadKey) + 1);
  EXPECT_EQ(after.drop(DropReason::kAccessDenied), before.drop(DropReason::kAccessDenied) + 1);
  EXPECT_EQ(dst.bytes, std::vector<std::uint8_t>(4096, 0));
  EXPECT_EQ(readonly.bytes, std::vector<std::uint8_t>(4096, 0));
}

TEST_F(Security, GarbageDuringATransferIsCountedAndHarmless) {
  // Random bytes, truncations and bit-flipped copies of real packets, injected into
  // both engines all through a lossy transfer.
  std::vector<Captured> seen;
  cl.net.set_tap([&](int, const TxMeta& m, std::span<const std::uint8_t> b) {
    if (seen.size() < 4096) seen.push_back({{b.begin(), b.end()}, m});
  });
  for (int s = 0; s < 4; ++s) cl.net.spine(0, s).loss = 0.02;
  Workload w(cl, 3, 150, 30000, 77, true);
  w.post_all();
  std::mt19937_64 rng(1234);
  std::uint64_t injected = 0;
  const bool done = cl.net.run_until(
      [&] {
        if (!seen.empty() && rng() % 4 == 0) {
          Captured c = seen[rng() % seen.size()];
          switch (rng() % 4) {
            case 0:
              for (auto& byte : c.bytes) byte = std::uint8_t(rng());
              break;
            case 1:
              c.bytes.resize(rng() % c.bytes.size());
              break;
            default:
              // Flip a bit in the identity fields (type, connection id or token): such
              // copies must never be taken for the real thing.
              c.bytes[4 + rng() % 12] ^= std::uint8_t(1u << (rng() % 8));
          }
          const int to = int(rng() % 2);
          RxMeta m = rx_of(c.meta);
          cl.net.inject(to, m, c.bytes);
          ++injected;
        }
        return cl.rec(0).completions.size() >= 150 && cl.rec(1).completions.size() >= 1;
      },
      cl.net.now() + 20 * kSecond);
  ASSERT_TRUE(done);
  ASSERT_TRUE(w.run(20 * kSecond));
  w.verify();
  EXPECT_GT(injected, 100u);
  const std::uint64_t refused =
      cl.engine(0).counters().total_drops() + cl.engine(1).counters().total_drops();
  EXPECT_GT(refused, injected / 2);
  EXPECT_GT(cl.engine(0).counters().drop(DropReason::kMalformed) +
                cl.engine(1).counters().drop(DropReason::kMalformed),
            0u);
}

TEST_F(Security, ReplayedAcksAreCountedAndGiveNoRttSample) {
  // Every ACK host 1 sends, kept; once the writes are done and the paths quiet, each is
  // delivered again, much later: a replay must be counted and must not read as the
  // path's round trip (it would be the time since the original).
  std::vector<Captured> acks;
  cl.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> bytes) {
    wire::Packet p;
    if (host == 1 && wire::decode(bytes, {}, &p) == wire::DecodeError::kOk &&
        p.common.type == wire::PacketType::kAck) {
      acks.push_back({{bytes.begin(), bytes.end()}, m});
    }
  });
  Buffer src(cl.engine(0), 1 << 16), dst(cl.engine(1), 1 << 16);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 1 << 16, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 100 * kMillisecond));
  ASSERT_FALSE(acks.empty());
  cl.net.run_until([] { return false; }, cl.net.now() + 500 * kMillisecond);
  const ConnId conn = cl.engine(0).stream_connection(a);
  ConnStats cs;
  ASSERT_TRUE(cl.engine(0).connection_stats(conn, &cs));
  std::vector<Time> srtt(cs.paths);
  for (std::uint16_t i = 0; i < cs.paths; ++i) {
    PathStats ps;
    ASSERT_TRUE(cl.engine(0).path_stats(conn, i, &ps));
    srtt[i] = ps.srtt;
  }
  const Counters before = cl.engine(0).counters();
  for (const Captured& c : acks) cl.net.inject(0, rx_of(c.meta), c.bytes);
  cl.net.run_until([] { return false; }, cl.net.now() + 1 * kMillisecond);
  const Counters& after = cl.engine(0).counters();
  EXPECT_EQ(after.drop(DropReason::kOldAck), before.drop(DropReason::kOldAck) + acks.size());
  for (std::uint16_t i = 0; i < cs.paths; ++i) {
    PathStats ps;
    ASSERT_TRUE(cl.engine(0).path_stats(conn, i, &ps));
    EXPECT_EQ(ps.srtt, srtt[i]) << "path " << i;
    EXPECT_EQ(ps.state, PathState::kActive) << "path " << i;
  }
}

TEST(SetUpSecurity, ReflectedConnectAndAcceptFromElsewhereAreRefused) {
  // An attacker on the path sends an endpoint its own CONNECT back, and an ACCEPT that
  // claims another endpoint. Answering either would connect it to itself or to a
  // stranger; both are dropped as "wrong peer" and the real set-up goes on.
  Cluster cl(2, 1, 4, 79);
  std::optional<Captured> connect, accept;
  cl.net.set_tap([&](int host, const TxMeta& m, std::span<const std::uint8_t> b) {
    wire::Packet p;
    if (wire::decode(b, {}, &p) != wire::DecodeError::kOk) return;
    if (host == 0 && p.common.type == wire::PacketType::kConnect && !connect) {
      connect = Captured{{b.begin(), b.end()}, m};
    }
    if (host == 1 && p.common.type == wire::PacketType::kAccept && !accept) {
      accept = Captured{{b.begin(), b.end()}, m};
    }
  });
  StreamId s = 0, peer_s = 0;
  ASSERT_EQ(cl.engine(0).create_stream({}, &s), Errc::kOk);
  ASSERT_EQ(cl.engine(1).create_stream({}, &peer_s), Errc::kOk);
  ASSERT_EQ(cl.engine(0).connect_stream(0, s, cl.hosts[1]->endpoint(), peer_s), Errc::kOk);
  ASSERT_EQ(cl.engine(1).connect_stream(0, peer_s, cl.hosts[0]->endpoint(), s), Errc::kOk);
  cl.net.run_for(1 * kMicrosecond);
  ASSERT_TRUE(connect.has_value());
  cl.net.inject(0, rx_of(connect->meta), connect->bytes);
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kWrongPeer), 1u);
  int connections = 0;
  cl.engine(0).for_each_connection([&](ConnId) { ++connections; });
  EXPECT_EQ(connections, 1) << "the reflected CONNECT created a connection";

  cl.net.run_for(1 * kMillisecond);
  ASSERT_TRUE(accept.has_value());
  wire::Packet p;
  ASSERT_EQ(wire::decode(accept->bytes, {}, &p), wire::DecodeError::kOk);
  p.handshake.listen_port += 1;  // another endpoint on the same host
  std::vector<std::uint8_t> forged(512);
  forged.resize(wire::encode_handshake(p.common, p.handshake, forged));
  cl.net.inject(0, rx_of(accept->meta), forged);
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kWrongPeer), 2u);

  // The genuine set-up was not disturbed: a WRITE goes through.
  Buffer src(cl.engine(0), 4096), dst(cl.engine(1), 4096);
  fill_pattern(src.bytes, 5);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 4096, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), s, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 100 * kMillisecond));
  EXPECT_EQ(cl.rec(0).completions[0].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
}

TEST(SetUpSecurity, AConnectionToItselfStillWorks) {
  // Two streams of one endpoint bound to each other (two queue pairs of one Verbs
  // context connected together): the endpoint's CONNECT to itself is not a reflection.
  Cluster cl(1, 1, 1, 5);
  StreamId a = 0, b = 0;
  ASSERT_EQ(cl.engine(0).create_stream({}, &a), Errc::kOk);
  ASSERT_EQ(cl.engine(0).create_stream({}, &b), Errc::kOk);
  ASSERT_EQ(cl.engine(0).connect_stream(0, a, cl.hosts[0]->endpoint(), b), Errc::kOk);
  ASSERT_EQ(cl.engine(0).connect_stream(0, b, cl.hosts[0]->endpoint(), a), Errc::kOk);
  Buffer src(cl.engine(0), 4096), dst(cl.engine(0), 4096);
  fill_pattern(src.bytes, 3);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 4096, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(0, a, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 100 * kMillisecond));
  EXPECT_EQ(cl.rec(0).completions[0].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kWrongPeer), 0u);
}

// A CONNECT as an endpoint at `claimed` with the given identity would send it.
std::vector<std::uint8_t> connect_bytes(const Endpoint& claimed, std::uint32_t id,
                                        std::uint64_t token) {
  wire::CommonHeader c;
  c.type = wire::PacketType::kConnect;
  wire::HandshakeHeader hs;
  hs.src_conn = id;
  hs.src_token = token;
  hs.isn = 1;
  hs.listen_port = claimed.port;
  hs.mss = 4096;
  hs.max_messages = 256;
  hs.max_responses = 64;
  hs.paths = 16;
  hs.address_count = 1;
  hs.addresses[0] = claimed.addr.bytes;
  std::vector<std::uint8_t> out(512);
  out.resize(wire::encode_handshake(c, hs, out));
  return out;
}

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

TEST(SetUpSecurity, ForgedConnectsForALivePeerLeaveItsTransferAlone) {
  // A blind attacker sends host 1 a CONNECT pair that claims host 0's endpoint, from
  // host 0's address, with a new id and token, as a restart of host 0 would. Host 1's
  // ACCEPT goes to host 0, which knows no such connection; the live connection and its
  // WRITE carry on, and the unconfirmed incarnation is counted as forged when it expires.
  Cluster cl(2, 1, 4, 83);
  auto [a, b] = cl.connect(0, 1);
  Buffer src(cl.engine(0), 4 << 20), dst(cl.engine(1), 4 << 20);
  fill_pattern(src.bytes, 9);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 4 << 20, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  cl.net.run_for(500 * kMicrosecond);
  ASSERT_TRUE(cl.rec(0).completions.empty()) << "the WRITE ended before the forgery";
  const Endpoint victim = cl.hosts[0]->endpoint();
  const auto forged = connect_bytes(victim, 0x00012345, 0x5eed5eed5eed5eedull);
  cl.net.inject(1, from(victim.addr, 50001, cl.hosts[1]->endpoint()), forged);
  cl.net.inject(1, from(victim.addr, 50002, cl.hosts[1]->endpoint()), forged);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 1 * kSecond));
  EXPECT_EQ(cl.rec(0).completions[0].status, WcStatus::kSuccess);
  EXPECT_EQ(src.bytes, dst.bytes);
  EXPECT_EQ(cl.engine(1).stream_state(b), StreamState::kReady);
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kUnknownConn), 2u) << "the two ACCEPTs";
  // A CONNECT from another address than the one it claims cannot prove that address.
  cl.net.inject(1, from(host_address(7, 0), 50003, cl.hosts[1]->endpoint()), forged);
  EXPECT_EQ(cl.engine(1).counters().drop(DropReason::kForgedConnect), 1u);
  cl.net.run_for(11 * kSecond);  // past the set-up timeout
  EXPECT_EQ(cl.engine(1).counters().drop(DropReason::kForgedConnect), 3u);
  EXPECT_EQ(connections(cl.engine(1)), 1);
  EXPECT_EQ(cl.engine(1).stream_state(b), StreamState::kReady);
}

TEST(SetUpSecurity, AGenuineRestartReplacesTheConnectionOnceConfirmed) {
  // Host 1's process restarts at the same address. Its new incarnation's CONNECT leaves
  // the live connection untouched until the CONFIRM of our ACCEPT; then the old one
  // closes (its streams fail) and new streams work over the new connection.
  Cluster cl(2, 1, 4, 85);
  const StreamId a = cl.connect(0, 1).first;
  StreamId a2 = 0;
  ASSERT_EQ(cl.engine(0).create_stream({}, &a2), Errc::kOk);
  Buffer src(cl.engine(0), 4096), dst(cl.engine(1), 4096);
  SendWr wr = make_wr(WrOpcode::kRdmaWrite, src, 0, 4096, 1);
  wr.remote_addr = dst.addr();
  wr.rkey = dst.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a, wr), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 100 * kMillisecond));

  EngineConfig config = test_config(1, 1);
  config.seed = 4242;  // another process: other tokens
  auto former = std::move(cl.hosts[1]->engine);
  cl.hosts[1]->engine = std::make_unique<Engine>(config);
  Engine& restarted = cl.engine(1);
  restarted.set_sink(&cl.rec(1));
  cl.net.replace(1, &restarted);
  former.reset();
  bool accepted = false, live_meanwhile = false;
  cl.net.set_tap([&](int host, const TxMeta&, std::span<const std::uint8_t> bytes) {
    wire::Packet p;
    if (host == 0 && !accepted && wire::decode(bytes, {}, &p) == wire::DecodeError::kOk &&
        p.common.type == wire::PacketType::kAccept) {
      accepted = true;
      live_meanwhile = cl.engine(0).stream_state(a) == StreamState::kReady;
    }
  });
  StreamId b2 = 0;
  ASSERT_EQ(restarted.create_stream({}, &b2), Errc::kOk);
  ASSERT_EQ(restarted.connect_stream(cl.net.now(), b2, cl.hosts[0]->endpoint(), a2), Errc::kOk);
  ASSERT_TRUE(cl.net.run_until([&] { return cl.engine(0).stream_state(a) == StreamState::kError; },
                               cl.net.now() + 100 * kMillisecond));
  EXPECT_TRUE(accepted);
  EXPECT_TRUE(live_meanwhile) << "the live connection ended before the new one confirmed";
  EXPECT_EQ(connections(cl.engine(0)), 1);

  ASSERT_EQ(cl.engine(0).connect_stream(cl.net.now(), a2, cl.hosts[1]->endpoint(), b2), Errc::kOk);
  Buffer src2(cl.engine(0), 65536), dst2(restarted, 65536);
  fill_pattern(src2.bytes, 11);
  SendWr wr2 = make_wr(WrOpcode::kRdmaWrite, src2, 0, 65536, 2);
  wr2.remote_addr = dst2.addr();
  wr2.rkey = dst2.keys.rkey;
  ASSERT_EQ(cl.engine(0).post_send(cl.net.now(), a2, wr2), Errc::kOk);
  ASSERT_TRUE(cl.run_until_completions(0, 1, 100 * kMillisecond,
                                       [](const Completion& c) { return c.wr_id == 2; }));
  EXPECT_EQ(cl.rec(0).completions.back().status, WcStatus::kSuccess);
  EXPECT_EQ(src2.bytes, dst2.bytes);
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kForgedConnect), 0u);
}

TEST(SetUpSecurity, SpoofedConnectsCostBoundedStateAndReflectNothing) {
  // CONNECTs from 1,000 spoofed sources, each naming another endpoint of a third party.
  // At most kMaxHalfOpen connections exist at any time (the oldest evicted, counted);
  // each CONNECT gets one ACCEPT, at its datagram's source, never at the named address,
  // no larger than the CONNECT, and never repeated on a timer.
  Cluster cl(1, 1, 1, 87);
  const Address victim = host_address(9, 0);
  constexpr int kConnects = 1000;
  std::map<std::uint32_t, Endpoint> source_of;  // by the CONNECT's id
  std::uint64_t sent_bytes = 0, replies = 0, reply_bytes = 0, misdirected = 0;
  cl.net.set_tap([&](int, const TxMeta& m, std::span<const std::uint8_t> bytes) {
    ++replies;
    reply_bytes += bytes.size();
    wire::Packet p;
    if (wire::decode(bytes, {}, &p) != wire::DecodeError::kOk ||
        p.common.type != wire::PacketType::kAccept) {
      ++misdirected;
      return;
    }
    const auto it = source_of.find(p.common.dst_conn);
    if (it == source_of.end() || m.dst != it->second.addr || m.dst_port != it->second.port) {
      ++misdirected;
    }
  });
  const Endpoint me = cl.hosts[0]->endpoint();
  for (int i = 0; i < kConnects; ++i) {
    const std::uint32_t id = 0x100 + std::uint32_t(i);
    const Endpoint source{Address::ipv4(0x0b000000u + std::uint32_t(i)), std::uint16_t(20000 + i)};
    source_of[id] = source;
    const auto bytes = connect_bytes(Endpoint{victim, std::uint16_t(5000 + i)}, id, 77 + i);
    sent_bytes += bytes.size();
    cl.net.inject(0, from(source.addr, source.port, me), bytes);
    ASSERT_LE(connections(cl.engine(0)), int(Engine::kMaxHalfOpen));
  }
  EXPECT_EQ(cl.engine(0).counters().drop(DropReason::kSetupEvicted),
            std::uint64_t(kConnects) - Engine::kMaxHalfOpen);
  EXPECT_EQ(replies, std::uint64_t(kConnects));
  EXPECT_LE(reply_bytes, sent_bytes);
  EXPECT_EQ(misdirected, 0u);
  cl.net.run_for(11 * kSecond);
  EXPECT_EQ(replies, std::uint64_t(kConnects)) << "ACCEPTs repeated on a timer";
  EXPECT_EQ(connections(cl.engine(0)), 0);
}

TEST(SetUpSecurity, CopiesOfAConnectReadTogetherAreEachAnswered) {
  // A datapath reads a batch of datagrams before it transmits: both copies of a CONNECT
  // pair may arrive in one batch. Each still draws its own ACCEPT (SPEC 4.2), as when
  // read apart; a burst of copies draws fewer ACCEPTs than CONNECTs, never more.
  for (const int copies : {1, 2, 8}) {
    Cluster cl(1, 1, 1, 91);
    Engine& e = cl.engine(0);
    const Endpoint me = cl.hosts[0]->endpoint();
    const Endpoint peer{host_address(5, 0), 4793};
    const auto bytes = connect_bytes(peer, 0x4242, 0x77);
    const Time now = cl.net.now();
    for (int i = 0; i < copies; ++i) {
      e.on_packet(now, from(peer.addr, std::uint16_t(40000 + i), me), bytes);
    }
    std::vector<std::uint8_t> buf(e.max_packet_size());
    TxMeta m;
    int accepts = 0;
    while (e.poll_transmit(now, buf, &m)) {
      wire::Packet p;
      ASSERT_EQ(wire::decode(std::span(buf.data(), m.length), {}, &p), wire::DecodeError::kOk);
      EXPECT_EQ(p.common.type, wire::PacketType::kAccept);
      EXPECT_EQ(m.dst, peer.addr);
      ++accepts;
      m = {};
    }
    if (copies <= 2) {
      EXPECT_EQ(accepts, copies) << copies << " copies in one batch";
    } else {
      EXPECT_GE(accepts, 1);
      EXPECT_LE(accepts, copies);
    }
  }
}
}  // namespace
}  // namespace mroce::testing
