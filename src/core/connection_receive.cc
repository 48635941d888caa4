// The receiving half: per-path sequence bookkeeping, then placement of every packet
// straight into its final memory as it lands, then completion of messages in stream
// order. A packet is acknowledged only once its content is placed (or known to be a
// copy of placed content); one that cannot be placed is refused with a NACK instead.
#include <algorithm>
#include <cstring>

#include "core/connection.h"
#include "core/seq.h"

namespace mroce {

namespace {

bool consumes_receive(wire::DataOp op) {
  return op == wire::DataOp::kSend || op == wire::DataOp::kSendImm || op == wire::DataOp::kWriteImm;
}

bool is_single_segment(wire::DataOp op) {
  return op == wire::DataOp::kReadRequest || op == wire::DataOp::kFetchAdd ||
         op == wire::DataOp::kCompareSwap;
}

// The right a request needs from the stream's remote access flags (0: none).
std::uint32_t remote_right(wire::DataOp op) {
  switch (op) {
    case wire::DataOp::kWrite:
    case wire::DataOp::kWriteImm:
      return access::kRemoteWrite;
    case wire::DataOp::kReadRequest:
      return access::kRemoteRead;
    case wire::DataOp::kFetchAdd:
    case wire::DataOp::kCompareSwap:
      return access::kRemoteAtomic;
    default:
      return 0;
  }
}

DropReason reason_of(AccessCheck c) {
  switch (c) {
    case AccessCheck::kBadKey:
      return DropReason::kBadKey;
    case AccessCheck::kOutOfRange:
      return DropReason::kOutOfRange;
    default:
      return DropReason::kAccessDenied;
  }
}

}  // namespace

void Connection::on_data(Time now, const RxMeta& meta, const wire::Packet& pkt) {
  const wire::CommonHeader& c = pkt.common;
  const wire::DataHeader& d = pkt.data;
  if (c.path >= rx_.size()) {
    ctx_.drop(DropReason::kMalformed);
    return;
  }
  RxPath& r = rx_[c.path];
  if (!r.seen || generation_newer(r.generation, c.generation)) {
    // The sender opened a fresh sequence space on this path (re-entropy).
    r.seen = true;
    r.generation = c.generation;
    r.window.reset(rx_isn_);
    r.rx_packets = r.ce_packets = r.unacked = 0;
  } else if (c.generation != r.generation) {
    ctx_.drop(DropReason::kStaleGeneration);
    return;
  }
  r.local = meta.dst;
  r.remote = meta.src;
  r.remote_port = meta.src_port;
  r.plane = meta.plane;

  const auto ack_now = [&] {
    if (!r.ack_now) {
      r.ack_now = true;
      ack_queue_.push(c.path);
    }
  };
  switch (r.window.classify(d.psn)) {
    case SackWindow::Verdict::kOutOfWindow:
      ctx_.drop(DropReason::kOutOfWindow);
      return;
    case SackWindow::Verdict::kDuplicate:
      // Its ACK was lost or it was resent in vain: say again that we have it.
      ctx_.drop(DropReason::kDuplicate);
      r.echo_timestamp = d.timestamp;
      r.last_arrival = now;
      ack_now();
      return;
    case SackWindow::Verdict::kNew:
      break;
  }
  const bool out_of_order = d.psn != r.window.cum() || r.window.has_gap();

  const Outcome outcome = place(now, d, pkt.payload);
  if (outcome.verdict != Verdict::kAccept) {
    ctx_.drop(outcome.reason);
    if (outcome.verdict == Verdict::kNack) queue_nack(r, c.path, d, outcome.code);
    return;
  }

  r.window.mark(d.psn);
  ++r.rx_packets;
  const bool ce = meta.ecn == Ecn::kCe;
  if (ce) {
    ++r.ce_packets;
    ++ctx_.counters.rx_ce_packets;
  }
  r.echo_timestamp = d.timestamp;
  r.last_arrival = now;
  ++r.unacked;
  note_peer_backlog(now, d.timestamp, (c.flags & wire::flags::kBacklog) != 0);
  if (out_of_order || ce || (c.flags & wire::flags::kAckRequest) || r.unacked >= cfg_.ack_every) {
    ack_now();
  } else if (r.ack_due == kNever) {
    r.ack_due = now + cfg_.ack_delay;
    ack_timer_at_ = std::min(ack_timer_at_, r.ack_due);
  }
  if (message_completed_) ack_held_paths();
}

// A message is complete here, and its sender completes it only when every path that
// carried part of it has answered: the ACKs held for ack_delay go now. Spraying leaves
// the message's last packet on each path, and only the very last asked for an ACK.
void Connection::ack_held_paths() {
  message_completed_ = false;
  for (std::size_t i = 0; i < rx_.size(); ++i) {
    RxPath& r = rx_[i];
    if (r.ack_now || r.ack_due == kNever) continue;
    r.ack_now = true;
    ack_queue_.push(static_cast<std::uint8_t>(i));
  }
}

void Connection::queue_nack(const RxPath& r, std::uint8_t path, const wire::DataHeader& d,
                            wire::NackCode code) {
  wire::NackHeader n;
  n.psn = d.psn;
  n.code = code;
  n.stream = d.stream;
  n.msn = d.msn;
  n.echo_timestamp = d.timestamp;
  nacks_.push(PendingNack{path, r.generation, n});
}

Connection::Outcome Connection::place(Time now, const wire::DataHeader& d,
                                      std::span<const std::uint8_t> payload) {
  if (d.op == wire::DataOp::kNop) return {};
  Stream* s = ctx_.stream(d.stream);
  const bool bound = s && s->conn == id_;
  if (d.op == wire::DataOp::kReadResponse || d.op == wire::DataOp::kAtomicResponse) {
    // An answer for a request we no longer wait for is acknowledged and ignored.
    if (!bound || s->state != StreamState::kReady) return {};
    return place_response(now, *s, d, payload);
  }
  if (!bound) return {Verdict::kNack, wire::NackCode::kInvalidRequest, DropReason::kBadStream};
  Outcome o =
      s->state == StreamState::kReady
          ? place_request(now, *s, d, payload)
          : Outcome{Verdict::kNack, wire::NackCode::kRemoteOperation, DropReason::kBadStream};
  if (s->quiesced && o.verdict == Verdict::kNack) o.verdict = Verdict::kDrop;
  return o;
}

Connection::Outcome Connection::fail_message(Time now, Stream& s, InboundMessage& m,
                                             wire::NackCode code, DropReason reason,
                                             WcStatus recv_status) {
  m.failed = true;
  m.fail_code = code;
  m.fail_reason = reason;
  if (!s.rx_refused || seq_lt(m.msn, s.rx_refused_msn)) {
    s.rx_refused = true;
    s.rx_refused_msn = m.msn;
    s.rx_refused_code = code;
    s.rx_refused_reason = reason;
  }
  m.recv_status = recv_status;
  m.complete = true;
  if (m.msn == s.rx_next_msn) advance_receiver(now, s);
  return {Verdict::kNack, code, reason};
}

Connection::Outcome Connection::place_request(Time now, Stream& s, const wire::DataHeader& d,
                                              std::span<const std::uint8_t> payload) {
  // A late copy of a message already completed.
  if (seq_lt(d.msn, s.rx_next_msn)) {
    if (s.rx_refused && d.msn == s.rx_refused_msn) {
      return {Verdict::kNack, s.rx_refused_code, s.rx_refused_reason};
    }
    return {};
  }
  const Outcome invalid{Verdict::kNack, wire::NackCode::kInvalidRequest,
                        DropReason::kInvalidRequest};
  if (seq_diff(s.rx_next_msn, d.msn) >= (1 << 20)) return invalid;

  if (d.op == wire::DataOp::kReadRequest && d.rate_kbps) {
    cc_.on_rate_hint(d.rate_kbps);  // pace the response to it
  }
  InboundMessage* m = inbound_.find(s.id, d.msn);
  if (!m) {
    const Outcome opened = open_message(now, s, d, &m);
    if (opened.verdict != Verdict::kAccept) return opened;
  } else if (m->op != d.op || m->length != d.message_length) {
    return invalid;
  }
  if (m->failed) return {Verdict::kNack, m->fail_code, m->fail_reason};

  std::uint32_t index = 0;
  if (!segment_index(*m, d, &index)) return invalid;
  if (m->placed.contains(ctx_.bitmaps, index)) return {};  // a copy: placed already

  const Outcome written = write_segment(now, s, *m, d, payload);
  if (written.verdict != Verdict::kAccept) return written;
  m->placed.insert(ctx_.bitmaps, index);
  rx_data_bytes_ += d.payload_length;
  if (m->placed.full()) {
    m->complete = true;
    message_completed_ = true;
    if (m->msn == s.rx_next_msn) advance_receiver(now, s);
  }
  return {};
}

// A stream on a shared receive queue takes receives from it for every message up to ssn
// (messages that consume one are numbered densely, so the earlier ones will need theirs),
// as long as its own ring has room and the queue has enough.
bool Connection::take_shared(Time now, Stream& s, std::uint32_t ssn) {
  SharedRecvQueue* q = ctx_.srq(s.config.srq);
  if (!q || s.quiesced) return false;
  const auto need = static_cast<std::int32_t>(ssn - s.rq_tail + 1);
  if (need <= 0 || s.rq_tail - s.rq_head + std::uint32_t(need) > s.config.rq_depth ||
      q->count() < std::uint32_t(need)) {
    return false;
  }
  bool below_limit = false;
  for (std::int32_t i = 0; i < need; ++i) below_limit |= q->take(&s.recv(s.rq_tail++));
  if (below_limit) {
    Event e;
    e.kind = EventKind::kSrqLimitReached;
    e.time = now;
    e.conn = id_;
    e.peer = peer_;
    e.srq = s.config.srq;
    ctx_.event(e);
  }
  return true;
}

Connection::Outcome Connection::open_message(Time now, Stream& s, const wire::DataHeader& d,
                                             InboundMessage** out) {
  if (consumes_receive(d.op) && !s.receive_posted(d.ssn) && !take_shared(now, s, d.ssn)) {
    return {Verdict::kNack, wire::NackCode::kReceiverNotReady, DropReason::kReceiverNotReady};
  }
  InboundMessage* m = inbound_.insert(s.id, d.msn);
  if (!m) return {Verdict::kNack, wire::NackCode::kNoResources, DropReason::kNoResources};
  *out = m;
  m->op = d.op;
  m->length = d.message_length;
  m->ssn = d.ssn;
  m->imm = d.imm;
  m->addr = d.remote_addr;
  m->rkey = d.rkey;
  m->operand = d.operand;
  m->swap = d.swap;
  m->solicited = d.flags & wire::data_flags::kSolicited;
  const std::uint32_t segments =
      is_single_segment(d.op) ? 1
                              : std::max<std::uint32_t>(1, (d.message_length + mss_ - 1) / mss_);
  m->placed.init(ctx_.bitmaps, segments);

  // Checks that concern the whole message, made once.
  if (const std::uint32_t right = remote_right(d.op); right && !(s.config.remote_access & right)) {
    return fail_message(now, s, *m, wire::NackCode::kRemoteAccess, DropReason::kAccessDenied,
                        WcStatus::kSuccess);
  }
  const Region* region = nullptr;
  AccessCheck check = AccessCheck::kOk;
  switch (d.op) {
    case wire::DataOp::kSend:
    case wire::DataOp::kSendImm:
      if (m->length > s.recv(d.ssn).length) {
        return fail_message(now, s, *m, wire::NackCode::kInvalidRequest,
                            DropReason::kInvalidRequest, WcStatus::kLocLenErr);
      }
      break;
    case wire::DataOp::kReadRequest:
      // As IBA's responder: a zero-length RDMA operation names no memory, so its R_Key
      // and address are not checked (UCX flushes with an empty WRITE of rkey 0).
      if (m->length > 0) {
        check = ctx_.memory.check(m->rkey, m->addr, m->length, access::kRemoteRead, &region);
      }
      break;
    case wire::DataOp::kFetchAdd:
    case wire::DataOp::kCompareSwap:
      if (m->addr % 8 != 0) {
        return fail_message(now, s, *m, wire::NackCode::kInvalidRequest,
                            DropReason::kInvalidRequest, WcStatus::kSuccess);
      }
      check = ctx_.memory.check(m->rkey, m->addr, 8, access::kRemoteAtomic, &region);
      break;
    default:
      break;
  }
  if (check != AccessCheck::kOk) {
    return fail_message(now, s, *m, wire::NackCode::kRemoteAccess, reason_of(check),
                        WcStatus::kSuccess);
  }
  return {};
}

bool Connection::segment_index(const InboundMessage& m, const wire::DataHeader& d,
                               std::uint32_t* index) const {
  *index = 0;
  if (is_single_segment(d.op)) return true;
  const std::uint32_t expected =
      d.offset < m.length ? std::min<std::uint32_t>(mss_, m.length - d.offset) : 0;
  if (d.offset % mss_ != 0 || d.payload_length != expected) {
    // A zero-length message still travels as one empty segment.
    if (!(m.length == 0 && d.offset == 0 && d.payload_length == 0)) return false;
  }
  *index = d.offset / mss_;
  return true;
}

Connection::Outcome Connection::write_segment(Time now, Stream& s, InboundMessage& m,
                                              const wire::DataHeader& d,
                                              std::span<const std::uint8_t> payload) {
  const std::uint32_t len = d.payload_length;
  switch (d.op) {
    case wire::DataOp::kWrite:
    case wire::DataOp::kWriteImm: {
      if (m.length == 0) break;  // names no memory: no R_Key check (see open_message)
      const Region* region = nullptr;
      const AccessCheck check =
          ctx_.memory.check(m.rkey, m.addr + d.offset, len, access::kRemoteWrite, &region);
      if (check != AccessCheck::kOk) {
        return fail_message(now, s, m, wire::NackCode::kRemoteAccess, reason_of(check),
                            WcStatus::kSuccess);
      }
      if (cfg_.carry_payload && len > 0) {
        std::uint8_t* dst = MemoryTable::host_of(*region, m.addr + d.offset);
        std::uint32_t now_len = len;
        if (d.offset + len == m.length) {
          // Programs spin on the last byte: it becomes visible only when the message
          // completes in order.
          m.holds_last_byte = true;
          m.last_byte = payload[len - 1];
          --now_len;
        }
        if (dst) std::memcpy(dst, payload.data(), now_len);
      }
      break;
    }
    case wire::DataOp::kSend:
    case wire::DataOp::kSendImm:
      if (cfg_.carry_payload && len > 0) {
        const RecvWqe& rv = s.recv(m.ssn);
        if (!ctx_.memory.scatter(rv.wr.sg, rv.wr.num_sge, d.offset, payload.data(), len)) {
          return fail_message(now, s, m, wire::NackCode::kRemoteOperation,
                              DropReason::kAccessDenied, WcStatus::kLocProtErr);
        }
      }
      break;
    default:
      break;
  }
  return {};
}

Connection::Outcome Connection::place_response(Time now, Stream& s, const wire::DataHeader& d,
                                               std::span<const std::uint8_t> payload) {
  if (seq_lt(d.msn, s.sq_head) || !seq_lt(d.msn, s.sq_tail)) return {};
  Wqe& w = s.wqe(d.msn);
  if (w.msn != d.msn || w.done) return {};
  // A response that does not fit its request is counted and ignored; refusing it would
  // only make the responder send it again.
  const auto invalid = [&] {
    ctx_.drop(DropReason::kInvalidRequest);
    return Outcome{};
  };
  if (d.op == wire::DataOp::kAtomicResponse) {
    if (!w.is_atomic()) return invalid();
    if (cfg_.carry_payload) {
      std::uint8_t value[8];
      std::memcpy(value, &d.operand, 8);  // host order, as the application reads it
      if (!ctx_.memory.scatter(w.wr.sg, 1, 0, value, 8)) w.status = WcStatus::kLocProtErr;
    }
    w.done = true;
    if (w.status != WcStatus::kSuccess) s.error_pending = true;
    complete_sends(now, s);
    return {};
  }
  if (!w.is_read() || d.message_length != w.length || d.offset % mss_ != 0) return invalid();
  const std::uint32_t index = d.offset / mss_;
  if (index >= w.response.size()) return invalid();
  if (w.response.contains(ctx_.bitmaps, index)) return {};
  if (cfg_.carry_payload && d.payload_length > 0 &&
      !ctx_.memory.scatter(w.wr.sg, w.wr.num_sge, d.offset, payload.data(), d.payload_length)) {
    fail_wqe(now, s, w, WcStatus::kLocProtErr);
    return {};
  }
  w.response.insert(ctx_.bitmaps, index);
  rx_data_bytes_ += d.payload_length;
  if (w.response.full()) {
    w.done = true;
    message_completed_ = true;
    complete_sends(now, s);
  }
  return {};
}

void Connection::advance_receiver(Time now, Stream& s) {
  while (s.state == StreamState::kReady) {
    InboundMessage* found = inbound_.find(s.id, s.rx_next_msn);
    if (!found || !found->complete) break;
    const InboundMessage m = *found;
    found->placed.release(ctx_.bitmaps);
    inbound_.erase(found);
    ++s.rx_next_msn;
    // After a refusal nothing later executes: its sender flushes it, and it would take
    // a receive out of turn (the refused message used none).
    if (s.rx_refused && seq_lt(s.rx_refused_msn, m.msn)) continue;
    execute(now, s, m);
  }
}

void Connection::publish_last_byte(const InboundMessage& m) {
  if (!m.holds_last_byte) return;
  const Region* region = nullptr;
  const std::uint64_t at = m.addr + m.length - 1;
  if (ctx_.memory.check(m.rkey, at, 1, access::kRemoteWrite, &region) != AccessCheck::kOk) return;
  if (std::uint8_t* dst = MemoryTable::host_of(*region, at)) {
    __atomic_store_n(dst, m.last_byte, __ATOMIC_RELEASE);
  }
}

Response* Connection::allocate_response() {
  for (Response& r : responses_) {
    if (!r.used) return &r;
  }
  // The peer keeps within the advertised count, but our slot is freed only when its last
  // segment is acknowledged, which can trail the peer's completion: make room.
  return &responses_.emplace_back();
}

std::uint64_t Connection::apply_atomic(const InboundMessage& m) {
  std::uint64_t original = 0;
  const Region* region = nullptr;
  if (ctx_.memory.check(m.rkey, m.addr, 8, access::kRemoteAtomic, &region) != AccessCheck::kOk) {
    return original;
  }
  auto* word = reinterpret_cast<std::uint64_t*>(MemoryTable::host_of(*region, m.addr));
  if (!word) return original;  // headers only: no memory to change
  if (m.op == wire::DataOp::kFetchAdd) {
    original = __atomic_fetch_add(word, m.operand, __ATOMIC_SEQ_CST);
  } else {
    original = m.operand;
    __atomic_compare_exchange_n(word, &original, m.swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  }
  return original;
}

void Connection::execute(Time, Stream& s, const InboundMessage& m) {
  switch (m.op) {
    case wire::DataOp::kWrite:
      if (!m.failed) publish_last_byte(m);
      return;
    case wire::DataOp::kSend:
    case wire::DataOp::kSendImm:
    case wire::DataOp::kWriteImm: {
      if (m.failed && m.recv_status == WcStatus::kSuccess)
        return;  // refused before a receive was used
      if (!m.failed) publish_last_byte(m);
      Completion c;
      c.wr_id = s.recv(m.ssn).wr.wr_id;
      c.stream = s.id;
      c.status = m.recv_status;
      c.opcode = m.op == wire::DataOp::kWriteImm ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv;
      c.is_recv = true;
      c.has_imm = m.op != wire::DataOp::kSend;
      c.imm = m.imm;
      c.byte_len = m.length;
      ++s.rq_head;
      ctx_.complete(c);
      if (c.status != WcStatus::kSuccess) flush_stream(s, WcStatus::kWrFlushErr);
      return;
    }
    case wire::DataOp::kReadRequest: {
      if (m.failed) return;
      Response& r = *allocate_response();
      r = Response{true,     wire::DataOp::kReadResponse,
                   s.remote, m.msn,
                   m.addr,   m.rkey,
                   m.length, std::max<std::uint32_t>(1, (m.length + mss_ - 1) / mss_)};
      responding_.push(static_cast<std::uint32_t>(&r - responses_.data()));
      return;
    }
    case wire::DataOp::kFetchAdd:
    case wire::DataOp::kCompareSwap: {
      if (m.failed) return;
      const std::uint64_t original = apply_atomic(m);
      Response& r = *allocate_response();
      r = Response{true, wire::DataOp::kAtomicResponse, s.remote, m.msn, m.addr, m.rkey, 8, 1};
      r.value = original;
      responding_.push(static_cast<std::uint32_t>(&r - responses_.data()));
      return;
    }
    default:
      return;
  }
}

}  // namespace mroce
