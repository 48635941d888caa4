#include "verbs/settings.h"

#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "core/settings.h"

namespace mroce::verbs {
namespace {

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    std::string_view part = text.substr(start, end - start);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    while (!part.empty() && part.back() == ' ') part.remove_suffix(1);
    if (!part.empty()) parts.emplace_back(part);
    start = end + 1;
  }
  return parts;
}

bool parse_uint(std::string_view text, std::uint64_t max, std::uint64_t* out) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value > max) return false;
  *out = value;
  return true;
}

// Fails with a message naming the variable and what it expects.
bool bad(std::string* error, const char* name, const char* value, const char* expected) {
  *error = std::string(name) + "='" + value + "': expected " + expected;
  return false;
}

// Fails with the line every setting out of range gets (core/settings.h).
bool out_of(std::string* error, const char* name, const char* value, std::uint64_t lo,
            std::uint64_t hi) {
  *error = out_of_range(name, value, std::to_string(lo), std::to_string(hi));
  return false;
}

bool parse_devices(const char* value, Settings* out, std::string* error) {
  for (const auto& device : split(value, ';')) {
    auto addresses = split(device, ',');
    for (const auto& a : addresses) {
      Address parsed;
      if (!parse_address(a, &parsed)) {
        return bad(error, "MROCE_DEVICES", value, "address lists like 10.0.0.1,10.1.0.1;10.2.0.1");
      }
    }
    out->devices.push_back(std::move(addresses));
  }
  if (out->devices.empty()) return bad(error, "MROCE_DEVICES", value, "at least one address");
  return true;
}

}  // namespace

bool parse_verbs_settings(const EnvLookup& env, Settings* out, std::string* error) {
  Settings s = *out;
  std::uint64_t n = 0;
  const char* addrs = env("MROCE_ADDRS");
  const char* devices = env("MROCE_DEVICES");
  if (addrs && *addrs && devices && *devices) {
    *error = "MROCE_ADDRS and MROCE_DEVICES are both set: use one (ADDRS is one device)";
    return false;
  }
  if (devices && *devices && !parse_devices(devices, &s, error)) return false;
  if (addrs && *addrs) s.devices = {s.device.addresses};  // validated by apply_environment
  if (const char* v = env("MROCE_PORT"); v && *v) {
    // The Verbs layer needs a fixed base port: 0 (any free port) is refused.
    if (!parse_uint(v, 65535, &n) || n == 0) return out_of(error, "MROCE_PORT", v, 1, 65535);
    s.base_port = static_cast<std::uint16_t>(n);
  }
  if (s.device.progress == Progress::kManual) {
    *error = "MROCE_PROGRESS='manual': Verbs programs need a progress thread (thread or busy)";
    return false;
  }
  if (const char* v = env("MROCE_PEER"); v && *v) {
    Address a;
    if (!parse_address(v, &a)) return bad(error, "MROCE_PEER", v, "an IPv4 or IPv6 address");
    s.peer = a;
  }
  if (const char* v = env("MROCE_MAX_INLINE"); v && *v) {
    if (!parse_uint(v, 4096, &n)) return out_of(error, "MROCE_MAX_INLINE", v, 0, 4096);
    s.max_inline = static_cast<std::uint32_t>(n);
  }
  if (const char* v = env("MROCE_POLL_YIELD"); v && *v) {
    if (!parse_uint(v, 1, &n)) return out_of(error, "MROCE_POLL_YIELD", v, 0, 1);
    s.poll_yield = n != 0;
  }
  if (const char* v = env("MROCE_DEBUG"); v && *v) s.debug = std::string_view(v) != "0";
  if (const char* v = env("MROCE_STAT"); v && *v) {
    if (!parse_uint(v, 1, &n)) return out_of(error, "MROCE_STAT", v, 0, 1);
    s.stats = n != 0;
  }
  if (const char* v = env("MROCE_SYSFS_DIR"); v && *v) s.sysfs_dir = v;
  if (const char* v = env("MROCE_HW_COUNTERS_MS"); v && *v) {
    if (!parse_uint(v, 10000, &n) || n == 0) {
      return out_of(error, "MROCE_HW_COUNTERS_MS", v, 1, 10000);
    }
    s.hw_counters_ms = static_cast<std::uint32_t>(n);
  }
  *out = std::move(s);
  return true;
}

const Settings* process_settings(std::string* error) {
  // Parsed once and never freed: the progress threads may outlive static destructors.
  static std::once_flag once;
  static Settings* settings = nullptr;
  static std::string* failure = nullptr;
  std::call_once(once, [] {
    auto* s = new Settings;
    std::string why;
    if (apply_environment(&s->device, &why) &&
        parse_verbs_settings([](const char* name) { return std::getenv(name); }, s, &why)) {
      settings = s;
    } else {
      delete s;
      failure = new std::string(std::move(why));
    }
  });
  if (!settings && error) *error = *failure;
  return settings;
}

}  // namespace mroce::verbs
