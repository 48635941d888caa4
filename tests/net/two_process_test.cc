// Two processes over loopback, each with its own device, that only know each other's
// endpoint and queue pair number (exchanged over a pipe, as applications exchange them
// out of band): every operation arrives byte-exact on the other side.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "net_fixture.h"

namespace mroce::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kSize = 1 << 20;

// What each side tells the other.
struct Info {
  std::uint8_t addr[16];
  std::uint16_t port;
  StreamId qpn;
  std::uint64_t dst, src, atomic;  // the child's regions
  std::uint32_t dst_rkey, src_rkey, atomic_rkey;
};

struct Verdict {
  bool ok;
  char detail[256];
};

template <typename T>
bool write_all(int fd, const T& v) {
  return write(fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v);
}
template <typename T>
bool read_all(int fd, T* v) {
  std::size_t got = 0;
  while (got < sizeof *v) {
    const ssize_t n = read(fd, reinterpret_cast<char*>(v) + got, sizeof *v - got);
    if (n <= 0) return false;
    got += std::size_t(n);
  }
  return true;
}

// The child: a passive peer that checks what arrived and reports.
int child_main(int fd) {
  auto fail = [&](const std::string& why) {
    Verdict v{false, {}};
    std::snprintf(v.detail, sizeof v.detail, "%s", why.c_str());
    write_all(fd, v);
    return 1;
  };
  std::string error;
  DeviceOptions o;
  o.port = 0;
  auto dev = Device::open(o, &error);
  if (!dev) return fail("open: " + error);
  auto cq = dev->create_cq(256);
  QpOptions qo;
  qo.send_cq = qo.recv_cq = cq.get();
  auto qp = dev->create_qp(qo);
  Region dst(*dev, kSize, 3), src(*dev, kSize, 4), atomic(*dev, 64, 5);
  std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
  const std::uint64_t initial[2] = {1000, 7};
  std::memcpy(atomic.bytes.data(), initial, sizeof initial);
  qp->post_recv(make_recv(dst.sge(600000, 100000), 101));
  qp->post_recv(make_recv(dst.sge(700000, 5000), 102));
  qp->post_recv(make_recv(dst.sge(800000, 16), 103));

  Info mine{};
  const Endpoint ep = dev->endpoint();
  std::memcpy(mine.addr, ep.addr.bytes.data(), 16);
  mine.port = ep.port;
  mine.qpn = qp->qp_num();
  mine.dst = dst.addr();
  mine.src = src.addr();
  mine.atomic = atomic.addr();
  mine.dst_rkey = dst.mr->rkey();
  mine.src_rkey = src.mr->rkey();
  mine.atomic_rkey = atomic.mr->rkey();
  Info peer{};
  if (!write_all(fd, mine) || !read_all(fd, &peer)) return fail("exchange");
  Endpoint pe;
  std::memcpy(pe.addr.bytes.data(), peer.addr, 16);
  pe.port = peer.port;
  if (qp->connect(pe, peer.qpn) != Errc::kOk) return fail("connect");
  // As with Verbs, the peer sends only once we are ready to receive (RTR).
  const char ready = 1;
  if (!write_all(fd, ready)) return fail("ready");

  // The parent says when its requests all completed; only then is everything here.
  char go = 0;
  if (!read_all(fd, &go)) return fail("the parent went away");
  const auto recvs = wait_for(*cq, 3, 20s);
  if (recvs.size() != 3) return fail("got " + std::to_string(recvs.size()) + " of 3 receives");
  if (recvs[0].byte_len != 100000 || recvs[1].byte_len != 5000 || !recvs[1].has_imm ||
      recvs[1].imm != 0x11223344 || recvs[2].opcode != WcOpcode::kRecvRdmaWithImm ||
      recvs[2].imm != 0x55667788 || recvs[2].byte_len != 70000) {
    return fail("receive completions carry the wrong lengths, opcodes or immediates");
  }
  Region expected(*dev, kSize, 1);  // the parent's source pattern
  const auto same = [&](std::size_t from, std::size_t to, std::size_t n) {
    return std::equal(expected.bytes.begin() + from, expected.bytes.begin() + from + n,
                      dst.bytes.begin() + to);
  };
  if (!same(0, 0, 300000)) return fail("WRITE bytes differ");
  if (dst.bytes[300000] != 0) return fail("WRITE ran past its end");
  if (!same(300000, 600000, 100000)) return fail("SEND bytes differ");
  if (!same(400000, 700000, 5000)) return fail("SEND_IMM bytes differ");
  if (!same(410000, 400000, 70000)) return fail("WRITE_IMM bytes differ");
  std::uint64_t after[2];
  std::memcpy(after, atomic.bytes.data(), sizeof after);
  if (after[0] != 1005 || after[1] != 99) return fail("atomics left the wrong values");
  const Counters c = dev->counters();
  if (c.rx_packets < 100) return fail("counters show no traffic");
  for (DropReason r : {DropReason::kBadKey, DropReason::kOutOfRange, DropReason::kAccessDenied,
                       DropReason::kBadToken, DropReason::kUnknownConn, DropReason::kBadStream}) {
    if (c.drop(r)) return fail(std::string("refused packets: ") + to_string(r));
  }
  Verdict v{true, {}};
  write_all(fd, v);
  char bye;
  read_all(fd, &bye);
  return 0;
}

TEST(TwoProcesses, EveryOperationCrossesByteExact) {
  int fds[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    _exit(child_main(fds[1]));
  }
  close(fds[1]);
  const int fd = fds[0];
  Info peer{};
  ASSERT_TRUE(read_all(fd, &peer)) << "the child did not start";

  Side a = make_side(loopback_options());
  ASSERT_TRUE(a.dev);
  QpOptions qo;
  qo.send_cq = qo.recv_cq = a.cq.get();
  a.qps.push_back(a.dev->create_qp(qo));
  Region src(*a.dev, kSize, 1), dst(*a.dev, kSize, 6), result(*a.dev, 64, 7);
  Info mine{};
  const Endpoint ep = a.dev->endpoint();
  std::memcpy(mine.addr, ep.addr.bytes.data(), 16);
  mine.port = ep.port;
  mine.qpn = a.qp().qp_num();
  ASSERT_TRUE(write_all(fd, mine));
  Endpoint pe;
  std::memcpy(pe.addr.bytes.data(), peer.addr, 16);
  pe.port = peer.port;
  ASSERT_EQ(a.qp().connect(pe, peer.qpn), Errc::kOk);
  char ready = 0;
  ASSERT_TRUE(read_all(fd, &ready)) << "the child did not get ready";

  SendWr write = make_send(WrOpcode::kRdmaWrite, src.sge(0, 300000), 1);
  write.remote_addr = peer.dst;
  write.rkey = peer.dst_rkey;
  SendWr send = make_send(WrOpcode::kSend, src.sge(300000, 100000), 2);
  SendWr send_imm = make_send(WrOpcode::kSendWithImm, src.sge(400000, 5000), 3);
  send_imm.imm = 0x11223344;
  SendWr write_imm = make_send(WrOpcode::kRdmaWriteWithImm, src.sge(410000, 70000), 4);
  write_imm.remote_addr = peer.dst + 400000;
  write_imm.rkey = peer.dst_rkey;
  write_imm.imm = 0x55667788;
  SendWr read = make_send(WrOpcode::kRdmaRead, dst.sge(0, 200000), 5);
  read.remote_addr = peer.src + 1000;
  read.rkey = peer.src_rkey;
  SendWr faa = make_send(WrOpcode::kAtomicFetchAdd, result.sge(0, 8), 6);
  faa.remote_addr = peer.atomic;
  faa.rkey = peer.atomic_rkey;
  faa.compare_add = 5;
  SendWr cas = make_send(WrOpcode::kAtomicCmpSwp, result.sge(8, 8), 7);
  cas.remote_addr = peer.atomic + 8;
  cas.rkey = peer.atomic_rkey;
  cas.compare_add = 7;
  cas.swap = 99;
  for (const SendWr* wr : {&write, &send, &send_imm, &write_imm, &read, &faa, &cas}) {
    ASSERT_EQ(a.qp().post_send(*wr), Errc::kOk);
  }
  const auto done = wait_for(*a.cq, 7, 20s);
  ASSERT_EQ(done.size(), 7u);
  for (std::size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].wr_id, i + 1);
    EXPECT_EQ(done[i].status, WcStatus::kSuccess) << to_string(done[i].status);
  }
  const char go = 1;
  ASSERT_TRUE(write_all(fd, go));
  Verdict v{};
  ASSERT_TRUE(read_all(fd, &v)) << "the child died";
  EXPECT_TRUE(v.ok) << "child: " << v.detail;

  Region child_src(*a.dev, kSize, 4);  // the child's READ source pattern
  EXPECT_TRUE(std::equal(child_src.bytes.begin() + 1000, child_src.bytes.begin() + 201000,
                         dst.bytes.begin()))
      << "READ bytes differ";
  std::uint64_t old[2];
  std::memcpy(old, result.bytes.data(), sizeof old);
  EXPECT_EQ(old[0], 1000u);
  EXPECT_EQ(old[1], 7u);
  EXPECT_GT(a.dev->counters().tx_data_packets, 100u);

  const char bye = 1;
  write_all(fd, bye);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  close(fd);
}

}  // namespace
}  // namespace mroce::testing
