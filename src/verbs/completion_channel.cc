#include "verbs/completion_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace mroce::verbs {

bool attach_to_channel(Cq* cq) {
  ibv_comp_channel* channel = cq->ibv.channel;
  if (!channel) return true;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = cq;
  if (epoll_ctl(channel->fd, EPOLL_CTL_ADD, cq->queue->fd(), &ev) != 0) return false;
  ++channel->refcnt;
  return true;
}

void detach_from_channel(Cq* cq) {
  ibv_comp_channel* channel = cq->ibv.channel;
  if (!channel) return;
  epoll_ctl(channel->fd, EPOLL_CTL_DEL, cq->queue->fd(), nullptr);
  --channel->refcnt;
}

}  // namespace mroce::verbs

using namespace mroce::verbs;

extern "C" {

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  const int fd = epoll_create1(EPOLL_CLOEXEC);
  if (fd < 0) return nullptr;
  auto* ch = new Channel{};
  ch->ibv.context = context;
  ch->ibv.fd = fd;
  ++context_of(context)->children;
  return &ch->ibv;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (channel->refcnt > 0) {
    errno = EBUSY;
    return EBUSY;
  }
  close(channel->fd);
  --context_of(channel->context)->children;
  delete channel_of(channel);
  return 0;
}

// Blocks until a CQ of the channel was notified, unless the program made the channel's fd
// non-blocking (then EAGAIN), as with rdma-core.
//
// A notification whose CQ is empty by now is not reported: the completion that fired it
// arrived after the program re-armed the CQ and was taken by the poll that followed. A
// program that polls exactly once per event expecting an entry (ibv_rc_pingpong -t -e)
// would fail on it. The CQ is armed again instead (the program's arm was used up), and
// looked at once more, so a completion that came in between is not missed.
int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  const bool nonblocking = fcntl(channel->fd, F_GETFL) & O_NONBLOCK;
  for (;;) {
    epoll_event ev{};
    int n;
    do {
      n = epoll_wait(channel->fd, &ev, 1, nonblocking ? 0 : -1);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) {
      if (n == 0) errno = EAGAIN;
      return -1;
    }
    Cq* fired = static_cast<Cq*>(ev.data.ptr);
    // Consume the notification so the fd reads as idle until the next request_notify().
    pollfd p{fired->queue->fd(), POLLIN, 0};
    std::uint64_t value = 0;
    if (poll(&p, 1, 0) == 1 && read(p.fd, &value, sizeof value) < 0) return -1;
    if (fired->queue->empty()) {
      fired->queue->request_notify(fired->solicited_only.load());
      if (fired->queue->empty()) continue;
    }
    *cq = &fired->ibv;
    *cq_context = fired->ibv.cq_context;
    return 0;
  }
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  __atomic_add_fetch(&cq->comp_events_completed, nevents, __ATOMIC_RELAXED);
}

}  // extern "C"
