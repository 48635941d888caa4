// What every component of one simulation run shares: the clock and event queue, the
// packet pool and the drop counters.
#pragma once

#include "sim/drops.h"
#include "sim/event_queue.h"
#include "sim/packet.h"

namespace mroce::sim {

struct SimContext {
  EventQueue events;
  PacketPool packets;
  DropCounters drops;
  std::uint64_t packets_sent = 0;  // by hosts, every class

  SimTime now() const { return events.now(); }

  void drop(PacketId p, DropCause cause) {
    if (packets[p].cls == PacketClass::kData) ++drops.data_packets;
    ++drops[cause];
    packets.release(p);
  }
};

}  // namespace mroce::sim
