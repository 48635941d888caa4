// Where an address vector points, shared by RC queue pairs (RTR) and UD address handles.
#pragma once

#include <infiniband/verbs.h>

#include "verbs/objects.h"

namespace mroce::verbs {

// The GID of the address vector, or for an all-zero GID (programs run without a GID
// index) MROCE_PEER, else this device's own first plane (same host).
Address peer_address(const Context& c, const ibv_ah_attr& ah);

}  // namespace mroce::verbs
