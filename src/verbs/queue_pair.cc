// Queue pairs: an engine stream behind each RC ibv_qp. Moving to RTR binds the stream to
// the peer named by the GID (address) and the QPN (port slot and stream, see qpn.h).
#include <bit>
#include <cerrno>
#include <cstring>

#include "verbs/address_handle.h"
#include "verbs/diagnostics.h"
#include "verbs/objects.h"
#include "verbs/qpn.h"

namespace mroce::verbs {
namespace {

constexpr std::uint32_t kMaxDepth = 1 << 16;
constexpr std::uint32_t kMaxInline = 4096;       // the engine's limit
constexpr std::size_t kInlineBudget = 4u << 20;  // bytes of inline slots per QP

// Programs such as ibv_rc_pingpong send inline when max_inline_data covers their message,
// so offer the full size unless the per-slot buffers it costs would grow large.
std::uint32_t inline_size(std::uint32_t asked, std::uint32_t sq_depth, std::uint32_t offer) {
  if (asked >= offer) return asked;
  if (std::size_t{std::bit_ceil(sq_depth)} * offer <= kInlineBudget) return offer;
  return asked;
}

bool valid_caps(const ibv_qp_cap& cap) {
  return cap.max_send_wr <= kMaxDepth && cap.max_recv_wr <= kMaxDepth &&
         cap.max_send_sge <= kMaxSge && cap.max_recv_sge <= kMaxSge &&
         cap.max_inline_data <= kMaxInline;
}

// Verbs' min_rnr_timer code (IBA table 45) in nanoseconds.
Time rnr_timer_ns(std::uint8_t code) {
  static constexpr std::uint32_t kMicros[32] = {
      655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
      480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
      20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return Time{kMicros[code & 31]} * kMicrosecond;
}

bool transition_allowed(ibv_qp_state from, ibv_qp_state to) {
  switch (to) {
    case IBV_QPS_ERR:
      return true;
    case IBV_QPS_RESET:
      return from == IBV_QPS_RESET;
    case IBV_QPS_INIT:
      return from == IBV_QPS_RESET || from == IBV_QPS_INIT;
    case IBV_QPS_RTR:
      return from == IBV_QPS_INIT;
    case IBV_QPS_RTS:
      return from == IBV_QPS_RTR || from == IBV_QPS_RTS;
    default:
      return false;
  }
}

int connect_qp(Qp* q, const ibv_qp_attr& attr) {
  Context* c = context_of(q->ibv.context);
  const auto parts = decode_qpn(attr.dest_qp_num);
  const std::uint16_t port = parts ? slot_port(c->settings->base_port, parts->slot) : 0;
  if (!parts || port == 0) {
    report("ibv_modify_qp: remote QPN 0x%06x names no MetaRoCE queue pair", attr.dest_qp_num);
    return EINVAL;
  }
  const Endpoint peer{peer_address(*c, attr.ah_attr), port};
  const Errc e = q->pair->connect(peer, parts->stream);
  debug("QP 0x%06x -> %s port %u QP 0x%06x: %s", q->ibv.qp_num, peer.addr.to_string().c_str(), port,
        attr.dest_qp_num, to_string(e));
  return errno_of(e);
}

// Keeps what query_qp reports: every attribute the mask names.
void remember(Qp* q, const ibv_qp_attr& attr, int mask) MROCE_REQUIRES(q->mutex) {
  ibv_qp_attr& a = q->attr;
  if (mask & IBV_QP_ACCESS_FLAGS) a.qp_access_flags = attr.qp_access_flags;
  if (mask & IBV_QP_PKEY_INDEX) a.pkey_index = attr.pkey_index;
  if (mask & IBV_QP_PORT) a.port_num = attr.port_num;
  if (mask & IBV_QP_AV) a.ah_attr = attr.ah_attr;
  if (mask & IBV_QP_PATH_MTU) a.path_mtu = attr.path_mtu;
  if (mask & IBV_QP_TIMEOUT) a.timeout = attr.timeout;
  if (mask & IBV_QP_RETRY_CNT) a.retry_cnt = attr.retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) a.rnr_retry = attr.rnr_retry;
  if (mask & IBV_QP_RQ_PSN) a.rq_psn = attr.rq_psn;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) a.max_rd_atomic = attr.max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) {
    a.min_rnr_timer = attr.min_rnr_timer;
    q->min_rnr_timer_set = true;
  }
  if (mask & IBV_QP_SQ_PSN) a.sq_psn = attr.sq_psn;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (mask & IBV_QP_DEST_QPN) a.dest_qp_num = attr.dest_qp_num;
  if (mask & IBV_QP_QKEY) a.qkey = attr.qkey;
}

// RNR policy at RTS: the retry count from this call (or an earlier one), and this QP's own
// min_rnr_timer as the wait between retries (the engine keeps no peer-announced value).
void apply_rnr(Qp* q, int mask) MROCE_REQUIRES(q->mutex) {
  if (!(mask & (IBV_QP_RNR_RETRY | IBV_QP_MIN_RNR_TIMER))) return;
  const Time timer =
      q->min_rnr_timer_set ? rnr_timer_ns(q->attr.min_rnr_timer) : StreamConfig{}.rnr_timer;
  const Errc e = q->pair->set_rnr_policy(q->attr.rnr_retry, timer);
  if (e != Errc::kOk && q->attr.rnr_retry != 7) {
    report("ibv_modify_qp: rnr_retry %u not applied (%s): RNR retries are unlimited",
           q->attr.rnr_retry, to_string(e));
  }
}

ibv_qp_state effective_state(const Qp& q) {
  return q.pair->state() == StreamState::kError ? IBV_QPS_ERR : q.ibv.state;
}

}  // namespace
}  // namespace mroce::verbs

using namespace mroce;
using namespace mroce::verbs;

extern "C" {

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UD) {
    unsupported("ibv_create_qp", "only RC and UD queue pairs are supported (not UC, XRC or raw)");
    return nullptr;
  }
  const bool ud = init->qp_type == IBV_QPT_UD;
  if (ud && init->srq) {
    unsupported("ibv_create_qp", "UD queue pairs on a shared receive queue are not supported");
    return nullptr;
  }
  if (!init->send_cq || !init->recv_cq || init->send_cq->context != pd->context ||
      init->recv_cq->context != pd->context || !valid_caps(init->cap) ||
      (init->srq && init->srq->context != pd->context)) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = context_of(pd->context);
  QpOptions options;
  options.send_cq = cq_of(init->send_cq)->queue.get();
  options.recv_cq = cq_of(init->recv_cq)->queue.get();
  options.sq_sig_all = init->sq_sig_all != 0;
  options.datagram = ud;
  StreamConfig& s = options.stream;
  s.sq_depth = std::max<std::uint32_t>(1, init->cap.max_send_wr);
  s.rq_depth = std::max<std::uint32_t>(1, init->cap.max_recv_wr);
  // Verbs QPs start with no remote rights: ibv_modify_qp's qp_access_flags grant them.
  s.remote_access = 0;
  Srq* srq = init->srq ? srq_of(init->srq) : nullptr;
  if (srq) {
    options.srq = srq->queue.get();
    s.rq_depth = srq->queue->depth();  // bounds the receives it holds for open messages
  }
  s.max_inline = inline_size(init->cap.max_inline_data, s.sq_depth, c->settings->max_inline);
  if (ud && c->device->options().transport != TransportKind::kMetaRoce) {
    unsupported("ibv_create_qp", "UD queue pairs need the MetaRoCE transport (not rocev2)");
    return nullptr;
  }
  auto pair = c->device->create_qp(options);
  if (!pair || pair->qp_num() > kMaxStream) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* q = new Qp{};
  q->ibv.context = pd->context;
  q->ibv.qp_context = init->qp_context;
  q->ibv.pd = pd;
  q->ibv.send_cq = init->send_cq;
  q->ibv.recv_cq = init->recv_cq;
  q->ibv.srq = init->srq;
  q->ibv.handle = c->next_handle++;
  q->ibv.qp_num = encode_qpn(c->slot, pair->qp_num());
  q->ibv.state = IBV_QPS_RESET;
  q->ibv.qp_type = init->qp_type;
  pthread_mutex_init(&q->ibv.mutex, nullptr);
  pthread_cond_init(&q->ibv.cond, nullptr);
  c->filter.reset(pair->qp_num());
  q->pair = std::move(pair);
  q->sq_sig_all = options.sq_sig_all;
  q->cap = {s.sq_depth, s.rq_depth, std::max<std::uint32_t>(1, init->cap.max_send_sge),
            std::max<std::uint32_t>(1, init->cap.max_recv_sge), s.max_inline};
  if (srq) {
    q->cap.max_recv_wr = q->cap.max_recv_sge = 0;  // as a NIC reports a QP on an SRQ
    ++srq->qps;
  }
  {
    net::MutexLock lock(q->mutex);  // not shared yet; the lock keeps the analysis simple
    q->attr.path_mtu = IBV_MTU_4096;
    q->attr.rnr_retry = s.rnr_retry;
  }
  init->cap = q->cap;
  ++cq_of(init->send_cq)->qps;
  ++cq_of(init->recv_cq)->qps;
  ++c->children;
  return &q->ibv;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  Qp* q = qp_of(qp);
  net::MutexLock lock(q->mutex);
  const ibv_qp_state from = qp->state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
  if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != from) return EINVAL;
  if (!transition_allowed(from, to)) {
    if (to == IBV_QPS_SQD || to == IBV_QPS_SQE || to == IBV_QPS_RESET) {
      return unsupported("ibv_modify_qp",
                         "only RESET->INIT->RTR->RTS and ERR transitions are supported");
    }
    return EINVAL;
  }
  if ((mask & IBV_QP_PORT) && attr->port_num != 1) return EINVAL;
  if ((mask & IBV_QP_ACCESS_FLAGS) && qp->qp_type != IBV_QPT_UD) {
    constexpr unsigned kRemote =
        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (const int e = errno_of(q->pair->set_remote_access(attr->qp_access_flags & kRemote))) {
      return e;
    }
  }
  if (to == IBV_QPS_ERR) {
    // Posted work is flushed (rping waits for that flush before it exits).
    // The filter first: the flushes may be polled before set_error returns.
    context_of(qp->context)->filter.fail(q->pair->qp_num());
    const Errc e = q->pair->set_error();
    if (e != Errc::kOk)
      return unsupported("ibv_modify_qp", "this transport cannot move a QP to ERR");
    qp->state = to;
    return 0;
  }
  if (qp->qp_type == IBV_QPT_UD) {
    // No peer to bind: UD sends name theirs in each work request.
    if (mask & IBV_QP_QKEY) {
      if (const int e = errno_of(q->pair->set_qkey(attr->qkey))) return e;
    }
    remember(q, *attr, mask);
    qp->state = to;
    return 0;
  }
  if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
    if ((mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) != (IBV_QP_AV | IBV_QP_DEST_QPN)) return EINVAL;
    if (const int e = connect_qp(q, *attr)) return e;
  }
  remember(q, *attr, mask);
  if (to == IBV_QPS_RTS) apply_rnr(q, mask);
  qp->state = to;
  return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask, ibv_qp_init_attr* init) {
  (void)mask;  // everything is cheap to report
  Qp* q = qp_of(qp);
  net::MutexLock lock(q->mutex);
  *attr = q->attr;
  attr->qp_state = effective_state(*q);
  attr->cur_qp_state = attr->qp_state;
  attr->cap = q->cap;
  *init = ibv_qp_init_attr{};
  init->qp_context = qp->qp_context;
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->srq = qp->srq;
  init->cap = q->cap;
  init->qp_type = qp->qp_type;
  init->sq_sig_all = q->sq_sig_all;
  return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
  Qp* q = qp_of(qp);
  Context* c = context_of(qp->context);
  c->filter.retire(q->pair->qp_num());
  q->pair->quiesce();
  c->reaper.park(std::move(q->pair));
  --cq_of(qp->send_cq)->qps;
  --cq_of(qp->recv_cq)->qps;
  if (qp->srq) --srq_of(qp->srq)->qps;
  --c->children;
  pthread_cond_destroy(&qp->cond);
  pthread_mutex_destroy(&qp->mutex);
  delete q;
  return 0;
}

// SEND and WRITE data land out of order (placed as packets arrive); only the last byte of
// a WRITE is held back until the message is complete.
int ibv_query_qp_data_in_order(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags) {
  (void)qp, (void)op, (void)flags;
  return 0;
}

}  // extern "C"
