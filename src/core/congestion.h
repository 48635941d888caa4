// The connection-level congestion controller: one window over all paths, grown in slow
// start and then by about a packet per round trip per active path (more where the round
// trip is long, Connection::increase_boost), cut by DCTCP's alpha
// measured over every path each round trip (a shared bottleneck marks every path, a hot
// link only its own, which the paths' own windows answer). It also keeps what the
// receiver asks for: its rate hint, and whether the fabric marks ECN at all. Inline:
// every ACK runs it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/types.h"

namespace mroce {

class CongestionController {
 public:
  explicit CongestionController(std::uint32_t initial_window) : cwnd_(initial_window) {}

  // The first round trip starts when the connection is established.
  void start(Time now) { window_start_ = now; }
  // In slow start, the window may be opened at once to what the route holds.
  bool slow_start() const { return slow_start_; }
  void open_to(std::uint32_t window) {
    if (slow_start_) cwnd_ = std::max(cwnd_, window);
  }

  std::uint32_t window() const { return cwnd_; }
  std::uint64_t rate_hint_bps() const { return rate_hint_bps_; }
  // Once the fabric has marked anything, marks alone tell congestion; RTT growth is the
  // signal only on a path with no ECN marking at all (a standing queue at an ECN
  // bottleneck is the hint's and DCTCP's business, not a reason to read loss as congestion).
  bool ecn_seen() const { return ecn_seen_; }

  // The receiver's share for us, in kbit/s; 0 says nothing.
  void on_rate_hint(std::uint32_t kbps) {
    if (kbps) rate_hint_bps_ = std::uint64_t{kbps} * 1000;
  }
  void on_marks(std::uint32_t ce_delta) {
    if (ce_delta > 0) ecn_seen_ = true;
  }
  // Packets received and CE-marked, as an ACK newly reports them; each round trip (the
  // connection's smoothed RTT) updates alpha and, if anything was marked, cuts the
  // window by alpha/2 down to `floor`, at most once a round trip.
  void on_counters(Time now, Time srtt, std::uint32_t rx_delta, std::uint32_t ce_delta, double gain,
                   std::uint32_t floor) {
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
  // Bytes newly acknowledged on an active path whose ACK carried no mark; past slow
  // start the window gains `boost` packets per active path per round trip.
  void on_acked(std::uint32_t acked_bytes, std::uint32_t mss, std::uint32_t active_paths,
                std::uint64_t cap, std::uint32_t boost) {
    const std::uint64_t grown =
        slow_start_ ? std::uint64_t{cwnd_} + acked_bytes
                    : cwnd_ + std::uint64_t{mss} * acked_bytes * active_paths * boost / cwnd_;
    cwnd_ = static_cast<std::uint32_t>(std::min(cap, grown));
  }

 private:
  std::uint32_t cwnd_;
  bool slow_start_ = true;
  bool ecn_seen_ = false;
  double alpha_ = 0;
  std::uint32_t window_acked_ = 0;
  std::uint32_t window_marked_ = 0;
  Time window_start_ = 0;
  Time last_cut_ = 0;
  std::uint64_t rate_hint_bps_ = 0;
};

}  // namespace mroce
