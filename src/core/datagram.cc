#include "core/datagram.h"

#include <cstring>

#include "wire/datagram.h"

namespace mroce {

namespace {

constexpr std::uint32_t kMaxDepth = 1 << 16;
constexpr std::uint32_t kMaxInline = 4096;
constexpr std::uint8_t kTtl = 64;
constexpr std::uint8_t kUdp = 17;
constexpr std::uint32_t kIpv4Header = 20;
constexpr std::uint32_t kUdpHeader = 8;

std::uint32_t sge_sum(const Sge* sg, int n) {
  std::uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += sg[i].length;
  return total > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(total);
}

void put16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

}  // namespace

void write_grh(const Address& src, const Address& dst, std::uint32_t udp_payload,
               std::uint8_t* out) {
  std::memset(out, 0, kGrhSize);
  if (src.is_ipv4() && dst.is_ipv4()) {
    std::uint8_t* ip = out + kGrhSize - kIpv4Header;
    ip[0] = 0x45;  // version 4, 5 words
    put16(ip + 2, static_cast<std::uint16_t>(kIpv4Header + kUdpHeader + udp_payload));
    put16(ip + 6, 0x4000);  // don't fragment
    ip[8] = kTtl;
    ip[9] = kUdp;
    std::memcpy(ip + 12, src.bytes.data() + 12, 4);
    std::memcpy(ip + 16, dst.bytes.data() + 12, 4);
    std::uint32_t sum = 0;
    for (std::uint32_t i = 0; i < kIpv4Header; i += 2) sum += std::uint32_t{ip[i]} << 8 | ip[i + 1];
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    put16(ip + 10, static_cast<std::uint16_t>(~sum));
    return;
  }
  out[0] = 0x60;  // IP version 6, traffic class 0, flow label 0
  put16(out + 4, static_cast<std::uint16_t>(kUdpHeader + udp_payload));
  out[6] = kUdp;
  out[7] = kTtl;
  std::memcpy(out + 8, src.bytes.data(), 16);
  std::memcpy(out + 24, dst.bytes.data(), 16);
}

DatagramTable::Qp* DatagramTable::find(StreamId id) {
  auto it = qps_.find(id);
  return it == qps_.end() ? nullptr : it->second.get();
}

Errc DatagramTable::create(StreamId id, const DatagramConfig& config) {
  if (config.sq_depth == 0 || config.sq_depth > kMaxDepth || config.rq_depth == 0 ||
      config.rq_depth > kMaxDepth || config.max_inline > kMaxInline) {
    return Errc::kInvalidArgument;
  }
  auto q = std::make_unique<Qp>();
  q->config = config;
  q->recvs.reserve(config.rq_depth);
  q->inline_bytes.resize(std::size_t{config.sq_depth} * config.max_inline);
  std::size_t total = 0;
  for (const auto& [other, qp] : qps_) total += qp->config.sq_depth;
  pending_.reserve(total + config.sq_depth);
  qps_.emplace(id, std::move(q));
  return Errc::kOk;
}

void DatagramTable::destroy(StreamId id) {
  qps_.erase(id);  // its pending sends are skipped when they come up
}

Errc DatagramTable::set_qkey(StreamId id, std::uint32_t qkey) {
  Qp* q = find(id);
  if (!q) return Errc::kNotFound;
  q->config.qkey = qkey;
  return Errc::kOk;
}

StreamState DatagramTable::state(StreamId id) const {
  auto it = qps_.find(id);
  return it == qps_.end() ? StreamState::kDestroyed : it->second->state;
}

void DatagramTable::complete(StreamId id, const SendWr& wr, WcStatus status, std::uint32_t length) {
  if (status == WcStatus::kSuccess && !(wr.flags & send_flags::kSignaled)) return;
  Completion c;
  c.wr_id = wr.wr_id;
  c.stream = id;
  c.status = status;
  c.opcode = WcOpcode::kSend;
  c.byte_len = length;
  ctx_.complete(c);
}

void DatagramTable::complete_recv(StreamId id, const RecvWr& wr, WcStatus status) {
  Completion c;
  c.wr_id = wr.wr_id;
  c.stream = id;
  c.status = status;
  c.opcode = WcOpcode::kRecv;
  c.is_recv = true;
  ctx_.complete(c);
}

Errc DatagramTable::post_send(StreamId id, const SendWr& wr, const DatagramDest& dest) {
  Qp* q = find(id);
  if (!q) return Errc::kNotFound;
  if (q->quiesced) return Errc::kInvalidState;
  if (wr.opcode != WrOpcode::kSend && wr.opcode != WrOpcode::kSendWithImm) {
    return Errc::kInvalidArgument;
  }
  if (wr.num_sge > kMaxSge || dest.remote == kNoStream || dest.remote > wire::kMaxDatagramQp ||
      dest.peer.port == 0 || dest.plane >= ctx_.config.planes.size()) {
    return Errc::kInvalidArgument;
  }
  const std::uint32_t length = sge_sum(wr.sg, wr.num_sge);
  if (length > ctx_.config.mss) return Errc::kInvalidArgument;
  const bool inline_data = wr.flags & send_flags::kInline;
  if (inline_data ? length > q->config.max_inline : !ctx_.memory.sges_valid(wr.sg, wr.num_sge, 0)) {
    return Errc::kInvalidArgument;
  }
  if (q->queued >= q->config.sq_depth) return Errc::kNoResources;
  Pending p;
  p.qp = id;
  p.length = length;
  p.wr = wr;
  p.dest = dest;
  if (inline_data) {
    p.slot = q->next_slot;
    q->next_slot = (q->next_slot + 1) % q->config.sq_depth;
    std::uint8_t* to = q->inline_bytes.data() + std::size_t{p.slot} * q->config.max_inline;
    for (int i = 0; i < wr.num_sge; ++i) {
      std::memcpy(to, reinterpret_cast<const void*>(wr.sg[i].addr), wr.sg[i].length);
      to += wr.sg[i].length;
    }
  }
  ++q->queued;
  pending_.push(p);
  return Errc::kOk;
}

Errc DatagramTable::post_recv(StreamId id, const RecvWr& wr) {
  Qp* q = find(id);
  if (!q) return Errc::kNotFound;
  if (wr.num_sge > kMaxSge) return Errc::kInvalidArgument;
  if (q->state == StreamState::kError) {
    complete_recv(id, wr, WcStatus::kWrFlushErr);
    return Errc::kOk;
  }
  if (q->recvs.size() >= q->config.rq_depth) return Errc::kNoResources;
  if (!ctx_.memory.sges_valid(wr.sg, wr.num_sge, access::kLocalWrite)) {
    return Errc::kInvalidArgument;
  }
  q->recvs.push(wr);
  return Errc::kOk;
}

Errc DatagramTable::fail(StreamId id) {
  Qp* q = find(id);
  if (!q) return Errc::kNotFound;
  if (q->state == StreamState::kError) return Errc::kOk;
  q->state = StreamState::kError;
  while (!q->recvs.empty()) {
    const RecvWr wr = q->recvs.front();
    q->recvs.pop();
    complete_recv(id, wr, WcStatus::kWrFlushErr);
  }
  return Errc::kOk;  // its unsent sends are flushed as they come up
}

Errc DatagramTable::quiesce(StreamId id) {
  Qp* q = find(id);
  if (!q) return Errc::kNotFound;
  q->quiesced = true;
  return Errc::kOk;
}

void DatagramTable::on_packet(const RxMeta& meta, const wire::Packet& pkt, std::size_t size) {
  const wire::DatagramHeader& d = pkt.datagram;
  Qp* q = find(d.dst_qp);
  if (!q || q->quiesced || q->state == StreamState::kError) {
    ctx_.drop(DropReason::kBadStream);
    return;
  }
  if (d.qkey != q->config.qkey) {
    ctx_.drop(DropReason::kBadQkey);
    return;
  }
  if (q->recvs.empty()) {
    ctx_.drop(DropReason::kReceiverNotReady);
    return;
  }
  const RecvWr wr = q->recvs.front();
  q->recvs.pop();
  const std::uint32_t length = kGrhSize + d.payload_length;
  if (sge_sum(wr.sg, wr.num_sge) < length) {
    ctx_.drop(DropReason::kInvalidRequest);
    complete_recv(d.dst_qp, wr, WcStatus::kLocLenErr);
    return;
  }
  std::uint8_t grh[kGrhSize];
  write_grh(meta.src, meta.dst, static_cast<std::uint32_t>(size), grh);
  if (!ctx_.memory.scatter(wr.sg, wr.num_sge, 0, grh, kGrhSize) ||
      !ctx_.memory.scatter(wr.sg, wr.num_sge, kGrhSize, pkt.payload.data(), d.payload_length)) {
    complete_recv(d.dst_qp, wr, WcStatus::kLocProtErr);
    return;
  }
  Completion c;
  c.wr_id = wr.wr_id;
  c.stream = d.dst_qp;
  c.opcode = WcOpcode::kRecv;
  c.is_recv = true;
  c.byte_len = length;
  c.has_imm = d.op == wire::DatagramOp::kSendImm;
  c.imm = d.imm;
  c.src = Endpoint{meta.src, meta.src_port};
  c.src_stream = d.src_qp;
  ctx_.complete(c);
}

bool DatagramTable::poll_transmit(std::span<std::uint8_t> buf, TxMeta* out) {
  while (!pending_.empty()) {
    const Pending p = pending_.front();
    pending_.pop();
    Qp* q = find(p.qp);
    if (!q) continue;
    --q->queued;
    if (q->state == StreamState::kError) {
      complete(p.qp, p.wr, WcStatus::kWrFlushErr, 0);
      continue;
    }
    wire::DatagramHeader h;
    h.dst_qp = p.dest.remote;
    h.src_qp = p.qp;
    h.qkey = p.dest.qkey;
    h.op = p.wr.opcode == WrOpcode::kSendWithImm ? wire::DatagramOp::kSendImm
                                                 : wire::DatagramOp::kSend;
    h.flags = (p.wr.flags & send_flags::kSolicited) ? wire::datagram_flags::kSolicited : 0;
    h.payload_length = static_cast<std::uint16_t>(p.length);
    h.imm = h.op == wire::DatagramOp::kSendImm ? p.wr.imm : 0;
    const std::size_t header = wire::encode_datagram(h, buf);
    if (header == 0 || buf.size() < header + p.length) {
      complete(p.qp, p.wr, WcStatus::kLocLenErr, 0);
      continue;
    }
    std::uint8_t* payload = buf.data() + header;
    if (p.wr.flags & send_flags::kInline) {
      std::memcpy(payload, q->inline_bytes.data() + std::size_t{p.slot} * q->config.max_inline,
                  p.length);
    } else if (!ctx_.memory.gather(p.wr.sg, p.wr.num_sge, 0, payload, p.length)) {
      complete(p.qp, p.wr, WcStatus::kLocProtErr, 0);
      continue;
    }
    out->src = ctx_.config.planes[p.dest.plane];
    out->dst = p.dest.peer.addr;
    out->src_port = ctx_.config.listen_port;
    out->dst_port = p.dest.peer.port;
    out->plane = p.dest.plane;
    out->ecn = Ecn::kNotEct;
    out->length = static_cast<std::uint32_t>(header + p.length);
    out->wire_length = out->length;
    out->cls = PacketClass::kControl;
    ++ctx_.counters.tx_packets;
    ctx_.counters.tx_bytes += out->length;
    complete(p.qp, p.wr, WcStatus::kSuccess, p.length);
    return true;
  }
  return false;
}

}  // namespace mroce
