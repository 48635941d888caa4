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

  // Link arrivals carry their packet in the low 32 bits of the event's arg; other
  // events' args prefetch some packet's line, which costs nothing but the fetch.
  SimContext() {
    events.set_prefetch(
        [](const void* pool, std::uint64_t arg) {
          static_cast<const PacketPool*>(pool)->prefetch(static_cast<PacketId>(arg));
        },
        &packets);
  }
  SimContext(const SimContext&) = delete;
  SimContext& operator=(const SimContext&) = delete;

  SimTime now() const { return events.now(); }

  void drop(PacketId p, DropCause cause) {
    if (packets[p].cls == PacketClass::kData) ++drops.data_packets;
    ++drops[cause];
    packets.release(p);
  }
};

}  // namespace mroce::sim
