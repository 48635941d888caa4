#include "rdmacm/wire.h"

#include <cstring>

namespace mroce::rdmacm {
namespace {

constexpr std::uint8_t kMagic[4] = {'M', 'R', 'C', 'M'};
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kEndpointSize = 16 + 4 + 4 + 4 + 2 + 6;  // then the private length

void put16(std::vector<std::uint8_t>* o, std::uint16_t v) {
  o->push_back(static_cast<std::uint8_t>(v >> 8));
  o->push_back(static_cast<std::uint8_t>(v));
}
void put32(std::vector<std::uint8_t>* o, std::uint32_t v) {
  put16(o, static_cast<std::uint16_t>(v >> 16));
  put16(o, static_cast<std::uint16_t>(v));
}
std::uint16_t get16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}
std::uint32_t get32(const std::uint8_t* p) {
  return std::uint32_t{get16(p)} << 16 | get16(p + 2);
}

bool has_endpoint(MsgType t) {
  return t == MsgType::kReq || t == MsgType::kRep;
}

}  // namespace

std::size_t private_limit(MsgType type) {
  switch (type) {
    case MsgType::kReq:
      return kMaxReqPrivate;
    case MsgType::kRep:
      return kMaxRepPrivate;
    case MsgType::kRej:
      return kMaxRejPrivate;
    default:
      return 0;
  }
}

bool encode(const Message& m, std::vector<std::uint8_t>* out) {
  if (m.private_data.size() > private_limit(m.type)) return false;
  std::vector<std::uint8_t> body;
  if (has_endpoint(m.type)) {
    const Endpoint& e = m.ep;
    body.insert(body.end(), e.gid.begin(), e.gid.end());
    put32(&body, e.qpn & 0xffffff);
    put32(&body, e.psn & 0xffffff);
    put32(&body, e.qkey);
    put16(&body, e.port_space);
    for (std::uint8_t b : {e.responder_resources, e.initiator_depth, e.flow_control, e.retry_count,
                           e.rnr_retry_count, e.srq}) {
      body.push_back(b);
    }
  } else if (m.type == MsgType::kRej) {
    put16(&body, m.reason);
  }
  if (private_limit(m.type) > 0) {
    body.push_back(static_cast<std::uint8_t>(m.private_data.size()));
    body.insert(body.end(), m.private_data.begin(), m.private_data.end());
  }
  out->insert(out->end(), kMagic, kMagic + 4);
  out->push_back(kVersion);
  out->push_back(static_cast<std::uint8_t>(m.type));
  put16(out, static_cast<std::uint16_t>(body.size()));
  out->insert(out->end(), body.begin(), body.end());
  return true;
}

DecodeResult decode(std::span<const std::uint8_t> in, Message* out, std::size_t* used) {
  if (in.size() < kHeaderSize) {
    // A wrong magic is malformed as soon as it shows.
    return in.empty() || std::memcmp(in.data(), kMagic, in.size() < 4 ? in.size() : 4) == 0
               ? DecodeResult::kNeedMore
               : DecodeResult::kMalformed;
  }
  if (std::memcmp(in.data(), kMagic, 4) != 0 || in[4] != kVersion) return DecodeResult::kMalformed;
  const auto type = static_cast<MsgType>(in[5]);
  if (in[5] < 1 || in[5] > 6) return DecodeResult::kMalformed;
  const std::size_t length = get16(&in[6]);
  if (length > kMaxBody) return DecodeResult::kMalformed;
  if (in.size() < kHeaderSize + length) return DecodeResult::kNeedMore;
  const std::uint8_t* p = in.data() + kHeaderSize;
  std::size_t fixed = 0;
  if (has_endpoint(type)) fixed = kEndpointSize;
  if (type == MsgType::kRej) fixed = 2;
  const std::size_t limit = private_limit(type);
  if (limit == 0) {
    if (length != 0) return DecodeResult::kMalformed;
  } else if (length < fixed + 1 || length != fixed + 1 + p[fixed] || p[fixed] > limit) {
    return DecodeResult::kMalformed;
  }
  Message m;
  m.type = type;
  if (has_endpoint(type)) {
    Endpoint& e = m.ep;
    std::memcpy(e.gid.data(), p, 16);
    e.qpn = get32(p + 16);
    e.psn = get32(p + 20);
    e.qkey = get32(p + 24);
    e.port_space = get16(p + 28);
    e.responder_resources = p[30];
    e.initiator_depth = p[31];
    e.flow_control = p[32];
    e.retry_count = p[33];
    e.rnr_retry_count = p[34];
    e.srq = p[35];
    if (e.qpn > 0xffffff || e.psn > 0xffffff) return DecodeResult::kMalformed;
  } else if (type == MsgType::kRej) {
    m.reason = get16(p);
  }
  if (limit > 0) m.private_data.assign(p + fixed + 1, p + length);
  *out = std::move(m);
  *used = kHeaderSize + length;
  return DecodeResult::kOk;
}

}  // namespace mroce::rdmacm
