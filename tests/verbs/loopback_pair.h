// Two contexts of the stand-in library in one process, each with its own UDP port, and RC
// queue pairs connected between them the way Verbs programs do it: GID + QPN.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

namespace mroce::verbs::testing {

// One side: a context, a PD, a CQ (with a completion channel), a registered buffer.
struct Side {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_comp_channel* channel = nullptr;
  ibv_cq* cq = nullptr;
  std::vector<std::uint8_t> buf;
  ibv_mr* mr = nullptr;

  void open(ibv_device* dev, std::size_t bytes) {
    ctx = ibv_open_device(dev);
    ASSERT_NE(ctx, nullptr);
    pd = ibv_alloc_pd(ctx);
    ASSERT_NE(pd, nullptr);
    channel = ibv_create_comp_channel(ctx);
    ASSERT_NE(channel, nullptr);
    cq = ibv_create_cq(ctx, 1024, this, channel, 0);
    ASSERT_NE(cq, nullptr);
    buf.assign(bytes, 0);
    mr = ibv_reg_mr(pd, buf.data(), buf.size(),
                    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC);
    ASSERT_NE(mr, nullptr);
  }

  void close() {
    if (mr) {
      EXPECT_EQ(ibv_dereg_mr(mr), 0);
    }
    if (cq) {
      EXPECT_EQ(ibv_destroy_cq(cq), 0);
    }
    if (channel) {
      EXPECT_EQ(ibv_destroy_comp_channel(channel), 0);
    }
    if (pd) {
      EXPECT_EQ(ibv_dealloc_pd(pd), 0);
    }
    if (ctx) {
      EXPECT_EQ(ibv_close_device(ctx), 0);
    }
  }

  ibv_qp* create_qp(std::uint32_t depth = 64, int sq_sig_all = 0, std::uint32_t inline_size = 0) {
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.cap.max_send_wr = depth;
    a.cap.max_recv_wr = depth;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = inline_size;
    a.qp_type = IBV_QPT_RC;
    a.sq_sig_all = sq_sig_all;
    return ibv_create_qp(pd, &a);
  }

  ibv_gid gid() const {
    ibv_gid g{};
    EXPECT_EQ(ibv_query_gid(ctx, 1, 0, &g), 0);
    return g;
  }

  // Polls until n completions arrived or the deadline passed.
  std::vector<ibv_wc> wait(std::size_t n, int timeout_ms = 5000) {
    std::vector<ibv_wc> out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      ibv_wc wc[16];
      const int got = ibv_poll_cq(cq, 16, wc);
      EXPECT_GE(got, 0);
      out.insert(out.end(), wc, wc + std::max(got, 0));
    }
    return out;
  }
};

// Moves a QP through INIT and RTR (towards remote_qpn at gid) to RTS.
inline constexpr unsigned kAllRemote =
    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

inline int connect_qp(ibv_qp* qp, const ibv_gid& gid, std::uint32_t remote_qpn, bool global = true,
                      unsigned access = kAllRemote) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = access;
  if (int e = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    return e;
  }
  a = {};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_4096;
  a.dest_qp_num = remote_qpn;
  a.max_dest_rd_atomic = 16;
  a.min_rnr_timer = 1;  // 10 us
  a.ah_attr.is_global = global ? 1 : 0;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.port_num = 1;
  if (int e = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    return e;
  }
  a = {};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 16;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

class LoopbackPair : public ::testing::Test {
 protected:
  void SetUp() override {
    devices_ = ibv_get_device_list(&num_devices_);
    ASSERT_NE(devices_, nullptr);
    ASSERT_GE(num_devices_, 1);
    ASSERT_NO_FATAL_FAILURE(a_.open(devices_[0], 1 << 20));
    ASSERT_NO_FATAL_FAILURE(b_.open(devices_[0], 1 << 20));
  }

  void TearDown() override {
    for (ibv_qp* qp : qps_) EXPECT_EQ(ibv_destroy_qp(qp), 0);
    a_.close();
    b_.close();
    ibv_free_device_list(devices_);
  }

  // A connected pair of QPs, a's first.
  // b_access: the remote rights b's QP grants a.
  std::pair<ibv_qp*, ibv_qp*> connected(std::uint32_t depth = 64, int sq_sig_all = 0,
                                        unsigned b_access = kAllRemote) {
    ibv_qp* qa = a_.create_qp(depth, sq_sig_all);
    ibv_qp* qb = b_.create_qp(depth, sq_sig_all);
    EXPECT_NE(qa, nullptr);
    EXPECT_NE(qb, nullptr);
    if (!qa || !qb) return {nullptr, nullptr};
    qps_.push_back(qa);
    qps_.push_back(qb);
    EXPECT_EQ(connect_qp(qa, b_.gid(), qb->qp_num), 0);
    EXPECT_EQ(connect_qp(qb, a_.gid(), qa->qp_num, true, b_access), 0);
    return {qa, qb};
  }

  ibv_device** devices_ = nullptr;
  int num_devices_ = 0;
  Side a_, b_;
  std::vector<ibv_qp*> qps_;
};

inline ibv_sge sge(const Side& s, std::size_t offset, std::uint32_t length) {
  return ibv_sge{reinterpret_cast<std::uintptr_t>(s.buf.data() + offset), length, s.mr->lkey};
}

inline int post_recv(ibv_qp* qp, ibv_sge sg, std::uint64_t wr_id) {
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sg;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &wr, &bad);
}

inline int post_send(ibv_qp* qp, ibv_send_wr wr, ibv_sge sg) {
  wr.sg_list = &sg;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad);
}

}  // namespace mroce::verbs::testing
