#include "core/tx_path.h"

#include <bit>

namespace mroce {

TxEntry* EntryPool::take(std::uint32_t size) {
  auto& list = free_[static_cast<unsigned>(std::countr_zero(size))];
  if (!list.empty()) {
    TxEntry* ring = list.back();
    list.pop_back();
    return ring;
  }
  owned_.push_back(std::make_unique<TxEntry[]>(size));
  entries_ += size;
  // Room on the free list for every ring of this size, so that giving one back never
  // allocates.
  list.reserve(++made_[static_cast<unsigned>(std::countr_zero(size))]);
  return owned_.back().get();
}

void EntryPool::give(TxEntry* ring, std::uint32_t size) {
  free_[static_cast<unsigned>(std::countr_zero(size))].push_back(ring);
}

TxPath::TxPath(std::uint32_t window_packets, Time initial_rtt)
    : window_(static_cast<std::uint16_t>(window_packets)), capacity_(0), rtt(initial_rtt) {}

void TxPath::reset_sequence(std::uint32_t isn) {
  snd_una = snd_nxt = isn;
  lost_pending_ = 0;
  inflight_ = 0;
  largest_acked_order = 0;
  next_order = 1;
  window_end = isn;
  window_acked = window_marked = 0;
  counters_valid = false;
}

}  // namespace mroce
