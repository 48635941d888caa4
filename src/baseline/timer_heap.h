// The earliest deadline among many queue pairs: a binary min-heap indexed by slot, so a
// queue pair's one deadline can be moved or removed in O(log n).
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace mroce::baseline {

class TimerHeap {
 public:
  bool empty() const { return heap_.empty(); }
  Time top_time() const { return heap_.empty() ? kNever : heap_[0].time; }
  std::uint32_t top_slot() const { return heap_[0].slot; }

  // Room for slots [0, n) without growing.
  void reserve(std::size_t n) {
    heap_.reserve(n);
    if (where_.size() < n) where_.resize(n, kAbsent);
  }

  // Sets the deadline of `slot`; kNever removes it.
  void set(std::uint32_t slot, Time time) {
    if (slot >= where_.size()) where_.resize(slot + 1, kAbsent);
    std::uint32_t i = where_[slot];
    if (time == kNever) {
      if (i != kAbsent) remove_at(i);
      return;
    }
    if (i == kAbsent) {
      i = std::uint32_t(heap_.size());
      heap_.push_back({time, slot});
      where_[slot] = i;
      up(i);
      return;
    }
    const Time old = heap_[i].time;
    heap_[i].time = time;
    if (time < old) {
      up(i);
    } else {
      down(i);
    }
  }

 private:
  static constexpr std::uint32_t kAbsent = ~std::uint32_t{0};
  struct Entry {
    Time time;
    std::uint32_t slot;
  };

  // Ties go to the lower slot, so the order never depends on history.
  bool before(std::uint32_t a, std::uint32_t b) const {
    return heap_[a].time != heap_[b].time ? heap_[a].time < heap_[b].time
                                          : heap_[a].slot < heap_[b].slot;
  }
  void swap(std::uint32_t a, std::uint32_t b) {
    std::swap(heap_[a], heap_[b]);
    where_[heap_[a].slot] = a;
    where_[heap_[b].slot] = b;
  }
  void up(std::uint32_t i) {
    while (i > 0 && before(i, (i - 1) / 2)) {
      swap(i, (i - 1) / 2);
      i = (i - 1) / 2;
    }
  }
  void down(std::uint32_t i) {
    for (;;) {
      std::uint32_t best = i;
      const std::uint32_t l = 2 * i + 1, r = 2 * i + 2;
      if (l < heap_.size() && before(l, best)) best = l;
      if (r < heap_.size() && before(r, best)) best = r;
      if (best == i) return;
      swap(i, best);
      i = best;
    }
  }
  void remove_at(std::uint32_t i) {
    const std::uint32_t last = std::uint32_t(heap_.size() - 1);
    where_[heap_[i].slot] = kAbsent;
    if (i != last) {
      heap_[i] = heap_[last];
      where_[heap_[i].slot] = i;
    }
    heap_.pop_back();
    if (i < heap_.size()) {
      up(i);
      down(i);
    }
  }

  std::vector<Entry> heap_;
  std::vector<std::uint32_t> where_;  // heap index by slot
};

}  // namespace mroce::baseline
