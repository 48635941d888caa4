// Picks the UDP port a context listens on: the first free slot above the base port
// (see qpn.h), so that several processes can share one address.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "mroce/mroce.h"

namespace mroce::verbs {

// Opens a device on base + slot for the lowest slot whose port is free on every address
// of `options`. Returns null and sets *error when no slot works.
std::unique_ptr<Device> open_on_free_slot(DeviceOptions options, std::uint16_t base, int* slot,
                                          std::string* error);

// True when some local UDP socket already holds `port` on one of the addresses.
bool port_in_use(const std::vector<std::string>& addresses, std::uint16_t port);

}  // namespace mroce::verbs
