#include "sim/simulation.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
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
                                       static_cast<double>(bdp_bytes(c.topology, g.dc_max_hops)));
  }
  queue = std::max(queue, 2 * frame);
  c.queue.limit_bytes = queue;
  c.queue.ecn_min_bytes =
      s.ecn_min_bytes ? s.ecn_min_bytes : static_cast<std::uint64_t>(s.ecn_min_fraction * queue);
  c.queue.ecn_max_bytes =
      s.ecn_max_bytes ? s.ecn_max_bytes : static_cast<std::uint64_t>(s.ecn_max_fraction * queue);
  if (c.queue.ecn_max_bytes < c.queue.ecn_min_bytes) c.queue.ecn_max_bytes = c.queue.ecn_min_bytes;
  // Long-haul queues: one round trip of the long-haul link at its rate by default.
  std::uint64_t lh = s.long_haul_queue_bytes;
  if (lh == 0) {
    const unsigned __int128 bits = static_cast<unsigned __int128>(c.topology.long_haul_rate_bps) *
                                   (2 * c.topology.long_haul_delay);
    lh = static_cast<std::uint64_t>(
        s.long_haul_queue_bdp * static_cast<double>(static_cast<std::uint64_t>(bits / 8 / kSec)));
  }
  lh = std::max(lh, 2 * frame);
  c.long_haul_queue = c.queue;
  c.long_haul_queue.limit_bytes = lh;
  c.long_haul_queue.ecn_min_bytes = static_cast<std::uint64_t>(s.ecn_min_fraction * lh);
  c.long_haul_queue.ecn_max_bytes = static_cast<std::uint64_t>(s.ecn_max_fraction * lh);
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

// Takes a sample of throughput, queues and traced paths every interval. Over ranks,
// each process samples what it owns at the same times, and the run adds the samples up
// at the end.
class Simulation::Sampler final : public EventHandler {
 public:
  // Totals so far (rx, done, drops) and levels now (paused, live) of one sample.
  struct Raw {
    SimTime time = 0;
    std::uint64_t rx = 0;
    std::uint64_t done = 0;
    std::uint64_t drops = 0;
    std::uint64_t paused = 0;
    std::uint64_t live = 0;
  };

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
    Raw s;
    s.time = now;
    for (std::uint32_t h = 0; h < net.host_count(); ++h) {
      if (net.host_local(h)) s.rx += net.host(h).stats().rx_payload_bytes;
    }
    s.done = sim_.traffic_->completed_bytes();
    s.drops = sim_.drops().total();
    s.live = sim_.live_packets();
    const std::size_t classes = sim_.link_class_names_.size();
    const std::size_t at = class_max.size();
    class_max.resize(at + classes, 0);
    const auto& links = net.links();
    for (std::size_t i = 0; i < links.size(); ++i) {
      if (!net.link_local(i)) continue;
      Link* l = links[i].link;
      s.paused += l->paused();
      auto& m = class_max[at + sim_.link_class_[i]];
      m = std::max(m, l->take_window_max());
    }
    raw.push_back(s);
    const std::uint32_t traced = sim_.scenario_.output.trace_host;
    if (traced < net.host_count() && net.host_local(traced)) trace_paths(now);
    last_ = now;
  }

  // The samples as reports show them: rates over each interval.
  void finish(RunResult& r) const { finish(r, raw, class_max); }
  void finish(RunResult& r, const std::vector<Raw>& rows,
              const std::vector<std::uint64_t>& maxes) const {
    const std::size_t classes = sim_.link_class_names_.size();
    Raw last;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Raw& x = rows[i];
      Sample s;
      s.time = x.time;
      s.rx_gbps = gbps(x.rx - last.rx, x.time - last.time);
      s.goodput_gbps = gbps(x.done - last.done, x.time - last.time);
      s.drops = x.drops - last.drops;
      s.paused_links = static_cast<std::uint32_t>(x.paused);
      s.packets_in_network = x.live;
      r.samples.push_back(s);
      for (std::uint32_t c = 0; c < classes; ++c) {
        r.queue_samples.push_back({x.time, c, maxes[i * classes + c]});
      }
      last = x;
    }
    r.path_samples = path_samples;
  }

  std::vector<Raw> raw;
  std::vector<std::uint64_t> class_max;  // [sample * classes + class]
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

Simulation::Simulation(const Scenario& scenario, const TransportInfo& transport, Ranks* ranks)
    : scenario_(scenario), transport_name_(transport.name), ranks_(ranks) {
  NetworkConfig net = resolve_network(scenario_, transport);
  if (split()) scenario_.partitions = std::max(scenario_.partitions, ranks_->size());
  std::vector<SimContext*> parts;
  for (std::uint32_t i = 0; i < scenario_.partitions; ++i) {
    parts.push_back(parts_.emplace_back(std::make_unique<SimContext>()).get());
  }
  network_ = std::make_unique<Network>(parts, net);
  // Rank r runs partitions [r P / R, (r + 1) P / R).
  local_end_ = scenario_.partitions;
  if (split()) {
    const std::uint64_t p = scenario_.partitions, n = ranks_->size(), r = ranks_->rank();
    local_first_ = static_cast<std::uint32_t>(r * p / n);
    local_end_ = static_cast<std::uint32_t>((r + 1) * p / n);
    network_->set_local_partitions(local_first_, local_end_);
  }

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
  sampler_->take(max_over_ranks(now()));
  RunResult r;
  r.windows = windows_;
  r.rank_sync_seconds = sync_seconds_;
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
// each partition takes in what was sent toward it (over ranks, after one thread of each
// rank has swapped it with the others); then one thread alone samples, runs the
// scripted actions that fell due, checks whether the work is done and sets the next
// window. Over ranks, every rank makes those decisions from the same figures (the
// earliest event, the flows finished, an error anywhere), gathered from all of them.
void Simulation::run_partitioned(const RunOptions& options) {
  const std::uint32_t first = local_first_;
  const std::uint32_t n = local_end_ - local_first_;
  const std::uint32_t parts = static_cast<std::uint32_t>(parts_.size());
  const SimTime lookahead = network_->lookahead();
  const SimTime interval = scenario_.output.sample_interval;
  const SimTime last = scenario_.stop;  // events at or before it run
  const bool until_done = traffic_->workload_count() > 0;
  const bool over_ranks = split();
  SimTime next_sample = interval;
  SimTime end = 0;
  bool stop = false;
  bool failed_elsewhere = false;
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
  // The earliest pending event anywhere and whether every flow is done; over ranks,
  // whether any rank failed. Ranks agree on them in the exchange after each window (what
  // is in flight between partitions counts as pending), or in a gathering of their own
  // before the first window and after a scripted action.
  SimTime next = kSimNever;
  bool all_done = false;
  bool agreed = false;
  const auto put_status = [&](Writer& w, SimTime local_next) {
    w.put(local_next);
    w.put(traffic_->finished());
    w.put<std::uint8_t>(error != nullptr);
  };
  const auto read_status = [&](Reader& r, std::uint64_t& finished) {
    next = std::min(next, r.get<SimTime>());
    finished += r.get<std::uint64_t>();
    failed_elsewhere |= r.get<std::uint8_t>() != 0;
  };
  const auto local_next = [&] {
    SimTime t = kSimNever;
    for (std::uint32_t p = first; p < first + n; ++p)
      t = std::min(t, parts_[p]->events.next_time());
    return t;
  };
  const auto agree = [&] {
    next = local_next();
    if (!over_ranks) {
      all_done = traffic_->done();
      return;
    }
    Bytes mine;
    Writer w(mine);
    put_status(w, next);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<Bytes> all = ranks_->all_gather(mine);
    sync_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::uint64_t finished = 0;
    for (const Bytes& b : all) {
      Reader r(b);
      read_status(r, finished);
    }
    all_done = finished == traffic_->flows().size();
  };
  // Over ranks a rank stops only on what all agreed on: an error of its own is told to
  // the others first.
  const auto failed = [&] { return over_ranks ? failed_elsewhere : error != nullptr; };
  auto plan = [&] {
    if (!agreed) agree();
    agreed = false;
    if (failed() || (until_done && all_done)) {
      stop = true;
      return;
    }
    // Samples and scripted actions fall due as they would among the events of a single
    // queue: once every event before them has run. Scripted actions run before the
    // events of their own time, as they were scheduled before them.
    for (;;) {
      const SimTime scripted = script_.next_time();
      const SimTime first_due = std::min(next, scripted);
      if (first_due == kSimNever || first_due > last) break;
      if (next_sample <= first_due) {
        sampler_->take(next_sample);
        next_sample += interval;
      } else if (scripted <= next) {
        guarded([&] { script_.run_one(); });
        agree();  // an action may schedule events (a link that comes back up)
      } else {
        break;
      }
    }
    if (next == kSimNever || next > last || failed()) {
      stop = true;
      return;
    }
    end = std::min({lookahead == kSimNever ? kSimNever : next + lookahead, next_sample,
                    script_.next_time(), last == kSimNever ? kSimNever : last + 1});
    ++windows_;
    if (options.progress && (windows_ & 0xff) == 0) print_progress();
  };
  // Over ranks: what local partitions sent toward other ranks' partitions in the window
  // (packets, PFC frames, the arrivals of messages posted) goes to those ranks, and
  // theirs comes into the local partitions' crossings.
  auto swap = [&] {
    if (!over_ranks) return;
    SimTime mine = local_next();
    for (std::uint32_t p = first; p < first + n; ++p) {
      mine = std::min(mine, network_->earliest_crossing(p));
    }
    std::vector<Bytes> to(ranks_->size());
    guarded([&] {
      for (std::uint32_t r = 0; r < ranks_->size(); ++r) {
        if (r == ranks_->rank()) continue;
        const auto q0 = static_cast<std::uint32_t>(std::uint64_t{r} * parts / ranks_->size());
        const auto q1 = static_cast<std::uint32_t>(std::uint64_t{r + 1} * parts / ranks_->size());
        Writer w(to[r]);
        put_status(w, mine);
        const std::size_t at = to[r].size();
        w.put<std::uint64_t>(0);  // the packets' length, set below
        for (std::uint32_t p = first; p < first + n; ++p) {
          for (std::uint32_t q = q0; q < q1; ++q) network_->write_crossings(p, q, w);
        }
        const std::uint64_t len = to[r].size() - at - sizeof(std::uint64_t);
        std::memcpy(to[r].data() + at, &len, sizeof len);
        for (std::uint32_t q = q0; q < q1; ++q) traffic_->write_arrivals(q, w);
      }
    });
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<Bytes> from = ranks_->exchange(to);
    sync_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    next = mine;
    std::uint64_t finished = traffic_->finished();
    failed_elsewhere |= error != nullptr;
    for (std::uint32_t r = 0; r < from.size(); ++r) {
      if (r == ranks_->rank()) continue;
      Reader in(from[r]);
      read_status(in, finished);
      guarded([&] {
        const auto len = in.get<std::uint64_t>();
        Bytes packets(len);
        in.get_bytes(packets.data(), len);
        Reader rp(packets);
        network_->read_crossings(rp);
        traffic_->read_arrivals(in);
      });
    }
    all_done = finished == traffic_->flows().size();
    agreed = true;
  };
  // The barrier's completion alternates: plan the window, then (after it) swap.
  bool planning = true;
  auto completion = [&]() noexcept {
    if (planning) {
      plan();
    } else {
      swap();
    }
    planning = !planning;
  };
  SpinBarrier sync(n, completion);

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
  for (std::uint32_t p = first + 1; p < first + n; ++p) threads.emplace_back(work, p);
  work(first);
  threads.clear();  // joins
  // An error in the last window's deliveries is told to the others before they part.
  if (over_ranks) agree();
  if (error) std::rethrow_exception(error);
  if (failed_elsewhere) throw std::runtime_error("the run failed in another rank");
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
  for (std::uint32_t p = local_first_; p < local_end_; ++p) t = std::max(t, parts_[p]->now());
  return t;
}

SimTime Simulation::max_over_ranks(SimTime t) const {
  if (!split()) return t;
  Bytes mine;
  Writer(mine).put(t);
  for (const Bytes& b : ranks_->all_gather(mine)) t = std::max(t, Reader(b).get<SimTime>());
  return t;
}

DropCounters Simulation::drops() const {
  DropCounters d;
  for (std::uint32_t p = local_first_; p < local_end_; ++p) d += parts_[p]->drops;
  return d;
}

std::size_t Simulation::live_packets() const {
  std::size_t n = 0;
  for (std::uint32_t p = local_first_; p < local_end_; ++p) n += parts_[p]->packets.live();
  return n;
}

bool Simulation::events_pending() const {
  for (std::uint32_t p = local_first_; p < local_end_; ++p) {
    if (!parts_[p]->events.empty()) return true;
  }
  return false;
}

void Simulation::collect(RunResult& r) const {
  const Network& net = *network_;
  r.scenario = scenario_.name;
  r.transport = transport_name_;
  r.pfc = net.config().switches.pfc.enabled;
  r.sim_time = now();
  for (std::uint32_t p = local_first_; p < local_end_; ++p) {
    const SimContext& c = *parts_[p];
    r.events += c.events.executed();
    r.packets_sent += c.packets_sent;
    r.peak_packets += c.packets.capacity();
  }
  r.drops = drops();
  r.peak_rss_bytes = peak_rss();
  r.hosts = net.host_count();
  r.switches = network_->switch_count();
  r.links = net.links().size();
  r.base_rtt = network_->base_rtt();
  r.queue_bytes = net.config().queue.limit_bytes;
  for (std::uint32_t h = 0; h < net.host_count(); ++h) {
    if (!net.host_local(h)) continue;
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
    tt.path_failures += c.path_failures;
    tt.reentropies += c.reentropies;
    tt.paths_home += c.paths_home;
    for (int d = 0; d < static_cast<int>(DropReason::kCount); ++d) tt.drops[d] += c.drops[d];
    t.for_each_connection([&](ConnId) { ++r.connections; });
  }
  for (std::size_t s = 0; s < network_->switch_count(); ++s) {
    if (net.switch_local(s)) r.pause_frames += net.switch_by_global(s).stats().pause_frames;
  }
  r.link_class_names = link_class_names_;
  r.link_classes.resize(link_class_names_.size());
  const auto& links = net.links();
  for (std::size_t i = 0; i < links.size(); ++i) {
    LinkClassResult& c = r.link_classes[link_class_[i]];
    ++c.links;  // every link, wherever it runs
    if (!net.link_local(i)) continue;
    const LinkStats& s = links[i].link->stats();
    c.max_queue_bytes = std::max(c.max_queue_bytes, s.max_bytes);
    c.tx_packets += s.tx_packets;
    c.tx_bytes += s.tx_bytes;
    c.ecn_marks += s.ecn_marks;
    c.tail_drops += s.tail_drops;
    c.pauses += s.pauses;
    c.paused_time += s.paused_time;
  }
  r.flows = traffic_->flows();
  for (std::uint32_t p = local_first_; p < local_end_; ++p) {
    const auto& log = traffic_->partition_event_log(p);
    r.event_log.insert(r.event_log.end(), log.begin(), log.end());
  }
  for (int k = 0; k <= static_cast<int>(EventKind::kPlaneUp); ++k) {
    const auto kind = static_cast<EventKind>(k);
    if (std::uint64_t n = traffic_->transport_event_count(kind)) {
      r.transport_events[to_string(kind)] = n;
    }
  }
  sampler_->finish(r);
  if (split()) merge_ranks(r);
  // In time order, records of the same time in partition order.
  std::stable_sort(
      r.event_log.begin(), r.event_log.end(),
      [](const Traffic::EventRecord& a, const Traffic::EventRecord& b) { return a.time < b.time; });
  r.events += script_.executed();  // scripted actions of a partitioned run (else none)
  r.complete = std::all_of(r.flows.begin(), r.flows.end(), [](const Flow& f) { return f.done(); });

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
    wr.iteration_times = traffic_->workload(w).iteration_ends(r.flows);
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
  r.failures = failures_->log;
}

// Every rank sends what it measured to all; each adds the counters up, takes the
// largest of the peaks, each flow's times from the rank that saw them, the event logs
// of every partition and the samples added up.
void Simulation::merge_ranks(RunResult& r) const {
  // The scalar figures, in one order for packing and unpacking.
  enum class Op { kSum, kMax };
  const auto fields = [&](RunResult& x, auto&& f) {
    f(Op::kMax, x.sim_time);
    f(Op::kMax, x.peak_rss_bytes);
    for (std::uint64_t* v : {&x.events, &x.packets_sent, &x.peak_packets, &x.data_packets_sent,
                             &x.data_packets_delivered, &x.payload_bytes_delivered, &x.connections,
                             &x.pause_frames, &x.drops.data_packets}) {
      f(Op::kSum, *v);
    }
    for (auto& v : x.drops.by_cause) f(Op::kSum, v);
    auto& t = x.transport_totals;
    for (std::uint64_t* v :
         {&t.tx_packets, &t.tx_bytes, &t.tx_data_packets, &t.tx_retransmits, &t.rx_packets,
          &t.rx_ce_packets, &t.path_failures, &t.reentropies, &t.paths_home}) {
      f(Op::kSum, *v);
    }
    for (auto& v : t.drops) f(Op::kSum, v);
    for (LinkClassResult& c : x.link_classes) {
      f(Op::kMax, c.max_queue_bytes);
      for (std::uint64_t* v :
           {&c.tx_packets, &c.tx_bytes, &c.ecn_marks, &c.tail_drops, &c.pauses, &c.paused_time}) {
        f(Op::kSum, *v);
      }
    }
  };
  std::vector<std::uint64_t> mine;
  fields(r, [&](Op, std::uint64_t& v) { mine.push_back(v); });
  std::vector<std::uint64_t> events(static_cast<int>(EventKind::kPlaneUp) + 1);
  for (std::size_t k = 0; k < events.size(); ++k) {
    events[k] = traffic_->transport_event_count(static_cast<EventKind>(k));
  }
  struct FlowTimes {
    SimTime start, end;
    std::uint8_t failed;
  };
  std::vector<FlowTimes> times;
  for (const Flow& f : r.flows) times.push_back({f.start, f.end, f.failed});
  std::vector<std::uint32_t> log_parts;
  for (std::uint32_t p = local_first_; p < local_end_; ++p) {
    log_parts.push_back(static_cast<std::uint32_t>(traffic_->partition_event_log(p).size()));
  }
  Bytes out;
  Writer w(out);
  w.put_vector(mine);
  w.put_vector(events);
  w.put_vector(times);
  w.put_vector(log_parts);
  w.put_vector(r.event_log);
  w.put_vector(sampler_->raw);
  w.put_vector(sampler_->class_max);
  w.put_vector(r.path_samples);

  std::vector<std::uint64_t> merged = mine;
  std::vector<std::uint64_t> merged_events(events.size(), 0);
  std::vector<std::vector<Traffic::EventRecord>> logs(parts_.size());
  std::vector<Sampler::Raw> raw;
  std::vector<std::uint64_t> class_max;
  r.event_log.clear();
  r.path_samples.clear();
  const std::vector<Bytes> all = ranks_->all_gather(out);
  for (std::uint32_t rank = 0; rank < all.size(); ++rank) {
    const bool first_rank = rank == 0;
    Reader in(all[rank]);
    const auto theirs = in.get_vector<std::uint64_t>();
    const auto their_events = in.get_vector<std::uint64_t>();
    const auto their_times = in.get_vector<FlowTimes>();
    const auto their_parts = in.get_vector<std::uint32_t>();
    const auto their_log = in.get_vector<Traffic::EventRecord>();
    const auto their_raw = in.get_vector<Sampler::Raw>();
    const auto their_max = in.get_vector<std::uint64_t>();
    const auto their_paths = in.get_vector<PathSample>();
    if (theirs.size() != merged.size() || their_times.size() != r.flows.size() ||
        (!first_rank && (their_raw.size() != raw.size() || their_max.size() != class_max.size()))) {
      throw std::runtime_error("ranks disagree on the run's shape");
    }
    std::size_t i = 0;
    fields(r, [&](Op op, std::uint64_t&) {
      if (first_rank) {
        merged[i] = theirs[i];
      } else {
        merged[i] = op == Op::kSum ? merged[i] + theirs[i] : std::max(merged[i], theirs[i]);
      }
      ++i;
    });
    for (std::size_t k = 0; k < events.size(); ++k) merged_events[k] += their_events[k];
    for (std::size_t f = 0; f < r.flows.size(); ++f) {
      Flow& flow = r.flows[f];
      const FlowTimes& t = their_times[f];
      if (first_rank) {
        flow.start = t.start;
        flow.end = t.end;
        flow.failed = t.failed;
      } else {
        flow.start = std::min(flow.start, t.start);
        flow.end = std::min(flow.end, t.end);
        flow.failed = flow.failed || t.failed;
      }
    }
    // Their partitions' logs, one after the other.
    const auto p0 = static_cast<std::uint32_t>(std::uint64_t{rank} * parts_.size() / all.size());
    std::size_t at = 0;
    for (std::size_t k = 0; k < their_parts.size(); ++k) {
      if (p0 + k >= logs.size() || at + their_parts[k] > their_log.size()) {
        throw std::runtime_error("ranks disagree on the run's shape");
      }
      logs[p0 + k].assign(their_log.begin() + static_cast<std::ptrdiff_t>(at),
                          their_log.begin() + static_cast<std::ptrdiff_t>(at + their_parts[k]));
      at += their_parts[k];
    }
    if (first_rank) {
      raw = their_raw;
      class_max = their_max;
    } else {
      for (std::size_t k = 0; k < raw.size(); ++k) {
        raw[k].rx += their_raw[k].rx;
        raw[k].done += their_raw[k].done;
        raw[k].drops += their_raw[k].drops;
        raw[k].paused += their_raw[k].paused;
        raw[k].live += their_raw[k].live;
      }
      for (std::size_t k = 0; k < class_max.size(); ++k) {
        class_max[k] = std::max(class_max[k], their_max[k]);
      }
    }
    r.path_samples.insert(r.path_samples.end(), their_paths.begin(), their_paths.end());
  }
  std::size_t i = 0;
  fields(r, [&](Op, std::uint64_t& v) { v = merged[i++]; });
  r.transport_events.clear();
  for (std::size_t k = 0; k < merged_events.size(); ++k) {
    if (merged_events[k])
      r.transport_events[to_string(static_cast<EventKind>(k))] = merged_events[k];
  }
  for (const auto& log : logs) r.event_log.insert(r.event_log.end(), log.begin(), log.end());
  const std::vector<PathSample> paths = std::move(r.path_samples);
  r.samples.clear();
  r.queue_samples.clear();
  sampler_->finish(r, raw, class_max);
  r.path_samples = paths;
}

}  // namespace mroce::sim
