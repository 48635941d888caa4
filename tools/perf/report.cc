#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mroce::perf {

namespace {

const char* kRule =
    "---------------------------------------------------------------------------------------";

// The peer's report is whatever it sent (an object, parse_done_reply checked no more):
// a field that is missing or of another type reads as null, and a count as 0.
const nlohmann::json& member(const nlohmann::json& j, const std::string& key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::uint64_t get(const nlohmann::json& j, const std::string& key) {
  const nlohmann::json& v = member(j, key);
  return v.is_number_unsigned() ? v.get<std::uint64_t>() : 0;
}

// Sums a field over every path of every connection in a side's report.
std::uint64_t path_sum(const nlohmann::json& side, const char* key) {
  std::uint64_t n = 0;
  const nlohmann::json& conns = member(side, "connections");
  if (!conns.is_array()) return 0;
  for (const auto& c : conns) {
    const nlohmann::json& paths = member(c, "path_stats");
    if (!paths.is_array()) continue;
    for (const auto& p : paths) n += get(p, key);
  }
  return n;
}

std::uint64_t conn_sum(const nlohmann::json& side, const char* key) {
  std::uint64_t n = 0;
  const nlohmann::json& conns = member(side, "connections");
  if (!conns.is_array()) return 0;
  for (const auto& c : conns) n += get(c, key);
  return n;
}

}  // namespace

LatencyResult summarize(std::uint32_t size, std::vector<double>& s) {
  LatencyResult r;
  r.size = size;
  r.iterations = s.size();
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  double sum = 0;
  for (double x : s) sum += x;
  r.avg_us = sum / double(s.size());
  double var = 0;
  for (double x : s) var += (x - r.avg_us) * (x - r.avg_us);
  r.stdev_us = std::sqrt(var / double(s.size()));
  r.min_us = s.front();
  r.max_us = s.back();
  r.median_us = s[s.size() / 2];
  r.p99_us = s[std::min(s.size() - 1, s.size() * 99 / 100)];
  r.p999_us = s[std::min(s.size() - 1, s.size() * 999 / 1000)];
  return r;
}

void print_header(const Options& o, const std::string& peer) {
  const TestSpec& s = o.spec;
  const char* op = s.test == Test::kWrite  ? "RDMA_Write"
                   : s.test == Test::kSend ? "Send"
                                           : "RDMA_Read";
  std::printf("%s\n", kRule);
  std::printf("                    %s %s Test\n", op, s.latency ? "Latency" : "BW");
  std::printf(" Transport        : %s over UDP (%u paths, %zu local plane%s)\n",
              s.transport == TransportKind::kRoceV2 ? "RoCEv2 baseline" : "MetaRoCE",
              s.transport == TransportKind::kRoceV2 ? 1u : unsigned(s.paths),
              std::max<std::size_t>(1, o.device.addresses.size()),
              o.device.addresses.size() > 1 ? "s" : "");
  std::printf(" Peer             : %s\n", peer.c_str());
  std::printf(" Number of qps    : %u\n", s.qps);
  std::printf(" Mtu              : %u[B]\n", s.mtu);
  if (!s.latency) std::printf(" Tx depth         : %u\n", s.depth);
  if (s.duration > 0) {
    std::printf(" Duration         : %.2f[s] per size\n", s.duration);
  } else {
    std::printf(" Iterations       : %llu per size%s\n",
                static_cast<unsigned long long>(s.iterations), s.latency ? "" : " per qp");
  }
  std::printf(" Progress         : %s\n", o.device.progress == Progress::kManual   ? "manual"
                                          : o.device.progress == Progress::kThread ? "thread"
                                                                                   : "busy poll");
  std::printf(" Check            : %s\n", s.check ? "every byte" : "off");
  std::printf("%s\n", kRule);
  if (s.latency) {
    std::printf(
        " #bytes #iterations  t_min[usec]  t_max[usec]  t_typical[usec]  t_avg[usec]  "
        "t_stdev[usec]  99%% percentile[usec]  99.9%% percentile[usec]\n");
  } else {
    std::printf(
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
  }
  std::fflush(stdout);
}

void print_bandwidth(const BandwidthResult& r) {
  std::printf(" %-10u %-14llu %-18.2f %-20.2f %.6f\n", r.size,
              static_cast<unsigned long long>(r.messages), r.peak_gbps, r.gbps, r.mpps);
  std::fflush(stdout);
}

void print_latency(const LatencyResult& r) {
  std::printf(" %-6u %-12llu %-12.2f %-12.2f %-16.2f %-12.2f %-14.2f %-21.2f %.2f\n", r.size,
              static_cast<unsigned long long>(r.iterations), r.min_us, r.max_us, r.median_us,
              r.avg_us, r.stdev_us, r.p99_us, r.p999_us);
  std::fflush(stdout);
}

void print_footer() {
  std::printf("%s\n", kRule);
}

void print_counters(const nlohmann::json& client, const nlohmann::json& server) {
  const auto line = [](const char* name, std::uint64_t c, std::uint64_t s) {
    std::printf(" %-28s %14llu %14llu\n", name, static_cast<unsigned long long>(c),
                static_cast<unsigned long long>(s));
  };
  std::printf(" Counters                           client         server\n");
  const nlohmann::json& cc = member(client, "counters");
  const nlohmann::json& sc = member(server, "counters");
  line("data packets sent", get(cc, "tx_data_packets"), get(sc, "tx_data_packets"));
  line("retransmits", get(cc, "tx_retransmits"), get(sc, "tx_retransmits"));
  line("re-entropies", conn_sum(client, "reentropies"), conn_sum(server, "reentropies"));
  line("path failures", conn_sum(client, "path_failures"), conn_sum(server, "path_failures"));
  line("plane failures", conn_sum(client, "plane_failures"), conn_sum(server, "plane_failures"));
  line("timeouts", path_sum(client, "timeouts"), path_sum(server, "timeouts"));
  line("CE marks received", get(cc, "rx_ce_packets"), get(sc, "rx_ce_packets"));
  line("  of which local queue", get(member(client, "datapath"), "rx_local_ce"),
       get(member(server, "datapath"), "rx_local_ce"));
  line("CE marks reported by peer", path_sum(client, "ce_packets"), path_sum(server, "ce_packets"));
  line("kernel send drops", get(member(client, "datapath"), "tx_dropped"),
       get(member(server, "datapath"), "tx_dropped"));
  line("socket receive drops", get(member(client, "datapath"), "rx_socket_drops"),
       get(member(server, "datapath"), "rx_socket_drops"));
  line("UDP checksum failures (netns)", get(member(client, "datapath"), "rx_checksum_errors"),
       get(member(server, "datapath"), "rx_checksum_errors"));
  std::vector<std::string> reasons;
  for (const auto* side : {&cc, &sc}) {
    const nlohmann::json& drops = member(*side, "drops");
    if (!drops.is_object()) continue;
    for (auto it = drops.begin(); it != drops.end(); ++it) {
      if (std::find(reasons.begin(), reasons.end(), it.key()) == reasons.end()) {
        reasons.push_back(it.key());
      }
    }
  }
  for (const std::string& r : reasons) {
    const std::string name = "drops: " + r;
    const auto value = [&](const nlohmann::json& side) { return get(member(side, "drops"), r); };
    line(name.c_str(), value(cc), value(sc));
  }
  std::printf("%s\n", kRule);
  std::fflush(stdout);
}

nlohmann::json to_json(const BandwidthResult& r) {
  nlohmann::json series = nlohmann::json::array();
  for (const auto& [t, g] : r.series) series.push_back({t, g});
  return {{"size", r.size},
          {"messages", r.messages},
          {"seconds", r.seconds},
          {"gbit_s", r.gbps},
          {"peak_gbit_s", r.peak_gbps},
          {"mpps", r.mpps},
          {"start_unix_s", r.start_unix},
          {"series", series}};
}

nlohmann::json to_json(const LatencyResult& r) {
  return {{"size", r.size},         {"iterations", r.iterations}, {"min_us", r.min_us},
          {"max_us", r.max_us},     {"median_us", r.median_us},   {"avg_us", r.avg_us},
          {"stdev_us", r.stdev_us}, {"p99_us", r.p99_us},         {"p999_us", r.p999_us}};
}

}  // namespace mroce::perf
