// A barrier for the partitions' threads that spins before it sleeps. A window is a
// microsecond of simulated time and a few hundred microseconds of work, so waking a
// thread that slept (tens of microseconds in a virtual machine) costs a good part of
// it; std::barrier's waiters go to sleep almost at once. The spin is bounded and yields
// now and then, so a thread that waits long (more partitions than cores) still sleeps.
// Like std::barrier, the last thread to arrive runs the completion alone before any
// thread goes on.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mroce::sim {

template <class Completion>
class SpinBarrier {
 public:
  SpinBarrier(std::uint32_t threads, Completion completion)
      : threads_(threads), completion_(std::move(completion)) {}

  void arrive_and_wait() {
    const std::uint32_t phase = phase_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
      completion_();
      arrived_.store(0, std::memory_order_relaxed);
      phase_.store(phase + 1, std::memory_order_release);
      phase_.notify_all();
      return;
    }
    for (std::uint32_t i = 1; i <= kSpins; ++i) {
      if (phase_.load(std::memory_order_acquire) != phase) return;
      // Now and then let a thread waiting for this core run: with more partitions than
      // cores, the one everybody waits for may be it.
      if (i % kYieldEvery == 0) {
        std::this_thread::yield();
      } else {
        relax();
      }
    }
    while (phase_.load(std::memory_order_acquire) == phase) {
      phase_.wait(phase, std::memory_order_acquire);
    }
  }

 private:
  // About 100 us of spinning: longer than the usual imbalance of a window's work.
  static constexpr std::uint32_t kSpins = 1u << 12;
  static constexpr std::uint32_t kYieldEvery = 64;

  static void relax() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  const std::uint32_t threads_;
  Completion completion_;
  alignas(64) std::atomic<std::uint32_t> arrived_{0};
  alignas(64) std::atomic<std::uint32_t> phase_{0};
};

}  // namespace mroce::sim
