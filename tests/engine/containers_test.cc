// The engine's small containers: the FIFO ring and the path set.
#include <gtest/gtest.h>

#include <deque>
#include <vector>

#include "core/path_mask.h"
#include "core/ring.h"

namespace mroce {
namespace {

TEST(Ring, GrowsWhileWrappedAndKeepsFifoOrder) {
  Ring<int> ring(2);
  std::deque<int> model;
  int next = 0;
  // Pushes outpace pops, so the ring grows many times with its head mid-array.
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 3; ++i) {
      ring.push(next);
      model.push_back(next++);
    }
    ring.pop();
    model.pop_front();
    ASSERT_EQ(ring.size(), model.size());
    ASSERT_EQ(ring.front(), model.front());
    for (std::size_t i = 0; i < model.size(); i += 37) ASSERT_EQ(ring[i], model[i]);
  }
  while (!model.empty()) {
    ASSERT_EQ(ring.front(), model.front());
    ring.pop();
    model.pop_front();
  }
  EXPECT_TRUE(ring.empty());
}

std::vector<std::size_t> members(const PathMask& m, std::size_t from) {
  std::vector<std::size_t> out;
  for (std::size_t i = m.next(from); i < m.size(); i = m.next(i + 1)) out.push_back(i);
  return out;
}

TEST(PathMask, WalksMembersInOrderAcrossWords) {
  PathMask m;
  m.reset(200, false);
  EXPECT_EQ(m.next(0), 200u);
  for (std::size_t i : {0u, 63u, 64u, 130u, 199u}) m.set(i);
  EXPECT_EQ(members(m, 0), (std::vector<std::size_t>{0, 63, 64, 130, 199}));
  EXPECT_EQ(members(m, 65), (std::vector<std::size_t>{130, 199}));
  m.clear(130);
  EXPECT_FALSE(m.test(130));
  EXPECT_EQ(members(m, 65), (std::vector<std::size_t>{199}));
  EXPECT_EQ(m.next(200), 200u);
}

TEST(PathMask, ResetToFullHoldsExactlyTheFirstN) {
  for (std::size_t n : {1u, 16u, 63u, 64u, 65u, 256u}) {
    PathMask m;
    m.reset(n, true);
    const std::vector<std::size_t> all = members(m, 0);
    ASSERT_EQ(all.size(), n) << n;
    EXPECT_EQ(all.back(), n - 1) << n;
  }
}

}  // namespace
}  // namespace mroce
