// Every operation through the stand-in library between two contexts on loopback:
// SEND (with immediate), RDMA WRITE (with immediate), RDMA READ and the two atomics,
// with the completions Verbs users expect.
#include <arpa/inet.h>

#include <numeric>

#include "loopback_pair.h"

namespace mroce::verbs::testing {
namespace {

using Ops = LoopbackPair;

void fill(Side& s, std::size_t offset, std::size_t n, std::uint8_t seed) {
  for (std::size_t i = 0; i < n; ++i) s.buf[offset + i] = static_cast<std::uint8_t>(seed + i * 7);
}

TEST_F(Ops, SendWithImmediateLandsInPostedReceive) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, 65536), 77), 0);
  fill(a_, 0, 50000, 3);
  ibv_send_wr wr{};
  wr.wr_id = 5;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(0xabcd1234);
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 50000)), 0);

  auto rx = b_.wait(1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rx[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(rx[0].wr_id, 77u);
  EXPECT_EQ(rx[0].byte_len, 50000u);
  EXPECT_TRUE(rx[0].wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(rx[0].imm_data), 0xabcd1234u);
  EXPECT_EQ(rx[0].qp_num, qb->qp_num);
  EXPECT_EQ(std::memcmp(a_.buf.data(), b_.buf.data(), 50000), 0);

  auto tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(tx[0].opcode, IBV_WC_SEND);
  EXPECT_EQ(tx[0].wr_id, 5u);
  EXPECT_EQ(tx[0].qp_num, qa->qp_num);
}

TEST_F(Ops, WriteAndWriteWithImmediate) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  fill(a_, 0, 200000, 11);
  ibv_send_wr wr{};
  wr.wr_id = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(b_.buf.data()) + 4096;
  wr.wr.rdma.rkey = b_.mr->rkey;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 200000)), 0);
  auto tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(tx[0].opcode, IBV_WC_RDMA_WRITE);
  EXPECT_EQ(std::memcmp(a_.buf.data(), b_.buf.data() + 4096, 200000), 0);

  // WRITE with immediate consumes a receive and reports the immediate there.
  ASSERT_EQ(post_recv(qb, sge(b_, 0, 0), 9), 0);
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.imm_data = htonl(42);
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 1000)), 0);
  auto rx = b_.wait(1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rx[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_EQ(ntohl(rx[0].imm_data), 42u);
  EXPECT_EQ(a_.wait(1).size(), 1u);
}

TEST_F(Ops, ReadFetchesRemoteMemory) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  fill(b_, 8192, 100000, 29);
  ibv_send_wr wr{};
  wr.wr_id = 3;
  wr.opcode = IBV_WR_RDMA_READ;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(b_.buf.data()) + 8192;
  wr.wr.rdma.rkey = b_.mr->rkey;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 100000)), 0);
  auto tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(tx[0].opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(std::memcmp(a_.buf.data(), b_.buf.data() + 8192, 100000), 0);
}

TEST_F(Ops, AtomicsReturnTheOldValue) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  auto* target = reinterpret_cast<std::uint64_t*>(b_.buf.data() + 64);
  *target = 100;
  ibv_send_wr wr{};
  wr.wr_id = 4;
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.atomic.remote_addr = reinterpret_cast<std::uintptr_t>(target);
  wr.wr.atomic.rkey = b_.mr->rkey;
  wr.wr.atomic.compare_add = 5;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 8)), 0);
  auto tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(tx[0].opcode, IBV_WC_FETCH_ADD);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(a_.buf.data()), 100u);
  EXPECT_EQ(*target, 105u);

  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  wr.wr.atomic.compare_add = 105;
  wr.wr.atomic.swap = 7;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 8, 8)), 0);
  tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(tx[0].opcode, IBV_WC_COMP_SWAP);
  EXPECT_EQ(*reinterpret_cast<std::uint64_t*>(a_.buf.data() + 8), 105u);
  EXPECT_EQ(*target, 7u);
}

// Several QPs between the same two contexts share one connection (as streams) and keep
// their own order.
TEST_F(Ops, QueuePairsKeepTheirOwnOrder) {
  constexpr int kQps = 4, kMessages = 20, kSize = 3000;
  std::vector<std::pair<ibv_qp*, ibv_qp*>> pairs;
  for (int q = 0; q < kQps; ++q) {
    pairs.push_back(connected());
    ASSERT_NE(pairs.back().first, nullptr);
  }
  for (int q = 0; q < kQps; ++q) {
    for (int m = 0; m < kMessages; ++m) {
      const std::size_t off = (q * kMessages + m) * kSize;
      ASSERT_EQ(post_recv(pairs[q].second, sge(b_, off, kSize), q * 1000 + m), 0);
    }
  }
  for (int m = 0; m < kMessages; ++m) {
    for (int q = 0; q < kQps; ++q) {
      const std::size_t off = (q * kMessages + m) * kSize;
      fill(a_, off, kSize, static_cast<std::uint8_t>(q * 31 + m));
      ibv_send_wr wr{};
      wr.wr_id = q * 1000 + m;
      wr.opcode = IBV_WR_SEND;
      wr.send_flags = IBV_SEND_SIGNALED;
      ASSERT_EQ(post_send(pairs[q].first, wr, sge(a_, off, kSize)), 0);
    }
  }
  auto rx = b_.wait(kQps * kMessages);
  ASSERT_EQ(rx.size(), std::size_t{kQps * kMessages});
  std::vector<int> next(kQps, 0);
  for (const ibv_wc& wc : rx) {
    ASSERT_EQ(wc.status, IBV_WC_SUCCESS);
    const int q = static_cast<int>(wc.wr_id / 1000);
    ASSERT_LT(q, kQps);
    EXPECT_EQ(wc.qp_num, pairs[q].second->qp_num);
    EXPECT_EQ(static_cast<int>(wc.wr_id % 1000), next[q]++) << "QP " << q << " out of order";
  }
  const std::size_t total = std::size_t{kQps} * kMessages * kSize;
  EXPECT_EQ(std::memcmp(a_.buf.data(), b_.buf.data(), total), 0);
  EXPECT_EQ(a_.wait(kQps * kMessages).size(), std::size_t{kQps * kMessages});
}

}  // namespace
}  // namespace mroce::verbs::testing
