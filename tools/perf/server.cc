// The server: for each client, a device set up as the client asks, then the passive end
// of the test until the client says it is done.
#include <cstdio>
#include <functional>

#include "messages.h"
#include "pattern.h"
#include "perf.h"
#include "runs.h"
#include "side_channel.h"

namespace mroce::perf {

namespace {

nlohmann::json side_report(Device& d) {
  return {{"counters", counters_json(d.counters())},
          {"datapath", datapath_json(d.datapath_counters())},
          {"connections", connections_json(d.connections())},
          {"events", events_json(d.take_events())}};
}

// The next message from the client, checked (messages.h); false with the reason.
bool receive(SideChannel& ch, const TestSpec* spec, ClientMessage* out, std::string* error,
             const std::function<void()>& idle = {}) {
  nlohmann::json msg;
  if (!ch.receive(&msg, 30, error, idle)) return false;
  if (parse_client_message(msg, spec, out, error)) return true;
  *error = "bad message from the client: " + *error;
  return false;
}

// One client, start to end. False (with the reason) when the session failed.
bool serve(SideChannel& ch, const Options& o, std::string* error) {
  ClientMessage hello;
  if (!receive(ch, nullptr, &hello, error)) {
    std::string ignored;
    ch.send({{"ok", false}, {"error", *error}}, &ignored);
    return false;
  }
  const TestSpec& spec = hello.spec;
  DeviceOptions device = o.device;
  // Without --addr, the device lives on the address the client reached us at.
  if (device.addresses.empty()) device.addresses = {ch.local_address()};
  device.transport = spec.transport;
  device.mtu = static_cast<std::uint16_t>(spec.mtu);  // in range: parse_spec checked it
  device.paths = spec.paths;
  // SEND: twice the client's depth of receives, so one is always posted in time.
  const std::uint32_t slots = spec.latency               ? 2
                              : spec.test == Test::kSend ? 2 * spec.depth
                                                         : spec.depth;
  Session s;
  if (!s.open(device, spec, slots, spec.latency ? kLatencyReceives : slots, error)) {
    const std::string line = "cannot open the device: " + *error;
    ch.send({{"ok", false}, {"error", line}}, error);
    *error = line;
    return false;
  }
  for (std::uint32_t q = 0; q < spec.qps; ++q) {
    for (std::uint32_t slot = 0; slot < slots; ++slot) {
      fill_pattern(s.slot(q, slot), s.slot_size(), pattern_state(spec.seed ^ 1, q, slot));
    }
  }
  if (!ch.send({{"ok", true}, {"info", to_json(s.local_info())}}, error)) return false;
  if (!s.connect(hello.info, error)) return false;
  const auto pump = [&s] { s.pump(); };
  ClientMessage msg;
  if (!receive(ch, &spec, &msg, error, pump)) return false;
  if (msg.op != ClientOp::kConnected) {
    *error = "bad message from the client: expected connected";
    return false;
  }

  Responder responder(s, spec);
  if (spec.latency ? !post_latency_receives(s, spec, error) : !responder.post_initial(error)) {
    return false;
  }
  if (!ch.send({{"op", "ready"}}, error)) return false;

  if (spec.latency && spec.test != Test::kRead) {
    std::uint64_t counter = 0;
    for (std::uint32_t size : spec.sizes) {
      if (!run_latency(s, spec, size, false, counter, nullptr, error)) return false;
    }
  }
  // Serve until the client is done: receives for SEND, progress for everything.
  const bool spinning = device.progress == Progress::kManual;
  for (std::uint64_t spin = 0;; ++spin) {
    if (!responder.step(ch.fd(), error)) return false;
    if ((spinning && spin % 256 != 0) || !ch.readable()) continue;
    if (!receive(ch, &spec, &msg, error, pump)) return false;
    if (msg.op == ClientOp::kCheck) {
      const std::uint64_t bad = spec.test == Test::kWrite
                                    ? responder.check_writes(msg.size, msg.first, msg.counts)
                                    : responder.mismatches();
      if (!ch.send({{"mismatches", bad}}, error)) return false;
    } else if (msg.op == ClientOp::kDone) {
      const nlohmann::json report = side_report(s.device());
      return ch.send({{"report", report}, {"mismatches", responder.mismatches()}}, error);
    } else {
      *error = "bad message from the client: expected check or done";
      return false;
    }
  }
}

}  // namespace

int run_server(const Options& o) {
  std::string error;
  SideChannel listener;
  if (!listener.listen(o.tcp_port, &error)) {
    std::fprintf(stderr, "mroce-perf: %s\n", error.c_str());
    return 1;
  }
  std::fprintf(stderr, "mroce-perf: waiting for clients on TCP port %u\n", o.tcp_port);
  for (;;) {
    SideChannel ch;
    if (!listener.accept(&ch, &error)) {
      std::fprintf(stderr, "mroce-perf: %s\n", error.c_str());
      return 1;
    }
    error.clear();
    const bool ok = serve(ch, o, &error);
    if (!ok) std::fprintf(stderr, "mroce-perf: session failed: %s\n", error.c_str());
    if (o.once) return ok ? 0 : 1;
  }
}

}  // namespace mroce::perf
