#include "core/shared_recv_queue.h"

#include <algorithm>
#include <bit>

namespace mroce {

SharedRecvQueue::SharedRecvQueue(std::uint32_t depth)
    : ring_(std::bit_ceil(std::max<std::uint32_t>(depth, 1))),
      mask_(static_cast<std::uint32_t>(ring_.size() - 1)),
      depth_(depth) {}

bool SharedRecvQueue::take(RecvWqe* out) {
  *out = ring_[head_++ & mask_];
  if (limit_ == 0 || count() >= limit_) return false;
  limit_ = 0;
  return true;
}

}  // namespace mroce
