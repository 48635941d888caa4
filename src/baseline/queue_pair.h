// One RC queue pair: one stream, one connection, one path. It joins a requester (our
// requests and their recovery), a responder (the peer's requests), the DCQCN notification
// and reaction points, and the pacer that spaces its data at the DCQCN rate.
#pragma once

#include <cstdint>
#include <span>

#include "baseline/codec.h"
#include "baseline/context.h"
#include "baseline/dcqcn.h"
#include "baseline/icrc.h"
#include "baseline/pacer.h"
#include "baseline/requester.h"
#include "baseline/responder.h"

namespace mroce::baseline {

class QueuePair {
 public:
  QueuePair(const EngineContext& ctx, StreamId qpn, const StreamConfig& config, std::uint8_t plane);

  StreamId qpn() const { return qpn_; }
  StreamId remote_qpn() const { return remote_qpn_; }
  StreamState state() const { return state_; }
  std::uint8_t plane() const { return plane_; }
  void set_plane(std::uint8_t plane) { plane_ = plane; }
  std::uint16_t src_port() const { return src_port_; }
  const Endpoint& peer() const { return peer_; }
  const EngineContext& ctx() const { return ctx_; }

  // RoCE has no handshake: the QP is ready to send and receive at once.
  void connect(Time now, const Endpoint& peer, StreamId remote, std::uint16_t src_port,
               std::uint32_t send_psn, std::uint32_t receive_psn);
  Errc post_send(Time now, const SendWr& wr);
  Errc post_recv(Time now, const RecvWr& wr);
  void on_packet(Time now, const RxMeta& meta, const Packet& p);
  void on_timer(Time now);
  // Moves to the error state: every outstanding work request completes with kWrFlushErr.
  void fail(Time now);

  // Acknowledgements, NAKs, atomic responses and CNPs: sent at once.
  bool has_control() const { return cnp_pending_ || responder_.has_control(); }
  // Requests and READ responses: paced.
  bool has_data() const {
    return state_ == StreamState::kReady && (responder_.has_data() || requester_.can_send());
  }
  Time pace_time() const { return pacer_.next(); }
  Time timer_deadline() const { return requester_.deadline(); }
  std::size_t write_control(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  std::size_t write_data(Time now, std::span<std::uint8_t> buf, TxMeta* out);

  // Finishes packet `p` into `buf` (headers, payload from fill(span) when carried, pad,
  // ICRC) and describes it in *out.
  template <typename Fill>
  std::size_t assemble(Packet& p, std::span<std::uint8_t> buf, PacketClass cls, TxMeta* out,
                       Fill&& fill);
  void note_rx_data(std::uint64_t bytes) { rx_data_bytes_ += bytes; }

  void fill_stats(ConnStats* out) const;
  void fill_path_stats(PathStats* out) const;

  // Marks kept by the engine's scheduler.
  bool queued_control = false;
  bool queued_data = false;

 private:
  void account(const TxMeta& meta, bool retransmit);

  EngineContext ctx_;
  StreamId qpn_;
  StreamId remote_qpn_ = 0;
  Endpoint peer_;
  std::uint8_t plane_;
  std::uint16_t src_port_ = 0;
  StreamState state_ = StreamState::kIdle;

  Requester requester_;
  Responder responder_;
  DcqcnRate rate_;
  Pacer pacer_;
  bool serve_responder_ = false;  // alternates data between READ responses and requests
  std::uint32_t last_payload_ = 0;

  bool cnp_pending_ = false;
  Time next_cnp_ = 0;

  std::uint64_t tx_packets_ = 0;
  std::uint64_t tx_bytes_ = 0;
  std::uint64_t tx_data_bytes_ = 0;
  std::uint64_t rx_data_bytes_ = 0;
  std::uint64_t retransmits_ = 0;
};

template <typename Fill>
std::size_t QueuePair::assemble(Packet& p, std::span<std::uint8_t> buf, PacketClass cls,
                                TxMeta* out, Fill&& fill) {
  const RoceConfig& cfg = ctx_.config;
  p.bth.dest_qp = remote_qpn_;
  p.bth.pkey = cfg.pkey;
  const std::size_t at = write_headers(p, buf);
  if (at == 0) return 0;
  if (cfg.carry_payload && p.payload_length > 0) fill(buf.subspan(at, p.payload_length));
  std::uint32_t wire = 0;
  const std::size_t length = finish(p, cfg.carry_payload, buf, &wire);
  if (length == 0) return 0;
  last_payload_ = p.payload_length;
  out->src = plane_ < cfg.planes.size() ? cfg.planes[plane_] : Address{};
  out->dst = peer_.addr;
  out->src_port = src_port_;
  out->dst_port = peer_.port;
  out->plane = plane_;
  out->ecn = cls == PacketClass::kData ? Ecn::kEct0 : Ecn::kNotEct;
  out->length = std::uint32_t(length);
  out->wire_length = wire;
  out->cls = cls;
  if (cfg.carry_payload && cfg.icrc) stamp_icrc(*out, buf.first(length));
  return length;
}

}  // namespace mroce::baseline
