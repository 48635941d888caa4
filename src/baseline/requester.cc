#include "baseline/requester.h"

#include <algorithm>
#include <cstring>

#include "baseline/psn.h"
#include "baseline/queue_pair.h"

namespace mroce::baseline {

namespace {

constexpr std::uint8_t kInfiniteRnrRetry = 7;
// Doublings of the local ACK timeout at most (retry_cnt is 3 bits on the wire anyway).
constexpr std::uint8_t kMaxBackoff = 7;

bool is_atomic(WrOpcode op) {
  return op == WrOpcode::kAtomicCmpSwp || op == WrOpcode::kAtomicFetchAdd;
}

bool is_write(WrOpcode op) {
  return op == WrOpcode::kRdmaWrite || op == WrOpcode::kRdmaWriteWithImm;
}

bool has_imm(WrOpcode op) {
  return op == WrOpcode::kSendWithImm || op == WrOpcode::kRdmaWriteWithImm;
}

bool valid_opcode(WrOpcode op) {
  return static_cast<std::uint8_t>(op) <= 6;
}

std::uint32_t packets_for(std::uint32_t length, std::uint32_t mtu) {
  return length == 0 ? 1 : std::uint32_t((std::uint64_t{length} + mtu - 1) / mtu);
}

WcStatus status_of(NakCode code) {
  switch (code) {
    case NakCode::kInvalidRequest:
      return WcStatus::kRemInvReqErr;
    case NakCode::kRemoteAccessError:
      return WcStatus::kRemAccessErr;
    case NakCode::kRemoteOperationalError:
    case NakCode::kPsnSequenceError:
      break;
  }
  return WcStatus::kRemOpErr;
}

}  // namespace

Requester::Requester(QueuePair& qp, const StreamConfig& config)
    : qp_(qp),
      mtu_(qp.ctx().config.mtu),
      max_inline_(config.max_inline),
      rnr_retry_(config.rnr_retry),
      ring_(config.sq_depth),
      inline_(std::size_t{config.sq_depth} * config.max_inline) {}

bool Requester::is_read_or_atomic(const Wqe& w) {
  return w.wr.opcode == WrOpcode::kRdmaRead || is_atomic(w.wr.opcode);
}

std::uint32_t Requester::last_psn(const Wqe& w) {
  return psn_add(w.first_psn, w.packets - 1);
}

void Requester::start(std::uint32_t initial_psn) {
  next_psn_ = una_ = high_psn_ = initial_psn & kPsnMask;
  retry_left_ = qp_.ctx().config.retry_cnt;
  rnr_left_ = rnr_retry_;
}

Errc Requester::post(Time now, const SendWr& wr) {
  if (!valid_opcode(wr.opcode) || wr.num_sge > kMaxSge) return Errc::kInvalidArgument;
  if (tail_ - head_ >= ring_.size()) return Errc::kNoResources;
  const MemoryTable& mem = qp_.ctx().memory;
  Wqe w;
  w.wr = wr;
  const SgList list{w.wr.sg, w.wr.num_sge};
  const std::uint64_t total = list.total();
  if (total > kMaxMessage) return Errc::kInvalidArgument;
  const bool atomic = is_atomic(wr.opcode);
  if (atomic && (wr.num_sge != 1 || wr.sg[0].length != 8)) return Errc::kInvalidArgument;
  const bool inlined = wr.flags & send_flags::kInline;
  if (inlined && (atomic || wr.opcode == WrOpcode::kRdmaRead || total > max_inline_))
    return Errc::kInvalidArgument;
  w.length = std::uint32_t(total);
  w.packets = atomic ? 1 : packets_for(w.length, mtu_);

  if (inlined) {
    // As in Verbs, inline data is read at post time and need not be registered.
    std::uint8_t* dst = inline_data(tail_);
    for (std::uint8_t i = 0; i < wr.num_sge && qp_.ctx().config.carry_payload; ++i) {
      const Sge& s = wr.sg[i];
      std::uint8_t* host = nullptr;
      if (mem.check(s.lkey, s.addr, s.length, 0, &host) != MemCheck::kOk || host == nullptr)
        host = reinterpret_cast<std::uint8_t*>(static_cast<std::uintptr_t>(s.addr));
      if (s.length > 0) std::memcpy(dst, host, s.length);
      dst += s.length;
    }
  } else {
    const bool writes_local = wr.opcode == WrOpcode::kRdmaRead || atomic;
    if (list.check(mem, writes_local ? access::kLocalWrite : 0) != MemCheck::kOk)
      w.local_status = WcStatus::kLocProtErr;
  }
  at(tail_) = w;
  ++tail_;
  complete_done(now);
  return Errc::kOk;
}

bool Requester::can_send() const {
  if (send_ == tail_ || rnr_until_ != kNever) return false;
  const Wqe& w = at(send_);
  if (w.local_status != WcStatus::kSuccess) return false;  // it fails when it reaches the head
  if (w.started) return true;
  if (is_read_or_atomic(w) && rd_outstanding_ >= qp_.ctx().config.max_rd_atomic) return false;
  if ((w.wr.flags & send_flags::kFence) && rd_outstanding_ > 0) return false;
  return ((next_psn_ + w.packets - una_) & kPsnMask) < kPsnWindow;
}

std::size_t Requester::write(Time now, std::span<std::uint8_t> buf, TxMeta* out, bool* retransmit) {
  Wqe& w = at(send_);
  if (!w.started) {
    w.started = true;
    w.first_psn = next_psn_;
    w.responses = 0;
    if (is_read_or_atomic(w)) ++rd_outstanding_;
  }
  const std::uint32_t psn = next_psn_;
  std::size_t length;
  bool wants_response = true;
  if (w.wr.opcode == WrOpcode::kRdmaRead) {
    length = write_read(w, buf, out);
  } else if (is_atomic(w.wr.opcode)) {
    length = write_atomic(w, buf, out);
  } else {
    wants_response = send_packet_ + 1 == w.packets;  // carries AckReq
    length = write_send_or_write(w, buf, out);
  }
  *retransmit = psn_lt(psn, high_psn_);
  next_psn_ = psn_add(w.first_psn, send_packet_);
  if (send_packet_ >= w.packets) {
    ++send_;
    send_packet_ = 0;
  }
  if (psn_lt(high_psn_, next_psn_)) high_psn_ = next_psn_;
  if (rto_at_ == kNever) rto_at_ = now + ack_timeout();
  if (!probing_ && !*retransmit && wants_response) {
    probing_ = true;
    probe_psn_ = psn;
    probe_sent_ = now;
  }
  return length;
}

std::size_t Requester::write_send_or_write(Wqe& w, std::span<std::uint8_t> buf, TxMeta* out) {
  const WrOpcode op = w.wr.opcode;
  const std::uint32_t index = send_packet_;
  const std::uint64_t offset = std::uint64_t{index} * mtu_;
  const std::uint32_t length = std::uint32_t(std::min<std::uint64_t>(mtu_, w.length - offset));
  const Position pos = position_of(index, w.packets);
  const bool last = pos == Position::kLast || pos == Position::kOnly;
  Packet p;
  p.bth.opcode = is_write(op) ? write_opcode(pos, has_imm(op)) : send_opcode(pos, has_imm(op));
  p.bth.psn = next_psn_;
  p.bth.ack_req = last;
  p.bth.solicited = last && (w.wr.flags & send_flags::kSolicited);
  if (is_write(op) && (pos == Position::kFirst || pos == Position::kOnly))
    p.reth = {w.wr.remote_addr, w.wr.rkey, w.length};
  if (has_imm(op) && last) p.imm = w.wr.imm;
  p.payload_length = length;
  const std::uint8_t* inlined =
      (w.wr.flags & send_flags::kInline) ? inline_data(send_) + offset : nullptr;
  const MemoryTable& mem = qp_.ctx().memory;
  send_packet_ = index + 1;
  return qp_.assemble(p, buf, PacketClass::kData, out, [&](std::span<std::uint8_t> dst) {
    if (inlined) {
      std::memcpy(dst.data(), inlined, dst.size());
    } else {
      gather(mem, SgList{w.wr.sg, w.wr.num_sge}, offset, dst);
    }
  });
}

std::size_t Requester::write_read(Wqe& w, std::span<std::uint8_t> buf, TxMeta* out) {
  // A READ sent again asks only for the responses still missing.
  const std::uint64_t offset = std::uint64_t{send_packet_} * mtu_;
  Packet p;
  p.bth.opcode = Opcode::kReadRequest;
  p.bth.psn = next_psn_;
  p.reth = {w.wr.remote_addr + offset, w.wr.rkey, std::uint32_t(w.length - offset)};
  w.read_from = send_packet_;
  send_packet_ = w.packets;
  return qp_.assemble(p, buf, PacketClass::kData, out, [](std::span<std::uint8_t>) {});
}

std::size_t Requester::write_atomic(Wqe& w, std::span<std::uint8_t> buf, TxMeta* out) {
  const bool cas = w.wr.opcode == WrOpcode::kAtomicCmpSwp;
  Packet p;
  p.bth.opcode = cas ? Opcode::kCompareSwap : Opcode::kFetchAdd;
  p.bth.psn = next_psn_;
  p.atomic = {w.wr.remote_addr, w.wr.rkey, cas ? w.wr.swap : w.wr.compare_add,
              cas ? w.wr.compare_add : 0};
  send_packet_ = 1;
  return qp_.assemble(p, buf, PacketClass::kData, out, [](std::span<std::uint8_t>) {});
}

void Requester::on_response(Time now, const Packet& p) {
  const std::uint32_t psn = p.bth.psn;
  if (!psn_lt(psn, high_psn_)) {
    qp_.ctx().drop(DropReason::kBadAck);  // answers a PSN never sent
    return;
  }
  if (psn_lt(psn, una_)) {
    qp_.ctx().drop(DropReason::kDuplicate);
    return;
  }
  switch (opcode_info(static_cast<std::uint8_t>(p.bth.opcode)).kind) {
    case OpKind::kAck:
      switch (p.aeth.type()) {
        case AckType::kAck:
          on_ack(now, psn);
          return;
        case AckType::kRnrNak:
          on_rnr_nak(now, psn, p.aeth.value());
          return;
        case AckType::kNak: {
          const auto code = static_cast<NakCode>(p.aeth.value());
          if (code == NakCode::kPsnSequenceError) {
            on_sequence_nak(now, psn);
          } else {
            on_fatal_nak(now, psn, code);
          }
          return;
        }
        case AckType::kReserved:
          break;
      }
      break;
    case OpKind::kReadResponse:
      on_read_response(now, p);
      return;
    case OpKind::kAtomicAck:
      if (p.aeth.type() == AckType::kAck) {
        on_atomic_ack(now, p);
        return;
      }
      break;
    default:
      break;
  }
  qp_.ctx().drop(DropReason::kInvalidRequest);
}

void Requester::on_ack(Time now, std::uint32_t psn) {
  ack_before(now, psn_add(psn, 1));
}

void Requester::on_sequence_nak(Time now, std::uint32_t psn) {
  ack_before(now, psn);
  if (una_ != psn) return;                          // an earlier READ is being asked again
  if (recovering_ && recovery_psn_ == psn) return;  // already going back there
  if (!consume_retry(now)) return;
  go_back_once(psn);
}

void Requester::on_rnr_nak(Time now, std::uint32_t psn, std::uint8_t timer_code) {
  ack_before(now, psn);
  if (una_ != psn || rnr_until_ != kNever) return;
  if (rnr_retry_ != kInfiniteRnrRetry) {
    if (rnr_left_ == 0) {
      fail_head(now, WcStatus::kRnrRetryExcErr);
      return;
    }
    --rnr_left_;
  }
  move_cursor(psn);
  rnr_until_ = now + rnr_timer_delay(timer_code);
  rto_at_ = kNever;
  probing_ = false;
}

void Requester::on_fatal_nak(Time now, std::uint32_t psn, NakCode code) {
  ack_before(now, psn);
  fail_head(now, status_of(code));
}

void Requester::on_read_response(Time now, const Packet& p) {
  const std::uint32_t psn = p.bth.psn;
  ack_before(now, psn);  // a response acknowledges every request before it
  if (una_ != psn || head_ == tail_) {
    qp_.ctx().drop(DropReason::kOutOfWindow);  // beyond a lost response: asked again
    return;
  }
  Wqe& w = at(head_);
  if (!w.started || w.wr.opcode != WrOpcode::kRdmaRead ||
      psn != psn_add(w.first_psn, w.responses)) {
    qp_.ctx().drop(DropReason::kBadAck);
    return;
  }
  const std::uint64_t offset = std::uint64_t{w.responses} * mtu_;
  const std::uint32_t length = std::uint32_t(std::min<std::uint64_t>(mtu_, w.length - offset));
  // Positions count from the request answered: the first one, or one asking for the rest.
  const Position pos = opcode_info(static_cast<std::uint8_t>(p.bth.opcode)).position;
  const bool in_place = pos == position_of(w.responses, w.packets) ||
                        pos == position_of(w.responses - w.read_from, w.packets - w.read_from);
  if (!in_place || p.payload_length != length) {
    qp_.ctx().drop(DropReason::kInvalidRequest);
    return;
  }
  if (qp_.ctx().config.carry_payload) {
    scatter(qp_.ctx().memory, SgList{w.wr.sg, w.wr.num_sge}, offset, p.payload);
  }
  qp_.note_rx_data(length);
  ++w.responses;
  progress(now, psn_add(psn, 1));
}

void Requester::on_atomic_ack(Time now, const Packet& p) {
  const std::uint32_t psn = p.bth.psn;
  ack_before(now, psn);
  if (una_ != psn || head_ == tail_) {
    qp_.ctx().drop(DropReason::kOutOfWindow);
    return;
  }
  Wqe& w = at(head_);
  if (!w.started || !is_atomic(w.wr.opcode) || w.first_psn != psn || w.responses != 0) {
    qp_.ctx().drop(DropReason::kBadAck);
    return;
  }
  // The original value lands in local memory in host order, as the responder read it.
  std::uint8_t bytes[8];
  std::memcpy(bytes, &p.atomic_orig, 8);
  scatter(qp_.ctx().memory, SgList{w.wr.sg, w.wr.num_sge}, 0, bytes);
  w.responses = 1;
  progress(now, psn_add(psn, 1));
}

void Requester::ack_before(Time now, std::uint32_t psn) {
  std::uint32_t limit = psn;
  bool implied_nak = false;
  for (std::uint64_t i = head_; i < tail_ && at(i).started; ++i) {
    const Wqe& w = at(i);
    if (!psn_lt(w.first_psn, limit)) break;
    if (is_read_or_atomic(w) && w.responses < w.packets) {
      const std::uint32_t expected = psn_add(w.first_psn, w.responses);
      if (psn_lt(expected, limit)) {
        limit = expected;
        implied_nak = true;
      }
      break;
    }
  }
  if (psn_lt(una_, limit)) progress(now, limit);
  if (implied_nak && una_ == limit) go_back_once(limit);
}

void Requester::progress(Time now, std::uint32_t una) {
  acked_packets_ += std::uint32_t(psn_diff(una, una_));
  una_ = una;
  retry_left_ = qp_.ctx().config.retry_cnt;
  rnr_left_ = rnr_retry_;
  if (recovering_ && psn_lt(recovery_psn_, una_)) recovering_ = false;
  if (probing_ && psn_lt(probe_psn_, una_)) {
    probing_ = false;
    const Time rtt = now - probe_sent_;
    srtt_ = srtt_ == 0 ? rtt : (7 * srtt_ + rtt) / 8;
    min_rtt_ = min_rtt_ == 0 ? rtt : std::min(min_rtt_, rtt);
    backoff_ = 0;  // Karn: only a fresh sample undoes the backoff
  }
  if (psn_lt(next_psn_, una_)) move_cursor(una_);
  if (rnr_until_ == kNever) rto_at_ = una_ == high_psn_ ? kNever : now + ack_timeout();
  complete_done(now);
}

void Requester::move_cursor(std::uint32_t psn) {
  std::uint64_t i = head_;
  while (i < tail_ && at(i).started && !psn_lt(psn, psn_add(at(i).first_psn, at(i).packets))) ++i;
  send_ = i;
  send_packet_ = (i < tail_ && at(i).started) ? std::uint32_t(psn_diff(psn, at(i).first_psn)) : 0;
  next_psn_ = psn;
}

void Requester::go_back(std::uint32_t psn) {
  move_cursor(psn);
  rto_at_ = kNever;  // re-armed by the first packet sent again
  probing_ = false;  // no RTT sample across a retransmission
  ++loss_events_;
}

void Requester::go_back_once(std::uint32_t psn) {
  if (recovering_ && recovery_psn_ == psn) return;
  recovering_ = true;
  recovery_psn_ = psn;
  go_back(psn);
}

bool Requester::consume_retry(Time now) {
  if (retry_left_ == 0) {
    fail_head(now, WcStatus::kRetryExcErr);
    return false;
  }
  --retry_left_;
  return true;
}

Time Requester::ack_timeout() const {
  const RoceConfig& c = qp_.ctx().config;
  if (!c.adaptive_ack_timeout) return c.ack_timeout;
  return std::max(c.ack_timeout, 2 * srtt_) << backoff_;
}

void Requester::on_timer(Time now) {
  if (rnr_until_ <= now) rnr_until_ = kNever;
  if (rto_at_ > now) return;
  rto_at_ = kNever;
  ++timeouts_;
  if (backoff_ < kMaxBackoff) ++backoff_;
  if (!consume_retry(now)) return;
  recovering_ = true;
  recovery_psn_ = una_;
  go_back(una_);
}

void Requester::complete_done(Time now) {
  while (head_ < tail_) {
    const Wqe& w = at(head_);
    if (!w.started) {
      if (w.local_status != WcStatus::kSuccess) fail_head(now, w.local_status);
      return;
    }
    if (!psn_lt(last_psn(w), una_)) return;
    if (is_read_or_atomic(w)) --rd_outstanding_;
    const Wqe done = w;
    ++head_;  // before the sink runs: it may post into the freed slot
    if (done.wr.flags & send_flags::kSignaled) complete(done, WcStatus::kSuccess);
  }
}

void Requester::complete(const Wqe& w, WcStatus status) {
  Completion c;
  c.wr_id = w.wr.wr_id;
  c.stream = qp_.qpn();
  c.status = status;
  c.opcode = completion_opcode(w.wr.opcode);
  c.byte_len = status == WcStatus::kSuccess ? w.length : 0;
  qp_.ctx().complete(c);
}

void Requester::fail_head(Time now, WcStatus status) {
  if (head_ < tail_) {
    const Wqe w = at(head_);
    ++head_;
    complete(w, status);
  }
  qp_.fail(now);
}

void Requester::flush() {
  send_ = tail_;
  send_packet_ = 0;
  rd_outstanding_ = 0;
  rto_at_ = rnr_until_ = kNever;
  probing_ = false;
  while (head_ < tail_) {
    const Wqe w = at(head_);
    ++head_;
    complete(w, WcStatus::kWrFlushErr);
  }
}

std::uint32_t Requester::outstanding_packets() const {
  return (high_psn_ - una_) & kPsnMask;
}

}  // namespace mroce::baseline
