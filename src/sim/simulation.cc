#include "sim/simulation.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "core/config.h"
#include "sim/addressing.h"
#include "sim/errors.h"
#include "sim/spin_barrier.h"
#include "sim/units.h"
#include "sim/workloads.h"

namespace mroce::sim {

namespace {

constexpr std::uint64_t kSaltTransport = 4;
constexpr std::uint64_t kSaltWorkloads = 5;

double gbps(std::uint64_t bytes, SimTime interval) {
  return interval ? static_cast<double>(bytes) * 8.0 * 1e3 / static_cast<double>(interval) : 0;
}

std::uint64_t peak_rss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::uint64_t>(u.ru_maxrss) * 1024;
}

}  // namespace

FctStats fct_stats(std::vector<SimTime> v) {
  FctStats s;
  s.count = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    std::size_t i = static_cast<std::size_t>(q * static_cast<double>(v.size()) + 0.999999);
    return v[std::min(v.size(), std::max<std::size_t>(i, 1)) - 1];
  };
  s.p50 = rank(0.5);
  s.p99 = rank(0.99);
  s.max = v.back();
  unsigned __int128 sum = 0;
  for (SimTime t : v) sum += t;
  s.mean = static_cast<SimTime>(sum / v.size());
  return s;
}

NetworkConfig resolve_network(const Scenario& s, const TransportInfo& transport) {
  NetworkConfig c = s.network;
  const TopologyGraph g = build_topology(c.topology);
  const std::uint64_t frame = s.mtu + 128 + kFrameOverhead;  // a full data packet, headers included
  std::uint64_t queue = s.queue_bytes;
  if (queue == 0) {
    queue = static_cast<std::uint64_t>(s.queue_bdp *
                                       static_cast<double>(bdp_bytes(c.topology, g.max_hops)));
  }
  queue = std::max(queue, 2 * frame);
  c.queue.limit_bytes = queue;
  c.queue.ecn_min_bytes =
      s.ecn_min_bytes ? s.ecn_min_bytes : static_cast<std::uint64_t>(s.ecn_min_fraction * queue);
  c.queue.ecn_max_bytes =
      s.ecn_max_bytes ? s.ecn_max_bytes : static_cast<std::uint64_t>(s.ecn_max_fraction * queue);
  if (c.queue.ecn_max_bytes < c.queue.ecn_min_bytes) c.queue.ecn_max_bytes = c.queue.ecn_min_bytes;
  const bool pfc = s.pfc == PfcMode::kOn || (s.pfc == PfcMode::kAuto && transport.wants_pfc);
  c.switches.pfc.enabled = pfc;
  if (pfc) {
    c.switches.pfc.xoff_bytes =
        s.pfc_xoff_bytes ? s.pfc_xoff_bytes : std::max(queue / 2, 2 * frame);
    c.switches.pfc.xon_bytes =
        s.pfc_xon_bytes
            ? s.pfc_xon_bytes
            : (c.switches.pfc.xoff_bytes > 2 * frame ? c.switches.pfc.xoff_bytes - 2 * frame : 0);
  }
  return c;
}

// Takes a sample of throughput, queues and traced paths every interval.
class Simulation::Sampler final : public EventHandler {
 public:
  explicit Sampler(Simulation& sim) : sim_(sim) {}

  void start() { sim_.context().events.schedule(interval(), this); }

  void on_event(SimTime now, std::uint64_t) override {
    take(now);
    // Stop when nothing else is pending: the run would otherwise never end.
    if (!sim_.traffic_->done() && sim_.events_pending()) {
      sim_.context().events.schedule(now + interval(), this);
    }
  }

  void take(SimTime now) {
    if (now <= last_) return;
    Network& net = *sim_.network_;
    std::uint64_t rx = 0;
    for (std::uint32_t h = 0; h < net.host_count(); ++h) rx += net.host(h).stats().rx_payload_bytes;
    const std::uint64_t done = sim_.traffic_->completed_bytes();
    const std::uint64_t drops = sim_.drops().total();
    Sample s;
    s.time = now;
    s.rx_gbps = gbps(rx - last_rx_, now - last_);
    s.goodput_gbps = gbps(done - last_done_, now - last_);
    s.drops = drops - last_drops_;
    s.packets_in_network = sim_.live_packets();
    std::vector<std::uint64_t> class_max(sim_.link_class_names_.size(), 0);
    const auto& links = net.links();
    for (std::size_t i = 0; i < links.size(); ++i) {
      Link* l = links[i].link;
      s.paused_links += l->paused();
      auto& m = class_max[sim_.link_class_[i]];
      m = std::max(m, l->take_window_max());
    }
    samples.push_back(s);
    for (std::uint32_t c = 0; c < class_max.size(); ++c) {
      queue_samples.push_back({now, c, class_max[c]});
    }
    trace_paths(now);
    last_ = now;
    last_rx_ = rx;
    last_done_ = done;
    last_drops_ = drops;
  }

  std::vector<Sample> samples;
  std::vector<QueueSample> queue_samples;
  std::vector<PathSample> path_samples;

 private:
  SimTime interval() const { return sim_.scenario_.output.sample_interval; }

  void trace_paths(SimTime now) {
    const OutputSpec& out = sim_.scenario_.output;
    if (out.trace_connections == 0 || out.trace_host >= sim_.network_->host_count()) return;
    const Transport& t = sim_.network_->host(out.trace_host).transport();
    std::vector<ConnId> conns;
    t.for_each_connection([&](ConnId c) {
      if (conns.size() < out.trace_connections) conns.push_back(c);
    });
    for (ConnId c : conns) {
      PathStats ps;
      for (std::uint16_t p = 0; p < 1024 && t.path_stats(c, p, &ps); ++p) {
        path_samples.push_back({now, out.trace_host, c, p, ps});
      }
    }
  }

  Simulation& sim_;
  SimTime last_ = 0;
  std::uint64_t last_rx_ = 0;
  std::uint64_t last_done_ = 0;
  std::uint64_t last_drops_ = 0;
};

// Applies the scenario's failures and recoveries at their times.
class Simulation::FailureScript final : public EventHandler {
 public:
  FailureScript(Simulation& sim, const std::vector<FailureSpec>& specs) : sim_(sim), specs_(specs) {
    Network& net = *sim_.network_;
    for (std::size_t i = 0; i < specs_.size(); ++i) {
      const FailureSpec& f = specs_[i];
      const std::string where = "failure." + std::to_string(i);
      if (f.plane >= net.planes()) {
        throw ConfigError(where + ".plane: " + std::to_string(f.plane) + " but the fabric has " +
                          std::to_string(net.planes()) + " plane(s)");
      }
      std::vector<Link*> links;
      switch (f.target) {
        case FailureTarget::kPlane:
          links = net.plane_links(f.plane);
          break;
        case FailureTarget::kSwitch:
          links = net.switch_links(f.plane, switch_named(f.node, where + ".node"));
          break;
        case FailureTarget::kLink:
          links = net.cable_links(f.plane, switch_named(f.node, where + ".node"),
                                  switch_named(f.peer, where + ".peer"));
          if (links.empty()) {
            throw ConfigError(where + ": no cable between " + f.node + " and " + f.peer);
          }
          break;
        case FailureTarget::kHostLink:
          if (f.host >= net.host_count()) {
            throw ConfigError(where + ".host: no host " + std::to_string(f.host));
          }
          links = net.host_links(f.plane, f.host);
          break;
      }
      links_.push_back(std::move(links));
      sim_.script().schedule(f.at, this, i << 2 | kFail);
      if (f.recover != kSimNever) sim_.script().schedule(f.recover, this, i << 2 | kRecover);
    }
  }

  void on_event(SimTime now, std::uint64_t arg) override {
    const std::size_t i = arg >> 2;
    const FailureSpec& f = specs_[i];
    const auto action = static_cast<Action>(arg & 3);
    std::string what = std::string(to_string(f.target)) + " " + describe(f);
    if (action == kReroute) {
      sim_.network_->recompute_routes(f.plane);
      log.push_back({now, "routes recomputed on plane " + std::to_string(f.plane)});
      return;
    }
    const LinkState state = action == kRecover ? LinkState::kUp
                            : f.visible        ? LinkState::kDown
                                               : LinkState::kBlackHole;
    for (Link* l : links_[i]) l->set_state(now, state);
    log.push_back({now, what + (action == kRecover ? " recovered"
                                : f.visible        ? " down"
                                                   : " black-holed")});
    if (f.visible) sim_.script().schedule(now + f.reroute_delay, this, i << 2 | kReroute);
  }

  std::vector<FailureRecord> log;

 private:
  enum Action : std::uint64_t { kFail = 0, kRecover = 1, kReroute = 2 };

  std::uint32_t switch_named(const std::string& name, const std::string& where) const {
    auto s = sim_.network_->find_switch(name);
    if (!s) {
      const auto& g = sim_.network_->graph();
      throw ConfigError(where + ": no switch named '" + name + "' (names look like '" +
                        g.name.front() + "', '" + g.name.back() + "')");
    }
    return *s;
  }

  static std::string describe(const FailureSpec& f) {
    std::string s = "plane " + std::to_string(f.plane);
    if (f.target == FailureTarget::kSwitch) s += " " + f.node;
    if (f.target == FailureTarget::kLink) s += " " + f.node + "-" + f.peer;
    if (f.target == FailureTarget::kHostLink) s += " host " + std::to_string(f.host);
    return s;
  }

  Simulation& sim_;
  std::vector<FailureSpec> specs_;
  std::vector<std::vector<Link*>> links_;
};

Simulation::Simulation(const Scenario& scenario, const TransportInfo& transport)
    : scenario_(scenario), transport_name_(transport.name) {
  NetworkConfig net = resolve_network(scenario_, transport);
  std::vector<SimContext*> parts;
  for (std::uint32_t i = 0; i < scenario_.partitions; ++i) {
    parts.push_back(parts_.emplace_back(std::make_unique<SimContext>()).get());
  }
  network_ = std::make_unique<Network>(parts, net);

  auto found = scenario_.transport_settings.find(transport.name);
  Params settings = found != scenario_.transport_settings.end()
                        ? found->second
                        : Params("transport." + transport.name);
  TransportMaker make = transport.configure(settings);
  settings.reject_unused();

  const std::uint16_t port = kDefaultPort;
  for (std::uint32_t h = 0; h < network_->host_count(); ++h) {
    HostContext hc;
    hc.host = h;
    hc.hosts = network_->host_count();
    for (std::uint32_t p = 0; p < network_->planes(); ++p) hc.planes.push_back(host_address(h, p));
    hc.port = port;
    hc.seed = derive_seed(scenario_.seed, kSaltTransport, h);
    hc.nic_rate_bps = net.topology.host_rate_bps;
    hc.base_rtt = to_ns(network_->base_rtt());
    hc.mtu_payload = scenario_.mtu;
    network_->host(h).set_transport(make(hc));
  }

  traffic_ = std::make_unique<Traffic>(*network_, port);
  for (std::uint32_t h = 0; h < network_->host_count(); ++h) {
    network_->host(h).set_listener(traffic_.get());
  }
  traffic_->register_memory();
  for (std::size_t i = 0; i < scenario_.workloads.size(); ++i) {
    traffic_->add_workload(make_workload(scenario_.workloads[i], network_->host_count(),
                                         derive_seed(scenario_.seed, kSaltWorkloads, i)));
  }
  traffic_->setup();

  std::map<std::string, std::uint32_t> classes;
  const TopologyKind kind = network_->graph().kind;
  for (const LinkInfo& li : network_->links()) {
    const std::string name =
        std::string(tier_name(kind, li.from_tier)) + ">" + tier_name(kind, li.to_tier);
    auto [it, added] =
        classes.try_emplace(name, static_cast<std::uint32_t>(link_class_names_.size()));
    if (added) link_class_names_.push_back(name);
    link_class_.push_back(it->second);
  }
  sampler_ = std::make_unique<Sampler>(*this);
  failures_ = std::make_unique<FailureScript>(*this, scenario_.failures);
}

Simulation::~Simulation() = default;

RunResult Simulation::run(const RunOptions& options) {
  wall_start_ = last_print_ = std::chrono::steady_clock::now();
  printed_ = false;
  if (parts_.size() == 1) {
    run_single(options);
  } else {
    run_partitioned(options);
  }
  if (printed_) std::fprintf(stderr, "\n");
  sampler_->take(now());
  RunResult r;
  r.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  collect(r);
  return r;
}

void Simulation::run_single(const RunOptions& options) {
  EventQueue& q = parts_.front()->events;
  const bool until_done = traffic_->workload_count() > 0;
  sampler_->start();
  std::uint64_t n = 0;
  while (!(until_done && traffic_->done())) {
    if (!q.run_one_until(scenario_.stop)) break;
    if (options.progress && (++n & 0x3ffff) == 0) print_progress();
  }
}

// Conservative parallel simulation: every partition runs the events before the window's
// end, which is at most the lookahead past the earliest pending event anywhere, so
// nothing another partition sends in the window can be due inside it. At the barrier
// each partition takes in what was sent toward it; then one thread alone samples, runs
// the scripted actions that fell due, checks whether the work is done and sets the next
// window.
void Simulation::run_partitioned(const RunOptions& options) {
  const auto n = static_cast<std::uint32_t>(parts_.size());
  const SimTime lookahead = network_->lookahead();
  const SimTime interval = scenario_.output.sample_interval;
  const SimTime last = scenario_.stop;  // events at or before it run
  const bool until_done = traffic_->workload_count() > 0;
  SimTime next_sample = interval;
  SimTime end = 0;
  bool stop = false;
  std::uint64_t windows = 0;
  std::mutex error_lock;
  std::exception_ptr error;

  // An error stops the run at the next window, every thread still keeping step.
  const auto guarded = [&](auto&& f) {
    try {
      f();
    } catch (...) {
      std::lock_guard lock(error_lock);
      if (!error) error = std::current_exception();
    }
  };
  const auto next_event = [&] {
    SimTime next = kSimNever;
    for (const auto& c : parts_) next = std::min(next, c->events.next_time());
    return next;
  };
  auto plan = [&]() noexcept {
    if (error || (until_done && traffic_->done())) {
      stop = true;
      return;
    }
    // Samples and scripted actions fall due as they would among the events of a single
    // queue: once every event before them has run. Scripted actions run before the
    // events of their own time, as they were scheduled before them.
    for (;;) {
      const SimTime next = next_event();
      const SimTime scripted = script_.next_time();
      const SimTime first = std::min(next, scripted);
      if (first == kSimNever || first > last) break;
      if (next_sample <= first) {
        sampler_->take(next_sample);
        next_sample += interval;
      } else if (scripted <= next) {
        guarded([&] { script_.run_one(); });
      } else {
        break;
      }
    }
    const SimTime next = next_event();
    if (next == kSimNever || next > last || error) {
      stop = true;
      return;
    }
    end = std::min({lookahead == kSimNever ? kSimNever : next + lookahead, next_sample,
                    script_.next_time(), last == kSimNever ? kSimNever : last + 1});
    if (options.progress && (++windows & 0xff) == 0) print_progress();
  };
  SpinBarrier sync(n, plan);

  auto work = [&](std::uint32_t p) {
    EventQueue& q = parts_[p]->events;
    for (;;) {
      sync.arrive_and_wait();
      if (stop) return;
      guarded([&] {
        while (q.run_one_until(end - 1)) {
        }
      });
      sync.arrive_and_wait();
      guarded([&] { network_->deliver_crossings(p); });
    }
  };
  std::vector<std::jthread> threads;
  for (std::uint32_t p = 1; p < n; ++p) threads.emplace_back(work, p);
  work(0);
  threads.clear();  // joins
  if (error) std::rethrow_exception(error);
}

void Simulation::print_progress() {
  const auto now_wall = std::chrono::steady_clock::now();
  if (now_wall - last_print_ < std::chrono::seconds(1)) return;
  const double wall = std::chrono::duration<double>(now_wall - wall_start_).count();
  std::size_t done = 0;
  for (const Flow& f : traffic_->flows()) done += f.done();
  std::uint64_t executed = 0;
  std::size_t pending = 0;
  for (const auto& c : parts_) {
    executed += c->events.executed();
    pending += c->events.size();
  }
  std::fprintf(stderr, "\r[%s] sim %s  %.1fM events (%.2fM/s, %zu pending)  flows %zu/%zu   ",
               transport_name_.c_str(), format_time(now()).c_str(),
               static_cast<double>(executed) / 1e6, static_cast<double>(executed) / 1e6 / wall,
               pending, done, traffic_->flows().size());
  printed_ = true;
  last_print_ = now_wall;
}

SimTime Simulation::now() const {
  SimTime t = script_.now();
  for (const auto& c : parts_) t = std::max(t, c->now());
  return t;
}

DropCounters Simulation::drops() const {
  DropCounters d;
  for (const auto& c : parts_) d += c->drops;
  return d;
}

std::size_t Simulation::live_packets() const {
  std::size_t n = 0;
  for (const auto& c : parts_) n += c->packets.live();
  return n;
}

bool Simulation::events_pending() const {
  for (const auto& c : parts_) {
    if (!c->events.empty()) return true;
  }
  return false;
}

void Simulation::collect(RunResult& r) const {
  const Network& net = *network_;
  r.scenario = scenario_.name;
  r.transport = transport_name_;
  r.pfc = net.config().switches.pfc.enabled;
  r.complete = traffic_->done();
  r.sim_time = now();
  r.events = script_.executed();  // scripted actions of a partitioned run (else none)
  for (const auto& c : parts_) {
    r.events += c->events.executed();
    r.packets_sent += c->packets_sent;
    r.peak_packets += c->packets.capacity();
  }
  r.drops = drops();
  r.peak_rss_bytes = peak_rss();
  r.hosts = net.host_count();
  r.switches = network_->switch_count();
  r.links = net.links().size();
  r.base_rtt = network_->base_rtt();
  r.queue_bytes = net.config().queue.limit_bytes;
  for (std::uint32_t h = 0; h < net.host_count(); ++h) {
    const Host& host = net.host(h);
    r.data_packets_sent += host.stats().tx_data_packets;
    r.data_packets_delivered += host.stats().rx_data_packets;
    r.payload_bytes_delivered += host.stats().rx_payload_bytes;
    const Transport& t = host.transport();
    const Counters& c = t.counters();
    auto& tt = r.transport_totals;
    tt.tx_packets += c.tx_packets;
    tt.tx_bytes += c.tx_bytes;
    tt.tx_data_packets += c.tx_data_packets;
    tt.tx_retransmits += c.tx_retransmits;
    tt.rx_packets += c.rx_packets;
    tt.rx_ce_packets += c.rx_ce_packets;
    for (int d = 0; d < static_cast<int>(DropReason::kCount); ++d) tt.drops[d] += c.drops[d];
    t.for_each_connection([&](ConnId) { ++r.connections; });
  }
  for (std::size_t s = 0; s < network_->switch_count(); ++s) {
    r.pause_frames += net.switch_by_global(s).stats().pause_frames;
  }

  r.flows = traffic_->flows();
  std::vector<SimTime> all;
  for (const Flow& f : r.flows) {
    if (f.done() && !f.failed) all.push_back(f.end - f.start);
  }
  r.fct = fct_stats(std::move(all));

  for (std::uint32_t w = 0; w < traffic_->workload_count(); ++w) {
    const WorkloadSpec& spec = scenario_.workloads[w];
    WorkloadResult wr;
    wr.name = spec.name;
    wr.kind = to_string(spec.kind);
    std::vector<SimTime> fcts;
    std::vector<bool> ranks(net.host_count(), false);
    wr.start = kSimNever;
    for (const Flow& f : r.flows) {
      if (f.workload != w) continue;
      ++wr.flows;
      ranks[f.initiator] = true;
      if (f.start != kSimNever) wr.start = std::min(wr.start, f.start);
      if (!f.done()) continue;
      if (f.failed) {
        ++wr.failed;
        continue;
      }
      ++wr.completed;
      wr.bytes += f.bytes;
      wr.finish = std::max(wr.finish, f.end);
      fcts.push_back(f.end - f.start);
    }
    if (wr.start == kSimNever) wr.start = spec.start;
    if (wr.completed < wr.flows) wr.finish = r.sim_time;
    wr.fct = fct_stats(std::move(fcts));
    const SimTime span = wr.finish > wr.start ? wr.finish - wr.start : 0;
    wr.goodput_gbps = gbps(wr.bytes, span);
    const auto nranks = static_cast<std::uint64_t>(std::count(ranks.begin(), ranks.end(), true));
    wr.iteration_times = traffic_->workload(w).iteration_ends();
    if (spec.kind == WorkloadKind::kAllToAll && nranks && wr.completed == wr.flows) {
      wr.algbw_gbps = gbps(wr.bytes / nranks, span);
    }
    if (spec.kind == WorkloadKind::kRingAllReduce && !wr.iteration_times.empty()) {
      wr.algbw_gbps = gbps(spec.bytes * wr.iteration_times.size(), wr.iteration_times.back());
      wr.busbw_gbps =
          wr.algbw_gbps * 2.0 * static_cast<double>(nranks - 1) / static_cast<double>(nranks);
    }
    r.workloads.push_back(std::move(wr));
  }

  r.link_class_names = link_class_names_;
  r.link_classes.resize(link_class_names_.size());
  const auto& links = net.links();
  for (std::size_t i = 0; i < links.size(); ++i) {
    LinkClassResult& c = r.link_classes[link_class_[i]];
    const LinkStats& s = links[i].link->stats();
    ++c.links;
    c.max_queue_bytes = std::max(c.max_queue_bytes, s.max_bytes);
    c.tx_packets += s.tx_packets;
    c.tx_bytes += s.tx_bytes;
    c.ecn_marks += s.ecn_marks;
    c.tail_drops += s.tail_drops;
    c.pauses += s.pauses;
    c.paused_time += s.paused_time;
  }
  for (int k = 0; k <= static_cast<int>(EventKind::kPlaneUp); ++k) {
    const auto kind = static_cast<EventKind>(k);
    if (std::uint64_t n = traffic_->transport_event_count(kind))
      r.transport_events[to_string(kind)] = n;
  }
  r.event_log = traffic_->event_log();
  r.failures = failures_->log;
  r.samples = sampler_->samples;
  r.queue_samples = sampler_->queue_samples;
  r.path_samples = sampler_->path_samples;
}

}  // namespace mroce::sim
