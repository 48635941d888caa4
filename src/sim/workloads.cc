#include "sim/workloads.h"

#include <algorithm>
#include <atomic>
#include <numeric>

#include "sim/errors.h"

namespace mroce::sim {

namespace {

constexpr std::uint64_t kSaltWorkload = 3;

// Channels per pair: one per plane when the spec asks for it, else one.
std::uint32_t channel_planes(const WorkloadSpec& spec, Traffic& t) {
  return spec.per_plane ? std::max<std::uint32_t>(1, t.network().planes()) : 1;
}

// Independent messages between pairs; all start at spec.start (+ jitter).
class PairsWorkload : public Workload {
 public:
  PairsWorkload(const WorkloadSpec& spec,
                std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs, std::uint64_t seed)
      : spec_(spec), pairs_(std::move(pairs)), rng_(seed) {}

  void setup(Traffic& t) override {
    const std::uint32_t planes = channel_planes(spec_, t);
    for (auto [initiator, target] : pairs_) {
      const std::uint32_t ch =
          t.open_channels(initiator, target, spec_.messages, spec_.bytes, planes);
      Flow f;
      f.channel = ch;
      f.parts = planes;
      f.initiator = initiator;
      f.target = target;
      f.bytes = spec_.bytes;
      f.op = spec_.op;
      const SimTime at = spec_.start + (spec_.jitter ? rng_.below(spec_.jitter) : 0);
      std::uint32_t receives = 0;
      for (std::uint32_t m = 0; m < spec_.messages; ++m) {
        f.step = m;
        t.start_at(at, t.add_flow(f));
        receives += f.completes_on_receive();
      }
      for (std::uint32_t p = 0; receives && p < planes; ++p) t.post_receives(ch + p, receives);
    }
  }

 private:
  WorkloadSpec spec_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs_;
  Rng rng_;
};

// Ring all-reduce: 2(R-1) steps per iteration; rank r sends chunk s to rank r+1 once it
// has received chunk s-1 from rank r-1.
class RingAllReduce : public Workload {
 public:
  RingAllReduce(const WorkloadSpec& spec, std::uint32_t ranks)
      : spec_(spec),
        ranks_(ranks),
        steps_(2 * (ranks - 1)),
        total_(steps_ * spec.iterations),
        chunk_((spec.bytes + ranks - 1) / ranks),
        finished_(spec.iterations),
        ends_(spec.iterations, kSimNever) {}

  void setup(Traffic& t) override {
    first_ = static_cast<std::uint32_t>(t.flows().size());
    const std::uint32_t planes = channel_planes(spec_, t);
    for (std::uint32_t r = 0; r < ranks_; ++r) {
      const std::uint32_t ch = t.open_channels(r, next(r), total_, chunk_, planes);
      for (std::uint32_t g = 0; g < total_; ++g) {
        Flow f;
        f.channel = ch;
        f.parts = planes;
        f.initiator = r;
        f.target = next(r);
        f.bytes = chunk_;
        f.op = spec_.op;
        f.step = g;
        t.add_flow(f);
      }
      for (std::uint32_t p = 0; p < planes; ++p) t.post_receives(ch + p, total_);
    }
    for (std::uint32_t r = 0; r < ranks_; ++r) t.start_at(spec_.start, flow(r, 0));
  }

  void on_flow_done(Traffic& t, std::uint32_t id, SimTime now) override {
    const Flow& f = t.flow(id);
    if (f.failed) return;  // the ring stops; the run reports it incomplete
    if (f.step + 1 < total_) t.start(flow(f.target, f.step + 1));
    if (f.step % steps_ == steps_ - 1) {
      // Ranks finish from their own partitions' threads: one of them is the last.
      const std::uint32_t it = f.step / steps_;
      if (finished_[it].fetch_add(1, std::memory_order_relaxed) + 1 == ranks_) {
        ends_[it] = now - spec_.start;
      }
    }
  }

  // Each rank ends its iterations in order, so the finished ones are a prefix.
  std::vector<SimTime> iteration_ends() const override {
    std::vector<SimTime> done;
    for (SimTime t : ends_) {
      if (t == kSimNever) break;
      done.push_back(t);
    }
    return done;
  }

 private:
  std::uint32_t next(std::uint32_t r) const { return (r + 1) % ranks_; }
  std::uint32_t flow(std::uint32_t rank, std::uint32_t step) const {
    return first_ + rank * total_ + step;
  }

  WorkloadSpec spec_;
  std::uint32_t ranks_;
  std::uint32_t steps_;
  std::uint32_t total_;
  std::uint64_t chunk_;
  std::uint32_t first_ = 0;
  std::vector<std::atomic<std::uint32_t>> finished_;  // ranks done, per iteration
  std::vector<SimTime> ends_;                         // per iteration; kSimNever: not yet
};

std::uint32_t participants(const WorkloadSpec& spec, std::uint32_t hosts) {
  const std::uint32_t n = spec.hosts ? spec.hosts : hosts;
  if (n > hosts) {
    throw ConfigError("workload '" + spec.name + "': hosts = " + std::to_string(n) +
                      " but the topology has " + std::to_string(hosts));
  }
  if (n < 2) throw ConfigError("workload '" + spec.name + "' needs at least 2 hosts");
  return n;
}

}  // namespace

std::unique_ptr<Workload> make_workload(const WorkloadSpec& spec, std::uint32_t hosts,
                                        std::uint64_t seed) {
  const std::uint32_t n = participants(spec, hosts);
  Rng rng(seed ^ kSaltWorkload);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs;
  switch (spec.kind) {
    case WorkloadKind::kPermutation: {
      // Sattolo's shuffle: one cycle through every host, so nobody sends to itself.
      std::vector<std::uint32_t> dst(n);
      std::iota(dst.begin(), dst.end(), 0u);
      for (std::uint32_t i = n - 1; i > 0; --i) {
        std::swap(dst[i], dst[rng.below(i)]);
      }
      for (std::uint32_t i = 0; i < n; ++i) pairs.emplace_back(i, dst[i]);
      break;
    }
    case WorkloadKind::kIncast: {
      if (spec.receiver >= n) {
        throw ConfigError("workload '" + spec.name + "': receiver " +
                          std::to_string(spec.receiver) + " is not among its " + std::to_string(n) +
                          " hosts");
      }
      const std::uint32_t senders = spec.senders ? spec.senders : n - 1;
      if (senders > n - 1) {
        throw ConfigError("workload '" + spec.name + "': " + std::to_string(senders) +
                          " senders need " + std::to_string(senders + 1) + " hosts, have " +
                          std::to_string(n));
      }
      for (std::uint32_t h = 0, added = 0; h < n && added < senders; ++h) {
        if (h == spec.receiver) continue;
        // A READ incast: the receiver reads from every sender.
        if (spec.op == WrOpcode::kRdmaRead) {
          pairs.emplace_back(spec.receiver, h);
        } else {
          pairs.emplace_back(h, spec.receiver);
        }
        ++added;
      }
      break;
    }
    case WorkloadKind::kAllToAll:
      for (std::uint32_t a = 0; a < n; ++a) {
        for (std::uint32_t b = 0; b < n; ++b) {
          if (a != b) pairs.emplace_back(a, b);
        }
      }
      break;
    case WorkloadKind::kRingAllReduce:
      return std::make_unique<RingAllReduce>(spec, n);
  }
  return std::make_unique<PairsWorkload>(spec, std::move(pairs), rng.next());
}

}  // namespace mroce::sim
