#include "net/options.h"

#include <sys/random.h>

#include <algorithm>

#include "core/settings.h"
#include "net/sockaddr.h"
#include "wire/packet.h"

namespace mroce::net {

namespace {

// The stack opens one socket per source port: fewer than the engine could use.
constexpr std::uint16_t kMaxSourcePorts = 4096;

// Checks an option against the engine setting it feeds (core/settings.h).
bool check(const char* key, std::string_view setting, std::uint64_t value, std::string* error) {
  const Setting* s = find_setting(setting);
  return check_setting(*s, static_cast<double>(value), key, std::to_string(value), error);
}

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
  if (!check("paths", "paths", o.paths, error) || !check("mtu", "mss", o.mtu, error)) return false;
  if (o.mtu % 4 != 0) {
    *error = "mtu=" + std::to_string(o.mtu) + ": must be a multiple of 4";
    return false;
  }
  if (o.src_port_count == 0 || o.src_port_count > kMaxSourcePorts) {
    *error = out_of_range("src_port_count", std::to_string(o.src_port_count), "1",
                          std::to_string(kMaxSourcePorts));
    return false;
  }
  if (o.src_port_base != 0 && std::uint32_t(o.src_port_base) + o.src_port_count > 65536) {
    *error = "source ports " + std::to_string(o.src_port_base) + "+" +
             std::to_string(o.src_port_count) + " run past 65535";
    return false;
  }
  if (!check("line_rate_bps", "line_rate", o.line_rate_bps, error) ||
      !check("rx_capacity_bps", "rx_capacity", o.rx_capacity_bps, error)) {
    return false;
  }
  if (o.progress != Progress::kThread && o.progress != Progress::kBusyPoll &&
      o.progress != Progress::kManual) {
    *error = "unknown progress mode";
    return false;
  }
  if (o.progress_threads < 1 || o.progress_threads > 16) {
    *error = "progress_threads=" + std::to_string(o.progress_threads) + ": must be 1..16";
    return false;
  }
  if (o.progress_threads > 1 && o.progress != Progress::kThread) {
    *error = "progress_threads=" + std::to_string(o.progress_threads) +
             ": more than one thread needs the thread progress mode";
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
