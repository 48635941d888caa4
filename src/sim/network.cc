#include "sim/network.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "sim/errors.h"
#include "sim/rng.h"

namespace mroce::sim {

const char* to_string(LossScope s) {
  switch (s) {
    case LossScope::kFabric:
      return "fabric";
    case LossScope::kHost:
      return "host";
    case LossScope::kAll:
      return "all";
  }
  return "?";
}

namespace {
constexpr std::uint64_t kSaltLink = 1;
constexpr std::uint64_t kSaltEcmp = 2;
constexpr std::uint32_t kUnreached = ~std::uint32_t{0};
}  // namespace

Network::Network(std::vector<SimContext*> partitions, const NetworkConfig& config)
    : parts_(std::move(partitions)), config_(config), graph_(build_topology(config.topology)) {
  if (config_.switches.pfc.enabled) {  // lossless egress
    config_.queue.limit_bytes = 0;
    config_.long_haul_queue.limit_bytes = 0;
  }
  const auto n = static_cast<std::uint32_t>(parts_.size());
  if (n == 0 || n > graph_.leaves.size()) {
    throw ConfigError("partitions = " + std::to_string(n) + ", but the fabric has " +
                      std::to_string(graph_.leaves.size()) +
                      " leaves: each partition needs one at least");
  }
  // Each tier in n equal runs of switches, in the order the topology made them.
  std::map<std::uint8_t, std::uint32_t> per_tier, seen;
  for (std::uint8_t t : graph_.tier) ++per_tier[t];
  for (std::uint8_t t : graph_.tier) {
    switch_part_.push_back(static_cast<std::uint32_t>(std::uint64_t{seen[t]++} * n / per_tier[t]));
  }
  for (std::uint32_t from = 0; from < n; ++from) {
    for (std::uint32_t to = 0; to < n; ++to) {
      crossings_.push_back(from == to ? nullptr
                                      : std::make_unique<Crossing>(*parts_[from], *parts_[to]));
    }
  }
  for (std::uint32_t h = 0; h < graph_.hosts; ++h) {
    host_map_.loc.push_back(graph_.host_leaf[h] << 16 | graph_.host_slot[h]);
  }
  for (std::uint32_t h = 0; h < graph_.hosts; ++h) {
    hosts_.emplace_back(*parts_[partition_of_host(h)], h, planes(), config_.nic_queue_packets,
                        config_.steer_planes);
  }
  peer_.resize(graph_.switches());
  for (std::uint32_t p = 0; p < planes(); ++p) build_plane(p);
  if (lookahead_ == 0) {
    throw ConfigError("partitions = " + std::to_string(n) +
                      ": links between partitions have no delay, so no partition could run "
                      "ahead of another");
  }
  // Planes are copies: route one, give every plane the same tables.
  std::vector<RouteTable> tables = compute_routes(0);
  for (std::uint32_t p = 0; p < planes(); ++p) {
    for (std::uint32_t s = 0; s < graph_.switches(); ++s) switch_at(p, s).set_routes(tables[s]);
  }
}

LinkParams Network::host_link_params(bool uplink) const {
  LinkParams lp;
  lp.rate_bps = config_.topology.host_rate_bps;
  lp.delay = config_.topology.host_delay;
  if (!uplink) {
    lp.queue = config_.queue;  // a host NIC limits itself by packets
    lp.scheduled = switch_queues_scheduled();
  }
  if (config_.loss_scope != LossScope::kFabric) lp.loss_rate = config_.loss_rate;
  return lp;
}

LinkParams Network::fabric_link_params() const {
  LinkParams lp;
  lp.rate_bps = config_.topology.fabric_rate_bps;
  lp.delay = config_.topology.fabric_delay;
  lp.queue = config_.queue;
  lp.scheduled = switch_queues_scheduled();
  if (config_.loss_scope != LossScope::kHost) lp.loss_rate = config_.loss_rate;
  return lp;
}

LinkParams Network::long_haul_link_params() const {
  LinkParams lp = fabric_link_params();
  lp.rate_bps = config_.topology.long_haul_rate_bps;
  lp.delay = config_.topology.long_haul_delay;
  lp.queue = config_.long_haul_queue;
  return lp;
}

bool Network::switch_queues_scheduled() const {
  // Nothing pauses them and their switch needs no word of departures.
  return !config_.switches.pfc.enabled && config_.switches.shared_buffer_bytes == 0 &&
         !config_.queue.ecn_at_dequeue;
}

Link* Network::add_link(const LinkParams& params, Node* from, std::uint16_t from_port, Node* to,
                        std::uint16_t to_port, const LinkInfo& info) {
  LinkParams lp = params;
  lp.seed = derive_seed(config_.seed, kSaltLink, links_.size());
  const std::uint32_t a = partition_of(info.from_tier, info.from);
  const std::uint32_t b = partition_of(info.to_tier, info.to);
  Link* link = &links_.emplace_back(*parts_[a], lp, from, from_port, to, to_port);
  link_part_.push_back(a);
  link_by_index_.push_back(link);
  if (a != b) {
    crossing_link_.emplace(link, static_cast<std::uint32_t>(link_by_index_.size() - 1));
    link->set_crossing(crossings_[a * partitions() + b].get(),
                       crossings_[b * partitions() + a].get());
    lookahead_ = std::min(lookahead_, lp.delay);
  }
  link_info_.push_back(info);
  link_info_.back().link = link;
  return link;
}

void Network::build_plane(std::uint32_t plane) {
  const std::uint32_t base = static_cast<std::uint32_t>(switches_.size());
  for (std::uint32_t s = 0; s < graph_.switches(); ++s) {
    switches_.emplace_back(*parts_[switch_part_[s]], base + s, static_cast<std::uint8_t>(plane),
                           graph_.tier[s], config_.switches, host_map_,
                           derive_seed(config_.seed, kSaltEcmp, base + s));
  }
  const auto p8 = static_cast<std::uint8_t>(plane);
  for (const auto& cable : graph_.cables) {
    Switch& lo = switch_at(plane, cable.lower);
    Switch& hi = switch_at(plane, cable.upper);
    const auto lo_port = static_cast<std::uint16_t>(lo.port_count());
    const auto hi_port = static_cast<std::uint16_t>(hi.port_count());
    const std::uint8_t lt = graph_.tier[cable.lower], ht = graph_.tier[cable.upper];
    const LinkParams lp = cable.long_haul ? long_haul_link_params() : fabric_link_params();
    Link* up =
        add_link(lp, &lo, lo_port, &hi, hi_port, {nullptr, p8, lt, ht, cable.lower, cable.upper});
    Link* down =
        add_link(lp, &hi, hi_port, &lo, lo_port, {nullptr, p8, ht, lt, cable.upper, cable.lower});
    lo.add_port(up, down);
    hi.add_port(down, up);
    if (plane == 0) {
      peer_[cable.lower].push_back(static_cast<std::int32_t>(cable.upper));
      peer_[cable.upper].push_back(static_cast<std::int32_t>(cable.lower));
    }
  }
  std::vector<std::vector<std::uint16_t>> host_ports(graph_.leaves.size());
  for (std::uint32_t h = 0; h < graph_.hosts; ++h) {
    const std::uint32_t leaf = graph_.leaves[graph_.host_leaf[h]];
    Switch& sw = switch_at(plane, leaf);
    Host& host = hosts_[h];
    const auto port = static_cast<std::uint16_t>(sw.port_count());
    Link* up = add_link(host_link_params(true), &host, static_cast<std::uint16_t>(plane), &sw, port,
                        {nullptr, p8, kTierHost, kTierLeaf, h, leaf});
    Link* down =
        add_link(host_link_params(false), &sw, port, &host, static_cast<std::uint16_t>(plane),
                 {nullptr, p8, kTierLeaf, kTierHost, leaf, h});
    sw.add_port(down, up);
    host.attach_nic(plane, up);
    auto& slots = host_ports[graph_.host_leaf[h]];
    if (slots.size() <= graph_.host_slot[h]) slots.resize(graph_.host_slot[h] + 1, Switch::kNoPort);
    slots[graph_.host_slot[h]] = port;
    if (plane == 0) peer_[leaf].push_back(-1);
  }
  for (std::uint32_t l = 0; l < graph_.leaves.size(); ++l) {
    switch_at(plane, graph_.leaves[l]).set_leaf(l, std::move(host_ports[l]));
  }
}

std::vector<RouteTable> Network::compute_routes(std::uint32_t plane) const {
  const std::size_t n = graph_.switches();
  const std::size_t leaves = graph_.leaves.size();
  const std::size_t base = std::size_t{plane} * n;
  std::vector<RouteTable> tables(n);
  std::vector<std::map<std::vector<std::uint16_t>, std::uint32_t>> groups(n);
  for (auto& t : tables) t.leaf_route.assign(leaves, 0);
  std::vector<std::vector<std::uint16_t>> last_ports(n);
  std::vector<std::uint32_t> last_route(n, 0);
  std::vector<std::uint32_t> dist(n);
  std::vector<std::uint32_t> frontier;
  std::vector<std::uint16_t> ports;
  for (std::size_t li = 0; li < leaves; ++li) {
    const std::uint32_t target = graph_.leaves[li];
    std::fill(dist.begin(), dist.end(), kUnreached);
    dist[target] = 0;
    frontier.assign(1, target);
    // Breadth-first over reversed live links: dist[s] = hops from s to the target leaf.
    for (std::size_t i = 0; i < frontier.size(); ++i) {
      const std::uint32_t v = frontier[i];
      const Switch& sw = switches_[base + v];
      for (std::size_t q = 0; q < peer_[v].size(); ++q) {
        const std::int32_t u = peer_[v][q];
        if (u < 0 || !sw.in_link(static_cast<std::uint16_t>(q))->up()) continue;
        if (dist[u] != kUnreached) continue;
        dist[u] = dist[v] + 1;
        frontier.push_back(static_cast<std::uint32_t>(u));
      }
    }
    for (std::uint32_t s = 0; s < n; ++s) {
      if (s == target || dist[s] == kUnreached) continue;
      const Switch& sw = switches_[base + s];
      ports.clear();
      for (std::size_t q = 0; q < peer_[s].size(); ++q) {
        const std::int32_t next = peer_[s][q];
        if (next < 0 || dist[next] + 1 != dist[s]) continue;
        if (!sw.out_link(static_cast<std::uint16_t>(q))->up()) continue;
        ports.push_back(static_cast<std::uint16_t>(q));
      }
      if (ports.empty()) continue;
      if (ports.size() > 255) throw ConfigError("an ECMP group has more than 255 members");
      RouteTable& t = tables[s];
      // Most leaves share the previous leaf's group (e.g. "every uplink"): skip the map.
      if (ports == last_ports[s]) {
        t.leaf_route[li] = last_route[s];
        continue;
      }
      auto [it, added] = groups[s].try_emplace(ports, static_cast<std::uint32_t>(t.ports.size()));
      if (added) t.ports.insert(t.ports.end(), ports.begin(), ports.end());
      t.leaf_route[li] = it->second << 8 | static_cast<std::uint32_t>(ports.size());
      last_ports[s] = ports;
      last_route[s] = t.leaf_route[li];
    }
  }
  return tables;
}

void Network::deliver_crossings(std::uint32_t to) {
  for (std::uint32_t from = 0; from < partitions(); ++from) {
    if (from != to) crossings_[from * partitions() + to]->deliver();
  }
}

void Network::set_local_partitions(std::uint32_t first, std::uint32_t end) {
  local_first_ = first;
  local_end_ = end;
}

void Network::write_crossings(std::uint32_t from, std::uint32_t to, Writer& w) {
  auto& items = crossings_[from * partitions() + to]->items();
  if (items.empty()) return;
  w.put(from);
  w.put(to);
  w.put<std::uint64_t>(items.size());
  for (const Crossing::Item& item : items) {
    w.put(item.at);
    w.put(crossing_link_.at(item.handler));
    w.put(item.arg);
    w.put<std::uint8_t>(item.has_packet);
    if (!item.has_packet) continue;
    w.put(item.packet);
    w.put_bytes(item.header, item.packet.header_len());
  }
  items.clear();
}

SimTime Network::earliest_crossing(std::uint32_t from) const {
  SimTime t = kSimNever;
  for (std::uint32_t to = 0; to < partitions(); ++to) {
    if (to != from) t = std::min(t, crossings_[from * partitions() + to]->earliest());
  }
  return t;
}

void Network::read_crossings(Reader& r) {
  while (!r.done()) {
    const auto from = r.get<std::uint32_t>();
    const auto to = r.get<std::uint32_t>();
    if (from >= partitions() || to >= partitions() || from == to || !local_partition(to)) {
      throw std::runtime_error("packets between ranks for a partition this rank does not run");
    }
    auto& items = crossings_[from * partitions() + to]->items();
    for (auto n = r.get<std::uint64_t>(); n > 0; --n) {
      Crossing::Item& item = items.emplace_back();
      item.at = r.get<SimTime>();
      const auto link = r.get<std::uint32_t>();
      if (link >= link_by_index_.size()) throw std::runtime_error("a crossing names no link");
      item.handler = link_by_index_[link];
      item.arg = r.get<std::uint64_t>();
      item.has_packet = r.get<std::uint8_t>() != 0;
      if (!item.has_packet) continue;
      item.packet = r.get<Packet>();
      if (item.packet.header_len() > kMaxHeaderBytes) {
        throw std::runtime_error("a crossing packet's header is too long");
      }
      r.get_bytes(item.header, item.packet.header_len());
    }
  }
}

void Network::recompute_routes(std::uint32_t plane) {
  std::vector<RouteTable> tables = compute_routes(plane);
  for (std::uint32_t s = 0; s < graph_.switches(); ++s) {
    switch_at(plane, s).set_routes(std::move(tables[s]));
  }
}

SimTime base_rtt(const TopologySpec& t, std::uint32_t max_hops, std::uint32_t long_haul_hops) {
  const std::uint32_t fabric_hops =
      max_hops >= 2 + long_haul_hops ? max_hops - 2 - long_haul_hops : 0;
  return 2 * (2 * t.host_delay + fabric_hops * t.fabric_delay + long_haul_hops * t.long_haul_delay);
}

std::uint64_t bdp_bytes(const TopologySpec& t, std::uint32_t max_hops,
                        std::uint32_t long_haul_hops) {
  const unsigned __int128 bits =
      static_cast<unsigned __int128>(t.host_rate_bps) * base_rtt(t, max_hops, long_haul_hops);
  return static_cast<std::uint64_t>(bits / 8 / kSec);
}

std::optional<std::uint32_t> Network::find_switch(const std::string& name) const {
  for (std::uint32_t s = 0; s < graph_.switches(); ++s) {
    if (graph_.name[s] == name) return s;
  }
  return std::nullopt;
}

std::vector<Link*> Network::plane_links(std::uint32_t plane) const {
  std::vector<Link*> out;
  for (const auto& li : link_info_) {
    if (li.plane == plane) out.push_back(li.link);
  }
  return out;
}

std::vector<Link*> Network::switch_links(std::uint32_t plane, std::uint32_t sw) const {
  std::vector<Link*> out;
  for (const auto& li : link_info_) {
    if (li.plane != plane) continue;
    const bool from = li.from_tier != kTierHost && li.from == sw;
    const bool to = li.to_tier != kTierHost && li.to == sw;
    if (from || to) out.push_back(li.link);
  }
  return out;
}

std::vector<Link*> Network::cable_links(std::uint32_t plane, std::uint32_t a,
                                        std::uint32_t b) const {
  std::vector<Link*> out;
  for (const auto& li : link_info_) {
    if (li.plane != plane || li.from_tier == kTierHost || li.to_tier == kTierHost) continue;
    if ((li.from == a && li.to == b) || (li.from == b && li.to == a)) out.push_back(li.link);
  }
  return out;
}

std::vector<Link*> Network::host_links(std::uint32_t plane, std::uint32_t host) const {
  std::vector<Link*> out;
  for (const auto& li : link_info_) {
    if (li.plane != plane) continue;
    if ((li.from_tier == kTierHost && li.from == host) ||
        (li.to_tier == kTierHost && li.to == host)) {
      out.push_back(li.link);
    }
  }
  return out;
}

}  // namespace mroce::sim
