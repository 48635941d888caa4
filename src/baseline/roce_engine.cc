#include "baseline/roce_engine.h"

#include <algorithm>
#include <stdexcept>

#include "baseline/codec.h"
#include "baseline/icrc.h"
#include "baseline/psn.h"
#include "baseline/queue_pair.h"

namespace mroce::baseline {

namespace {

constexpr std::uint32_t kMaxSlots = 0xfffe;
constexpr std::uint32_t kMaxQueueDepth = 1u << 16;
constexpr std::uint32_t kMaxInline = 4096;

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// IBA 10.9.3: the low 15 bits must match and one side must be a full member.
bool pkey_match(std::uint16_t a, std::uint16_t b) {
  return (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000);
}

}  // namespace

RoceEngine::RoceEngine(RoceConfig config)
    : config_(std::move(config)),
      memory_(config_.seed),
      ctx_{config_, config_.line_rate_bps / std::max<std::size_t>(1, config_.planes.size()),
           memory_, counters_, sink_},
      data_ready_(std::max<std::size_t>(1, config_.planes.size())),
      ports_(data_ready_.size()) {
  if (config_.mtu < 256 || config_.mtu > 65532 || config_.mtu % 4 != 0)
    throw std::invalid_argument("RoceConfig::mtu must be a multiple of 4 in [256, 65532]");
}

RoceEngine::~RoceEngine() = default;

Errc RoceEngine::reg_mr(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
                        MrKeys* out) {
  return memory_.reg(addr, length, access, host, out);
}

Errc RoceEngine::dereg_mr(std::uint32_t lkey) {
  return memory_.dereg(lkey);
}

Errc RoceEngine::create_stream(const StreamConfig& config, StreamId* out) {
  const std::size_t planes = std::max<std::size_t>(1, config_.planes.size());
  if (config.sq_depth == 0 || config.sq_depth > kMaxQueueDepth || config.rq_depth == 0 ||
      config.rq_depth > kMaxQueueDepth || config.max_inline > kMaxInline || config.plane < -1 ||
      config.plane >= std::int64_t(planes))
    return Errc::kInvalidArgument;
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (qps_.size() >= std::min(config_.max_qps, kMaxSlots)) return Errc::kNoResources;
    slot = std::uint32_t(qps_.size());
    qps_.emplace_back();
    generations_.push_back(0);
    // Scheduling structures grow with the QPs, never with the packets. A destroyed QP may
    // leave a stale mark behind, hence twice as many queue entries as QPs.
    deadlines_.reserve(qps_.size());
    control_ready_.reserve(2 * qps_.size());
    for (SlotQueue& q : data_ready_) q.reserve(2 * qps_.size());
  }
  // A recycled slot gets a new QPN, so late packets for the old QP find nothing.
  if (++generations_[slot] == 0) generations_[slot] = 1;
  const StreamId qpn = StreamId{generations_[slot]} << 16 | (slot + 1);
  // The plane hint binds the QP to that port; without one, QPs take ports round-robin.
  const auto plane =
      config.plane >= 0 ? std::uint8_t(config.plane) : std::uint8_t(next_plane_++ % planes);
  qps_[slot] = std::make_unique<QueuePair>(ctx_, qpn, config, plane);
  *out = qpn;
  return Errc::kOk;
}

QueuePair* RoceEngine::find(StreamId stream) const {
  if (stream == kNoStream || stream > kPsnMask) return nullptr;
  const std::uint32_t slot = slot_of(stream);
  if (slot >= qps_.size() || !qps_[slot] || qps_[slot]->qpn() != stream) return nullptr;
  return qps_[slot].get();
}

std::uint16_t RoceEngine::src_port_for(StreamId local, StreamId remote) const {
  std::uint64_t v = std::uint64_t{local} * remote;
  v ^= v >> 20;
  v ^= v >> 40;
  const auto label = std::uint32_t(v & 0xfffff);
  const std::uint32_t low = (label & 0x3fff) ^ ((label & 0xfc000) >> 14);
  const std::uint32_t count = std::max<std::uint32_t>(1, config_.src_port_count);
  return std::uint16_t(config_.src_port_base + low % count);
}

std::uint32_t RoceEngine::initial_psn(StreamId sender, StreamId receiver) const {
  // Both ends must agree without a handshake: derived from the QPN pair alone.
  if (config_.initial_psn != kDerivedPsn) return config_.initial_psn & kPsnMask;
  return std::uint32_t(mix(std::uint64_t{sender} << 24 | receiver)) & kPsnMask;
}

Errc RoceEngine::connect_stream(Time now, StreamId stream, const Endpoint& peer, StreamId remote) {
  QueuePair* qp = find(stream);
  if (!qp) return Errc::kNotFound;
  if (remote == kNoStream || remote > kPsnMask) return Errc::kInvalidArgument;
  if (qp->state() != StreamState::kIdle) return Errc::kInvalidState;
  qp->connect(now, peer, remote, src_port_for(stream, remote), initial_psn(stream, remote),
              initial_psn(remote, stream));
  refresh(slot_of(stream), now);
  return Errc::kOk;
}

Errc RoceEngine::destroy_stream(Time now, StreamId stream) {
  QueuePair* qp = find(stream);
  if (!qp) return Errc::kNotFound;
  const std::uint32_t slot = slot_of(stream);
  const bool connected = qp->state() != StreamState::kIdle;
  const Event closed{EventKind::kConnClosed, now, stream, qp->peer(), 0, qp->plane()};
  deadlines_.set(slot, kNever);
  qps_[slot].reset();  // queued marks for this slot are skipped when popped
  free_slots_.push_back(slot);
  if (connected) ctx_.event(closed);
  return Errc::kOk;
}

Errc RoceEngine::post_send(Time now, StreamId stream, const SendWr& wr) {
  QueuePair* qp = find(stream);
  if (!qp) return Errc::kNotFound;
  const Errc e = qp->post_send(now, wr);
  if (find(stream)) refresh(slot_of(stream), now);
  return e;
}

Errc RoceEngine::post_recv(Time now, StreamId stream, const RecvWr& wr) {
  QueuePair* qp = find(stream);
  if (!qp) return Errc::kNotFound;
  return qp->post_recv(now, wr);
}

void RoceEngine::on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) {
  ++counters_.rx_packets;
  Packet p;
  const bool check_icrc = config_.carry_payload && config_.icrc;
  if (!decode(bytes, config_.carry_payload, &p) || (check_icrc && !icrc_valid(meta, bytes))) {
    counters_.rx_bytes += bytes.size();
    ctx_.drop(DropReason::kMalformed);
    return;
  }
  counters_.rx_bytes += p.wire_length;
  if (meta.ecn == Ecn::kCe) ++counters_.rx_ce_packets;
  QueuePair* qp = find(p.bth.dest_qp);
  if (!qp || qp->state() == StreamState::kIdle || qp->peer().addr != meta.src) {
    ctx_.drop(DropReason::kUnknownConn);
    return;
  }
  if (!pkey_match(p.bth.pkey, config_.pkey)) {
    ctx_.drop(DropReason::kBadToken);
    return;
  }
  qp->on_packet(now, meta, p);
  if (find(p.bth.dest_qp)) refresh(slot_of(p.bth.dest_qp), now);
}

bool RoceEngine::poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  if (buf.size() < max_packet_size()) return false;
  const auto line_cost = [&](const TxMeta& m) {
    ports_[m.plane].on_sent(now, std::uint64_t{m.wire_length} + config_.frame_overhead,
                            ctx_.port_rate_bps);
  };
  // Acknowledgements and CNPs go first and are not paced.
  while (!control_ready_.empty()) {
    const std::uint32_t slot = control_ready_.pop();
    QueuePair* qp = slot < qps_.size() ? qps_[slot].get() : nullptr;
    if (!qp) continue;
    qp->queued_control = false;
    if (!qp->has_control() || qp->write_control(now, buf, out) == 0) continue;
    line_cost(*out);
    refresh(slot, now);
    return true;
  }
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    const std::size_t port = (next_port_ + i) % ports_.size();
    if (!ports_[port].ready(now)) continue;
    SlotQueue& ready = data_ready_[port];
    while (!ready.empty()) {
      const std::uint32_t slot = ready.pop();
      QueuePair* qp = slot < qps_.size() ? qps_[slot].get() : nullptr;
      if (!qp) continue;
      qp->queued_data = false;
      if (qp->has_data() && qp->pace_time() <= now) {
        if (qp->write_data(now, buf, out) == 0) continue;
        line_cost(*out);
        refresh(slot, now);
        next_port_ = port + 1;
        return true;
      }
      refresh(slot, now);
    }
  }
  return false;
}

void RoceEngine::on_timer(Time now) {
  while (deadlines_.top_time() <= now) {
    const std::uint32_t slot = deadlines_.top_slot();
    deadlines_.set(slot, kNever);
    if (!qps_[slot]) continue;
    qps_[slot]->on_timer(now);
    if (qps_[slot]) refresh(slot, now);
  }
}

Time RoceEngine::next_deadline() const {
  Time t = deadlines_.top_time();
  for (std::size_t port = 0; port < ports_.size(); ++port) {
    if (!data_ready_[port].empty()) t = std::min(t, ports_[port].next());
  }
  return t;
}

std::size_t RoceEngine::max_packet_size() const {
  return max_datagram(config_.mtu);
}

void RoceEngine::refresh(std::uint32_t slot, Time now) {
  QueuePair& qp = *qps_[slot];
  if (qp.has_control() && !qp.queued_control) {
    control_ready_.push(slot);
    qp.queued_control = true;
  }
  Time wake = qp.timer_deadline();
  if (qp.has_data()) {
    const Time pace = qp.pace_time();
    if (pace > now) {
      wake = std::min(wake, pace);
    } else if (!qp.queued_data) {
      data_ready_[qp.plane()].push(slot);
      qp.queued_data = true;
    }
  }
  deadlines_.set(slot, wake);
}

StreamState RoceEngine::stream_state(StreamId stream) const {
  const QueuePair* qp = find(stream);
  return qp ? qp->state() : StreamState::kDestroyed;
}

ConnId RoceEngine::stream_connection(StreamId stream) const {
  const QueuePair* qp = find(stream);
  return qp && qp->state() != StreamState::kIdle ? stream : 0;
}

bool RoceEngine::connection_stats(ConnId conn, ConnStats* out) const {
  const QueuePair* qp = find(conn);
  if (!qp || qp->state() == StreamState::kIdle) return false;
  qp->fill_stats(out);
  return true;
}

bool RoceEngine::path_stats(ConnId conn, std::uint16_t path, PathStats* out) const {
  const QueuePair* qp = find(conn);
  if (!qp || qp->state() == StreamState::kIdle || path != 0) return false;
  qp->fill_path_stats(out);
  return true;
}

void RoceEngine::for_each_connection(const std::function<void(ConnId)>& fn) const {
  for (const auto& qp : qps_) {
    if (qp && qp->state() != StreamState::kIdle) fn(qp->qpn());
  }
}

Errc RoceEngine::bind_plane(StreamId stream, std::uint8_t plane) {
  QueuePair* qp = find(stream);
  if (!qp) return Errc::kNotFound;
  if (qp->state() != StreamState::kIdle) return Errc::kInvalidState;
  if (plane >= std::max<std::size_t>(1, config_.planes.size())) return Errc::kInvalidArgument;
  qp->set_plane(plane);
  return Errc::kOk;
}

int RoceEngine::stream_plane(StreamId stream) const {
  const QueuePair* qp = find(stream);
  return qp ? qp->plane() : -1;
}

}  // namespace mroce::baseline
