#include "sim/workloads.h"

#include <algorithm>
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
  // `sizes`: per pair and message, pairs.size() x messages of them; empty: spec.bytes.
  PairsWorkload(const WorkloadSpec& spec,
                std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs, std::uint64_t seed,
                std::vector<std::uint64_t> sizes = {})
      : spec_(spec), pairs_(std::move(pairs)), sizes_(std::move(sizes)), rng_(seed) {}

  void setup(Traffic& t) override {
    const std::uint32_t planes = channel_planes(spec_, t);
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      const auto [initiator, target] = pairs_[i];
      const std::uint64_t* size = sizes_.empty() ? nullptr : &sizes_[i * spec_.messages];
      const std::uint64_t largest =
          size ? *std::max_element(size, size + spec_.messages) : spec_.bytes;
      const std::uint32_t ch = t.open_channels(initiator, target, spec_.messages, largest, planes);
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
        if (size) f.bytes = size[m];
        t.start_at(at, t.add_flow(f));
        receives += f.completes_on_receive();
      }
      for (std::uint32_t p = 0; receives && p < planes; ++p) t.post_receives(ch + p, receives);
    }
  }

 private:
  WorkloadSpec spec_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pairs_;
  std::vector<std::uint64_t> sizes_;
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
        chunk_((spec.bytes + ranks - 1) / ranks) {}

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

  void on_flow_done(Traffic& t, std::uint32_t id, SimTime) override {
    const Flow& f = t.flow(id);
    if (f.failed) return;  // the ring stops; the run reports it incomplete
    if (f.step + 1 < total_) t.start(flow(f.target, f.step + 1));
  }

  // An iteration ends when every rank's last step of it has; each rank ends its
  // iterations in order, so the finished ones are a prefix.
  std::vector<SimTime> iteration_ends(const std::vector<Flow>& flows) const override {
    std::vector<SimTime> done;
    for (std::uint32_t it = 0; it < spec_.iterations; ++it) {
      SimTime end = 0;
      for (std::uint32_t r = 0; r < ranks_; ++r) {
        const Flow& f = flows[flow(r, it * steps_ + steps_ - 1)];
        if (!f.done() || f.failed) return done;
        end = std::max(end, f.end);
      }
      done.push_back(end - spec_.start);
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
      if (spec.peers == 0) {
        for (std::uint32_t a = 0; a < n; ++a) {
          for (std::uint32_t b = 0; b < n; ++b) {
            if (a != b) pairs.emplace_back(a, b);
          }
        }
        break;
      }
      if (spec.peers > n - 1) {
        throw ConfigError("workload '" + spec.name + "': " + std::to_string(spec.peers) +
                          " peers per host need " + std::to_string(spec.peers + 1) +
                          " hosts, have " + std::to_string(n));
      }
      // Sparse: host a sends to a + d for `peers` distances d spread evenly over
      // 1 .. n-1, so every host also receives from `peers` hosts.
      for (std::uint32_t a = 0; a < n; ++a) {
        for (std::uint32_t j = 0; j < spec.peers; ++j) {
          const std::uint64_t d = 1 + std::uint64_t{j} * (n - 1) / spec.peers;
          pairs.emplace_back(a, static_cast<std::uint32_t>((a + d) % n));
        }
      }
      break;
    case WorkloadKind::kRingAllReduce:
      return std::make_unique<RingAllReduce>(spec, n);
    case WorkloadKind::kKvCache: {
      if (spec.readers == 0 || spec.readers >= n) {
        throw ConfigError("workload '" + spec.name +
                          "': readers = " + std::to_string(spec.readers) + " must be from 1 to " +
                          std::to_string(n - 1) + " (the other hosts store)");
      }
      const std::uint32_t storage = n - spec.readers;
      if (spec.fanout == 0 || spec.fanout > storage) {
        throw ConfigError("workload '" + spec.name + "': fanout = " + std::to_string(spec.fanout) +
                          " but there are " + std::to_string(storage) + " storage hosts");
      }
      // Readers spread evenly over the hosts (hence over leaves and pods); the rest store.
      std::vector<bool> is_reader(n, false);
      for (std::uint32_t r = 0; r < spec.readers; ++r) {
        is_reader[static_cast<std::uint64_t>(r) * n / spec.readers] = true;
      }
      std::vector<std::uint32_t> stores;
      for (std::uint32_t h = 0; h < n; ++h) {
        if (!is_reader[h]) stores.push_back(h);
      }
      // Each reader reads from `fanout` distinct storage hosts drawn at random (a
      // partial Fisher-Yates shuffle), each READ of a size drawn from the list.
      std::vector<std::uint64_t> sizes;
      for (std::uint32_t h = 0; h < n; ++h) {
        if (!is_reader[h]) continue;
        for (std::uint32_t j = 0; j < spec.fanout; ++j) {
          std::swap(stores[j], stores[j + rng.below(storage - j)]);
          const bool read = spec.op == WrOpcode::kRdmaRead;
          pairs.emplace_back(read ? h : stores[j], read ? stores[j] : h);
          for (std::uint32_t m = 0; m < spec.messages; ++m) {
            sizes.push_back(spec.sizes.empty() ? spec.bytes
                                               : spec.sizes[rng.below(spec.sizes.size())]);
          }
        }
      }
      return std::make_unique<PairsWorkload>(spec, std::move(pairs), rng.next(), std::move(sizes));
    }
  }
  return std::make_unique<PairsWorkload>(spec, std::move(pairs), rng.next());
}

}  // namespace mroce::sim
