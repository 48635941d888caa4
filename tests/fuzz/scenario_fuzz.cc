// libFuzzer target: the simulator's scenario parser (src/sim/scenario.cc) and the engine
// settings it reads (Params::get_setting) on arbitrary TOML. A bad scenario is a
// ConfigError, never a crash, a hang or another exception.
#include <cstdint>
#include <string>

#include "core/settings.h"
#include "sim/errors.h"
#include "sim/scenario.h"

using namespace mroce;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 1 << 16) return 0;  // big documents only cost time
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    sim::Scenario s = sim::parse_scenario(text, "fuzz");
    for (auto& [name, params] : s.transport_settings) {
      sim::Params p = params;
      EngineConfig c;
      for (const Setting& setting : engine_settings()) {
        const double v = p.get_setting(setting, setting.def);
        if (!(v >= setting.min && v <= setting.max)) __builtin_trap();
        setting.set(c, v);
      }
    }
  } catch (const sim::ConfigError&) {
  }
  return 0;
}
