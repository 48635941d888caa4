// libFuzzer target: the environment parsers (the Verbs stand-in's MROCE_* variables,
// src/verbs/settings.cc, and MROCE_ENGINE, core/settings.cc) on arbitrary variables.
// Input: NAME=VALUE lines. Whatever they hold: false with one line, or values in range.
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

#include "core/settings.h"
#include "verbs/settings.h"

using namespace mroce;

namespace {

// The variables the stack reads through getenv; set or unset per input.
const char* const kStackVariables[] = {
    "MROCE_ADDRS",         "MROCE_TRANSPORT",    "MROCE_PROGRESS", "MROCE_PORT",
    "MROCE_SRC_PORT_BASE", "MROCE_SRC_PORTS",    "MROCE_PATHS",    "MROCE_MTU",
    "MROCE_RATE_MBIT",     "MROCE_RX_RATE_MBIT", "MROCE_GSO",      "MROCE_GRO",
    "MROCE_SEED"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::map<std::string, std::string> vars;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  while (!text.empty()) {
    const std::size_t nl = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(std::min(nl + 1, text.size()));
    const std::size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string value(line.substr(eq + 1));
    if (value.find('\0') != std::string::npos) continue;  // not an environment value
    vars[std::string(line.substr(0, eq))] = std::move(value);
  }
  std::string error;
  for (const char* name : kStackVariables) {
    const auto it = vars.find(name);
    if (it == vars.end()) {
      unsetenv(name);
    } else {
      setenv(name, it->second.c_str(), 1);
    }
  }
  verbs::Settings s;
  if (apply_environment(&s.device, &error)) {
    if (s.device.paths < 1 || s.device.paths > 256) __builtin_trap();
    const auto lookup = [&](const char* name) -> const char* {
      const auto it = vars.find(name);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
    if (verbs::parse_verbs_settings(lookup, &s, &error) && s.max_inline > 4096) __builtin_trap();
  }
  if (const auto it = vars.find("MROCE_ENGINE"); it != vars.end()) {
    EngineConfig c;
    if (apply_engine_overrides(it->second, &c, &error)) {
      for (const Setting& setting : engine_settings()) {
        const double v = setting.get(c);
        if (!(v >= setting.min && v <= setting.max)) __builtin_trap();
      }
      if (c.min_rto > c.max_rto) __builtin_trap();
    }
  }
  return 0;
}
