// mroce-demo: two MetaRoCE engines moving data over an in-memory lossy multipath
// network, then a report of goodput, retransmissions and what every path did.
#include <fmt/core.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "core/engine.h"
#include "harness/network.h"

namespace {

using namespace mroce;

struct Options {
  int paths = 16;
  int spines = 4;
  double loss = 0.01;
  int blackhole = -1;  // spine to black-hole halfway, -1: none
  std::uint32_t message = 1 << 20;
  int messages = 200;
  double gbps = 10;
};

struct Result {
  double goodput_gbps = 0;
  bool byte_exact = false;
  Time elapsed = 0;
  Counters sender;
  Counters receiver;
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

Result run(const Options& o, double loss, int blackhole) {
  testing::Network net(1, o.spines, 7);
  const std::uint64_t rate = std::uint64_t(o.gbps * 1e9);
  std::unique_ptr<Engine> e[2];
  Sink sink[2];
  for (int h = 0; h < 2; ++h) {
    EngineConfig c;
    c.planes = {Address::ipv4(0x0a000001u + std::uint32_t(h))};
    c.paths = std::uint16_t(o.paths);
    c.line_rate_bps = rate;
    c.rx_capacity_bps = rate;
    c.seed = std::uint64_t(h + 1);
    e[h] = std::make_unique<Engine>(c);
    e[h]->set_sink(&sink[h]);
    net.add_host(e[h].get(), c.planes, c.listen_port);
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
  e[0]->connect_stream(0, a, Endpoint{Address::ipv4(0x0a000002), kDefaultPort}, b);
  e[1]->connect_stream(0, b, Endpoint{Address::ipv4(0x0a000001), kDefaultPort}, a);
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
    wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data()) + (i % 2) * o.message;
    wr.rkey = kd.rkey;
    e[0]->post_send(0, a, wr);
  }
  if (blackhole >= 0) {
    const double seconds = double(o.message) * o.messages * 8 / (o.gbps * 1e9);
    net.at(Time(seconds / 2 * 1e9),
           [&net, blackhole] { net.spine(0, blackhole).blackhole = true; });
  }
  const std::size_t total = std::size_t(o.messages);
  net.run_until([&] { return sink[0].completions >= total; }, 120 * kSecond);

  Result r;
  r.elapsed = net.now();
  r.goodput_gbps =
      double(o.message) * double(sink[0].completions - sink[0].errors) * 8 / double(net.now());
  r.byte_exact = sink[0].completions == total && sink[0].errors == 0 &&
                 std::memcmp(src.data(), dst.data(), o.message) == 0 &&
                 std::memcmp(src.data(), dst.data() + o.message, o.message) == 0;
  r.sender = e[0]->counters();
  r.receiver = e[1]->counters();
  const ConnId conn = e[0]->stream_connection(a);
  e[0]->connection_stats(conn, &r.conn);
  for (std::uint16_t i = 0; i < r.conn.paths; ++i) {
    PathStats ps;
    e[0]->path_stats(conn, i, &ps);
    r.paths.push_back(ps);
    r.spine_of_path.push_back(net.spine_of(Address::ipv4(0x0a000001), Address::ipv4(0x0a000002),
                                           ps.src_port, kDefaultPort));
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

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool verbose = false;
  CLI::App app{
      "mroce-demo: two MetaRoCE engines, an in-memory network of parallel spines with random\n"
      "loss, one connection sprayed over many paths. Runs the same transfer without loss,\n"
      "with the chosen loss, with 10% loss, and with a spine black-holed halfway, and prints\n"
      "goodput, retransmissions and what every path did."};
  app.add_option("--paths", o.paths, "paths per connection")->check(CLI::Range(1, 256));
  app.add_option("--spines", o.spines, "parallel spines (ECMP choices)")->check(CLI::Range(1, 64));
  app.add_option("--loss", o.loss, "random loss on every spine, as a fraction")
      ->check(CLI::Range(0.0, 0.5));
  app.add_option("--message", o.message, "bytes per RDMA WRITE")->check(CLI::Range(1, 1 << 26));
  app.add_option("--messages", o.messages, "number of WRITEs")->check(CLI::Range(1, 100000));
  app.add_option("--gbps", o.gbps, "link and NIC rate, Gbit/s")->check(CLI::Range(0.01, 400.0));
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

  fmt::print(
      "MetaRoCE demo: {} x {} KiB RDMA WRITE, {} paths over {} spines, {:.0f} Gbit/s port\n\n",
      o.messages, o.message / 1024, o.paths, o.spines, o.gbps);
  struct Case {
    std::string name;
    double loss;
    int blackhole;
  };
  const std::vector<Case> cases = {
      {"no loss", 0, -1},
      {fmt::format("{:g}% loss", o.loss * 100), o.loss, -1},
      {"10% loss", 0.10, -1},
      {fmt::format("{:g}% loss, spine 0 dies", o.loss * 100), o.loss, 0},
  };
  std::optional<double> clean;
  bool all_exact = true;
  fmt::print("{:<26} {:>9} {:>9} {:>10} {:>9} {:>9} {:>8} {:>9} {:>7}\n", "case", "Gbit/s",
             "vs clean", "net drops", "retx", "timeouts", "re-ent", "path fail", "exact");
  for (const Case& c : cases) {
    const Result r = run(o, c.loss, c.blackhole);
    if (!clean) clean = r.goodput_gbps;
    all_exact &= r.byte_exact;
    std::uint64_t timeouts = 0;
    for (const PathStats& p : r.paths) timeouts += p.timeouts;
    fmt::print("{:<26} {:>9.2f} {:>8.1f}% {:>10} {:>9} {:>9} {:>8} {:>9} {:>7}\n", c.name,
               r.goodput_gbps, 100 * r.goodput_gbps / *clean, r.network_drops,
               r.sender.tx_retransmits, timeouts, r.conn.reentropies, r.conn.path_failures,
               r.byte_exact ? "yes" : "NO");
    if (verbose || c.blackhole >= 0) print_paths(r);
  }
  fmt::print(
      "\nEvery lost packet was resent on the path that lost it; paths through the dead\n"
      "spine were given new source ports (re-entropy) and their packets moved away.\n");
  return all_exact ? 0 : 1;
}
