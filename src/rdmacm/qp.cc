#include "rdmacm/qp.h"

#include <cerrno>
#include <cstring>

namespace mroce::rdmacm {

int qp_attr_for(const Id& id, ibv_qp_state state, ibv_qp_attr* attr, int* mask) {
  *attr = ibv_qp_attr{};
  attr->qp_state = state;
  const bool ud = id.pub.qp_type == IBV_QPT_UD;
  switch (state) {
    case IBV_QPS_INIT:
      attr->pkey_index = 0;
      attr->port_num = 1;
      if (ud) {
        attr->qkey = kUdpQkey;
        *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
      } else {
        attr->qp_access_flags =
            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
        *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
      }
      return 0;
    case IBV_QPS_RTR:
      if (ud) {
        *mask = IBV_QP_STATE;
        return 0;
      }
      attr->path_mtu = id.dev.mtu;
      attr->dest_qp_num = id.peer.qpn;
      attr->rq_psn = id.peer.psn;
      attr->max_dest_rd_atomic = id.local.responder_resources;
      attr->min_rnr_timer = 12;  // 0.64 ms
      attr->ah_attr.is_global = 1;
      std::memcpy(attr->ah_attr.grh.dgid.raw, id.peer.gid.data(), 16);
      attr->ah_attr.grh.sgid_index = id.dev.gid_index;
      attr->ah_attr.grh.hop_limit = 64;
      attr->ah_attr.port_num = 1;
      *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      return 0;
    case IBV_QPS_RTS:
      attr->sq_psn = id.local.psn;
      if (ud) {
        *mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
        return 0;
      }
      attr->timeout = 14;
      attr->retry_cnt = id.local.retry_count > 7 ? 7 : id.local.retry_count;
      attr->rnr_retry = id.local.rnr_retry_count > 7 ? 7 : id.local.rnr_retry_count;
      attr->max_rd_atomic = id.local.initiator_depth;
      *mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
              IBV_QP_MAX_QP_RD_ATOMIC;
      return 0;
    default:
      return EINVAL;
  }
}

namespace {
int move(Id& id, ibv_qp* qp, ibv_qp_state state) {
  ibv_qp_attr attr;
  int mask = 0;
  if (const int e = qp_attr_for(id, state, &attr, &mask)) return e;
  return ibv_modify_qp(qp, &attr, mask);
}
}  // namespace

int qp_init(Id& id, ibv_qp* qp) {
  if (const int e = move(id, qp, IBV_QPS_INIT)) return e;
  if (id.pub.qp_type != IBV_QPT_UD) return 0;
  if (const int e = move(id, qp, IBV_QPS_RTR)) return e;
  return move(id, qp, IBV_QPS_RTS);
}

int qp_connect(Id& id) {
  if (const int e = move(id, id.pub.qp, IBV_QPS_RTR)) return e;
  return move(id, id.pub.qp, IBV_QPS_RTS);
}

void qp_error(Id& id) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  (void)ibv_modify_qp(id.pub.qp, &attr, IBV_QP_STATE);
}

}  // namespace mroce::rdmacm
