// The extended-verbs entry points of struct verbs_context that programs reach through
// inline functions (ibv_create_qp_ex, ibv_create_cq_ex, ibv_open_xrcd, ...). Offering
// them, rather than leaving them NULL, lets the library say why they fail.
#include <cerrno>

#include "verbs/diagnostics.h"
#include "verbs/ops.h"

namespace mroce::verbs {

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  (void)context;
  // The plain attributes with nothing extended asked for are an ordinary RC QP.
  const std::uint32_t plain = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
  if ((attr->comp_mask & ~plain) == 0 && attr->create_flags == 0 && attr->pd) {
    return ibv_create_qp(attr->pd, reinterpret_cast<ibv_qp_init_attr*>(attr));
  }
  unsupported("ibv_create_qp_ex",
              "extended QPs (the ibv_wr_* send API, create flags, XRC) are not supported");
  return nullptr;
}

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  (void)context, (void)attr;
  unsupported("ibv_create_cq_ex",
              "extended CQs (completion timestamps, ibv_start_poll) are "
              "not supported; use ibv_create_cq");
  return nullptr;
}

ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  (void)context, (void)attr;
  unsupported("ibv_create_srq_ex", "shared receive queues are not supported");
  return nullptr;
}

ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) {
  (void)context, (void)attr;
  unsupported("ibv_open_xrcd", "XRC domains are not supported");
  return nullptr;
}

}  // namespace mroce::verbs
