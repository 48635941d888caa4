#include "sim/report.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sim/units.h"

namespace mroce::sim {

namespace {

using nlohmann::ordered_json;

double us(SimTime t) {
  return static_cast<double>(t) / kUs;
}

ordered_json fct_json(const FctStats& f) {
  return {{"count", f.count},
          {"p50_us", us(f.p50)},
          {"p99_us", us(f.p99)},
          {"max_us", us(f.max)},
          {"mean_us", us(f.mean)}};
}

const char* op_name(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
      return "write";
    case WrOpcode::kRdmaWriteWithImm:
      return "write_imm";
    case WrOpcode::kSend:
      return "send";
    case WrOpcode::kSendWithImm:
      return "send_imm";
    case WrOpcode::kRdmaRead:
      return "read";
    default:
      return "atomic";
  }
}

ordered_json run_json(const RunResult& r) {
  ordered_json j;
  j["transport"] = r.transport;
  j["pfc"] = r.pfc;
  j["complete"] = r.complete;
  j["sim_time_us"] = us(r.sim_time);
  j["fabric"] = {{"hosts", r.hosts},
                 {"switches", r.switches},
                 {"links", r.links},
                 {"base_rtt_us", us(r.base_rtt)},
                 {"queue_bytes", r.queue_bytes},
                 {"connections", r.connections}};
  j["fct"] = fct_json(r.fct);
  ordered_json ws = ordered_json::array();
  for (const auto& w : r.workloads) {
    ordered_json x = {{"name", w.name},          {"kind", w.kind},
                      {"flows", w.flows},        {"completed", w.completed},
                      {"failed", w.failed},      {"bytes", w.bytes},
                      {"start_us", us(w.start)}, {"finish_us", us(w.finish)},
                      {"fct", fct_json(w.fct)},  {"goodput_gbps", w.goodput_gbps}};
    if (w.algbw_gbps > 0) x["algbw_gbps"] = w.algbw_gbps;
    if (w.busbw_gbps > 0) x["busbw_gbps"] = w.busbw_gbps;
    if (!w.iteration_times.empty()) {
      ordered_json it = ordered_json::array();
      for (SimTime t : w.iteration_times) it.push_back(us(t));
      x["iteration_end_us"] = it;
    }
    ws.push_back(std::move(x));
  }
  j["workloads"] = std::move(ws);
  ordered_json drops;
  for (int c = 0; c < static_cast<int>(DropCause::kCount); ++c) {
    drops[to_string(static_cast<DropCause>(c))] = r.drops.by_cause[c];
  }
  drops["total"] = r.drops.total();
  drops["data_packets"] = r.drops.data_packets;
  j["network_drops"] = std::move(drops);
  ordered_json links;
  for (std::size_t c = 0; c < r.link_classes.size(); ++c) {
    const auto& l = r.link_classes[c];
    links[r.link_class_names[c]] = {
        {"links", l.links},           {"max_queue_bytes", l.max_queue_bytes},
        {"tx_packets", l.tx_packets}, {"tx_bytes", l.tx_bytes},
        {"ecn_marks", l.ecn_marks},   {"tail_drops", l.tail_drops},
        {"pfc_pauses", l.pauses},     {"pfc_paused_us", us(l.paused_time)}};
  }
  j["links"] = std::move(links);
  j["pfc_pause_frames"] = r.pause_frames;
  const auto& t = r.transport_totals;
  ordered_json tdrops;
  for (int d = 0; d < static_cast<int>(DropReason::kCount); ++d) {
    if (t.drops[d]) tdrops[to_string(static_cast<DropReason>(d))] = t.drops[d];
  }
  j["transport_counters"] = {
      {"tx_packets", t.tx_packets},           {"tx_bytes", t.tx_bytes},
      {"tx_data_packets", t.tx_data_packets}, {"tx_retransmits", t.tx_retransmits},
      {"rx_packets", t.rx_packets},           {"rx_ce_packets", t.rx_ce_packets},
      {"path_failures", t.path_failures},     {"reentropies", t.reentropies},
      {"paths_home", t.paths_home},           {"drops", tdrops}};
  j["transport_events"] = r.transport_events;
  ordered_json fails = ordered_json::array();
  for (const auto& f : r.failures) fails.push_back({{"time_us", us(f.time)}, {"what", f.what}});
  j["failures"] = std::move(fails);
  ordered_json ev = ordered_json::array();
  for (const auto& e : r.event_log) {
    ev.push_back({{"time_us", us(e.time)},
                  {"host", e.host},
                  {"event", to_string(e.event.kind)},
                  {"conn", e.event.conn},
                  {"path", e.event.path},
                  {"plane", e.event.plane}});
  }
  j["transport_event_log"] = std::move(ev);
  const double wall = r.wall_seconds > 0 ? r.wall_seconds : 1e-9;
  j["simulator"] = {{"wall_seconds", r.wall_seconds},
                    {"events", r.events},
                    {"events_per_second", static_cast<double>(r.events) / wall},
                    {"packets_sent", r.packets_sent},
                    {"data_packets_sent", r.data_packets_sent},
                    {"data_packets_delivered", r.data_packets_delivered},
                    {"data_packets_per_second", static_cast<double>(r.data_packets_sent) / wall},
                    {"payload_bytes_delivered", r.payload_bytes_delivered},
                    {"packet_pool", r.peak_packets},
                    {"peak_rss_bytes", r.peak_rss_bytes},
                    {"windows", r.windows},
                    {"rank_sync_seconds", r.rank_sync_seconds}};
  return j;
}

std::ofstream open_out(const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  return out;
}

std::string file_safe(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
  return out;
}

// Share of each traced path in the bytes its connection sent during each interval.
struct PathRow {
  SimTime time;
  ConnId conn;
  std::uint16_t path;
  const PathStats* stats;
  double share;
};
std::vector<PathRow> path_rows(const RunResult& r) {
  std::vector<PathRow> rows;
  std::map<std::pair<ConnId, std::uint16_t>, std::uint64_t> last;
  std::size_t i = 0;
  while (i < r.path_samples.size()) {
    std::size_t j = i;
    std::map<ConnId, std::uint64_t> total;
    std::vector<std::uint64_t> delta;
    for (; j < r.path_samples.size() && r.path_samples[j].time == r.path_samples[i].time; ++j) {
      const auto& s = r.path_samples[j];
      auto& prev = last[{s.conn, s.path}];
      const std::uint64_t d = s.stats.tx_bytes >= prev ? s.stats.tx_bytes - prev : 0;
      prev = s.stats.tx_bytes;
      delta.push_back(d);
      total[s.conn] += d;
    }
    for (std::size_t k = i; k < j; ++k) {
      const auto& s = r.path_samples[k];
      const std::uint64_t t = total[s.conn];
      rows.push_back({s.time, s.conn, s.path, &s.stats,
                      t ? static_cast<double>(delta[k - i]) / static_cast<double>(t) : 0.0});
    }
    i = j;
  }
  return rows;
}

void write_samples(std::ostream& out, const RunResult& r, bool with_transport) {
  for (const auto& s : r.samples) {
    if (with_transport) out << r.transport << ',';
    out << us(s.time) << ',' << s.rx_gbps << ',' << s.goodput_gbps << ',' << s.drops << ','
        << s.paused_links << ',' << s.packets_in_network << '\n';
  }
}

void run_gnuplot(const std::string& dir, const std::string& script_name,
                 const std::string& script) {
  open_out(dir + "/" + script_name) << script;
  const std::string cmd = "cd '" + dir + "' && gnuplot '" + script_name + "' 2>gnuplot.log";
  if (std::system(cmd.c_str()) != 0) {
    throw std::runtime_error("gnuplot failed on " + dir + "/" + script_name + " (see " + dir +
                             "/gnuplot.log; is gnuplot installed?)");
  }
}

}  // namespace

std::string to_json(const Scenario& s, const std::vector<RunResult>& runs) {
  ordered_json j;
  const auto& t = s.network.topology;
  j["scenario"] = {{"name", s.name},
                   {"description", s.description},
                   {"seed", s.seed},
                   {"topology",
                    {{"kind", to_string(t.kind)},
                     {"planes", t.planes},
                     {"k", t.k},
                     {"hosts_per_leaf", t.hosts_per_leaf},
                     {"oversubscription", t.oversubscription},
                     {"host_link_gbps", static_cast<double>(t.host_rate_bps) / 1e9},
                     {"fabric_link_gbps", static_cast<double>(t.fabric_rate_bps) / 1e9},
                     {"host_link_delay_us", us(t.host_delay)},
                     {"fabric_link_delay_us", us(t.fabric_delay)},
                     {"data_centers", t.data_centers},
                     {"long_haul_gbps",
                      t.data_centers > 1 ? static_cast<double>(t.long_haul_rate_bps) / 1e9 : 0.0},
                     {"long_haul_delay_us", t.data_centers > 1 ? us(t.long_haul_delay) : 0.0}}},
                   {"loss_rate", s.network.loss_rate},
                   {"loss_scope", to_string(s.network.loss_scope)},
                   {"failures", s.failures.size()}};
  ordered_json rs = ordered_json::array();
  for (const auto& r : runs) rs.push_back(run_json(r));
  j["runs"] = std::move(rs);
  return j.dump(2) + "\n";
}

void write_json(const std::string& path, const Scenario& s, const std::vector<RunResult>& runs) {
  if (path == "-") {
    std::fputs(to_json(s, runs).c_str(), stdout);
    return;
  }
  open_out(path) << to_json(s, runs);
}

void write_csv(const std::string& dir, const std::vector<RunResult>& runs) {
  std::filesystem::create_directories(dir);
  auto flows = open_out(dir + "/flows.csv");
  flows << "transport,flow,workload,initiator,target,src,dst,op,bytes,start_us,end_us,fct_us,"
           "status\n";
  for (const auto& r : runs) {
    for (std::size_t i = 0; i < r.flows.size(); ++i) {
      const Flow& f = r.flows[i];
      flows << r.transport << ',' << i << ',' << r.workloads[f.workload].name << ',' << f.initiator
            << ',' << f.target << ',' << f.src() << ',' << f.dst() << ',' << op_name(f.op) << ','
            << f.bytes << ',';
      if (f.start != kSimNever) flows << us(f.start);
      flows << ',';
      if (f.done())
        flows << us(f.end) << ',' << us(f.end - f.start);
      else
        flows << ',';
      flows << ',' << (!f.done() ? "incomplete" : f.failed ? "failed" : "ok") << '\n';
    }
  }
  auto samples = open_out(dir + "/samples.csv");
  samples << "transport,time_us,rx_gbps,goodput_gbps,drops,paused_links,packets_in_network\n";
  for (const auto& r : runs) write_samples(samples, r, true);
  auto queues = open_out(dir + "/queues.csv");
  queues << "transport,time_us,link_class,max_bytes\n";
  for (const auto& r : runs) {
    for (const auto& q : r.queue_samples) {
      queues << r.transport << ',' << us(q.time) << ',' << r.link_class_names[q.link_class] << ','
             << q.max_bytes << '\n';
    }
  }
  auto paths = open_out(dir + "/paths.csv");
  paths << "transport,time_us,host,conn,path,plane,src_port,state,cwnd_bytes,inflight_bytes,"
           "tx_bytes,share,retransmits,lost_packets,ce_packets,timeouts,srtt_us\n";
  for (const auto& r : runs) {
    for (const auto& row : path_rows(r)) {
      const PathStats& p = *row.stats;
      paths << r.transport << ',' << us(row.time) << ',' << r.path_samples.front().host << ','
            << row.conn << ',' << row.path << ',' << int{p.plane} << ',' << p.src_port << ','
            << to_string(p.state) << ',' << p.cwnd_bytes << ',' << p.inflight_bytes << ','
            << p.tx_bytes << ',' << row.share << ',' << p.retransmits << ',' << p.lost_packets
            << ',' << p.ce_packets << ',' << p.timeouts << ',' << static_cast<double>(p.srtt) / 1e3
            << '\n';
    }
  }
  auto drops = open_out(dir + "/drops.csv");
  drops << "transport,where,cause,packets\n";
  for (const auto& r : runs) {
    for (int c = 0; c < static_cast<int>(DropCause::kCount); ++c) {
      drops << r.transport << ",network," << to_string(static_cast<DropCause>(c)) << ','
            << r.drops.by_cause[c] << '\n';
    }
    for (int d = 0; d < static_cast<int>(DropReason::kCount); ++d) {
      drops << r.transport << ",transport," << to_string(static_cast<DropReason>(d)) << ','
            << r.transport_totals.drops[d] << '\n';
    }
  }
  auto summary = open_out(dir + "/summary.csv");
  summary << "transport,workload,kind,flows,completed,failed,fct_p50_us,fct_p99_us,fct_max_us,"
             "goodput_gbps,algbw_gbps,busbw_gbps,retransmits,network_drops,pfc_pause_frames\n";
  for (const auto& r : runs) {
    for (const auto& w : r.workloads) {
      summary << r.transport << ',' << w.name << ',' << w.kind << ',' << w.flows << ','
              << w.completed << ',' << w.failed << ',' << us(w.fct.p50) << ',' << us(w.fct.p99)
              << ',' << us(w.fct.max) << ',' << w.goodput_gbps << ',' << w.algbw_gbps << ','
              << w.busbw_gbps << ',' << r.transport_totals.tx_retransmits << ',' << r.drops.total()
              << ',' << r.pause_frames << '\n';
    }
  }
}

void write_plots(const std::string& dir, const Scenario& s, const std::vector<RunResult>& runs) {
  std::filesystem::create_directories(dir);
  const std::string head =
      "set terminal pngcairo size 1000,560 noenhanced font ',11'\n"
      "set datafile separator ','\nset grid\nset key outside right top\n";
  std::string title = s.name;

  // Throughput over time, every transport on one chart.
  std::string plot;
  for (const auto& r : runs) {
    const std::string f = "samples_" + file_safe(r.transport) + ".csv";
    auto out = open_out(dir + "/" + f);
    write_samples(out, r, false);
    plot += std::string(plot.empty() ? "plot " : ", ") + "'" + f +
            "' using 1:2 with lines lw 2 title '" + r.transport + " delivered', '" + f +
            "' using 1:3 with steps title '" + r.transport + " completed'";
  }
  run_gnuplot(dir, "throughput.gp",
              head + "set output 'throughput.png'\nset title '" + title +
                  ": throughput'\nset xlabel 'time (us)'\nset ylabel 'Gbit/s'\n" + plot + "\n");

  // Flow completion time CDF.
  plot.clear();
  for (const auto& r : runs) {
    std::vector<SimTime> fct;
    for (const Flow& f : r.flows) {
      if (f.done() && !f.failed) fct.push_back(f.end - f.start);
    }
    std::sort(fct.begin(), fct.end());
    const std::string f = "fct_" + file_safe(r.transport) + ".csv";
    auto out = open_out(dir + "/" + f);
    for (std::size_t i = 0; i < fct.size(); ++i) {
      out << us(fct[i]) << ',' << static_cast<double>(i + 1) / static_cast<double>(fct.size())
          << '\n';
    }
    if (!fct.empty()) {
      plot += std::string(plot.empty() ? "plot " : ", ") + "'" + f +
              "' using 1:2 with steps lw 2 title '" + r.transport + "'";
    }
  }
  if (!plot.empty()) {
    run_gnuplot(dir, "fct_cdf.gp",
                head + "set output 'fct_cdf.png'\nset title '" + title +
                    ": flow completion times'\nset xlabel 'FCT (us)'\nset ylabel 'fraction of "
                    "flows'\nset yrange [0:1]\n" +
                    plot + "\n");
  }

  for (const auto& r : runs) {
    const std::string t = file_safe(r.transport);
    // Queue depth per link class.
    const std::string qf = "queues_" + t + ".csv";
    {
      auto out = open_out(dir + "/" + qf);
      std::map<SimTime, std::vector<std::uint64_t>> rows;
      for (const auto& q : r.queue_samples) {
        auto& row = rows[q.time];
        row.resize(r.link_class_names.size());
        row[q.link_class] = q.max_bytes;
      }
      for (const auto& [time, row] : rows) {
        out << us(time);
        for (auto v : row) out << ',' << static_cast<double>(v) / 1024.0;
        out << '\n';
      }
    }
    plot.clear();
    for (std::size_t c = 0; c < r.link_class_names.size(); ++c) {
      plot += std::string(plot.empty() ? "plot " : ", ") + "'" + qf +
              "' using 1:" + std::to_string(c + 2) + " with lines title '" + r.link_class_names[c] +
              "'";
    }
    run_gnuplot(dir, "queues_" + t + ".gp",
                head + "set output 'queues_" + t + ".png'\nset title '" + title + " (" +
                    r.transport +
                    "): largest queue per link class'\nset xlabel 'time (us)'\nset ylabel "
                    "'KiB'\n" +
                    plot + "\n");

    // Per-path window and traffic share of the first traced connection.
    if (r.path_samples.empty()) continue;
    const ConnId conn = r.path_samples.front().conn;
    const std::string pf = "paths_" + t + ".csv";
    std::uint16_t max_path = 0;
    {
      // One block per path (gnuplot's "index"), rows in time order.
      std::map<std::uint16_t, std::vector<const PathRow*>> by_path;
      const std::vector<PathRow> rows = path_rows(r);
      for (const auto& row : rows) {
        if (row.conn == conn) by_path[row.path].push_back(&row);
      }
      auto out = open_out(dir + "/" + pf);
      for (const auto& [path, list] : by_path) {
        for (const PathRow* row : list) {
          out << row->path << ',' << us(row->time) << ',' << row->stats->cwnd_bytes / 1024.0 << ','
              << row->share << '\n';
        }
        out << "\n\n";
        max_path = std::max(max_path, path);
      }
    }
    std::string cwnd, share;
    for (std::uint32_t p = 0; p <= max_path; ++p) {
      const std::string sel = "' index " + std::to_string(p) + " using 2:";
      cwnd += std::string(cwnd.empty() ? "plot " : ", ") + "'" + pf + sel + "3 with lines notitle";
      share +=
          std::string(share.empty() ? "plot " : ", ") + "'" + pf + sel + "4 with lines notitle";
    }
    run_gnuplot(dir, "paths_" + t + ".gp",
                "set terminal pngcairo size 1000,800 noenhanced font ',11'\nset datafile "
                "separator ','\nset grid\nset output 'paths_" +
                    t + ".png'\nset multiplot layout 2,1 title '" + title + " (" + r.transport +
                    "): paths of host " + std::to_string(r.path_samples.front().host) +
                    " connection " + std::to_string(conn) + "'\nset ylabel 'cwnd (KiB)'\n" + cwnd +
                    "\nset xlabel 'time (us)'\nset ylabel 'share of bytes sent'\nset yrange "
                    "[0:1]\n" +
                    share + "\nunset multiplot\n");
  }
}

std::string text_summary(const RunResult& r) {
  std::ostringstream o;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %s in %s simulated, %.2f s wall\n", r.transport.c_str(),
                r.complete ? "complete" : "INCOMPLETE", format_time(r.sim_time).c_str(),
                r.wall_seconds);
  o << buf;
  for (const auto& w : r.workloads) {
    std::snprintf(buf, sizeof buf,
                  "  %-16s %llu/%llu flows  FCT p50 %.1f us  p99 %.1f us  max %.1f us  goodput "
                  "%.1f Gbit/s",
                  w.name.c_str(), static_cast<unsigned long long>(w.completed),
                  static_cast<unsigned long long>(w.flows), us(w.fct.p50), us(w.fct.p99),
                  us(w.fct.max), w.goodput_gbps);
    o << buf;
    if (w.algbw_gbps > 0) {
      std::snprintf(buf, sizeof buf, "  algbw %.1f Gbit/s", w.algbw_gbps);
      o << buf;
    }
    if (w.busbw_gbps > 0) {
      std::snprintf(buf, sizeof buf, "  busbw %.1f Gbit/s", w.busbw_gbps);
      o << buf;
    }
    o << '\n';
  }
  std::uint64_t max_q = 0;
  for (const auto& l : r.link_classes) max_q = std::max(max_q, l.max_queue_bytes);
  const double wall = r.wall_seconds > 0 ? r.wall_seconds : 1e-9;
  std::snprintf(buf, sizeof buf,
                "  drops %llu (queue %llu, loss %llu, failure %llu)  retransmits %llu  max queue "
                "%s  PFC pauses %llu\n  paths failed %llu  re-entropies %llu  paths home %llu\n"
                "  simulator: %.2fM events/s, %.0fK data packets/s, peak RSS "
                "%.0f MB\n",
                static_cast<unsigned long long>(r.drops.total()),
                static_cast<unsigned long long>(r.drops[DropCause::kQueueFull]) +
                    r.drops[DropCause::kSharedBuffer],
                static_cast<unsigned long long>(r.drops[DropCause::kRandomLoss]),
                static_cast<unsigned long long>(r.drops[DropCause::kBlackHole]) +
                    r.drops[DropCause::kLinkDown] + r.drops[DropCause::kNoRoute],
                static_cast<unsigned long long>(r.transport_totals.tx_retransmits),
                format_bytes(max_q).c_str(), static_cast<unsigned long long>(r.pause_frames),
                static_cast<unsigned long long>(r.transport_totals.path_failures),
                static_cast<unsigned long long>(r.transport_totals.reentropies),
                static_cast<unsigned long long>(r.transport_totals.paths_home),
                static_cast<double>(r.events) / wall / 1e6,
                static_cast<double>(r.data_packets_sent) / wall / 1e3,
                static_cast<double>(r.peak_rss_bytes) / 1e6);
  o << buf;
  return o.str();
}

}  // namespace mroce::sim
