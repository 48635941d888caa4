// The side channel's sockets and the one thread that serves them for the whole process:
// listeners accept, links carry wire.h messages, deadlines turn into events.
#pragma once

#include <cstdint>
#include <vector>

#include "rdmacm/cm.h"

namespace mroce::rdmacm {

struct Socket {
  int fd = -1;
  bool listening = false;
  bool connecting = false;  // a non-blocking connect under way
  bool registered = false;  // in the service's epoll set
  Id* id = nullptr;         // the owner; null for an accepted link before its REQ
  Id* listener = nullptr;   // for an accepted link: the id that listened
  std::uint64_t token = 0;
  std::vector<std::uint8_t> rx;
  std::vector<std::uint8_t> tx;
};

// All with cm_mutex held.
Socket* new_socket(int fd, Id* owner);
void watch(Socket* s);         // adds it to the service (starting the thread if need be)
void close_socket(Socket* s);  // removes, closes and frees it
bool send_message(Socket* s, const Message& m);  // queues and writes what it can
void close_pending_of(Id* listener);             // accepted links that have not yet sent their REQ
void wake_service();                             // deadlines changed

// Protocol steps, in cm.cc.
void on_message(Socket* s, const Message& m);
void on_link_closed(Socket* s, int error);
void on_connected(Socket* s);
void on_deadlines(std::int64_t now);
std::int64_t next_deadline();

}  // namespace mroce::rdmacm
