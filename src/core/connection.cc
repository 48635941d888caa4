#include "core/connection.h"

#include <algorithm>

namespace mroce {

Connection::Connection(EngineContext& ctx, ConnId id, const Endpoint& peer, Time now)
    : ctx_(ctx),
      cfg_(ctx.config),
      id_(id),
      mss_(ctx.config.mss),
      paths_(ctx.entries),
      cc_(ctx.config.initial_window_bytes),
      pacer_(ctx.config),
      peer_(peer),
      local_token_(ctx.random.next() | 1),
      tx_isn_(ctx.config.initial_psn >= 0 ? static_cast<std::uint32_t>(ctx.config.initial_psn)
                                          : static_cast<std::uint32_t>(ctx.random.next())),
      started_(now),
      path_window_packets_(ctx.config.path_window_packets),
      port_salt_(static_cast<std::uint32_t>(ctx.random.next())),
      inbound_(ctx.config.max_inbound_messages) {}

std::uint16_t Connection::pool_port(std::uint32_t i) const {
  return static_cast<std::uint16_t>(cfg_.src_port_base + (port_salt_ + i) % cfg_.src_port_count);
}

void Connection::start_connect(Time now) {
  initiator_ = true;
  state_ = ConnState::kConnecting;
  started_ = now;
  handshake_at_ = now;
  handshake_interval_ = cfg_.connect_retry;
}

void Connection::adopt_peer(const wire::HandshakeHeader& hs) {
  peer_conn_ = hs.src_conn;
  peer_token_ = hs.src_token;
  rx_isn_ = hs.isn;
  for (std::size_t i = 0; i < hs.address_count; ++i) peer_planes_[i].bytes = hs.addresses[i];
  planes_ = static_cast<std::uint8_t>(
      std::max<std::size_t>(1, std::min<std::size_t>(cfg_.planes.size(), hs.address_count)));
  mss_ = std::min(cfg_.mss, hs.mss);
  peer_max_messages_ = hs.max_messages;
  peer_max_responses_ = hs.max_responses;
  peer_paths_ = hs.paths;
}

namespace {

// One more ACCEPT owed. Copies of a CONNECT read in one batch are answered one each,
// like copies read apart; the cap only bounds a burst (fewer answers, never more).
void owe(std::uint8_t& due) {
  constexpr std::uint8_t kMaxAnswersDue = 4;
  if (due < kMaxAnswersDue) ++due;
}

}  // namespace

void Connection::on_handshake(Time now, const wire::Packet& pkt) {
  const auto& hs = pkt.handshake;
  if (pkt.common.type == wire::PacketType::kConnect) {
    switch (state_) {
      case ConnState::kConnecting:  // both sides opened at once, or a fresh responder
        adopt_peer(hs);
        state_ = ConnState::kAccepting;
        if (initiator_) {
          handshake_at_ = now;
          handshake_interval_ = cfg_.connect_retry;
        } else {
          // One answer per CONNECT and no timed retries: the peer is unproven, and its
          // own CONNECT retries stand for ours.
          owe(accepts_due_);
        }
        break;
      case ConnState::kAccepting:    // our ACCEPTs were lost, or this CONNECT is a copy
      case ConnState::kEstablished:  // our ACCEPT or CONFIRM was lost
        owe(accepts_due_);
        break;
      default:
        break;
    }
    return;
  }
  // ACCEPT.
  if (state_ == ConnState::kConnecting || state_ == ConnState::kAccepting) {
    adopt_peer(hs);
    establish(now, connect_sent_);
    // A pair, like the timed packets: the peer, if still ACCEPTING, would otherwise
    // wait a retry interval for a lost one when it has nothing else to hear from us.
    confirms_due_ = 2;
  } else if (state_ == ConnState::kEstablished) {
    // Our CONFIRMs were lost; an ACCEPT read while CONFIRMs are still due (the second
    // of a pair) is answered by those. One more each cost 1,000 set-ups in an incast
    // (E5) a third more queue drops and 1 RTT more to reach the port's rate.
    confirms_due_ = std::max<std::uint8_t>(confirms_due_, 1);
  }
}

void Connection::on_confirm(Time now) {
  if (state_ == ConnState::kAccepting) establish(now, accept_sent_);
}

void Connection::init_path(TxPath& p) {
  p.plane = static_cast<std::uint8_t>(p.id % planes_);
  p.port = p.home_port = pool_port(p.id);
  p.home_after = kFirstHomecoming;
  p.fate = p.id;
  p.stats.plane = p.plane;
  p.stats.src_port = p.port;
}

void Connection::add_paths(std::size_t want) {
  want = std::min<std::size_t>(want, announced_paths());
  while (paths_.size() < want) {
    const std::uint32_t cwnd = static_cast<std::uint32_t>(
        paths_.active_cwnd() / std::max<std::uint32_t>(paths_.active_paths(), 1));
    init_path(paths_.add(path_window_packets_, srtt_, tx_isn_, std::max(cwnd, 2u * mss_)));
  }
}

void Connection::establish(Time now, Time asked) {
  state_ = ConnState::kEstablished;
  reply_to_ = {};
  handshake_at_ = kNever;
  handshake_copy_ = false;
  // The set-up round trip is at least the time since the latest copy of what was answered.
  const Time setup_rtt = asked == kNever ? 0 : now - asked;
  const std::uint32_t per_path =
      std::max<std::uint32_t>(cfg_.initial_window_bytes / cfg_.paths, 2u * mss_);
  paths_.reset(cfg_.paths, path_window_packets_, cfg_.initial_rtt, tx_isn_, per_path,
               announced_paths());
  paths_.set_train(cfg_.path_train_bytes);
  // The receiving tables too wait for a proven peer: a flood of CONNECTs costs no more.
  if (rx_.size() != peer_paths_) rx_.assign(peer_paths_, RxPath{});
  ack_queue_.reserve(peer_paths_);  // a path is queued once at most: no growth per packet
  inbound_.open();                  // response slots are made as READs and atomics arrive
  for (TxPath& p : paths_) init_path(p);
  srtt_ = cfg_.initial_rtt;
  cc_.start(now);
  open_to_bdp(setup_rtt);
  emit_event(now, EventKind::kConnEstablished);
  for (StreamId sid : streams_) {
    Stream* s = ctx_.stream(sid);
    if (s && s->state == StreamState::kConnecting) s->state = StreamState::kReady;
    if (s) schedule_stream(*s);
  }
}

void Connection::on_close(Time now, bool ack) {
  if (ack) {
    if (state_ == ConnState::kClosing) state_ = ConnState::kClosed;
    return;
  }
  if (state_ == ConnState::kTimeWait) {
    send_close_ack_ = true;  // our CLOSE_ACK was lost
    return;
  }
  // The peer has no streams left here: ours that still point at it cannot progress.
  for (StreamId sid : std::vector<StreamId>(streams_)) {
    Stream* s = ctx_.stream(sid);
    if (s && s->state != StreamState::kError) flush_stream(*s, WcStatus::kRetryExcErr);
  }
  send_close_ack_ = true;
  if (state_ != ConnState::kClosing) emit_event(now, EventKind::kConnClosed);
  state_ = ConnState::kClosing;  // closed once the CLOSE_ACK is out
  handshake_at_ = kNever;
  handshake_copy_ = false;
}

void Connection::emit_event(Time now, EventKind kind, std::uint16_t path, std::uint8_t plane) {
  Event e;
  e.kind = kind;
  e.time = now;
  e.conn = id_;
  e.peer = peer_;
  e.path = path;
  e.plane = plane;
  ctx_.event(e);
}

void Connection::bind(Time now, Stream& s) {
  s.conn = id_;
  s.state = established() ? StreamState::kReady : StreamState::kConnecting;
  streams_.push_back(s.id);
  if (state_ == ConnState::kAccepting && handshake_at_ == kNever) {
    // The application names this peer: our ACCEPT may now be repeated to it on the
    // set-up schedule, so that a lost CONFIRM costs a retry, not the set-up.
    reply_to_ = {};
    handshake_at_ = now;
    handshake_interval_ = cfg_.connect_retry;
  }
  schedule_stream(s);
}

void Connection::unbind(Time now, Stream& s) {
  streams_.erase(std::remove(streams_.begin(), streams_.end(), s.id), streams_.end());
  // Work still open on a destroyed stream is abandoned; its segments become NOPs.
  for (std::uint32_t msn = s.sq_head; msn != s.sq_tail; ++msn) retire(s, s.wqe(msn));
  s.sq_head = s.sq_cursor = s.sq_tail;
  inbound_.erase_stream(s.id, ctx_.bitmaps);
  s.conn = 0;
  if (streams_.empty() && state_ == ConnState::kEstablished) {
    state_ = ConnState::kClosing;
    send_close_ = true;
    started_ = now;
    handshake_at_ = now;
    handshake_interval_ = cfg_.connect_retry;
  }
}

void Connection::retire(Stream& s, Wqe& w) {
  if (w.sent > 0) {
    --open_messages_;
    if (w.is_read() || w.is_atomic()) {
      --open_requests_;
      --s.reads_in_progress;
    }
  }
  w.response.release(ctx_.bitmaps);
}

void Connection::schedule_stream(Stream& s) {
  if (s.scheduled || s.state != StreamState::kReady) return;
  s.scheduled = true;
  sendable_.push(s.id);
}

void Connection::flush_stream(Stream& s, WcStatus first_status) {
  bool first = true;
  for (std::uint32_t msn = s.sq_head; msn != s.sq_tail; ++msn) {
    Wqe& w = s.wqe(msn);
    retire(s, w);
    Completion c;
    c.wr_id = w.wr.wr_id;
    c.stream = s.id;
    c.status = first ? (w.done && w.status != WcStatus::kSuccess ? w.status : first_status)
                     : WcStatus::kWrFlushErr;
    c.opcode = completion_opcode(w.wr.opcode);
    first = false;
    ctx_.complete(c);
  }
  s.sq_head = s.sq_cursor = s.sq_tail;
  for (std::uint32_t ssn = s.rq_head; ssn != s.rq_tail; ++ssn) {
    Completion c;
    c.wr_id = s.recv(ssn).wr.wr_id;
    c.stream = s.id;
    c.status = WcStatus::kWrFlushErr;
    c.opcode = WcOpcode::kRecv;
    c.is_recv = true;
    ctx_.complete(c);
  }
  s.rq_head = s.rq_tail;
  s.state = StreamState::kError;
  s.error_pending = false;
}

void Connection::fail(Time now, WcStatus status) {
  if (finished()) return;
  state_ = ConnState::kFailed;
  for (StreamId sid : std::vector<StreamId>(streams_)) {
    Stream* s = ctx_.stream(sid);
    if (s && s->state != StreamState::kError) flush_stream(*s, status);
  }
  if (counted_sender_) {
    ctx_.share.remove_sender();
    counted_sender_ = false;
  }
  emit_event(now, EventKind::kConnFailed);
}

void Connection::expect_response(Time now) {
  last_backlog_ = now;
  if (!counted_sender_) {
    counted_sender_ = true;
    ctx_.share.add_sender();
  }
}

void Connection::note_peer_backlog(Time now, std::uint32_t sent_at, bool backlog) {
  // Packets cross paths out of order: the latest sent, by the peer's clock, tells its
  // state; of two sent in the same nanosecond, one without BACKLOG was the later. That
  // clock wraps every 4.3 s, so it is compared only with a state noted less than a
  // second ago (no packet lags another by that much).
  const std::int32_t age = static_cast<std::int32_t>(sent_at - peer_sent_at_);
  if (!peer_seen_ || now - peer_noted_at_ > kSecond || age > 0 || (age == 0 && !backlog)) {
    peer_seen_ = true;
    peer_sent_at_ = sent_at;
    peer_noted_at_ = now;
    peer_backlog_ = backlog;
  }
  if (peer_backlog_) {
    last_backlog_ = now;
    if (!counted_sender_) {
      counted_sender_ = true;
      ctx_.share.add_sender();
    }
  }
  update_activity(now);
}

void Connection::update_activity(Time now) {
  const Time timeout = cfg_.active_sender_timeout ? cfg_.active_sender_timeout
                                                  : 4 * std::max(srtt_, cfg_.initial_rtt);
  if (counted_sender_ && open_requests_ == 0 &&
      (!peer_backlog_ || now >= last_backlog_ + timeout)) {
    ctx_.share.remove_sender();
    counted_sender_ = false;
  }
}

void Connection::on_timer(Time now) {
  if (finished()) return;
  if (state_ == ConnState::kTimeWait) {
    if (now >= time_wait_until_) state_ = ConnState::kClosed;
    return;
  }
  switch (state_) {
    case ConnState::kConnecting:
    case ConnState::kAccepting:
    case ConnState::kClosing:
      if (now >= started_ + cfg_.connect_timeout) {
        if (state_ == ConnState::kClosing) {
          state_ = ConnState::kClosed;
        } else {
          fail(now, WcStatus::kRetryExcErr);
        }
        return;
      }
      break;
    default:
      break;
  }
  if (now >= ack_timer_at_) {
    ack_timer_at_ = kNever;
    for (std::size_t i = 0; i < rx_.size(); ++i) {
      RxPath& r = rx_[i];
      if (r.ack_now) continue;
      if (r.ack_due <= now) {
        r.ack_now = true;
        ack_queue_.push(static_cast<std::uint8_t>(i));
      } else {
        ack_timer_at_ = std::min(ack_timer_at_, r.ack_due);
      }
    }
  }
  while (!rnr_waiting_.empty() && rnr_waiting_.front().not_before <= now) {
    const SegmentRef seg = rnr_waiting_.front().seg;
    rnr_waiting_.pop();
    moved_.push(seg);
    if (seg.kind == SegmentKind::kRequest) {
      if (Stream* s = ctx_.stream(seg.stream)) schedule_stream(*s);
    }
  }
  update_activity(now);
  if (established()) {
    if (now >= path_timer_at_) check_timeouts(now);
    if (all_failed_since_ != kNever && now >= all_failed_since_ + cfg_.connect_timeout) {
      fail(now, WcStatus::kRetryExcErr);
    }
  }
}

Time Connection::next_deadline() const {
  if (finished()) return kNever;
  if (state_ == ConnState::kTimeWait) return time_wait_until_;
  Time t = kNever;
  if (state_ != ConnState::kEstablished) {
    t = std::min(t, started_ + cfg_.connect_timeout);
    if (state_ != ConnState::kClosing || send_close_) t = std::min(t, handshake_at_);
  }
  t = std::min(t, ack_timer_at_);
  if (!rnr_waiting_.empty()) t = std::min(t, rnr_waiting_[0].not_before);
  if (counted_sender_ && open_requests_ == 0) {
    const Time timeout = cfg_.active_sender_timeout ? cfg_.active_sender_timeout
                                                    : 4 * std::max(srtt_, cfg_.initial_rtt);
    t = std::min(t, last_backlog_ + timeout);
  }
  if (established()) {
    t = std::min(t, path_timer_at_);
    if (all_failed_since_ != kNever) t = std::min(t, all_failed_since_ + cfg_.connect_timeout);
    t = std::min(t, pacer_.deadline());
  }
  return t;
}

void Connection::stats(ConnStats* out) const {
  ConnStats s;
  s.state = state_;
  s.peer = peer_;
  s.paths = static_cast<std::uint16_t>(paths_.size());
  s.planes = planes_;
  s.streams = static_cast<std::uint32_t>(streams_.size());
  s.tx_data_bytes = tx_data_bytes_;
  s.rx_data_bytes = rx_data_bytes_;
  s.retransmits = retransmits_;
  s.reentropies = reentropies_;
  s.path_failures = path_failures_;
  s.plane_failures = plane_failures_;
  s.cwnd_bytes = cc_.window();
  s.inflight_bytes = paths_.inflight();
  s.open_messages = open_messages_;
  s.inbound_messages = inbound_.size();
  s.rate_hint_bps = cc_.rate_hint_bps();
  s.pacing_rate_bps = pacing_rate();
  s.inbound_senders = ctx_.share.active();
  *out = s;
}

bool Connection::path_stats(std::uint16_t path, PathStats* out) const {
  if (path >= paths_.size()) return false;
  const TxPath& p = paths_[path];
  *out = p.stats;
  out->state = p.state();
  out->plane = p.plane;
  out->generation = p.generation;
  out->src_port = p.port;
  out->cwnd_bytes = p.cwnd();
  out->inflight_bytes = p.inflight();
  out->srtt = p.rtt.srtt();
  out->min_rtt = p.rtt.min_rtt();
  return true;
}

}  // namespace mroce
