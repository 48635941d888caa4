#include "core/congestion.h"

#include <algorithm>

namespace mroce {

void CongestionController::on_counters(Time now, Time srtt, std::uint32_t rx_delta,
                                       std::uint32_t ce_delta, double gain, std::uint32_t floor) {
  const double g = gain;
  window_acked_ += rx_delta;
  window_marked_ += ce_delta;
  if (now < window_start_ + srtt) return;
  if (window_acked_ > 0) alpha_ = (1 - g) * alpha_ + g * double(window_marked_) / window_acked_;
  if (window_marked_ > 0 && now >= last_cut_ + srtt) {
    cwnd_ = std::max<std::uint32_t>(floor, static_cast<std::uint32_t>(cwnd_ * (1 - alpha_ / 2)));
    slow_start_ = false;
    last_cut_ = now;
  }
  window_acked_ = window_marked_ = 0;
  window_start_ = now;
}

void CongestionController::on_acked(std::uint32_t acked_bytes, std::uint32_t mss,
                                    std::uint32_t active_paths, std::uint64_t cap) {
  const std::uint64_t grown = slow_start_
                                  ? std::uint64_t{cwnd_} + acked_bytes
                                  : cwnd_ + std::uint64_t{mss} * acked_bytes * active_paths / cwnd_;
  cwnd_ = static_cast<std::uint32_t>(std::min(cap, grown));
}

}  // namespace mroce
