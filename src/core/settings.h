// The table of the engine's settings (one row per entry of MROCE_ENGINE_SETTINGS in
// core/config.h) and the checks every front end shares: the simulator's TOML keys, the
// stack's options, MROCE_ENGINE and mroce-perf's help all read their names, ranges and
// meanings from here, so a range is written once and every error reads alike.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/config.h"

namespace mroce {

// What a front end needs to read and check one setting of any engine's table.
struct SettingInfo {
  std::string_view name;  // TOML key; MROCE_ENGINE adds the unit's suffix (env_suffix)
  SettingUnit unit;
  double def, min, max;  // in the stored unit: bytes, ns, bit/s (exact below 2^53)
  std::string_view meaning;
};

// A row of a table, with the member of `Config` it stands for.
template <typename Config>
struct BasicSetting : SettingInfo {
  double (*get)(const Config&);
  void (*set)(Config&, double);
};
using Setting = BasicSetting<EngineConfig>;

// A row from one entry of an X-macro list (MROCE_ENGINE_SETTINGS's form); `path` is the
// member's place in `Config` (c.member, c.dcqcn.member).
#define MROCE_SETTING_ROW_OF(Config, path, type, name, unit, def, min, max, meaning)           \
  ::mroce::BasicSetting<Config>{{name, ::mroce::SettingUnit::unit, static_cast<double>(def),   \
                                 static_cast<double>(min), static_cast<double>(max), meaning}, \
                                [](const Config& c) { return static_cast<double>(c.path); },   \
                                [](Config& c, double v) { c.path = static_cast<type>(v); }},

#define MROCE_SETTING_ROW(type, member, name, unit, def, min, max, meaning) \
  MROCE_SETTING_ROW_OF(EngineConfig, member, type, name, unit, def, min, max, meaning)
inline constexpr Setting kEngineSettings[] = {MROCE_ENGINE_SETTINGS(MROCE_SETTING_ROW)};
#undef MROCE_SETTING_ROW

inline std::span<const Setting> engine_settings() {
  return kEngineSettings;
}
const Setting* find_setting(std::string_view name);

// The one-line error every front end prints for a value out of range:
// "<key>=<value>: must be <min>..<max>".
std::string out_of_range(std::string_view key, std::string_view value, std::string_view min,
                         std::string_view max);

// A stored value written for people: counts and fractions as numbers, sizes as "64KiB",
// times as "20us", rates as "100Gbps" (the forms the simulator's TOML reads back).
std::string format_value(SettingUnit unit, double value);
// "min..max" of a setting in format_value's form.
std::string range_text(const SettingInfo& s);

// Whether `value` (stored unit) is a number in the setting's range; else the line
// out_of_range() gives, for `key` and the value as the user wrote it.
bool check_setting(const SettingInfo& s, double value, std::string_view key, std::string_view text,
                   std::string* error);

// MROCE_ENGINE form: "key=value,...", where a key is a setting's name plus its unit's
// suffix and the value is an integer in that unit (ratios: a decimal fraction).
std::string_view env_suffix(SettingUnit unit);  // "_us", "_kb", "_mbit" or ""
double env_scale(SettingUnit unit);             // stored units per unit written
// Settings named in `reserved` are refused (the caller sets them from its own options).
bool apply_engine_overrides(std::string_view text, EngineConfig* config, std::string* error,
                            std::span<const std::string_view> reserved = {});

// Settings that must agree with each other: min_rto <= max_rto and probe_interval <=
// max_probe_interval.
bool check_engine_config(const EngineConfig& c, std::string* error);

}  // namespace mroce
