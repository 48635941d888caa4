// Shared receive queues: an engine SRQ behind each ibv_srq, and the asynchronous event
// (IBV_EVENT_SRQ_LIMIT_REACHED) its limit arms.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "verbs/diagnostics.h"
#include "verbs/objects.h"
#include "verbs/ops.h"

namespace mroce::verbs {
namespace {

constexpr std::uint32_t kMaxDepth = 1 << 16;

}  // namespace

void AsyncEvents::push(const ibv_async_event& e, int fd) {
  {
    net::MutexLock lock(mutex_);
    queue_.push_back(e);
  }
  const std::uint64_t one = 1;
  if (write(fd, &one, sizeof one) != sizeof one) return;  // the counter cannot overflow here
}

bool AsyncEvents::pop(ibv_async_event* out) {
  net::MutexLock lock(mutex_);
  if (queue_.empty()) return false;
  *out = queue_.front();
  queue_.pop_front();
  return true;
}

void AsyncEvents::add_srq(SrqId id, Srq* srq) {
  net::MutexLock lock(mutex_);
  srqs_[id] = srq;
}

void AsyncEvents::remove_srq(SrqId id) {
  net::MutexLock lock(mutex_);
  srqs_.erase(id);
  // An event still queued for it would name freed memory.
  std::erase_if(queue_, [&](const ibv_async_event& e) {
    return e.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && e.element.srq &&
           srq_of(e.element.srq)->queue->id() == id;
  });
}

Srq* AsyncEvents::srq(SrqId id) {
  net::MutexLock lock(mutex_);
  auto it = srqs_.find(id);
  return it == srqs_.end() ? nullptr : it->second;
}

int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Srq* s = srq_of(srq);
  int error = 0;
  for (; wr; wr = wr->next) {
    RecvWr w;
    w.wr_id = wr->wr_id;
    if (wr->num_sge < 0 || wr->num_sge > static_cast<int>(s->max_sge)) {
      error = EINVAL;
      break;
    }
    for (int i = 0; i < wr->num_sge; ++i) {
      w.sg[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
    }
    w.num_sge = static_cast<std::uint8_t>(wr->num_sge);
    if ((error = errno_of(s->queue->post_recv(w)))) break;
  }
  if (error) debug("ibv_post_srq_recv refused: %s", std::strerror(error));
  if (error && bad_wr) *bad_wr = wr;
  return error;
}

ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  const std::uint32_t plain = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
  if ((attr->comp_mask & ~plain) ||
      ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC)) {
    unsupported("ibv_create_srq_ex", "only basic shared receive queues are supported (not XRC)");
    return nullptr;
  }
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd || attr->pd->context != context) {
    errno = EINVAL;
    return nullptr;
  }
  return ibv_create_srq(attr->pd, reinterpret_cast<ibv_srq_init_attr*>(attr));
}

}  // namespace mroce::verbs

using namespace mroce::verbs;

extern "C" {

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* init) {
  ibv_srq_attr& a = init->attr;
  if (a.max_wr == 0 || a.max_wr > kMaxDepth || a.max_sge > mroce::kMaxSge ||
      a.srq_limit > a.max_wr) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = context_of(pd->context);
  auto queue = c->device->create_srq(a.max_wr);
  if (!queue) {
    report("ibv_create_srq: %s", c->device->last_error().c_str());
    errno = ENOMEM;
    return nullptr;
  }
  auto* s = new Srq{};
  s->queue = std::move(queue);
  s->max_sge = std::max<std::uint32_t>(1, a.max_sge);
  s->ibv.context = pd->context;
  s->ibv.srq_context = init->srq_context;
  s->ibv.pd = pd;
  s->ibv.handle = c->next_handle++;
  pthread_mutex_init(&s->ibv.mutex, nullptr);
  pthread_cond_init(&s->ibv.cond, nullptr);
  if (a.srq_limit) s->queue->set_limit(a.srq_limit);
  c->async.add_srq(s->queue->id(), s);
  a.max_sge = s->max_sge;
  ++c->children;
  return &s->ibv;
}

int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  Srq* s = srq_of(srq);
  if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
  if ((mask & IBV_SRQ_MAX_WR) && attr->max_wr > s->queue->depth()) {
    return unsupported("ibv_modify_srq", "growing a shared receive queue is not supported");
  }
  if (mask & IBV_SRQ_LIMIT) return errno_of(s->queue->set_limit(attr->srq_limit));
  return 0;
}

int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  Srq* s = srq_of(srq);
  attr->max_wr = s->queue->depth();
  attr->max_sge = s->max_sge;
  attr->srq_limit = s->queue->limit();
  return 0;
}

int ibv_destroy_srq(ibv_srq* srq) {
  Srq* s = srq_of(srq);
  if (s->qps.load() != 0) return EBUSY;
  Context* c = context_of(srq->context);
  c->async.remove_srq(s->queue->id());
  pthread_cond_destroy(&srq->cond);
  pthread_mutex_destroy(&srq->mutex);
  --c->children;
  delete s;
  return 0;
}

}  // extern "C"
