// Shared receive queues: several QPs take their receives from one SRQ, completions name
// the QP that received, the limit raises its asynchronous event once, and the calls'
// checks.
#include <fcntl.h>

#include <algorithm>
#include <set>

#include "loopback_pair.h"

namespace mroce::verbs::testing {
namespace {

class SharedReceive : public LoopbackPair {
 protected:
  void TearDown() override {
    for (ibv_qp* qp : qps_) EXPECT_EQ(ibv_destroy_qp(qp), 0);
    qps_.clear();
    if (srq_) {
      EXPECT_EQ(ibv_destroy_srq(srq_), 0);
    }
    LoopbackPair::TearDown();
  }

  ibv_srq* make_srq(std::uint32_t max_wr, std::uint32_t limit = 0) {
    ibv_srq_init_attr init{};
    init.attr.max_wr = max_wr;
    init.attr.max_sge = 1;
    init.attr.srq_limit = limit;
    srq_ = ibv_create_srq(b_.pd, &init);
    return srq_;
  }

  // A QP of b on the SRQ connected to a new QP of a; returns {a's, b's}.
  std::pair<ibv_qp*, ibv_qp*> connected_on_srq() {
    ibv_qp* qa = a_.create_qp();
    ibv_qp_init_attr init{};
    init.send_cq = b_.cq;
    init.recv_cq = b_.cq;
    init.srq = srq_;
    init.cap = {16, 16, 1, 1, 0};
    init.qp_type = IBV_QPT_RC;
    ibv_qp* qb = ibv_create_qp(b_.pd, &init);
    EXPECT_NE(qa, nullptr);
    EXPECT_NE(qb, nullptr);
    if (!qa || !qb) return {nullptr, nullptr};
    EXPECT_EQ(qb->srq, srq_);
    EXPECT_EQ(init.cap.max_recv_wr, 0u);
    qps_.push_back(qa);
    qps_.push_back(qb);
    EXPECT_EQ(connect_qp(qa, b_.gid(), qb->qp_num), 0);
    EXPECT_EQ(connect_qp(qb, a_.gid(), qa->qp_num), 0);
    return {qa, qb};
  }

  int post_srq(std::size_t offset, std::uint32_t length, std::uint64_t wr_id) {
    ibv_sge sg = sge(b_, offset, length);
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sg;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_srq_recv(srq_, &wr, &bad);
  }

  ibv_srq* srq_ = nullptr;
};

ibv_send_wr send_wr(std::uint64_t wr_id) {
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  return wr;
}

TEST_F(SharedReceive, SeveralQueuePairsShareOneQueue) {
  ASSERT_NE(make_srq(64), nullptr);
  constexpr int kQps = 3, kEach = 4;
  std::vector<std::pair<ibv_qp*, ibv_qp*>> pairs;
  for (int i = 0; i < kQps; ++i) {
    pairs.push_back(connected_on_srq());
    ASSERT_NE(pairs.back().first, nullptr);
  }
  // Exactly as many receives as messages: every one of them is needed.
  for (int i = 0; i < kQps * kEach; ++i) ASSERT_EQ(post_srq(i * 256, 256, 1000 + i), 0);
  for (int q = 0; q < kQps; ++q) {
    for (int m = 0; m < kEach; ++m) {
      std::fill_n(a_.buf.begin() + 8192, 64, static_cast<std::uint8_t>(q * 16 + m));
      ibv_send_wr wr = send_wr(q * 16 + m);
      wr.send_flags |= IBV_SEND_INLINE;
      ASSERT_EQ(post_send(pairs[q].first, wr, sge(a_, 8192, 64)), 0);
    }
  }
  ASSERT_EQ(a_.wait(kQps * kEach).size(), std::size_t(kQps * kEach));
  auto rx = b_.wait(kQps * kEach);
  ASSERT_EQ(rx.size(), std::size_t(kQps * kEach));
  std::set<std::uint64_t> ids;
  for (const ibv_wc& wc : rx) {
    EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
    EXPECT_EQ(wc.opcode, IBV_WC_RECV);
    EXPECT_EQ(wc.byte_len, 64u);
    ASSERT_GE(wc.wr_id, 1000u);
    ids.insert(wc.wr_id);
    // The payload tells which sender and message it was: wc.qp_num must be that QP.
    const std::uint8_t tag = b_.buf[(wc.wr_id - 1000) * 256];
    ASSERT_LT(tag / 16, kQps);
    EXPECT_EQ(wc.qp_num, pairs[tag / 16].second->qp_num);
  }
  EXPECT_EQ(ids.size(), std::size_t(kQps * kEach));  // each receive used once
}

TEST_F(SharedReceive, PostRecvOnTheQueuePairIsRefused) {
  ASSERT_NE(make_srq(16), nullptr);
  auto [qa, qb] = connected_on_srq();
  ASSERT_NE(qb, nullptr);
  EXPECT_EQ(post_recv(qb, sge(b_, 0, 64), 1), EINVAL);
  EXPECT_EQ(ibv_destroy_srq(srq_), EBUSY);  // a QP still takes from it
}

TEST_F(SharedReceive, LimitRaisesOneAsyncEvent) {
  ASSERT_NE(make_srq(16), nullptr);
  auto [qa, qb] = connected_on_srq();
  ASSERT_NE(qa, nullptr);
  for (int i = 0; i < 4; ++i) ASSERT_EQ(post_srq(i * 256, 256, i), 0);
  ibv_srq_attr attr{};
  attr.srq_limit = 3;
  ASSERT_EQ(ibv_modify_srq(srq_, &attr, IBV_SRQ_LIMIT), 0);
  ASSERT_EQ(ibv_query_srq(srq_, &attr), 0);
  EXPECT_EQ(attr.max_wr, 16u);
  EXPECT_EQ(attr.srq_limit, 3u);
  const int flags = fcntl(b_.ctx->async_fd, F_GETFL);
  ASSERT_EQ(fcntl(b_.ctx->async_fd, F_SETFL, flags | O_NONBLOCK), 0);
  ibv_async_event event{};
  errno = 0;
  EXPECT_EQ(ibv_get_async_event(b_.ctx, &event), -1);  // 4 left, not below 3
  EXPECT_EQ(errno, EAGAIN);

  // Two messages take two receives: 2 left, below the limit.
  for (int i = 0; i < 2; ++i) ASSERT_EQ(post_send(qa, send_wr(i), sge(a_, 0, 32)), 0);
  ASSERT_EQ(b_.wait(2).size(), 2u);
  ASSERT_EQ(ibv_get_async_event(b_.ctx, &event), 0);
  EXPECT_EQ(event.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
  EXPECT_EQ(event.element.srq, srq_);
  ibv_ack_async_event(&event);
  ASSERT_EQ(ibv_query_srq(srq_, &attr), 0);
  EXPECT_EQ(attr.srq_limit, 0u);  // disarmed by the event

  // Once only: the next message finds the limit disarmed.
  ASSERT_EQ(post_send(qa, send_wr(2), sge(a_, 0, 32)), 0);
  ASSERT_EQ(b_.wait(1).size(), 1u);
  EXPECT_EQ(ibv_get_async_event(b_.ctx, &event), -1);
  EXPECT_EQ(errno, EAGAIN);
  ASSERT_EQ(fcntl(b_.ctx->async_fd, F_SETFL, flags), 0);
}

TEST_F(SharedReceive, CreateChecksItsAttributes) {
  ibv_srq_init_attr init{};
  init.attr.max_wr = 0;
  errno = 0;
  EXPECT_EQ(ibv_create_srq(b_.pd, &init), nullptr);
  EXPECT_EQ(errno, EINVAL);
  init.attr.max_wr = 8;
  init.attr.srq_limit = 9;  // above max_wr
  errno = 0;
  EXPECT_EQ(ibv_create_srq(b_.pd, &init), nullptr);
  EXPECT_EQ(errno, EINVAL);
  ASSERT_NE(make_srq(8), nullptr);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(post_srq(0, 64, i), 0);
  EXPECT_EQ(post_srq(0, 64, 8), ENOMEM);  // full
}

}  // namespace
}  // namespace mroce::verbs::testing
