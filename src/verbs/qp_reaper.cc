#include "verbs/qp_reaper.h"

#include <algorithm>
#include <thread>

namespace mroce::verbs {

void QpReaper::park(std::unique_ptr<QueuePair> qp) {
  std::vector<Parked> expired;
  {
    net::MutexLock lock(mutex_);
    const auto cutoff = Clock::now() - kLinger;
    auto keep = std::partition(parked_.begin(), parked_.end(),
                               [&](const Parked& p) { return p.since > cutoff; });
    std::move(keep, parked_.end(), std::back_inserter(expired));
    parked_.erase(keep, parked_.end());
    parked_.push_back({std::move(qp), Clock::now()});
  }
  // Destroyed outside the lock: it waits for the progress thread.
}

void QpReaper::drain() {
  std::vector<Parked> all;
  {
    net::MutexLock lock(mutex_);
    all.swap(parked_);
  }
  Clock::time_point latest{};
  for (const Parked& p : all) latest = std::max(latest, p.since);
  if (!all.empty()) std::this_thread::sleep_until(latest + kLinger);
}

}  // namespace mroce::verbs
