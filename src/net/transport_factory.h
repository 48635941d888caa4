// Builds the transport engine a device drives, and maps DeviceOptions onto its
// configuration (with the timer values that suit real hosts).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/config.h"
#include "core/transport.h"
#include "mroce/mroce.h"

namespace mroce::net {

struct TransportSetup {
  std::vector<Address> planes;
  std::uint16_t listen_port = 0;
  std::uint16_t pool_base = 0;
  std::uint16_t pool_count = 0;
  std::uint64_t seed = 1;
};

// Engine settings a device derives from its DeviceOptions (and its sockets): MROCE_ENGINE
// may not set them, the options do.
inline constexpr std::string_view kDeviceSettings[] = {
    "src_port_base", "src_port_count", "paths", "mss", "line_rate", "rx_capacity"};

EngineConfig engine_config(const DeviceOptions& options, const TransportSetup& setup);

// Null, with one line in *error, when the engine refuses the settings or was not built.
std::unique_ptr<Transport> make_transport(const DeviceOptions& options, const TransportSetup& setup,
                                          std::string* error);

// Whether this build has the RoCEv2 baseline.
bool baseline_available();

// Anything a transport needs done to a fresh stream before it is connected; `plane_hint`
// is StreamConfig::plane.
Errc prepare_stream(TransportKind kind, Transport& transport, StreamId stream,
                    std::int16_t plane_hint);

}  // namespace mroce::net
