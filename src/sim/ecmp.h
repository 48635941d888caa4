// ECMP: a switch hashes the 5-tuple with its own seed and picks one member of the
// group, as real switches do. The same flow (same source port) always takes the same
// member; a different source port is an independent draw. The sending host hashes the
// 5-tuple once (flow_hash); each switch then mixes in its seed, one multiply-shift
// round per hop.
#pragma once

#include <cstdint>

#include "sim/packet.h"
#include "sim/rng.h"

namespace mroce::sim {

inline constexpr std::uint8_t kProtoUdp = 17;

inline std::uint64_t flow_hash(const Packet& p) {
  const std::uint64_t h = mix64(std::uint64_t{p.src_ip} << 32 | p.dst_ip);
  return mix64(h ^ (std::uint64_t{p.src_port} << 24 | std::uint64_t{p.dst_port} << 8 | kProtoUdp));
}

inline std::uint64_t ecmp_hash(std::uint64_t seed, const Packet& p) {
  return mix64(seed ^ p.flow_hash);
}

// Maps a hash onto [0, n) without a division.
inline std::uint32_t ecmp_pick(std::uint64_t hash, std::uint32_t n) {
  return static_cast<std::uint32_t>((static_cast<unsigned __int128>(hash) * n) >> 64);
}

}  // namespace mroce::sim
