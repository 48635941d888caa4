// A binary min-heap of items keyed by their next deadline, with each item remembering
// its position so a deadline can move in O(log n). The engine keeps one entry per
// connection that has a timer, so the next deadline of thousands is O(1) to read.
#pragma once

#include <cstddef>
#include <vector>

#include "core/types.h"

namespace mroce {

// T must have members `std::size_t heap_index` and `Time heap_key`.
template <typename T>
class DeadlineHeap {
 public:
  static constexpr std::size_t kAbsent = ~std::size_t{0};

  bool empty() const { return items_.empty(); }
  T* top() const { return items_.front(); }
  Time top_key() const { return items_.empty() ? kNever : items_.front()->heap_key; }

  // Inserts, moves or (key == kNever) removes the item.
  void update(T* item, Time key) {
    if (key == kNever) {
      remove(item);
      return;
    }
    if (item->heap_index == kAbsent) {
      item->heap_key = key;
      item->heap_index = items_.size();
      items_.push_back(item);
      up(item->heap_index);
      return;
    }
    const Time old = item->heap_key;
    item->heap_key = key;
    if (key < old) {
      up(item->heap_index);
    } else {
      down(item->heap_index);
    }
  }

  void remove(T* item) {
    const std::size_t i = item->heap_index;
    if (i == kAbsent) return;
    item->heap_index = kAbsent;
    item->heap_key = kNever;
    T* last = items_.back();
    items_.pop_back();
    if (i == items_.size()) return;
    items_[i] = last;
    last->heap_index = i;
    up(i);
    down(last->heap_index);
  }

 private:
  void swap(std::size_t a, std::size_t b) {
    std::swap(items_[a], items_[b]);
    items_[a]->heap_index = a;
    items_[b]->heap_index = b;
  }
  void up(std::size_t i) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (items_[parent]->heap_key <= items_[i]->heap_key) return;
      swap(i, parent);
      i = parent;
    }
  }
  void down(std::size_t i) {
    for (;;) {
      const std::size_t l = 2 * i + 1, r = l + 1;
      std::size_t m = i;
      if (l < items_.size() && items_[l]->heap_key < items_[m]->heap_key) m = l;
      if (r < items_.size() && items_[r]->heap_key < items_[m]->heap_key) m = r;
      if (m == i) return;
      swap(i, m);
      i = m;
    }
  }

  std::vector<T*> items_;
};

}  // namespace mroce
