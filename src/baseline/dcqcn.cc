#include "baseline/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace mroce::baseline {

DcqcnRate::DcqcnRate(const DcqcnConfig& config, std::uint64_t line_rate_bps)
    : config_(config),
      line_(double(line_rate_bps)),
      rc_(line_),
      rt_(line_),
      alpha_(config.initial_alpha) {}

void DcqcnRate::on_cnp(Time now) {
  advance(now);
  ++cnps_;
  rt_ = rc_;
  rc_ = std::max(rc_ * (1 - alpha_ / 2), std::min(double(config_.min_rate_bps), line_));
  alpha_ = (1 - config_.g) * alpha_ + config_.g;
  alpha_anchor_ = now;
  timer_anchor_ = now;
  timer_events_ = 0;
  byte_events_ = 0;
  bytes_ = 0;
  active_ = true;
}

void DcqcnRate::on_sent(Time now, std::uint64_t bytes) {
  advance(now);
  if (!active_) return;
  bytes_ += bytes;
  while (active_ && bytes_ >= config_.byte_counter) {
    bytes_ -= config_.byte_counter;
    ++byte_events_;
    increase();
  }
}

std::uint64_t DcqcnRate::rate(Time now) {
  advance(now);
  return std::uint64_t(rc_);
}

void DcqcnRate::advance(Time now) {
  if (config_.alpha_period > 0 && now >= alpha_anchor_ + config_.alpha_period) {
    const Time periods = (now - alpha_anchor_) / config_.alpha_period;
    alpha_ *= std::pow(1 - config_.g, double(periods));
    alpha_anchor_ += periods * config_.alpha_period;
  }
  while (active_ && config_.increase_period > 0 && now >= timer_anchor_ + config_.increase_period) {
    timer_anchor_ += config_.increase_period;
    ++timer_events_;
    increase();
  }
}

void DcqcnRate::increase() {
  const std::uint32_t f = config_.fast_recovery_steps;
  const std::uint32_t most = std::max(timer_events_, byte_events_);
  const std::uint32_t least = std::min(timer_events_, byte_events_);
  if (most < f) {
    // Fast recovery: Rt stays.
  } else if (least > f) {
    rt_ += double(least - f) * double(config_.hai_rate_bps);
  } else {
    rt_ += double(config_.ai_rate_bps);
  }
  rt_ = std::min(rt_, line_);
  rc_ = std::min((rt_ + rc_) / 2, line_);
  // Within a bit per second of line rate, nothing is left to recover.
  if (rc_ >= line_ - 1 && rt_ >= line_) {
    rc_ = line_;
    active_ = false;
  }
}

}  // namespace mroce::baseline
