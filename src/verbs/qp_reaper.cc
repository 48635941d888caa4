#include "verbs/qp_reaper.h"

#include <utility>

namespace mroce::verbs {

void QpReaper::park(std::unique_ptr<QueuePair> qp) {
  net::MutexLock lock(mutex_);
  parked_.push_back({std::move(qp), Clock::now() + kLinger});
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  wake_.notify_one();
}

void QpReaper::run() {
  for (;;) {
    std::unique_ptr<QueuePair> expired;
    {
      net::MutexLock lock(mutex_);
      while (parked_.empty() && !draining_) wake_.wait(mutex_);
      if (parked_.empty()) return;  // draining, nothing left
      const Clock::time_point due = parked_.front().due;
      if (Clock::now() < due) {
        wake_.wait_until(mutex_, due);
        continue;
      }
      expired = std::move(parked_.front().qp);
      parked_.pop_front();
    }
    // Destroyed outside the lock: it waits for the progress thread.
    expired.reset();
  }
}

void QpReaper::drain() {
  std::thread thread;
  {
    net::MutexLock lock(mutex_);
    draining_ = true;
    wake_.notify_one();
    thread = std::move(thread_);
  }
  if (thread.joinable()) thread.join();
  net::MutexLock lock(mutex_);
  draining_ = false;
}

}  // namespace mroce::verbs
