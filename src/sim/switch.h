// An output-queued switch: each packet is routed to one output port (ECMP over the
// group toward the destination's leaf), admitted against the shared buffer, and
// queued there. With PFC on, bytes are also charged to the input port they came in
// on; crossing XOFF pauses the upstream sender, falling to XON resumes it. Without PFC
// or a shared buffer limit there is nothing to account: packets go straight to the
// output queue, whose departures then need no word back (Link, scheduled mode).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/context.h"
#include "sim/link.h"
#include "sim/node.h"

namespace mroce::sim {

struct PfcConfig {
  bool enabled = false;
  std::uint64_t xoff_bytes = 0;  // per input port
  std::uint64_t xon_bytes = 0;
};

struct SwitchConfig {
  std::uint64_t shared_buffer_bytes = 0;  // 0: no switch-wide limit
  PfcConfig pfc;
};

// Where each host hangs: its leaf (index among the plane's leaves) and its port slot
// there, packed as leaf << 16 | slot. Planes are copies, so one map serves them all.
struct HostMap {
  std::vector<std::uint32_t> loc;
  std::uint32_t leaf(std::uint32_t host) const { return loc[host] >> 16; }
  std::uint16_t slot(std::uint32_t host) const { return static_cast<std::uint16_t>(loc[host]); }
};

// Forwarding state toward each leaf: the ECMP group ports[start .. start + count),
// packed per leaf as start << 8 | count (0: unreachable). Groups are shared.
struct RouteTable {
  std::vector<std::uint32_t> leaf_route;
  std::vector<std::uint16_t> ports;
  std::uint32_t count(std::uint32_t leaf) const { return leaf_route[leaf] & 0xff; }
  const std::uint16_t* group(std::uint32_t leaf) const { return &ports[leaf_route[leaf] >> 8]; }
};

struct SwitchStats {
  std::uint64_t rx_packets = 0;
  std::uint64_t pause_frames = 0;  // PFC pauses sent upstream
  std::uint64_t peak_buffer_bytes = 0;
};

class Switch final : public Node {
 public:
  static constexpr std::uint16_t kNoPort = 0xffff;
  static constexpr std::uint32_t kNotLeaf = ~std::uint32_t{0};

  Switch(SimContext& ctx, std::uint32_t id, std::uint8_t plane, std::uint8_t tier,
         const SwitchConfig& config, const HostMap& hosts, std::uint64_t hash_seed);

  // Adds a port: `out` leaves through it, `in` arrives on it. Returns its number.
  std::uint16_t add_port(Link* out, Link* in);
  // Makes this switch the leaf of index `leaf`: host slot i hangs on port host_ports[i].
  void set_leaf(std::uint32_t leaf, std::vector<std::uint16_t> host_ports);
  void set_routes(RouteTable routes) { routes_ = std::move(routes); }

  // The output port for a packet, or kNoPort.
  std::uint16_t select_port(const Packet& p) const;

  void receive(SimTime now, PacketId p, std::uint16_t port) override;
  void on_dequeue(SimTime now, const Packet& p, std::uint16_t port) override;

  std::uint32_t id() const { return id_; }
  std::uint8_t plane() const { return plane_; }
  std::uint8_t tier() const { return tier_; }
  std::uint32_t leaf_index() const { return leaf_; }
  std::size_t port_count() const { return out_.size(); }
  Link* out_link(std::uint16_t port) const { return out_[port]; }
  Link* in_link(std::uint16_t port) const { return in_[port]; }
  const RouteTable& routes() const { return routes_; }
  const SwitchStats& stats() const { return stats_; }
  // Bytes held, when the switch accounts for them (PFC or a shared buffer limit).
  std::uint64_t buffer_bytes() const { return used_bytes_; }
  // Whether its output queues must report departures (else they can be scheduled).
  bool needs_dequeue() const { return accounting_; }

 private:
  // Hot: what forwarding a packet reads, first.
  SimContext& ctx_;
  const HostMap& hosts_;
  std::uint64_t hash_seed_;
  std::uint32_t leaf_ = kNotLeaf;
  std::uint8_t plane_;
  bool accounting_;  // PFC or a shared buffer: charge and release bytes per packet
  std::vector<Link*> out_;
  std::vector<std::uint16_t> host_ports_;
  RouteTable routes_;

  std::uint32_t id_;
  std::uint8_t tier_;
  SwitchConfig config_;
  std::vector<Link*> in_;
  std::vector<std::uint64_t> ingress_bytes_;
  std::vector<bool> pausing_;
  std::uint64_t used_bytes_ = 0;
  SwitchStats stats_;
};

}  // namespace mroce::sim
