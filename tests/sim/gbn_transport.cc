#include "gbn_transport.h"

#include <algorithm>
#include <cstring>

namespace mroce::sim::testing {

namespace {

constexpr std::uint8_t kTypeData = 1;
constexpr std::uint8_t kTypeAck = 2;
constexpr std::uint8_t kFlagLast = 1;
constexpr std::uint8_t kFlagCe = 2;

void put32(std::uint8_t* p, std::uint32_t v) {
  std::memcpy(p, &v, 4);
}
std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
// Sequence comparison that survives wrap-around.
bool before(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) < 0;
}

// The peer's address on another plane: the simulator numbers NICs 10.plane.x.y.
Address on_plane(const Address& a, std::uint8_t plane) {
  Address out = a;
  if (a.is_ipv4() && a.bytes[12] == 10) out.bytes[13] = plane;
  return out;
}

}  // namespace

GbnTransport::GbnTransport(GbnConfig config) : config_(std::move(config)) {}

Errc GbnTransport::reg_mr(std::uint64_t, std::uint64_t length, std::uint32_t, void*, MrKeys* out) {
  if (length == 0) return Errc::kInvalidArgument;
  out->lkey = next_key_;
  out->rkey = next_key_;
  ++next_key_;
  return Errc::kOk;
}

GbnTransport::Stream* GbnTransport::find(StreamId id) {
  if (id == kNoStream || id > streams_.size() || !streams_[id - 1].used) return nullptr;
  return &streams_[id - 1];
}

const GbnTransport::Stream* GbnTransport::find(StreamId id) const {
  return const_cast<GbnTransport*>(this)->find(id);
}

Errc GbnTransport::create_stream(const StreamConfig& config, StreamId* out) {
  Stream s;
  s.used = true;
  s.sq_depth = config.sq_depth;
  streams_.push_back(std::move(s));
  *out = static_cast<StreamId>(streams_.size());
  return Errc::kOk;
}

Errc GbnTransport::connect_stream(Time now, StreamId id, const Endpoint& peer, StreamId remote) {
  Stream* s = find(id);
  if (!s) return Errc::kNotFound;
  if (s->connected) return Errc::kInvalidState;
  if (config_.planes.empty()) return Errc::kInvalidState;
  s->connected = true;
  s->peer = peer;
  s->remote = remote;
  s->plane = config_.spread_planes ? static_cast<std::uint8_t>(id % config_.planes.size()) : 0;
  s->local = config_.planes[s->plane];
  s->remote_addr = on_plane(peer.addr, s->plane);
  s->src_port = static_cast<std::uint16_t>(config_.src_port_base +
                                           (id * 2654435761u) % config_.src_port_count);
  s->path.plane = s->plane;
  s->path.src_port = s->src_port;
  s->path.cwnd_bytes = config_.window_packets * config_.mss;
  s->last_progress = now;
  if (can_send(*s)) make_ready(id);
  return Errc::kOk;
}

Errc GbnTransport::destroy_stream(Time, StreamId id) {
  Stream* s = find(id);
  if (!s) return Errc::kNotFound;
  s->used = false;
  s->connected = false;
  return Errc::kOk;
}

void GbnTransport::enqueue_message(Stream& s, StreamId id, OutMsg m) {
  m.first_psn = s.next_psn;
  m.npkts =
      m.op == kReadReq ? 1 : std::max<std::uint32_t>(1, (m.len + config_.mss - 1) / config_.mss);
  s.next_psn += m.npkts;
  s.msgs.push_back(m);
  if (s.connected && can_send(s)) make_ready(id);
}

Errc GbnTransport::post_send(Time, StreamId id, const SendWr& wr) {
  Stream* s = find(id);
  if (!s) return Errc::kNotFound;
  if (s->msgs.size() >= s->sq_depth) return Errc::kNoResources;
  std::uint64_t len = 0;
  for (int i = 0; i < wr.num_sge; ++i) len += wr.sg[i].length;
  OutMsg m{wr.wr_id,
           kWrite,
           (wr.flags & send_flags::kSignaled) != 0,
           static_cast<std::uint32_t>(len),
           wr.imm,
           0,
           0};
  switch (wr.opcode) {
    case WrOpcode::kRdmaWrite:
      m.op = kWrite;
      break;
    case WrOpcode::kRdmaWriteWithImm:
      m.op = kWriteImm;
      break;
    case WrOpcode::kSend:
    case WrOpcode::kSendWithImm:
      m.op = kSend;
      break;
    case WrOpcode::kRdmaRead:
      m.op = kReadReq;
      break;
    default:
      return Errc::kNotSupported;
  }
  enqueue_message(*s, id, m);
  return Errc::kOk;
}

Errc GbnTransport::post_recv(Time, StreamId id, const RecvWr& wr) {
  Stream* s = find(id);
  if (!s) return Errc::kNotFound;
  s->recvs.push_back(wr);
  return Errc::kOk;
}

bool GbnTransport::can_send(const Stream& s) const {
  return s.connected && before(s.nxt, s.next_psn) && before(s.nxt, s.una + config_.window_packets);
}

void GbnTransport::make_ready(StreamId id) {
  Stream& s = streams_[id - 1];
  if (s.ready) return;
  s.ready = true;
  ready_.push_back(id);
}

void GbnTransport::arm(Time now) {
  if (timer_ == kNever) timer_ = now + config_.rto / 2;
}

bool GbnTransport::poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  std::uint8_t* h = buf.data();
  std::memset(h, 0, kHeaderBytes);
  while (!acks_.empty()) {
    const StreamId id = acks_.front();
    acks_.pop_front();
    Stream* s = find(id);
    if (!s || !s->ack_due) continue;
    s->ack_due = false;
    h[0] = kTypeAck;
    h[2] = s->ce_echo ? kFlagCe : 0;
    s->ce_echo = false;
    put32(h + 4, s->remote);
    put32(h + 8, s->expected);
    *out = TxMeta{s->local,     s->remote_addr, s->src_port,  s->peer.port,     s->plane,
                  Ecn::kNotEct, kHeaderBytes,   kHeaderBytes, PacketClass::kAck};
    ++counters_.tx_packets;
    counters_.tx_bytes += kHeaderBytes;
    return true;
  }
  while (!ready_.empty()) {
    const StreamId id = ready_.front();
    ready_.pop_front();
    Stream* s = find(id);
    if (!s) continue;
    s->ready = false;
    if (!can_send(*s)) continue;
    const std::uint32_t psn = s->nxt;
    const OutMsg* m = nullptr;
    for (const OutMsg& c : s->msgs) {
      if (!before(psn, c.first_psn) && before(psn, c.first_psn + c.npkts)) {
        m = &c;
        break;
      }
    }
    if (!m) continue;  // cannot happen: nxt lies in [una, next_psn)
    const std::uint32_t index = psn - m->first_psn;
    const std::uint32_t offset = index * config_.mss;
    const std::uint32_t payload =
        m->op == kReadReq ? 0 : std::min(config_.mss, m->len - std::min(m->len, offset));
    h[0] = kTypeData;
    h[1] = m->op;
    h[2] = index + 1 == m->npkts ? kFlagLast : 0;
    put32(h + 4, s->remote);
    put32(h + 8, psn);
    put32(h + 12, m->len);
    put32(h + 16, offset);
    put32(h + 20, m->imm);
    const bool retransmit = before(psn, s->high);
    ++s->nxt;
    if (!before(s->nxt, s->high)) s->high = s->nxt;
    *out = TxMeta{s->local,          s->remote_addr,
                  s->src_port,       s->peer.port,
                  s->plane,          config_.ecn ? Ecn::kEct0 : Ecn::kNotEct,
                  kHeaderBytes,      kHeaderBytes + payload,
                  PacketClass::kData};
    ++counters_.tx_packets;
    ++counters_.tx_data_packets;
    counters_.tx_bytes += out->wire_length;
    ++s->path.tx_packets;
    s->path.tx_bytes += out->wire_length;
    if (retransmit) {
      ++counters_.tx_retransmits;
      ++s->path.retransmits;
    }
    if (can_send(*s)) make_ready(id);
    arm(now);
    return true;
  }
  return false;
}

void GbnTransport::on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) {
  ++counters_.rx_packets;
  counters_.rx_bytes += bytes.size();
  if (bytes.size() < kHeaderBytes) {
    ++counters_.drops[static_cast<int>(DropReason::kMalformed)];
    return;
  }
  const std::uint8_t* h = bytes.data();
  const StreamId id = get32(h + 4);
  Stream* s = find(id);
  if (!s || !s->connected) {
    ++counters_.drops[static_cast<int>(DropReason::kBadStream)];
    return;
  }
  if (meta.ecn == Ecn::kCe) ++counters_.rx_ce_packets;
  if (h[0] == kTypeAck) {
    if (h[2] & kFlagCe) ++s->path.ce_packets;
    on_ack(now, id, *s, get32(h + 8));
  } else if (h[0] == kTypeData) {
    on_data(now, id, *s, h, meta.ecn);
  } else {
    ++counters_.drops[static_cast<int>(DropReason::kMalformed)];
  }
}

void GbnTransport::on_data(Time, StreamId id, Stream& s, const std::uint8_t* h, Ecn ecn) {
  const std::uint32_t psn = get32(h + 8);
  const auto op = static_cast<Op>(h[1]);
  const bool last = h[2] & kFlagLast;
  const std::uint32_t len = get32(h + 12);
  const std::uint32_t offset = get32(h + 16);
  if (!s.ack_due) {
    s.ack_due = true;
    acks_.push_back(id);
  }
  if (psn != s.expected) {
    const DropReason why =
        before(psn, s.expected) ? DropReason::kDuplicate : DropReason::kOutOfWindow;
    ++counters_.drops[static_cast<int>(why)];
    return;
  }
  if ((op == kSend || op == kWriteImm) && offset == 0 && s.recvs.empty()) {
    ++counters_.drops[static_cast<int>(DropReason::kReceiverNotReady)];
    return;  // the sender retries after its timeout
  }
  ++s.expected;
  if (ecn == Ecn::kCe) s.ce_echo = true;
  const std::uint32_t payload =
      op == kReadReq ? 0 : std::min(config_.mss, len - std::min(len, offset));
  s.rx_data_bytes += payload;
  if (!last) return;
  switch (op) {
    case kSend:
    case kWriteImm: {
      const RecvWr wr = s.recvs.front();
      s.recvs.pop_front();
      complete(wr.wr_id, id, op == kSend ? WcOpcode::kRecv : WcOpcode::kRecvRdmaWithImm, len, true,
               op == kWriteImm, get32(h + 20));
      break;
    }
    case kReadReq:
      enqueue_message(s, id, OutMsg{0, kReadResp, false, len, 0, 0, 0});
      break;
    case kReadResp:
      if (!s.reads.empty()) {
        const std::uint64_t wr_id = s.reads.front();
        s.reads.pop_front();
        complete(wr_id, id, WcOpcode::kRdmaRead, len, false, false, 0);
      }
      break;
    case kWrite:
      break;
  }
}

void GbnTransport::on_ack(Time now, StreamId id, Stream& s, std::uint32_t cum) {
  if (before(s.next_psn, cum)) {
    ++counters_.drops[static_cast<int>(DropReason::kBadAck)];
    return;
  }
  if (!before(s.una, cum)) {
    // A duplicate: the receiver is missing una. Rewind once per loss episode.
    if (cum == s.una && before(s.una, s.nxt) && ++s.dup_acks == 3 && !before(s.una, s.recover)) {
      s.recover = s.high;
      s.nxt = s.una;
      ++s.path.lost_packets;
      if (can_send(s)) make_ready(id);
    }
    return;
  }
  s.path.acked_packets += cum - s.una;
  s.una = cum;
  s.dup_acks = 0;
  s.last_progress = now;
  if (before(s.nxt, s.una)) s.nxt = s.una;
  while (!s.msgs.empty()) {
    const OutMsg m = s.msgs.front();
    if (before(s.una, m.first_psn + m.npkts)) break;
    s.msgs.pop_front();
    switch (m.op) {
      case kReadReq:
        s.reads.push_back(m.wr_id);
        break;
      case kReadResp:
        break;
      default:
        if (m.signaled) {
          complete(m.wr_id, id, m.op == kSend ? WcOpcode::kSend : WcOpcode::kRdmaWrite, m.len,
                   false, false, 0);
        }
    }
  }
  if (can_send(s)) make_ready(id);
}

void GbnTransport::on_timer(Time now) {
  timer_ = kNever;
  bool busy = false;
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    Stream& s = streams_[i];
    if (!s.connected || !before(s.una, s.high)) continue;
    busy = true;
    if (now - s.last_progress >= config_.rto) {
      ++timeouts_;
      ++s.path.timeouts;
      s.last_progress = now;
      s.nxt = s.una;
      s.recover = s.high;
      s.dup_acks = 0;
      if (can_send(s)) make_ready(static_cast<StreamId>(i + 1));
    }
  }
  if (busy) timer_ = now + config_.rto / 2;
}

void GbnTransport::complete(std::uint64_t wr_id, StreamId id, WcOpcode op, std::uint32_t len,
                            bool recv, bool imm, std::uint32_t imm_value) {
  if (!sink_) return;
  Completion c;
  c.wr_id = wr_id;
  c.stream = id;
  c.opcode = op;
  c.is_recv = recv;
  c.byte_len = len;
  c.has_imm = imm;
  c.imm = imm_value;
  sink_->on_completion(c);
}

StreamState GbnTransport::stream_state(StreamId id) const {
  const Stream* s = find(id);
  if (!s) return StreamState::kDestroyed;
  return s->connected ? StreamState::kReady : StreamState::kIdle;
}

ConnId GbnTransport::stream_connection(StreamId id) const {
  const Stream* s = find(id);
  return s && s->connected ? id : 0;
}

bool GbnTransport::connection_stats(ConnId conn, ConnStats* out) const {
  const Stream* s = find(conn);
  if (!s || !s->connected) return false;
  *out = ConnStats{};
  out->state = ConnState::kEstablished;
  out->peer = s->peer;
  out->paths = 1;
  out->planes = 1;
  out->streams = 1;
  out->tx_data_bytes = s->path.tx_bytes;
  out->rx_data_bytes = s->rx_data_bytes;
  out->retransmits = s->path.retransmits;
  out->cwnd_bytes = s->path.cwnd_bytes;
  return true;
}

bool GbnTransport::path_stats(ConnId conn, std::uint16_t path, PathStats* out) const {
  const Stream* s = find(conn);
  if (!s || !s->connected || path != 0) return false;
  *out = s->path;
  out->inflight_bytes = (s->nxt - s->una) * config_.mss;
  return true;
}

void GbnTransport::for_each_connection(const std::function<void(ConnId)>& fn) const {
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i].used && streams_[i].connected) fn(static_cast<ConnId>(i + 1));
  }
}

}  // namespace mroce::sim::testing
