// mroce-demo: the same RDMA WRITEs moved by two MetaRoCE engines and by two RoCEv2
// baseline engines over an in-memory lossy multipath network, side by side: goodput
// without loss, under random loss and with a dead spine, and what every path did.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "baseline/roce_engine.h"
#include "core/engine.h"
#include "harness/network.h"

namespace {

using namespace mroce;

struct Options {
  int paths = 16;
  int spines = 4;
  double loss = 0.01;
  std::uint32_t message = 1 << 20;
  int messages = 200;
  double gbps = 10;
  double cutoff = 1.5;  // a run is cut off after this many times the transfer's time at line rate
};

enum class Kind { kMetaRoce, kRoce };

const Address kSender = Address::ipv4(0x0a000001);
const Address kReceiver = Address::ipv4(0x0a000002);

std::uint16_t port_of(Kind k) {
  return k == Kind::kMetaRoce ? kDefaultPort : baseline::kRoceV2Port;
}

std::unique_ptr<Transport> make_transport(Kind k, const Options& o, int host) {
  const std::uint64_t rate = std::uint64_t(o.gbps * 1e9);
  const Address addr = host == 0 ? kSender : kReceiver;
  if (k == Kind::kMetaRoce) {
    EngineConfig c;
    c.planes = {addr};
    c.paths = std::uint16_t(o.paths);
    c.line_rate_bps = rate;
    c.rx_capacity_bps = rate;
    c.seed = std::uint64_t(host) + 1;
    return std::make_unique<Engine>(c);
  }
  baseline::RoceConfig c;
  c.planes = {addr};
  c.line_rate_bps = rate;
  c.seed = std::uint64_t(host) + 1;
  // The in-memory fabric's round trips are tens of microseconds: a NIC's 1 ms local ACK
  // timeout would make go-back-N look slower than it is there.
  c.ack_timeout = 100 * kMicrosecond;
  // Nothing in this network corrupts a packet, and a CRC over every 4 KiB payload at both
  // ends would make the baseline's runs several times slower in CPU than MetaRoCE's.
  c.icrc = false;
  return std::make_unique<baseline::RoceEngine>(c);
}

// The spine the baseline's one queue pair hashes onto: killing it is what a dead link
// does to the flows that cross it (MetaRoCE sprays over every spine, so any spine will do).
int roce_spine(const Options& o) {
  testing::Network net(1, o.spines, 7);
  baseline::RoceEngine e[2] = {baseline::RoceEngine(baseline::RoceConfig{}),
                               baseline::RoceEngine(baseline::RoceConfig{})};
  StreamId q[2] = {0, 0};
  for (auto i : {0, 1}) e[i].create_stream(StreamConfig{}, &q[i]);
  return net.spine_of(kSender, kReceiver, e[0].src_port_for(q[0], q[1]), baseline::kRoceV2Port);
}

// How long the transfer takes at the port's rate, payload only.
Time line_rate_time(const Options& o) {
  return Time(double(o.message) * o.messages * 8 / o.gbps);  // ns: bits / (Gbit/s)
}
Time limit_of(const Options& o) {
  return Time(double(line_rate_time(o)) * o.cutoff);
}

struct Result {
  double goodput_gbps = 0;
  std::size_t completed = 0;  // successful completions
  bool finished = false;      // every WRITE completed, successfully or not, within the limit
  bool byte_exact = false;
  std::uint64_t retransmits = 0;
  std::uint64_t timeouts = 0;
  ConnStats conn;
  std::vector<PathStats> paths;
  std::vector<int> spine_of_path;
  std::uint64_t network_drops = 0;
};

class Sink : public mroce::Sink {
 public:
  void on_completion(const Completion& c) override {
    ++completions;
    if (c.status != WcStatus::kSuccess) ++errors;
  }
  std::size_t completions = 0;
  std::size_t errors = 0;
};

Result run(const Options& o, Kind kind, double loss, int blackhole) {
  testing::Network net(1, o.spines, 7);
  const std::uint64_t rate = std::uint64_t(o.gbps * 1e9);
  std::unique_ptr<Transport> e[2];
  Sink sink[2];
  for (int h = 0; h < 2; ++h) {
    e[h] = make_transport(kind, o, h);
    e[h]->set_sink(&sink[h]);
    net.add_host(e[h].get(), {h == 0 ? kSender : kReceiver}, port_of(kind));
    net.uplink_rate(h, 0) = rate;
  }
  net.downlink(1, 0).rate_bps = rate;
  net.downlink(1, 0).ecn_threshold = 40;
  for (int s = 0; s < o.spines; ++s) {
    net.spine(0, s).loss = loss;
    net.spine(0, s).loss_all = true;
  }
  StreamConfig sc;
  sc.sq_depth = std::uint32_t(o.messages);
  StreamId a = 0, b = 0;
  e[0]->create_stream(sc, &a);
  e[1]->create_stream(sc, &b);
  e[0]->connect_stream(0, a, Endpoint{kReceiver, port_of(kind)}, b);
  e[1]->connect_stream(0, b, Endpoint{kSender, port_of(kind)}, a);
  std::vector<std::uint8_t> src(o.message), dst(std::size_t(o.message) * 2);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = std::uint8_t(i * 131 + 7);
  MrKeys ks, kd;
  e[0]->reg_mr(reinterpret_cast<std::uint64_t>(src.data()), src.size(), access::kAll, src.data(),
               &ks);
  e[1]->reg_mr(reinterpret_cast<std::uint64_t>(dst.data()), dst.size(), access::kAll, dst.data(),
               &kd);
  for (int i = 0; i < o.messages; ++i) {
    SendWr wr;
    wr.wr_id = std::uint64_t(i);
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.num_sge = 1;
    wr.sg[0] = Sge{reinterpret_cast<std::uint64_t>(src.data()), o.message, ks.lkey};
    // Alternate halves so that a message placed twice, or not at all, would show.
    wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data()) + std::uint64_t(i % 2) * o.message;
    wr.rkey = kd.rkey;
    e[0]->post_send(0, a, wr);
  }
  if (blackhole >= 0) {
    net.at(line_rate_time(o) / 2, [&net, blackhole] { net.spine(0, blackhole).blackhole = true; });
  }
  const std::size_t total = std::size_t(o.messages);
  const Time limit = limit_of(o);
  net.run_until([&] { return sink[0].completions >= total; }, limit);

  Result r;
  r.completed = sink[0].completions - sink[0].errors;
  r.finished = sink[0].completions >= total;
  // A run that did not deliver everything is judged over the whole limit: a failed queue
  // pair moves nothing after its failure, and a cut-off run was still moving.
  const Time elapsed = r.completed == total ? net.now() : std::max(net.now(), limit);
  r.goodput_gbps = double(o.message) * double(r.completed) * 8 / double(elapsed);
  r.byte_exact = r.finished && sink[0].errors == 0 &&
                 std::memcmp(src.data(), dst.data(), o.message) == 0 &&
                 std::memcmp(src.data(), dst.data() + o.message, o.message) == 0;
  r.retransmits = e[0]->counters().tx_retransmits;
  const ConnId conn = e[0]->stream_connection(a);
  e[0]->connection_stats(conn, &r.conn);
  for (std::uint16_t i = 0; i < r.conn.paths; ++i) {
    PathStats ps;
    e[0]->path_stats(conn, i, &ps);
    r.timeouts += ps.timeouts;
    r.paths.push_back(ps);
    r.spine_of_path.push_back(net.spine_of(kSender, kReceiver, ps.src_port, port_of(kind)));
  }
  r.network_drops = net.total_data_drops();
  return r;
}

void print_paths(const Result& r) {
  fmt::print("  {:>4} {:>5} {:>6} {:>7} {:>9} {:>8} {:>6} {:>6} {:>5} {:>9} {:>8}\n", "path",
             "port", "spine", "state", "packets", "retx", "lost", "ce", "reent", "cwnd KiB",
             "srtt us");
  for (std::size_t i = 0; i < r.paths.size(); ++i) {
    const PathStats& p = r.paths[i];
    fmt::print("  {:>4} {:>5} {:>6} {:>7} {:>9} {:>8} {:>6} {:>6} {:>5} {:>9.1f} {:>8.1f}\n", i,
               p.src_port, r.spine_of_path[i], to_string(p.state), p.tx_packets, p.retransmits,
               p.lost_packets, p.ce_packets, p.reentropies, p.cwnd_bytes / 1024.0,
               double(p.srtt) / 1000);
  }
}

// "yes", or why the run is not byte-exact: WRITEs that failed, or the time limit.
std::string outcome(const Result& r, const Options& o) {
  if (r.byte_exact) return "yes";
  if (!r.finished) return fmt::format("cut off, {}/{} done", r.completed, o.messages);
  if (r.completed < std::size_t(o.messages))
    return fmt::format("failed, {}/{} done", r.completed, o.messages);
  return "NO";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool verbose = false;
  CLI::App app{
      "mroce-demo: an in-memory network of parallel spines with random loss, and the same\n"
      "RDMA WRITEs moved by two MetaRoCE engines (one connection sprayed over many paths)\n"
      "and by two RoCEv2 baseline engines (one queue pair, one path, go-back-N, DCQCN).\n"
      "Runs the transfer without loss, with the chosen loss, with 10% loss, and with a\n"
      "spine black-holed halfway, and prints goodput side by side and what every path did."};
  app.add_option("--paths", o.paths, "paths per connection")->check(CLI::Range(1, 256));
  app.add_option("--spines", o.spines, "parallel spines (ECMP choices)")->check(CLI::Range(1, 64));
  app.add_option("--loss", o.loss, "random loss on every spine, as a fraction")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--message", o.message, "bytes per RDMA WRITE")->check(CLI::Range(1, 1 << 26));
  app.add_option("--messages", o.messages, "number of WRITEs")->check(CLI::Range(1, 100000));
  app.add_option("--gbps", o.gbps, "link and NIC rate, Gbit/s")->check(CLI::Range(0.01, 400.0));
  app.add_option("--cutoff", o.cutoff, "cut a run off after this many times its time at line rate")
      ->check(CLI::Range(1.0, 1000.0));
  app.add_flag("--verbose", verbose, "print every path in every run");
  // Bad arguments: one line and exit 2, as the other tools (CLI11 exits 105 or 109).
  try {
    app.parse(argc, argv);
    if (!std::isfinite(o.loss) || !std::isfinite(o.gbps)) {
      throw CLI::ValidationError("--loss and --gbps must be numbers");
    }
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "mroce-demo: %s (see --help)\n", what.c_str());
    return 2;
  }

  const int dead = roce_spine(o);
  fmt::print(
      "{} x {} KiB RDMA WRITE over {} spines, {:.0f} Gbit/s port; MetaRoCE on {} paths,\n"
      "RoCEv2 on one queue pair (one path, through spine {}). A run that does not deliver\n"
      "everything within {:.0f} ms is cut off, and its goodput is what it delivered by then.\n\n",
      o.messages, o.message / 1024, o.spines, o.gbps, o.paths, dead, double(limit_of(o)) / 1e6);
  struct Case {
    std::string name;
    double loss;
    int blackhole;
  };
  const std::vector<Case> cases = {
      {"no loss", 0, -1},
      {fmt::format("{:g}% loss", o.loss * 100), o.loss, -1},
      {"10% loss", 0.10, -1},
      {fmt::format("{:g}% loss, spine {} dies", o.loss * 100, dead), o.loss, dead},
  };
  std::optional<double> clean[2];
  bool all_exact = true;
  std::vector<Result> meta;
  fmt::print("{:<24} | {:>8} {:>6} {:>7} {:>6} | {:>8} {:>6} {:>7} {:<22} | {:>8}\n", "",
             "MetaRoCE", "", "", "", "RoCEv2", "", "", "", "MetaRoCE");
  fmt::print("{:<24} | {:>8} {:>6} {:>7} {:>6} | {:>8} {:>6} {:>7} {:<22} | {:>8}\n", "case",
             "Gbit/s", "kept", "retx", "exact", "Gbit/s", "kept", "retx", "outcome", "/RoCEv2");
  for (const Case& c : cases) {
    const Result m = run(o, Kind::kMetaRoce, c.loss, c.blackhole);
    const Result r = run(o, Kind::kRoce, c.loss, c.blackhole);
    if (!clean[0]) clean[0] = m.goodput_gbps;
    if (!clean[1]) clean[1] = r.goodput_gbps;
    all_exact &= m.byte_exact;
    const std::string ratio =
        r.goodput_gbps > 0 ? fmt::format("{:.1f}x", m.goodput_gbps / r.goodput_gbps) : "-";
    fmt::print(
        "{:<24} | {:>8.2f} {:>5.0f}% {:>7} {:>6} | {:>8.2f} {:>5.0f}% {:>7} {:<22} | {:>8}\n",
        c.name, m.goodput_gbps, 100 * m.goodput_gbps / *clean[0], m.retransmits,
        m.byte_exact ? "yes"
        : m.finished ? "NO"
                     : "cut",
        r.goodput_gbps, 100 * r.goodput_gbps / *clean[1], r.retransmits, outcome(r, o), ratio);
    meta.push_back(m);
  }
  fmt::print("\nMetaRoCE in detail:\n");
  fmt::print("{:<24} {:>10} {:>9} {:>9} {:>8} {:>9}\n", "case", "net drops", "retx", "timeouts",
             "re-ent", "path fail");
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Result& m = meta[i];
    fmt::print("{:<24} {:>10} {:>9} {:>9} {:>8} {:>9}\n", cases[i].name, m.network_drops,
               m.retransmits, m.timeouts, m.conn.reentropies, m.conn.path_failures);
    if (verbose || cases[i].blackhole >= 0) print_paths(m);
  }
  fmt::print(
      "\nMetaRoCE resends each lost packet on the path that lost it; paths through the dead\n"
      "spine got new source ports (re-entropy) and their packets moved away. RoCEv2 goes\n"
      "back to the first lost packet and resends everything after it, and its one path\n"
      "cannot leave a dead spine.\n");
  return all_exact ? 0 : 1;
}
