#include "core/engine.h"

#include <algorithm>
#include <cstring>

#include "wire/codec.h"

namespace mroce {

namespace {

constexpr std::uint32_t kSlotBits = 20;
constexpr std::uint32_t kSlotMask = (1u << kSlotBits) - 1;
constexpr std::uint32_t kMaxStreams = (1u << 24) - 1;
constexpr std::uint32_t kMaxQueueDepth = 1u << 16;

bool valid_opcode(WrOpcode op) {
  return static_cast<std::uint8_t>(op) <= 6;
}

std::uint64_t sge_total(const Sge* sg, int n) {
  std::uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += sg[i].length;
  return total;
}

}  // namespace

Engine::Engine(const EngineConfig& config) : ctx_(config) {
  if (ctx_.config.planes.empty()) ctx_.config.planes.push_back(Address::ipv4(0x7f000001));
  if (ctx_.config.planes.size() > wire::kMaxPlanes) ctx_.config.planes.resize(wire::kMaxPlanes);
  auto& c = ctx_.config;
  c.paths = std::clamp<std::uint16_t>(c.paths, 1, 256);
  c.max_paths = std::min<std::uint16_t>(c.max_paths, 256);
  c.path_window_packets = std::bit_ceil(std::clamp<std::uint32_t>(c.path_window_packets, 2, 256));
  if (c.path_window_packets > 256) c.path_window_packets = 256;
  c.src_port_count = std::max<std::uint16_t>(c.src_port_count, 1);
  c.mss = std::max<std::uint16_t>(c.mss, 64);
  c.ack_every = std::max<std::uint32_t>(c.ack_every, 1);
  c.max_inbound_messages = std::max<std::uint16_t>(c.max_inbound_messages, 1);
  c.max_responses = std::max<std::uint16_t>(c.max_responses, 1);
  ctx_.sink = nullptr;
}

Engine::~Engine() = default;

namespace {

#ifdef NDEBUG
constexpr bool kValidate = false;
#else
constexpr bool kValidate = true;
#endif

// Validates the engine when the call it is declared in returns, by whichever path.
class ValidateOnReturn {
 public:
  explicit ValidateOnReturn(const Engine& e) : engine_(e) {}
  ~ValidateOnReturn() {
    if constexpr (kValidate) engine_.validate();
  }
  ValidateOnReturn(const ValidateOnReturn&) = delete;
  ValidateOnReturn& operator=(const ValidateOnReturn&) = delete;

 private:
  const Engine& engine_;
};

}  // namespace

void Engine::validate() const {
  for (const auto& c : conns_) {
    if (c) c->validate();
  }
}

std::size_t Engine::max_packet_size() const {
  return wire::max_packet_size(ctx_.config.mss);
}

Errc Engine::reg_mr(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
                    MrKeys* out) {
  return ctx_.memory.add(addr, length, access, host, out);
}

Errc Engine::dereg_mr(std::uint32_t lkey) {
  return ctx_.memory.remove(lkey);
}

Connection* Engine::find(ConnId id) const {
  const std::uint32_t slot = id & kSlotMask;
  if (slot >= conns_.size() || !conns_[slot]) return nullptr;
  return conns_[slot]->id() == id ? conns_[slot].get() : nullptr;
}

Connection* Engine::create(Time now, const Endpoint& peer, bool listed) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(conns_.size());
    if (slot > kSlotMask) return nullptr;
    conns_.emplace_back();
    generations_.push_back(0);
  }
  std::uint16_t& gen = generations_[slot];
  gen = static_cast<std::uint16_t>((gen + 1) & 0xfff);
  if (gen == 0) gen = 1;
  const ConnId id = std::uint32_t{gen} << kSlotBits | slot;
  conns_[slot] = std::make_unique<Connection>(ctx_, id, peer, now);
  if (listed) by_peer_[peer] = id;
  return conns_[slot].get();
}

void Engine::release(Connection& c) {
  if (c.half_open) {
    HalfOpen* h = half_open_entry(c.id());
    // A new incarnation that never answered our ACCEPT was not the peer.
    if (h->restart) ctx_.counters.drops[int(DropReason::kForgedConnect)] += h->connects;
    half_open_.erase(half_open_.begin() + (h - half_open_.data()));
    c.half_open = false;
  }
  heap_.remove(&c);
  auto it = by_peer_.find(c.peer());
  if (it != by_peer_.end() && it->second == c.id()) by_peer_.erase(it);
  const std::uint32_t slot = c.id() & kSlotMask;
  conns_[slot].reset();
  free_slots_.push_back(slot);
}

void Engine::touch(Connection& c) {
  if (c.finished()) {
    release(c);
    return;
  }
  heap_.update(&c, c.next_deadline());
  if (!c.in_ready) {
    c.in_ready = true;
    ready_.push(c.id());
  }
}

Errc Engine::create_stream(const StreamConfig& config, StreamId* out) {
  if (config.sq_depth == 0 || config.sq_depth > kMaxQueueDepth || config.rq_depth == 0 ||
      config.rq_depth > kMaxQueueDepth || config.max_inline > 4096) {
    return Errc::kInvalidArgument;
  }
  if (config.remote_access & ~access::kAll) return Errc::kInvalidArgument;
  if (config.srq != kNoSrq && !ctx_.srq(config.srq)) return Errc::kNotFound;
  if (ctx_.streams.size() >= kMaxStreams) return Errc::kNoResources;
  const auto id = static_cast<StreamId>(ctx_.streams.size() + 1);
  ctx_.streams.push_back(std::make_unique<Stream>(id, config));
  *out = id;
  return Errc::kOk;
}

Errc Engine::connect_stream(Time now, StreamId sid, const Endpoint& peer, StreamId remote) {
  const ValidateOnReturn check(*this);
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  if (s->state != StreamState::kIdle) return Errc::kInvalidState;
  if (remote == kNoStream || remote > kMaxStreams || peer.port == 0) return Errc::kInvalidArgument;
  Connection* c = nullptr;
  if (auto it = by_peer_.find(peer); it != by_peer_.end()) c = find(it->second);
  if (c &&
      (c->finished() || c->state() == ConnState::kClosing || c->state() == ConnState::kTimeWait)) {
    c = nullptr;
  }
  if (!c) {
    c = create(now, peer);
    if (!c) return Errc::kNoResources;
    c->start_connect(now);
  }
  s->peer = peer;
  s->remote = remote;
  c->bind(now, *s);
  settle(now, *c);
  touch(*c);
  return Errc::kOk;
}

Errc Engine::destroy_stream(Time now, StreamId sid) {
  const ValidateOnReturn check(*this);
  if (datagrams_.has(sid)) {
    datagrams_.destroy(sid);
    return Errc::kOk;
  }
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  if (Connection* c = find(s->conn)) {
    c->unbind(now, *s);
    touch(*c);
  }
  if (SharedRecvQueue* q = ctx_.srq(s->config.srq)) {
    // Receives it took for messages that never completed go back, as a NIC's stay in
    // the SRQ (unless they were flushed with the stream).
    for (std::uint32_t ssn = s->rq_head; ssn != s->rq_tail && !q->full(); ++ssn) {
      q->push(s->recv(ssn));
    }
  }
  ctx_.streams[sid - 1].reset();
  return Errc::kOk;
}

Errc Engine::fail_stream(Time now, StreamId sid) {
  (void)now;
  const ValidateOnReturn check(*this);
  if (datagrams_.has(sid)) return datagrams_.fail(sid);
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  if (s->state == StreamState::kError) return Errc::kOk;
  if (Connection* c = find(s->conn)) {
    c->flush_to_error(*s);
    touch(*c);
    return Errc::kOk;
  }
  // Not bound yet: only receives can be posted (sends need a connected QP).
  for (std::uint32_t ssn = s->rq_head; ssn != s->rq_tail; ++ssn) {
    Completion c;
    c.wr_id = s->recv(ssn).wr.wr_id;
    c.stream = sid;
    c.status = WcStatus::kWrFlushErr;
    c.opcode = WcOpcode::kRecv;
    c.is_recv = true;
    ctx_.complete(c);
  }
  s->rq_head = s->rq_tail;
  s->state = StreamState::kError;
  return Errc::kOk;
}

Errc Engine::post_send(Time now, StreamId sid, const SendWr& wr) {
  const ValidateOnReturn check(*this);
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  if (!valid_opcode(wr.opcode) || wr.num_sge > kMaxSge) return Errc::kInvalidArgument;
  if (s->state == StreamState::kError) {
    Completion c;
    c.wr_id = wr.wr_id;
    c.stream = sid;
    c.status = WcStatus::kWrFlushErr;
    c.opcode = completion_opcode(wr.opcode);
    ctx_.complete(c);
    return Errc::kOk;
  }
  if (s->sq_full()) return Errc::kNoResources;
  const std::uint64_t length = sge_total(wr.sg, wr.num_sge);
  if (length > (1u << 31)) return Errc::kInvalidArgument;
  const bool atomic =
      wr.opcode == WrOpcode::kAtomicCmpSwp || wr.opcode == WrOpcode::kAtomicFetchAdd;
  const bool inbound = atomic || wr.opcode == WrOpcode::kRdmaRead;  // we write local memory
  if (atomic && (wr.num_sge != 1 || wr.sg[0].length != 8)) return Errc::kInvalidArgument;
  const bool inline_data = (wr.flags & send_flags::kInline) && !inbound;
  if (inline_data) {
    if (length > s->config.max_inline) return Errc::kInvalidArgument;
  } else if (!ctx_.memory.sges_valid(wr.sg, wr.num_sge, inbound ? access::kLocalWrite : 0)) {
    return Errc::kInvalidArgument;
  }

  const std::uint32_t msn = s->sq_tail;
  Wqe& w = s->wqe(msn);
  w.response.release(ctx_.bitmaps);
  w = Wqe{};
  w.wr = wr;
  if (!inline_data) w.wr.flags &= ~send_flags::kInline;
  w.msn = msn;
  w.length = static_cast<std::uint32_t>(length);
  w.rnr_left = s->config.rnr_retry;
  if (w.consumes_receive()) w.ssn = s->next_ssn++;
  if (inline_data && ctx_.config.carry_payload) {
    // Inline data is read from the caller's addresses now, so the buffer is free on return.
    std::uint8_t* dst = s->inline_slot(msn);
    for (int i = 0; i < wr.num_sge; ++i) {
      std::memcpy(dst, reinterpret_cast<const void*>(wr.sg[i].addr), wr.sg[i].length);
      dst += wr.sg[i].length;
    }
  }
  ++s->sq_tail;
  if (Connection* c = find(s->conn)) {
    if (inbound) c->expect_response(now);
    c->schedule_stream(*s);
    touch(*c);
  }
  return Errc::kOk;
}

Errc Engine::set_rnr_policy(StreamId sid, std::uint8_t retry, Time timer) {
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  if (retry > 7) return Errc::kInvalidArgument;
  s->config.rnr_retry = retry;
  s->config.rnr_timer = timer;
  return Errc::kOk;
}

Errc Engine::post_recv(Time now, StreamId sid, const RecvWr& wr) {
  (void)now;
  const ValidateOnReturn check(*this);
  if (datagrams_.has(sid)) return datagrams_.post_recv(sid, wr);
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  if (wr.num_sge > kMaxSge) return Errc::kInvalidArgument;
  if (s->state == StreamState::kError) {
    Completion c;
    c.wr_id = wr.wr_id;
    c.stream = sid;
    c.status = WcStatus::kWrFlushErr;
    c.opcode = WcOpcode::kRecv;
    c.is_recv = true;
    ctx_.complete(c);
    return Errc::kOk;
  }
  if (s->config.srq != kNoSrq) return Errc::kInvalidArgument;
  if (s->rq_full()) return Errc::kNoResources;
  if (!ctx_.memory.sges_valid(wr.sg, wr.num_sge, access::kLocalWrite)) {
    return Errc::kInvalidArgument;
  }
  RecvWqe& r = s->recv(s->rq_tail);
  r.wr = wr;
  r.length = sge_total(wr.sg, wr.num_sge);
  ++s->rq_tail;
  return Errc::kOk;
}

Errc Engine::create_srq(std::uint32_t depth, SrqId* out) {
  if (depth == 0 || depth > kMaxQueueDepth) return Errc::kInvalidArgument;
  if (ctx_.srqs.size() >= kMaxStreams) return Errc::kNoResources;
  ctx_.srqs.push_back(std::make_unique<SharedRecvQueue>(depth));
  *out = static_cast<SrqId>(ctx_.srqs.size());
  return Errc::kOk;
}

Errc Engine::destroy_srq(SrqId id) {
  SharedRecvQueue* q = ctx_.srq(id);
  if (!q) return Errc::kNotFound;
  // Streams still on it (a destroyed queue pair that lingers) see no receives from now.
  for (auto& st : ctx_.streams) {
    if (st && st->config.srq == id) st->config.srq = kNoSrq;
  }
  ctx_.srqs[id - 1].reset();
  return Errc::kOk;
}

Errc Engine::post_srq_recv(Time now, SrqId id, const RecvWr& wr) {
  (void)now;
  SharedRecvQueue* q = ctx_.srq(id);
  if (!q) return Errc::kNotFound;
  if (wr.num_sge > kMaxSge) return Errc::kInvalidArgument;
  if (q->full()) return Errc::kNoResources;
  if (!ctx_.memory.sges_valid(wr.sg, wr.num_sge, access::kLocalWrite)) {
    return Errc::kInvalidArgument;
  }
  q->push(RecvWqe{wr, sge_total(wr.sg, wr.num_sge)});
  return Errc::kOk;
}

Errc Engine::set_srq_limit(SrqId id, std::uint32_t limit) {
  SharedRecvQueue* q = ctx_.srq(id);
  if (!q) return Errc::kNotFound;
  if (limit > q->depth()) return Errc::kInvalidArgument;
  q->set_limit(limit);
  return Errc::kOk;
}

Errc Engine::query_srq(SrqId id, std::uint32_t* limit, std::uint32_t* count) const {
  const SharedRecvQueue* q = id && id <= ctx_.srqs.size() ? ctx_.srqs[id - 1].get() : nullptr;
  if (!q) return Errc::kNotFound;
  *limit = q->limit();
  *count = q->count();
  return Errc::kOk;
}

Errc Engine::set_remote_access(StreamId sid, std::uint32_t rights) {
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  if (rights & ~access::kAll) return Errc::kInvalidArgument;
  s->config.remote_access = rights;
  return Errc::kOk;
}

Errc Engine::create_datagram(const DatagramConfig& config, StreamId* out) {
  if (ctx_.streams.size() >= kMaxStreams) return Errc::kNoResources;
  // The number comes from the streams' space (a Verbs QPN names either), with no stream.
  const auto id = static_cast<StreamId>(ctx_.streams.size() + 1);
  const Errc e = datagrams_.create(id, config);
  if (e != Errc::kOk) return e;
  ctx_.streams.push_back(nullptr);
  *out = id;
  return Errc::kOk;
}

Errc Engine::post_datagram(Time now, StreamId qp, const SendWr& wr, const DatagramDest& dest) {
  (void)now;
  return datagrams_.post_send(qp, wr, dest);
}

Errc Engine::set_qkey(StreamId qp, std::uint32_t qkey) {
  return datagrams_.set_qkey(qp, qkey);
}

Errc Engine::quiesce_stream(StreamId sid) {
  if (datagrams_.has(sid)) return datagrams_.quiesce(sid);
  Stream* s = ctx_.stream(sid);
  if (!s) return Errc::kNotFound;
  s->quiesced = true;
  return Errc::kOk;
}

void Engine::on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) {
  const ValidateOnReturn check(*this);
  ++ctx_.counters.rx_packets;
  ctx_.counters.rx_bytes += bytes.size();
  wire::Packet& pkt = rx_;
  if (wire::decode(bytes, {ctx_.config.carry_payload}, &pkt) != wire::DecodeError::kOk) {
    ctx_.drop(DropReason::kMalformed);
    return;
  }
  if (pkt.common.type == wire::PacketType::kConnect) {
    on_connect(now, meta, pkt);
    return;
  }
  if (pkt.common.type == wire::PacketType::kDatagram) {
    datagrams_.on_packet(meta, pkt, bytes.size());
    return;
  }
  Connection* c = find(pkt.common.dst_conn);
  if (!c) {
    ctx_.drop(DropReason::kUnknownConn);
    return;
  }
  if (pkt.common.token != c->token()) {
    ctx_.drop(DropReason::kBadToken);
    return;
  }
  if (c->state() == ConnState::kTimeWait && pkt.common.type != wire::PacketType::kClose) {
    ctx_.drop(DropReason::kUnknownConn);  // closed: only a retried CLOSE is answered
    return;
  }
  const Endpoint source{meta.src, meta.src_port};
  switch (pkt.common.type) {
    case wire::PacketType::kAccept:
      if (pkt.handshake.paths > 256 ||
          bool(pkt.handshake.flags & wire::handshake_flags::kNoPayload) ==
              ctx_.config.carry_payload) {
        ctx_.drop(DropReason::kMalformed);
        return;
      }
      if (!c->answers_from_peer(pkt.handshake)) {
        ctx_.drop(DropReason::kWrongPeer);
        return;
      }
      c->heard_from(source);
      c->on_handshake(now, pkt);
      break;
    case wire::PacketType::kConfirm:
      c->on_confirm(now);
      break;
    case wire::PacketType::kClose:
      if (c->close_ack_owed()) {
        // The connection answers one CLOSE at a time; this one is answered here.
        if (refusals_count_ < refusals_.size()) {
          refusals_[refusals_count_++] =
              Refusal{source, c->peer_conn(), c->peer_token(), wire::PacketType::kCloseAck};
        }
        break;
      }
      c->heard_from(source);
      c->on_close(now, false);
      break;
    case wire::PacketType::kCloseAck:
      c->on_close(now, true);
      break;
    case wire::PacketType::kData:
    case wire::PacketType::kAck:
    case wire::PacketType::kNack:
      // Anything from the peer with our token proves our ACCEPT arrived.
      c->on_confirm(now);
      if (!c->established()) {
        ctx_.drop(DropReason::kUnknownConn);
        return;
      }
      if (pkt.common.type == wire::PacketType::kData) {
        c->on_data(now, meta, pkt);
      } else if (pkt.common.type == wire::PacketType::kAck) {
        c->on_ack(now, pkt);
      } else {
        c->on_nack(now, pkt);
      }
      break;
    case wire::PacketType::kConnect:
    case wire::PacketType::kDatagram:
      break;  // handled above
  }
  settle(now, *c);
  touch(*c);
}

bool Engine::is_local(const Endpoint& e) const {
  if (e.port != ctx_.config.listen_port) return false;
  for (const Address& a : ctx_.config.planes) {
    if (a == e.addr) return true;
  }
  return false;
}

void Engine::on_connect(Time now, const RxMeta& meta, const wire::Packet& pkt) {
  const wire::HandshakeHeader& hs = pkt.handshake;
  if (hs.paths > 256) {
    ctx_.drop(DropReason::kMalformed);
    return;
  }
  if (bool(hs.flags & wire::handshake_flags::kNoPayload) == ctx_.config.carry_payload) {
    // The other mode can never connect to us: say so at once, or its initiator retries
    // for the whole set-up timeout. One small CLOSE to the source, and no state.
    ctx_.drop(DropReason::kMalformed);
    if (refusals_count_ < refusals_.size()) {
      refusals_[refusals_count_++] = Refusal{{meta.src, meta.src_port}, hs.src_conn, hs.src_token};
    }
    return;
  }
  Endpoint peer;
  peer.addr.bytes = hs.addresses[0];
  peer.port = hs.listen_port;
  Connection* c = nullptr;
  if (auto it = by_peer_.find(peer); it != by_peer_.end()) c = find(it->second);
  if (c && c->peer_conn() != 0 && !c->matches_peer_incarnation(hs)) {
    if (c->established()) {
      // The peer restarted, or someone claims to be it: the live connection goes on
      // until the new incarnation proves it receives at the peer's address.
      on_restart_connect(now, meta, pkt, peer);
      return;
    }
    // A set-up not yet complete has nothing to keep: the latest incarnation takes over.
    Connection& old = *c;
    old.on_close(now, false);
    release(old);
    c = nullptr;
  }
  if (c && (c->finished() || c->state() == ConnState::kTimeWait)) c = nullptr;
  if (!c && is_local(peer)) {
    // Our own CONNECT sent back to us, while we open no connection to ourselves:
    // answering it would.
    ctx_.drop(DropReason::kWrongPeer);
    return;
  }
  if (!c) {
    if (!ctx_.config.accept_incoming) {
      ctx_.drop(DropReason::kUnknownConn);
      return;
    }
    c = open_half(now, peer, false);
    if (!c) {
      ctx_.drop(DropReason::kNoResources);
      return;
    }
  }
  if (c->half_open) {
    // Until the peer is proven, its answer goes where the CONNECT came from, so that a
    // CONNECT naming a third party reflects nothing towards it.
    c->answer_at(Endpoint{meta.src, meta.src_port});
    ++half_open_entry(c->id())->connects;
  }
  c->heard_from(Endpoint{meta.src, meta.src_port});
  c->on_handshake(now, pkt);
  touch(*c);
}

void Engine::on_restart_connect(Time now, const RxMeta& meta, const wire::Packet& pkt,
                                const Endpoint& peer) {
  // The proof is our ACCEPT coming back confirmed, and the ACCEPT goes to the datagram's
  // source: only a CONNECT from the address it claims can prove that address.
  if (meta.src != peer.addr) {
    ctx_.drop(DropReason::kForgedConnect);
    return;
  }
  Connection* c = nullptr;
  for (const HalfOpen& h : half_open_) {
    Connection* x = find(h.id);
    if (h.restart && x->peer() == peer) {
      c = x;
      break;
    }
  }
  if (c && !c->matches_peer_incarnation(pkt.handshake)) {
    release(*c);  // one candidate per peer: the latest
    c = nullptr;
  }
  if (!c) c = open_half(now, peer, true);
  if (!c) {
    ctx_.drop(DropReason::kNoResources);
    return;
  }
  c->answer_at(Endpoint{meta.src, meta.src_port});
  c->heard_from(Endpoint{meta.src, meta.src_port});
  ++half_open_entry(c->id())->connects;
  c->on_handshake(now, pkt);
  touch(*c);
}

Connection* Engine::open_half(Time now, const Endpoint& peer, bool restart) {
  if (half_open_.size() >= kMaxHalfOpen) {
    // Oldest first: a genuine peer answers within a round trip, long before a flood
    // of kMaxHalfOpen CONNECTs has pushed its set-up out.
    if (!half_open_.front().restart) ctx_.drop(DropReason::kSetupEvicted);
    release(*find(half_open_.front().id));
  }
  Connection* c = create(now, peer, !restart);
  if (!c) return nullptr;
  c->half_open = true;
  half_open_.push_back(HalfOpen{c->id(), 0, restart});
  return c;
}

Engine::HalfOpen* Engine::half_open_entry(ConnId id) {
  for (HalfOpen& h : half_open_) {
    if (h.id == id) return &h;
  }
  return nullptr;
}

void Engine::settle(Time now, Connection& c) {
  if (!c.half_open || c.finished() || (!c.established() && !c.has_streams())) return;
  HalfOpen* h = half_open_entry(c.id());
  const bool restart = h->restart;
  half_open_.erase(half_open_.begin() + (h - half_open_.data()));
  c.half_open = false;
  if (!restart) return;
  // The new incarnation received our ACCEPT at the peer's address: the peer did
  // restart, and what we had with its former incarnation cannot go on.
  if (auto it = by_peer_.find(c.peer()); it != by_peer_.end()) {
    if (Connection* old = find(it->second)) {
      old->on_close(now, false);
      release(*old);
    }
  }
  by_peer_[c.peer()] = c.id();
}

bool Engine::emit_refusal(std::span<std::uint8_t> buf, TxMeta* out) {
  if (refusals_count_ == 0) return false;
  const Refusal r = refusals_[--refusals_count_];
  wire::CommonHeader c;
  c.type = r.type;
  c.dst_conn = r.conn;
  c.token = r.token;
  const std::size_t len = wire::encode_bare(c, buf);
  if (len == 0) return false;
  out->src = ctx_.config.planes[0];
  out->dst = r.to.addr;
  out->src_port = ctx_.config.src_port_base;
  out->dst_port = r.to.port;
  out->plane = 0;
  out->ecn = Ecn::kNotEct;
  out->cls = PacketClass::kControl;
  out->length = out->wire_length = static_cast<std::uint32_t>(len);
  ++ctx_.counters.tx_packets;
  ctx_.counters.tx_bytes += len;
  return true;
}

bool Engine::poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  const ValidateOnReturn check(*this);
  out->payload = nullptr;  // only DATA packets reference payload
  out->payload_length = 0;
  if (emit_refusal(buf, out)) return true;
  if (datagrams_.poll_transmit(buf, out)) return true;
  for (std::size_t n = ready_.size(); n > 0; --n) {
    const ConnId id = ready_.front();
    ready_.pop();
    Connection* c = find(id);
    if (!c) continue;
    if (c->poll_transmit(now, buf, out)) {
      ready_.push(id);  // round robin: one packet per turn
      if (out->cls != PacketClass::kData) {
        ++ctx_.counters.tx_packets;
        ctx_.counters.tx_bytes += out->wire_length;
      }
      if (c->finished()) {
        c->in_ready = false;
        release(*c);
      } else {
        heap_.update(c, c->next_deadline());
      }
      return true;
    }
    c->in_ready = false;
    if (c->finished()) {
      release(*c);
    } else {
      heap_.update(c, c->next_deadline());
    }
  }
  return false;
}

bool Engine::set_blocked_planes(std::uint8_t mask) {
  const ValidateOnReturn check(*this);
  const bool freed = (ctx_.blocked_planes & ~mask) != 0;
  ctx_.blocked_planes = mask;
  if (freed) {
    for (const ConnId id : ctx_.waiting_for_planes) {
      Connection* c = find(id);
      if (!c) continue;
      c->waiting_for_planes = false;
      touch(*c);
    }
    ctx_.waiting_for_planes.clear();
  }
  return true;
}

void Engine::on_timer(Time now) {
  const ValidateOnReturn check(*this);
  expired_.clear();
  while (!heap_.empty() && heap_.top_key() <= now) {
    Connection* c = heap_.top();
    heap_.remove(c);
    expired_.push_back(c);
  }
  for (Connection* c : expired_) {
    c->on_timer(now);
    touch(*c);
  }
}

StreamState Engine::stream_state(StreamId sid) const {
  if (datagrams_.has(sid)) return datagrams_.state(sid);
  const Stream* s = const_cast<EngineContext&>(ctx_).stream(sid);
  return s ? s->state : StreamState::kDestroyed;
}

ConnId Engine::stream_connection(StreamId sid) const {
  const Stream* s = const_cast<EngineContext&>(ctx_).stream(sid);
  return s && find(s->conn) ? s->conn : 0;
}

bool Engine::connection_stats(ConnId conn, ConnStats* out) const {
  const Connection* c = find(conn);
  if (!c) return false;
  c->stats(out);
  return true;
}

bool Engine::path_stats(ConnId conn, std::uint16_t path, PathStats* out) const {
  const Connection* c = find(conn);
  return c && c->path_stats(path, out);
}

void Engine::for_each_connection(const std::function<void(ConnId)>& fn) const {
  for (const auto& c : conns_) {
    if (c) fn(c->id());
  }
}

}  // namespace mroce
