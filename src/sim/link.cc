#include "sim/link.h"

#include <algorithm>
#include <cassert>

namespace mroce::sim {

const char* to_string(LinkState s) {
  switch (s) {
    case LinkState::kUp:
      return "up";
    case LinkState::kBlackHole:
      return "black_hole";
    case LinkState::kDown:
      return "down";
  }
  return "?";
}

Link::Link(SimContext& ctx, const LinkParams& params, Node* from, std::uint16_t from_port, Node* to,
           std::uint16_t to_port)
    : ctx_(ctx),
      to_(to),
      delay_(params.delay),
      limit_bytes_(params.queue.limit_bytes ? params.queue.limit_bytes
                                            : std::numeric_limits<std::uint64_t>::max()),
      mark_from_(params.queue.ecn ? params.queue.ecn_min_bytes
                                  : std::numeric_limits<std::uint64_t>::max()),
      to_port_(to_port),
      scheduled_(params.scheduled),
      params_(params),
      from_(from),
      from_port_(from_port),
      rng_(params.seed) {
  const std::uint64_t ps = 8'000'000'000'000ull;
  if (ps % params_.rate_bps == 0 && ps / params_.rate_bps <= ~std::uint32_t{0}) {
    ps_per_byte_ = static_cast<std::uint32_t>(ps / params_.rate_bps);
  }
  update_clean();
}

bool Link::should_mark(std::uint64_t occupancy) {
  const QueueConfig& q = params_.queue;
  if (occupancy < q.ecn_min_bytes) return false;
  if (occupancy >= q.ecn_max_bytes) return true;
  double p = q.ecn_max_prob * static_cast<double>(occupancy - q.ecn_min_bytes) /
             static_cast<double>(q.ecn_max_bytes - q.ecn_min_bytes);
  return rng_.chance(p);
}

void Link::tail_drop(PacketId p) {
  ++stats_.tail_drops;
  ctx_.drop(p, DropCause::kQueueFull);
}

bool Link::enqueue_pausable(SimTime now, PacketId p) {
  if (state_ == LinkState::kDown) {
    ctx_.drop(p, DropCause::kLinkDown);
    return false;
  }
  Packet& pkt = ctx_.packets[p];
  if (!admit(pkt, p, occupancy(now))) return false;
  if (head_ == kNoPacket && !paused_ && now >= busy_until_) {
    start(now, p);
    return true;
  }
  if (tail_ == kNoPacket) {
    head_ = p;
  } else {
    ctx_.packets[tail_].next = p;
  }
  tail_ = p;
  pkt.next = kNoPacket;
  ++queued_packets_;
  queued_bytes_ += pkt.frame_bytes;
  if (!paused_) wake_at(std::max(now, busy_until_));
  return true;
}

bool Link::enqueue_scheduled(SimTime now, PacketId p) {
  if (state_ == LinkState::kDown) {
    ctx_.drop(p, DropCause::kLinkDown);
    return false;
  }
  Packet& pkt = ctx_.packets[p];
  departures_.drain(now);
  if (!admit(pkt, p, departures_.bytes())) return false;
  // FIFO at line rate: it starts when everything accepted before it has left.
  busy_until_ = std::max(now, busy_until_) + serialization(pkt);
  departures_.push(busy_until_, pkt.frame_bytes);
  ++tx_packets_;
  tx_bytes_ += pkt.frame_bytes;
  transmit(p);
  return true;
}

bool Link::lose(PacketId p) {
  if (state_ == LinkState::kBlackHole) {
    ctx_.drop(p, DropCause::kBlackHole);
    return true;
  }
  if (params_.loss_rate > 0 && rng_.chance(params_.loss_rate)) {
    ctx_.drop(p, DropCause::kRandomLoss);
    return true;
  }
  return false;
}

void Link::start(SimTime now, PacketId p) {
  Packet& pkt = ctx_.packets[p];
  busy_until_ = now + serialization(pkt);
  in_service_bytes_ = pkt.frame_bytes;
  if (params_.queue.ecn_at_dequeue) mark(pkt, queued_bytes_);
  ++tx_packets_;
  tx_bytes_ += pkt.frame_bytes;
  // The owner may refill this queue from here: busy_until_ is already set.
  from_->on_dequeue(now, pkt, from_port_);
  transmit(p);
}

void Link::wake_at(SimTime at) {
  if (wake_pending_) return;
  wake_pending_ = true;
  ctx_.events.schedule(at, this, std::uint64_t{kWake} << kKindShift);
}

void Link::on_other_event(SimTime now, std::uint64_t arg) {
  switch (arg >> kKindShift) {
    case kArrive: {
      const auto p = static_cast<PacketId>(arg);
      if (((arg >> 32) & kEpochMask) != epoch_ || state_ == LinkState::kDown) {
        arrive_ctx_->drop(p, DropCause::kLinkDown);
      } else if (state_ == LinkState::kBlackHole) {
        arrive_ctx_->drop(p, DropCause::kBlackHole);
      } else {
        to_->receive(now, p, to_port_);
      }
      return;
    }
    case kWake: {
      wake_pending_ = false;
      if (paused_ || head_ == kNoPacket) return;
      if (now < busy_until_) {
        wake_at(busy_until_);
        return;
      }
      PacketId p = head_;
      Packet& pkt = ctx_.packets[p];
      head_ = pkt.next;
      if (head_ == kNoPacket) tail_ = kNoPacket;
      --queued_packets_;
      queued_bytes_ -= pkt.frame_bytes;
      start(now, p);
      if (head_ != kNoPacket && !paused_) wake_at(busy_until_);
      return;
    }
    case kPause:
      set_paused(now, true);
      return;
    case kResume:
      set_paused(now, false);
      return;
  }
}

void Link::send_pause(SimTime now, bool pause) {
  assert(!scheduled_);
  const std::uint64_t arg = std::uint64_t{pause ? kPause : kResume} << kKindShift;
  // Called by the far end: from its partition when the link crosses.
  if (back_) {
    back_->send_event(now + delay_, this, arg);
    return;
  }
  ctx_.events.schedule(now + delay_, this, arg);
}

void Link::set_paused(SimTime now, bool paused) {
  if (paused == paused_) return;
  paused_ = paused;
  if (paused) {
    ++stats_.pauses;
    paused_since_ = now;
    return;
  }
  stats_.paused_time += now - paused_since_;
  if (head_ != kNoPacket) wake_at(std::max(now, busy_until_));
}

void Link::set_state(SimTime now, LinkState state) {
  state_ = state;
  update_clean();
  if (scheduled_) {
    if (state == LinkState::kDown) {
      // What it held is lost: arrivals of an older epoch are dropped.
      epoch_ = (epoch_ + 1) & kEpochMask;
      departures_.clear();
      busy_until_ = now;
    }
    return;
  }
  if (state != LinkState::kDown) {
    if (head_ != kNoPacket && !paused_) wake_at(std::max(now, busy_until_));
    return;
  }
  while (head_ != kNoPacket) {
    PacketId p = head_;
    Packet& pkt = ctx_.packets[p];
    head_ = pkt.next;
    --queued_packets_;
    queued_bytes_ -= pkt.frame_bytes;
    from_->on_dequeue(now, pkt, from_port_);
    ctx_.drop(p, DropCause::kLinkDown);
  }
  tail_ = kNoPacket;
}

}  // namespace mroce::sim
