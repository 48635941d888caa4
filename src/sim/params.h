// A flat table of named settings read from a scenario file or the command line
// (`[transport.mroce]`, `[topology]`, ...). Getters check type and range and remember
// which keys were read, so that a misspelt key is an error instead of being ignored.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <variant>

#include "core/settings.h"
#include "core/types.h"
#include "sim/time.h"

namespace mroce::sim {

class Params {
 public:
  using Value = std::variant<bool, std::int64_t, double, std::string>;

  explicit Params(std::string prefix = "") : prefix_(std::move(prefix)) {}

  void set(const std::string& key, Value v) { values_[key] = std::move(v); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::string& prefix() const { return prefix_; }
  const std::map<std::string, Value>& values() const { return values_; }

  bool get_bool(const std::string& key, bool def);
  std::uint64_t get_uint(const std::string& key, std::uint64_t def, std::uint64_t min = 0,
                         std::uint64_t max = std::numeric_limits<std::uint64_t>::max());
  double get_double(const std::string& key, double def, double min = 0,
                    double max = std::numeric_limits<double>::max());
  std::string get_string(const std::string& key, const std::string& def);
  // One of `choices`; the error lists them.
  std::string get_choice(const std::string& key, const std::string& def,
                         std::initializer_list<const char*> choices);
  // An integer, or a string with a unit (units.h).
  std::uint64_t get_bytes(const std::string& key, std::uint64_t def);
  SimTime get_time(const std::string& key, SimTime def);  // integer: nanoseconds
  Time get_ns(const std::string& key, Time def) { return to_ns(get_time(key, from_ns(def))); }
  std::uint64_t get_rate(const std::string& key, std::uint64_t def);  // number: Gbit/s

  // An engine setting (core/settings.h) in its stored unit: a count, a size, a time (an
  // integer is ns), a rate (a number is Gbit/s) or a fraction, in the setting's range.
  // `zero_means_default`: 0 is also taken (the caller derives the value). Anything else
  // throws the line core's out_of_range() writes.
  double get_setting(const SettingInfo& s, double def, bool zero_means_default = false);

  // A value as messages show it: true, 42, 1.5, "text".
  static std::string describe(const Value& v);

  // Throws ConfigError naming the first key no getter asked for.
  void reject_unused() const;

  // The full name of a key for messages: "transport.mroce.paths".
  std::string name(const std::string& key) const {
    return prefix_.empty() ? key : prefix_ + "." + key;
  }

 private:
  const Value* find(const std::string& key);
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

  std::string prefix_;
  std::map<std::string, Value> values_;
  std::set<std::string> used_;
};

}  // namespace mroce::sim
