// UD queue pairs and address handles between two contexts: the capabilities UCX asks
// for, SEND and SEND_WITH_IMM with several SGEs and inline data, the GRH before the
// payload and what the completion says, answering through ibv_create_ah_from_wc, Q_Key
// checks (a mismatch is dropped and the receive stays posted), the MTU and receive-size
// limits, and the flush on ERR.
#include <arpa/inet.h>

#include <algorithm>
#include <numeric>

#include "loopback_pair.h"

namespace mroce::verbs::testing {
namespace {

constexpr std::uint32_t kQkey = 0x11111111;
constexpr std::uint32_t kGrh = 40;

class Ud : public LoopbackPair {
 protected:
  void TearDown() override {
    for (ibv_ah* ah : ahs_) EXPECT_EQ(ibv_destroy_ah(ah), 0);
    LoopbackPair::TearDown();
  }

  // A UD QP of s with UCX's capabilities, moved to RTS with Q_Key qkey.
  ibv_qp* ud_qp(Side& s, std::uint32_t qkey = kQkey) {
    ibv_qp_init_attr init{};
    init.send_cq = s.cq;
    init.recv_cq = s.cq;
    init.qp_type = IBV_QPT_UD;
    init.cap = {256, 4096, 6, 1, 64};
    ibv_qp* qp = ibv_create_qp(s.pd, &init);
    EXPECT_NE(qp, nullptr);
    if (!qp) return nullptr;
    qps_.push_back(qp);
    EXPECT_GE(init.cap.max_send_wr, 256u);
    EXPECT_GE(init.cap.max_recv_wr, 4096u);
    EXPECT_GE(init.cap.max_send_sge, 6u);
    EXPECT_GE(init.cap.max_inline_data, 64u);
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = qkey;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY),
              0);
    a = {};
    a.qp_state = IBV_QPS_RTR;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
    a.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    return qp;
  }

  ibv_ah* ah_to(Side& from, const Side& to) {
    ibv_ah_attr attr{};
    attr.is_global = 1;
    attr.grh.dgid = to.gid();
    attr.grh.hop_limit = 64;
    attr.port_num = 1;
    ibv_ah* ah = ibv_create_ah(from.pd, &attr);
    EXPECT_NE(ah, nullptr);
    if (ah) ahs_.push_back(ah);
    return ah;
  }

  // Sends sgs as one message from qp to remote_qpn through ah.
  int send(ibv_qp* qp, ibv_ah* ah, std::uint32_t remote_qpn, std::uint32_t qkey,
           std::vector<ibv_sge> sgs, std::uint64_t wr_id = 1, int flags = IBV_SEND_SIGNALED,
           ibv_wr_opcode op = IBV_WR_SEND, std::uint32_t imm = 0) {
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.opcode = op;
    wr.send_flags = flags;
    wr.imm_data = htonl(imm);
    wr.sg_list = sgs.data();
    wr.num_sge = static_cast<int>(sgs.size());
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = remote_qpn;
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
  }

  // Waits for one completion of s that is a receive (the sends' are checked and skipped).
  ibv_wc receive(Side& s, int timeout_ms = 5000) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < end) {
      ibv_wc wc;
      if (ibv_poll_cq(s.cq, 1, &wc) == 1) {
        if (wc.opcode & IBV_WC_RECV) return wc;
        EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
        EXPECT_EQ(wc.opcode, IBV_WC_SEND);
      }
    }
    ibv_wc none{};
    none.wr_id = ~0ull;
    return none;
  }

  std::vector<ibv_ah*> ahs_;
};

TEST_F(Ud, SendWithImmediateGathersSixSgesBehindTheGrh) {
  ibv_qp* qa = ud_qp(a_);
  ibv_qp* qb = ud_qp(b_);
  ASSERT_TRUE(qa && qb);
  ibv_ah* ah = ah_to(a_, b_);
  ASSERT_NE(ah, nullptr);
  constexpr std::uint32_t kLen = 3000;
  ASSERT_EQ(post_recv(qb, sge(b_, 0, kGrh + kLen), 77), 0);
  std::iota(a_.buf.begin(), a_.buf.begin() + kLen, std::uint8_t{1});
  std::vector<ibv_sge> sgs;
  for (std::uint32_t off = 0; off < kLen; off += 500) sgs.push_back(sge(a_, off, 500));
  ASSERT_EQ(sgs.size(), 6u);
  ASSERT_EQ(
      send(qa, ah, qb->qp_num, kQkey, sgs, 1, IBV_SEND_SIGNALED, IBV_WR_SEND_WITH_IMM, 0xabcdef01),
      0);
  const ibv_wc wc = receive(b_);
  ASSERT_EQ(wc.wr_id, 77u);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IBV_WC_RECV);
  EXPECT_EQ(wc.byte_len, kGrh + kLen);
  EXPECT_EQ(wc.wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM), unsigned(IBV_WC_GRH | IBV_WC_WITH_IMM));
  EXPECT_EQ(ntohl(wc.imm_data), 0xabcdef01u);
  EXPECT_EQ(wc.qp_num, qb->qp_num);
  EXPECT_EQ(wc.src_qp, qa->qp_num);
  EXPECT_TRUE(std::equal(a_.buf.begin(), a_.buf.begin() + kLen, b_.buf.begin() + kGrh));
  // The GRH of an IPv4 peer: 20 zero bytes, then the IPv4 header (UDP, both addresses).
  const std::uint8_t* grh = b_.buf.data();
  EXPECT_TRUE(std::all_of(grh, grh + 20, [](std::uint8_t v) { return v == 0; }));
  EXPECT_EQ(grh[20], 0x45);
  EXPECT_EQ(grh[29], 17);
  const ibv_gid ga = a_.gid(), gb = b_.gid();
  EXPECT_EQ(std::memcmp(grh + 32, ga.raw + 12, 4), 0);
  EXPECT_EQ(std::memcmp(grh + 36, gb.raw + 12, 4), 0);
  std::uint32_t sum = 0;  // a valid IPv4 header checksum sums to 0xffff
  for (int i = 20; i < 40; i += 2) sum += std::uint32_t{grh[i]} << 8 | grh[i + 1];
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  EXPECT_EQ(sum, 0xffffu);
}

TEST_F(Ud, AnAddressHandleFromTheCompletionAnswersTheSender) {
  ibv_qp* qa = ud_qp(a_);
  ibv_qp* qb = ud_qp(b_);
  ASSERT_TRUE(qa && qb);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, kGrh + 64), 1), 0);
  ASSERT_EQ(post_recv(qa, sge(a_, 4096, kGrh + 64), 2), 0);
  ASSERT_EQ(send(qa, ah_to(a_, b_), qb->qp_num, kQkey, {sge(a_, 0, 64)}), 0);
  ibv_wc wc = receive(b_);
  ASSERT_EQ(wc.wr_id, 1u);
  ibv_ah_attr attr{};
  ASSERT_EQ(ibv_init_ah_from_wc(b_.ctx, 1, &wc, reinterpret_cast<ibv_grh*>(b_.buf.data()), &attr),
            0);
  EXPECT_EQ(attr.is_global, 1);
  const ibv_gid ga = a_.gid();
  EXPECT_EQ(std::memcmp(attr.grh.dgid.raw, ga.raw, 16), 0);
  ibv_ah* back = ibv_create_ah_from_wc(b_.pd, &wc, reinterpret_cast<ibv_grh*>(b_.buf.data()), 1);
  ASSERT_NE(back, nullptr);
  ahs_.push_back(back);
  ASSERT_EQ(send(qb, back, wc.src_qp, kQkey, {sge(b_, 8192, 32)}), 0);
  wc = receive(a_);
  EXPECT_EQ(wc.wr_id, 2u);
  EXPECT_EQ(wc.byte_len, kGrh + 32);
  EXPECT_EQ(wc.src_qp, qb->qp_num);
}

TEST_F(Ud, AWrongQkeyIsDroppedAndTheReceiveStaysPosted) {
  ibv_qp* qa = ud_qp(a_, 0x2222);
  ibv_qp* qb = ud_qp(b_);
  ASSERT_TRUE(qa && qb);
  ibv_ah* ah = ah_to(a_, b_);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, kGrh + 64), 5), 0);
  ASSERT_EQ(send(qa, ah, qb->qp_num, kQkey + 1, {sge(a_, 0, 64)}), 0);
  EXPECT_EQ(receive(b_, 300).wr_id, ~0ull) << "a datagram with the wrong Q_Key was received";
  // The QP's own Q_Key (0x2222) when the request's has its high bit set: also wrong.
  ASSERT_EQ(send(qa, ah, qb->qp_num, 0x80000000u, {sge(a_, 0, 64)}), 0);
  EXPECT_EQ(receive(b_, 300).wr_id, ~0ull);
  ibv_qp_attr attr{};
  attr.qkey = kQkey;
  ASSERT_EQ(ibv_modify_qp(qa, &attr, IBV_QP_QKEY), 0);
  ASSERT_EQ(send(qa, ah, qb->qp_num, 0x80000000u, {sge(a_, 0, 64)}), 0);
  const ibv_wc wc = receive(b_);
  EXPECT_EQ(wc.wr_id, 5u);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qa, &attr, IBV_QP_QKEY, &init), 0);
  EXPECT_EQ(init.qp_type, IBV_QPT_UD);
  EXPECT_EQ(attr.qkey, kQkey);
}

TEST_F(Ud, InlineDataIsCopiedAtPostTime) {
  ibv_qp* qa = ud_qp(a_);
  ibv_qp* qb = ud_qp(b_);
  ASSERT_TRUE(qa && qb);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, kGrh + 64), 1), 0);
  std::uint8_t bytes[64];
  std::fill(bytes, bytes + 64, 0x5a);
  ibv_sge sg{reinterpret_cast<std::uintptr_t>(bytes), 64, 0};
  ASSERT_EQ(
      send(qa, ah_to(a_, b_), qb->qp_num, kQkey, {sg}, 1, IBV_SEND_SIGNALED | IBV_SEND_INLINE), 0);
  std::fill(bytes, bytes + 64, 0);
  ASSERT_EQ(receive(b_).byte_len, kGrh + 64);
  EXPECT_TRUE(std::all_of(b_.buf.begin() + kGrh, b_.buf.begin() + kGrh + 64,
                          [](std::uint8_t v) { return v == 0x5a; }));
}

TEST_F(Ud, MessagesAboveTheMtuOrItsReceiveAreRefused) {
  ibv_qp* qa = ud_qp(a_);
  ibv_qp* qb = ud_qp(b_);
  ASSERT_TRUE(qa && qb);
  ibv_ah* ah = ah_to(a_, b_);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(a_.ctx, 1, &port), 0);
  const std::uint32_t mtu = 128u << port.active_mtu;
  EXPECT_EQ(send(qa, ah, qb->qp_num, kQkey, {sge(a_, 0, mtu + 1)}), EINVAL);
  // Exactly the MTU lands; a receive too short for GRH and payload completes in error.
  ASSERT_EQ(post_recv(qb, sge(b_, 0, kGrh + mtu), 1), 0);
  ASSERT_EQ(send(qa, ah, qb->qp_num, kQkey, {sge(a_, 0, mtu)}), 0);
  EXPECT_EQ(receive(b_).byte_len, kGrh + mtu);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, kGrh + 10), 2), 0);
  ASSERT_EQ(send(qa, ah, qb->qp_num, kQkey, {sge(a_, 0, 11)}), 0);
  const ibv_wc wc = receive(b_);
  EXPECT_EQ(wc.wr_id, 2u);
  EXPECT_EQ(wc.status, IBV_WC_LOC_LEN_ERR);
  // Only SEND and SEND_WITH_IMM exist on UD.
  EXPECT_EQ(
      send(qa, ah, qb->qp_num, kQkey, {sge(a_, 0, 8)}, 1, IBV_SEND_SIGNALED, IBV_WR_RDMA_WRITE),
      EINVAL);
}

TEST_F(Ud, ErrFlushesPostedReceives) {
  ibv_qp* qb = ud_qp(b_);
  ASSERT_NE(qb, nullptr);
  ASSERT_EQ(post_recv(qb, sge(b_, 0, 256), 9), 0);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ASSERT_EQ(ibv_modify_qp(qb, &attr, IBV_QP_STATE), 0);
  const ibv_wc wc = receive(b_);
  EXPECT_EQ(wc.wr_id, 9u);
  EXPECT_EQ(wc.status, IBV_WC_WR_FLUSH_ERR);
}

}  // namespace
}  // namespace mroce::verbs::testing
