// A shared receive queue: receives posted once and taken by whichever stream attached to
// it opens a message first (Verbs' SRQ). Its ring is sized at creation; taking a receive
// never allocates.
#pragma once

#include <cstdint>
#include <vector>

#include "core/stream.h"

namespace mroce {

class SharedRecvQueue {
 public:
  explicit SharedRecvQueue(std::uint32_t depth);

  std::uint32_t depth() const { return depth_; }
  std::uint32_t count() const { return tail_ - head_; }
  bool full() const { return count() >= depth_; }
  void push(const RecvWqe& r) { ring_[tail_++ & mask_] = r; }
  // The oldest receive; true when this take left fewer than the armed limit (which
  // disarms it, as Verbs' limit event fires once per arming).
  bool take(RecvWqe* out);

  std::uint32_t limit() const { return limit_; }
  void set_limit(std::uint32_t limit) { limit_ = limit; }

 private:
  std::vector<RecvWqe> ring_;
  std::uint32_t mask_;
  std::uint32_t depth_;
  std::uint32_t head_ = 0;
  std::uint32_t tail_ = 0;
  std::uint32_t limit_ = 0;  // 0: disarmed
};

}  // namespace mroce
