// Host addresses: NIC `plane` of host `h` is N.plane.hi.lo where n = h + 1 is split as
// N = 10 + n / 65536 and hi.lo = n mod 65536 (10.plane.hi.lo for the first 65,535 hosts),
// so the plane and the host can be read back from any destination address in one step.
#pragma once

#include <cstdint>
#include <optional>

#include "core/types.h"

namespace mroce::sim {

inline constexpr std::uint32_t kMaxHosts = (256 - 10) * 65536 - 1;
inline constexpr std::uint32_t kMaxPlanes = 8;

inline constexpr std::uint32_t host_ip(std::uint32_t host, std::uint32_t plane) {
  const std::uint32_t n = host + 1;
  return (10u + (n >> 16)) << 24 | plane << 16 | (n & 0xffff);
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
  if (ip >> 24 < 10) return std::nullopt;
  const std::uint32_t n = ((ip >> 24) - 10) << 16 | (ip & 0xffff);
  if (n == 0) return std::nullopt;
  return HostNic{n - 1, (ip >> 16) & 0xff};
}

}  // namespace mroce::sim
