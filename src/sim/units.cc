#include "sim/units.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace mroce::sim {

namespace {

struct Unit {
  std::string_view name;
  double scale;
};

// Splits "12.5us" into 12.5 and "us"; spaces between are allowed.
bool split(std::string_view text, double* value, std::string_view* unit) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  std::size_t i = 0;
  while (i < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.' || text[i] == 'e' ||
          text[i] == 'E' || text[i] == '+' || text[i] == '-')) {
    // 'e' only as an exponent: a digit must follow it (or a sign then a digit).
    if ((text[i] == 'e' || text[i] == 'E') &&
        (i + 1 >= text.size() || !(std::isdigit(static_cast<unsigned char>(text[i + 1])) ||
                                   text[i + 1] == '-' || text[i + 1] == '+'))) {
      break;
    }
    ++i;
  }
  if (i == 0) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + i, *value);
  if (ec != std::errc() || end != text.data() + i || !std::isfinite(*value) || *value < 0) {
    return false;
  }
  std::string_view rest = text.substr(i);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
    rest.remove_prefix(1);
  *unit = rest;
  return true;
}

std::optional<double> scaled(std::string_view text, std::initializer_list<Unit> units,
                             std::optional<double> bare) {
  double v = 0;
  std::string_view unit;
  if (!split(text, &v, &unit)) return std::nullopt;
  if (unit.empty()) {
    if (!bare) return std::nullopt;
    return v * *bare;
  }
  for (const Unit& u : units) {
    if (u.name == unit) return v * u.scale;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> whole(std::optional<double> v) {
  if (!v || *v >= 1.8e19) return std::nullopt;
  double r = std::round(*v);
  if (std::fabs(r - *v) > 1e-6 * std::max(1.0, *v)) return std::nullopt;
  return static_cast<std::uint64_t>(r);
}

}  // namespace

std::optional<std::uint64_t> parse_bytes(std::string_view text) {
  return whole(scaled(text,
                      {{"B", 1},
                       {"KB", 1e3},
                       {"MB", 1e6},
                       {"GB", 1e9},
                       {"KiB", 1024.0},
                       {"MiB", 1024.0 * 1024},
                       {"GiB", 1024.0 * 1024 * 1024}},
                      1.0));
}

std::optional<SimTime> parse_time(std::string_view text) {
  auto v =
      scaled(text, {{"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12}}, std::nullopt);
  if (!v || *v >= 1.8e19) return std::nullopt;
  return static_cast<SimTime>(std::llround(*v));
}

std::optional<std::uint64_t> parse_rate(std::string_view text) {
  return whole(scaled(text,
                      {{"bps", 1},
                       {"Kbps", 1e3},
                       {"Mbps", 1e6},
                       {"Gbps", 1e9},
                       {"Tbps", 1e12},
                       {"G", 1e9},
                       {"T", 1e12}},
                      1e9));
}

std::string format_bytes(std::uint64_t b) {
  char buf[32];
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) {
    std::snprintf(buf, sizeof buf, "%lluGiB", static_cast<unsigned long long>(b >> 30));
  } else if (b >= (1ull << 20) && b % (1ull << 20) == 0) {
    std::snprintf(buf, sizeof buf, "%lluMiB", static_cast<unsigned long long>(b >> 20));
  } else if (b >= 1024 && b % 1024 == 0) {
    std::snprintf(buf, sizeof buf, "%lluKiB", static_cast<unsigned long long>(b >> 10));
  } else {
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(b));
  }
  return buf;
}

std::string format_time(SimTime t) {
  char buf[32];
  if (t >= kMs) {
    std::snprintf(buf, sizeof buf, "%.3fms", static_cast<double>(t) / kMs);
  } else if (t >= kUs) {
    std::snprintf(buf, sizeof buf, "%.3fus", static_cast<double>(t) / kUs);
  } else {
    std::snprintf(buf, sizeof buf, "%.3fns", static_cast<double>(t) / kNs);
  }
  return buf;
}

}  // namespace mroce::sim
