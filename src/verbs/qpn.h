// How a Verbs queue pair number names a MetaRoCE endpoint and stream.
//
// A Verbs peer learns only a GID and a QPN. The GID gives the address; the QPN must give
// the rest: the UDP port the peer's context listens on, and the peer engine's stream.
//   qpn = (slot + 1) << 16 | stream        (24 bits, as a Verbs QPN)
//   port = base port + slot
// Each opened context takes the first free slot above MROCE_PORT, so several processes
// on one address each get their own port. Slot+1 keeps QPNs 0 and 1 (special in Verbs)
// unused.
#pragma once

#include <cstdint>
#include <optional>

#include "core/types.h"

namespace mroce::verbs {

inline constexpr int kMaxSlots = 255;
inline constexpr StreamId kMaxStream = 0xffff;

struct QpnParts {
  int slot = 0;
  StreamId stream = kNoStream;
};

inline std::uint32_t encode_qpn(int slot, StreamId stream) {
  return static_cast<std::uint32_t>(slot + 1) << 16 | (stream & kMaxStream);
}

inline std::optional<QpnParts> decode_qpn(std::uint32_t qpn) {
  const std::uint32_t high = (qpn >> 16) & 0xff;
  const StreamId stream = qpn & kMaxStream;
  if (qpn > 0xffffff || high == 0 || stream == kNoStream) return std::nullopt;
  return QpnParts{static_cast<int>(high) - 1, stream};
}

// The UDP port of a slot, or 0 when base + slot does not fit in 16 bits.
inline std::uint16_t slot_port(std::uint16_t base, int slot) {
  const int port = base + slot;
  return port > 0xffff ? 0 : static_cast<std::uint16_t>(port);
}

}  // namespace mroce::verbs
