#include "net/completion_queue.h"

namespace mroce::net {

int NetCompletionQueue::poll(Completion* out, int max) {
  int n = ring_->pop(out, max);
  if (n == 0 && max > 0 && core_->datapath().mode() != Progress::kThread) {
    core_->datapath().progress();
    n = ring_->pop(out, max);
  }
  return n;
}

}  // namespace mroce::net
