// apply_environment: DeviceOptions from MROCE_* variables.
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "core/settings.h"
#include "mroce/mroce.h"

namespace mroce {

namespace {

// Reads an unsigned number in [lo, hi]; false (with the line in *error) when malformed.
bool read_number(const char* name, std::uint64_t lo, std::uint64_t hi, std::uint64_t* out,
                 std::string* error) {
  const char* text = std::getenv(name);
  if (!text) return true;
  // from_chars takes no sign, space or base prefix: "-1" and " 1" are refused, not wrapped.
  const char* end = text + std::strlen(text);
  std::uint64_t v = 0;
  const auto r = std::from_chars(text, end, v);
  if (r.ec != std::errc{} || r.ptr != end || v < lo || v > hi) {
    *error = out_of_range(name, text, std::to_string(lo), std::to_string(hi));
    return false;
  }
  *out = v;
  return true;
}

template <typename T>
bool read_field(const char* name, std::uint64_t lo, std::uint64_t hi, T* field,
                std::string* error) {
  std::uint64_t v = *field;
  if (!read_number(name, lo, hi, &v, error)) return false;
  *field = static_cast<T>(v);
  return true;
}

bool read_flag(const char* name, bool* field, std::string* error) {
  std::uint64_t v = *field;
  if (!read_number(name, 0, 1, &v, error)) return false;
  *field = v != 0;
  return true;
}

// The range of the engine setting an option feeds, in units of `scale` stored units.
std::uint64_t lowest(std::string_view setting, double scale = 1) {
  return static_cast<std::uint64_t>(find_setting(setting)->min / scale);
}
std::uint64_t highest(std::string_view setting, double scale = 1) {
  return static_cast<std::uint64_t>(find_setting(setting)->max / scale);
}

}  // namespace

bool apply_environment(DeviceOptions* options, std::string* error) {
  DeviceOptions o = *options;
  if (const char* addrs = std::getenv("MROCE_ADDRS")) {
    o.addresses.clear();
    std::stringstream ss(addrs);
    for (std::string item; std::getline(ss, item, ',');) {
      Address a;
      if (!parse_address(item, &a)) {
        *error = "MROCE_ADDRS='" + std::string(addrs) + "': '" + item + "' is not an address";
        return false;
      }
      o.addresses.push_back(item);
    }
  }
  if (const char* t = std::getenv("MROCE_TRANSPORT")) {
    const std::string v = t;
    if (v == "mroce" || v == "metaroce") {
      o.transport = TransportKind::kMetaRoce;
    } else if (v == "roce" || v == "rocev2") {
      o.transport = TransportKind::kRoceV2;
    } else {
      *error = "MROCE_TRANSPORT='" + v + "': expected mroce or roce";
      return false;
    }
  }
  if (const char* p = std::getenv("MROCE_PROGRESS")) {
    const std::string v = p;
    if (v == "thread") {
      o.progress = Progress::kThread;
    } else if (v == "busy") {
      o.progress = Progress::kBusyPoll;
    } else if (v == "manual") {
      o.progress = Progress::kManual;
    } else {
      *error = "MROCE_PROGRESS='" + v + "': expected thread, busy or manual";
      return false;
    }
  }
  std::uint64_t rate_mbit = 0, rx_mbit = 0;
  const bool ok =
      read_field("MROCE_PORT", 0, 65535, &o.port, error) &&
      read_field("MROCE_SRC_PORT_BASE", 0, 65535, &o.src_port_base, error) &&
      read_field("MROCE_SRC_PORTS", 1, 4096, &o.src_port_count, error) &&
      read_field("MROCE_PATHS", lowest("paths"), highest("paths"), &o.paths, error) &&
      read_field("MROCE_MTU", lowest("mss"), highest("mss"), &o.mtu, error) &&
      read_number("MROCE_RATE_MBIT", lowest("line_rate", 1e6), highest("line_rate", 1e6),
                  &rate_mbit, error) &&
      read_number("MROCE_RX_RATE_MBIT", 1, highest("rx_capacity", 1e6), &rx_mbit, error) &&
      read_flag("MROCE_GSO", &o.gso, error) && read_flag("MROCE_GRO", &o.gro, error) &&
      read_flag("MROCE_TX_URING", &o.tx_uring, error) &&
      read_flag("MROCE_RX_URING", &o.rx_uring, error) &&
      read_flag("MROCE_PROGRESS_RT", &o.progress_realtime, error) &&
      read_field("MROCE_PROGRESS_THREADS", 1, 16, &o.progress_threads, error) &&
      read_field("MROCE_SEED", 0, std::numeric_limits<std::uint64_t>::max(), &o.seed, error);
  if (!ok) return false;
  if (rate_mbit) o.line_rate_bps = rate_mbit * 1'000'000;
  if (rx_mbit) o.rx_capacity_bps = rx_mbit * 1'000'000;
  *options = std::move(o);
  return true;
}

}  // namespace mroce
