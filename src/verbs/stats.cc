#include "verbs/stats.h"

#include <cinttypes>
#include <cstdio>

namespace mroce::verbs {
namespace {

// Appends JSON members; every name and string value here is plain ASCII without quotes
// or backslashes (counter names, enum names, addresses), except device names, which
// are escaped all the same.
class Json {
 public:
  void open(char c) {
    comma();
    out_ += c;
    first_ = true;
  }
  void close(char c) {
    out_ += c;
    first_ = false;
  }
  void key(std::string_view k) {
    comma();
    string(k);
    out_ += ':';
    first_ = true;  // the value follows without a comma
  }
  void number(std::string_view k, std::uint64_t v) {
    key(k);
    char buf[24];
    std::snprintf(buf, sizeof buf, "%" PRIu64, v);
    out_ += buf;
    first_ = false;
  }
  void text(std::string_view k, std::string_view v) {
    key(k);
    string(v);
    first_ = false;
  }
  std::string take() { return std::move(out_); }

 private:
  void comma() {
    if (!first_) out_ += ',';
    first_ = false;
  }
  void string(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      if (c == '"' || c == '\\') out_ += '\\';
      if (static_cast<unsigned char>(c) < 0x20) c = '?';
      out_ += c;
    }
    out_ += '"';
  }

  std::string out_;
  bool first_ = true;
};

void counters_of(Json& j, const std::vector<NamedCounter>& list) {
  for (const NamedCounter& c : list) j.number(c.name, c.value);
}

void path_json(Json& j, std::uint16_t index, const PathStats& p) {
  j.open('{');
  j.number("path", index);
  j.text("state", to_string(p.state));
  j.number("plane", p.plane);
  j.number("generation", p.generation);
  j.number("src_port", p.src_port);
  j.number("tx_packets", p.tx_packets);
  j.number("tx_bytes", p.tx_bytes);
  j.number("acked_packets", p.acked_packets);
  j.number("ce_packets", p.ce_packets);
  j.number("retransmits", p.retransmits);
  j.number("lost_packets", p.lost_packets);
  j.number("timeouts", p.timeouts);
  j.number("tail_probes", p.tail_probes);
  j.number("reentropies", p.reentropies);
  j.number("cwnd_bytes", p.cwnd_bytes);
  j.number("inflight_bytes", p.inflight_bytes);
  j.number("srtt_ns", p.srtt);
  j.number("min_rtt_ns", p.min_rtt);
  j.close('}');
}

void connection_json(Json& j, const ConnectionReport& r) {
  const ConnStats& c = r.conn;
  j.open('{');
  j.number("id", r.id);
  j.text("state", to_string(c.state));
  j.text("peer", c.peer.addr.to_string());
  j.number("peer_port", c.peer.port);
  j.number("paths", c.paths);
  j.number("planes", c.planes);
  j.number("streams", c.streams);
  j.number("tx_data_bytes", c.tx_data_bytes);
  j.number("rx_data_bytes", c.rx_data_bytes);
  j.number("retransmits", c.retransmits);
  j.number("reentropies", c.reentropies);
  j.number("path_failures", c.path_failures);
  j.number("plane_failures", c.plane_failures);
  j.number("cwnd_bytes", c.cwnd_bytes);
  j.number("inflight_bytes", c.inflight_bytes);
  j.number("open_messages", c.open_messages);
  j.number("inbound_messages", c.inbound_messages);
  j.number("rate_hint_bps", c.rate_hint_bps);
  j.number("pacing_rate_bps", c.pacing_rate_bps);
  j.number("inbound_senders", c.inbound_senders);
  j.key("path_stats");
  j.open('[');
  for (std::size_t i = 0; i < r.paths.size(); ++i) {
    path_json(j, static_cast<std::uint16_t>(i), r.paths[i]);
  }
  j.close(']');
  j.close('}');
}

}  // namespace

std::vector<NamedCounter> device_counters(const Device& d) {
  const Counters c = d.counters();
  const DatapathCounters p = d.datapath_counters();
  std::vector<NamedCounter> out = {
      {"rx_packets", c.rx_packets},           {"rx_bytes", c.rx_bytes},
      {"tx_packets", c.tx_packets},           {"tx_bytes", c.tx_bytes},
      {"tx_data_packets", c.tx_data_packets}, {"tx_retransmits", c.tx_retransmits},
      {"rx_ce_packets", c.rx_ce_packets},     {"rx_drops", c.total_drops()},
  };
  for (int r = 0; r < static_cast<int>(DropReason::kCount); ++r) {
    out.push_back({std::string("drop_") + to_string(DropReason(r)), c.drops[r]});
  }
  const NamedCounter datapath[] = {
      {"tx_datagrams", p.tx_datagrams},
      {"tx_syscalls", p.tx_syscalls},
      {"tx_gso_sends", p.tx_gso_sends},
      {"tx_dropped", p.tx_dropped},
      {"tx_gso_fallbacks", p.tx_gso_fallbacks},
      {"rx_datagrams", p.rx_datagrams},
      {"rx_syscalls", p.rx_syscalls},
      {"rx_ring_reads", p.rx_ring_reads},
      {"rx_gro_reads", p.rx_gro_reads},
      {"rx_truncated", p.rx_truncated},
      {"rx_socket_drops", p.rx_socket_drops},
      {"rx_local_ce", p.rx_local_ce},
      {"wakeups", p.wakeups},
  };
  out.insert(out.end(), std::begin(datapath), std::end(datapath));
  return out;
}

std::string stats_json(const Device& d, const StatsIdentity& id, std::string_view query) {
  const bool counters = query != "connections";
  const bool connections = query != "counters";
  Json j;
  j.open('{');
  j.number("pid", static_cast<std::uint64_t>(id.pid));
  j.text("device", id.device);
  j.number("slot", static_cast<std::uint64_t>(id.slot));
  j.text("address", id.address);
  j.number("port", id.port);
  if (counters) {
    j.key("counters");
    j.open('{');
    counters_of(j, device_counters(d));
    j.close('}');
  }
  if (connections) {
    j.key("connections");
    j.open('[');
    for (const ConnectionReport& r : d.connections()) connection_json(j, r);
    j.close(']');
  }
  j.close('}');
  return j.take();
}

}  // namespace mroce::verbs
