#include "sim/event_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "sim/rng.h"

namespace mroce::sim {
namespace {

struct Recorder final : EventHandler {
  std::vector<std::pair<SimTime, std::uint64_t>> seen;
  void on_event(SimTime now, std::uint64_t arg) override { seen.emplace_back(now, arg); }
};

TEST(EventQueue, RunsInTimeOrderAndTiesInInsertionOrder) {
  EventQueue q;
  Recorder r;
  q.schedule(30, &r, 1);
  q.schedule(10, &r, 2);
  q.schedule(30, &r, 3);
  q.schedule(10, &r, 4);
  q.schedule(20 * kMs, &r, 5);  // beyond the wheel's horizon
  q.schedule(20 * kMs, &r, 6);
  EXPECT_EQ(q.next_time(), 10u);
  while (q.run_one()) {
  }
  const std::vector<std::pair<SimTime, std::uint64_t>> want = {
      {10, 2}, {10, 4}, {30, 1}, {30, 3}, {20 * kMs, 5}, {20 * kMs, 6}};
  EXPECT_EQ(r.seen, want);
  EXPECT_EQ(q.executed(), 6u);
  EXPECT_TRUE(q.empty());
}

// Schedules from inside handlers, at random distances (many beyond the horizon and many
// ties), and checks the order against a stable sort of everything scheduled.
struct Chain final : EventHandler {
  EventQueue* q;
  Rng rng{7};
  std::uint64_t next_id = 0;
  std::vector<std::tuple<SimTime, std::uint64_t>> scheduled;  // (time, id) in schedule order
  std::vector<std::uint64_t> ran;
  void add(SimTime at) {
    scheduled.emplace_back(at, next_id);
    q->schedule(at, this, next_id++);
  }
  void on_event(SimTime now, std::uint64_t id) override {
    ran.push_back(id);
    if (next_id >= 200000) return;
    const int n = static_cast<int>(rng.below(3));
    for (int i = 0; i < n; ++i) {
      const std::uint64_t pick = rng.below(10);
      SimTime d = pick < 3 ? 0 : pick < 8 ? rng.below(3 * kUs) : rng.below(50 * kUs);
      if (pick == 9) d = d - d % kUs;  // coarse times: many exact ties
      add(now + d);
    }
  }
};

TEST(EventQueue, MatchesAStableSortUnderRandomLoad) {
  EventQueue q;
  Chain c;
  c.q = &q;
  for (int i = 0; i < 64; ++i) c.add(c.rng.below(10 * kUs));
  SimTime last = 0;
  while (!q.empty()) {
    const SimTime t = q.next_time();
    ASSERT_GE(t, last);
    q.run_one();
    ASSERT_EQ(q.now(), t);
    last = t;
  }
  auto want = c.scheduled;
  std::stable_sort(want.begin(), want.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  ASSERT_EQ(c.ran.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(c.ran[i], std::get<1>(want[i])) << i;
}

// Thousands of events a few picoseconds apart in one slot, as when thousands of hosts act
// in step, scheduled out of order and with ties; more join the slot while it runs.
TEST(EventQueue, ACrowdedSlotRunsInTimeOrderTiesInSchedulingOrder) {
  struct Crowd final : EventHandler {
    EventQueue* q;
    Rng rng{11};
    std::vector<std::tuple<SimTime, std::uint64_t>> scheduled;
    std::vector<std::uint64_t> ran;
    void add(SimTime at) {
      scheduled.emplace_back(at, scheduled.size());
      q->schedule(at, this, scheduled.size() - 1);
    }
    void on_event(SimTime now, std::uint64_t id) override {
      ran.push_back(id);
      if (id % 7 == 0 && scheduled.size() < 6000) add(now + rng.below(4));
    }
  } c;
  EventQueue q;
  c.q = &q;
  const SimTime slot = SimTime{1} << 20;  // where a 128 ps slot starts
  for (int i = 0; i < 5000; ++i) c.add(slot + 127 - c.rng.below(128));
  while (q.run_one()) {
  }
  auto want = c.scheduled;
  std::stable_sort(want.begin(), want.end(),
                   [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  ASSERT_EQ(c.ran.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ(c.ran[i], std::get<1>(want[i])) << i;
}

TEST(EventQueue, JumpsAcrossEmptyStretches) {
  EventQueue q;
  Recorder r;
  q.schedule(5 * kSec, &r, 1);
  q.run_one();
  q.schedule(5 * kSec + 3 * kUs, &r, 2);
  q.schedule(5 * kSec + 1, &r, 3);
  q.schedule(9 * kSec, &r, 4);
  while (q.run_one()) {
  }
  const std::vector<std::pair<SimTime, std::uint64_t>> want = {
      {5 * kSec, 1}, {5 * kSec + 1, 3}, {5 * kSec + 3 * kUs, 2}, {9 * kSec, 4}};
  EXPECT_EQ(r.seen, want);
}

// The handler of the next event is asked to fetch ahead for it before the current one
// runs, whether the two share a wheel slot or not.
struct Prefetched final : EventHandler {
  std::vector<std::uint64_t> hinted;         // args prefetch was called with, in order
  std::vector<std::uint64_t> hinted_before;  // per event run: was its arg hinted already?
  void on_event(SimTime, std::uint64_t arg) override {
    hinted_before.push_back(std::count(hinted.begin(), hinted.end(), arg));
  }
  void prefetch(std::uint64_t arg) const override {
    const_cast<Prefetched*>(this)->hinted.push_back(arg);
  }
};

TEST(EventQueue, AsksTheNextEventsHandlerToFetchAhead) {
  EventQueue q;
  Prefetched h;
  q.schedule(1 * kUs, &h, 1);
  q.schedule(1 * kUs + 1, &h, 2);  // the same 128 ps slot as the first
  q.schedule(5 * kUs, &h, 3);      // a later slot
  q.schedule(9 * kUs, &h, 4);      // and another
  while (q.run_one()) {
  }
  // Moving the cursor to a slot hints the head of the next busy one; within a slot, each
  // event hints the one after it. Nothing runs before the first.
  EXPECT_EQ(h.hinted_before, (std::vector<std::uint64_t>{0, 1, 1, 1}));
}

TEST(Time, ConvertsExactly) {
  EXPECT_EQ(from_ns(1234), 1'234'000u);
  EXPECT_EQ(to_ns(from_ns(987654321)), 987654321u);
  EXPECT_EQ(to_ns(1999), 1u);
  EXPECT_EQ(from_ns(kNever), kSimNever);
  EXPECT_EQ(serialization_time(4200, 100'000'000'000), 336'000u);  // 80 ps per byte
  EXPECT_EQ(serialization_time(1, 400'000'000'000), 20u);
  EXPECT_EQ(serialization_time(1, 3'000'000'000), 2667u);  // rounded up
}

}  // namespace
}  // namespace mroce::sim
