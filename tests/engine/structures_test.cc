// The engine's small structures, each against a plain model: the deadline heap, the
// segment set and its bitmap pool, the memory table, the RTT estimator and the inbound
// message table.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "core/deadline_heap.h"
#include "core/inbound.h"
#include "core/memory.h"
#include "core/rtt.h"
#include "core/segment_set.h"

namespace mroce {
namespace {

struct Timed {
  std::size_t heap_index = DeadlineHeap<Timed>::kAbsent;
  Time heap_key = kNever;
};

TEST(DeadlineHeap, TopIsAlwaysTheEarliestUnderRandomMovesAndRemovals) {
  std::vector<Timed> items(40);
  DeadlineHeap<Timed> heap;
  std::map<Timed*, Time> model;
  std::mt19937_64 rng(3);
  EXPECT_TRUE(heap.empty());
  EXPECT_EQ(heap.top_key(), kNever);
  for (int step = 0; step < 5000; ++step) {
    Timed* t = &items[rng() % items.size()];
    switch (rng() % 4) {
      case 0:
        heap.remove(t);  // also when absent
        model.erase(t);
        break;
      case 1:
        heap.update(t, kNever);
        model.erase(t);
        break;
      default: {
        const Time key = rng() % 64;  // many ties
        heap.update(t, key);
        model[t] = key;
      }
    }
    ASSERT_EQ(heap.empty(), model.empty());
    for (Timed& i : items) {
      const auto it = model.find(&i);
      ASSERT_EQ(i.heap_index == DeadlineHeap<Timed>::kAbsent, it == model.end());
      if (it != model.end()) {
        ASSERT_EQ(i.heap_key, it->second);
      }
    }
    if (model.empty()) continue;
    Time least = kNever;
    for (const auto& [item, key] : model) least = std::min(least, key);
    ASSERT_EQ(heap.top_key(), least);
    ASSERT_EQ(model.at(heap.top()), least);
    if (step % 250 == 249) {
      // Taking the top again and again yields every key in order.
      for (Time last = 0; !heap.empty();) {
        ASSERT_GE(heap.top_key(), last);
        last = heap.top_key();
        ASSERT_EQ(model.at(heap.top()), last);
        model.erase(heap.top());
        heap.remove(heap.top());
      }
      ASSERT_TRUE(model.empty());
    }
  }
}

TEST(SegmentSet, CountsEachSegmentOnceInlineAndPooled) {
  BitmapPool pool;
  std::mt19937_64 rng(4);
  for (std::uint32_t size : {1u, 2u, 63u, 64u, 65u, 128u, 129u, 1000u, 4096u}) {
    SegmentSet s;
    s.init(pool, size);
    std::set<std::uint32_t> model;
    for (std::uint32_t k = 0; k < 3 * size; ++k) {
      const std::uint32_t i = std::uint32_t(rng() % size);
      ASSERT_EQ(s.insert(pool, i), model.insert(i).second) << size << " " << i;
      ASSERT_EQ(s.count(), model.size());
    }
    for (std::uint32_t i = 0; i < size; ++i) ASSERT_EQ(s.contains(pool, i), model.count(i) == 1);
    for (std::uint32_t i = 0; i < size; ++i) s.insert(pool, i);
    EXPECT_TRUE(s.full());
    EXPECT_EQ(s.size(), size);
    s.release(pool);
    EXPECT_EQ(s.count(), 0u);
  }
}

TEST(SegmentSet, PooledWordsComeBackZeroedAndAreNotShared) {
  BitmapPool pool;
  SegmentSet a, b;
  a.init(pool, 300);
  for (std::uint32_t i = 0; i < 300; i += 3) a.insert(pool, i);
  a.release(pool);
  // b reuses a's words (same size class): none of a's bits may show.
  b.init(pool, 256);
  for (std::uint32_t i = 0; i < 256; ++i) ASSERT_FALSE(b.contains(pool, i)) << i;
  SegmentSet c;
  c.init(pool, 300);  // a fresh block beside b
  for (std::uint32_t i = 0; i < 256; ++i) b.insert(pool, i);
  for (std::uint32_t i = 0; i < 300; ++i) ASSERT_FALSE(c.contains(pool, i)) << i;
  EXPECT_TRUE(b.full());
}

class Memory : public ::testing::Test {
 protected:
  Memory() : table(9), bytes(4096) {
    EXPECT_EQ(table.add(base, 4096, access::kAll, bytes.data(), &keys), Errc::kOk);
    EXPECT_EQ(table.add(base + 8192, 1024, access::kRemoteRead, nullptr, &read_only), Errc::kOk);
  }
  AccessCheck check(std::uint32_t key, std::uint64_t addr, std::uint64_t len, std::uint32_t right) {
    const Region* r = nullptr;
    return table.check(key, addr, len, right, &r);
  }
  static constexpr std::uint64_t base = 0x10000;
  MemoryTable table;
  std::vector<std::uint8_t> bytes;
  MrKeys keys, read_only;
};

TEST_F(Memory, ChecksKeyBoundsAndRights) {
  EXPECT_EQ(check(keys.rkey, base, 4096, access::kRemoteWrite), AccessCheck::kOk);
  EXPECT_EQ(check(keys.rkey, base + 4095, 1, access::kRemoteWrite), AccessCheck::kOk);
  EXPECT_EQ(check(keys.rkey, base + 4096, 0, access::kRemoteWrite), AccessCheck::kOk);
  EXPECT_EQ(check(keys.rkey, base + 4095, 2, 0), AccessCheck::kOutOfRange);
  EXPECT_EQ(check(keys.rkey, base - 1, 1, 0), AccessCheck::kOutOfRange);
  EXPECT_EQ(check(keys.rkey, base + 1, ~std::uint64_t{0}, 0), AccessCheck::kOutOfRange);
  EXPECT_EQ(check(keys.rkey, ~std::uint64_t{0}, 2, 0), AccessCheck::kOutOfRange);
  EXPECT_EQ(check(keys.rkey ^ 0x1, base, 1, 0), AccessCheck::kBadKey);
  EXPECT_EQ(check(keys.rkey & 0xff, base, 1, 0), AccessCheck::kBadKey);  // index 0
  EXPECT_EQ(check(keys.rkey + 0x1000, base, 1, 0), AccessCheck::kBadKey);
  EXPECT_EQ(check(read_only.rkey, base + 8192, 1024, access::kRemoteRead), AccessCheck::kOk);
  EXPECT_EQ(check(read_only.rkey, base + 8192, 8, access::kRemoteAtomic), AccessCheck::kDenied);
  EXPECT_EQ(check(read_only.rkey, base + 8192, 8, access::kRemoteWrite), AccessCheck::kDenied);
  MrKeys k;
  EXPECT_EQ(table.add(base, 0, access::kAll, nullptr, &k), Errc::kInvalidArgument);
  EXPECT_EQ(table.add(~std::uint64_t{0} - 10, 100, access::kAll, nullptr, &k),
            Errc::kInvalidArgument);
}

TEST_F(Memory, RemovedKeysStayDeadWhenTheirSlotIsReused) {
  const std::uint32_t old = keys.rkey;
  EXPECT_EQ(table.remove(old), Errc::kOk);
  EXPECT_EQ(table.remove(old), Errc::kNotFound);
  EXPECT_EQ(check(old, base, 1, 0), AccessCheck::kBadKey);
  MrKeys again;
  ASSERT_EQ(table.add(base, 4096, access::kAll, bytes.data(), &again), Errc::kOk);
  EXPECT_EQ(again.rkey >> 8, old >> 8);  // the slot is reused...
  EXPECT_NE(again.rkey, old);            // ...under a new tag
  EXPECT_EQ(check(old, base, 1, 0), AccessCheck::kBadKey);
  EXPECT_EQ(check(again.rkey, base, 1, 0), AccessCheck::kOk);
}

TEST_F(Memory, GatherAndScatterWalkTheSgeListFromAnOffset) {
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(i);
  const Sge sg[3] = {
      {base + 100, 10, keys.lkey}, {base + 500, 0, keys.lkey}, {base + 1000, 20, keys.lkey}};
  std::uint8_t out[30] = {};
  ASSERT_TRUE(table.gather(sg, 3, 5, out, 25));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[i], std::uint8_t(105 + i));
  for (int i = 0; i < 20; ++i) EXPECT_EQ(out[5 + i], std::uint8_t(1000 + i));
  EXPECT_FALSE(table.gather(sg, 3, 5, out, 26));  // longer than the list
  const std::uint8_t in[4] = {0xa1, 0xa2, 0xa3, 0xa4};
  ASSERT_TRUE(table.scatter(sg, 3, 8, in, 4));
  EXPECT_EQ(bytes[108], 0xa1);
  EXPECT_EQ(bytes[109], 0xa2);
  EXPECT_EQ(bytes[1000], 0xa3);
  EXPECT_EQ(bytes[1001], 0xa4);
  // Scatter needs local write; the read-only region has none.
  const Sge ro{base + 8192, 16, read_only.lkey};
  EXPECT_FALSE(table.scatter(&ro, 1, 0, in, 4));
  EXPECT_TRUE(table.sges_valid(&ro, 1, 0));
  EXPECT_FALSE(table.sges_valid(&ro, 1, access::kLocalWrite));
  const Sge bad{base, 16, keys.lkey ^ 0x1};
  EXPECT_FALSE(table.sges_valid(&bad, 1, 0));
  const Sge empty_bad{base, 0, keys.lkey ^ 0x1};
  EXPECT_TRUE(table.sges_valid(&empty_bad, 1, 0));  // an empty SGE names nothing
}

TEST(RttEstimator, SmoothsAsRfc6298AndClampsTheTimeout) {
  RttEstimator r(100 * kMicrosecond);
  EXPECT_FALSE(r.has_sample());
  EXPECT_EQ(r.srtt(), 100 * kMicrosecond);
  EXPECT_EQ(r.rttvar(), 50 * kMicrosecond);
  EXPECT_EQ(r.min_rtt(), 100 * kMicrosecond);  // the initial guess until a sample
  r.sample(40 * kMicrosecond);                 // the first sample replaces the guess
  EXPECT_EQ(r.srtt(), 40 * kMicrosecond);
  EXPECT_EQ(r.rttvar(), 20 * kMicrosecond);
  r.sample(80 * kMicrosecond);  // err 40: rttvar (3*20+40)/4 = 25, srtt (7*40+80)/8 = 45
  EXPECT_EQ(r.rttvar(), 25 * kMicrosecond);
  EXPECT_EQ(r.srtt(), 45 * kMicrosecond);
  EXPECT_EQ(r.min_rtt(), 40 * kMicrosecond);
  EXPECT_EQ(r.latest(), 80 * kMicrosecond);
  EXPECT_TRUE(r.inflated());  // 80 > 40 + 20 + 2
  EXPECT_EQ(r.rto(1, kSecond, 0), 45 * kMicrosecond + 4 * 25 * kMicrosecond);
  EXPECT_EQ(r.rto(1 * kMillisecond, kSecond, 0), 1 * kMillisecond);
  EXPECT_EQ(r.rto(1, 50 * kMicrosecond, 0), 50 * kMicrosecond);
  r.sample(0);  // a zero sample counts as 1 ns, not as "none"
  EXPECT_EQ(r.min_rtt(), 1u);
  EXPECT_FALSE(r.inflated());
  RttEstimator steady(10 * kMicrosecond);
  for (int i = 0; i < 200; ++i) steady.sample(10 * kMicrosecond);
  EXPECT_EQ(steady.srtt(), 10 * kMicrosecond);
  EXPECT_EQ(steady.rttvar(), 0u);
  EXPECT_EQ(steady.rto(1, kSecond, 0), 10 * kMicrosecond + 1000);  // variance floor of 1 us
  // The peer's delayed ACK is left out of the samples, so the timeout allows for it.
  EXPECT_EQ(steady.rto(1, kSecond, 20 * kMicrosecond), 30 * kMicrosecond + 1000);
}

TEST(InboundTable, HoldsNothingUntilOpened) {
  InboundTable table(64);
  EXPECT_EQ(table.insert(1, 0), nullptr);
  EXPECT_EQ(table.find(1, 0), nullptr);
  table.open();
  EXPECT_NE(table.insert(1, 0), nullptr);
  EXPECT_NE(table.find(1, 0), nullptr);
}

TEST(InboundTable, FindsWhatItHoldsThroughCollisionsAndErasures) {
  InboundTable table(64);
  table.open();
  std::set<std::pair<std::uint32_t, std::uint32_t>> model;
  std::mt19937_64 rng(5);
  for (int step = 0; step < 4000; ++step) {
    // Few streams and a narrow MSN range: many probes collide.
    const std::uint32_t stream = 1 + std::uint32_t(rng() % 4), msn = std::uint32_t(rng() % 48);
    if (!model.count({stream, msn})) {
      InboundMessage* m = table.insert(stream, msn);
      if (model.size() == 64) {
        ASSERT_EQ(m, nullptr);
        continue;
      }
      ASSERT_NE(m, nullptr);
      EXPECT_TRUE(m->used && m->stream == stream && m->msn == msn && !m->complete);
      m->length = stream * 1000 + msn;  // a payload to find again
      model.insert({stream, msn});
    } else if (rng() % 2) {
      InboundMessage* m = table.find(stream, msn);
      ASSERT_NE(m, nullptr);
      table.erase(m);
      model.erase({stream, msn});
    }
    ASSERT_EQ(table.size(), model.size());
    for (std::uint32_t s = 1; s <= 4; ++s)
      for (std::uint32_t n = 0; n < 48; ++n) {
        InboundMessage* m = table.find(s, n);
        ASSERT_EQ(m != nullptr, model.count({s, n}) == 1) << s << "/" << n << " step " << step;
        if (m) {
          ASSERT_EQ(m->length, s * 1000 + n);
        }
      }
    std::size_t seen = 0;
    table.for_each([&](InboundMessage&) { ++seen; });
    ASSERT_EQ(seen, model.size());
  }
}

}  // namespace
}  // namespace mroce
