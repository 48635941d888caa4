#include "sim/traffic.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/addressing.h"

namespace mroce::sim {

namespace {
constexpr std::uint64_t kRegionBase = 0x100000000000ull;
constexpr std::uint64_t kRegionLength = 1ull << 40;
constexpr std::uint64_t kRecvTag = 1ull << 63;  // receive wr_ids name a channel
constexpr std::size_t kEventLogLimit = 10000;
}  // namespace

Traffic::Traffic(Network& network, std::uint16_t port)
    : network_(network),
      port_(port),
      event_logs_(network.partitions()),
      remote_arrivals_(network.partitions()) {}

void Traffic::api_error(std::uint32_t host, const char* call, Errc e) const {
  throw std::runtime_error("host " + std::to_string(host) + ": " + call +
                           " failed: " + to_string(e));
}

void Traffic::register_memory() {
  keys_.resize(network_.host_count());
  for (std::uint32_t h = 0; h < network_.host_count(); ++h) {
    Errc e = network_.host(h).transport().reg_mr(kRegionBase, kRegionLength, access::kAll, nullptr,
                                                 &keys_[h]);
    if (e != Errc::kOk) api_error(h, "reg_mr", e);
  }
}

void Traffic::add_workload(std::unique_ptr<Workload> w) {
  workloads_.push_back(std::move(w));
}

void Traffic::setup() {
  for (current_ = 0; current_ < workloads_.size(); ++current_) workloads_[current_]->setup(*this);
}

std::uint32_t Traffic::open_channel(std::uint32_t a, std::uint32_t b, std::uint32_t messages,
                                    std::uint64_t max_bytes, int plane) {
  StreamConfig config;
  // Every send and receive of the channel fits at once: queues no deeper than that.
  config.sq_depth = messages + 1;
  config.rq_depth = messages + 1;
  config.plane = static_cast<std::int16_t>(plane);
  const std::uint32_t addr_plane = plane < 0 ? 0 : static_cast<std::uint32_t>(plane);
  Channel c;
  c.a = a;
  c.b = b;
  c.plane = plane;
  c.max_bytes = max_bytes;
  Host& ha = network_.host(a);
  Host& hb = network_.host(b);
  if (Errc e = ha.transport().create_stream(config, &c.sa); e != Errc::kOk) {
    api_error(a, "create_stream", e);
  }
  if (Errc e = hb.transport().create_stream(config, &c.sb); e != Errc::kOk) {
    api_error(b, "create_stream", e);
  }
  if (Errc e = ha.connect_stream(c.sa, {host_address(b, addr_plane), port_}, c.sb);
      e != Errc::kOk) {
    api_error(a, "connect_stream", e);
  }
  if (Errc e = hb.connect_stream(c.sb, {host_address(a, addr_plane), port_}, c.sa);
      e != Errc::kOk) {
    api_error(b, "connect_stream", e);
  }
  channels_.push_back(std::move(c));
  return static_cast<std::uint32_t>(channels_.size() - 1);
}

std::uint32_t Traffic::open_channels(std::uint32_t a, std::uint32_t b, std::uint32_t messages,
                                     std::uint64_t max_bytes, std::uint32_t planes) {
  if (planes <= 1) return open_channel(a, b, messages, max_bytes);
  const std::uint64_t part = (max_bytes + planes - 1) / planes;
  const std::uint32_t first = open_channel(a, b, messages, part, 0);
  for (std::uint32_t p = 1; p < planes; ++p)
    open_channel(a, b, messages, part, static_cast<int>(p));
  return first;
}

std::uint32_t Traffic::add_flow(const Flow& f) {
  flows_.push_back(f);
  flows_.back().workload = current_;
  ++remaining_;
  return static_cast<std::uint32_t>(flows_.size() - 1);
}

void Traffic::post_receives(std::uint32_t channel, std::uint32_t count) {
  const Channel& c = channels_[channel];
  RecvWr wr;
  wr.wr_id = kRecvTag | channel;
  wr.num_sge = 1;
  wr.sg[0] = {kRegionBase, static_cast<std::uint32_t>(c.max_bytes), keys_[c.b].lkey};
  for (std::uint32_t i = 0; i < count; ++i) {
    if (Errc e = network_.host(c.b).post_recv(c.sb, wr); e != Errc::kOk) {
      api_error(c.b, "post_recv", e);
    }
  }
}

void Traffic::start_at(SimTime at, std::uint32_t flow) {
  network_.host(flows_[flow].initiator).context().events.schedule(at, this, flow);
}

void Traffic::on_event(SimTime, std::uint64_t flow) {
  start(static_cast<std::uint32_t>(flow));
}

void Traffic::start(std::uint32_t id) {
  Flow& f = flows_[id];
  if (!network_.host_local(f.initiator)) {
    throw std::runtime_error("flow " + std::to_string(id) + " of workload " +
                             std::to_string(f.workload) + " starts on host " +
                             std::to_string(f.initiator) +
                             ", which another rank runs: this workload cannot be split over "
                             "ranks (its next message starts where the last one completed)");
  }
  f.start = network_.host(f.initiator).context().now();
  const std::uint32_t parts = std::max<std::uint32_t>(1, f.parts);
  f.pending = parts;
  // Parts of (nearly) equal size: the first ones take the remainder.
  const std::uint64_t base = f.bytes / parts;
  const std::uint64_t extra = f.bytes % parts;
  std::uint64_t offset = 0;
  for (std::uint32_t i = 0; i < parts; ++i) {
    Channel& c = channels_[f.channel + i];
    const std::uint64_t bytes = base + (i < extra ? 1 : 0);
    SendWr wr;
    wr.wr_id = id + 1;
    wr.opcode = f.op;
    wr.flags = send_flags::kSignaled;
    wr.num_sge = 1;
    wr.sg[0] = {kRegionBase + offset, static_cast<std::uint32_t>(bytes), keys_[c.a].lkey};
    wr.remote_addr = kRegionBase + offset;
    wr.rkey = keys_[c.b].rkey;
    wr.imm = id;
    offset += bytes;
    if (f.completes_on_receive()) {
      std::lock_guard lock(arrivals_lock_);
      c.arrivals.push_back(id);
      if (!network_.host_local(c.b)) {
        remote_arrivals_[network_.partition_of_host(c.b)].emplace_back(f.channel + i, id);
      }
    }
    if (Errc e = network_.host(c.a).post_send(c.sa, wr); e != Errc::kOk) {
      api_error(c.a, "post_send", e);
    }
  }
}

void Traffic::on_completion(SimTime now, std::uint32_t, const Completion& c) {
  const bool ok = c.status == WcStatus::kSuccess;
  if (c.wr_id & kRecvTag) {
    Channel& ch = channels_[c.wr_id & ~kRecvTag];
    std::uint32_t flow;
    {
      std::lock_guard lock(arrivals_lock_);
      if (ch.next_arrival >= ch.arrivals.size()) {
        if (ok) throw std::runtime_error("receive completion with no message in flight");
        return;  // flushed receives of a stream in error
      }
      flow = ch.arrivals[ch.next_arrival++];
    }
    part_done(flow, now, ok);
    return;
  }
  if (c.wr_id == 0 || c.wr_id > flows_.size()) return;
  const std::uint32_t id = static_cast<std::uint32_t>(c.wr_id - 1);
  if (!flows_[id].completes_on_receive() || !ok) part_done(id, now, ok);
}

void Traffic::part_done(std::uint32_t id, SimTime now, bool ok) {
  Flow& f = flows_[id];
  if (f.pending > 0) --f.pending;
  if (f.pending == 0 || !ok) finish(id, now, ok);
}

void Traffic::finish(std::uint32_t id, SimTime now, bool ok) {
  Flow& f = flows_[id];
  if (f.done()) return;
  f.end = now;
  f.failed = !ok;
  remaining_.fetch_sub(1, std::memory_order_relaxed);
  if (ok) completed_bytes_.fetch_add(f.bytes, std::memory_order_relaxed);
  workloads_[f.workload]->on_flow_done(*this, id, now);
}

void Traffic::on_transport_event(SimTime now, std::uint32_t host, const Event& e) {
  // Over ranks, every process sets up every host: each counts its own hosts' events.
  if (!network_.host_local(host)) return;
  const int k = static_cast<int>(e.kind);
  if (k >= 0 && k < 8) event_counts_[k].fetch_add(1, std::memory_order_relaxed);
  auto& log = event_logs_[network_.partition_of_host(host)];
  if (log.size() < kEventLogLimit) log.push_back({now, host, e});
}

void Traffic::write_arrivals(std::uint32_t to, Writer& w) {
  auto& list = remote_arrivals_[to];
  for (auto [channel, flow] : list) {
    w.put(channel);
    w.put(flow);
  }
  list.clear();
}

void Traffic::read_arrivals(Reader& r) {
  while (!r.done()) {
    const auto channel = r.get<std::uint32_t>();
    const auto flow = r.get<std::uint32_t>();
    if (channel >= channels_.size() || flow >= flows_.size()) {
      throw std::runtime_error("an arrival between ranks names no channel or flow");
    }
    channels_[channel].arrivals.push_back(flow);
  }
}

std::vector<Traffic::EventRecord> Traffic::event_log() const {
  std::vector<EventRecord> all;
  for (const auto& log : event_logs_) all.insert(all.end(), log.begin(), log.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const EventRecord& a, const EventRecord& b) { return a.time < b.time; });
  return all;
}

}  // namespace mroce::sim
