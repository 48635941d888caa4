#include "sim/params.h"

#include <charconv>
#include <cmath>

#include "sim/errors.h"
#include "sim/units.h"

namespace mroce::sim {

std::string Params::describe(const Value& v) {
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto d = std::get_if<double>(&v)) {
    char buf[32];
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, *d).ptr);
  }
  return "\"" + std::get<std::string>(v) + "\"";
}

const Params::Value* Params::find(const std::string& key) {
  auto it = values_.find(key);
  if (it == values_.end()) return nullptr;
  used_.insert(key);
  return &it->second;
}

void Params::fail(const std::string& key, const std::string& what) const {
  auto it = values_.find(key);
  std::string got = it == values_.end() ? "" : " (got " + describe(it->second) + ")";
  throw ConfigError(name(key) + ": " + what + got);
}

bool Params::get_bool(const std::string& key, bool def) {
  const Value* v = find(key);
  if (!v) return def;
  if (auto b = std::get_if<bool>(v)) return *b;
  fail(key, "expected true or false");
}

std::uint64_t Params::get_uint(const std::string& key, std::uint64_t def, std::uint64_t min,
                               std::uint64_t max) {
  const Value* v = find(key);
  if (!v) return def;
  auto i = std::get_if<std::int64_t>(v);
  if (!i || *i < 0 || static_cast<std::uint64_t>(*i) < min ||
      static_cast<std::uint64_t>(*i) > max) {
    // The line every setting out of range gets (core/settings.h).
    throw ConfigError(
        out_of_range(name(key), describe(*v), std::to_string(min), std::to_string(max)));
  }
  return static_cast<std::uint64_t>(*i);
}

double Params::get_double(const std::string& key, double def, double min, double max) {
  const Value* v = find(key);
  if (!v) return def;
  double d = NAN;  // not a number: refused below
  if (auto i = std::get_if<std::int64_t>(v)) d = static_cast<double>(*i);
  if (auto f = std::get_if<double>(v)) d = *f;
  if (!std::isfinite(d) || d < min || d > max) {
    throw ConfigError(out_of_range(name(key), describe(*v), describe(min), describe(max)));
  }
  return d;
}

std::string Params::get_string(const std::string& key, const std::string& def) {
  const Value* v = find(key);
  if (!v) return def;
  if (auto s = std::get_if<std::string>(v)) return *s;
  fail(key, "expected a string");
}

std::string Params::get_choice(const std::string& key, const std::string& def,
                               std::initializer_list<const char*> choices) {
  std::string s = get_string(key, def);
  std::string list;
  for (const char* c : choices) {
    if (s == c) return s;
    list += list.empty() ? "" : ", ";
    list += c;
  }
  fail(key, "expected one of " + list);
}

std::uint64_t Params::get_bytes(const std::string& key, std::uint64_t def) {
  const Value* v = find(key);
  if (!v) return def;
  if (auto i = std::get_if<std::int64_t>(v)) {
    if (*i < 0) fail(key, "expected a size");
    return static_cast<std::uint64_t>(*i);
  }
  if (auto s = std::get_if<std::string>(v)) {
    if (auto b = parse_bytes(*s)) return *b;
  }
  fail(key, "expected a size such as 4096, \"64KiB\" or \"32MB\"");
}

SimTime Params::get_time(const std::string& key, SimTime def) {
  const Value* v = find(key);
  if (!v) return def;
  if (auto i = std::get_if<std::int64_t>(v)) {
    if (*i < 0) fail(key, "expected a time");
    return from_ns(static_cast<Time>(*i));
  }
  if (auto s = std::get_if<std::string>(v)) {
    if (auto t = parse_time(*s)) return *t;
  }
  fail(key, "expected a time such as \"500ns\", \"1.5us\" or \"2ms\" (an integer is ns)");
}

std::uint64_t Params::get_rate(const std::string& key, std::uint64_t def) {
  const Value* v = find(key);
  if (!v) return def;
  double gbps = -1;
  if (auto i = std::get_if<std::int64_t>(v)) gbps = static_cast<double>(*i);
  if (auto d = std::get_if<double>(v)) gbps = *d;
  if (gbps > 0) return static_cast<std::uint64_t>(std::llround(gbps * 1e9));
  if (auto s = std::get_if<std::string>(v)) {
    if (auto r = parse_rate(*s); r && *r > 0) return *r;
  }
  fail(key, "expected a rate such as 100 (Gbit/s) or \"400Gbps\"");
}

double Params::get_setting(const SettingInfo& s, double def, bool zero_means_default) {
  const std::string key(s.name);
  const Value* v = find(key);
  if (!v) return def;
  const auto* i = std::get_if<std::int64_t>(v);
  const auto* d = std::get_if<double>(v);
  const auto* text = std::get_if<std::string>(v);
  double value = NAN;  // NaN: not a quantity of this unit, refused below
  switch (s.unit) {
    case SettingUnit::kCount:
      if (i) value = static_cast<double>(*i);
      break;
    case SettingUnit::kRatio:
      if (i) value = static_cast<double>(*i);
      if (d) value = *d;
      break;
    case SettingUnit::kBytes:
      if (i) value = static_cast<double>(*i);
      if (text) {
        if (auto b = parse_bytes(*text)) value = static_cast<double>(*b);
      }
      break;
    case SettingUnit::kTime:
      if (i) value = static_cast<double>(*i);
      if (text) {
        if (auto t = parse_time(*text)) value = static_cast<double>(to_ns(*t));
      }
      break;
    case SettingUnit::kRate:
      if (i) value = static_cast<double>(*i) * 1e9;
      if (d && std::isfinite(*d)) value = std::round(*d * 1e9);
      if (text) {
        if (auto r = parse_rate(*text)) value = static_cast<double>(*r);
      }
      break;
  }
  if (zero_means_default && value == 0) return 0;
  std::string error;
  if (!check_setting(s, value, name(key), describe(*v), &error)) throw ConfigError(error);
  return value;
}

void Params::reject_unused() const {
  for (const auto& [key, value] : values_) {
    if (!used_.count(key)) throw ConfigError("unknown key '" + name(key) + "'");
  }
}

}  // namespace mroce::sim
