// What a connection sends next, in priority order: set-up and tear-down, NACKs, ACKs,
// probes of failed paths, lost packets again on their own path (at once: neither the
// pacer nor the path's window holds them), then data under pacing and windows: content
// moved off failed paths, responses, and new segments from the streams in round robin.
#include <algorithm>
#include <array>
#include <cstring>

#include "core/connection.h"
#include "wire/codec.h"

namespace mroce {

namespace {

wire::DataOp request_op(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
      return wire::DataOp::kWrite;
    case WrOpcode::kRdmaWriteWithImm:
      return wire::DataOp::kWriteImm;
    case WrOpcode::kSend:
      return wire::DataOp::kSend;
    case WrOpcode::kSendWithImm:
      return wire::DataOp::kSendImm;
    case WrOpcode::kRdmaRead:
      return wire::DataOp::kReadRequest;
    case WrOpcode::kAtomicCmpSwp:
      return wire::DataOp::kCompareSwap;
    case WrOpcode::kAtomicFetchAdd:
      return wire::DataOp::kFetchAdd;
  }
  return wire::DataOp::kNop;
}

}  // namespace

bool Connection::poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  if (finished()) return false;
  if (state_ == ConnState::kTimeWait) return send_close_ack_ && emit_handshake(now, buf, out);
  // Established, a connection sends set-up packets only to answer or to close.
  const bool handshake =
      !established() || accepts_due_ > 0 || confirms_due_ > 0 || send_close_ || send_close_ack_;
  if (handshake && emit_handshake(now, buf, out)) return true;
  if (peer_conn_ != 0) {
    if (emit_nack(buf, out)) return true;
    if (emit_ack(now, buf, out)) return true;
  }
  if (!established()) return false;
  if (emit_probe(now, buf, out)) return true;
  // A resend is charged to the pacer (new data waits for it) but never waits for it.
  if (emit_retransmit(now, buf, out)) return true;
  if (pacer_.waiting(now) ||
      pacer_.start_phase(now, pacing_rate(), srtt_, mss_, has_unsent(), ctx_.random)) {
    return false;
  }
  if (emit_tail_probe(now, buf, out)) return true;
  return emit_new(now, buf, out);
}

bool Connection::emit_handshake(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  wire::CommonHeader c;
  c.dst_conn = peer_conn_;
  c.token = peer_token_;
  std::size_t len = 0;
  bool retry = false;   // a timed retransmission follows unless answered
  bool answer = false;  // answers a datagram: goes back to its source
  if (send_close_ack_) {
    c.type = wire::PacketType::kCloseAck;
    len = wire::encode_bare(c, buf);
    send_close_ack_ = false;
    answer = true;
    if (!send_close_ && state_ != ConnState::kTimeWait) {
      state_ = ConnState::kTimeWait;
      time_wait_until_ = now + kTimeWaitDuration;
    }
  } else if (confirms_due_ > 0) {
    c.type = wire::PacketType::kConfirm;
    len = wire::encode_bare(c, buf);
    --confirms_due_;
    answer = true;
  } else if (send_close_ && (now >= handshake_at_ || handshake_copy_)) {
    c.type = wire::PacketType::kClose;
    len = wire::encode_bare(c, buf);
    retry = true;
  } else {
    const bool due = now >= handshake_at_ || handshake_copy_;
    const bool connect = state_ == ConnState::kConnecting && due;
    const bool accept = accepts_due_ > 0 || (state_ == ConnState::kAccepting && due);
    if (!connect && !accept) return false;
    wire::HandshakeHeader hs;
    hs.src_conn = id_;
    hs.src_token = local_token_;
    hs.isn = tx_isn_;
    hs.listen_port = cfg_.listen_port;
    hs.mss = cfg_.mss;
    hs.max_messages = cfg_.max_inbound_messages;
    hs.max_responses = cfg_.max_responses;
    hs.paths = announced_paths();
    hs.flags = cfg_.carry_payload ? 0 : wire::handshake_flags::kNoPayload;
    hs.address_count = static_cast<std::uint8_t>(cfg_.planes.size());
    for (std::size_t i = 0; i < cfg_.planes.size(); ++i) hs.addresses[i] = cfg_.planes[i].bytes;
    if (connect) {
      c.type = wire::PacketType::kConnect;
      c.dst_conn = 0;
      c.token = 0;
    } else {
      c.type = wire::PacketType::kAccept;
    }
    answer = accepts_due_ > 0;
    retry = !answer;
    if (retry) (connect ? connect_sent_ : accept_sent_) = now;  // answers measure nothing
    if (answer) --accepts_due_;
    len = wire::encode_handshake(c, hs, buf);
  }
  // Every set-up packet leaves from another source port than the last, so a set-up
  // stuck on a broken route finds a new one.
  const Endpoint& to = answer && answer_to_.port ? answer_to_ : handshake_destination();
  out->src = cfg_.planes[0];
  out->dst = to.addr;
  out->src_port = pool_port(handshake_tries_++);
  out->dst_port = to.port;
  out->plane = 0;
  out->ecn = Ecn::kNotEct;
  out->cls = PacketClass::kControl;
  out->length = out->wire_length = static_cast<std::uint32_t>(len);
  // A timed set-up packet goes out twice, each time from another source port: at high
  // loss one of the two usually gets through, where a lone packet lost would cost the
  // whole retry interval.
  if (retry && handshake_copy_) {
    handshake_copy_ = false;
  } else if (retry) {
    handshake_at_ = now + handshake_interval_;
    handshake_interval_ = std::min(2 * handshake_interval_, kSecond);
    handshake_copy_ = true;
  }
  return len > 0;
}

void Connection::fill_reply_meta(const RxPath& r, TxMeta* out) const {
  out->src = r.local;
  out->dst = r.remote;
  out->src_port = cfg_.listen_port;
  out->dst_port = r.remote_port;
  out->plane = r.plane;
  out->ecn = Ecn::kNotEct;
  out->cls = PacketClass::kAck;
}

bool Connection::emit_nack(std::span<std::uint8_t> buf, TxMeta* out) {
  if (nacks_.empty()) return false;
  const PendingNack n = nacks_.front();
  nacks_.pop();
  wire::CommonHeader c;
  c.type = wire::PacketType::kNack;
  c.path = n.path;
  c.generation = n.generation;
  c.dst_conn = peer_conn_;
  c.token = peer_token_;
  fill_reply_meta(rx_[n.path], out);
  const std::size_t len = wire::encode_nack(c, n.nack, buf);
  out->length = out->wire_length = static_cast<std::uint32_t>(len);
  return len > 0;
}

bool Connection::emit_ack(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  while (!ack_queue_.empty()) {
    const std::uint8_t i = ack_queue_.front();
    ack_queue_.pop();
    RxPath& r = rx_[i];
    if (!r.ack_now) continue;
    r.ack_now = false;
    r.ack_due = kNever;
    r.unacked = 0;
    wire::CommonHeader c;
    c.type = wire::PacketType::kAck;
    c.path = i;
    c.generation = r.generation;
    c.dst_conn = peer_conn_;
    c.token = peer_token_;
    wire::AckHeader a;
    r.window.fill(&a);
    a.echo_timestamp = r.echo_timestamp;
    a.ack_delay = static_cast<std::uint32_t>(std::min<Time>(now - r.last_arrival, ~0u));
    a.rx_packets = r.rx_packets;
    a.ce_packets = r.ce_packets;
    a.rate_kbps = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(ctx_.share.share_bps(counted_sender_) / 1000, ~0u));
    fill_reply_meta(r, out);
    const std::size_t len = wire::encode_ack(c, a, buf);
    out->length = out->wire_length = static_cast<std::uint32_t>(len);
    return len > 0;
  }
  return false;
}

bool Connection::emit_probe(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  if (paths_.failed_paths() == 0) return false;
  for (TxPath& p : paths_) {
    if (p.active() || p.probe_at > now) continue;
    if (p.snd_nxt == p.snd_una) {
      paths_.open(p, p.snd_nxt++);
    } else {
      // The last probe went unanswered: try yet another route.
      p.port = fresh_port(p);
      ++p.stats.reentropies;
      ++reentropies_;
      ++ctx_.counters.reentropies;
    }
    paths_.resend_probe(p, p.entry(p.snd_una));
    p.probe_at = now + p.probe_interval;
    p.probe_interval = std::min(2 * p.probe_interval, cfg_.max_probe_interval);
    arm_path_timer(p.probe_at);
    transmit(now, p, p.snd_una, false, buf, out);
    return true;
  }
  return false;
}

// A port's route is known only by shared fate: a port is some path's home, and that
// path's fate label groups it with the homes that died with it. A group with a path
// away from home is believed dead until its scout finds home again.
std::uint32_t Connection::crowding(const TxPath& p, std::uint16_t port,
                                   const std::uint16_t* port_fate) const {
  constexpr std::uint32_t kDead = 1u << 16;
  std::uint16_t label = kUnknownFate;
  for (const TxPath& q : paths_) {
    if (q.home_port == port) label = q.fate;
  }
  std::uint32_t score = 0;
  if (label != kUnknownFate) {
    for (const TxPath& q : paths_) {
      if (q.fate == label && q.port != q.home_port) {
        score = kDead;
        break;
      }
    }
  }
  for (const TxPath& q : paths_) {
    if (&q == &p) continue;
    if (q.port == port || (label != kUnknownFate && port_fate[q.id] == label)) ++score;
  }
  return score;
}

// Re-entropy: a port of the pool whose route, as far as the connection knows, no other
// path uses and that is not believed dead; else the least crowded. Small pools are
// scanned whole, large ones sampled.
std::uint16_t Connection::fresh_port(const TxPath& p) {
  if (cfg_.src_port_count <= 1) return p.port;
  constexpr std::uint32_t kScanWhole = 64, kSamples = 16;
  // The fate label of each path's current port; kUnknown where the port is no path's home.
  std::array<std::uint16_t, 256> port_fate;
  for (const TxPath& q : paths_) {
    port_fate[q.id] = kUnknownFate;
    for (const TxPath& r : paths_) {
      if (r.home_port == q.port) port_fate[q.id] = r.fate;
    }
  }
  const std::uint32_t count = cfg_.src_port_count;
  const bool whole = count <= kScanWhole;
  const std::uint32_t tries = whole ? count : kSamples;
  const std::uint32_t start = ctx_.random.below(count);
  std::uint16_t best = p.port;
  std::uint32_t best_score = ~0u;
  for (std::uint32_t k = 0; k < tries; ++k) {
    const std::uint32_t i = whole ? (start + k) % count : ctx_.random.below(count);
    const auto port = static_cast<std::uint16_t>(cfg_.src_port_base + i);
    if (port == p.port) continue;
    const std::uint32_t score = crowding(p, port, port_fate.data());
    if (score < best_score) {
      best = port;
      best_score = score;
      if (score == 0) break;
    }
  }
  return best;
}

// A packet declared lost left the path's bytes in flight then: sending it again puts
// back no more than was there, so it goes at once, even where a window cut since
// leaves the path over its new window (as TCP's fast retransmit does). A path in
// timeout is the exception: everything on it was declared lost at once and it carries
// only NOPs that probe it, as many as its window allows.
bool Connection::emit_retransmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  if (paths_.lost_paths() == 0) return false;
  const std::size_t n = paths_.size();
  for (std::size_t k = 0; k < n; ++k) {
    TxPath& p = paths_[(retransmit_cursor_ + k) % n];
    if (p.lost_pending() == 0 || !p.active()) continue;
    if (p.timeouts > 0 && p.inflight() >= p.cwnd()) continue;
    for (std::uint32_t psn = p.snd_una; psn != p.snd_nxt; ++psn) {
      TxEntry& e = p.entry(psn);
      if (!e.lost) continue;
      paths_.retransmitting(p, e);
      retransmit_cursor_ = static_cast<std::uint32_t>((p.id + 1) % n);
      transmit(now, p, psn, true, buf, out);
      return true;
    }
  }
  return false;
}

// A path whose last packets (or their ACKs) were lost has nothing later to reveal the
// gap, and with windows of a few packets that is common. A NOP sent after two round
// trips of silence draws an ACK whose SACK shows exactly what is missing, long before
// the retransmission timeout.
bool Connection::emit_tail_probe(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  if (paths_.tail_probes_due() == 0) return false;
  for (TxPath& p : paths_) {
    if (p.tail_probe() == 0) continue;
    // A path gone home (go_home) probes it even with nothing in flight.
    if (!p.active() || p.ring_full() || (p.inflight() == 0 && !p.homing)) {
      paths_.probes_cancelled(p);
      continue;
    }
    paths_.probe_sent(p);
    const std::uint32_t psn = p.snd_nxt++;
    paths_.open(p, psn);
    ++p.stats.tail_probes;
    transmit(now, p, psn, false, buf, out);
    return true;
  }
  return false;
}

bool Connection::emit_new(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  if (paths_.inflight() >= cc_.window()) return false;
  paths_.set_quiet_share(cc_.window() / std::max<std::uint32_t>(paths_.active_paths(), 1));
  TxPath* p = paths_.pick(now, ctx_.blocked_planes);
  if (!p) {
    // Room only behind full queues of the driver: ask to be polled when one drains.
    if (paths_.blocked_only() && !waiting_for_planes) {
      waiting_for_planes = true;
      ctx_.waiting_for_planes.push_back(id_);
    }
    return false;
  }
  SegmentRef seg;
  bool moved = false;
  if (!next_segment(now, &seg, &moved)) return false;
  if (burst_packets_ < ~0u) ++burst_packets_;
  const std::uint32_t psn = p->snd_nxt++;
  TxEntry& e = paths_.open(*p, psn);
  e.seg = seg;
  transmit(now, *p, psn, moved, buf, out);
  return true;
}

bool Connection::segment_valid(const SegmentRef& seg) {
  switch (seg.kind) {
    case SegmentKind::kNop:
      return true;
    case SegmentKind::kRequest: {
      Stream* s = ctx_.stream(seg.stream);
      if (!s || s->conn != id_ || s->state != StreamState::kReady) return false;
      if (static_cast<std::int32_t>(seg.msn - s->sq_head) < 0 ||
          static_cast<std::int32_t>(s->sq_tail - seg.msn) <= 0) {
        return false;
      }
      const Wqe& w = s->wqe(seg.msn);
      return w.msn == seg.msn && !w.done && seg.index < w.segments;
    }
    case SegmentKind::kResponse: {
      if (seg.stream >= responses_.size()) return false;
      const Response& r = responses_[seg.stream];
      return r.used && r.msn == seg.msn && seg.index < r.segments;
    }
  }
  return false;
}

bool Connection::next_segment(Time now, SegmentRef* seg, bool* moved) {
  while (!moved_.empty()) {
    const SegmentRef s = moved_.front();
    moved_.pop();
    if (segment_valid(s)) {
      *seg = s;
      *moved = true;
      return true;
    }
  }
  while (!responding_.empty()) {
    const std::uint32_t slot = responding_.front();
    Response& r = responses_[slot];
    if (!r.used || r.sent >= r.segments) {
      responding_.pop();
      continue;
    }
    *seg = SegmentRef{SegmentKind::kResponse, slot, r.msn, r.sent++};
    if (r.sent == r.segments) responding_.pop();
    return true;
  }
  for (std::size_t n = sendable_.size(); n > 0; --n) {
    const StreamId sid = sendable_.front();
    sendable_.pop();
    Stream* s = ctx_.stream(sid);
    if (!s || s->conn != id_) continue;
    s->scheduled = false;
    if (s->state != StreamState::kReady || s->error_pending || s->sq_cursor == s->sq_tail) {
      continue;
    }
    if (now < s->rnr_until) continue;  // rescheduled when the RNR wait ends
    Wqe& w = s->wqe(s->sq_cursor);
    if (w.sent == 0) {
      const bool request = w.is_read() || w.is_atomic();
      if ((w.wr.flags & send_flags::kFence) && s->reads_in_progress > 0) continue;
      if (open_messages_ >= peer_max_messages_ ||
          (request && open_requests_ >= peer_max_responses_)) {
        // The peer's tables are full: wait for completions, keep the turn.
        s->scheduled = true;
        sendable_.push(sid);
        return false;
      }
      const std::uint32_t payload_segments =
          std::max<std::uint32_t>(1, (w.length + mss_ - 1) / mss_);
      w.segments = request ? 1 : payload_segments;
      if (w.is_read()) w.response.init(ctx_.bitmaps, payload_segments);
      ++open_messages_;
      if (request) {
        ++open_requests_;
        ++s->reads_in_progress;
        expect_response(now);
      }
    }
    *seg = SegmentRef{SegmentKind::kRequest, sid, w.msn, w.sent++};
    if (w.sent == w.segments) ++s->sq_cursor;
    if (s->sq_cursor != s->sq_tail) schedule_stream(*s);
    return true;
  }
  return false;
}

bool Connection::has_unsent() const {
  return !moved_.empty() || !responding_.empty() || !sendable_.empty();
}

std::uint64_t Connection::pacing_rate() const {
  return pacer_.rate(cc_.rate_hint_bps());
}

void Connection::transmit(Time now, TxPath& p, std::uint32_t psn, bool retransmit,
                          std::span<std::uint8_t> buf, TxMeta* out) {
  TxEntry& e = p.entry(psn);
  if (!segment_valid(e.seg)) e.seg = SegmentRef{};
  std::uint32_t payload = 0;
  const std::uint8_t* reference = nullptr;
  const std::size_t header = build_data(now, p, psn, e.seg, retransmit, buf, &payload, &reference);
  const std::uint32_t carried = cfg_.carry_payload && !reference ? payload : 0;
  out->src = cfg_.planes[p.plane];
  out->dst = peer_planes_[p.plane];
  out->src_port = p.port;
  out->dst_port = peer_.port;
  out->plane = p.plane;
  out->ecn = Ecn::kEct0;
  out->length = static_cast<std::uint32_t>(header + carried);
  out->wire_length = static_cast<std::uint32_t>(header + payload);
  out->cls = PacketClass::kData;
  out->payload = reference;
  out->payload_length = reference ? payload : 0;

  if (p.inflight() == 0 && p.lost_pending() == 0) {
    p.last_progress = now;  // arm the timer
    arm_path_timer(now + path_rto(p));
  }
  p.last_send = now;
  arm_path_timer(tail_probe_due(p));
  if (has_unsent()) {
    tail_armed_ = false;
  } else if (!tail_armed_) {
    tail_armed_ = true;
    tail_since_ = now;
    arm_tail_probes();
    burst_packets_ = 0;  // the next burst starts with the next new data
  }
  e.sent_at = now;
  e.order = p.next_order++;
  e.bytes = static_cast<std::uint16_t>(std::min<std::uint32_t>(out->wire_length, 0xffff));
  e.acked = false;
  e.retransmitted = e.sent;  // a resend of this PSN breaks the PSN-order = send-order rule
  e.sent = true;
  paths_.sent(p, e);

  ++p.stats.tx_packets;
  p.stats.tx_bytes += out->wire_length;
  ++ctx_.counters.tx_packets;
  ctx_.counters.tx_bytes += out->wire_length;
  ++ctx_.counters.tx_data_packets;
  tx_data_bytes_ += payload;
  if (retransmit && e.seg.kind != SegmentKind::kNop) {
    ++p.stats.retransmits;
    ++retransmits_;
    ++ctx_.counters.tx_retransmits;
  }
  pacer_.on_sent(now, out->wire_length, pacing_rate(), srtt_, mss_, ctx_.random);
}

std::size_t Connection::build_data(Time now, TxPath& p, std::uint32_t psn, const SegmentRef& seg,
                                   bool retransmit, std::span<std::uint8_t> buf,
                                   std::uint32_t* payload, const std::uint8_t** reference) {
  wire::CommonHeader c;
  c.type = wire::PacketType::kData;
  c.path = p.id;
  c.generation = p.generation;
  c.dst_conn = peer_conn_;
  c.token = peer_token_;
  if (has_unsent()) c.flags |= wire::flags::kBacklog;
  if (retransmit || !p.active() || p.timeouts > 0 || seg.kind == SegmentKind::kNop) {
    c.flags |= wire::flags::kAckRequest;  // resends, probes and fills want an answer at once
  }
  wire::DataHeader d;
  d.psn = psn;
  d.timestamp = static_cast<std::uint32_t>(now);
  if (retransmit) d.flags |= wire::data_flags::kRetransmit;
  *payload = 0;

  Stream* stream = nullptr;
  const Wqe* wqe = nullptr;
  const Response* response = nullptr;
  if (seg.kind == SegmentKind::kRequest) {
    stream = ctx_.stream(seg.stream);
    wqe = &stream->wqe(seg.msn);
    const SendWr& wr = wqe->wr;
    d.op = request_op(wr.opcode);
    d.stream = stream->remote;
    d.msn = wqe->msn;
    d.message_length = wqe->length;
    d.remote_addr = wr.remote_addr;
    d.rkey = wr.rkey;
    d.ssn = wqe->ssn;
    d.imm = wr.imm;
    if (wr.flags & send_flags::kSolicited) d.flags |= wire::data_flags::kSolicited;
    if (wqe->is_read()) {
      // The response comes to us: tell the responder its share of our inbound capacity
      // now, so a read fanned out to many peers does not start as a burst from each.
      d.rate_kbps = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(ctx_.share.share_bps(counted_sender_) / 1000, ~0u));
    }
    if (wqe->is_read() || wqe->is_atomic()) {
      d.operand = wr.compare_add;
      d.swap = wr.swap;
      if (wqe->is_atomic()) d.message_length = 8;
    } else {
      d.offset = seg.index * mss_;
      *payload = std::min<std::uint32_t>(mss_, wqe->length - d.offset);
    }
    if (seg.index + 1 == wqe->segments) c.flags |= wire::flags::kAckRequest;
  } else if (seg.kind == SegmentKind::kResponse) {
    response = &responses_[seg.stream];
    d.op = response->op;
    d.stream = response->dst_stream;
    d.msn = response->msn;
    if (response->op == wire::DataOp::kAtomicResponse) {
      d.message_length = 8;
      d.operand = response->value;
    } else {
      d.message_length = response->length;
      d.offset = seg.index * mss_;
      *payload = std::min<std::uint32_t>(mss_, response->length - d.offset);
    }
    if (seg.index + 1 == response->segments) c.flags |= wire::flags::kAckRequest;
  }
  d.payload_length = static_cast<std::uint16_t>(*payload);
  // The path's window is full after this packet: it can send nothing more until an ACK
  // returns. Where the receiver's ACK delay is more than half the round trip, holding
  // that ACK would leave the path idle for much of each round: ask for it at once. On
  // longer round trips the hold costs little, and the extra ACKs cost more.
  if (p.inflight() + *payload >= p.cwnd() && 2 * cfg_.ack_delay > p.rtt.srtt()) {
    c.flags |= wire::flags::kAckRequest;
  }
  p.ack_requested = (c.flags & wire::flags::kAckRequest) != 0;

  const std::size_t header = wire::encode_data(c, d, buf);
  if (cfg_.carry_payload && *payload > 0) {
    // Registered memory lying in one piece is referenced, not copied, where the driver
    // asks (see TxMeta::payload); inline data and payload spanning SGEs are copied.
    std::uint8_t* dst = buf.data() + header;
    const bool by_reference = cfg_.payload_by_reference;
    if (wqe) {
      if (wqe->wr.flags & send_flags::kInline) {
        std::memcpy(dst, stream->inline_slot(wqe->msn) + d.offset, *payload);
      } else if (const std::uint8_t* src =
                     by_reference
                         ? ctx_.memory.contiguous(wqe->wr.sg, wqe->wr.num_sge, d.offset, *payload)
                         : nullptr) {
        *reference = src;
      } else {
        ctx_.memory.gather(wqe->wr.sg, wqe->wr.num_sge, d.offset, dst, *payload);
      }
    } else if (response) {
      const Region* r = nullptr;
      if (ctx_.memory.check(response->rkey, response->addr + d.offset, *payload,
                            access::kRemoteRead, &r) == AccessCheck::kOk) {
        if (const std::uint8_t* src = MemoryTable::host_of(*r, response->addr + d.offset)) {
          if (by_reference) {
            *reference = src;
          } else {
            std::memcpy(dst, src, *payload);
          }
        }
      }
    }
  }
  return header;
}

}  // namespace mroce
