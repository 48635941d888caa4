// Round-trip time estimation from echoed timestamps (RFC 6298 smoothing).
#pragma once

#include <algorithm>

#include "core/types.h"

namespace mroce {

class RttEstimator {
 public:
  explicit RttEstimator(Time initial) : srtt_(initial), rttvar_(initial / 2) {}

  void sample(Time rtt) {
    if (rtt == 0) rtt = 1;
    if (!has_sample_) {
      srtt_ = rtt;
      rttvar_ = rtt / 2;
      min_rtt_ = rtt;
      has_sample_ = true;
    } else {
      const Time err = rtt > srtt_ ? rtt - srtt_ : srtt_ - rtt;
      rttvar_ = (3 * rttvar_ + err) / 4;
      srtt_ = (7 * srtt_ + rtt) / 8;
      min_rtt_ = std::min(min_rtt_, rtt);
    }
    latest_ = rtt;
  }

  Time srtt() const { return srtt_; }
  Time rttvar() const { return rttvar_; }
  Time min_rtt() const { return has_sample_ ? min_rtt_ : srtt_; }
  Time latest() const { return has_sample_ ? latest_ : srtt_; }
  bool has_sample() const { return has_sample_; }
  // `ack_delay`: how long the peer may hold an ACK, which the samples leave out.
  Time rto(Time min_rto, Time max_rto, Time ack_delay) const {
    return std::clamp(srtt_ + std::max<Time>(4 * rttvar_, 1000) + ack_delay, min_rto, max_rto);
  }
  // Queueing shows as latest RTT well above the path's floor.
  bool inflated() const {
    return has_sample_ && latest_ > min_rtt_ + min_rtt_ / 2 + 2 * kMicrosecond;
  }

 private:
  Time srtt_;
  Time rttvar_;
  Time min_rtt_ = 0;
  Time latest_ = 0;
  bool has_sample_ = false;
};

}  // namespace mroce
