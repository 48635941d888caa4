// The Verbs resources librdmacm makes for an id: queue pairs (and the PD and CQs they
// need when the program gives none), shared receive queues, endpoints, device lists.
#include <rdma/rdma_verbs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "rdmacm/cm.h"
#include "rdmacm/qp.h"

using namespace mroce::rdmacm;

namespace {

int fail(int e) {
  errno = e;
  return -1;
}

void destroy_cqs(Id* id) {
  rdma_cm_id& p = id->pub;
  if (!id->created_cqs) return;
  if (p.send_cq && p.send_cq != p.recv_cq) ibv_destroy_cq(p.send_cq);
  if (p.recv_cq) ibv_destroy_cq(p.recv_cq);
  if (p.send_cq_channel && p.send_cq_channel != p.recv_cq_channel) {
    ibv_destroy_comp_channel(p.send_cq_channel);
  }
  if (p.recv_cq_channel) ibv_destroy_comp_channel(p.recv_cq_channel);
  p.send_cq = p.recv_cq = nullptr;
  p.send_cq_channel = p.recv_cq_channel = nullptr;
  id->created_cqs = false;
}

// A CQ with its own completion channel for each queue the program left without one.
int create_cqs(Id* id, ibv_qp_init_attr* attr) {
  rdma_cm_id& p = id->pub;
  if (!attr->recv_cq) {
    p.recv_cq_channel = ibv_create_comp_channel(p.verbs);
    if (!p.recv_cq_channel) return -1;
    p.recv_cq = ibv_create_cq(p.verbs, static_cast<int>(std::max(1u, attr->cap.max_recv_wr)), &p,
                              p.recv_cq_channel, 0);
    id->created_cqs = true;
    if (!p.recv_cq) return -1;
    attr->recv_cq = p.recv_cq;
  }
  if (!attr->send_cq) {
    p.send_cq_channel = ibv_create_comp_channel(p.verbs);
    if (!p.send_cq_channel) return -1;
    p.send_cq = ibv_create_cq(p.verbs, static_cast<int>(std::max(1u, attr->cap.max_send_wr)), &p,
                              p.send_cq_channel, 0);
    id->created_cqs = true;
    if (!p.send_cq) return -1;
    attr->send_cq = p.send_cq;
  }
  return 0;
}

ibv_pd* pd_for(Id* id, ibv_pd* pd) {
  if (pd) return pd;
  if (id->pub.pd) return id->pub.pd;
  id->pub.pd = ibv_alloc_pd(id->pub.verbs);
  id->created_pd = id->pub.pd != nullptr;
  return id->pub.pd;
}

}  // namespace

extern "C" {

int rdma_create_qp(rdma_cm_id* cm_id, ibv_pd* pd, ibv_qp_init_attr* attr) {
  Id* id = id_of(cm_id);
  if (!cm_id->verbs || !attr) return fail(EINVAL);
  pd = pd_for(id, pd);
  if (!pd) return -1;
  if (pd->context != cm_id->verbs) return fail(EINVAL);
  if (create_cqs(id, attr) != 0) {
    const int e = errno;
    destroy_cqs(id);
    return fail(e);
  }
  if (cm_id->srq && !attr->srq) attr->srq = cm_id->srq;
  ibv_qp* qp = ibv_create_qp(pd, attr);
  if (!qp) {
    const int e = errno;
    destroy_cqs(id);
    return fail(e);
  }
  if (const int e = qp_init(*id, qp)) {
    ibv_destroy_qp(qp);
    destroy_cqs(id);
    return fail(e);
  }
  cm_id->qp = qp;
  cm_id->pd = pd;
  return 0;
}

int rdma_create_qp_ex(rdma_cm_id* cm_id, ibv_qp_init_attr_ex* attr) {
  if (!attr || (attr->comp_mask & ~static_cast<std::uint32_t>(IBV_QP_INIT_ATTR_PD))) {
    return fail(EOPNOTSUPP);  // extended QPs are not offered by the device
  }
  ibv_qp_init_attr plain{};
  plain.qp_context = attr->qp_context;
  plain.send_cq = attr->send_cq;
  plain.recv_cq = attr->recv_cq;
  plain.srq = attr->srq;
  plain.cap = attr->cap;
  plain.qp_type = attr->qp_type;
  plain.sq_sig_all = attr->sq_sig_all;
  const int rc = rdma_create_qp(cm_id, attr->pd, &plain);
  attr->cap = plain.cap;
  return rc;
}

void rdma_destroy_qp(rdma_cm_id* cm_id) {
  if (cm_id->qp) ibv_destroy_qp(cm_id->qp);
  cm_id->qp = nullptr;
  destroy_cqs(id_of(cm_id));
}

int rdma_create_srq(rdma_cm_id* cm_id, ibv_pd* pd, ibv_srq_init_attr* attr) {
  Id* id = id_of(cm_id);
  if (!cm_id->verbs || !attr) return fail(EINVAL);
  pd = pd_for(id, pd);
  if (!pd) return -1;
  ibv_srq* srq = ibv_create_srq(pd, attr);
  if (!srq) return -1;
  cm_id->srq = srq;
  return 0;
}

int rdma_create_srq_ex(rdma_cm_id* cm_id, ibv_srq_init_attr_ex* attr) {
  if (!cm_id->verbs || !attr) return fail(EINVAL);
  ibv_srq* srq = ibv_create_srq_ex(cm_id->verbs, attr);
  if (!srq) return -1;
  cm_id->srq = srq;
  return 0;
}

void rdma_destroy_srq(rdma_cm_id* cm_id) {
  if (cm_id->srq) ibv_destroy_srq(cm_id->srq);
  cm_id->srq = nullptr;
}

int rdma_create_ep(rdma_cm_id** out, rdma_addrinfo* res, ibv_pd* pd,
                   ibv_qp_init_attr* qp_init_attr) {
  if (!out || !res) return fail(EINVAL);
  rdma_cm_id* cm_id = nullptr;
  const auto ps =
      static_cast<rdma_port_space>(res->ai_port_space ? res->ai_port_space : RDMA_PS_TCP);
  if (rdma_create_id(nullptr, &cm_id, nullptr, ps) != 0) return -1;
  Id* id = id_of(cm_id);
  if (res->ai_qp_type) cm_id->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type);
  if (qp_init_attr) qp_init_attr->qp_type = cm_id->qp_type;
  int rc = 0;
  if (res->ai_flags & RAI_PASSIVE) {
    rc = res->ai_src_addr ? rdma_bind_addr(cm_id, res->ai_src_addr) : 0;
    if (rc == 0 && qp_init_attr) {
      // Every request this id gets has its QP made the same way (rdma_get_request).
      id->has_qp_init = true;
      id->qp_init = *qp_init_attr;
      id->ep_pd = pd;
    }
  } else {
    rc = rdma_resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
    if (rc == 0) rc = rdma_resolve_route(cm_id, 2000);
    if (rc == 0 && qp_init_attr) rc = rdma_create_qp(cm_id, pd, qp_init_attr);
  }
  if (rc != 0) {
    const int e = errno;
    rdma_destroy_ep(cm_id);
    return fail(e);
  }
  *out = cm_id;
  return 0;
}

void rdma_destroy_ep(rdma_cm_id* cm_id) {
  Id* id = id_of(cm_id);
  if (cm_id->qp) rdma_destroy_qp(cm_id);
  if (cm_id->srq) rdma_destroy_srq(cm_id);
  if (id->created_pd && cm_id->pd) ibv_dealloc_pd(cm_id->pd);
  rdma_destroy_id(cm_id);
}

ibv_context** rdma_get_devices(int* num_devices) {
  const std::vector<ibv_context*> all = all_devices();
  auto** list = static_cast<ibv_context**>(std::calloc(all.size() + 1, sizeof(ibv_context*)));
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (std::size_t i = 0; i < all.size(); ++i) list[i] = all[i];
  if (num_devices) *num_devices = static_cast<int>(all.size());
  return list;
}

void rdma_free_devices(ibv_context** list) {
  std::free(list);  // the contexts stay open, shared by every id
}

}  // extern "C"
