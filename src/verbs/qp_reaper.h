// Destroys queue pairs a little after the program did.
//
// The engine acknowledges received data after a short delay. A program that destroys its
// QP right after its last receive completed (ibv_rc_pingpong's client does) would take the
// stream away before that acknowledgement left; the connection then closes and the peer's
// last send fails with "retry exceeded", where a NIC would have acknowledged it at once.
// So a destroyed QP lingers, silenced (completion_filter.h), for kLinger before the
// engine forgets it; closing the device waits for the lingering ones.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "mroce/mroce.h"
#include "net/thread_annotations.h"

namespace mroce::verbs {

class QpReaper {
 public:
  static constexpr std::chrono::milliseconds kLinger{100};

  // Takes a destroyed QP; destroys earlier ones whose time is up.
  void park(std::unique_ptr<QueuePair> qp) MROCE_EXCLUDES(mutex_);
  // Waits until every parked QP lingered long enough, then destroys them all.
  void drain() MROCE_EXCLUDES(mutex_);

 private:
  using Clock = std::chrono::steady_clock;
  struct Parked {
    std::unique_ptr<QueuePair> qp;
    Clock::time_point since;
  };
  net::Mutex mutex_;
  std::vector<Parked> parked_ MROCE_GUARDED_BY(mutex_);
};

}  // namespace mroce::verbs
