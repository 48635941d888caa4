// One direction of a cable: the output queue that feeds it and the wire itself.
// A FIFO queue with tail drop and RED-like ECN marking at enqueue; serialization at the
// link rate, then propagation delay. Two ways to run it:
// - pausable: the queue holds packets by index in an intrusive list and starts each one
//   when the wire is free (a wake-up event when it had to wait), telling its owner; PFC
//   can pause it. Host NICs and every queue of a PFC fabric run this way.
// - scheduled: nothing can pause the queue and its owner needs no word of departures,
//   so a packet's departure is known when it is accepted and its arrival at the far
//   end is its only event. Switch queues of fabrics without PFC run this way.
// Both give the same departures, occupancy, marks and drops for the same arrivals.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/context.h"
#include "sim/crossing.h"
#include "sim/departures.h"
#include "sim/node.h"
#include "sim/rng.h"

namespace mroce::sim {

struct QueueConfig {
  std::uint64_t limit_bytes = 0;  // tail drop above this occupancy; 0: unlimited
  bool ecn = false;               // RED-like marking of ECT packets
  std::uint64_t ecn_min_bytes = 0;
  std::uint64_t ecn_max_bytes = 0;
  double ecn_max_prob = 1.0;  // marking probability reached at ecn_max_bytes (then 1)
  // Mark when a packet starts on the wire, on the bytes it leaves queued behind it
  // (htsim's choice), instead of on arrival on the bytes ahead of it. Needs a queue
  // that holds its packets (not scheduled).
  bool ecn_at_dequeue = false;
};

enum class LinkState : std::uint8_t {
  kUp,
  kBlackHole,  // silent failure: packets vanish, routing is unchanged
  kDown,       // visible failure: the queue is flushed and routing avoids the link
};
const char* to_string(LinkState);

struct LinkParams {
  std::uint64_t rate_bps = 100'000'000'000;
  SimTime delay = kUs;
  QueueConfig queue;
  double loss_rate = 0;
  std::uint64_t seed = 0;
  // Departures computed at enqueue; no pauses, no on_dequeue calls to the owner.
  bool scheduled = false;
};

struct LinkStats {
  std::uint64_t tx_packets = 0;
  std::uint64_t tx_bytes = 0;  // frame bytes
  std::uint64_t ecn_marks = 0;
  std::uint64_t tail_drops = 0;
  std::uint64_t max_bytes = 0;  // peak occupancy over the run
  std::uint64_t pauses = 0;     // PFC pause frames received
  SimTime paused_time = 0;
};

// Aligned so that the fields every packet touches (first in the class) share two lines.
class alignas(64) Link final : public EventHandler {
 public:
  Link(SimContext& ctx, const LinkParams& params, Node* from, std::uint16_t from_port, Node* to,
       std::uint16_t to_port);

  // Takes ownership of `p`. Returns false if the queue refused it (already counted and
  // released).
  bool enqueue(SimTime now, PacketId p) {
    return scheduled_ ? enqueue_scheduled(now, p) : enqueue_pausable(now, p);
  }

  // The far end runs in another partition: arrivals go through `crossing`, and the
  // far end's PFC frames come back through `back`.
  void set_crossing(Crossing* crossing, Crossing* back) {
    crossing_ = crossing;
    back_ = back;
    arrive_ctx_ = &crossing->to();
  }

  bool crosses() const { return crossing_ != nullptr; }

  void set_state(SimTime now, LinkState state);
  LinkState state() const { return state_; }
  bool up() const { return state_ != LinkState::kDown; }

  // PFC: the far end asks this queue to stop or restart, after the frame's flight time.
  void send_pause(SimTime now, bool pause);
  bool paused() const { return paused_; }

  // Bytes queued or still serializing.
  std::uint64_t occupancy(SimTime now) const {
    if (scheduled_) return departures_.bytes_at(now);
    return queued_bytes_ + (now < busy_until_ ? in_service_bytes_ : 0);
  }
  // Packets waiting behind the one serializing.
  std::uint32_t queued_packets(SimTime now) const {
    if (!scheduled_) return queued_packets_;
    const std::uint32_t n = departures_.count_at(now);
    return n ? n - 1 : 0;
  }
  // Peak occupancy since the last call.
  std::uint64_t take_window_max() {
    const std::uint64_t m = window_max_;
    stats_.max_bytes = std::max(stats_.max_bytes, m);
    window_max_ = 0;
    return m;
  }

  LinkStats stats() const {
    LinkStats s = stats_;
    s.tx_packets = tx_packets_;
    s.tx_bytes = tx_bytes_;
    s.max_bytes = std::max(s.max_bytes, window_max_);
    return s;
  }
  const LinkParams& params() const { return params_; }
  void set_loss_rate(double p) {
    params_.loss_rate = p;
    update_clean();
  }
  Node* from() const { return from_; }
  Node* to() const { return to_; }
  std::uint16_t from_port() const { return from_port_; }
  std::uint16_t to_port() const { return to_port_; }

  void on_event(SimTime now, std::uint64_t arg) override {
    // Arrivals on a working link are nearly every event: straight through.
    if ((arg >> kKindShift) == kArrive && ((arg >> 32) & kEpochMask) == epoch_ &&
        state_ == LinkState::kUp) {
      to_->receive(now, static_cast<PacketId>(arg), to_port_);
      return;
    }
    on_other_event(now, arg);
  }
  void prefetch(std::uint64_t arg) const override {
    if ((arg >> kKindShift) != kArrive) return;
    __builtin_prefetch(&arrive_ctx_->packets[static_cast<PacketId>(arg)]);
    __builtin_prefetch(to_);
  }

 private:
  enum Kind : std::uint64_t { kWake = 0, kArrive = 1, kPause = 2, kResume = 3 };
  static constexpr unsigned kKindShift = 56;
  static constexpr std::uint32_t kEpochMask = 0xffffff;  // bits 32-55 of an arrival

  bool should_mark(std::uint64_t occupancy);
  // Tail drop and ECN for a packet meeting `occupancy`; false if dropped.
  bool admit(Packet& pkt, PacketId p, std::uint64_t occupancy) {
    const std::uint64_t after = occupancy + pkt.frame_bytes;
    if (after > limit_bytes_) {
      tail_drop(p);
      return false;
    }
    if (!params_.queue.ecn_at_dequeue) mark(pkt, occupancy);
    if (after > window_max_) window_max_ = after;
    return true;
  }
  void mark(Packet& pkt, std::uint64_t occupancy) {
    if (occupancy >= mark_from_ && (pkt.ecn == Ecn::kEct0 || pkt.ecn == Ecn::kEct1) &&
        should_mark(occupancy)) {
      pkt.ecn = Ecn::kCe;
      ++stats_.ecn_marks;
    }
  }
  void tail_drop(PacketId p);
  SimTime serialization(const Packet& pkt) const {
    const std::uint64_t wire = std::uint64_t{pkt.frame_bytes} + kWireGap;
    return ps_per_byte_ ? wire * ps_per_byte_ : serialization_time(wire, params_.rate_bps);
  }
  bool enqueue_pausable(SimTime now, PacketId p);
  bool enqueue_scheduled(SimTime now, PacketId p);
  // The packet is on the wire until busy_until_: lose it, or schedule its arrival.
  void transmit(PacketId p) {
    if (!clean_ && lose(p)) return;
    const std::uint64_t arg = std::uint64_t{kArrive} << kKindShift | std::uint64_t{epoch_} << 32;
    if (crossing_) {
      crossing_->send(busy_until_ + delay_, this, arg, p);
      return;
    }
    ctx_.events.schedule(busy_until_ + delay_, this, arg | p);
  }
  // Black hole or random loss; true if the packet was dropped.
  bool lose(PacketId p);
  void arrive_other(SimTime now, std::uint64_t arg);
  void start(SimTime now, PacketId p);
  void wake_at(SimTime at);
  void on_other_event(SimTime now, std::uint64_t arg);
  void set_paused(SimTime now, bool paused);
  void update_clean() { clean_ = state_ == LinkState::kUp && params_.loss_rate <= 0; }

  // Hot: what every packet reads or writes, in the first two cache lines.
  SimContext& ctx_;  // the sending end's
  Node* to_;
  Crossing* crossing_ = nullptr;  // when the far end is in another partition
  SimTime busy_until_ = 0;
  SimTime delay_;
  std::uint64_t limit_bytes_;  // tail drop above (none: the largest value)
  std::uint64_t mark_from_;    // occupancy where ECN marking may begin (none: the largest)
  // Serialization time is bytes * ps_per_byte_ when the rate divides evenly.
  std::uint32_t ps_per_byte_ = 0;
  bool clean_ = true;  // up and lossless: nothing to decide per packet
  LinkState state_ = LinkState::kUp;
  std::uint16_t to_port_;
  Departures departures_;    // scheduled mode
  std::uint32_t epoch_ = 0;  // scheduled mode: bumped when the link goes down
  bool scheduled_;
  std::uint64_t window_max_ = 0;
  std::uint64_t tx_packets_ = 0;
  std::uint64_t tx_bytes_ = 0;

  // Cold: pausable queues, failures, loss and statistics.
  SimContext* arrive_ctx_ = &ctx_;  // the receiving end's, which owns arriving packets
  Crossing* back_ = nullptr;        // from the receiving end's partition to this one
  LinkParams params_;
  Node* from_;
  std::uint16_t from_port_;
  bool paused_ = false;
  bool wake_pending_ = false;
  PacketId head_ = kNoPacket;
  PacketId tail_ = kNoPacket;
  std::uint32_t queued_packets_ = 0;
  std::uint64_t queued_bytes_ = 0;
  std::uint64_t in_service_bytes_ = 0;
  SimTime paused_since_ = 0;
  Rng rng_;
  LinkStats stats_;
};

}  // namespace mroce::sim
