// How transports plug into the simulator: by name. A transport registers a function
// that reads its settings (the scenario's [transport.NAME] table) once and returns a
// maker; the simulator then calls the maker once per host.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/transport.h"
#include "sim/params.h"

namespace mroce::sim {

// What a transport needs to know about the host it will run on.
struct HostContext {
  std::uint32_t host = 0;
  std::uint32_t hosts = 0;
  std::vector<Address> planes;     // this host's NIC addresses, by plane
  std::uint16_t port = 0;          // the UDP port every host listens on
  std::uint64_t seed = 0;          // distinct per host, derived from the scenario seed
  std::uint64_t nic_rate_bps = 0;  // per plane
  Time base_rtt = 0;               // propagation round trip over the longest path
  std::uint32_t mtu_payload = 0;   // largest UDP payload the fabric is meant to carry
};

using TransportMaker = std::function<std::unique_ptr<Transport>(const HostContext&)>;

struct TransportInfo {
  std::string name;
  std::string description;
  bool wants_pfc = false;  // scenarios with pfc = "auto" turn PFC on for it
  // Reads settings (unknown keys: reject_unused throws ConfigError), returns the maker.
  std::function<TransportMaker(Params& settings)> configure;
};

class TransportRegistry {
 public:
  void add(TransportInfo info);
  const TransportInfo* find(const std::string& name) const;
  const std::vector<TransportInfo>& all() const { return transports_; }
  std::string names() const;  // "a, b, c"

 private:
  std::vector<TransportInfo> transports_;
};

}  // namespace mroce::sim
