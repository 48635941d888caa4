// A FIFO over a power-of-two array. It grows only when full (amortised, and only as far
// as the high-water mark), so steady-state use never allocates. 24 bytes, so that the
// several a connection checks on every poll share few cache lines.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>

namespace mroce {

template <typename T>
class Ring {
 public:
  explicit Ring(std::size_t capacity = 8)
      : mask_(static_cast<std::uint32_t>(std::bit_ceil(capacity < 2 ? 2 : capacity)) - 1),
        items_(std::make_unique<T[]>(std::size_t{mask_} + 1)) {}

  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  T& front() { return items_[head_ & mask_]; }
  void pop() { ++head_; }
  void push(const T& v) {
    if (size() == std::size_t{mask_} + 1) grow();
    items_[tail_++ & mask_] = v;
  }
  void clear() { head_ = tail_ = 0; }
  // Room for n items without growing.
  void reserve(std::size_t n) {
    if (n > std::size_t{mask_} + 1) resize(std::bit_ceil(n));
  }
  // i-th element from the front.
  T& operator[](std::size_t i) { return items_[(head_ + i) & mask_]; }
  const T& operator[](std::size_t i) const { return items_[(head_ + i) & mask_]; }

 private:
  void grow() { resize(2 * (std::size_t{mask_} + 1)); }
  void resize(std::size_t capacity) {
    const std::size_t n = size();
    auto bigger = std::make_unique<T[]>(capacity);
    for (std::size_t i = 0; i < n; ++i) bigger[i] = (*this)[i];
    items_ = std::move(bigger);
    mask_ = static_cast<std::uint32_t>(capacity - 1);
    head_ = 0;
    tail_ = static_cast<std::uint32_t>(n);
  }

  std::uint32_t head_ = 0;  // free-running; the difference is the size
  std::uint32_t tail_ = 0;
  std::uint32_t mask_;
  std::unique_ptr<T[]> items_;
};

}  // namespace mroce
