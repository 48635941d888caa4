#include "transports.h"

#include <algorithm>

#include "core/config.h"

// Each engine registers itself when its header is part of the tree.
#if __has_include("core/engine.h")
#include "core/engine.h"
#define MROCE_SIM_HAVE_ENGINE 1
#endif
#if __has_include("baseline/roce_engine.h") && defined(MROCE_SIM_HAVE_BASELINE)
#include "baseline/roce_engine.h"
#define MROCE_SIM_ROCE 1
#endif

namespace mroce::sim {

namespace {

// Reads [transport.mroce] into an EngineConfig; every field of EngineConfig can be set.
[[maybe_unused]] EngineConfig read_engine_config(Params& p) {
  EngineConfig c;
  c.paths = static_cast<std::uint16_t>(p.get_uint("paths", c.paths, 1, 256));
  c.mss = static_cast<std::uint16_t>(p.get_uint("mss", 0, 0, 9000));  // 0: scenario mtu
  c.src_port_base =
      static_cast<std::uint16_t>(p.get_uint("src_port_base", c.src_port_base, 1, 65535));
  c.src_port_count =
      static_cast<std::uint16_t>(p.get_uint("src_port_count", c.src_port_count, 1, 65535));
  c.path_window_packets =
      static_cast<std::uint32_t>(p.get_uint("path_window_packets", c.path_window_packets, 1, 256));
  c.max_inbound_messages = static_cast<std::uint16_t>(
      p.get_uint("max_inbound_messages", c.max_inbound_messages, 1, 65535));
  c.max_responses =
      static_cast<std::uint16_t>(p.get_uint("max_responses", c.max_responses, 1, 65535));
  c.line_rate_bps = p.get_rate("line_rate", 0);  // 0: NIC rate x planes
  c.rx_capacity_bps = p.get_rate("rx_capacity", 0);
  c.initial_window_bytes =
      static_cast<std::uint32_t>(p.get_bytes("initial_window", c.initial_window_bytes));
  c.min_path_window_bytes =
      static_cast<std::uint32_t>(p.get_bytes("min_path_window", c.min_path_window_bytes));
  c.dctcp_gain = p.get_double("dctcp_gain", c.dctcp_gain, 0, 1);
  c.active_sender_timeout = p.get_ns("active_sender_timeout", c.active_sender_timeout);
  c.ack_every = static_cast<std::uint32_t>(p.get_uint("ack_every", c.ack_every, 1, 256));
  c.ack_delay = p.get_ns("ack_delay", c.ack_delay);
  c.initial_rtt = p.get_ns("initial_rtt", 0);  // 0: the fabric's base RTT
  c.min_rto = p.get_ns("min_rto", c.min_rto);
  c.max_rto = p.get_ns("max_rto", c.max_rto);
  c.fail_after_timeouts =
      static_cast<std::uint32_t>(p.get_uint("fail_after_timeouts", c.fail_after_timeouts, 1, 1000));
  c.probe_interval = p.get_ns("probe_interval", c.probe_interval);
  c.max_probe_interval = p.get_ns("max_probe_interval", c.max_probe_interval);
  c.connect_timeout = p.get_ns("connect_timeout", c.connect_timeout);
  c.connect_retry = p.get_ns("connect_retry", 0);  // 0: ten of the fabric's base RTTs
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
// Reads [transport.roce] into a RoceConfig; DCQCN settings are prefixed dcqcn_.
baseline::RoceConfig read_roce_config(Params& p) {
  baseline::RoceConfig c;
  c.src_port_base =
      static_cast<std::uint16_t>(p.get_uint("src_port_base", c.src_port_base, 1, 65535));
  c.src_port_count =
      static_cast<std::uint16_t>(p.get_uint("src_port_count", c.src_port_count, 1, 65535));
  c.mtu = static_cast<std::uint32_t>(p.get_uint("mtu", 0, 0, 9000));  // 0: scenario mtu
  c.line_rate_bps = p.get_rate("line_rate", 0);                       // 0: NIC rate x planes
  c.ack_timeout = p.get_ns("ack_timeout", c.ack_timeout);
  c.retry_cnt = static_cast<std::uint8_t>(p.get_uint("retry_cnt", c.retry_cnt, 0, 7));
  c.max_rd_atomic = static_cast<std::uint8_t>(p.get_uint("max_rd_atomic", c.max_rd_atomic, 1, 255));
  c.ack_every = static_cast<std::uint32_t>(p.get_uint("ack_every", c.ack_every, 1, 65535));
  c.ack_interval = p.get_ns("ack_interval", c.ack_interval);
  c.max_dest_rd_atomic =
      static_cast<std::uint8_t>(p.get_uint("max_dest_rd_atomic", c.max_dest_rd_atomic, 1, 255));
  baseline::DcqcnConfig& d = c.dcqcn;
  d.enabled = p.get_bool("dcqcn", d.enabled);
  d.cnp_interval = p.get_ns("dcqcn_cnp_interval", d.cnp_interval);
  d.g = p.get_double("dcqcn_g", d.g, 0, 1);
  d.initial_alpha = p.get_double("dcqcn_initial_alpha", d.initial_alpha, 0, 1);
  d.alpha_period = p.get_ns("dcqcn_alpha_period", d.alpha_period);
  d.increase_period = p.get_ns("dcqcn_increase_period", d.increase_period);
  d.byte_counter = p.get_bytes("dcqcn_byte_counter", d.byte_counter);
  d.fast_recovery_steps = static_cast<std::uint32_t>(
      p.get_uint("dcqcn_fast_recovery_steps", d.fast_recovery_steps, 0, 1000));
  d.ai_rate_bps = p.get_rate("dcqcn_ai_rate", d.ai_rate_bps);
  d.hai_rate_bps = p.get_rate("dcqcn_hai_rate", d.hai_rate_bps);
  d.min_rate_bps = p.get_rate("dcqcn_min_rate", d.min_rate_bps);
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
