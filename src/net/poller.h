// Waiting for sockets and time: epoll over every socket of a device plus an eventfd
// that other threads write to wake the waiter early, with a nanosecond deadline.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <span>
#include <string>

#include "core/types.h"

namespace mroce::net {

class Poller {
 public:
  static constexpr std::uint64_t kWakeToken = ~std::uint64_t{0};

  Poller() = default;
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  bool open(std::string* error);
  // Watches fd for input; its events report `token`.
  bool add(int fd, std::uint64_t token, std::string* error);

  // Waits until an fd is ready, wake() is called, or the clock reaches `deadline`
  // (kNever: no limit; a past deadline: just look). Fills `ready` with tokens (the
  // wake-up reports kWakeToken) and returns how many.
  int wait(Time now, Time deadline, std::span<std::uint64_t> ready);
  // Makes the current or next wait() return at once. Safe from any thread.
  void wake();
  // The eventfd wake() writes, for a waiter that does not wait here (RxRing).
  int wake_fd() const { return wake_fd_; }

 private:
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
};

}  // namespace mroce::net
