#include "core/tx_path.h"

namespace mroce {

TxPath::TxPath(std::uint32_t window_packets, Time initial_rtt)
    : ring_(std::make_unique<TxEntry[]>(window_packets)),
      window_(window_packets),
      rtt(initial_rtt) {}

void TxPath::reset_sequence(std::uint32_t isn) {
  snd_una = snd_nxt = isn;
  lost_pending_ = 0;
  inflight_ = 0;
  largest_acked_order = 0;
  next_order = 1;
  for (std::uint32_t i = 0; i < window_; ++i) ring_[i] = TxEntry{};
  window_end = isn;
  window_acked = window_marked = 0;
  counters_valid = false;
}

}  // namespace mroce
