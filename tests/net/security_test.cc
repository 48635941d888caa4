// Packets that do not belong to a live connection, or that name memory outside a region
// or without the right, are dropped and counted and never placed; garbage never hurts.
// A raw socket captures a genuine WRITE on loopback and sends forged copies of it from
// the same 5-tuple, as an attacker on the path would.
#include <arpa/inet.h>
#include <linux/filter.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <random>

#include "net_fixture.h"
#include "wire/codec.h"

namespace mroce::testing {
namespace {

using namespace std::chrono_literals;

struct Captured {
  std::vector<std::uint8_t> payload;  // the UDP payload
  std::uint16_t src_port = 0;
  std::uint16_t dst_port = 0;
};

class RawUdp {
 public:
  RawUdp() {
    fd_ = socket(AF_INET, SOCK_RAW, IPPROTO_UDP);
    if (fd_ >= 0) {
      const timeval tv{0, 200000};
      setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
  }
  ~RawUdp() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  // Keeps only datagrams to dst_port. A raw socket otherwise queues a copy of every UDP
  // datagram on the machine, and tests running beside this one can overflow it.
  bool only_to(std::uint16_t dst_port) {
    sock_filter code[] = {
        BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),  // X = IP header length
        BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),   // A = UDP destination port
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, dst_port, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0xffff),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    const sock_fprog prog{static_cast<unsigned short>(std::size(code)), code};
    const int bytes = 4 << 20;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes);
    return setsockopt(fd_, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) == 0;
  }

  // The next UDP datagram to dst_port whose payload satisfies pred.
  std::optional<Captured> capture(std::uint16_t dst_port,
                                  const std::function<bool(const wire::Packet&)>& pred,
                                  std::chrono::milliseconds timeout) {
    std::vector<std::uint8_t> buf(70000);
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
      const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
      if (n < static_cast<ssize_t>(sizeof(iphdr) + sizeof(udphdr))) continue;
      const auto* ip = reinterpret_cast<const iphdr*>(buf.data());
      const std::size_t ihl = ip->ihl * 4u;
      const auto* udp = reinterpret_cast<const udphdr*>(buf.data() + ihl);
      if (ntohs(udp->dest) != dst_port) continue;
      Captured c;
      c.src_port = ntohs(udp->source);
      c.dst_port = ntohs(udp->dest);
      c.payload.assign(buf.begin() + static_cast<long>(ihl + sizeof(udphdr)), buf.begin() + n);
      wire::Packet p;
      if (wire::decode(c.payload, {}, &p) == wire::DecodeError::kOk && pred(p)) return c;
    }
    return std::nullopt;
  }

  // Sends `payload` from 127.0.0.1:src_port to 127.0.0.1:dst_port (checksum left out,
  // which IPv4 allows).
  bool inject(std::uint16_t src_port, std::uint16_t dst_port,
              std::span<const std::uint8_t> payload) {
    std::vector<std::uint8_t> datagram(sizeof(udphdr) + payload.size());
    auto* udp = reinterpret_cast<udphdr*>(datagram.data());
    udp->source = htons(src_port);
    udp->dest = htons(dst_port);
    udp->len = htons(static_cast<std::uint16_t>(datagram.size()));
    udp->check = 0;
    std::copy(payload.begin(), payload.end(), datagram.begin() + sizeof(udphdr));
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sendto(fd_, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&to),
                  sizeof to) == static_cast<ssize_t>(datagram.size());
  }

 private:
  int fd_ = -1;
};

std::vector<std::uint8_t> forge(const wire::Packet& p, std::size_t payload_bytes,
                                std::uint8_t fill) {
  std::vector<std::uint8_t> out(9000);
  const std::size_t n = wire::encode_data(p.common, p.data, out);
  std::fill(out.begin() + static_cast<long>(n), out.begin() + static_cast<long>(n + payload_bytes),
            fill);
  out.resize(n + payload_bytes);
  return out;
}

// Waits until `done` holds for B's counters.
bool wait_counters(Device& d, const std::function<bool(const Counters&)>& done) {
  const auto end = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < end) {
    if (done(d.counters())) return true;
    std::this_thread::sleep_for(2ms);
  }
  return false;
}

class Security : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(raw.ok()) << "a raw socket needs root (CAP_NET_RAW): run the tests as root";
    a = make_side(loopback_options());
    b = make_side(loopback_options());
    ASSERT_TRUE(a.dev && b.dev);
    ASSERT_TRUE(raw.only_to(b.dev->endpoint().port)) << "cannot filter the raw socket";
    connect_qps(a, b);
    src = std::make_unique<Region>(*a.dev, 4096, 1);
    dst = std::make_unique<Region>(*b.dev, 4096, 2);
    readonly = std::make_unique<Region>(*b.dev, 4096, 3, access::kLocalWrite | access::kRemoteRead);
    std::fill(dst->bytes.begin(), dst->bytes.end(), 0);
    std::fill(readonly->bytes.begin(), readonly->bytes.end(), 0);
  }

  // One genuine 512-byte WRITE, captured on its way to B.
  Captured genuine_write(wire::Packet* decoded) {
    SendWr wr = make_send(WrOpcode::kRdmaWrite, src->sge(0, 512), 1);
    wr.remote_addr = dst->addr(0);
    wr.rkey = dst->mr->rkey();
    EXPECT_EQ(a.qp().post_send(wr), Errc::kOk);
    auto c = raw.capture(
        b.dev->endpoint().port,
        [](const wire::Packet& p) {
          return p.common.type == wire::PacketType::kData && p.data.op == wire::DataOp::kWrite;
        },
        3s);
    EXPECT_TRUE(c.has_value()) << "the WRITE was not seen on loopback";
    EXPECT_EQ(wait_for(*a.cq, 1, 5s).size(), 1u);
    if (c) {
      EXPECT_EQ(wire::decode(c->payload, {}, decoded), wire::DecodeError::kOk);
    }
    return c.value_or(Captured{});
  }

  bool no_evil_bytes() const {
    for (const Region* r : {dst.get(), readonly.get()}) {
      for (std::size_t i = 512; i < r->bytes.size(); ++i) {
        if (r->bytes[i] == 0xee) return false;
      }
    }
    return std::count(dst->bytes.begin(), dst->bytes.begin() + 512, 0xee) ==
           std::count(src->bytes.begin(), src->bytes.begin() + 512, 0xee);
  }

  RawUdp raw;
  Side a, b;
  std::unique_ptr<Region> src, dst, readonly;
};

TEST_F(Security, WrongTokenAndUnknownConnectionAreDroppedAndCounted) {
  wire::Packet p;
  const Captured c = genuine_write(&p);
  ASSERT_FALSE(c.payload.empty());
  const Counters before = b.dev->counters();
  wire::Packet q = p;
  q.data.psn += 1;
  q.common.token ^= 0x5a5a;
  ASSERT_TRUE(raw.inject(c.src_port, c.dst_port, forge(q, p.data.payload_length, 0xee)));
  q = p;
  q.data.psn += 2;
  q.common.dst_conn ^= 0x00100000;  // same slot, another generation
  ASSERT_TRUE(raw.inject(c.src_port, c.dst_port, forge(q, p.data.payload_length, 0xee)));
  EXPECT_TRUE(wait_counters(
      *b.dev,
      [&](const Counters& now) {
        return now.drop(DropReason::kBadToken) == before.drop(DropReason::kBadToken) + 1 &&
               now.drop(DropReason::kUnknownConn) == before.drop(DropReason::kUnknownConn) + 1;
      }))
      << "bad token " << b.dev->counters().drop(DropReason::kBadToken) << ", unknown connection "
      << b.dev->counters().drop(DropReason::kUnknownConn);
  EXPECT_TRUE(no_evil_bytes());
}

TEST_F(Security, MemoryOutsideARegionOrWithoutTheRightIsRefused) {
  wire::Packet p;
  const Captured c = genuine_write(&p);
  ASSERT_FALSE(c.payload.empty());
  const Counters before = b.dev->counters();
  // Sequence numbers well ahead of the genuine one: the sender may have used the next few
  // for probes since, and a copy of a received one would only count as a duplicate.
  std::uint32_t psn = p.data.psn + 32, msn = p.data.msn;
  const auto attempt = [&](std::uint64_t addr, std::uint32_t rkey) {
    wire::Packet q = p;
    q.data.psn = ++psn;
    q.data.msn = ++msn;
    q.data.remote_addr = addr;
    q.data.rkey = rkey;
    ASSERT_TRUE(raw.inject(c.src_port, c.dst_port, forge(q, p.data.payload_length, 0xee)));
  };
  attempt(dst->addr(4000), dst->mr->rkey());         // runs past the end
  attempt(dst->addr(0) - 512, dst->mr->rkey());      // starts before it
  attempt(dst->addr(0), dst->mr->rkey() ^ 0x100);    // names no region
  attempt(readonly->addr(0), readonly->mr->rkey());  // no remote write right
  EXPECT_TRUE(wait_counters(
      *b.dev,
      [&](const Counters& now) {
        return now.drop(DropReason::kOutOfRange) == before.drop(DropReason::kOutOfRange) + 2 &&
               now.drop(DropReason::kBadKey) == before.drop(DropReason::kBadKey) + 1 &&
               now.drop(DropReason::kAccessDenied) == before.drop(DropReason::kAccessDenied) + 1;
      }))
      << "out of range " << b.dev->counters().drop(DropReason::kOutOfRange) << ", bad key "
      << b.dev->counters().drop(DropReason::kBadKey) << ", denied "
      << b.dev->counters().drop(DropReason::kAccessDenied);
  EXPECT_TRUE(no_evil_bytes());
}

TEST_F(Security, GarbageIsCountedAndTheConnectionCarriesOn) {
  wire::Packet p;
  const Captured c = genuine_write(&p);
  ASSERT_FALSE(c.payload.empty());
  const Counters before = b.dev->counters();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::vector<std::uint8_t> junk = c.payload;
    switch (i % 3) {
      case 0:
        for (auto& byte : junk) byte = std::uint8_t(rng());
        break;
      case 1:
        junk.resize(rng() % junk.size());
        break;
      default:
        // A flipped bit in the identity (connection id or token) must never pass for the
        // real thing. (Bytes 0-3, type to generation, are what the token vouches for.)
        junk[4 + rng() % 12] ^= std::uint8_t(1u << (rng() % 8));
    }
    ASSERT_TRUE(raw.inject(c.src_port, c.dst_port, junk));
  }
  EXPECT_TRUE(wait_counters(
      *b.dev, [&](const Counters& now) { return now.total_drops() >= before.total_drops() + 150; }))
      << "drops " << b.dev->counters().total_drops() - before.total_drops() << " of 300";
  EXPECT_GT(b.dev->counters().drop(DropReason::kMalformed), before.drop(DropReason::kMalformed));

  // Still a working connection: a full-size WRITE lands byte-exact.
  Region big_src(*a.dev, 1 << 20, 9), big_dst(*b.dev, 1 << 20, 10);
  SendWr wr = make_send(WrOpcode::kRdmaWrite, big_src.sge(0, 1 << 20), 2);
  wr.remote_addr = big_dst.addr(0);
  wr.rkey = big_dst.mr->rkey();
  ASSERT_EQ(a.qp().post_send(wr), Errc::kOk);
  const auto done = wait_for(*a.cq, 1, 10s);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(big_src.bytes, big_dst.bytes);
}

}  // namespace
}  // namespace mroce::testing
