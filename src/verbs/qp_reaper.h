// Destroys queue pairs a little after the program did.
//
// The engine acknowledges received data after a short delay. A program that destroys its
// QP right after its last receive completed (ibv_rc_pingpong's client does) would take the
// stream away before that acknowledgement left; the connection then closes and the peer's
// last send fails with "retry exceeded", where a NIC would have acknowledged it at once.
// So a destroyed QP lingers, silenced (completion_filter.h), for kLinger before the
// engine forgets it. A thread of the reaper's own destroys it when its time is up, so the
// last QP of a connection is destroyed (and the connection closed, SPEC §4.3) even when the
// program destroys nothing after it; closing the device waits for the lingering ones.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <thread>

#include "mroce/mroce.h"
#include "net/thread_annotations.h"

namespace mroce::verbs {

class QpReaper {
 public:
  static constexpr std::chrono::milliseconds kLinger{100};

  QpReaper() = default;
  QpReaper(const QpReaper&) = delete;
  QpReaper& operator=(const QpReaper&) = delete;
  ~QpReaper() { drain(); }

  // Takes a destroyed QP; the reaper's thread destroys it kLinger later.
  void park(std::unique_ptr<QueuePair> qp) MROCE_EXCLUDES(mutex_);
  // Waits until every parked QP lingered long enough and is destroyed; stops the thread.
  void drain() MROCE_EXCLUDES(mutex_);

 private:
  using Clock = std::chrono::steady_clock;
  struct Parked {
    std::unique_ptr<QueuePair> qp;
    Clock::time_point due;
  };
  void run() MROCE_EXCLUDES(mutex_);

  net::Mutex mutex_;
  std::condition_variable_any wake_;
  std::deque<Parked> parked_ MROCE_GUARDED_BY(mutex_);  // in order of due time
  bool draining_ MROCE_GUARDED_BY(mutex_) = false;
  std::thread thread_ MROCE_GUARDED_BY(mutex_);
};

}  // namespace mroce::verbs
