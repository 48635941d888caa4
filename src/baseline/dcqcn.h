// DCQCN reaction point (Zhu et al., SIGCOMM 2015, section 3.2): the sender's rate
// controller. A CNP cuts the current rate Rc by alpha/2 and remembers it as the target Rt;
// alpha decays every K without a CNP; rate increase events, from a timer (every T) and a
// byte counter (every B bytes sent), move Rc back towards Rt (fast recovery), then raise Rt
// additively, then hyper-additively.
//
// Timer events are replayed on demand up to the time asked about, which is exactly what a
// free-running timer would have done, without waking an idle engine.
#pragma once

#include <cstdint>

#include "baseline/config.h"

namespace mroce::baseline {

class DcqcnRate {
 public:
  DcqcnRate(const DcqcnConfig& config, std::uint64_t line_rate_bps);

  void on_cnp(Time now);
  void on_sent(Time now, std::uint64_t bytes);
  // Current rate Rc after every timer event up to now.
  std::uint64_t rate(Time now);

  std::uint64_t current_bps() const { return std::uint64_t(rc_); }  // as of the last update
  double target_bps() const { return rt_; }
  double alpha() const { return alpha_; }
  std::uint64_t cnps() const { return cnps_; }

 private:
  void advance(Time now);
  void increase();

  const DcqcnConfig& config_;
  double line_;
  double rc_;
  double rt_;
  double alpha_;
  bool active_ = false;    // increase timer running: set by a CNP, cleared back at line rate
  Time alpha_anchor_ = 0;  // last CNP or alpha decay
  Time timer_anchor_ = 0;  // last CNP or increase timer event
  std::uint32_t timer_events_ = 0;
  std::uint32_t byte_events_ = 0;
  std::uint64_t bytes_ = 0;  // since the last byte counter event
  std::uint64_t cnps_ = 0;
};

}  // namespace mroce::baseline
