// The packets a scheduled queue still holds, as (end of serialization, bytes) in FIFO
// order. A scheduled queue knows each packet's departure when it accepts it, so instead
// of waking at every departure it forgets the finished ones lazily, the next time it
// needs its occupancy. A power-of-two ring that grows to the longest queue seen; the
// head's end and size are kept beside the counters, so that a packet meeting a busy
// queue whose head is still serializing, or a queue that held only the head, need not
// read the ring.
#pragma once

#include <cstdint>
#include <memory>

#include "sim/time.h"

namespace mroce::sim {

class Departures {
 public:
  // Forgets every packet whose serialization ended at or before `now`.
  void drain(SimTime now) {
    if (now < head_end_) return;
    // The head is done, and its size is kept beside its end: a queue that held one
    // packet empties without reading the ring.
    std::uint32_t head = (head_ + 1) & mask_;
    std::uint32_t count = count_ - 1;
    std::uint64_t bytes = bytes_ - head_bytes_;
    while (count != 0 && ring_[head].end <= now) {
      bytes -= ring_[head].bytes;
      head = (head + 1) & mask_;
      --count;
    }
    head_ = head;
    count_ = count;
    bytes_ = bytes;
    if (count != 0) {
      head_end_ = ring_[head].end;
      head_bytes_ = ring_[head].bytes;
    } else {
      head_end_ = kSimNever;
    }
  }
  void push(SimTime end, std::uint32_t bytes) {
    if (count_ == mask_ + 1) grow();  // also when there is no ring yet
    ring_[(head_ + count_) & mask_] = {end, bytes};
    if (count_ == 0) {
      head_end_ = end;
      head_bytes_ = bytes;
    }
    ++count_;
    bytes_ += bytes;
  }
  void clear() {
    head_ = 0;
    count_ = 0;
    bytes_ = 0;
    head_end_ = kSimNever;
  }
  // Bytes of the packets not yet drained.
  std::uint64_t bytes() const { return bytes_; }
  // Bytes and packets still serializing or waiting at `now`, without draining.
  std::uint64_t bytes_at(SimTime now) const {
    std::uint64_t b = bytes_;
    for (std::uint32_t i = 0; i < count_ && at(i).end <= now; ++i) b -= at(i).bytes;
    return b;
  }
  std::uint32_t count_at(SimTime now) const {
    std::uint32_t i = 0;
    while (i < count_ && at(i).end <= now) ++i;
    return count_ - i;
  }

 private:
  struct Entry {
    SimTime end;
    std::uint32_t bytes;
  };
  const Entry& at(std::uint32_t i) const { return ring_[(head_ + i) & mask_]; }
  void grow() {
    const std::uint32_t capacity = ring_ ? 2 * (mask_ + 1) : 8;
    auto bigger = std::make_unique<Entry[]>(capacity);
    for (std::uint32_t i = 0; i < count_; ++i) bigger[i] = at(i);
    ring_ = std::move(bigger);
    head_ = 0;
    mask_ = capacity - 1;
  }

  std::unique_ptr<Entry[]> ring_;
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
  std::uint32_t mask_ = ~std::uint32_t{0};  // capacity - 1; none yet: count_ == mask_ + 1
  std::uint32_t head_bytes_ = 0;            // size of the oldest packet held
  std::uint64_t bytes_ = 0;
  SimTime head_end_ = kSimNever;  // end of the oldest packet held (never if none)
};

}  // namespace mroce::sim
