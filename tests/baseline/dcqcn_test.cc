// The DCQCN reaction point against the algorithm of Zhu et al. (SIGCOMM 2015, section 3.2).
#include <gtest/gtest.h>

#include "baseline/dcqcn.h"

namespace mroce::baseline {
namespace {

constexpr std::uint64_t kLine = 100'000'000'000;

TEST(BaselineDcqcn, StartsAtLineRate) {
  DcqcnConfig c;
  DcqcnRate r(c, kLine);
  EXPECT_EQ(r.rate(0), kLine);
  EXPECT_EQ(r.rate(10 * kMillisecond), kLine);
}

TEST(BaselineDcqcn, CnpCutsByHalfAlphaAndRaisesAlpha) {
  DcqcnConfig c;
  DcqcnRate r(c, kLine);
  r.on_cnp(1000);
  // alpha starts at 1: Rc = Rc (1 - 1/2); Rt remembers the rate before the cut.
  EXPECT_EQ(r.rate(1000), kLine / 2);
  EXPECT_DOUBLE_EQ(r.target_bps(), double(kLine));
  EXPECT_DOUBLE_EQ(r.alpha(), 1.0);  // (1 - g) * 1 + g
  r.on_cnp(2000);
  EXPECT_EQ(r.rate(2000), kLine / 4);
  EXPECT_DOUBLE_EQ(r.target_bps(), double(kLine) / 2);
}

TEST(BaselineDcqcn, AlphaDecaysEveryPeriodWithoutCnp) {
  DcqcnConfig c;
  c.initial_alpha = 0.5;
  DcqcnRate r(c, kLine);
  r.on_cnp(0);
  const double after_cnp = (1 - c.g) * 0.5 + c.g;
  EXPECT_DOUBLE_EQ(r.alpha(), after_cnp);
  r.rate(c.alpha_period - 1);
  EXPECT_DOUBLE_EQ(r.alpha(), after_cnp);
  r.rate(3 * c.alpha_period);
  EXPECT_NEAR(r.alpha(), after_cnp * (1 - c.g) * (1 - c.g) * (1 - c.g), 1e-12);
  // The next cut uses the decayed alpha.
  const double rc = double(r.rate(3 * c.alpha_period));
  r.on_cnp(3 * c.alpha_period);
  EXPECT_NEAR(double(r.rate(3 * c.alpha_period)), rc * (1 - r.alpha() / 2), rc * 0.01);
}

TEST(BaselineDcqcn, FastRecoveryThenAdditiveThenHyperIncrease) {
  DcqcnConfig c;
  DcqcnRate r(c, kLine);
  r.on_cnp(0);  // Rc = 50G, Rt = 100G
  const Time t = c.increase_period;
  // Fast recovery: F timer events, each halving the distance to Rt, which stays.
  double rc = double(kLine) / 2;
  for (std::uint32_t i = 1; i < c.fast_recovery_steps; ++i) {
    rc = (double(kLine) + rc) / 2;
    EXPECT_NEAR(double(r.rate(i * t)), rc, 1.0) << i;
    EXPECT_DOUBLE_EQ(r.target_bps(), double(kLine));
  }
  // With the byte counter still at zero, timer events past F are additive: Rt += R_AI,
  // capped at line rate here, as Rt already is.
  r.rate(c.fast_recovery_steps * t);
  EXPECT_DOUBLE_EQ(r.target_bps(), double(kLine));

  // From a lower target, additive increase moves Rt by R_AI per event.
  DcqcnRate low(c, kLine);
  low.on_cnp(0);
  low.on_cnp(0);  // Rt = 50G, Rc = 25G
  const double rt0 = low.target_bps();
  low.rate(c.fast_recovery_steps * t);  // F timer events: the F-th is additive
  EXPECT_NEAR(low.target_bps(), rt0 + double(c.ai_rate_bps), 1.0);
  low.rate((c.fast_recovery_steps + 2) * t);
  EXPECT_NEAR(low.target_bps(), rt0 + 3 * double(c.ai_rate_bps), 1.0);

  // Hyper increase once both the timer and the byte counter passed F.
  DcqcnRate hyper(c, kLine);
  hyper.on_cnp(0);
  hyper.on_cnp(0);
  const Time now = (c.fast_recovery_steps + 1) * t;  // timer events: F + 1
  hyper.rate(now);
  const double before = hyper.target_bps();
  for (std::uint32_t i = 0; i <= c.fast_recovery_steps; ++i) hyper.on_sent(now, c.byte_counter);
  // The byte event that makes both counters exceed F adds (min - F) * R_HAI = R_HAI.
  EXPECT_GT(hyper.target_bps(), before + double(c.hai_rate_bps) - 1);
}

TEST(BaselineDcqcn, RecoversToLineRateAndStops) {
  DcqcnConfig c;
  DcqcnRate r(c, kLine);
  for (int i = 0; i < 5; ++i) r.on_cnp(0);
  EXPECT_LT(r.rate(0), kLine / 20);
  // An idle sender has only its timer: additive steps of R_AI every T.
  EXPECT_LT(r.rate(50 * kMillisecond), kLine);
  EXPECT_EQ(r.rate(1 * kSecond), kLine);
  EXPECT_EQ(r.rate(2 * kSecond), kLine);
}

TEST(BaselineDcqcn, RateNeverFallsBelowTheFloor) {
  DcqcnConfig c;
  DcqcnRate r(c, kLine);
  for (int i = 0; i < 100; ++i) r.on_cnp(0);
  EXPECT_EQ(r.rate(0), c.min_rate_bps);
}

TEST(BaselineDcqcn, ByteCounterAloneRaisesTheRate) {
  DcqcnConfig c;
  c.increase_period = 0;  // timer off
  DcqcnRate r(c, kLine);
  r.on_cnp(0);
  r.on_sent(0, c.byte_counter - 1);
  EXPECT_EQ(r.rate(0), kLine / 2);
  r.on_sent(0, 1);
  EXPECT_EQ(r.rate(0), kLine * 3 / 4);
}

}  // namespace
}  // namespace mroce::baseline
