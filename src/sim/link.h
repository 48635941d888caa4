// One direction of a cable: the output queue that feeds it and the wire itself.
// A FIFO queue with tail drop and RED-like ECN marking at enqueue; serialization at the
// link rate, then propagation delay. The queue holds packets by index in an intrusive
// list, so queueing never allocates. Only two kinds of event exist per packet: its
// arrival at the far end, and (only when it had to wait) the wake-up that starts it.
#pragma once

#include <cstdint>

#include "sim/context.h"
#include "sim/node.h"
#include "sim/rng.h"

namespace mroce::sim {

struct QueueConfig {
  std::uint64_t limit_bytes = 0;  // tail drop above this occupancy; 0: unlimited
  bool ecn = false;               // RED-like marking of ECT packets
  std::uint64_t ecn_min_bytes = 0;
  std::uint64_t ecn_max_bytes = 0;
  double ecn_max_prob = 1.0;  // marking probability reached at ecn_max_bytes (then 1)
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

class Link final : public EventHandler {
 public:
  Link(SimContext& ctx, const LinkParams& params, Node* from, std::uint16_t from_port, Node* to,
       std::uint16_t to_port);

  // Takes ownership of `p`. Returns false if the queue refused it (already counted and
  // released).
  bool enqueue(SimTime now, PacketId p);

  void set_state(SimTime now, LinkState state);
  LinkState state() const { return state_; }
  bool up() const { return state_ != LinkState::kDown; }

  // PFC: the far end asks this queue to stop or restart, after the frame's flight time.
  void send_pause(SimTime now, bool pause);
  bool paused() const { return paused_; }

  // Bytes queued or still serializing.
  std::uint64_t occupancy(SimTime now) const {
    return queued_bytes_ + (now < busy_until_ ? in_service_bytes_ : 0);
  }
  std::uint32_t queued_packets() const { return queued_packets_; }
  // Peak occupancy since the last call.
  std::uint64_t take_window_max() {
    std::uint64_t m = window_max_;
    window_max_ = 0;
    return m;
  }

  const LinkStats& stats() const { return stats_; }
  const LinkParams& params() const { return params_; }
  void set_loss_rate(double p) { params_.loss_rate = p; }
  Node* from() const { return from_; }
  Node* to() const { return to_; }
  std::uint16_t from_port() const { return from_port_; }
  std::uint16_t to_port() const { return to_port_; }

  void on_event(SimTime now, std::uint64_t arg) override;

 private:
  enum Kind : std::uint64_t { kWake = 0, kArrive = 1, kPause = 2, kResume = 3 };
  static constexpr unsigned kKindShift = 56;

  bool should_mark(std::uint64_t occupancy);
  void start(SimTime now, PacketId p);
  void wake_at(SimTime at);
  void arrive(SimTime now, PacketId p);
  void set_paused(SimTime now, bool paused);

  SimContext& ctx_;
  LinkParams params_;
  Node* from_;
  Node* to_;
  std::uint16_t from_port_;
  std::uint16_t to_port_;
  LinkState state_ = LinkState::kUp;
  bool paused_ = false;
  bool wake_pending_ = false;
  // Serialization time is bytes * ps_per_byte_ when the rate divides evenly.
  SimTime ps_per_byte_ = 0;

  PacketId head_ = kNoPacket;
  PacketId tail_ = kNoPacket;
  std::uint32_t queued_packets_ = 0;
  std::uint64_t queued_bytes_ = 0;
  std::uint64_t in_service_bytes_ = 0;
  SimTime busy_until_ = 0;
  SimTime paused_since_ = 0;
  std::uint64_t window_max_ = 0;
  Rng rng_;
  LinkStats stats_;
};

}  // namespace mroce::sim
