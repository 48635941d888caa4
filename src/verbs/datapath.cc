// ibv_post_send and ibv_post_recv (reached through ctx->ops): each work request of the
// chain is translated and handed to the engine; the first one refused stops the chain.
#include <cerrno>
#include <cstring>

#include <arpa/inet.h>

#include "verbs/diagnostics.h"
#include "verbs/objects.h"
#include "verbs/ops.h"
#include "verbs/qpn.h"

namespace mroce::verbs {
namespace {

constexpr unsigned kSendFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE | IBV_SEND_IP_CSUM;

bool copy_sges(const ibv_sge* in, int num, std::uint8_t* count, Sge* out) {
  if (num < 0 || num > kMaxSge) return false;
  for (int i = 0; i < num; ++i) out[i] = {in[i].addr, in[i].length, in[i].lkey};
  *count = static_cast<std::uint8_t>(num);
  return true;
}

// False for opcodes the engine does not carry (memory windows, invalidation, TSO).
bool to_send_wr(const ibv_send_wr& in, SendWr* out) {
  if (in.opcode > IBV_WR_ATOMIC_FETCH_AND_ADD || (in.send_flags & ~kSendFlags)) return false;
  out->wr_id = in.wr_id;
  out->opcode = static_cast<WrOpcode>(in.opcode);  // rdma-core's values (core/types.h)
  out->flags = in.send_flags & ~IBV_SEND_IP_CSUM;
  out->imm = ntohl(in.imm_data);  // imm_data holds the wire bytes (big-endian)
  switch (in.opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
      out->remote_addr = in.wr.rdma.remote_addr;
      out->rkey = in.wr.rdma.rkey;
      break;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
      out->remote_addr = in.wr.atomic.remote_addr;
      out->rkey = in.wr.atomic.rkey;
      out->compare_add = in.wr.atomic.compare_add;
      out->swap = in.wr.atomic.swap;
      break;
    default:
      break;
  }
  return copy_sges(in.sg_list, in.num_sge, &out->num_sge, out->sg);
}

// A UD send: SEND or SEND_WITH_IMM to the address handle's endpoint, the slot and stream
// of the remote QPN, with the Q_Key of the request (or the QP's own when its high bit is
// set, as IBA says).
int post_datagram(Qp* q, const ibv_send_wr& in) {
  if ((in.opcode != IBV_WR_SEND && in.opcode != IBV_WR_SEND_WITH_IMM) || !in.wr.ud.ah) {
    return EINVAL;
  }
  SendWr w;
  if (!to_send_wr(in, &w)) return EINVAL;
  const Context* c = context_of(q->ibv.context);
  const Ah* ah = ah_of(in.wr.ud.ah);
  const auto parts = decode_qpn(in.wr.ud.remote_qpn);
  const std::uint16_t port = parts ? slot_port(c->settings->base_port, parts->slot) : 0;
  if (!parts || port == 0) return EINVAL;
  DatagramDest dest;
  dest.peer = Endpoint{ah->addr, port};
  dest.remote = parts->stream;
  dest.plane = ah->plane;
  if (in.wr.ud.remote_qkey & 0x80000000u) {
    net::MutexLock lock(q->mutex);
    dest.qkey = q->attr.qkey;
  } else {
    dest.qkey = in.wr.ud.remote_qkey;
  }
  return errno_of(q->pair->post_datagram(w, dest));
}

}  // namespace

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp* q = qp_of(qp);
  int error = 0;
  if (qp->state != IBV_QPS_RTS) error = EINVAL;
  if (qp->qp_type == IBV_QPT_UD) {
    for (; wr && !error; wr = wr->next) {
      if ((error = post_datagram(q, *wr))) break;
    }
    if (error) debug("ibv_post_send on UD QP 0x%06x refused: %s", qp->qp_num, std::strerror(error));
    if (error && bad_wr) *bad_wr = wr;
    return error;
  }
  for (; wr && !error; wr = wr->next) {
    SendWr w;
    error = to_send_wr(*wr, &w) ? errno_of(q->pair->post_send(w)) : EINVAL;
    if (error) break;
  }
  if (error) debug("ibv_post_send on QP 0x%06x refused: %s", qp->qp_num, std::strerror(error));
  if (error && bad_wr) *bad_wr = wr;
  return error;
}

int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Qp* q = qp_of(qp);
  int error = 0;
  if (qp->state == IBV_QPS_RESET) error = EINVAL;
  for (; wr && !error; wr = wr->next) {
    RecvWr w;
    w.wr_id = wr->wr_id;
    error = copy_sges(wr->sg_list, wr->num_sge, &w.num_sge, w.sg) ? errno_of(q->pair->post_recv(w))
                                                                  : EINVAL;
    if (error) break;
  }
  if (error) debug("ibv_post_recv on QP 0x%06x refused: %s", qp->qp_num, std::strerror(error));
  if (error && bad_wr) *bad_wr = wr;
  return error;
}

}  // namespace mroce::verbs
