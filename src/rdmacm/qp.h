// Queue pair transitions as librdmacm makes them, through the public Verbs calls: INIT at
// rdma_create_qp, RTR and RTS once the peer's queue pair is known (REQ or REP), ERR at
// rdma_disconnect.
#pragma once

#include "rdmacm/cm.h"

namespace mroce::rdmacm {

inline constexpr std::uint32_t kUdpQkey = 0x01234567;  // RDMA_UDP_QKEY of librdmacm

// The attributes and mask for moving the id's QP to `state` (INIT, RTR or RTS).
int qp_attr_for(const Id& id, ibv_qp_state state, ibv_qp_attr* attr, int* mask);

// INIT (and for UD on to RTS, which needs no peer).
int qp_init(Id& id, ibv_qp* qp);

// RTR then RTS, for an RC QP whose peer is now known.
int qp_connect(Id& id);

// ERR, so posted work is flushed; a failure is not the caller's concern.
void qp_error(Id& id);

}  // namespace mroce::rdmacm
