#include "net/options.h"

#include <sys/random.h>

#include <algorithm>

#include "net/sockaddr.h"
#include "wire/packet.h"

namespace mroce::net {

namespace {

constexpr std::uint16_t kMinMtu = 256;
constexpr std::uint16_t kMaxMtu = 16384;
constexpr std::uint16_t kMaxSourcePorts = 4096;

}  // namespace

bool resolve_options(const DeviceOptions& o, ResolvedOptions* out, std::string* error) {
  ResolvedOptions r;
  const std::vector<std::string> texts =
      o.addresses.empty() ? std::vector<std::string>{"127.0.0.1"} : o.addresses;
  if (texts.size() > wire::kMaxPlanes) {
    *error = "at most " + std::to_string(wire::kMaxPlanes) + " addresses (planes), got " +
             std::to_string(texts.size());
    return false;
  }
  for (const std::string& t : texts) {
    Address a;
    if (!parse_ip(t, &a)) {
      *error = "address '" + t + "' is not an IPv4 or IPv6 address";
      return false;
    }
    if (a.is_zero() || (a.is_ipv4() && a.ipv4_value() == 0)) {
      *error = "address '" + t + "' is unspecified: give the interface's own address";
      return false;
    }
    if (std::find(r.planes.begin(), r.planes.end(), a) != r.planes.end()) {
      *error = "address '" + t + "' is given twice";
      return false;
    }
    r.planes.push_back(a);
  }
  if (o.paths == 0 || o.paths > 256) {
    *error = "paths must be 1..256, got " + std::to_string(o.paths);
    return false;
  }
  if (o.mtu < kMinMtu || o.mtu > kMaxMtu || o.mtu % 4 != 0) {
    *error = "mtu (payload bytes per packet) must be a multiple of 4 in " +
             std::to_string(kMinMtu) + ".." + std::to_string(kMaxMtu) + ", got " +
             std::to_string(o.mtu);
    return false;
  }
  if (o.src_port_count == 0 || o.src_port_count > kMaxSourcePorts) {
    *error = "src_port_count must be 1.." + std::to_string(kMaxSourcePorts) + ", got " +
             std::to_string(o.src_port_count);
    return false;
  }
  if (o.src_port_base != 0 && std::uint32_t(o.src_port_base) + o.src_port_count > 65536) {
    *error = "source ports " + std::to_string(o.src_port_base) + "+" +
             std::to_string(o.src_port_count) + " run past 65535";
    return false;
  }
  if (o.line_rate_bps < 1'000'000) {
    *error = "line_rate_bps must be at least 1 Mbit/s";
    return false;
  }
  if (o.progress != Progress::kThread && o.progress != Progress::kBusyPoll &&
      o.progress != Progress::kManual) {
    *error = "unknown progress mode";
    return false;
  }
  if (o.transport != TransportKind::kMetaRoce && o.transport != TransportKind::kRoceV2) {
    *error = "unknown transport";
    return false;
  }
  r.seed = o.seed;
  while (r.seed == 0) {
    if (getrandom(&r.seed, sizeof r.seed, 0) != sizeof r.seed) r.seed = 0x6d726f6365ull;
  }
  *out = std::move(r);
  return true;
}

}  // namespace mroce::net
