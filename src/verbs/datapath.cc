// ibv_post_send and ibv_post_recv (reached through ctx->ops): each work request of the
// chain is translated and handed to the engine; the first one refused stops the chain.
#include <cerrno>
#include <cstring>

#include "verbs/diagnostics.h"
#include "verbs/objects.h"
#include "verbs/ops.h"

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
  out->imm = in.imm_data;
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

}  // namespace

int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp* q = qp_of(qp);
  int error = 0;
  if (qp->state != IBV_QPS_RTS) error = EINVAL;
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
