// The sending halves of a connection's paths and every total derived from them: bytes
// in flight, paths with losses to resend, failed and active paths, the active window,
// tail probes due, and the mask of paths that may have window room. The totals let the
// send path skip whole stages in O(1); they change only through the verbs below, and
// validate() recomputes each one from the paths.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/path_mask.h"
#include "core/tx_path.h"

namespace mroce {

class PathSet {
 public:
  // Rings come from the engine's pool; without one, from a pool of the set's own.
  PathSet() : own_(std::make_unique<EntryPool>()), pool_(own_.get()) {}
  explicit PathSet(EntryPool& pool) : pool_(&pool) {}
  PathSet(const PathSet&) = delete;
  PathSet& operator=(const PathSet&) = delete;
  ~PathSet() { release_rings(); }

  // Replaces the paths with n active ones, each with the given window and a sequence
  // space starting at isn; every path may send. Room is kept for `capacity` paths, so
  // that add() never moves a path (callers hold references across it).
  void reset(std::size_t n, std::uint32_t window_packets, Time initial_rtt, std::uint32_t isn,
             std::uint32_t cwnd, std::size_t capacity = 0);
  // One more active path, the next id, within the capacity given to reset().
  TxPath& add(std::uint32_t window_packets, Time initial_rtt, std::uint32_t isn,
              std::uint32_t cwnd);
  // Trains: the path pick() chose keeps its turn for up to `bytes` of packets in a row
  // (within its window and round-robin credit), so that they leave the host in one GSO
  // message; 0 gives every turn one packet.
  void set_train(std::uint32_t bytes) { train_budget_ = bytes; }
  // Bytes in flight above which a quiet path (TxPath::quiet) takes no new data: an equal
  // share of the connection's window, so that a silent route cannot hold all of it.
  void set_quiet_share(std::uint32_t bytes) { quiet_share_ = bytes; }

  std::size_t size() const { return paths_.size(); }
  bool empty() const { return paths_.empty(); }
  TxPath& operator[](std::size_t i) { return paths_[i]; }
  const TxPath& operator[](std::size_t i) const { return paths_[i]; }
  auto begin() { return paths_.begin(); }
  auto end() { return paths_.end(); }
  auto begin() const { return paths_.begin(); }
  auto end() const { return paths_.end(); }

  std::uint32_t inflight() const { return inflight_; }
  std::uint32_t lost_paths() const { return lost_paths_; }
  std::uint32_t failed_paths() const { return failed_paths_; }
  std::uint32_t active_paths() const { return active_paths_; }
  std::uint64_t active_cwnd() const { return active_cwnd_; }
  std::uint32_t tail_probes_due() const { return tail_probes_due_; }

  // The entry of a PSN just taken (snd_nxt moved past it), cleared: the path's ring
  // grows first if it has no room for it.
  TxEntry& open(TxPath& p, std::uint32_t psn) {
    if (psn - p.snd_una >= p.capacity_) grow(p, psn);
    TxEntry& e = p.entry(psn);
    e = TxEntry{};
    return e;
  }
  // Nothing is outstanding on the path any more: its ring goes back to the pool.
  void settle(TxPath& p) {
    if (p.snd_una == p.snd_nxt && p.ring_) release_ring(p);
  }

  // Something on the path changed that may give it room.
  void may_send(const TxPath& p) { may_send_.set(p.id); }
  // Lets every path hold up to `window_packets` outstanding (a power of two, only more).
  void widen(std::uint32_t window_packets);

  // The entry went out on the path with e.bytes on the wire: it is in flight.
  void sent(TxPath& p, TxEntry& e) {
    e.in_flight = true;
    if (p.id == train_path_) {
      train_bytes_ += e.bytes;
      train_last_ = e.bytes;
    }
    p.credit -= e.bytes;
    p.inflight_ += e.bytes;
    inflight_ += e.bytes;
  }
  // A failed path's probe is sent again: its earlier copy no longer counts in flight.
  void resend_probe(TxPath& p, TxEntry& e) {
    if (!e.in_flight) return;
    p.inflight_ -= e.bytes;
    inflight_ -= e.bytes;
  }
  // The ACK's path must be put in the mask (may_send) once per ACK, as on_ack does.
  void acknowledged(TxPath& p, TxEntry& e) {
    if (e.in_flight) {
      p.inflight_ -= e.bytes;
      inflight_ -= e.bytes;
    }
    if (e.lost) {
      e.lost = false;
      if (--p.lost_pending_ == 0) --lost_paths_;
    }
    e.acked = true;
    e.in_flight = false;
  }
  // Out of flight and waiting to be sent again; false if it was waiting already.
  bool lost(TxPath& p, TxEntry& e) {
    may_send(p);
    if (e.in_flight) {
      e.in_flight = false;
      p.inflight_ -= e.bytes;
      inflight_ -= e.bytes;
    }
    if (e.lost) return false;
    e.lost = true;
    if (p.lost_pending_++ == 0) ++lost_paths_;
    return true;
  }
  // A lost entry is about to be sent again.
  void retransmitting(TxPath& p, TxEntry& e) {
    e.lost = false;
    if (--p.lost_pending_ == 0) --lost_paths_;
  }
  // The path is failed with a fresh sequence space from isn and the given window;
  // whatever was on it counts no more.
  void failed(TxPath& p, std::uint32_t isn, std::uint32_t cwnd);
  void recovered(TxPath& p);
  void set_cwnd(TxPath& p, std::uint32_t cwnd) {
    if (p.active()) active_cwnd_ = active_cwnd_ - p.cwnd_ + cwnd;
    p.cwnd_ = cwnd;
    may_send(p);
  }
  // Tail probes: `count` due on a path that has none due.
  void probes_due(TxPath& p, std::uint8_t count) {
    p.tail_probe_ = count;
    ++tail_probes_due_;
  }
  void probe_sent(TxPath& p) {
    if (--p.tail_probe_ == 0) --tail_probes_due_;
  }
  void probes_cancelled(TxPath& p) {
    if (p.tail_probe_ == 0) return;
    p.tail_probe_ = 0;
    --tail_probes_due_;
  }

  // The next path to carry a new packet: round robin over the paths with window room,
  // each path's turns in proportion to its window (deficit round robin), paths marked
  // within the last round trip only when no clear path has room, quiet paths only up to
  // their share (set_quiet_share); a turn is one train (set_train). Paths on the planes
  // of `blocked` are passed over. Null if none has room; blocked_only() then says
  // whether some path on a blocked plane had.
  TxPath* pick(Time now, std::uint8_t blocked = 0);
  bool blocked_only() const { return blocked_only_; }

  // Recomputes every total from the paths and aborts, naming the first that disagrees.
  void validate() const;

 private:
  void grow(TxPath& p, std::uint32_t psn);  // room for psn, keeping [snd_una, psn)
  void release_ring(TxPath& p);
  void release_rings();
  bool train_continues(Time now, std::uint8_t blocked) const;
  // Quiet and holding its share: out of the may-send mask until it acknowledges something.
  bool held(const TxPath& p) const { return p.quiet && p.inflight_ >= quiet_share_; }
  TxPath* pick_turn(Time now, std::uint8_t blocked);  // the next turn of the round robin

  // The totals first: every poll reads some of them, before any path.
  std::uint32_t inflight_ = 0;
  std::uint32_t lost_paths_ = 0;  // paths with lost_pending > 0
  std::uint32_t failed_paths_ = 0;
  std::uint32_t active_paths_ = 0;
  std::uint32_t tail_probes_due_ = 0;
  std::uint32_t cursor_ = 0;       // where pick's round robin resumes
  std::uint64_t active_cwnd_ = 0;  // sum of the windows of active paths
  std::uint32_t train_budget_ = 0;
  std::uint32_t quiet_share_ = ~0u;
  std::uint32_t train_path_ = ~0u;  // the path whose train is running
  std::uint32_t train_bytes_ = 0;   // its bytes sent in the train so far
  std::uint32_t train_last_ = 0;    // the size of its latest packet: the next one's guess
  std::vector<TxPath> paths_;
  std::unique_ptr<EntryPool> own_;
  EntryPool* pool_;
  bool blocked_only_ = false;
  PathMask may_send_;  // paths that may send: every other is full, failed, timed out or quiet
};

}  // namespace mroce
