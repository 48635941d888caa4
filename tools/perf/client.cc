// The client: describes the test to the server, connects, measures, and reports.
#include <cstdio>
#include <fstream>

#include "messages.h"
#include "pattern.h"
#include "perf.h"
#include "runs.h"
#include "side_channel.h"

namespace mroce::perf {

namespace {

int fail(const std::string& line) {
  std::fprintf(stderr, "mroce-perf: %s\n", line.c_str());
  return 1;
}

// A reply that parse_*() refused; a refusal the server explained is passed on as it is.
std::string bad_reply(const std::string& why) {
  return why.starts_with("server: ") ? why : "bad reply from the server: " + why;
}

nlohmann::json side_report(Device& d) {
  return {{"counters", counters_json(d.counters())},
          {"datapath", datapath_json(d.datapath_counters())},
          {"connections", connections_json(d.connections())},
          {"events", events_json(d.take_events())}};
}

}  // namespace

int run_client(const Options& o) {
  const TestSpec& spec = o.spec;
  std::string error;
  SideChannel ch;
  if (!ch.connect(o.host, o.tcp_port, 10, &error)) return fail(error);

  Session s;
  const std::uint32_t slots = spec.latency ? 2 : spec.depth;
  if (!s.open(o.device, spec, slots, spec.latency ? kLatencyReceives : 1, &error)) {
    return fail("cannot open the device: " + error);
  }
  for (std::uint32_t q = 0; q < spec.qps; ++q) {
    for (std::uint32_t slot = 0; slot < slots; ++slot) {
      fill_pattern(s.slot(q, slot), s.slot_size(), pattern_state(spec.seed, q, slot));
    }
  }
  if (!ch.send({{"op", "hello"}, {"spec", spec.to_json()}, {"info", to_json(s.local_info())}},
               &error)) {
    return fail(error);
  }
  nlohmann::json reply;
  PeerInfo server;
  if (!ch.receive(&reply, 30, &error)) return fail(error);
  if (!parse_welcome(reply, &server, &error)) return fail(bad_reply(error));
  if (server.qpns.size() != spec.qps) {
    return fail(bad_reply("info has " + std::to_string(server.qpns.size()) + " queue pairs, not " +
                          std::to_string(spec.qps)));
  }
  if (!s.connect(server, &error)) return fail(error);
  if (spec.latency && !post_latency_receives(s, spec, &error)) return fail(error);
  const auto pump = [&s] { s.pump(); };
  if (!ch.send({{"op", "connected"}}, &error)) return fail(error);
  if (!ch.receive(&reply, 30, &error, pump)) return fail(error);
  if (!parse_ready(reply, &error)) return fail(bad_reply(error));

  print_header(o, o.host);
  nlohmann::json results = nlohmann::json::array();
  std::vector<std::uint64_t> sent(spec.qps, 0);
  std::uint64_t counter = 0;
  bool ok = true;
  for (std::uint32_t size : spec.sizes) {
    if (spec.latency) {
      LatencyResult r;
      if (!run_latency(s, spec, size, true, counter, &r, &error)) return fail(error);
      print_latency(r);
      results.push_back(to_json(r));
      continue;
    }
    const std::vector<std::uint64_t> before = sent;
    BandwidthResult r;
    if (!run_bandwidth(s, spec, size, o.interval, sent, &r, &error)) return fail(error);
    print_bandwidth(r);
    nlohmann::json row = to_json(r);
    if (spec.check && spec.test != Test::kRead) {
      std::vector<std::uint64_t> counts(spec.qps);
      for (std::uint32_t q = 0; q < spec.qps; ++q) counts[q] = sent[q] - before[q];
      if (!ch.send({{"op", "check"}, {"size", size}, {"first", before}, {"counts", counts}},
                   &error) ||
          !ch.receive(&reply, 60, &error, pump)) {
        return fail(error);
      }
      std::uint64_t bad = 0;
      if (!parse_check_reply(reply, &bad, &error)) return fail(bad_reply(error));
      row["check_mismatches"] = bad;
      if (bad) {
        std::fprintf(stderr, "mroce-perf: --check: %llu messages of %u bytes arrived wrong\n",
                     static_cast<unsigned long long>(bad), size);
        ok = false;
      }
    }
    results.push_back(row);
  }
  print_footer();

  const nlohmann::json mine = side_report(s.device());
  if (!ch.send({{"op", "done"}}, &error) || !ch.receive(&reply, 30, &error, pump))
    return fail(error);
  nlohmann::json theirs;
  std::uint64_t server_mismatches = 0;
  if (!parse_done_reply(reply, &theirs, &server_mismatches, &error)) return fail(bad_reply(error));
  print_counters(mine, theirs);
  if (server_mismatches > 0) {
    std::fprintf(stderr, "mroce-perf: --check: the server saw %llu wrong messages\n",
                 static_cast<unsigned long long>(server_mismatches));
    ok = false;
  }
  if (!o.json_path.empty()) {
    const nlohmann::json doc = {{"spec", spec.to_json()},
                                {"results", results},
                                {"client", mine},
                                {"server", theirs},
                                {"check_passed", ok}};
    std::ofstream f(o.json_path);
    f << doc.dump(2) << "\n";
    if (!f) return fail("cannot write " + o.json_path);
  }
  return ok ? 0 : 1;
}

}  // namespace mroce::perf
