// A FIFO of queue-pair slots waiting to send: a ring that grows only when the number of
// queue pairs does, never per packet.
#pragma once

#include <cstdint>
#include <vector>

namespace mroce::baseline {

class SlotQueue {
 public:
  bool empty() const { return size_ == 0; }
  // Room for n slots without growing.
  void reserve(std::size_t n) {
    while (ring_.size() < n) grow();
  }
  void push(std::uint32_t slot) {
    if (size_ == ring_.size()) grow();
    ring_[(head_ + size_) % ring_.size()] = slot;
    ++size_;
  }
  std::uint32_t pop() {
    const std::uint32_t slot = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --size_;
    return slot;
  }

 private:
  void grow() {
    std::vector<std::uint32_t> bigger(ring_.empty() ? 16 : 2 * ring_.size());
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) % ring_.size()];
    ring_.swap(bigger);
    head_ = 0;
  }

  std::vector<std::uint32_t> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace mroce::baseline
