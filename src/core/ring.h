// A FIFO over a power-of-two array. It grows only when full (amortised, and only as far
// as the high-water mark), so steady-state use never allocates.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace mroce {

template <typename T>
class Ring {
 public:
  explicit Ring(std::size_t capacity = 8) : items_(std::bit_ceil(capacity < 2 ? 2 : capacity)) {}

  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  T& front() { return items_[head_ & (items_.size() - 1)]; }
  void pop() { ++head_; }
  void push(const T& v) {
    if (size() == items_.size()) grow();
    items_[tail_++ & (items_.size() - 1)] = v;
  }
  void clear() { head_ = tail_ = 0; }
  // i-th element from the front.
  T& operator[](std::size_t i) { return items_[(head_ + i) & (items_.size() - 1)]; }
  const T& operator[](std::size_t i) const { return items_[(head_ + i) & (items_.size() - 1)]; }

 private:
  void grow() {
    std::vector<T> bigger(items_.size() * 2);
    for (std::size_t i = 0; i < size(); ++i) bigger[i] = (*this)[i];
    tail_ = size();
    head_ = 0;
    items_.swap(bigger);
  }

  std::vector<T> items_;
  std::size_t head_ = 0;
  std::size_t tail_ = 0;
};

}  // namespace mroce
