#include "baseline/queue_pair.h"

#include <algorithm>
#include <limits>

namespace mroce::baseline {

QueuePair::QueuePair(const EngineContext& ctx, StreamId qpn, const StreamConfig& config,
                     std::uint8_t plane)
    : ctx_(ctx),
      qpn_(qpn),
      plane_(plane),
      requester_(*this, config),
      responder_(*this, config),
      rate_(ctx.config.dcqcn, ctx.port_rate_bps) {}

void QueuePair::connect(Time now, const Endpoint& peer, StreamId remote, std::uint16_t src_port,
                        std::uint32_t send_psn, std::uint32_t receive_psn) {
  peer_ = peer;
  remote_qpn_ = remote;
  src_port_ = src_port;
  requester_.start(send_psn);
  responder_.start(receive_psn);
  state_ = StreamState::kReady;
  ctx_.event(Event{EventKind::kConnEstablished, now, qpn_, peer_, 0, plane_});
}

Errc QueuePair::post_send(Time now, const SendWr& wr) {
  if (state_ != StreamState::kIdle && state_ != StreamState::kReady) return Errc::kInvalidState;
  return requester_.post(now, wr);
}

Errc QueuePair::post_recv(Time, const RecvWr& wr) {
  if (state_ != StreamState::kIdle && state_ != StreamState::kReady) return Errc::kInvalidState;
  return responder_.post(wr);
}

void QueuePair::on_packet(Time now, const RxMeta& meta, const Packet& p) {
  if (state_ != StreamState::kReady) {
    ctx_.drop(DropReason::kBadStream);
    return;
  }
  const DcqcnConfig& dcqcn = ctx_.config.dcqcn;
  // Notification point: at most one CNP per interval, however many marks arrive.
  if (meta.ecn == Ecn::kCe && dcqcn.enabled && now >= next_cnp_) {
    cnp_pending_ = true;
    next_cnp_ = now + dcqcn.cnp_interval;
  }
  const OpKind kind = opcode_info(static_cast<std::uint8_t>(p.bth.opcode)).kind;
  if (kind == OpKind::kCnp) {
    if (dcqcn.enabled) rate_.on_cnp(now);
  } else if (is_request(kind)) {
    responder_.on_request(now, p);
  } else {
    requester_.on_response(now, p);
  }
}

void QueuePair::on_timer(Time now) {
  if (state_ == StreamState::kReady) requester_.on_timer(now);
}

void QueuePair::fail(Time now) {
  if (state_ == StreamState::kError) return;
  state_ = StreamState::kError;  // first: the sink may try to post while we flush
  requester_.flush();
  responder_.flush();
  cnp_pending_ = false;
  ctx_.event(Event{EventKind::kConnFailed, now, qpn_, peer_, 0, plane_});
}

std::size_t QueuePair::write_control(Time, std::span<std::uint8_t> buf, TxMeta* out) {
  std::size_t length;
  bool retransmit = false;
  if (cnp_pending_) {
    cnp_pending_ = false;
    Packet p;
    p.bth.opcode = Opcode::kCnp;
    length = assemble(p, buf, PacketClass::kControl, out, [](std::span<std::uint8_t>) {});
  } else {
    length = responder_.write(buf, out, &retransmit);
  }
  if (length > 0) account(*out, retransmit);
  return length;
}

std::size_t QueuePair::write_data(Time now, std::span<std::uint8_t> buf, TxMeta* out) {
  const bool answers = responder_.has_data();
  const bool requests = requester_.can_send();
  bool retransmit = false;
  std::size_t length;
  if (answers && (!requests || serve_responder_)) {
    length = responder_.write(buf, out, &retransmit);
  } else {
    length = requester_.write(now, buf, out, &retransmit);
  }
  if (answers && requests) serve_responder_ = !serve_responder_;
  if (length == 0) return 0;
  const RoceConfig& cfg = ctx_.config;
  const std::uint64_t bytes = std::uint64_t{out->wire_length} + cfg.frame_overhead;
  const std::uint64_t rate = cfg.dcqcn.enabled ? rate_.rate(now) : ctx_.port_rate_bps;
  pacer_.on_sent(now, bytes, rate);
  if (cfg.dcqcn.enabled) rate_.on_sent(now, bytes);
  tx_data_bytes_ += last_payload_;
  account(*out, retransmit);
  return length;
}

void QueuePair::account(const TxMeta& meta, bool retransmit) {
  Counters& c = ctx_.counters;
  ++c.tx_packets;
  c.tx_bytes += meta.wire_length;
  ++tx_packets_;
  tx_bytes_ += meta.wire_length;
  if (meta.cls == PacketClass::kData) ++c.tx_data_packets;
  if (retransmit) {
    ++c.tx_retransmits;
    ++retransmits_;
  }
}

void QueuePair::fill_stats(ConnStats* out) const {
  ConnStats s;
  switch (state_) {
    case StreamState::kIdle:
      s.state = ConnState::kConnecting;
      break;
    case StreamState::kReady:
      s.state = ConnState::kEstablished;
      break;
    case StreamState::kError:
      s.state = ConnState::kFailed;
      break;
    case StreamState::kConnecting:
    case StreamState::kDestroyed:
      s.state = ConnState::kClosed;
      break;
  }
  s.peer = peer_;
  s.paths = 1;
  s.planes = 1;
  s.streams = 1;
  s.tx_data_bytes = tx_data_bytes_;
  s.rx_data_bytes = rx_data_bytes_;
  s.retransmits = retransmits_;
  s.path_failures = state_ == StreamState::kError ? 1 : 0;
  s.pacing_rate_bps = ctx_.config.dcqcn.enabled ? rate_.current_bps() : ctx_.port_rate_bps;
  const double window = double(s.pacing_rate_bps) * double(requester_.srtt()) / 8e9;
  s.cwnd_bytes = std::uint32_t(std::min<double>(window, std::numeric_limits<std::uint32_t>::max()));
  *out = s;
}

void QueuePair::fill_path_stats(PathStats* out) const {
  ConnStats conn;
  fill_stats(&conn);
  PathStats s;
  s.state = state_ == StreamState::kError ? PathState::kFailed : PathState::kActive;
  s.plane = plane_;
  s.src_port = src_port_;
  s.tx_packets = tx_packets_;
  s.tx_bytes = tx_bytes_;
  s.retransmits = retransmits_;
  s.acked_packets = requester_.acked_packets();
  s.lost_packets = requester_.loss_events();
  s.ce_packets = rate_.cnps();
  s.timeouts = requester_.timeouts();
  s.cwnd_bytes = conn.cwnd_bytes;
  const std::uint64_t inflight = std::uint64_t{requester_.outstanding_packets()} * ctx_.config.mtu;
  s.inflight_bytes = std::uint32_t(std::min<std::uint64_t>(inflight, ~std::uint32_t{0}));
  s.srtt = requester_.srtt();
  s.min_rtt = requester_.min_rtt();
  *out = s;
}

}  // namespace mroce::baseline
