// libFuzzer target: the MetaRoCE decoder on arbitrary bytes, in both payload modes.
// Whatever decodes must encode back to exactly the same bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire/codec.h"

using namespace mroce::wire;

namespace {

std::size_t reencode(const Packet& p, std::vector<std::uint8_t>& out) {
  switch (p.common.type) {
    case PacketType::kData: {
      std::size_t n = encode_data(p.common, p.data, out);
      std::memcpy(out.data() + n, p.payload.data(), p.payload.size());
      return n + p.payload.size();
    }
    case PacketType::kAck:
      return encode_ack(p.common, p.ack, out);
    case PacketType::kNack:
      return encode_nack(p.common, p.nack, out);
    case PacketType::kConnect:
    case PacketType::kAccept:
      return encode_handshake(p.common, p.handshake, out);
    case PacketType::kDatagram: {
      std::size_t n = encode_datagram(p.datagram, out);
      std::memcpy(out.data() + n, p.payload.data(), p.payload.size());
      return n + p.payload.size();
    }
    default:
      return encode_bare(p.common, out);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static std::vector<std::uint8_t> out(1 << 17);
  for (bool carry : {true, false}) {
    Packet p;
    if (decode({data, size}, {carry}, &p) != DecodeError::kOk) continue;
    const std::size_t n = reencode(p, out);
    if (n != size || std::memcmp(out.data(), data, size) != 0) std::abort();
  }
  return 0;
}
