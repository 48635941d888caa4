// The stand-in library as Verbs programs see it before any data moves: the device list,
// the layout inline functions of verbs.h rely on, port and GID queries, QP numbers, and
// the errors of what is not supported.
#include <arpa/inet.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "loopback_pair.h"
#include "verbs/qpn.h"

namespace mroce::verbs::testing {
namespace {

TEST(Abi, DeviceListNamesConfiguredDevice) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_NE(list, nullptr);
  ASSERT_EQ(n, 1);  // MROCE_DEVICES=127.0.0.1 in the test's environment
  EXPECT_STREQ(ibv_get_device_name(list[0]), "mroce0");
  EXPECT_EQ(list[0]->transport_type, IBV_TRANSPORT_IB);
  EXPECT_EQ(list[0]->node_type, IBV_NODE_CA);
  EXPECT_EQ(ibv_get_device_index(list[0]), 0);
  EXPECT_EQ(be64toh(ibv_get_device_guid(list[0])), 0x024d52007f000001ull);
  // Where rdma-core's devices live in sysfs; mroce-run --device-files makes them.
  EXPECT_STREQ(list[0]->ibdev_path, "/sys/class/infiniband/mroce0");
  EXPECT_STREQ(list[0]->dev_path, "/sys/class/infiniband_verbs/uverbs0");
  EXPECT_EQ(list[1], nullptr);
  ibv_free_device_list(list);
}

class Opened : public ::testing::Test {
 protected:
  void SetUp() override {
    list_ = ibv_get_device_list(nullptr);
    ASSERT_NE(list_, nullptr);
    ctx_ = ibv_open_device(list_[0]);
    ASSERT_NE(ctx_, nullptr);
  }
  void TearDown() override {
    EXPECT_EQ(ibv_close_device(ctx_), 0);
    ibv_free_device_list(list_);
  }
  ibv_device** list_ = nullptr;
  ibv_context* ctx_ = nullptr;
};

TEST_F(Opened, ExtendedContextLayout) {
  verbs_context* v = verbs_get_ctx(ctx_);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->sz, sizeof(verbs_context));
  EXPECT_NE(verbs_get_ctx_op(ctx_, query_port), nullptr);
  EXPECT_EQ(verbs_get_ctx_op(ctx_, create_wq), nullptr);
  EXPECT_GE(ctx_->num_comp_vectors, 1);
  EXPECT_EQ(ctx_->device, list_[0]);
}

TEST_F(Opened, DeviceAttributesSteerProgramsToPlainVerbs) {
  ibv_device_attr a{};
  ASSERT_EQ(ibv_query_device(ctx_, &a), 0);
  EXPECT_EQ(a.vendor_id, 0u);
  EXPECT_EQ(a.vendor_part_id, 0u);
  EXPECT_GE(a.max_qp_rd_atom, 1);
  EXPECT_EQ(a.phys_port_cnt, 1);
  EXPECT_EQ(a.max_sge, 6);  // UCX asks for 5 (RC) and 6 (UD)
  ibv_device_attr_ex ex{};
  ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &ex), 0);
  EXPECT_EQ(std::memcmp(&ex.orig_attr, &a, sizeof a), 0);
  EXPECT_EQ(ex.phys_port_cnt_ex, 1u);
  EXPECT_GE(a.max_srq, 1);
  EXPECT_GE(a.max_srq_wr, 4096);
}

TEST_F(Opened, PortIsActiveEthernetWithMappedGid) {
  ibv_port_attr p{};
  ASSERT_EQ(ibv_query_port(ctx_, 1, &p), 0);  // the inline wrapper, through verbs_context
  EXPECT_EQ(p.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(p.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(p.active_mtu, IBV_MTU_4096);
  EXPECT_EQ(p.gid_tbl_len, 1);
  EXPECT_NE(ibv_query_port(ctx_, 2, &p), 0);

  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(ctx_, 1, 0, &gid), 0);
  const std::uint8_t expected[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  EXPECT_EQ(std::memcmp(gid.raw, expected, 16), 0);
  EXPECT_EQ(ibv_query_gid(ctx_, 1, 1, &gid), -1);

  ibv_gid_entry e{};
  ASSERT_EQ(ibv_query_gid_ex(ctx_, 1, 0, &e, 0), 0);
  EXPECT_EQ(e.gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_EQ(std::memcmp(e.gid.raw, expected, 16), 0);

  // The table call wants room for every entry.
  ibv_gid_entry table[2]{};
  EXPECT_EQ(ibv_query_gid_table(ctx_, table, 2, 0), 1);
  EXPECT_EQ(std::memcmp(table[0].gid.raw, expected, 16), 0);
  EXPECT_EQ(ibv_query_gid_table(ctx_, table, 0, 0), -EINVAL);

  __be16 pkey = 0;
  ASSERT_EQ(ibv_query_pkey(ctx_, 1, 0, &pkey), 0);
  EXPECT_EQ(ntohs(pkey), 0xffff);
}

TEST_F(Opened, QpNumberCarriesSlotAndStream) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.cap = {16, 16, 1, 1, 0};
  init.qp_type = IBV_QPT_RC;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  ASSERT_NE(qp, nullptr);
  const auto parts = decode_qpn(qp->qp_num);
  ASSERT_TRUE(parts.has_value());
  EXPECT_GE(parts->stream, 1u);
  EXPECT_GT(qp->qp_num, 1u);  // QPNs 0 and 1 are special in Verbs
  // ibv_rc_pingpong turns inline on when max_inline_data covers its 4096-byte messages.
  EXPECT_GE(init.cap.max_inline_data, 4096u);
  ibv_qp_attr attr{};
  ibv_qp_init_attr got{};
  ASSERT_EQ(ibv_query_qp(qp, &attr, IBV_QP_CAP, &got), 0);
  EXPECT_EQ(got.cap.max_inline_data, init.cap.max_inline_data);
  EXPECT_EQ(attr.qp_state, IBV_QPS_RESET);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

TEST_F(Opened, OptionalAccessFlagsAreIgnored) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  std::vector<char> buf(4096);
  const unsigned access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_RELAXED_ORDERING;
  ibv_mr* mr = ibv_reg_mr_iova2(pd, buf.data(), buf.size(),
                                reinterpret_cast<std::uintptr_t>(buf.data()), access);
  ASSERT_NE(mr, nullptr);
  EXPECT_EQ(mr->addr, buf.data());
  EXPECT_EQ(mr->length, buf.size());
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  // Remote write without local write is refused, as Verbs requires.
  errno = 0;
  EXPECT_EQ(ibv_reg_mr_iova2(pd, buf.data(), buf.size(), 0, IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

TEST_F(Opened, UnsupportedCallsFailWithEopnotsupp) {
  ::testing::internal::CaptureStderr();
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_qp_init_attr uc{};
  uc.send_cq = cq;
  uc.recv_cq = cq;
  uc.cap = {16, 16, 1, 1, 0};
  uc.qp_type = IBV_QPT_UC;
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd, &uc), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);

  ibv_qp_init_attr_ex ex{};
  ex.send_cq = cq;
  ex.recv_cq = cq;
  ex.cap = {16, 16, 1, 1, 0};
  ex.qp_type = IBV_QPT_RC;
  ex.pd = pd;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ex.send_ops_flags =
      IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW;  // memory windows are not offered
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx_, &ex), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);

  errno = 0;
  EXPECT_EQ(ibv_alloc_mw(pd, IBV_MW_TYPE_1), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
  ibv_alloc_dm_attr dm{};
  dm.length = 4096;
  errno = 0;
  EXPECT_EQ(ibv_alloc_dm(ctx_, &dm), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);

  // Each says why, in one line.
  const std::string said = ::testing::internal::GetCapturedStderr();
  for (const char* what : {"ibv_create_qp_ex:", "ibv_alloc_mw: memory windows are not supported",
                           "ibv_alloc_dm: device memory is not supported"}) {
    EXPECT_NE(said.find(what), std::string::npos) << what << " missing from: " << said;
  }

  ibv_ah_attr ah{};  // port 0: no such port
  errno = 0;
  EXPECT_EQ(ibv_create_ah(pd, &ah), nullptr);
  EXPECT_EQ(errno, EINVAL);

  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

TEST_F(Opened, CompletionChannelFdIsPollable) {
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx_);
  ASSERT_NE(ch, nullptr);
  ASSERT_GE(ch->fd, 0);
  ibv_cq* cq = ibv_create_cq(ctx_, 16, this, ch, 0);
  ASSERT_NE(cq, nullptr);
  EXPECT_EQ(ch->refcnt, 1);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), EBUSY);  // a CQ still uses it
  pollfd p{ch->fd, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0);  // nothing happened yet
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_destroy_comp_channel(ch), 0);
}

TEST(Abi, StatusStrings) {
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
  EXPECT_STREQ(ibv_wc_status_str(IBV_WC_REM_ACCESS_ERR), "remote access error");
  EXPECT_STREQ(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE");
  EXPECT_EQ(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
  EXPECT_EQ(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
  EXPECT_EQ(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
}

}  // namespace
}  // namespace mroce::verbs::testing
