#include "options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/settings.h"
#include "net/transport_factory.h"

namespace mroce::perf {

namespace {

const char* kHelpFooter = R"(
Roles:
  mroce-perf server [options]            waits for clients (forever unless --once)
  mroce-perf client HOST [options]       runs the test against the server at HOST

Tests (client): --test write|send|read, bandwidth unless --lat. Bandwidth keeps --depth
requests outstanding per queue pair; latency is a ping-pong of one message (WRITE: the
peer polls its memory for messages of one packet, else waits for WRITE_WITH_IMM; SEND:
receive completions; READ: the READ's own round trip). Reported latency is half the
round trip, as perftest reports it.

Planes: give --addr once per local interface (plane). HOST is the server's address on
plane 0; the server's other planes are learnt in the connection handshake.

Progress: thread (the default) runs the library's progress thread and the test loops
sleep on completion events when they have nothing to do; busy keeps that thread
spinning; manual lets the test loop itself drive the stack (lowest latency, one core).

The server takes the test, sizes, MTU, path count and transport from the client.
Exit status: 0 success, 1 failure (including --check mismatches), 2 bad arguments.)";

// A number the option must hold, checked on the text as written so that "-1", "nan",
// "1e99" and words all get the line every setting out of range gets (core/settings.h):
// "--paths=0: must be 1..256".
CLI::Validator in_range(double lo, double hi, bool integer = true) {
  const auto text = [integer](double v) {
    char buf[32];
    // 2^64 - 1 as a double rounds up to 2^64, which no uint64_t holds.
    const std::uint64_t whole =
        v >= 0x1p64 ? std::numeric_limits<std::uint64_t>::max() : std::uint64_t(v);
    const auto r = integer ? std::to_chars(buf, buf + sizeof buf, whole)
                           : std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  };
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        const char* end = value.data() + value.size();
        bool ok = false;
        if (integer) {
          std::uint64_t v = 0;
          const auto r = std::from_chars(value.data(), end, v);
          ok = r.ec == std::errc{} && r.ptr == end && double(v) >= lo && double(v) <= hi;
        } else {
          double v = 0;
          const auto r = std::from_chars(value.data(), end, v);
          ok = r.ec == std::errc{} && r.ptr == end && std::isfinite(v) && v >= lo && v <= hi;
        }
        return ok ? std::string() : "=" + value + ": must be " + text(lo) + ".." + text(hi);
      },
      text(lo) + ".." + text(hi));
}

// The range of the engine setting an option feeds, in units of `scale` stored units.
CLI::Validator setting_range(std::string_view name, double scale = 1) {
  const Setting* s = find_setting(name);
  return in_range(std::ceil(s->min / scale), std::floor(s->max / scale));
}

// The option's help: the engine setting's meaning.
std::string meaning(std::string_view name) {
  return std::string(find_setting(name)->meaning);
}

// MROCE_ENGINE's keys for the help's footer, from the engine's table.
std::string engine_settings_help() {
  std::string out =
      "\nMetaRoCE engine settings, for experiments: MROCE_ENGINE=\"key=value,...\", each an\n"
      "integer in the unit its key names (ports, paths, mss and rates are the options above;\n"
      "the stack's min_rto is 20 ms):\n";
  for (const Setting& s : engine_settings()) {
    if (std::find(std::begin(net::kDeviceSettings), std::end(net::kDeviceSettings), s.name) !=
        std::end(net::kDeviceSettings)) {
      continue;  // the options above
    }
    const double scale = env_scale(s.unit);
    const auto value = [&](double v) {
      char buf[32];
      const auto r = s.unit == SettingUnit::kRatio
                         ? std::to_chars(buf, buf + sizeof buf, v)
                         : std::to_chars(buf, buf + sizeof buf, std::uint64_t(v / scale));
      return std::string(buf, r.ptr);
    };
    const double lo = s.unit == SettingUnit::kRatio ? s.min : std::ceil(s.min / scale) * scale;
    char line[256];
    const std::string key = std::string(s.name) + std::string(env_suffix(s.unit));
    std::snprintf(line, sizeof line, "  %-25s %s..%s, default %s: %s\n", key.c_str(),
                  value(lo).c_str(), value(s.max).c_str(), value(s.def).c_str(),
                  std::string(s.meaning).c_str());
    out += line;
  }
  return out;
}

void add_device_options(CLI::App* app, Options* o, std::vector<std::string>* addrs,
                        std::string* transport, std::string* progress, std::uint64_t* rate,
                        std::uint64_t* rx_rate) {
  app->add_option("--addr", *addrs,
                  "local address, once per plane (client default 127.0.0.1; server default: "
                  "the address the client reached it at)");
  app->add_option("--port", o->device.port,
                  "UDP port the device listens on (0: any; server default 4793, client any)")
      ->check(in_range(0, 65535));
  app->add_option("--src-ports", o->device.src_port_count, "source ports for path entropy")
      ->check(in_range(1, 4096));
  app->add_option("--src-port-base", o->device.src_port_base, "first source port (0: any free)")
      ->check(in_range(0, 65535));
  app->add_option("--progress", *progress, "thread (default), busy or manual")
      ->check(CLI::IsMember({"manual", "thread", "busy"}));
  app->add_flag("--progress-rt", o->device.progress_realtime,
                "run the progress thread at real-time priority (thread mode; needs "
                "CAP_SYS_NICE or RLIMIT_RTPRIO)");
  app->add_option("--progress-threads", o->device.progress_threads,
                  "threads per device (thread mode): 1 does everything; N > 1, one sends and "
                  "N - 1 receive")
      ->check(in_range(1, 16));
  app->add_option("--rate", *rate, meaning("line_rate") + ", Mbit/s (pacing ceiling)")
      ->check(setting_range("line_rate", 1e6));
  app->add_option("--rx-rate", *rx_rate, meaning("rx_capacity") + ", Mbit/s")
      ->check(setting_range("rx_capacity", 1e6));
  app->add_option("--rx-ecn-threshold", o->device.rx_ecn_threshold,
                  "mark CE when this many bytes wait in a receive queue (0: off)")
      ->check(in_range(0, std::numeric_limits<std::uint32_t>::max()));
  app->add_flag("--no-gso{false}", o->device.gso, "send every datagram on its own");
  app->add_flag("--no-gro{false}", o->device.gro, "no receive coalescing");
  app->add_option("--tx-uring", o->device.tx_uring,
                  "1: send each flush with one io_uring submission, 0: a sendmmsg per socket");
  app->add_option("--rx-uring", o->device.rx_uring,
                  "1: the progress thread waits and receives with one io_uring call, 0: epoll "
                  "and a recvmmsg per ready socket");
  app->add_option("--tcp-port", o->tcp_port, "side channel TCP port")->check(in_range(1, 65535));
  app->add_option("--transport", *transport, "mroce or roce (client; the server follows)")
      ->check(CLI::IsMember({"mroce", "roce"}));
}

}  // namespace

bool parse_options(int argc, char** argv, Options* o, int* exit_code) {
  CLI::App app{"mroce-perf: RDMA bandwidth and latency over OpenMetaRoCE, perftest style."};
  app.footer(std::string(kHelpFooter) + "\n" + engine_settings_help());
  app.require_subcommand(1, 1);
  std::vector<std::string> addrs;
  std::string transport = "mroce", progress = "thread", test = "write";
  std::uint64_t rate = 0, rx_rate = 0;
  std::uint32_t size = 65536;
  bool sweep = false;

  CLI::App* server = app.add_subcommand("server", "wait for clients");
  add_device_options(server, o, &addrs, &transport, &progress, &rate, &rx_rate);
  server->add_flag("--once", o->once, "serve one client, then exit");

  CLI::App* client = app.add_subcommand("client", "run a test against a server");
  client->add_option("host", o->host, "the server's address (plane 0)")->required();
  add_device_options(client, o, &addrs, &transport, &progress, &rate, &rx_rate);
  client->add_option("--test,-t", test, "write, send or read")
      ->check(CLI::IsMember({"write", "send", "read"}));
  client->add_flag("--lat", o->spec.latency, "latency (ping-pong) instead of bandwidth");
  client->add_option("--size,-s", size, "message size in bytes")
      ->check(in_range(1, kMaxMessageSize));
  client->add_flag("--all,-a", sweep, "sweep sizes 2 B .. 8 MiB");
  client->add_option("--iters,-n", o->spec.iterations, "messages per size")
      ->check(in_range(1, double(kMaxIterations)));
  client->add_option("--duration,-D", o->spec.duration, "seconds per size (instead of --iters)")
      ->check(in_range(kMinDuration, kMaxDuration, false));
  client->add_option("--depth,-q", o->spec.depth, "requests outstanding per queue pair")
      ->check(in_range(1, kMaxDepth));
  client->add_option("--cq-mod", o->spec.cq_mod, "one completion per N requests (default 16)")
      ->check(in_range(1, kMaxDepth));
  client->add_option("--qps", o->spec.qps, "queue pairs (streams of one connection)")
      ->check(in_range(1, kMaxQps));
  client->add_option("--mtu", o->spec.mtu, meaning("mss") + " (a multiple of 4)")
      ->check(setting_range("mss"));
  client->add_option("--paths", o->spec.paths, meaning("paths"))->check(setting_range("paths"));
  client->add_flag("--check", o->spec.check, "verify every byte that arrives");
  client->add_option("--seed", o->spec.seed, "pattern seed for --check")
      ->check(in_range(0, double(std::numeric_limits<std::uint64_t>::max())));
  client->add_option("--interval", o->interval, "print goodput every this many seconds")
      ->check(in_range(0.001, 3600, false));
  client->add_option("--json", o->json_path, "also write the results as JSON to FILE");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    *exit_code = app.exit(e);
    return false;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      *exit_code = app.exit(e);
      return false;
    }
    std::string what = e.what();
    // CLI11 writes "--paths: " before in_range's "=0: must be 1..256".
    if (const auto at = what.find(": =");
        at != std::string::npos && what.find(": must be ") != std::string::npos) {
      what.erase(at, 2);
      std::fprintf(stderr, "mroce-perf: %s\n", what.c_str());
      *exit_code = 2;
      return false;
    }
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "mroce-perf: %s (see --help)\n", what.c_str());
    *exit_code = 2;
    return false;
  }

  o->server = server->parsed();
  // The client's port is found out by the server in band: any free one will do.
  if (!o->server && client->count("--port") == 0) o->device.port = 0;
  o->device.addresses = addrs;
  o->device.progress = progress == "thread" ? Progress::kThread
                       : progress == "busy" ? Progress::kBusyPoll
                                            : Progress::kManual;
  o->spec.transport = transport == "roce" ? TransportKind::kRoceV2 : TransportKind::kMetaRoce;
  o->device.transport = o->spec.transport;
  if (rate) o->device.line_rate_bps = rate * 1'000'000;
  if (rx_rate) o->device.rx_capacity_bps = rx_rate * 1'000'000;
  o->spec.test = test == "send" ? Test::kSend : test == "read" ? Test::kRead : Test::kWrite;
  if (sweep) {
    o->spec.sizes.clear();
    for (std::uint32_t e = 1; e <= kMaxSweepExponent; ++e) o->spec.sizes.push_back(1u << e);
  } else {
    o->spec.sizes = {size};
  }
  if (o->spec.test == Test::kRead && o->spec.latency && o->spec.max_size() > kMaxReadLatencySize) {
    std::fprintf(stderr, "mroce-perf: READ latency is limited to 16 MiB messages\n");
    *exit_code = 2;
    return false;
  }
  if (o->spec.buffer_bytes() > kMaxBuffer) {
    std::fprintf(stderr, "mroce-perf: --size x --depth x --qps needs %llu MiB; at most 1024 MiB\n",
                 static_cast<unsigned long long>(o->spec.buffer_bytes() >> 20));
    *exit_code = 2;
    return false;
  }
  o->device.mtu = static_cast<std::uint16_t>(o->spec.mtu);
  o->device.paths = o->spec.paths;
  if (o->spec.mtu % 4 != 0) {
    std::fprintf(stderr, "mroce-perf: --mtu=%u: must be a multiple of 4\n", o->spec.mtu);
    *exit_code = 2;
    return false;
  }
  for (const std::string& a : addrs) {
    Address parsed;
    if (!parse_address(a, &parsed)) {
      std::fprintf(stderr, "mroce-perf: --addr '%s' is not an IPv4 or IPv6 address\n", a.c_str());
      *exit_code = 2;
      return false;
    }
  }
  return true;
}

}  // namespace mroce::perf
