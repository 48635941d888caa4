// Properties that must hold on any lossy, reordering, duplicating network, checked over
// many seeds: every message arrives exactly once and byte-exact, completions keep
// stream order, and without duplication or cross-path reordering every retransmission
// answers exactly one drop.
#include "engine/workload.h"

namespace mroce::testing {
namespace {

constexpr int kSeeds = 12;

struct Impairment {
  const char* name;
  double loss;
  double duplicate;
  bool reorder;  // different delay and jitter per spine
};

class LossProperty : public ::testing::TestWithParam<std::tuple<Impairment, int>> {};

TEST_P(LossProperty, ExactlyOnceInOrderByteExact) {
  const auto [imp, seed] = GetParam();
  Cluster cl(2, 1, 4, std::uint64_t(seed));
  for (int s = 0; s < 4; ++s) {
    SpineParams& sp = cl.net.spine(0, s);
    sp.loss = imp.loss;
    sp.loss_all = true;  // ACKs, NACKs and set-up are lost too
    sp.duplicate = imp.duplicate;
    if (imp.reorder) {
      sp.delay = Time(5 + 7 * s) * kMicrosecond;
      sp.jitter = 3 * kMicrosecond;
    }
  }
  Workload w(cl, 4, 120, 40000, std::uint64_t(seed));
  w.post_all();
  ASSERT_TRUE(w.run(20 * kSecond)) << "transfer did not finish";
  w.verify();
}

const Impairment kImpairments[] = {
    {"clean", 0, 0, true},        {"loss1", 0.01, 0, true}, {"loss5", 0.05, 0.01, true},
    {"loss10", 0.10, 0.02, true}, {"dup5", 0, 0.05, true},
};

INSTANTIATE_TEST_SUITE_P(Seeds, LossProperty,
                         ::testing::Combine(::testing::ValuesIn(kImpairments),
                                            ::testing::Range(1, kSeeds + 1)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param).name) + "_seed" +
                                  std::to_string(std::get<1>(info.param));
                         });

class RetransmitProperty : public ::testing::TestWithParam<int> {};

TEST_P(RetransmitProperty, RetransmissionsEqualDrops) {
  const int seed = GetParam();
  Cluster cl(2, 1, 4, std::uint64_t(seed));
  for (int s = 0; s < 4; ++s) cl.net.spine(0, s).loss = 0.02;  // data only, same delay
  Workload w(cl, 3, 100, 30000, std::uint64_t(seed), /*with_reads=*/false);
  w.post_all();
  ASSERT_TRUE(w.run(20 * kSecond));
  w.verify();
  const std::uint64_t drops = cl.net.total_content_drops();
  EXPECT_GT(drops, 0u);
  EXPECT_EQ(cl.engine(0).counters().tx_retransmits, drops);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RetransmitProperty, ::testing::Range(1, kSeeds + 1));

}  // namespace
}  // namespace mroce::testing
