#include "core/settings.h"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace mroce {

namespace {

std::string number(double v) {
  char buf[32];
  // Whole numbers in full ("10000000", not "1e+07").
  const auto r = v == std::floor(v) && std::fabs(v) < 0x1p63
                     ? std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(v))
                     : std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// v as an integer count of `step` followed by `suffix`, when it divides exactly.
bool in_step(double v, double step, const char* suffix, std::string* out) {
  if (v == 0 || std::fmod(v, step) != 0) return false;
  *out = number(v / step) + suffix;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The value of one MROCE_ENGINE item in stored units; false when it is not a finite
// number of the unit's kind. Range checks are the caller's.
bool parse_env_value(SettingUnit unit, std::string_view text, double* out) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (unit == SettingUnit::kRatio) {
    double v = 0;
    const auto r = std::from_chars(begin, end, v);
    if (r.ec != std::errc{} || r.ptr != end || !std::isfinite(v)) return false;
    *out = v;
    return true;
  }
  std::uint64_t v = 0;
  const auto r = std::from_chars(begin, end, v);
  if (r.ec != std::errc{} || r.ptr != end || text.empty()) return false;
  // Values past 2^53 are out of every range; keep them out instead of rounding them in.
  *out = v > (std::uint64_t{1} << 53) ? HUGE_VAL : static_cast<double>(v) * env_scale(unit);
  return true;
}

std::string env_number(SettingUnit unit, double stored) {
  return number(unit == SettingUnit::kRatio ? stored : std::ceil(stored / env_scale(unit)));
}

}  // namespace

const Setting* find_setting(std::string_view name) {
  for (const Setting& s : kEngineSettings) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string out_of_range(std::string_view key, std::string_view value, std::string_view min,
                         std::string_view max) {
  std::string line(key);
  line += '=';
  line += value;
  line += ": must be ";
  line += min;
  line += "..";
  line += max;
  return line;
}

std::string format_value(SettingUnit unit, double v) {
  if (v == 0) return "0";
  std::string out;
  switch (unit) {
    case SettingUnit::kCount:
    case SettingUnit::kRatio:
      return number(v);
    case SettingUnit::kBytes:
      if (in_step(v, 1 << 30, "GiB", &out) || in_step(v, 1 << 20, "MiB", &out) ||
          in_step(v, 1 << 10, "KiB", &out)) {
        return out;
      }
      return number(v);
    case SettingUnit::kTime:
      if (in_step(v, 1e9, "s", &out) || in_step(v, 1e6, "ms", &out) ||
          in_step(v, 1e3, "us", &out)) {
        return out;
      }
      return number(v) + "ns";
    case SettingUnit::kRate:
      if (in_step(v, 1e9, "Gbps", &out) || in_step(v, 1e6, "Mbps", &out)) return out;
      return number(v) + "bps";
  }
  return number(v);
}

std::string range_text(const SettingInfo& s) {
  return format_value(s.unit, s.min) + ".." + format_value(s.unit, s.max);
}

bool check_setting(const SettingInfo& s, double value, std::string_view key, std::string_view text,
                   std::string* error) {
  if (std::isfinite(value) && value >= s.min && value <= s.max &&
      (s.unit == SettingUnit::kRatio || value == std::floor(value))) {
    return true;
  }
  *error = out_of_range(key, text, format_value(s.unit, s.min), format_value(s.unit, s.max));
  return false;
}

std::string_view env_suffix(SettingUnit unit) {
  switch (unit) {
    case SettingUnit::kTime:
      return "_us";
    case SettingUnit::kBytes:
      return "_kb";
    case SettingUnit::kRate:
      return "_mbit";
    default:
      return "";
  }
}

double env_scale(SettingUnit unit) {
  switch (unit) {
    case SettingUnit::kTime:
      return 1e3;
    case SettingUnit::kBytes:
      return 1024;
    case SettingUnit::kRate:
      return 1e6;
    default:
      return 1;
  }
}

bool apply_engine_overrides(std::string_view text, EngineConfig* config, std::string* error,
                            std::span<const std::string_view> reserved) {
  EngineConfig c = *config;
  while (!text.empty()) {
    const std::size_t comma = std::min(text.find(','), text.size());
    const std::string_view item = trim(text.substr(0, comma));
    text.remove_prefix(std::min(comma + 1, text.size()));
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      *error = "MROCE_ENGINE: '" + std::string(item) + "' is not key=value";
      return false;
    }
    const std::string_view key = trim(item.substr(0, eq));
    const std::string_view value = trim(item.substr(eq + 1));
    const Setting* found = nullptr;
    for (const Setting& s : kEngineSettings) {
      const std::string_view suffix = env_suffix(s.unit);
      if (key.size() == s.name.size() + suffix.size() && key.starts_with(s.name) &&
          key.ends_with(suffix)) {
        found = &s;
      }
    }
    if (!found) {
      *error = "MROCE_ENGINE: unknown key '" + std::string(key) + "'";
      return false;
    }
    for (std::string_view r : reserved) {
      if (r == found->name) {
        *error = "MROCE_ENGINE: '" + std::string(key) + "' is set by the device's options";
        return false;
      }
    }
    double v = 0;
    if (!parse_env_value(found->unit, value, &v) || !check_setting(*found, v, key, value, error)) {
      *error =
          "MROCE_ENGINE: " + out_of_range(key, value, env_number(found->unit, found->min),
                                          number(std::floor(found->max / env_scale(found->unit))));
      return false;
    }
    found->set(c, v);
  }
  if (!check_engine_config(c, error)) {
    *error = "MROCE_ENGINE: " + *error;
    return false;
  }
  *config = std::move(c);
  return true;
}

bool check_engine_config(const EngineConfig& c, std::string* error) {
  if (c.min_rto > c.max_rto) {
    *error = "min_rto (" + format_value(SettingUnit::kTime, double(c.min_rto)) +
             ") is above max_rto (" + format_value(SettingUnit::kTime, double(c.max_rto)) + ")";
    return false;
  }
  if (c.probe_interval > c.max_probe_interval) {
    *error = "probe_interval (" + format_value(SettingUnit::kTime, double(c.probe_interval)) +
             ") is above max_probe_interval (" +
             format_value(SettingUnit::kTime, double(c.max_probe_interval)) + ")";
    return false;
  }
  return true;
}

}  // namespace mroce
