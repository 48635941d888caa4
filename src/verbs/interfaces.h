// What the machine's network interfaces offer when MROCE_ADDRS does not name devices.
#pragma once

#include <string>
#include <vector>

#include "core/types.h"

namespace mroce::verbs {

// One address set per IPv4 interface that is up: the others first, loopback last, so the
// first device (the one programs pick by default) reaches other hosts.
std::vector<std::vector<std::string>> interface_devices();

// The index of the interface that holds `addr`, or 0.
unsigned interface_index(const Address& addr);

}  // namespace mroce::verbs
