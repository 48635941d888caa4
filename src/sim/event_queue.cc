#include "sim/event_queue.h"

#include <algorithm>
#include <bit>
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
  last_.fill(kNil);
}

std::uint32_t EventQueue::grow() {
  nodes_.push_back({});
  return static_cast<std::uint32_t>(nodes_.size() - 1);
}

void EventQueue::insert_before_last(std::uint32_t last, std::uint32_t n) {
  const SimTime at = nodes_[n].time;
  assert(at >= now_);
  std::uint32_t prev = last;
  std::uint32_t cur = nodes_[last].next;
  while (nodes_[cur].time <= at) {
    prev = cur;
    cur = nodes_[cur].next;
  }
  nodes_[n].next = cur;
  nodes_[prev].next = n;
}

void EventQueue::sort_slot(std::size_t s) {
  std::uint64_t& word = unsorted_bits_[s >> 6];
  const std::uint64_t bit = std::uint64_t{1} << (s & 63);
  if (!(word & bit)) return;
  word &= ~bit;
  // Stable: events of equal time keep the order they were scheduled in.
  sort_scratch_.clear();
  const std::uint32_t last = last_[s];
  std::uint32_t n = last;
  do {
    n = nodes_[n].next;
    sort_scratch_.push_back(n);
  } while (n != last);
  std::stable_sort(
      sort_scratch_.begin(), sort_scratch_.end(),
      [this](std::uint32_t a, std::uint32_t b) { return nodes_[a].time < nodes_[b].time; });
  for (std::size_t i = 0; i + 1 < sort_scratch_.size(); ++i) {
    nodes_[sort_scratch_[i]].next = sort_scratch_[i + 1];
  }
  nodes_[sort_scratch_.back()].next = sort_scratch_.front();
  last_[s] = sort_scratch_.back();
}

std::size_t EventQueue::next_busy(std::size_t s) const {
  std::size_t w = s >> 6;
  std::uint64_t bits = busy_bits_[w] & (~std::uint64_t{0} << (s & 63));
  while (bits == 0) {
    w = (w + 1) & (busy_bits_.size() - 1);
    bits = busy_bits_[w];
  }
  return w << 6 | static_cast<std::size_t>(std::countr_zero(bits));
}

void EventQueue::push_overflow(SimTime at, EventHandler* handler, std::uint64_t arg) {
  overflow_.push_back(Later{at, seq_++, handler, arg});
  std::push_heap(overflow_.begin(), overflow_.end(), After{});
}

void EventQueue::pull_due_overflow() {
  while (!overflow_.empty() && overflow_.front().time - base_ < kHorizon) {
    std::pop_heap(overflow_.begin(), overflow_.end(), After{});
    const Later& l = overflow_.back();
    insert(alloc(l.time, l.handler, l.arg));
    overflow_.pop_back();
  }
}

bool EventQueue::load_next_slot() {
  if (size_ == 0) return false;
  if (busy_slots_ == 0) {
    // Jump straight to the first overflow event.
    const SimTime t = overflow_.front().time;
    cursor_ = slot_of(t);
    base_ = t & ~(kSlotWidth - 1);
  } else {
    const std::size_t s = next_busy((cursor_ + 1) & (kSlots - 1));
    const std::size_t steps = (s - cursor_) & (kSlots - 1);
    cursor_ = s;
    base_ += SimTime{steps} << kSlotBits;
    --busy_slots_;
  }
  batch_end_ = base_ + kSlotWidth;
  sort_slot(cursor_);
  // Before anything can be scheduled at their times, and in (time, sequence) order.
  pull_due_overflow();
  // Most slots hold one event: the next one is the head of the next busy slot, which
  // may still gain earlier events; fetching ahead for it is a guess, not a commitment.
  if (busy_slots_ > 0) {
    const std::uint32_t last = last_[next_busy((cursor_ + 1) & (kSlots - 1))];
    const Node& head = nodes_[nodes_[last].next];
    head.handler->prefetch(head.arg);
  }
  return true;
}

SimTime EventQueue::next_time() const {
  if (size_ == 0) return kSimNever;
  if (last_[cursor_] != kNil) return nodes_[nodes_[last_[cursor_]].next].time;
  SimTime best = overflow_.empty() ? kSimNever : overflow_.front().time;
  if (busy_slots_ > 0) {
    std::size_t s = (cursor_ + 1) & (kSlots - 1);
    s = next_busy(s);
    const std::uint32_t last = last_[s];
    std::uint32_t n = last;
    do {
      n = nodes_[n].next;
      best = std::min(best, nodes_[n].time);
    } while (n != last);
  }
  return best;
}

}  // namespace mroce::sim
