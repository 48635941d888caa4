// Anything a link delivers to or drains from: a switch or a host's NICs.
#pragma once

#include <cstdint>

#include "sim/packet.h"
#include "sim/time.h"

namespace mroce::sim {

class Node {
 public:
  // Packet `p` arrived on input `port`. The node now owns it.
  virtual void receive(SimTime now, PacketId p, std::uint16_t port) = 0;
  // A packet left the output queue of `port`: it started serializing, or was discarded.
  virtual void on_dequeue(SimTime now, const Packet& p, std::uint16_t port) = 0;

 protected:
  ~Node() = default;
};

}  // namespace mroce::sim
