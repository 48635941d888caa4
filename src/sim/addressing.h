// Host addresses: NIC `plane` of host `h` is 10.plane.hi.lo with hi.lo = h + 1, so the
// plane and the host can be read back from any destination address in one step.
#pragma once

#include <cstdint>
#include <optional>

#include "core/types.h"

namespace mroce::sim {

inline constexpr std::uint32_t kMaxHosts = 65535;
inline constexpr std::uint32_t kMaxPlanes = 8;

inline constexpr std::uint32_t host_ip(std::uint32_t host, std::uint32_t plane) {
  return 10u << 24 | plane << 16 | (host + 1);
}
inline Address host_address(std::uint32_t host, std::uint32_t plane) {
  return Address::ipv4(host_ip(host, plane));
}

struct HostNic {
  std::uint32_t host;
  std::uint32_t plane;
};

// The host and plane an address names, if it is one of ours.
inline std::optional<HostNic> decode_ip(std::uint32_t ip) {
  std::uint32_t lo = ip & 0xffff;
  if (ip >> 24 != 10 || lo == 0) return std::nullopt;
  return HostNic{lo - 1, (ip >> 16) & 0xff};
}

}  // namespace mroce::sim
