// Sender side of one path: its source port and generation, the packets in flight on
// it (a ring indexed by PSN), its RTT estimate and its congestion window.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/rtt.h"
#include "core/segment.h"
#include "core/transport.h"

namespace mroce {

// 32 aligned bytes, so that an entry never spans two cache lines: each packet sent
// and each one acknowledged touches one, far from the cache by then.
struct alignas(32) TxEntry {
  Time sent_at = 0;
  SegmentRef seg;
  std::uint32_t order = 0;     // path-wide transmission counter at the latest send
  std::uint16_t bytes = 0;     // wire bytes counted in flight
  bool in_flight : 1 = false;  // sent, not yet acknowledged nor declared lost
  bool acked : 1 = false;
  bool lost : 1 = false;  // declared lost, waiting to be sent again
  bool sent : 1 = false;
  bool retransmitted : 1 = false;  // the latest send of this PSN was not its first
};
static_assert(sizeof(TxEntry) == 32);

// Send rings, by power-of-two size, kept for reuse by every path of one engine: a path
// takes one when it first carries data, a larger one when its packets outstanding
// outgrow it, and gives it back once everything on it is settled. An idle path holds
// none, and steady state allocates nothing once every size in use has been made.
class EntryPool {
 public:
  EntryPool() = default;
  EntryPool(const EntryPool&) = delete;
  EntryPool& operator=(const EntryPool&) = delete;

  // A ring of `size` entries (a power of two, at most kMaxSize), contents undefined.
  TxEntry* take(std::uint32_t size);
  void give(TxEntry* ring, std::uint32_t size);
  // Entries held, free and taken: what the rings cost.
  std::size_t entries() const { return entries_; }

  static constexpr std::uint32_t kMaxSize = 256;

 private:
  std::array<std::vector<TxEntry*>, 9> free_;  // by log2 of the size
  std::array<std::size_t, 9> made_{};          // rings made, by log2 of the size
  std::vector<std::unique_ptr<TxEntry[]>> owned_;
  std::size_t entries_ = 0;
};

class PathSet;

// Aligned, with its fields grouped by use, so that a packet sent or acknowledged touches
// four cache lines of it, and choosing a path reads only the first line of a candidate.
// The fields that the connection's totals are derived from (state, window, bytes in
// flight, lost entries, tail probes due) are written only by PathSet, which keeps the
// totals; everything else is the connection's to change.
class alignas(64) TxPath {
 public:
  TxPath(std::uint32_t window_packets, Time initial_rtt);

  PathState state() const { return state_; }
  std::uint32_t cwnd() const { return cwnd_; }
  std::uint32_t inflight() const { return inflight_; }
  std::uint32_t lost_pending() const { return lost_pending_; }
  std::uint8_t tail_probe() const { return tail_probe_; }
  bool active() const { return state_ == PathState::kActive; }

  // Line 1: identity, sequence space, window, credit, avoidance.
  std::uint8_t id = 0;
  std::uint8_t generation = 0;
  std::uint8_t plane = 0;

 private:
  friend class PathSet;
  PathState state_ = PathState::kActive;

 public:
  std::uint16_t port = 0;
  std::uint32_t timeouts = 0;  // consecutive, reset by any progress

  // Sequence space [snd_una, snd_nxt) is in flight or awaiting retransmission.
  std::uint32_t snd_una = 0;
  std::uint32_t snd_nxt = 0;

 private:
  std::uint32_t cwnd_ = 0;
  std::uint32_t inflight_ = 0;  // wire bytes of the entries with in_flight set

 public:
  std::int64_t credit = 0;  // bytes this path may still send in the current round
  Time avoid_until = 0;     // recently marked: prefer other paths

 private:
  // Entries for the PSNs in [snd_una, snd_nxt): a ring from the engine's pool, taken
  // when the path first carries data and as large as its packets outstanding have
  // needed (PathSet::open), returned when nothing is outstanding (PathSet::settle).
  TxEntry* ring_ = nullptr;
  std::uint16_t window_;    // packets outstanding at most, a power of two
  std::uint16_t capacity_;  // the ring's size, a power of two; 0 without a ring

 public:
  std::uint32_t next_order = 1;

  std::uint32_t window() const { return window_; }
  std::uint32_t capacity() const { return capacity_; }
  bool ring_full() const { return snd_nxt - snd_una >= window_; }
  // Only for PSNs in [snd_una, snd_nxt).
  TxEntry& entry(std::uint32_t psn) { return ring_[psn & (capacity_ - 1u)]; }
  const TxEntry& entry(std::uint32_t psn) const { return ring_[psn & (capacity_ - 1u)]; }

 private:
  void reset_sequence(std::uint32_t isn);

 public:
  // Line 2: acknowledgement and congestion state (bytes); cwnd, inflight and credit
  // are above.
  std::uint32_t largest_acked_order = 0;

 private:
  std::uint32_t lost_pending_ = 0;  // entries with lost set

 public:
  std::uint32_t ssthresh = ~0u;
  std::uint32_t window_end = 0;     // PSN that closes the current observation window
  std::uint32_t window_acked = 0;   // packets acknowledged in that window
  std::uint32_t window_marked = 0;  // CE marks reported in that window
  std::uint32_t reported_rx = 0;    // last cumulative counters from ACKs
  std::uint32_t reported_ce = 0;
  double alpha = 0;      // DCTCP's estimate of the marked fraction
  Time last_cut = 0;     // at most one reduction per RTT
  double loss_rate = 0;  // EWMA over packets, for failure detection
  bool counters_valid = false;

 private:
  std::uint8_t tail_probe_ = 0;  // tail probes due now

 public:
  std::uint8_t tail_probes_sent = 0;  // since the last progress
  bool ack_requested = false;         // the latest transmission asked for an ACK at once
  // Data in flight and no ACK for a PTO (Connection::check_timeouts), until one
  // acknowledges something: new data only up to an equal share (PathSet::set_quiet_share).
  bool quiet = false;
  std::uint32_t reported_echo = 0;  // timestamp echoed by the last ACK read

  // Line 3: timing.
  RttEstimator rtt;
  Time last_progress = 0;  // last ACK that acknowledged something, or first send into an idle path
  Time last_send = 0;

  // Line 4: the counters every packet moves come first in PathStats; the rest is cold.
  PathStats stats;
  Time probe_at = kNever;  // failed path: next probe
  Time probe_interval = 0;
  // The port the path had at set-up: the connection's ports were spread over the routes
  // there, and a path that a failure moved away tries it again later (re-entropy back),
  // so that after a heal the paths spread out again.
  std::uint16_t home_port = 0;
  Time home_at = kNever;  // when to go back home
  Time home_after = 0;    // how long to stay away first; doubles each time home fails
  // Shared fate: the paths whose home routes died together (failed at home within a few
  // RTOs of each other) carry the same label, the id of the first of them; a path no
  // failure grouped carries its own id. One of a group away from home is its scout and
  // goes home on its timer; when home answers it, the group follows at once.
  std::uint8_t fate = 0;
  bool scout = false;
  bool homing = false;  // went home on its timer: its first progress there tells the group

 private:
  std::uint16_t ring_hint_ = 0;  // the size of the ring last held: the next one's
};

}  // namespace mroce
