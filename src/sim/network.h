// The fabric of one run: P planes, each a copy of the topology's switches and cables,
// plus the hosts with one NIC per plane. Builds every link with its rate, delay,
// queue and loss, computes routes, and applies failures.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/context.h"
#include "sim/crossing.h"
#include "sim/host.h"
#include "sim/link.h"
#include "sim/ranks.h"
#include "sim/switch.h"
#include "sim/topology.h"

namespace mroce::sim {

enum class LossScope : std::uint8_t {
  kFabric,  // switch-to-switch links
  kHost,    // host-to-leaf links, both directions
  kAll,
};
const char* to_string(LossScope);

struct NetworkConfig {
  TopologySpec topology;
  QueueConfig queue;            // every switch output queue (limit ignored with PFC on: lossless)
  QueueConfig long_haul_queue;  // the output queues onto long-haul links, likewise
  SwitchConfig switches;
  std::uint32_t nic_queue_packets = 2;  // per plane, waiting packets a host NIC holds
  bool steer_planes = true;  // tell a transport that can steer which of a host's NICs are full
  double loss_rate = 0;
  LossScope loss_scope = LossScope::kFabric;
  std::uint64_t seed = 1;
};

// Propagation-only round trip over a path of `max_hops` links (two of them host links,
// `long_haul_hops` of them long-haul), and its bandwidth-delay product at the host
// link rate.
SimTime base_rtt(const TopologySpec& spec, std::uint32_t max_hops,
                 std::uint32_t long_haul_hops = 0);
std::uint64_t bdp_bytes(const TopologySpec& spec, std::uint32_t max_hops,
                        std::uint32_t long_haul_hops = 0);

// Where a link sits, for statistics and failures.
struct LinkInfo {
  Link* link;
  std::uint8_t plane;
  std::uint8_t from_tier;
  std::uint8_t to_tier;
  std::uint32_t from;  // host number, or switch index within the plane
  std::uint32_t to;
};

class Network {
 public:
  Network(SimContext& ctx, const NetworkConfig& config) : Network({&ctx}, config) {}
  // Split over partitions, one context each (a run over several threads): hosts go with
  // their leaf, leaves, spines and cores each in equal runs of their tier, so that a
  // fat-tree splits by pods. Links between partitions hand packets over through a
  // Crossing; hosts never are apart from their leaf.
  Network(std::vector<SimContext*> partitions, const NetworkConfig& config);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  const TopologyGraph& graph() const { return graph_; }
  const NetworkConfig& config() const { return config_; }
  std::uint32_t planes() const { return config_.topology.planes; }
  std::uint32_t host_count() const { return graph_.hosts; }
  Host& host(std::uint32_t h) { return hosts_[h]; }
  const Host& host(std::uint32_t h) const { return hosts_[h]; }
  Switch& switch_at(std::uint32_t plane, std::uint32_t index) {
    return switches_[plane * graph_.switches() + index];
  }
  std::size_t switch_count() const { return switches_.size(); }
  Switch& switch_by_global(std::size_t i) { return switches_[i]; }
  const Switch& switch_by_global(std::size_t i) const { return switches_[i]; }
  const std::vector<LinkInfo>& links() const { return link_info_; }

  // Propagation-only round trip over the longest path, and its bandwidth-delay
  // product at the host link rate.
  SimTime base_rtt() const {
    return sim::base_rtt(config_.topology, graph_.max_hops, graph_.long_haul_hops);
  }
  std::uint64_t bdp_bytes() const {
    return sim::bdp_bytes(config_.topology, graph_.max_hops, graph_.long_haul_hops);
  }

  std::uint32_t partitions() const { return static_cast<std::uint32_t>(parts_.size()); }
  std::uint32_t partition_of_host(std::uint32_t h) const {
    return switch_part_[graph_.leaves[graph_.host_leaf[h]]];
  }
  // The shortest delay of a link between partitions (kSimNever if there is none): a
  // partition may run that far ahead of the others.
  SimTime lookahead() const { return lookahead_; }
  // Moves the packets sent toward partition `to` in the last window into its queue.
  void deliver_crossings(std::uint32_t to);

  // A run over ranks: this process runs partitions [first, end) and holds the others
  // idle. Statistics count what the local partitions own: hosts, switches and the links
  // they send on. By default every partition is local.
  void set_local_partitions(std::uint32_t first, std::uint32_t end);
  bool local_partition(std::uint32_t p) const { return p >= local_first_ && p < local_end_; }
  bool host_local(std::uint32_t h) const { return local_partition(partition_of_host(h)); }
  bool link_local(std::size_t i) const { return local_partition(link_part_[i]); }
  bool switch_local(std::size_t global) const {
    return local_partition(switch_part_[global % graph_.switches()]);
  }
  // What local partition `from` sent toward partition `to` in the last window, appended
  // to `w` and taken out of the crossing; read_crossings() puts it into the same
  // crossing in the process that runs `to`.
  void write_crossings(std::uint32_t from, std::uint32_t to, Writer& w);
  void read_crossings(Reader& r);
  // When the first packet or frame partition `from` sent in the last window is due.
  SimTime earliest_crossing(std::uint32_t from) const;

  std::optional<std::uint32_t> find_switch(const std::string& name) const;
  // Link sets for failures (both directions).
  std::vector<Link*> plane_links(std::uint32_t plane) const;
  std::vector<Link*> switch_links(std::uint32_t plane, std::uint32_t sw) const;
  std::vector<Link*> cable_links(std::uint32_t plane, std::uint32_t a, std::uint32_t b) const;
  std::vector<Link*> host_links(std::uint32_t plane, std::uint32_t host) const;

  // Recomputes plane's routing tables from the links that are not down: shortest paths
  // toward each leaf, ECMP over every next hop on one.
  void recompute_routes(std::uint32_t plane);

 private:
  void build_plane(std::uint32_t plane);
  Link* add_link(const LinkParams& params, Node* from, std::uint16_t from_port, Node* to,
                 std::uint16_t to_port, const LinkInfo& info);
  LinkParams host_link_params(bool uplink) const;
  LinkParams fabric_link_params() const;
  LinkParams long_haul_link_params() const;
  bool switch_queues_scheduled() const;
  std::vector<RouteTable> compute_routes(std::uint32_t plane) const;

  std::uint32_t partition_of(std::uint8_t tier, std::uint32_t index) const {
    return tier == kTierHost ? partition_of_host(index) : switch_part_[index];
  }

  std::vector<SimContext*> parts_;
  NetworkConfig config_;
  TopologyGraph graph_;
  std::vector<std::uint32_t> switch_part_;  // per switch of a plane
  std::vector<std::uint32_t> link_part_;    // per link: its sending end's
  std::uint32_t local_first_ = 0, local_end_ = ~std::uint32_t{0};
  // Links between partitions, by number: their crossings name them between ranks.
  std::unordered_map<const EventHandler*, std::uint32_t> crossing_link_;
  std::vector<Link*> link_by_index_;
  std::vector<std::unique_ptr<Crossing>> crossings_;  // [from * partitions + to]
  SimTime lookahead_ = kSimNever;
  HostMap host_map_;
  std::deque<Host> hosts_;
  std::deque<Switch> switches_;
  std::deque<Link> links_;
  std::vector<LinkInfo> link_info_;
  // peer_[s][port]: the switch (index within the plane) a port leads to, or -1 for a host.
  std::vector<std::vector<std::int32_t>> peer_;
};

}  // namespace mroce::sim
