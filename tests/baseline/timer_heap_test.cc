// The baseline's timer heap against a plain model: the top is always the earliest
// deadline, ties going to the lowest slot, under random sets, moves and removals.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <utility>

#include "baseline/timer_heap.h"

namespace mroce::baseline {
namespace {

TEST(TimerHeap, TopIsTheEarliestDeadlineAndTiesGoToTheLowestSlot) {
  TimerHeap heap;
  heap.reserve(8);  // slots beyond it grow the index
  std::map<std::uint32_t, Time> model;
  std::mt19937_64 rng(6);
  EXPECT_TRUE(heap.empty());
  EXPECT_EQ(heap.top_time(), kNever);
  for (int step = 0; step < 8000; ++step) {
    const std::uint32_t slot = std::uint32_t(rng() % 50);
    if (rng() % 4 == 0) {
      heap.set(slot, kNever);
      model.erase(slot);
    } else {
      const Time t = rng() % 32;  // many ties
      heap.set(slot, t);
      model[slot] = t;
    }
    ASSERT_EQ(heap.empty(), model.empty());
    if (model.empty()) {
      ASSERT_EQ(heap.top_time(), kNever);
      continue;
    }
    std::set<std::pair<Time, std::uint32_t>> order;
    for (const auto& [s, t] : model) order.insert({t, s});
    ASSERT_EQ(heap.top_time(), order.begin()->first);
    ASSERT_EQ(heap.top_slot(), order.begin()->second);
    if (step % 500 == 499) {
      // Taking the top again and again yields every deadline in (time, slot) order.
      for (const auto& [t, s] : order) {
        ASSERT_EQ(heap.top_time(), t);
        ASSERT_EQ(heap.top_slot(), s);
        heap.set(s, kNever);
      }
      ASSERT_TRUE(heap.empty());
      model.clear();
    }
  }
}

}  // namespace
}  // namespace mroce::baseline
