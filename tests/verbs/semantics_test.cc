// RC behaviour Verbs programs rely on: unsignaled work requests, inline data, errors on
// bad keys, receiver-not-ready retries, completion channels, the QP state machine and
// the zero-GID fallback.
#include <poll.h>

#include <thread>

#include "loopback_pair.h"

namespace mroce::verbs::testing {
namespace {

using Semantics = LoopbackPair;

ibv_send_wr write_to(const Side& remote, std::size_t offset, std::uint64_t wr_id, int flags) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = flags;
  wr.wr.rdma.remote_addr = reinterpret_cast<std::uintptr_t>(remote.buf.data()) + offset;
  wr.wr.rdma.rkey = remote.mr->rkey;
  return wr;
}

TEST_F(Semantics, UnsignaledRequestsCompleteSilently) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  for (int i = 0; i < 9; ++i)
    ASSERT_EQ(post_send(qa, write_to(b_, i * 100, i, 0), sge(a_, 0, 100)), 0);
  ASSERT_EQ(post_send(qa, write_to(b_, 900, 9, IBV_SEND_SIGNALED), sge(a_, 0, 100)), 0);
  auto tx = a_.wait(2, 1000);  // only one may come
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].wr_id, 9u);
  EXPECT_EQ(tx[0].status, IBV_WC_SUCCESS);
}

TEST_F(Semantics, SqSigAllSignalsEveryRequest) {
  auto [qa, qb] = connected(64, 1);
  ASSERT_NE(qa, nullptr);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(post_send(qa, write_to(b_, 0, i, 0), sge(a_, 0, 64)), 0);
  auto tx = a_.wait(5);
  ASSERT_EQ(tx.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(tx[i].wr_id, static_cast<std::uint64_t>(i));
}

TEST_F(Semantics, InlineDataIsCopiedAtPostTime) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, 4096), 1), 0);
  // Unregistered memory is fine for inline data.
  std::vector<std::uint8_t> scratch(4096, 0x5a);
  ibv_sge sg{reinterpret_cast<std::uintptr_t>(scratch.data()), 4096, 0};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  ASSERT_EQ(post_send(qa, wr, sg), 0);
  std::fill(scratch.begin(), scratch.end(), 0);  // the posted copy is already taken
  auto rx = b_.wait(1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(rx[0].byte_len, 4096u);
  for (int i = 0; i < 4096; ++i) ASSERT_EQ(b_.buf[i], 0x5a) << i;
}

TEST_F(Semantics, BadRemoteKeyCompletesWithAccessError) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  ibv_send_wr wr = write_to(b_, 0, 13, IBV_SEND_SIGNALED);
  wr.wr.rdma.rkey = b_.mr->rkey ^ 0x5555;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 100)), 0);
  auto tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].wr_id, 13u);
  EXPECT_EQ(tx[0].status, IBV_WC_REM_ACCESS_ERR);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qa, &attr, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(attr.qp_state, IBV_QPS_ERR);
}

// The region grants every right; the responder's QP grants only what its
// qp_access_flags say, and a request beyond them fails as on a NIC.
TEST_F(Semantics, QpAccessFlagsAreEnforcedByTheResponder) {
  struct Case {
    unsigned granted;
    ibv_wr_opcode opcode;
  };
  const Case cases[] = {
      {IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC, IBV_WR_RDMA_WRITE},
      {IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC, IBV_WR_RDMA_READ},
      {IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, IBV_WR_ATOMIC_FETCH_AND_ADD},
  };
  for (const Case& c : cases) {
    for (const bool allowed : {true, false}) {
      auto [qa, qb] = connected(64, 0, allowed ? kAllRemote : c.granted);
      ASSERT_NE(qa, nullptr);
      ibv_send_wr wr = write_to(b_, 64, 21, IBV_SEND_SIGNALED);
      wr.opcode = c.opcode;
      if (c.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        wr.wr.atomic.remote_addr = reinterpret_cast<std::uintptr_t>(b_.buf.data()) + 64;
        wr.wr.atomic.rkey = b_.mr->rkey;
        wr.wr.atomic.compare_add = 1;
      }
      ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 8)), 0);
      auto tx = a_.wait(1);
      ASSERT_EQ(tx.size(), 1u);
      EXPECT_EQ(tx[0].status, allowed ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR)
          << "opcode " << c.opcode << (allowed ? " allowed" : " refused");
    }
  }
}

TEST_F(Semantics, BadLocalKeyIsRefusedAtPost) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  ibv_sge sg = sge(a_, 0, 100);
  sg.lkey ^= 0x5555;
  EXPECT_EQ(post_send(qa, write_to(b_, 0, 1, IBV_SEND_SIGNALED), sg), EINVAL);
}

TEST_F(Semantics, SendWaitsForALateReceive) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  ibv_send_wr wr{};
  wr.wr_id = 21;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 512)), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the receiver is not ready
  EXPECT_TRUE(a_.wait(1, 10).empty());
  ASSERT_EQ(post_recv(qb, sge(b_, 0, 512), 22), 0);
  auto rx = b_.wait(1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].status, IBV_WC_SUCCESS);
  auto tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].status, IBV_WC_SUCCESS);
}

TEST_F(Semantics, FiniteRnrRetryGivesUp) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  ibv_qp_attr a{};
  a.rnr_retry = 1;
  ASSERT_EQ(ibv_modify_qp(qa, &a, IBV_QP_RNR_RETRY), 0);
  ibv_qp_attr got{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qa, &got, IBV_QP_RNR_RETRY, &init), 0);
  EXPECT_EQ(got.rnr_retry, 1);
  ibv_send_wr wr{};
  wr.wr_id = 23;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 512)), 0);  // no receive is ever posted
  auto tx = a_.wait(1);
  ASSERT_EQ(tx.size(), 1u);
  EXPECT_EQ(tx[0].wr_id, 23u);
  EXPECT_EQ(tx[0].status, IBV_WC_RNR_RETRY_EXC_ERR);
}

TEST_F(Semantics, CompletionChannelWakesOnCompletion) {
  auto [qa, qb] = connected();
  ASSERT_NE(qa, nullptr);
  ASSERT_EQ(ibv_req_notify_cq(b_.cq, 0), 0);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, 256), 31), 0);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 256)), 0);
  pollfd p{b_.channel->fd, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 5000), 1);
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  ASSERT_EQ(ibv_get_cq_event(b_.channel, &cq, &context), 0);
  EXPECT_EQ(cq, b_.cq);
  EXPECT_EQ(context, &b_);
  ibv_ack_cq_events(cq, 1);
  auto rx = b_.wait(1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].wr_id, 31u);
  EXPECT_EQ(poll(&p, 1, 0), 0);  // consumed, not re-armed
}

TEST_F(Semantics, StateMachineGuardsPosting) {
  ibv_qp* qa = a_.create_qp();
  ASSERT_NE(qa, nullptr);
  qps_.push_back(qa);
  EXPECT_EQ(post_send(qa, write_to(b_, 0, 1, IBV_SEND_SIGNALED), sge(a_, 0, 8)), EINVAL);
  EXPECT_EQ(post_recv(qa, sge(a_, 0, 8), 1), EINVAL);  // RESET
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  EXPECT_EQ(ibv_modify_qp(qa, &a, IBV_QP_STATE), EINVAL);  // RESET -> RTS skips states
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  ASSERT_EQ(ibv_modify_qp(qa, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
  EXPECT_EQ(post_recv(qa, sge(a_, 0, 8), 1), 0);  // receives may be posted in INIT
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.dest_qp_num = 0x000001;  // slot byte 0: no MetaRoCE QP has this number
  EXPECT_EQ(ibv_modify_qp(qa, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_DEST_QPN), EINVAL);
  a.qp_state = IBV_QPS_SQD;
  EXPECT_EQ(ibv_modify_qp(qa, &a, IBV_QP_STATE), EOPNOTSUPP);
}

// Moving to ERR (librdmacm's rdma_disconnect does) flushes what is posted and what is
// posted later, and the QP reports ERR.
TEST_F(Semantics, MoveToErrFlushesPostedWork) {
  ibv_qp* qa = a_.create_qp();
  ibv_qp* qb = b_.create_qp();
  ASSERT_NE(qa, nullptr);
  ASSERT_NE(qb, nullptr);
  qps_.push_back(qa);
  qps_.push_back(qb);
  ASSERT_EQ(connect_qp(qa, b_.gid(), qb->qp_num), 0);
  ASSERT_EQ(connect_qp(qb, a_.gid(), qa->qp_num), 0);
  ASSERT_EQ(post_recv(qa, sge(a_, 0, 8), 7), 0);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(qa, &a, IBV_QP_STATE), 0);
  auto flushed = a_.wait(1);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].wr_id, 7u);
  EXPECT_EQ(flushed[0].status, IBV_WC_WR_FLUSH_ERR);
  EXPECT_EQ(flushed[0].qp_num, qa->qp_num);
  ASSERT_EQ(post_recv(qa, sge(a_, 0, 8), 8), 0);
  flushed = a_.wait(1);
  ASSERT_EQ(flushed.size(), 1u);
  EXPECT_EQ(flushed[0].wr_id, 8u);
  EXPECT_EQ(flushed[0].status, IBV_WC_WR_FLUSH_ERR);
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qa, &a, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(a.qp_state, IBV_QPS_ERR);
}

// Without a GID index programs send an all-zero GID: the peer is then MROCE_PEER, or this
// device's own address (unset here), which reaches a process on the same host.
TEST_F(Semantics, ZeroGidReachesTheSameHost) {
  ibv_qp* qa = a_.create_qp();
  ibv_qp* qb = b_.create_qp();
  ASSERT_NE(qa, nullptr);
  ASSERT_NE(qb, nullptr);
  qps_.push_back(qa);
  qps_.push_back(qb);
  const ibv_gid zero{};
  ASSERT_EQ(connect_qp(qa, zero, qb->qp_num, false), 0);
  ASSERT_EQ(connect_qp(qb, zero, qa->qp_num, false), 0);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, 100), 1), 0);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ASSERT_EQ(post_send(qa, wr, sge(a_, 0, 100)), 0);
  auto rx = b_.wait(1);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(a_.wait(1).size(), 1u);
}

}  // namespace
}  // namespace mroce::verbs::testing
