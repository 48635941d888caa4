// The discrete-event core: a timing wheel of 4,096 one-nanosecond slots (a 4 us
// horizon, wide enough for a packet's hop) backed by a binary heap for later events
// (timers, scripted actions). A slot is a list of event nodes: scheduling pushes onto
// it in O(1), and when the cursor reaches the slot its events are sorted by time,
// stably. Later events enter the wheel before anything else can be scheduled at their
// time, so events of equal time run in the order they were scheduled: a run is a pure
// function of its inputs. Nodes come from one array and are reused most recently
// freed first, which keeps the hot ones in cache; once the array has grown to the
// run's peak, scheduling never allocates.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace mroce::sim {

class EventHandler {
 public:
  virtual void on_event(SimTime now, std::uint64_t arg) = 0;

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
  void schedule(SimTime at, EventHandler* handler, std::uint64_t arg = 0);

  // Runs the earliest event. Returns false when there was none.
  bool run_one() {
    if (size_ == 0) return false;
    if (head_[cursor_] == kNil) advance();
    const std::uint32_t n = head_[cursor_];
    Node& node = nodes_[n];
    head_[cursor_] = node.next;
    const SimTime t = node.time;
    EventHandler* const handler = node.handler;
    const std::uint64_t arg = node.arg;
    node.next = free_;
    free_ = n;
    --in_wheel_;
    --size_;
    now_ = t;
    ++executed_;
    handler->on_event(t, arg);
    return true;
  }

 private:
  static constexpr unsigned kSlotBits = 10;  // a slot spans 1,024 ps
  static constexpr std::size_t kSlots = 4096;
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
  void insert_in_wheel(SimTime at, EventHandler* handler, std::uint64_t arg);
  // The cursor's slot is empty: move to the next non-empty one and sort it.
  void advance();
  void sort_slot(std::size_t s);
  void pull_due_overflow();

  std::vector<Node> nodes_;
  std::uint32_t free_ = kNil;
  // Slot lists: the cursor's is sorted, the others are newest first until sorted.
  std::array<std::uint32_t, kSlots> head_;
  std::vector<std::uint32_t> scratch_;
  std::size_t cursor_ = 0;
  SimTime base_ = 0;  // start time of the cursor's slot
  std::size_t in_wheel_ = 0;
  std::vector<Later> overflow_;  // min-heap
  SimTime now_ = 0;
  std::size_t size_ = 0;
  std::uint64_t seq_ = 0;
  std::uint64_t executed_ = 0;
};

}  // namespace mroce::sim
