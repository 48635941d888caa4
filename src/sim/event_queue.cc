#include "sim/event_queue.h"

#include <algorithm>
#include <cassert>

namespace mroce::sim {

namespace {
// std::push_heap and friends build max-heaps: invert the order.
struct After {
  template <class E>
  bool operator()(const E& a, const E& b) const {
    return b < a;
  }
};
}  // namespace

EventQueue::EventQueue() {
  head_.fill(kNil);
}

void EventQueue::schedule(SimTime at, EventHandler* handler, std::uint64_t arg) {
  assert(at >= now_);
  ++size_;
  if (at - base_ < kHorizon) {
    insert_in_wheel(at, handler, arg);
  } else {
    overflow_.push_back(Later{at, seq_++, handler, arg});
    std::push_heap(overflow_.begin(), overflow_.end(), After{});
  }
}

void EventQueue::insert_in_wheel(SimTime at, EventHandler* handler, std::uint64_t arg) {
  std::uint32_t n = free_;
  if (n == kNil) {
    n = static_cast<std::uint32_t>(nodes_.size());
    nodes_.push_back({});
  } else {
    free_ = nodes_[n].next;
  }
  ++in_wheel_;
  const std::size_t s = slot_of(at);
  if (s != cursor_) {
    // Newest first; sorted when the cursor gets here.
    nodes_[n] = Node{at, handler, arg, head_[s]};
    head_[s] = n;
    return;
  }
  // The slot being run is sorted: insert after every event of equal or earlier time.
  nodes_[n] = Node{at, handler, arg, kNil};
  std::uint32_t prev = kNil;
  std::uint32_t cur = head_[s];
  while (cur != kNil && nodes_[cur].time <= at) {
    prev = cur;
    cur = nodes_[cur].next;
  }
  nodes_[n].next = cur;
  if (prev == kNil) {
    head_[s] = n;
  } else {
    nodes_[prev].next = n;
  }
}

void EventQueue::sort_slot(std::size_t s) {
  const std::uint32_t first = head_[s];
  if (nodes_[first].next == kNil) return;  // the usual case: one event
  scratch_.clear();
  for (std::uint32_t n = first; n != kNil; n = nodes_[n].next) scratch_.push_back(n);
  std::reverse(scratch_.begin(), scratch_.end());  // scheduling order
  std::stable_sort(scratch_.begin(), scratch_.end(), [this](std::uint32_t a, std::uint32_t b) {
    return nodes_[a].time < nodes_[b].time;
  });
  for (std::size_t i = 0; i + 1 < scratch_.size(); ++i) nodes_[scratch_[i]].next = scratch_[i + 1];
  nodes_[scratch_.back()].next = kNil;
  head_[s] = scratch_.front();
}

void EventQueue::pull_due_overflow() {
  while (!overflow_.empty() && overflow_.front().time - base_ < kHorizon) {
    std::pop_heap(overflow_.begin(), overflow_.end(), After{});
    const Later& l = overflow_.back();
    insert_in_wheel(l.time, l.handler, l.arg);
    overflow_.pop_back();
  }
}

void EventQueue::advance() {
  if (in_wheel_ == 0) {
    // Jump straight to the first overflow event.
    assert(!overflow_.empty());
    const SimTime t = overflow_.front().time;
    cursor_ = slot_of(t);
    base_ = t & ~((SimTime{1} << kSlotBits) - 1);
    pull_due_overflow();  // in (time, sequence) order into a sorted slot
    return;
  }
  std::size_t steps = 1;
  std::size_t s = (cursor_ + 1) & (kSlots - 1);
  while (head_[s] == kNil) {
    s = (s + 1) & (kSlots - 1);
    ++steps;
  }
  cursor_ = s;
  base_ += SimTime{steps} << kSlotBits;
  sort_slot(s);
  pull_due_overflow();
}

SimTime EventQueue::next_time() const {
  if (size_ == 0) return kSimNever;
  if (head_[cursor_] != kNil) return nodes_[head_[cursor_]].time;
  SimTime best = overflow_.empty() ? kSimNever : overflow_.front().time;
  if (in_wheel_ > 0) {
    std::size_t s = (cursor_ + 1) & (kSlots - 1);
    while (head_[s] == kNil) s = (s + 1) & (kSlots - 1);
    for (std::uint32_t n = head_[s]; n != kNil; n = nodes_[n].next) {
      best = std::min(best, nodes_[n].time);  // this slot is not sorted yet
    }
  }
  return best;
}

}  // namespace mroce::sim
