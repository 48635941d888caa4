#include "transports.h"

#include <algorithm>

#include "core/config.h"
#include "core/settings.h"
#include "sim/errors.h"

// Each engine registers itself when its header is part of the tree.
#if __has_include("core/engine.h")
#include "core/engine.h"
#define MROCE_SIM_HAVE_ENGINE 1
#endif
#if __has_include("baseline/roce_engine.h") && defined(MROCE_SIM_HAVE_BASELINE)
#include "baseline/roce_engine.h"
#include "baseline/settings.h"
#define MROCE_SIM_ROCE 1
#endif

namespace mroce::sim {

namespace {

// Settings the simulator derives from the scenario when they are not set, or set to 0
// (for_host): the mss from its mtu, the line rate from the NIC rate and planes, the
// initial RTT from the fabric's base RTT, the set-up retry from ten of those.
bool derived_from_scenario(std::string_view name) {
  return name == "mss" || name == "line_rate" || name == "initial_rtt" || name == "connect_retry";
}

// Reads [transport.mroce] into an EngineConfig: every setting of the engine's table.
[[maybe_unused]] EngineConfig read_engine_config(Params& p) {
  EngineConfig c;
  for (const Setting& s : engine_settings()) {
    const bool derived = derived_from_scenario(s.name);
    s.set(c, p.get_setting(s, derived ? 0 : s.def, derived));
  }
  std::string error;
  if (!check_engine_config(c, &error)) throw ConfigError(p.prefix() + ": " + error);
  return c;
}

// The per-host part every MetaRoCE engine gets from the simulator.
[[maybe_unused]] EngineConfig for_host(EngineConfig c, const HostContext& h) {
  c.planes = h.planes;
  c.listen_port = h.port;
  c.carry_payload = false;
  c.seed = h.seed;
  if (c.mss == 0) c.mss = static_cast<std::uint16_t>(h.mtu_payload);
  if (c.line_rate_bps == 0) c.line_rate_bps = h.nic_rate_bps * h.planes.size();
  if (c.initial_rtt == 0) c.initial_rtt = h.base_rtt;
  // A lost set-up pair waits one retry interval; the engine's 1 ms default suits LAN
  // round trips, and would be a hundred round trips of a microsecond fabric.
  if (c.connect_retry == 0) c.connect_retry = std::max<Time>(10 * h.base_rtt, kMicrosecond);
  return c;
}

#ifdef MROCE_SIM_ROCE
// Reads [transport.roce] into a RoceConfig: every setting of the baseline's table
// (DCQCN's prefixed dcqcn_) and `dcqcn` (on or off). The mtu and line rate are derived
// from the scenario when unset or 0, as for MetaRoCE.
baseline::RoceConfig read_roce_config(Params& p) {
  baseline::RoceConfig c;
  for (const baseline::RoceSetting& s : baseline::roce_settings()) {
    const bool derived = s.name == "mtu" || s.name == "line_rate";
    s.set(c, p.get_setting(s, derived ? 0 : s.def, derived));
  }
  c.dcqcn.enabled = p.get_bool("dcqcn", c.dcqcn.enabled);
  return c;
}

baseline::RoceConfig for_host(baseline::RoceConfig c, const HostContext& h) {
  c.planes = h.planes;
  c.listen_port = h.port;
  c.carry_payload = false;
  c.icrc = false;
  c.seed = h.seed;
  if (c.mtu == 0) c.mtu = h.mtu_payload;
  if (c.line_rate_bps == 0) c.line_rate_bps = h.nic_rate_bps * h.planes.size();
  return c;
}
#endif

}  // namespace

void register_builtin_transports(TransportRegistry& registry) {
#ifdef MROCE_SIM_HAVE_ENGINE
  registry.add(
      {"mroce", "MetaRoCE engine (multipath, SACK, per-path ECN/AIMD, receiver rate hints)", false,
       [](Params& p) -> TransportMaker {
         EngineConfig base = read_engine_config(p);
         return
             [base](const HostContext& h) { return std::make_unique<Engine>(for_host(base, h)); };
       }});
#endif
#ifdef MROCE_SIM_ROCE
  registry.add({"roce", "RoCEv2 baseline: one path per QP, go-back-N, DCQCN", true,
                [](Params& p) -> TransportMaker {
                  baseline::RoceConfig base = read_roce_config(p);
                  return [base](const HostContext& h) {
                    return std::make_unique<baseline::RoceEngine>(for_host(base, h));
                  };
                }});
#endif
  (void)registry;
}

}  // namespace mroce::sim
