#include "harness/network.h"

#include <algorithm>
#include <cassert>
#include <stdexcept>

#include "wire/packet.h"

namespace mroce::testing {

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// What the sending transport called data; MetaRoCE NOPs (opcode byte after the common
// header and four words) carry none.
bool carries_content(const TxMeta& meta, std::span<const std::uint8_t> bytes) {
  const bool mroce_nop = bytes.size() > 32 && (bytes[0] >> 4) == wire::kVersion &&
                         (bytes[0] & 0x0f) == std::uint8_t(wire::PacketType::kData) &&
                         bytes[32] == std::uint8_t(wire::DataOp::kNop);
  return meta.cls == PacketClass::kData && !mroce_nop;
}

bool is_ect(Ecn e) {
  return e == Ecn::kEct0 || e == Ecn::kEct1;
}

}  // namespace

Network::Network(int planes, int spines_per_plane, std::uint64_t seed)
    : planes_(planes),
      spines_per_plane_(spines_per_plane),
      salt_(mix(seed ^ 0x5eed)),
      rng_(seed),
      spines_(std::size_t(planes) * spines_per_plane) {}

int Network::add_host(Transport* transport, std::vector<Address> addresses,
                      std::uint16_t listen_port) {
  if (int(addresses.size()) > planes_) throw std::invalid_argument("more addresses than planes");
  Host h{transport, std::move(addresses), listen_port, {}, {}, kNever};
  h.downlinks.resize(planes_);
  h.uplinks.resize(planes_);
  hosts_.push_back(std::move(h));
  const int index = int(hosts_.size()) - 1;
  tx_buf_.resize(std::max(tx_buf_.size(), transport->max_packet_size()));
  at(now_, [this, index] { pump(index); });
  return index;
}

int Network::spine_of(const Address& src, const Address& dst, std::uint16_t sport,
                      std::uint16_t dport) const {
  std::uint64_t h = salt_;
  for (int i = 0; i < 16; i += 8) {
    std::uint64_t a = 0, b = 0;
    for (int j = 0; j < 8; ++j) {
      a = a << 8 | src.bytes[i + j];
      b = b << 8 | dst.bytes[i + j];
    }
    h = mix(h ^ a);
    h = mix(h ^ b);
  }
  h = mix(h ^ (std::uint64_t{sport} << 16 | dport));
  return int(h % std::uint64_t(spines_per_plane_));
}

void Network::schedule(Time t, std::function<void()> fn) {
  events_q_.push(Event{std::max(t, now_), seq_++, std::move(fn)});
}

void Network::at(Time t, std::function<void()> fn) {
  schedule(t, std::move(fn));
}

bool Network::run_until(const std::function<bool()>& done, Time limit) {
  // Work the test posted directly since the last run is sent now, as a driver would
  // poll after posting.
  for (std::size_t h = 0; h < hosts_.size(); ++h) pump(int(h));
  while (!done()) {
    if (events_q_.empty() || events_q_.top().t > limit) {
      now_ = std::max(now_, std::min(limit, events_q_.empty() ? limit : events_q_.top().t));
      return done();
    }
    Event e = events_q_.top();
    events_q_.pop();
    now_ = e.t;
    ++events_;
    e.fn();
  }
  return true;
}

void Network::run_for(Time duration) {
  const Time end = now_ + duration;
  run_until([] { return false; }, end);
  now_ = end;
}

void Network::pump(int index) {
  Host& h = hosts_[index];
  TxMeta meta;
  while (h.t->poll_transmit(now_, tx_buf_, &meta)) {
    Packet pkt{std::vector<std::uint8_t>(tx_buf_.begin(), tx_buf_.begin() + meta.length), meta,
               meta.ecn};
    if (tap_) tap_(index, meta, pkt.bytes);
    if (drop_ && drop_(index, meta, pkt.bytes)) continue;
    send(index, std::move(pkt));
  }
  const Time deadline = h.t->next_deadline();
  if (deadline != kNever && deadline < h.timer_at) {
    h.timer_at = deadline;
    schedule(deadline, [this, index, deadline] {
      Host& host = hosts_[index];
      if (host.timer_at == deadline) host.timer_at = kNever;
      if (now_ >= host.t->next_deadline()) host.t->on_timer(now_);
      pump(index);
    });
  }
}

int Network::host_of(const Address& a, int* plane) const {
  for (std::size_t i = 0; i < hosts_.size(); ++i) {
    const auto& addrs = hosts_[i].addresses;
    auto it = std::find(addrs.begin(), addrs.end(), a);
    if (it != addrs.end()) {
      *plane = int(it - addrs.begin());
      return int(i);
    }
  }
  return -1;
}

void Network::send(int src_host, Packet pkt) {
  int src_plane = 0, dst_plane = 0;
  if (host_of(pkt.meta.src, &src_plane) != src_host) return;  // spoofed source: not routable
  const int dst_host = host_of(pkt.meta.dst, &dst_plane);
  if (dst_host < 0 || dst_plane != src_plane || src_plane != pkt.meta.plane) return;
  Uplink& up = hosts_[src_host].uplinks[src_plane];
  if (up.rate_bps == 0) {
    through_spine(src_host, dst_host, src_plane, std::move(pkt));
    return;
  }
  bool dropped = false;
  std::uint32_t depth = 0;
  const Time leave = serialize(up.q, up.rate_bps, ~0u, pkt.bytes.size(), &dropped, &depth);
  schedule(leave, [this, src_host, dst_host, src_plane, pkt = std::move(pkt)]() mutable {
    through_spine(src_host, dst_host, src_plane, std::move(pkt));
  });
}

Time Network::serialize(Queue& q, std::uint64_t rate_bps, std::uint32_t limit, std::size_t bytes,
                        bool* dropped, std::uint32_t* depth) {
  while (!q.in_queue.empty() && q.in_queue.front() <= now_) q.in_queue.pop_front();
  *depth = std::uint32_t(q.in_queue.size());
  *dropped = false;
  if (rate_bps == 0) return now_;
  if (q.in_queue.size() >= limit) {
    *dropped = true;
    return now_;
  }
  const Time start = std::max(now_, q.free_at);
  // Wire size: headers of Ethernet, IPv4 and UDP around the datagram.
  const Time tx = Time((bytes + 14 + 20 + 8) * 8 * 1'000'000'000ull / rate_bps);
  q.free_at = start + tx;
  q.in_queue.push_back(q.free_at);
  return q.free_at;
}

void Network::through_spine(int src_host, int dst_host, int plane, Packet pkt) {
  const int s = spine_of(pkt.meta.src, pkt.meta.dst, pkt.meta.src_port, pkt.meta.dst_port);
  Spine& sp = spines_[plane * spines_per_plane_ + s];
  const bool data = pkt.meta.cls == PacketClass::kData;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  ++sp.stats.packets;
  if (data) ++sp.stats.data_packets;
  if (sp.p.blackhole || sp.p.blackhole_from == src_host ||
      ((data || sp.p.loss_all) && sp.p.loss > 0 && u(rng_) < sp.p.loss)) {
    ++sp.stats.dropped;
    if (data) ++sp.stats.data_dropped;
    if (carries_content(pkt.meta, pkt.bytes)) ++sp.stats.content_dropped;
    return;
  }
  if (sp.p.ce > 0 && is_ect(pkt.ecn) && u(rng_) < sp.p.ce) {
    pkt.ecn = Ecn::kCe;
    ++sp.stats.ce_marked;
  }
  if (sp.p.corrupt > 0 && u(rng_) < sp.p.corrupt && !pkt.bytes.empty()) {
    std::uniform_int_distribution<std::size_t> bit(0, pkt.bytes.size() * 8 - 1);
    const std::size_t b = bit(rng_);
    pkt.bytes[b / 8] ^= std::uint8_t(1u << (b % 8));
    ++sp.stats.corrupted;
  }
  Queue& q = sp.queues[{dst_host, plane}];
  bool dropped = false;
  std::uint32_t depth = 0;
  Time leave = serialize(q, sp.p.rate_bps, sp.p.queue_packets, pkt.bytes.size(), &dropped, &depth);
  sp.stats.max_queue = std::max(sp.stats.max_queue, depth);
  if (dropped) {
    ++sp.stats.queue_drops;
    if (carries_content(pkt.meta, pkt.bytes)) ++sp.stats.content_dropped;
    return;
  }
  Time jitter = 0;
  if (sp.p.jitter > 0) jitter = std::uniform_int_distribution<Time>(0, sp.p.jitter)(rng_);
  Time arrive = std::max(leave + sp.p.delay + jitter, q.last_exit);
  q.last_exit = arrive;
  const bool dup = sp.p.duplicate > 0 && u(rng_) < sp.p.duplicate;
  if (dup) {
    ++sp.stats.duplicated;
    Packet copy = pkt;
    schedule(arrive, [this, dst_host, plane, copy = std::move(copy)]() mutable {
      to_downlink(dst_host, plane, std::move(copy));
    });
  }
  schedule(arrive, [this, dst_host, plane, pkt = std::move(pkt)]() mutable {
    to_downlink(dst_host, plane, std::move(pkt));
  });
}

void Network::to_downlink(int dst_host, int plane, Packet pkt) {
  Downlink& d = hosts_[dst_host].downlinks[plane];
  ++d.stats.packets;
  if (pkt.meta.cls == PacketClass::kData) ++d.stats.data_packets;
  bool dropped = false;
  std::uint32_t depth = 0;
  const Time leave =
      serialize(d.q, d.p.rate_bps, d.p.queue_packets, pkt.bytes.size(), &dropped, &depth);
  d.stats.max_queue = std::max(d.stats.max_queue, depth);
  if (dropped) {
    ++d.stats.queue_drops;
    if (carries_content(pkt.meta, pkt.bytes)) ++d.stats.content_dropped;
    return;
  }
  if (d.p.ecn_threshold > 0 && depth >= d.p.ecn_threshold && is_ect(pkt.ecn)) {
    pkt.ecn = Ecn::kCe;
    ++d.stats.ce_marked;
  }
  schedule(leave, [this, dst_host, plane, pkt = std::move(pkt)] { deliver(dst_host, plane, pkt); });
}

void Network::deliver(int dst_host, int plane, const Packet& pkt) {
  RxMeta rx;
  rx.src = pkt.meta.src;
  rx.dst = pkt.meta.dst;
  rx.src_port = pkt.meta.src_port;
  rx.dst_port = pkt.meta.dst_port;
  rx.plane = std::uint8_t(plane);
  rx.ecn = pkt.ecn;
  hosts_[dst_host].t->on_packet(now_, rx, pkt.bytes);
  pump(dst_host);
}

void Network::replace(int host, Transport* transport) {
  hosts_[host].t = transport;
  hosts_[host].timer_at = kNever;
  pump(host);
}

void Network::inject(int host, const RxMeta& meta, std::span<const std::uint8_t> bytes) {
  hosts_[host].t->on_packet(now_, meta, bytes);
  pump(host);
}

std::uint64_t Network::total_data_drops() const {
  std::uint64_t n = 0;
  for (const auto& s : spines_) n += s.stats.data_dropped + s.stats.queue_drops;
  for (const auto& h : hosts_)
    for (const auto& d : h.downlinks) n += d.stats.queue_drops;
  return n;
}

std::uint64_t Network::total_content_drops() const {
  std::uint64_t n = 0;
  for (const auto& s : spines_) n += s.stats.content_dropped;
  for (const auto& h : hosts_)
    for (const auto& d : h.downlinks) n += d.stats.content_dropped;
  return n;
}

std::size_t Recorder::count(bool recv, WcStatus status) const {
  return std::size_t(
      std::count_if(completions.begin(), completions.end(),
                    [&](const Completion& c) { return c.is_recv == recv && c.status == status; }));
}

Buffer::Buffer(Transport& t, std::size_t size, std::uint32_t access) : bytes(size) {
  const Errc e = t.reg_mr(addr(), size, access, bytes.data(), &keys);
  if (e != Errc::kOk) throw std::runtime_error("reg_mr failed");
}

}  // namespace mroce::testing
