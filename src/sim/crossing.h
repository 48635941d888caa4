// Packets (and PFC frames) in flight from one partition of the network to another (a
// run split over threads or ranks). The sending partition appends them during a window;
// after the barrier that ends it (and, between ranks, the exchange that carries them
// over), the receiving partition copies each packet into its own pool and schedules its
// arrival. Every link between partitions is longer than a window, so none is due
// before it is delivered.
#pragma once

#include <cstring>
#include <stdexcept>
#include <vector>

#include "sim/context.h"

namespace mroce::sim {

class Crossing {
 public:
  Crossing(SimContext& from, SimContext& to) : from_(from), to_(to) {}

  // Sending side: takes `p` out of its pool; it is to arrive as
  // handler->on_event(at, arg | its new id).
  void send(SimTime at, EventHandler* handler, std::uint64_t arg, PacketId p) {
    Item& item = items_.emplace_back();
    item.at = at;
    item.handler = handler;
    item.arg = arg;
    item.packet = from_.packets[p];
    std::memcpy(item.header, from_.packets.header(p), item.packet.header_len());
    from_.packets.release(p);
  }

  // Sending side: an event without a packet (a PFC pause frame for a queue over there).
  void send_event(SimTime at, EventHandler* handler, std::uint64_t arg) {
    Item& item = items_.emplace_back();
    item.at = at;
    item.handler = handler;
    item.arg = arg;
    item.has_packet = false;
  }

  // Receiving side, between windows, in the order they were sent.
  void deliver() {
    for (const Item& item : items_) {
      // A window longer than the lookahead would deliver into the receiver's past.
      if (item.at < to_.now()) throw std::logic_error("a packet crossed partitions too late");
      if (!item.has_packet) {
        to_.events.schedule(item.at, item.handler, item.arg);
        continue;
      }
      const PacketId id = to_.packets.alloc();
      to_.packets[id] = item.packet;
      to_.packets[id].next = kNoPacket;
      std::memcpy(to_.packets.header(id), item.header, item.packet.header_len());
      to_.events.schedule(item.at, item.handler, item.arg | id);
    }
    items_.clear();
  }

  SimContext& to() const { return to_; }

  struct Item {
    SimTime at;
    EventHandler* handler;
    std::uint64_t arg;
    bool has_packet = true;
    Packet packet;
    std::uint8_t header[kMaxHeaderBytes];
  };
  // Between ranks: the sender's side reads and clears what was sent; the receiver's
  // side appends it, in the order it was sent, before deliver().
  std::vector<Item>& items() { return items_; }
  // When the first of what is waiting is due (kSimNever: nothing waits).
  SimTime earliest() const {
    SimTime t = kSimNever;
    for (const Item& item : items_) t = item.at < t ? item.at : t;
    return t;
  }

 private:
  SimContext& from_;
  SimContext& to_;
  std::vector<Item> items_;
};

}  // namespace mroce::sim
