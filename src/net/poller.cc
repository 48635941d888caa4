#include "net/poller.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/clock.h"

namespace mroce::net {

Poller::~Poller() {
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

bool Poller::open(std::string* error) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    *error = std::string("epoll/eventfd: ") + std::strerror(errno);
    return false;
  }
  return add(wake_fd_, kWakeToken, error);
}

bool Poller::add(int fd, std::uint64_t token, std::string* error) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = token;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    *error = std::string("epoll_ctl: ") + std::strerror(errno);
    return false;
  }
  return true;
}

int Poller::wait(Time now, Time deadline, std::span<std::uint64_t> ready) {
  timespec timeout{};
  timespec* limit = nullptr;
  if (deadline != kNever) {
    timeout = to_timespec(deadline > now ? deadline - now : 0);
    limit = &timeout;
  }
  epoll_event events[64];
  const int max = static_cast<int>(std::min<std::size_t>(ready.size(), 64));
  int n = epoll_pwait2(epoll_fd_, events, max, limit, nullptr);
  if (n < 0 && errno == ENOSYS) {
    // Kernels before 5.11: millisecond resolution, rounded up so deadlines are not early.
    const int ms =
        limit ? static_cast<int>((timeout.tv_sec * kSecond + timeout.tv_nsec + kMillisecond - 1) /
                                 kMillisecond)
              : -1;
    n = epoll_wait(epoll_fd_, events, max, ms);
  }
  if (n <= 0) return 0;
  for (int i = 0; i < n; ++i) {
    ready[i] = events[i].data.u64;
    if (ready[i] == kWakeToken) {
      std::uint64_t v;
      [[maybe_unused]] ssize_t r = read(wake_fd_, &v, sizeof v);
    }
  }
  return n;
}

void Poller::wake() {
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t r = write(wake_fd_, &one, sizeof one);
}

}  // namespace mroce::net
