#include "sim/switch.h"

#include <algorithm>

#include "sim/addressing.h"
#include "sim/ecmp.h"

namespace mroce::sim {

Switch::Switch(SimContext& ctx, std::uint32_t id, std::uint8_t plane, std::uint8_t tier,
               const SwitchConfig& config, const HostMap& hosts, std::uint64_t hash_seed)
    : ctx_(ctx),
      hosts_(hosts),
      hash_seed_(hash_seed),
      plane_(plane),
      accounting_(config.pfc.enabled || config.shared_buffer_bytes != 0),
      id_(id),
      tier_(tier),
      config_(config) {}

std::uint16_t Switch::add_port(Link* out, Link* in) {
  out_.push_back(out);
  in_.push_back(in);
  ingress_bytes_.push_back(0);
  pausing_.push_back(false);
  return static_cast<std::uint16_t>(out_.size() - 1);
}

void Switch::set_leaf(std::uint32_t leaf, std::vector<std::uint16_t> host_ports) {
  leaf_ = leaf;
  host_ports_ = std::move(host_ports);
}

std::uint16_t Switch::select_port(const Packet& p) const {
  // The host number of addressing.h; a network below 10 wraps out of range, as does
  // hi.lo = 0 in network 10.
  const std::uint32_t host = (((p.dst_ip >> 24) - 10u) << 16 | (p.dst_ip & 0xffff)) - 1;
  if (((p.dst_ip >> 16) & 0xff) != plane_ || host >= hosts_.loc.size()) return kNoPort;
  const std::uint32_t loc = hosts_.loc[host];
  const std::uint32_t leaf = loc >> 16;
  if (leaf == leaf_) return host_ports_[loc & 0xffff];
  const std::uint32_t route = routes_.leaf_route[leaf];
  const std::uint32_t n = route & 0xff;
  if (n <= 1) return n ? routes_.ports[route >> 8] : kNoPort;
  return routes_.ports[(route >> 8) + ecmp_pick(ecmp_hash(hash_seed_, p), n)];
}

void Switch::receive(SimTime now, PacketId id, std::uint16_t port) {
  Packet& p = ctx_.packets[id];
  ++stats_.rx_packets;
  const std::uint16_t out = select_port(p);
  if (out == kNoPort) {
    ctx_.drop(id, decode_ip(p.dst_ip) ? DropCause::kNoRoute : DropCause::kBadAddress);
    return;
  }
  if (!accounting_) {
    out_[out]->enqueue(now, id);
    return;
  }
  const std::uint32_t bytes = p.frame_bytes;
  if (config_.shared_buffer_bytes != 0 && used_bytes_ + bytes > config_.shared_buffer_bytes) {
    ctx_.drop(id, DropCause::kSharedBuffer);
    return;
  }
  // Charge before enqueueing: an idle port starts (and discharges) at once.
  p.ingress = port;
  used_bytes_ += bytes;
  ingress_bytes_[port] += bytes;
  stats_.peak_buffer_bytes = std::max(stats_.peak_buffer_bytes, used_bytes_);
  if (!out_[out]->enqueue(now, id)) {
    used_bytes_ -= bytes;
    ingress_bytes_[port] -= bytes;
    return;
  }
  if (config_.pfc.enabled && !pausing_[port] && ingress_bytes_[port] >= config_.pfc.xoff_bytes &&
      in_[port] != nullptr) {
    pausing_[port] = true;
    ++stats_.pause_frames;
    in_[port]->send_pause(now, true);
  }
}

void Switch::on_dequeue(SimTime now, const Packet& p, std::uint16_t) {
  if (!accounting_) return;
  used_bytes_ -= p.frame_bytes;
  ingress_bytes_[p.ingress] -= p.frame_bytes;
  if (pausing_[p.ingress] && ingress_bytes_[p.ingress] <= config_.pfc.xon_bytes) {
    pausing_[p.ingress] = false;
    in_[p.ingress]->send_pause(now, false);
  }
}

}  // namespace mroce::sim
