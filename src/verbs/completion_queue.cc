// Completion queues: the engine's queue behind ibv_cq, its entries translated to ibv_wc.
#include <arpa/inet.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>

#include "verbs/completion_channel.h"
#include "verbs/diagnostics.h"
#include "verbs/objects.h"
#include "verbs/ops.h"
#include "verbs/qpn.h"

namespace mroce::verbs {
namespace {

constexpr int kMaxCqe = 1 << 20;

void to_wc(const Completion& c, int slot, std::uint16_t base_port, ibv_wc* wc) {
  *wc = ibv_wc{};
  wc->wr_id = c.wr_id;
  // The enums carry rdma-core's values (core/types.h).
  wc->status = static_cast<ibv_wc_status>(c.status);
  wc->opcode = static_cast<ibv_wc_opcode>(c.opcode);
  wc->byte_len = c.byte_len;
  if (c.has_imm) {
    wc->imm_data = htonl(c.imm);
    wc->wc_flags = IBV_WC_WITH_IMM;
  }
  wc->qp_num = encode_qpn(slot, c.stream);
  if (c.src.port != 0) {
    // A UD receive: the sender's QPN from its listening port's slot, and the GRH that
    // precedes the payload.
    const int peer_slot = c.src.port - base_port;
    wc->src_qp = peer_slot >= 0 && peer_slot < kMaxSlots ? encode_qpn(peer_slot, c.src_stream)
                                                         : c.src_stream;
    wc->wc_flags |= IBV_WC_GRH;
    // As RoCE devices report a UD receive's packet type in sl: 2 for IPv4, 1 for IPv6
    // (UCX takes the GID's length in the GRH from it).
    wc->sl = c.src.addr.is_ipv4() ? 2 : 1;
  }
}

}  // namespace

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  Cq* q = cq_of(cq);
  Context* c = context_of(cq->context);
  constexpr int kBatch = 32;
  Completion batch[kBatch];
  int done = 0;
  while (done < num_entries) {
    const int want = std::min(kBatch, num_entries - done);
    const int got = q->queue->poll(batch, want);
    for (int i = 0; i < got; ++i) {
      if (c->filter.admit(batch[i])) to_wc(batch[i], c->slot, c->settings->base_port, &wc[done++]);
    }
    if (got < want) break;
  }
  // Programs spin on an empty CQ; the progress thread that will fill it needs the CPU
  // more (on a busy or small machine it shares a core with the spinner). MROCE_POLL_YIELD=0
  // turns this off, for programs on cores of their own.
  if (done == 0 && c->settings->poll_yield) sched_yield();
  return done;
}

int req_notify_cq(ibv_cq* cq, int solicited_only) {
  cq_of(cq)->solicited_only = solicited_only != 0;
  cq_of(cq)->queue->request_notify(solicited_only != 0);
  return 0;
}

}  // namespace mroce::verbs

using namespace mroce::verbs;

extern "C" {

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (cqe < 1 || cqe > kMaxCqe || comp_vector < 0 || comp_vector >= context->num_comp_vectors ||
      (channel && channel->context != context)) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = context_of(context);
  auto* q = new Cq{};
  q->queue = c->device->create_cq(cqe);
  if (!q->queue) {
    delete q;
    errno = ENOMEM;
    return nullptr;
  }
  q->ibv.context = context;
  q->ibv.channel = channel;
  q->ibv.cq_context = cq_context;
  q->ibv.handle = c->next_handle++;
  q->ibv.cqe = q->queue->capacity();
  pthread_mutex_init(&q->ibv.mutex, nullptr);
  pthread_cond_init(&q->ibv.cond, nullptr);
  if (!attach_to_channel(q)) {
    const int e = errno;
    delete q;
    errno = e;
    return nullptr;
  }
  ++c->children;
  return &q->ibv;
}

int ibv_destroy_cq(ibv_cq* cq) {
  Cq* q = cq_of(cq);
  if (q->qps.load() != 0) {
    errno = EBUSY;
    return EBUSY;
  }
  detach_from_channel(q);
  pthread_cond_destroy(&cq->cond);
  pthread_mutex_destroy(&cq->mutex);
  --context_of(cq->context)->children;
  delete q;
  return 0;
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (cqe >= 1 && cqe <= cq->cqe) return 0;  // already large enough
  return unsupported("ibv_resize_cq", "growing a completion queue is not supported");
}

}  // extern "C"
