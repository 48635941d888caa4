// The API stress run (tests/harness/api_stress.h) over fixed seeds. MROCE_STRESS_SEEDS
// and MROCE_STRESS_STEPS size the sweep: ctest runs a short one in the default tests and
// a long one labelled slow. A seed that breaks an invariant names itself.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "harness/api_stress.h"

namespace mroce::testing {
namespace {

unsigned long long ull(std::uint64_t v) {
  return v;
}

void sweep(std::uint64_t first, std::uint64_t seeds, std::uint32_t steps) {
  StressReport total;
  for (std::uint64_t seed = first; seed < first + seeds; ++seed) {
    SeededChoices choices(seed, steps);
    const StressReport r = run_api_stress(choices);
    ASSERT_EQ(r.error, "") << "seed " << seed << " (" << steps << " steps)";
    for (int op = 0; op < 7; ++op) total.succeeded[op] += r.succeeded[op];
    total.steps += r.steps;
    total.posted += r.posted;
    total.delivered += r.delivered;
    total.failed += r.failed;
    total.abandoned += r.abandoned;
    total.recv_matched += r.recv_matched;
    total.dropped += r.dropped;
    total.duplicated += r.duplicated;
    total.streams_destroyed += r.streams_destroyed;
  }
  std::printf(
      "%llu seeds, %llu steps: %llu work requests posted, %llu failed, %llu abandoned, "
      "%llu receives matched; %llu packets delivered, %llu dropped, %llu duplicated; "
      "%llu streams destroyed\n",
      ull(seeds), ull(total.steps), ull(total.posted), ull(total.failed), ull(total.abandoned),
      ull(total.recv_matched), ull(total.delivered), ull(total.dropped), ull(total.duplicated),
      ull(total.streams_destroyed));
  // The sweep reached what it claims to stress.
  for (int op = 0; op < 7; ++op) EXPECT_GT(total.succeeded[op], 0u) << "opcode " << op;
  EXPECT_GT(total.failed, 0u);
  EXPECT_GT(total.abandoned, 0u);
  EXPECT_GT(total.recv_matched, 0u);
  EXPECT_GT(total.dropped, 0u);
  EXPECT_GT(total.duplicated, 0u);
  EXPECT_GT(total.streams_destroyed, 0u);
}

std::uint64_t env(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

TEST(ApiStress, Sweep) {
  sweep(env("MROCE_STRESS_FIRST_SEED", 1), env("MROCE_STRESS_SEEDS", 40),
        static_cast<std::uint32_t>(env("MROCE_STRESS_STEPS", 400)));
}

}  // namespace
}  // namespace mroce::testing
