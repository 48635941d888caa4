#include "net/transport_factory.h"

#include <cstdlib>
#include <stdexcept>

#include "core/engine.h"
#include "core/settings.h"

#ifdef MROCE_HAVE_BASELINE
#include "baseline/roce_engine.h"
#endif

namespace mroce::net {

EngineConfig engine_config(const DeviceOptions& options, const TransportSetup& setup) {
  EngineConfig c;
  c.planes = setup.planes;
  c.listen_port = setup.listen_port;
  c.src_port_base = setup.pool_base;
  c.src_port_count = setup.pool_count;
  c.paths = options.paths;
  c.mss = options.mtu;
  c.line_rate_bps = options.line_rate_bps;
  c.rx_capacity_bps = options.rx_capacity_bps;
  c.seed = setup.seed;
  c.payload_by_reference = true;  // TxBatch sends header and payload as two iovecs
  // Threads of a busy host are descheduled for milliseconds, which RTT samples do not
  // foresee: a 1 ms floor fires spurious timeouts (and re-entropies) there, and on a
  // loaded 2-core machine so did 5 ms (hundreds of re-entropies a second over loopback;
  // none at 20 ms). Tail losses are caught by the probe timeout, which does not depend
  // on this floor, and a black hole still moves traffic within tens of milliseconds.
  c.min_rto = 20 * kMillisecond;
  // A host's system calls cost per message, not per byte: a path's packets sent in a row
  // leave in one GSO message (at most 64 KiB of UDP payload) and the receiver's GRO
  // coalesces them back.
  c.path_train_bytes = 63 * 1024;
  // A host's RTT floor here is system calls and wake-ups (50 to 300 us on the testbed),
  // not distance: the faster increase is for round trips of a long-haul link.
  c.increase_interval = 1 * kMillisecond;
  return c;
}

std::unique_ptr<Transport> make_transport(const DeviceOptions& options, const TransportSetup& setup,
                                          std::string* error) {
  if (options.transport == TransportKind::kMetaRoce) {
    EngineConfig c = engine_config(options, setup);
    // MROCE_ENGINE="key=value,...": expert overrides of engine settings, for experiments.
    const char* overrides = std::getenv("MROCE_ENGINE");
    if (overrides && !apply_engine_overrides(overrides, &c, error, kDeviceSettings)) return nullptr;
    return std::make_unique<Engine>(c);
  }
#ifdef MROCE_HAVE_BASELINE
  baseline::RoceConfig c;
  c.planes = setup.planes;
  c.listen_port = setup.listen_port;
  c.src_port_base = setup.pool_base;
  c.src_port_count = setup.pool_count;
  c.mtu = options.mtu;
  c.line_rate_bps = options.line_rate_bps;
  c.seed = setup.seed;
  // A software host is descheduled for milliseconds at a time, which a NIC never is: a
  // 1 ms local ACK timeout exhausts the retry count on a busy machine, and so did 8 ms
  // on a loaded 2-core one (1 loopback run in 4 failed with "retry exceeded", with no
  // packet lost). perftest's default instead: timeout 14, 4.096 us x 2^14 = 67 ms.
  c.ack_timeout = Time{4096} << 14;
  // Descheduled longer still (a load of 8 on 2 cores with sanitizers: an RTT of 40-80
  // ms), the fixed timeout went back every 67 ms with nothing lost, the copies queued
  // in front of the next ACK, and the retries ran out: the timeout follows the RTT.
  c.adaptive_ack_timeout = true;
  try {
    return std::make_unique<baseline::RoceEngine>(c);
  } catch (const std::exception& e) {
    *error = std::string("RoCEv2 baseline: ") + e.what();
    return nullptr;
  }
#else
  *error = "this build has no RoCEv2 baseline transport";
  return nullptr;
#endif
}

bool baseline_available() {
#ifdef MROCE_HAVE_BASELINE
  return true;
#else
  return false;
#endif
}

Errc prepare_stream(TransportKind kind, Transport& transport, StreamId stream,
                    std::int16_t plane_hint) {
#ifdef MROCE_HAVE_BASELINE
  // A RoCEv2 QP lives on one port and names its peer by one address, the endpoint given
  // to connect(): plane 0, unless the application chose a plane itself.
  if (kind == TransportKind::kRoceV2 && plane_hint < 0) {
    return static_cast<baseline::RoceEngine&>(transport).bind_plane(stream, 0);
  }
#endif
  (void)kind;
  (void)transport;
  (void)stream;
  (void)plane_hint;
  return Errc::kOk;
}

}  // namespace mroce::net
