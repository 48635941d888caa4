// Pacing: data packets leave no faster than a rate (the line rate, or the receiver's
// share for us if lower), with a burst allowance for a sender that was idle.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/config.h"
#include "core/random.h"
#include "core/types.h"

namespace mroce {

// The time `bytes` take at `rate_bps`; 0 at rate 0 (no pacing).
inline Time transmit_time(std::uint64_t bytes, std::uint64_t rate_bps) {
  return rate_bps ? static_cast<Time>(bytes * 8 * 1'000'000'000ull / rate_bps) : 0;
}

class Pacer {
 public:
  explicit Pacer(const EngineConfig& cfg) : cfg_(cfg) {}

  std::uint64_t rate(std::uint64_t hint_bps) const {
    std::uint64_t rate = cfg_.line_rate_bps;
    if (hint_bps > 0) rate = std::min(rate, hint_bps);
    return rate;
  }

  // Whether data must wait: first until the next departure time, then for the start
  // phase of a sender from idle; deadline() says when to ask again.
  // `backlog`: content is waiting to be sent; `rtt`: the connection's smoothed RTT.
  bool waiting(Time now) {
    blocked_ = now < next_;
    return blocked_;
  }
  bool start_phase(Time now, std::uint64_t rate, Time rtt, std::uint32_t mss, bool backlog,
                   Random& random) {
    blocked_ = phase(now, rate, rtt, mss, backlog, random);
    return blocked_;
  }

  // A data packet of `wire_bytes` left now. Paced senders that share one bottleneck at
  // one rate would move in lockstep, their packets reaching it together every round:
  // each gap is drawn from [3/4, 5/4) of the packet's time at the rate (the mean
  // unchanged), so their phases drift apart.
  void on_sent(Time now, std::uint32_t wire_bytes, std::uint64_t rate, Time rtt, std::uint32_t mss,
               Random& random) {
    const Time gap = transmit_time(wire_bytes + cfg_.wire_overhead_bytes, rate);
    next_ = std::max(next_, now - std::min(now, burst(rate, rtt, mss))) + gap * 3 / 4 +
            random.below(gap / 2 + 1);
  }

  Time deadline() const { return blocked_ ? next_ : kNever; }

 private:
  // The burst allowance shrinks with the rate (a quarter of a round trip's worth, at
  // least a packet), so that a thousand slow senders do not start with a burst each.
  Time burst(std::uint64_t rate, Time rtt, std::uint32_t mss) const {
    const std::uint64_t quarter_rtt = rate / 8 * std::max(rtt, cfg_.initial_rtt) / 4 / kSecond;
    return transmit_time(std::clamp<std::uint64_t>(quarter_rtt, mss + 64, cfg_.pacing_burst_bytes),
                         rate);
  }

  // Senders that start at one moment at one share (a READ fanned out to many peers:
  // every request carries the same share) would send their first packets together. One
  // that shares its bottleneck (paced to at most half its line rate) and starts from
  // idle waits a random phase of up to one packet's time at its rate first; a sender
  // alone on its path pays no delay.
  bool phase(Time now, std::uint64_t rate, Time rtt, std::uint32_t mss, bool backlog,
             Random& random) {
    if (rate > cfg_.line_rate_bps / 2 || next_ > now - std::min(now, burst(rate, rtt, mss)) ||
        !backlog) {
      return false;
    }
    next_ = now + random.below(transmit_time(mss + cfg_.wire_overhead_bytes, rate) + 1);
    return next_ > now;
  }

  const EngineConfig& cfg_;
  Time next_ = 0;
  bool blocked_ = false;
};

}  // namespace mroce
