// Verbs calls this transport does not offer. Each fails the way rdma-core reports a
// missing capability (NULL or an error number, errno EOPNOTSUPP) and says so once on
// stderr. docs/VERBS.md lists them.
#include <infiniband/verbs.h>

#include <cerrno>

#include "verbs/diagnostics.h"
#include "verbs/ops.h"

using mroce::verbs::unsupported;

namespace {

constexpr const char* kMcast = "multicast is not supported";
constexpr const char* kImport = "sharing objects between processes is not supported";

}  // namespace

namespace mroce::verbs {

// Reached through the context's tables (the inline ibv_alloc_mw and ibv_alloc_dm), set so
// that the refusal says why; left NULL, rdma-core's inline would fail silently.
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  (void)pd, (void)type;
  unsupported("ibv_alloc_mw", "memory windows are not supported");
  return nullptr;
}

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) {
  (void)context, (void)attr;
  unsupported("ibv_alloc_dm", "device memory is not supported (there is no device)");
  return nullptr;
}

}  // namespace mroce::verbs

extern "C" {

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
