#include "gbn_registration.h"

#include "gbn_transport.h"

namespace mroce::sim::testing {

void register_gbn(TransportRegistry& registry) {
  TransportInfo info;
  info.name = "gbn";
  info.description =
      "test-only go-back-N, one path per stream, fixed window, no congestion control";
  info.wants_pfc = false;
  info.configure = [](Params& p) -> TransportMaker {
    GbnConfig base;
    base.window_packets = static_cast<std::uint32_t>(p.get_uint("window", 64, 1, 1 << 20));
    base.rto = p.get_ns("rto", 200 * kMicrosecond);
    base.ecn = p.get_bool("ecn", true);
    base.spread_planes = p.get_bool("spread_planes", true);
    const std::uint32_t mss = static_cast<std::uint32_t>(p.get_uint("mss", 0, 0, 65536));
    return [base, mss](const HostContext& host) {
      GbnConfig c = base;
      c.planes = host.planes;
      c.port = host.port;
      c.mss = mss ? mss : host.mtu_payload;
      return std::make_unique<GbnTransport>(c);
    };
  };
  registry.add(std::move(info));
}

}  // namespace mroce::sim::testing
