// PathSet: the verbs keep every total equal to what the paths say, and validate()
// notices when a path is changed behind the verbs' back.
#include "core/path_set.h"

#include <gtest/gtest.h>

#include <vector>

namespace mroce {
namespace {

constexpr std::uint32_t kIsn = 1000;
constexpr std::uint32_t kWindow = 2000;

// Sends one packet of `bytes` on path i, as the connection does.
TxEntry& send(PathSet& set, std::size_t i, std::uint16_t bytes) {
  TxPath& p = set[i];
  TxEntry& e = set.open(p, p.snd_nxt++);
  e.bytes = bytes;
  e.sent = true;
  set.sent(p, e);
  return e;
}

TEST(PathSet, AddedPathsJoinTheTotalsWithoutMovingTheOthers) {
  PathSet set;
  set.reset(2, 8, kMicrosecond, kIsn, kWindow, 4);
  const TxPath* first = &set[0];
  send(set, 0, 500);
  TxPath& added = set.add(8, kMicrosecond, kIsn, 3000);
  set.validate();
  EXPECT_EQ(&set[0], first);  // callers hold references across add()
  EXPECT_EQ(added.id, 2u);
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(set.active_paths(), 3u);
  EXPECT_EQ(set.active_cwnd(), 2u * kWindow + 3000u);
  EXPECT_EQ(set.inflight(), 500u);
  send(set, 2, 700);
  set.add(8, kMicrosecond, kIsn, kWindow);
  set.validate();
  EXPECT_EQ(set.inflight(), 1200u);
  // The new paths take their turns like the others.
  bool picked[4] = {};
  for (int i = 0; i < 16; ++i) {
    if (TxPath* p = set.pick(0)) {
      picked[p->id] = true;
      send(set, p->id, 100);
    }
  }
  EXPECT_TRUE(picked[2] && picked[3]);
  set.validate();
}

TEST(PathSet, VerbsKeepTheTotals) {
  PathSet set;
  set.reset(4, 8, kMicrosecond, kIsn, kWindow);
  set.validate();
  EXPECT_EQ(set.active_paths(), 4u);
  EXPECT_EQ(set.active_cwnd(), 4u * kWindow);

  TxEntry& a = send(set, 0, 500);
  TxEntry& b = send(set, 0, 300);
  send(set, 1, 200);
  set.validate();
  EXPECT_EQ(set.inflight(), 1000u);

  EXPECT_TRUE(set.lost(set[0], a));
  EXPECT_FALSE(set.lost(set[0], a));  // a second declaration counts once
  set.validate();
  EXPECT_EQ(set.inflight(), 500u);
  EXPECT_EQ(set.lost_paths(), 1u);

  set.retransmitting(set[0], a);
  a.bytes = 400;
  set.sent(set[0], a);
  set.acknowledged(set[0], b);
  set.validate();
  EXPECT_EQ(set.lost_paths(), 0u);
  EXPECT_EQ(set.inflight(), 600u);

  set.probes_due(set[2], 2);
  set.probe_sent(set[2]);
  set.validate();
  EXPECT_EQ(set.tail_probes_due(), 1u);

  set.set_cwnd(set[3], 500);
  set.failed(set[2], kIsn, 100);
  set.failed(set[0], kIsn, 100);  // takes its packets out of flight
  set.validate();
  EXPECT_EQ(set.failed_paths(), 2u);
  EXPECT_EQ(set.tail_probes_due(), 0u);
  EXPECT_EQ(set.inflight(), 200u);
  EXPECT_EQ(set.active_cwnd(), kWindow + 500u);

  set.recovered(set[2]);
  set.validate();
  EXPECT_EQ(set.active_cwnd(), kWindow + 600u);
  EXPECT_EQ(set.active_paths(), 3u);
}

TEST(PathSet, ARingIsTakenWithDataGrowsToTheWindowAndGoesBackWhenSettled) {
  EntryPool pool;
  PathSet set(pool);
  set.reset(2, 64, kMicrosecond, kIsn, 100 * kWindow);
  EXPECT_EQ(set[0].capacity(), 0u);  // an idle path holds no ring
  std::vector<std::uint32_t> psns;
  for (int i = 0; i < 40; ++i) {
    psns.push_back(set[0].snd_nxt);
    send(set, 0, static_cast<std::uint16_t>(100 + i));
  }
  EXPECT_EQ(set[0].capacity(), 64u);  // grown by doubling, kept in PSN order
  EXPECT_EQ(set[1].capacity(), 0u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(set[0].entry(psns[i]).bytes, 100 + i);
  set.validate();
  for (std::uint32_t psn : psns) set.acknowledged(set[0], set[0].entry(psn));
  set[0].snd_una = set[0].snd_nxt;
  set.settle(set[0]);
  EXPECT_EQ(set[0].capacity(), 0u);
  const std::size_t made = pool.entries();
  // Busy again: the ring of the size it reached comes back from the pool.
  send(set, 0, 100);
  EXPECT_EQ(set[0].capacity(), 64u);
  EXPECT_EQ(pool.entries(), made);
  set.validate();
}

TEST(PathSetDeathTest, NoticesAnEntryTakenOutOfFlightBehindItsBack) {
  PathSet set;
  set.reset(2, 8, kMicrosecond, kIsn, kWindow);
  TxEntry& e = send(set, 1, 700);
  set.validate();
  e.in_flight = false;
  EXPECT_DEATH(set.validate(), "a path's bytes in flight is 700, the paths say 0 \\(path 1\\)");
}

TEST(PathSetDeathTest, NoticesALostEntryResentBehindItsBack) {
  PathSet set;
  set.reset(2, 8, kMicrosecond, kIsn, kWindow);
  TxEntry& e = send(set, 0, 700);
  set.lost(set[0], e);
  set.validate();
  e.lost = false;
  EXPECT_DEATH(set.validate(), "a path's lost entries is 1, the paths say 0");
}

TEST(PathSetDeathTest, NoticesAPathWithRoomMissingFromTheMask) {
  PathSet set;
  set.reset(2, 8, kMicrosecond, kIsn, kWindow);
  set[0].timeouts = 1;
  set[1].timeouts = 1;
  EXPECT_EQ(set.pick(0), nullptr);  // both timed out: pick() drops them from the mask
  set.validate();
  // Progress on path 0 without telling the set that it may send again.
  set[0].timeouts = 0;
  EXPECT_DEATH(set.validate(), "may-send mask's bit for a path with room .*\\(path 0\\)");
  set.may_send(set[0]);
  set.validate();
  EXPECT_EQ(set.pick(0), &set[0]);
}

// With trains, the chosen path keeps its turn for a train's bytes (within its window and
// its round-robin credit), then the next path gets one; over a round every path still
// sends its window's share.
TEST(PathSet, TrainsKeepThePathForATrainThenMoveOn) {
  PathSet set;
  set.reset(4, 64, kMicrosecond, kIsn, 10 * kWindow);
  set.set_train(3 * 1000);
  std::vector<std::size_t> order;
  for (int k = 0; k < 24; ++k) {
    TxPath* p = set.pick(0);
    ASSERT_NE(p, nullptr);
    order.push_back(p->id);
    send(set, p->id, 1000);
  }
  for (std::size_t k = 0; k < order.size(); ++k) {
    EXPECT_EQ(order[k], (k / 3) % 4) << "pick " << k;
  }
  set.validate();
  // Without trains, every turn is one packet.
  set.reset(4, 64, kMicrosecond, kIsn, 10 * kWindow);
  set.set_train(0);
  for (std::size_t k = 0; k < 8; ++k) {
    TxPath* p = set.pick(0);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->id, k % 4);
    send(set, p->id, 1000);
  }
}

// A train ends where the path's window does.
TEST(PathSet, ATrainStopsAtThePathsWindow) {
  PathSet set;
  set.reset(2, 64, kMicrosecond, kIsn, 2000);
  set.set_train(60000);
  std::vector<std::size_t> order;
  for (int k = 0; k < 4; ++k) {
    TxPath* p = set.pick(0);
    ASSERT_NE(p, nullptr);
    order.push_back(p->id);
    send(set, p->id, 1000);
  }
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 0, 1, 1}));
  EXPECT_EQ(set.pick(0), nullptr);
}

}  // namespace
}  // namespace mroce
