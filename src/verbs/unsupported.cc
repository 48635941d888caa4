// Verbs calls this transport does not offer. Each fails the way rdma-core reports a
// missing capability (NULL or an error number, errno EOPNOTSUPP) and says so once on
// stderr. docs/VERBS.md lists them.
#include <infiniband/verbs.h>

#include <cerrno>

#include "verbs/diagnostics.h"

using mroce::verbs::unsupported;

namespace {

constexpr const char* kSrq = "shared receive queues are not supported";
constexpr const char* kAh = "address handles (UD queue pairs) are not supported";
constexpr const char* kMcast = "multicast is not supported";
constexpr const char* kImport = "sharing objects between processes is not supported";

}  // namespace

extern "C" {

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  (void)pd, (void)attr;
  unsupported("ibv_create_srq", kSrq);
  return nullptr;
}
int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  (void)srq, (void)attr, (void)mask;
  return unsupported("ibv_modify_srq", kSrq);
}
int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  (void)srq, (void)attr;
  return unsupported("ibv_query_srq", kSrq);
}
int ibv_destroy_srq(ibv_srq* srq) {
  (void)srq;
  return unsupported("ibv_destroy_srq", kSrq);
}

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  (void)pd, (void)attr;
  unsupported("ibv_create_ah", kAh);
  return nullptr;
}
ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  (void)pd, (void)wc, (void)grh, (void)port_num;
  unsupported("ibv_create_ah_from_wc", kAh);
  return nullptr;
}
int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  (void)context, (void)port_num, (void)wc, (void)grh, (void)ah_attr;
  return unsupported("ibv_init_ah_from_wc", kAh);
}
int ibv_destroy_ah(ibv_ah* ah) {
  (void)ah;
  return unsupported("ibv_destroy_ah", kAh);
}
int ibv_resolve_eth_l2_from_gid(ibv_context* context, ibv_ah_attr* attr, uint8_t eth_mac[6],
                                uint16_t* vid) {
  (void)context, (void)attr, (void)eth_mac, (void)vid;
  return unsupported("ibv_resolve_eth_l2_from_gid", "there is no Ethernet layer to resolve");
}

int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  (void)qp, (void)gid, (void)lid;
  return unsupported("ibv_attach_mcast", kMcast);
}
int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  (void)qp, (void)gid, (void)lid;
  return unsupported("ibv_detach_mcast", kMcast);
}

ibv_context* ibv_import_device(int cmd_fd) {
  (void)cmd_fd;
  unsupported("ibv_import_device", kImport);
  return nullptr;
}
ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
  (void)context, (void)pd_handle;
  unsupported("ibv_import_pd", kImport);
  return nullptr;
}
void ibv_unimport_pd(ibv_pd* pd) {
  (void)pd;
}
ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
  (void)pd, (void)mr_handle;
  unsupported("ibv_import_mr", kImport);
  return nullptr;
}
void ibv_unimport_mr(ibv_mr* mr) {
  (void)mr;
}
ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
  (void)context, (void)dm_handle;
  unsupported("ibv_import_dm", kImport);
  return nullptr;
}
void ibv_unimport_dm(ibv_dm* dm) {
  (void)dm;
}

// Enhanced connection establishment: programs probe it and carry on without (silently).
int ibv_query_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp, (void)ece;
  return EOPNOTSUPP;
}
int ibv_set_ece(ibv_qp* qp, ibv_ece* ece) {
  (void)qp, (void)ece;
  return EOPNOTSUPP;
}

}  // extern "C"
