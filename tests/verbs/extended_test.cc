// Extended QPs and CQs: the ibv_wr_* send API posts batches (every RC opcode, SGE and
// inline setters, abort), and an extended CQ reports them through ibv_start_poll and the
// ibv_wc_read_* accessors, with completion timestamps.
#include <arpa/inet.h>

#include <cstring>

#include "loopback_pair.h"

namespace mroce::verbs::testing {
namespace {

class Extended : public LoopbackPair {
 protected:
  void SetUp() override {
    LoopbackPair::SetUp();
    ibv_cq_init_attr_ex cq{};
    cq.cqe = 64;
    cq.wc_flags = std::uint64_t{IBV_WC_STANDARD_FLAGS} | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
    cqx_ = ibv_create_cq_ex(a_.ctx, &cq);
    ASSERT_NE(cqx_, nullptr);
    ibv_qp_init_attr_ex qp{};
    qp.send_cq = ibv_cq_ex_to_cq(cqx_);
    qp.recv_cq = a_.cq;
    qp.cap = {64, 64, 2, 1, 64};
    qp.qp_type = IBV_QPT_RC;
    qp.pd = a_.pd;
    qp.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    qp.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                        IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                        IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                        IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
    qa_ = ibv_create_qp_ex(a_.ctx, &qp);
    ASSERT_NE(qa_, nullptr);
    qx_ = ibv_qp_to_qp_ex(qa_);
    ASSERT_NE(qx_, nullptr);
    qb_ = b_.create_qp();
    ASSERT_NE(qb_, nullptr);
    qps_.push_back(qb_);
    ASSERT_EQ(connect_qp(qa_, b_.gid(), qb_->qp_num), 0);
    ASSERT_EQ(connect_qp(qb_, a_.gid(), qa_->qp_num), 0);
  }

  void TearDown() override {
    if (qa_) {
      EXPECT_EQ(ibv_destroy_qp(qa_), 0);
    }
    if (cqx_) {
      EXPECT_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx_)), 0);
    }
    LoopbackPair::TearDown();
  }

  struct Entry {
    std::uint64_t wr_id;
    ibv_wc_status status;
    ibv_wc_opcode opcode;
    std::uint32_t qp_num;
    std::uint64_t ts;
  };

  // Polls the extended CQ until n entries came or 5 s passed.
  std::vector<Entry> poll_ex(std::size_t n) {
    std::vector<Entry> out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      ibv_poll_cq_attr attr{};
      if (ibv_start_poll(cqx_, &attr) != 0) continue;
      do {
        out.push_back({cqx_->wr_id, cqx_->status, ibv_wc_read_opcode(cqx_),
                       ibv_wc_read_qp_num(cqx_), ibv_wc_read_completion_ts(cqx_)});
      } while (out.size() < n && ibv_next_poll(cqx_) == 0);
      ibv_end_poll(cqx_);
    }
    return out;
  }

  std::uint64_t b_addr(std::size_t offset) const {
    return reinterpret_cast<std::uintptr_t>(b_.buf.data()) + offset;
  }

  ibv_cq_ex* cqx_ = nullptr;
  ibv_qp* qa_ = nullptr;
  ibv_qp_ex* qx_ = nullptr;
  ibv_qp* qb_ = nullptr;
};

TEST_F(Extended, EveryOpcodeThroughTheWrApi) {
  for (int i = 0; i < 2; ++i) ASSERT_EQ(post_recv(qb_, sge(b_, 4096 + i * 1024, 1024), 50 + i), 0);
  std::memcpy(a_.buf.data(), "extended", 8);
  std::uint64_t counter = 40;
  std::memcpy(b_.buf.data() + 512, &counter, 8);
  std::memcpy(b_.buf.data() + 600, "remote!!", 8);

  ibv_wr_start(qx_);
  qx_->wr_flags = IBV_SEND_SIGNALED;
  qx_->wr_id = 1;
  ibv_wr_send(qx_);
  ibv_wr_set_sge(qx_, a_.mr->lkey, reinterpret_cast<std::uintptr_t>(a_.buf.data()), 8);
  qx_->wr_id = 2;
  ibv_wr_send_imm(qx_, htonl(0x1234));
  ibv_wr_set_inline_data(qx_, const_cast<char*>("inline"), 6);
  qx_->wr_id = 3;
  ibv_wr_rdma_write(qx_, b_.mr->rkey, b_addr(256));
  const ibv_sge two[2] = {{reinterpret_cast<std::uintptr_t>(a_.buf.data()), 4, a_.mr->lkey},
                          {reinterpret_cast<std::uintptr_t>(a_.buf.data()) + 4, 4, a_.mr->lkey}};
  ibv_wr_set_sge_list(qx_, 2, two);
  qx_->wr_id = 4;
  ibv_wr_rdma_read(qx_, b_.mr->rkey, b_addr(600));
  ibv_wr_set_sge(qx_, a_.mr->lkey, reinterpret_cast<std::uintptr_t>(a_.buf.data()) + 64, 8);
  qx_->wr_id = 5;
  ibv_wr_atomic_fetch_add(qx_, b_.mr->rkey, b_addr(512), 2);
  ibv_wr_set_sge(qx_, a_.mr->lkey, reinterpret_cast<std::uintptr_t>(a_.buf.data()) + 128, 8);
  qx_->wr_id = 6;
  ibv_wr_atomic_cmp_swp(qx_, b_.mr->rkey, b_addr(512), 42, 7);
  ibv_wr_set_sge(qx_, a_.mr->lkey, reinterpret_cast<std::uintptr_t>(a_.buf.data()) + 136, 8);
  ASSERT_EQ(ibv_wr_complete(qx_), 0);

  auto tx = poll_ex(6);
  ASSERT_EQ(tx.size(), 6u);
  const ibv_wc_opcode expected[6] = {IBV_WC_SEND,      IBV_WC_SEND,      IBV_WC_RDMA_WRITE,
                                     IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD, IBV_WC_COMP_SWAP};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(tx[i].wr_id, std::uint64_t(i + 1));
    EXPECT_EQ(tx[i].status, IBV_WC_SUCCESS);
    EXPECT_EQ(tx[i].opcode, expected[i]);
    EXPECT_EQ(tx[i].qp_num, qa_->qp_num);
    EXPECT_GT(tx[i].ts, 0u);
    if (i) {
      EXPECT_GE(tx[i].ts, tx[i - 1].ts);
    }
  }
  auto rx = b_.wait(2);
  ASSERT_EQ(rx.size(), 2u);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 4096, "extended", 8), 0);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 5120, "inline", 6), 0);
  EXPECT_EQ(rx[1].wc_flags & IBV_WC_WITH_IMM, unsigned(IBV_WC_WITH_IMM));
  EXPECT_EQ(ntohl(rx[1].imm_data), 0x1234u);
  EXPECT_EQ(std::memcmp(b_.buf.data() + 256, "extended", 8), 0);
  EXPECT_EQ(std::memcmp(a_.buf.data() + 64, "remote!!", 8), 0);
  std::uint64_t fetched = 0, compared = 0;
  std::memcpy(&fetched, a_.buf.data() + 128, 8);
  std::memcpy(&compared, a_.buf.data() + 136, 8);
  EXPECT_EQ(fetched, 40u);
  EXPECT_EQ(compared, 42u);
  std::memcpy(&counter, b_.buf.data() + 512, 8);
  EXPECT_EQ(counter, 7u);
}

TEST_F(Extended, AbortPostsNothingAndBadBatchesAreRefused) {
  ibv_wr_start(qx_);
  qx_->wr_flags = IBV_SEND_SIGNALED;
  qx_->wr_id = 9;
  ibv_wr_rdma_write(qx_, b_.mr->rkey, b_addr(0));
  ibv_wr_set_sge(qx_, a_.mr->lkey, reinterpret_cast<std::uintptr_t>(a_.buf.data()), 8);
  ibv_wr_abort(qx_);
  EXPECT_TRUE(poll_ex(1).empty());

  ibv_wr_start(qx_);
  ibv_wr_local_inv(qx_, 1);  // not an opcode this device carries
  EXPECT_EQ(ibv_wr_complete(qx_), EOPNOTSUPP);
  ibv_wr_start(qx_);
  qx_->wr_id = 10;
  ibv_wr_send(qx_);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qa_, &attr, IBV_QP_CAP, &init), 0);
  std::vector<char> big(init.cap.max_inline_data + 1, 'x');  // beyond the inline size
  ibv_wr_set_inline_data(qx_, big.data(), big.size());
  EXPECT_EQ(ibv_wr_complete(qx_), EINVAL);
  EXPECT_TRUE(poll_ex(1).empty());

  // A plain QP is not an extended one.
  EXPECT_EQ(ibv_qp_to_qp_ex(qb_), nullptr);
}

TEST_F(Extended, DeviceOffersCompletionTimestamps) {
  ibv_device_attr_ex attr{};
  ASSERT_EQ(ibv_query_device_ex(a_.ctx, nullptr, &attr), 0);
  EXPECT_NE(attr.completion_timestamp_mask, 0u);
  EXPECT_GT(attr.hca_core_clock, 0u);
}

}  // namespace
}  // namespace mroce::verbs::testing
