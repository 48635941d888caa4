#include "baseline/responder.h"

#include <algorithm>
#include <cstring>

#include "baseline/psn.h"
#include "baseline/queue_pair.h"

namespace mroce::baseline {

namespace {

bool starts_message(Position p) {
  return p == Position::kFirst || p == Position::kOnly;
}
bool ends_message(Position p) {
  return p == Position::kLast || p == Position::kOnly;
}

// Payload size rules of IBA 9.7.x: every packet but the last of a message is full.
bool valid_length(Position pos, std::uint32_t length, std::uint32_t mtu) {
  switch (pos) {
    case Position::kFirst:
    case Position::kMiddle:
      return length == mtu;
    case Position::kLast:
      return length > 0 && length <= mtu;
    case Position::kOnly:
      return length <= mtu;
  }
  return false;
}

Response nak(NakCode code, std::uint32_t psn, std::uint32_t msn) {
  Response r;
  r.kind = Response::Kind::kNak;
  r.psn = psn;
  r.aeth = Aeth::nak(code, msn);
  return r;
}

}  // namespace

Responder::Responder(QueuePair& qp, const StreamConfig& config)
    : qp_(qp),
      mtu_(qp.ctx().config.mtu),
      rnr_timer_code_(rnr_timer_code(config.rnr_timer)),
      max_answers_(std::max<std::uint8_t>(1, qp.ctx().config.max_dest_rd_atomic)),
      rq_(config.rq_depth),
      // Between two answers at most one ACK or NAK waits (later ones replace it).
      queue_(2 * std::size_t{max_answers_} + 4),
      atomic_cache_(max_answers_) {}

void Responder::start(std::uint32_t expected_psn) {
  epsn_ = expected_psn & kPsnMask;
}

Errc Responder::post(const RecvWr& wr) {
  if (wr.num_sge > kMaxSge) return Errc::kInvalidArgument;
  if (rq_tail_ - rq_head_ >= rq_.size()) return Errc::kNoResources;
  rq_[rq_tail_ % rq_.size()] = wr;
  ++rq_tail_;
  return Errc::kOk;
}

void Responder::on_request(Time now, const Packet& p) {
  const std::int32_t distance = psn_diff(p.bth.psn, epsn_);
  if (distance > 0) {
    qp_.ctx().drop(DropReason::kOutOfWindow);
    if (!nak_sent_) {
      nak_sent_ = true;
      push_control(nak(NakCode::kPsnSequenceError, epsn_, msn_));
    }
    return;
  }
  if (distance < 0) {
    qp_.ctx().drop(DropReason::kDuplicate);
    on_duplicate(p);
    return;
  }
  switch (opcode_info(static_cast<std::uint8_t>(p.bth.opcode)).kind) {
    case OpKind::kSend:
      on_send(now, p);
      return;
    case OpKind::kWrite:
      on_write(now, p);
      return;
    case OpKind::kReadRequest:
      on_read(now, p);
      return;
    case OpKind::kAtomic:
      on_atomic(now, p);
      return;
    default:
      return;
  }
}

void Responder::on_send(Time now, const Packet& p) {
  const OpcodeInfo info = opcode_info(static_cast<std::uint8_t>(p.bth.opcode));
  const bool first = starts_message(info.position);
  if (first != (in_ == InMessage::kNone) || (!first && in_ != InMessage::kSend) ||
      !valid_length(info.position, p.payload_length, mtu_)) {
    fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
    return;
  }
  const MemoryTable& mem = qp_.ctx().memory;
  if (first) {
    if (!pop_receive(&receive_)) {
      receiver_not_ready();
      return;
    }
    receive_held_ = true;
    received_ = 0;
    if (SgList{receive_.sg, receive_.num_sge}.check(mem, access::kLocalWrite) != MemCheck::kOk) {
      receive_held_ = false;
      complete_receive(receive_, WcStatus::kLocProtErr, WcOpcode::kRecv, 0, false, 0);
      fatal(now, NakCode::kRemoteOperationalError, DropReason::kAccessDenied);
      return;
    }
  }
  const SgList list{receive_.sg, receive_.num_sge};
  if (received_ + p.payload_length > list.total()) {
    receive_held_ = false;
    complete_receive(receive_, WcStatus::kLocLenErr, WcOpcode::kRecv, 0, false, 0);
    fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
    return;
  }
  if (qp_.ctx().config.carry_payload) scatter(mem, list, received_, p.payload);
  received_ += p.payload_length;
  qp_.note_rx_data(p.payload_length);
  accept(p);
  in_ = InMessage::kSend;
  if (ends_message(info.position)) {
    in_ = InMessage::kNone;
    ++msn_;
    receive_held_ = false;
    complete_receive(receive_, WcStatus::kSuccess, WcOpcode::kRecv, std::uint32_t(received_),
                     info.immediate, p.imm);
  }
  acknowledge_if_due(now, p);
}

void Responder::on_write(Time now, const Packet& p) {
  const OpcodeInfo info = opcode_info(static_cast<std::uint8_t>(p.bth.opcode));
  const bool first = starts_message(info.position);
  if (first != (in_ == InMessage::kNone) || (!first && in_ != InMessage::kWrite) ||
      !valid_length(info.position, p.payload_length, mtu_)) {
    fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
    return;
  }
  const MemoryTable& mem = qp_.ctx().memory;
  if (first) {
    const bool fits =
        info.position == Position::kOnly ? p.payload_length == p.reth.length : p.reth.length > mtu_;
    if (!fits) {
      fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
      return;
    }
    std::uint8_t* host = nullptr;
    const MemCheck c = p.reth.length == 0 ? MemCheck::kOk
                                          : mem.check(p.reth.rkey, p.reth.va, p.reth.length,
                                                      access::kRemoteWrite, &host);
    if (c != MemCheck::kOk) {
      fatal(now, NakCode::kRemoteAccessError, drop_reason(c));
      return;
    }
    write_va_ = p.reth.va;
    write_rkey_ = p.reth.rkey;
    write_length_ = p.reth.length;
    written_ = 0;
  } else {
    const std::uint32_t left = write_length_ - written_;
    const bool fits = info.position == Position::kLast ? p.payload_length == left : left > mtu_;
    if (!fits) {
      fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
      return;
    }
  }
  RecvWr receive;
  if (info.immediate && !pop_receive(&receive)) {
    receiver_not_ready();
    return;
  }
  if (p.payload_length > 0 && qp_.ctx().config.carry_payload) {
    std::uint8_t* host = nullptr;
    const MemCheck c =
        mem.check(write_rkey_, write_va_ + written_, p.payload_length, access::kRemoteWrite, &host);
    if (c != MemCheck::kOk) {  // deregistered under the transfer
      fatal(now, NakCode::kRemoteAccessError, drop_reason(c));
      return;
    }
    if (host) std::memcpy(host, p.payload.data(), p.payload_length);
  }
  written_ += p.payload_length;
  qp_.note_rx_data(p.payload_length);
  accept(p);
  in_ = ends_message(info.position) ? InMessage::kNone : InMessage::kWrite;
  if (ends_message(info.position)) {
    ++msn_;
    if (info.immediate) {
      complete_receive(receive, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm, write_length_, true,
                       p.imm);
    }
  }
  acknowledge_if_due(now, p);
}

void Responder::on_read(Time now, const Packet& p) {
  if (in_ != InMessage::kNone) {
    fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
    return;
  }
  std::uint8_t* host = nullptr;
  const MemCheck c = p.reth.length == 0
                         ? MemCheck::kOk
                         : qp_.ctx().memory.check(p.reth.rkey, p.reth.va, p.reth.length,
                                                  access::kRemoteRead, &host);
  if (c != MemCheck::kOk) {
    fatal(now, NakCode::kRemoteAccessError, drop_reason(c));
    return;
  }
  if (answers_queued_ >= max_answers_) {  // more READs/atomics than we granted
    fatal(now, NakCode::kInvalidRequest, DropReason::kNoResources);
    return;
  }
  Response r;
  r.kind = Response::Kind::kRead;
  r.psn = epsn_;
  r.va = p.reth.va;
  r.rkey = p.reth.rkey;
  r.length = p.reth.length;
  r.packets = packets_for(r.length);
  epsn_ = psn_add(epsn_, r.packets);
  nak_sent_ = false;
  since_ack_ = 0;  // the responses acknowledge everything before
  ++msn_;
  r.aeth = ack_aeth();
  push_answer(r);
}

void Responder::on_atomic(Time now, const Packet& p) {
  if (in_ != InMessage::kNone) {
    fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
    return;
  }
  std::uint8_t* host = nullptr;
  const MemCheck c =
      qp_.ctx().memory.check(p.atomic.rkey, p.atomic.va, 8, access::kRemoteAtomic, &host);
  if (c != MemCheck::kOk) {
    fatal(now, NakCode::kRemoteAccessError, drop_reason(c));
    return;
  }
  if (p.atomic.va % 8 != 0) {
    fatal(now, NakCode::kInvalidRequest, DropReason::kInvalidRequest);
    return;
  }
  if (answers_queued_ >= max_answers_) {
    fatal(now, NakCode::kInvalidRequest, DropReason::kNoResources);
    return;
  }
  std::uint64_t original = 0;
  if (host) {
    std::memcpy(&original, host, 8);
    std::uint64_t value = original + p.atomic.swap_add;
    if (p.bth.opcode == Opcode::kCompareSwap)
      value = original == p.atomic.compare ? p.atomic.swap_add : original;
    std::memcpy(host, &value, 8);
  }
  atomic_cache_[atomic_next_] = {p.bth.psn, original, true};
  atomic_next_ = (atomic_next_ + 1) % atomic_cache_.size();
  accept(p);
  since_ack_ = 0;
  ++msn_;
  Response r;
  r.kind = Response::Kind::kAtomic;
  r.psn = p.bth.psn;
  r.original = original;
  r.aeth = ack_aeth();
  push_answer(r);
}

void Responder::on_duplicate(const Packet& p) {
  switch (opcode_info(static_cast<std::uint8_t>(p.bth.opcode)).kind) {
    case OpKind::kSend:
    case OpKind::kWrite:
      if (p.bth.ack_req || ++since_ack_ >= qp_.ctx().config.ack_every) {
        since_ack_ = 0;
        Response r;
        r.psn = psn_add(epsn_, kPsnMask);  // everything before the expected PSN
        r.aeth = ack_aeth();
        push_control(r);
      }
      return;
    case OpKind::kReadRequest: {
      // Read again: the first responses were lost.
      Response r;
      r.kind = Response::Kind::kRead;
      r.duplicate = true;
      r.psn = p.bth.psn;
      r.va = p.reth.va;
      r.rkey = p.reth.rkey;
      r.length = p.reth.length;
      r.packets = packets_for(r.length);
      r.aeth = ack_aeth();
      std::uint8_t* host = nullptr;
      if (r.length > 0 && qp_.ctx().memory.check(r.rkey, r.va, r.length, access::kRemoteRead,
                                                 &host) != MemCheck::kOk)
        return;
      if (psn_lt(epsn_, psn_add(r.psn, r.packets)) || answers_queued_ >= max_answers_) return;
      push_answer(r);
      return;
    }
    case OpKind::kAtomic: {
      const auto cached =
          std::find_if(atomic_cache_.begin(), atomic_cache_.end(),
                       [&](const AtomicResult& a) { return a.valid && a.psn == p.bth.psn; });
      if (cached == atomic_cache_.end() || answers_queued_ >= max_answers_) return;
      Response r;
      r.kind = Response::Kind::kAtomic;
      r.duplicate = true;
      r.psn = p.bth.psn;
      r.original = cached->original;
      r.aeth = ack_aeth();
      push_answer(r);
      return;
    }
    default:
      return;
  }
}

void Responder::accept(const Packet& p) {
  epsn_ = psn_add(p.bth.psn, 1);
  nak_sent_ = false;
}

void Responder::acknowledge_if_due(Time now, const Packet& p) {
  const RoceConfig& cfg = qp_.ctx().config;
  if (!p.bth.ack_req && ++since_ack_ < cfg.ack_every && now - last_ack_ < cfg.ack_interval) return;
  since_ack_ = 0;
  last_ack_ = now;
  Response r;
  r.psn = p.bth.psn;
  r.aeth = ack_aeth();
  push_control(r);
}

void Responder::push_control(const Response& r) {
  if (!queue_.empty()) {
    // A newer acknowledgement or NAK says everything the unsent one would have said.
    Response& last = queue_.back();
    const bool fatal_nak = last.kind == Response::Kind::kNak && last.aeth.type() == AckType::kNak &&
                           last.aeth.value() != std::uint8_t(NakCode::kPsnSequenceError);
    const bool superseded = last.kind == Response::Kind::kAck ||
                            (last.kind == Response::Kind::kNak && !fatal_nak &&
                             r.kind == Response::Kind::kAck && !psn_lt(r.psn, last.psn));
    if (superseded) {
      last = r;
      return;
    }
  }
  if (!queue_.full()) queue_.push(r);
}

void Responder::push_answer(const Response& r) {
  if (queue_.full()) return;
  queue_.push(r);
  ++answers_queued_;
}

void Responder::receiver_not_ready() {
  qp_.ctx().drop(DropReason::kReceiverNotReady);
  Response r;
  r.kind = Response::Kind::kNak;
  r.psn = epsn_;
  r.aeth = Aeth::rnr_nak(rnr_timer_code_, msn_);
  push_control(r);
  nak_sent_ = true;  // what follows is discarded silently until the retry
}

void Responder::fatal(Time now, NakCode code, DropReason reason) {
  qp_.ctx().drop(reason);
  const Response r = nak(code, epsn_, msn_);
  if (!queue_.full()) queue_.push(r);
  qp_.fail(now);
}

bool Responder::pop_receive(RecvWr* out) {
  if (rq_head_ == rq_tail_) return false;
  *out = rq_[rq_head_ % rq_.size()];
  ++rq_head_;
  return true;
}

void Responder::complete_receive(const RecvWr& wr, WcStatus status, WcOpcode opcode,
                                 std::uint32_t length, bool has_imm, std::uint32_t imm) {
  Completion c;
  c.wr_id = wr.wr_id;
  c.stream = qp_.qpn();
  c.status = status;
  c.opcode = opcode;
  c.is_recv = true;
  c.byte_len = length;
  c.has_imm = has_imm;
  c.imm = has_imm ? imm : 0;
  qp_.ctx().complete(c);
}

Aeth Responder::ack_aeth() const {
  return Aeth::ack(credit_code(std::uint32_t(rq_tail_ - rq_head_)), msn_ & kPsnMask);
}

std::uint32_t Responder::packets_for(std::uint32_t length) const {
  return length == 0 ? 1 : std::uint32_t((std::uint64_t{length} + mtu_ - 1) / mtu_);
}

std::size_t Responder::write(std::span<std::uint8_t> buf, TxMeta* out, bool* retransmit) {
  Response& r = queue_.front();
  *retransmit = r.duplicate;
  Packet p;
  p.bth.psn = psn_add(r.psn, r.sent);
  p.aeth = r.aeth;
  std::size_t length = 0;
  switch (r.kind) {
    case Response::Kind::kAck:
    case Response::Kind::kNak:
      p.bth.opcode = Opcode::kAck;
      length = qp_.assemble(p, buf, PacketClass::kAck, out, [](std::span<std::uint8_t>) {});
      queue_.pop();
      return length;
    case Response::Kind::kAtomic:
      p.bth.opcode = Opcode::kAtomicAck;
      p.atomic_orig = r.original;
      length = qp_.assemble(p, buf, PacketClass::kAck, out, [](std::span<std::uint8_t>) {});
      queue_.pop();
      --answers_queued_;
      return length;
    case Response::Kind::kRead:
      break;
  }
  const std::uint64_t offset = std::uint64_t{r.sent} * mtu_;
  p.bth.opcode = read_response_opcode(position_of(r.sent, r.packets));
  p.payload_length = std::uint32_t(std::min<std::uint64_t>(mtu_, r.length - offset));
  const MemoryTable& mem = qp_.ctx().memory;
  length = qp_.assemble(p, buf, PacketClass::kData, out, [&](std::span<std::uint8_t> dst) {
    std::uint8_t* host = nullptr;
    if (mem.check(r.rkey, r.va + offset, dst.size(), access::kRemoteRead, &host) == MemCheck::kOk &&
        host) {
      std::memcpy(dst.data(), host, dst.size());
    } else {
      std::memset(dst.data(), 0, dst.size());  // deregistered since the request
    }
  });
  if (++r.sent == r.packets) {
    queue_.pop();
    --answers_queued_;
  }
  return length;
}

void Responder::flush() {
  in_ = InMessage::kNone;
  queue_.keep_control();
  answers_queued_ = 0;
  if (receive_held_) {
    receive_held_ = false;
    complete_receive(receive_, WcStatus::kWrFlushErr, WcOpcode::kRecv, 0, false, 0);
  }
  RecvWr wr;
  while (pop_receive(&wr))
    complete_receive(wr, WcStatus::kWrFlushErr, WcOpcode::kRecv, 0, false, 0);
}

}  // namespace mroce::baseline
