#include "core/path_set.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>

namespace mroce {

namespace {

[[noreturn]] void broken(const char* what, std::uint64_t kept, std::uint64_t counted,
                         std::size_t path) {
  std::fprintf(
      stderr, "mroce: PathSet invariant broken: %s is %llu, the paths say %llu (path %zu)\n", what,
      static_cast<unsigned long long>(kept), static_cast<unsigned long long>(counted), path);
  std::abort();
}

void check(const char* what, std::uint64_t kept, std::uint64_t counted, std::size_t path = 0) {
  if (kept != counted) broken(what, kept, counted, path);
}

}  // namespace

void PathSet::grow(TxPath& p, std::uint32_t psn) {
  // At least twice the last size when outgrowing a ring, so growth is amortised; never
  // beyond the window, which bounds the PSNs outstanding.
  const std::uint32_t needed =
      std::max({psn - p.snd_una + 1, 2u * p.capacity_, std::uint32_t{p.ring_hint_}, 4u});
  const auto size = std::min<std::uint32_t>(std::bit_ceil(needed), p.window_);
  TxEntry* ring = pool_->take(size);
  const std::uint32_t mask = size - 1;
  for (std::uint32_t q = p.snd_una; q != psn; ++q) ring[q & mask] = p.entry(q);
  if (p.ring_) pool_->give(p.ring_, p.capacity_);
  p.ring_ = ring;
  p.capacity_ = static_cast<std::uint16_t>(size);
  p.ring_hint_ = p.capacity_;
}

void PathSet::release_ring(TxPath& p) {
  pool_->give(p.ring_, p.capacity_);
  p.ring_ = nullptr;
  p.capacity_ = 0;
}

void PathSet::release_rings() {
  for (TxPath& p : paths_)
    if (p.ring_) release_ring(p);
}

void PathSet::reset(std::size_t n, std::uint32_t window_packets, Time initial_rtt,
                    std::uint32_t isn, std::uint32_t cwnd, std::size_t capacity) {
  release_rings();
  paths_.clear();
  paths_.reserve(std::max(n, capacity));
  inflight_ = lost_paths_ = failed_paths_ = active_paths_ = tail_probes_due_ = 0;
  active_cwnd_ = 0;
  train_path_ = ~0u;
  train_bytes_ = 0;
  for (std::size_t i = 0; i < n; ++i) {
    TxPath& p = paths_.emplace_back(window_packets, initial_rtt);
    p.id = static_cast<std::uint8_t>(i);
    p.reset_sequence(isn);
    p.cwnd_ = cwnd;
    active_cwnd_ += cwnd;
    ++active_paths_;
  }
  may_send_.reset(n, true);
}

TxPath& PathSet::add(std::uint32_t window_packets, Time initial_rtt, std::uint32_t isn,
                     std::uint32_t cwnd) {
  if (paths_.size() >= paths_.capacity() || paths_.size() >= PathMask::kMaxPaths) std::abort();
  TxPath& p = paths_.emplace_back(window_packets, initial_rtt);
  p.id = static_cast<std::uint8_t>(paths_.size() - 1);
  p.reset_sequence(isn);
  p.cwnd_ = cwnd;
  active_cwnd_ += cwnd;
  ++active_paths_;
  may_send_.grow(paths_.size());
  may_send_.set(p.id);
  return p;
}

void PathSet::widen(std::uint32_t window_packets) {
  for (TxPath& p : paths_) {
    p.window_ = static_cast<std::uint16_t>(std::max<std::uint32_t>(p.window_, window_packets));
    if (p.active()) may_send_.set(p.id);
  }
}

void PathSet::failed(TxPath& p, std::uint32_t isn, std::uint32_t cwnd) {
  inflight_ -= p.inflight_;
  if (p.lost_pending_ > 0) --lost_paths_;
  if (p.ring_) release_ring(p);
  p.reset_sequence(isn);
  if (p.active()) {
    active_cwnd_ -= p.cwnd_;
    --active_paths_;
    ++failed_paths_;
  }
  p.cwnd_ = cwnd;
  probes_cancelled(p);
  p.state_ = PathState::kFailed;
}

void PathSet::recovered(TxPath& p) {
  may_send(p);
  p.state_ = PathState::kActive;
  active_cwnd_ += p.cwnd_;
  ++active_paths_;
  --failed_paths_;
}

bool PathSet::train_continues(Time now, std::uint8_t blocked) const {
  if (train_budget_ == 0 || train_path_ >= paths_.size()) return false;
  const TxPath& p = paths_[train_path_];
  return train_bytes_ + train_last_ <= train_budget_ && !(blocked >> p.plane & 1) && p.active() &&
         p.timeouts == 0 && !held(p) && !p.ring_full() && p.inflight_ < p.cwnd_ && p.credit > 0 &&
         p.avoid_until <= now;
}

TxPath* PathSet::pick(Time now, std::uint8_t blocked) {
  blocked_only_ = false;
  if (train_continues(now, blocked)) return &paths_[train_path_];
  TxPath* chosen = pick_turn(now, blocked);
  train_path_ = chosen ? chosen->id : ~0u;
  train_bytes_ = 0;
  return chosen;
}

TxPath* PathSet::pick_turn(Time now, std::uint8_t blocked) {
  const std::size_t n = paths_.size();
  const std::size_t start = cursor_ % n;
  for (int pass = 0; pass < 2; ++pass) {
    TxPath* marked = nullptr;
    bool eligible = false;
    // The paths that may have room, in index order from the cursor to the end.
    const auto scan = [&](std::size_t from, std::size_t to) -> TxPath* {
      for (std::size_t i = may_send_.next(from); i < to; i = may_send_.next(i + 1)) {
        TxPath& p = paths_[i];
        if (!p.active() || p.timeouts > 0 || held(p) || p.ring_full() || p.inflight_ >= p.cwnd_) {
          may_send_.clear(i);  // until an ACK, a loss, a window change or a recovery on it
          continue;
        }
        if (blocked >> p.plane & 1) {  // room, but its plane's queue is full: not a turn
          blocked_only_ = true;
          continue;
        }
        eligible = true;
        if (p.credit <= 0) continue;
        if (p.avoid_until > now) {
          if (!marked) marked = &p;
          continue;
        }
        return &p;
      }
      return nullptr;
    };
    TxPath* chosen = scan(start, n);
    if (!chosen) chosen = scan(0, start);
    if (!chosen) chosen = marked;
    if (chosen) {
      cursor_ = static_cast<std::uint32_t>((chosen->id + 1) % n);
      return chosen;
    }
    if (!eligible) return nullptr;
    // Every path with room has spent its turns: a new round.
    for (TxPath& p : paths_) {
      p.credit = std::min<std::int64_t>(p.credit + p.cwnd_, p.cwnd_);
    }
  }
  return nullptr;
}

void PathSet::validate() const {
  std::uint64_t inflight = 0, active_cwnd = 0;
  std::uint32_t lost_paths = 0, failed = 0, active = 0, probes = 0;
  check("the may-send mask's size", may_send_.size(), paths_.size());
  for (std::size_t i = 0; i < paths_.size(); ++i) {
    const TxPath& p = paths_[i];
    check("a path's id", p.id, i, i);
    const std::uint32_t span = p.snd_nxt - p.snd_una;
    if (span > p.window()) broken("a path's PSNs in flight", span, p.window(), i);
    std::uint64_t bytes = 0;
    std::uint32_t lost = 0;
    for (std::uint32_t psn = p.snd_una; psn != p.snd_nxt; ++psn) {
      const TxEntry& e = p.entry(psn);
      if (e.acked && (e.in_flight || e.lost)) broken("an acknowledged entry's flags", 1, 0, i);
      if (e.in_flight && e.lost) broken("an entry both in flight and lost", 1, 0, i);
      if (e.in_flight) bytes += e.bytes;
      if (e.lost) ++lost;
    }
    check("a path's bytes in flight", p.inflight_, bytes, i);
    check("a path's lost entries", p.lost_pending_, lost, i);
    inflight += p.inflight_;
    if (p.lost_pending_ > 0) ++lost_paths;
    if (p.tail_probe_ > 0) ++probes;
    if (p.active()) {
      ++active;
      active_cwnd += p.cwnd_;
      // A path that could send now must be in the mask, or pick() would never see it. A
      // quiet one waits for its ACK (which puts it back), even if its share has grown since.
      if (p.timeouts == 0 && !p.quiet && !p.ring_full() && p.inflight_ < p.cwnd_ &&
          !may_send_.test(i)) {
        broken("the may-send mask's bit for a path with room", 0, 1, i);
      }
    } else {
      ++failed;
    }
  }
  check("bytes in flight", inflight_, inflight);
  check("paths with losses to resend", lost_paths_, lost_paths);
  check("failed paths", failed_paths_, failed);
  check("active paths", active_paths_, active);
  check("the active paths' window", active_cwnd_, active_cwnd);
  check("paths with tail probes due", tail_probes_due_, probes);
}

}  // namespace mroce
