#include "sim/spin_barrier.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace mroce::sim {
namespace {

// More threads than a two-core machine has cores, so that some waits outlast the spin
// and sleep.
constexpr std::uint32_t kThreads = 4;

TEST(SpinBarrier, NoThreadLeavesAPhaseBeforeAllArriveAndTheCompletionRan) {
  constexpr std::uint32_t kPhases = 2000;
  std::array<std::atomic<std::uint32_t>, kThreads> reached{};
  std::atomic<std::uint32_t> completions{0};
  std::atomic<std::uint32_t> errors{0};
  SpinBarrier barrier(kThreads, [&] {
    // Runs alone, once every thread has reached the current phase.
    const std::uint32_t phase = completions.load();
    for (const auto& r : reached) errors += r.load() != phase;
    completions.store(phase + 1);
  });
  auto work = [&](std::uint32_t t) {
    for (std::uint32_t phase = 0; phase < kPhases; ++phase) {
      reached[t].store(phase);
      barrier.arrive_and_wait();
      errors += completions.load() != phase + 1;
      // The others may already be one phase on, never two.
      for (const auto& r : reached) errors += r.load() < phase || r.load() > phase + 1;
    }
  };
  std::vector<std::jthread> threads;
  for (std::uint32_t t = 1; t < kThreads; ++t) threads.emplace_back(work, t);
  work(0);
  threads.clear();
  EXPECT_EQ(completions.load(), kPhases);
  EXPECT_EQ(errors.load(), 0u);
}

TEST(SpinBarrier, ThreadsThatGaveUpSpinningAreWokenByTheLastArrival) {
  std::atomic<bool> late_arrived{false};
  std::atomic<std::uint32_t> left_early{0};
  std::atomic<std::uint32_t> completions{0};
  SpinBarrier barrier(kThreads, [&] { ++completions; });
  std::vector<std::jthread> threads;
  for (std::uint32_t t = 1; t < kThreads; ++t) {
    threads.emplace_back([&] {
      barrier.arrive_and_wait();
      left_early += !late_arrived.load();
    });
  }
  // Far longer than the spin: the others are asleep by now.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  late_arrived.store(true);
  barrier.arrive_and_wait();
  threads.clear();
  EXPECT_EQ(left_early.load(), 0u);
  EXPECT_EQ(completions.load(), 1u);
}

}  // namespace
}  // namespace mroce::sim
