#include "net/completion_ring.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mroce::net {

CompletionRing::~CompletionRing() {
  if (event_fd_ >= 0) close(event_fd_);
}

bool CompletionRing::open(std::string* error) {
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return false;
  }
  return true;
}

void CompletionRing::push(const Completion& c) {
  bool signal = false;
  {
    MutexLock lock(mutex_);
    items_.push_back(c);
    size_.store(items_.size(), std::memory_order_release);
    // Completions carry no solicited bit: a notification for solicited events only
    // fires on received messages and on errors, the ones a solicited request can mark.
    if (armed_ && (!solicited_only_ || c.is_recv || c.status != WcStatus::kSuccess)) {
      armed_ = false;
      signal = true;
    }
  }
  if (signal) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t r = write(event_fd_, &one, sizeof one);
  }
}

int CompletionRing::pop(Completion* out, int max) {
  if (max <= 0 || empty()) return 0;
  MutexLock lock(mutex_);
  int n = 0;
  while (n < max && !items_.empty()) {
    out[n++] = items_.front();
    items_.pop_front();
  }
  size_.store(items_.size(), std::memory_order_release);
  return n;
}

void CompletionRing::request_notify(bool solicited_only) {
  MutexLock lock(mutex_);
  armed_ = true;
  solicited_only_ = solicited_only;
}

}  // namespace mroce::net
