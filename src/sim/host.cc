#include "sim/host.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/addressing.h"
#include "sim/ecmp.h"

namespace mroce::sim {

namespace {

std::uint32_t ipv4_or_zero(const Address& a) {
  return a.is_ipv4() ? a.ipv4_value() : 0;
}

}  // namespace

Host::Host(SimContext& ctx, std::uint32_t id, std::uint32_t planes, std::uint32_t nic_queue_packets,
           bool steer_planes)
    : ctx_(ctx),
      id_(id),
      nic_queue_packets_(nic_queue_packets),
      nics_(planes, nullptr),
      steer_planes_(steer_planes) {}

void Host::set_transport(std::unique_ptr<Transport> transport) {
  transport_ = std::move(transport);
  transport_->set_sink(this);
  scratch_.assign(std::max<std::size_t>(transport_->max_packet_size(), kMaxHeaderBytes), 0);
  blocked_ = 0;
  steers_ = steer_planes_ && nics_.size() > 1 && transport_->set_blocked_planes(0);
}

Errc Host::post_send(StreamId stream, const SendWr& wr) {
  ++depth_;
  Errc e = transport_->post_send(to_ns(ctx_.now()), stream, wr);
  --depth_;
  flush(ctx_.now());
  return e;
}

Errc Host::post_recv(StreamId stream, const RecvWr& wr) {
  ++depth_;
  Errc e = transport_->post_recv(to_ns(ctx_.now()), stream, wr);
  --depth_;
  flush(ctx_.now());
  return e;
}

Errc Host::connect_stream(StreamId stream, const Endpoint& peer, StreamId remote) {
  ++depth_;
  Errc e = transport_->connect_stream(to_ns(ctx_.now()), stream, peer, remote);
  --depth_;
  flush(ctx_.now());
  return e;
}

void Host::receive(SimTime now, PacketId id, std::uint16_t plane) {
  const Packet& p = ctx_.packets[id];
  RxMeta meta;
  meta.src = Address::ipv4(p.src_ip);
  meta.dst = Address::ipv4(p.dst_ip);
  meta.src_port = p.src_port;
  meta.dst_port = p.dst_port;
  meta.plane = static_cast<std::uint8_t>(plane);
  meta.ecn = p.ecn;
  ++stats_.rx_packets;
  if (p.payload_bytes > 0) {
    ++stats_.rx_data_packets;
    stats_.rx_payload_bytes += p.payload_bytes;
  }
  ++depth_;
  transport_->on_packet(to_ns(now), meta,
                        std::span<const std::uint8_t>(ctx_.packets.header(id), p.header_len()));
  --depth_;
  ctx_.packets.release(id);
  flush(now);
}

void Host::on_dequeue(SimTime now, const Packet&, std::uint16_t) {
  // A NIC queue has room again: let the engine fill it, unless we are already in a call.
  if (depth_ == 0 && !pumping_) flush(now);
}

void Host::on_event(SimTime now, std::uint64_t generation) {
  if (generation != timer_generation_) return;  // superseded by an earlier deadline
  timer_at_ = kSimNever;
  if (to_ns(now) >= transport_->next_deadline()) {
    // An engine whose deadline never moves past now would stall the run forever.
    same_time_timers_ = now == last_timer_ ? same_time_timers_ + 1 : 0;
    last_timer_ = now;
    if (same_time_timers_ > 100000) {
      throw std::runtime_error("host " + std::to_string(id_) +
                               ": transport deadline does not advance past " +
                               std::to_string(to_ns(now)) + " ns");
    }
    ++stats_.timer_calls;
    ++depth_;
    transport_->on_timer(to_ns(now));
    --depth_;
  }
  flush(now);
}

void Host::on_completion(const Completion& c) {
  if (listener_) listener_->on_completion(ctx_.now(), id_, c);
}

void Host::on_event(const Event& e) {
  if (listener_) listener_->on_transport_event(ctx_.now(), id_, e);
}

void Host::flush(SimTime now) {
  if (depth_ != 0) return;
  pump(now);
  rearm(now);
}

std::uint8_t Host::full_nics() const {
  const SimTime now = ctx_.now();
  std::uint8_t full = 0;
  for (std::size_t i = 0; i < nics_.size(); ++i) {
    if (nics_[i]->queued_packets(now) >= nic_queue_packets_) full |= std::uint8_t(1u << i);
  }
  return full;
}

void Host::pump(SimTime now) {
  if (pumping_) return;
  pumping_ = true;
  ++depth_;
  const Time t = to_ns(now);
  std::span<std::uint8_t> buf(scratch_);
  const std::uint8_t all = static_cast<std::uint8_t>((1u << nics_.size()) - 1);
  for (;;) {
    // A busy NIC idles the others unless the transport can send around it: one engine
    // feeds every NIC, and its next packet may be for the full one.
    const std::uint8_t full = full_nics();
    if (steers_) {
      if (full == all) break;
      if (full != blocked_) {
        blocked_ = full;
        transport_->set_blocked_planes(full);
      }
    } else if (full != 0) {
      break;
    }
    TxMeta meta;
    if (!transport_->poll_transmit(t, buf, &meta)) break;
    transmit(now, meta);
  }
  --depth_;
  pumping_ = false;
}

void Host::transmit(SimTime now, const TxMeta& meta) {
  if (meta.length > kMaxHeaderBytes || meta.length > meta.wire_length ||
      meta.wire_length > kMaxFrameBytes - kFrameOverhead) {
    throw std::runtime_error("host " + std::to_string(id_) + ": packet of " +
                             std::to_string(meta.length) + " header bytes (wire length " +
                             std::to_string(meta.wire_length) + ") does not fit the simulator's " +
                             std::to_string(kMaxHeaderBytes) +
                             "-byte headers; run engines with carry_payload=false");
  }
  PacketId id = ctx_.packets.alloc();
  Packet& p = ctx_.packets[id];
  p.src_ip = ipv4_or_zero(meta.src);
  p.dst_ip = ipv4_or_zero(meta.dst);
  p.src_port = meta.src_port;
  p.dst_port = meta.dst_port;
  p.frame_bytes = static_cast<std::uint16_t>(meta.wire_length + kFrameOverhead);
  p.payload_bytes = static_cast<std::uint16_t>(meta.wire_length - meta.length);
  p.ecn = meta.ecn;
  p.cls = meta.cls;
  ++ctx_.packets_sent;
  p.flow_hash = flow_hash(p);
  std::memcpy(ctx_.packets.header(id), scratch_.data(), meta.length);
  ++stats_.tx_packets;
  if (p.payload_bytes > 0) ++stats_.tx_data_packets;  // probes (NOPs) carry none
  if (meta.plane >= nics_.size() || p.dst_ip == 0) {
    ctx_.drop(id, DropCause::kBadAddress);
    return;
  }
  nics_[meta.plane]->enqueue(now, id);
}

void Host::rearm(SimTime now) {
  const Time deadline = transport_->next_deadline();
  if (deadline == kNever) return;
  const SimTime at = std::max(from_ns(deadline), now);
  // A deadline already due while a NIC is full is the engine waiting to transmit: the
  // NIC's next departure flushes again, so a timer now would only spin.
  if (at == now && full_nics() != 0) return;
  if (at >= timer_at_) return;
  timer_at_ = at;
  ctx_.events.schedule(at, this, ++timer_generation_);
}

}  // namespace mroce::sim
