// The discrete-event core: a timing wheel of 131,072 slots of 128 ps (a 16 us horizon,
// enough for a packet's hop behind a full queue) backed by a binary heap for later
// events (timers, scripted actions). A slot is a list of events (circular, named by its
// last node) in scheduling order; one that received an event earlier than its last is
// marked, and sorted by time, ties kept in scheduling order, when the cursor reaches it.
// Sorting late, not inserting in place, matters when thousands of hosts act in step:
// their packets then crowd a slot with times a few picoseconds apart, and each insertion
// in place walked the whole list. Events scheduled into the cursor's own slot are still
// inserted in place. Later events enter the wheel before anything else can be scheduled
// at their time, so events of equal time always run in the order they were scheduled: a
// run is a pure function of its inputs. List nodes come from one array and are reused
// most recently freed first; once it has grown to the run's peak, scheduling never
// allocates.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace mroce::sim {

class EventHandler {
 public:
  virtual void on_event(SimTime now, std::uint64_t arg) = 0;
  // Called one event ahead of on_event(arg), to start fetching what that reads first:
  // the simulator's own time is mostly cache misses on packets and nodes spread over
  // a large heap, and one event's work is long enough to hide one.
  virtual void prefetch(std::uint64_t /*arg*/) const {}

 protected:
  ~EventHandler() = default;
};

class EventQueue {
 public:
  EventQueue();

  SimTime now() const { return now_; }
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  std::uint64_t executed() const { return executed_; }
  // Time of the earliest pending event (kSimNever if none).
  SimTime next_time() const;

  // `at` must not be in the past.
  void schedule(SimTime at, EventHandler* handler, std::uint64_t arg = 0) {
    ++size_;
    if (at - base_ < kHorizon || at < batch_end_) {
      insert(alloc(at, handler, arg));
    } else {
      push_overflow(at, handler, arg);
    }
  }

  // Runs the earliest event. Returns false when there was none.
  bool run_one() { return run_one_until(kSimNever); }

  // Runs the earliest event if it is due at or before `limit`; returns whether it ran.
  bool run_one_until(SimTime limit) {
    std::uint32_t last = last_[cursor_];
    if (last == kNil) {
      if (!load_next_slot()) return false;
      last = last_[cursor_];
    }
    const std::uint32_t n = nodes_[last].next;  // the head
    Node& node = nodes_[n];
    const SimTime t = node.time;
    if (t > limit) return false;
    EventHandler* const handler = node.handler;
    const std::uint64_t arg = node.arg;
    if (n == last) {
      last_[cursor_] = kNil;
      busy_bits_[cursor_ >> 6] &= ~(std::uint64_t{1} << (cursor_ & 63));
    } else {
      nodes_[last].next = node.next;
      // The next event's handler was fetched while this one was the next: let it fetch
      // its own data, and start on the handler after it.
      const Node& next = nodes_[node.next];
      next.handler->prefetch(next.arg);
      __builtin_prefetch(nodes_[next.next].handler);
    }
    node.next = free_;
    free_ = n;
    now_ = t;
    --size_;
    ++executed_;
    handler->on_event(t, arg);
    return true;
  }

 private:
  // A slot spans 128 ps: narrow, so that a slot holds few events even on a fabric of
  // thousands of hosts, and an insertion out of order walks a short list. (A k=32
  // fat-tree runs 146 events per simulated ns: 256 ps slots took that run 15% longer.)
  static constexpr unsigned kSlotBits = 7;
  static constexpr SimTime kSlotWidth = SimTime{1} << kSlotBits;
  static constexpr std::size_t kSlots = 131072;
  static constexpr SimTime kHorizon = SimTime{kSlots} << kSlotBits;
  static constexpr std::uint32_t kNil = ~std::uint32_t{0};

  struct Node {
    SimTime time;
    EventHandler* handler;
    std::uint64_t arg;
    std::uint32_t next;
  };
  struct Later {  // beyond the horizon: ordered by (time, sequence)
    SimTime time;
    std::uint64_t seq;
    EventHandler* handler;
    std::uint64_t arg;
    bool operator<(const Later& o) const {
      return time < o.time || (time == o.time && seq < o.seq);
    }
  };

  static std::size_t slot_of(SimTime t) { return (t >> kSlotBits) & (kSlots - 1); }
  std::uint32_t alloc(SimTime at, EventHandler* handler, std::uint64_t arg) {
    std::uint32_t n = free_;
    if (n == kNil) {
      n = grow();
    } else {
      free_ = nodes_[n].next;
    }
    nodes_[n] = Node{at, handler, arg, kNil};
    return n;
  }
  // Into its slot, after every event of equal or earlier time.
  void insert(std::uint32_t n) {
    Node& node = nodes_[n];
    const std::size_t s = node.time < batch_end_ ? cursor_ : slot_of(node.time);
    const std::uint32_t last = last_[s];
    if (last == kNil) {
      node.next = n;
      last_[s] = n;
      busy_bits_[s >> 6] |= std::uint64_t{1} << (s & 63);
      busy_slots_ += s != cursor_;
    } else if (node.time >= nodes_[last].time || s != cursor_) {
      if (node.time < nodes_[last].time) unsorted_bits_[s >> 6] |= std::uint64_t{1} << (s & 63);
      node.next = nodes_[last].next;
      nodes_[last].next = n;
      last_[s] = n;
    } else {
      insert_before_last(last, n);
    }
  }
  void insert_before_last(std::uint32_t last, std::uint32_t n);
  // Sorts slot s by time, ties in list order, if an insertion left it out of order.
  void sort_slot(std::size_t s);
  // The first slot holding events at or after `s`, wrapping; one must exist.
  std::size_t next_busy(std::size_t s) const;
  std::uint32_t grow();
  void push_overflow(SimTime at, EventHandler* handler, std::uint64_t arg);
  // The cursor's slot is used up: moves the cursor to the next slot holding events.
  // Returns false when no event is left.
  bool load_next_slot();
  void pull_due_overflow();

  std::vector<Node> nodes_;
  std::uint32_t free_ = kNil;
  std::array<std::uint32_t, kSlots> last_;  // each slot's last node, or kNil
  // Bit s set when slot s holds events: finding the next one skips 64 empty slots a step.
  std::array<std::uint64_t, kSlots / 64> busy_bits_{};
  // Bit s set when slot s (not the cursor's) holds events out of time order.
  std::array<std::uint64_t, kSlots / 64> unsorted_bits_{};
  std::vector<std::uint32_t> sort_scratch_;  // sort_slot's, kept to reuse its capacity
  std::size_t busy_slots_ = 0;               // future slots holding events (the cursor's excluded)
  std::size_t cursor_ = 0;
  SimTime base_ = 0;                // start time of the cursor's slot
  SimTime batch_end_ = kSlotWidth;  // end of the cursor's slot
  std::vector<Later> overflow_;     // min-heap
  SimTime now_ = 0;
  std::size_t size_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t executed_ = 0;
};

}  // namespace mroce::sim
