// The stand-in librdmacm's state: event channels, ids, and the service thread that runs
// the side channel (wire.h) for every id of the process. One mutex guards all of it; the
// calls that wait (synchronous ids) wait on a channel's fd without it.
#pragma once

#include <rdma/rdma_cma.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "rdmacm/devices.h"
#include "rdmacm/wire.h"

namespace mroce::rdmacm {

struct Id;

struct EventRecord {
  rdma_cm_event ev{};  // first: programs hold &ev
  std::uint8_t data[256]{};
};

struct Channel {
  rdma_event_channel pub{};  // pub.fd: the program's end of a socket pair, one byte an event
  int writer = -1;           // our end
  std::deque<EventRecord*> queue;
};

enum class State {
  kIdle,
  kBound,
  kAddrResolved,
  kRouteResolved,
  kListening,
  kConnecting,   // TCP connect under way (active)
  kReqSent,      // waiting for REP or REJ (active)
  kRepReceived,  // CONNECT_RESPONSE given, waiting for rdma_establish (active, no QP)
  kReqReceived,  // CONNECT_REQUEST given, waiting for accept or reject (passive)
  kRepSent,      // waiting for RTU (passive)
  kConnected,
  kDisconnecting,  // DREQ sent, waiting for DREP
  kDisconnected,
  kError,
};

struct Socket;

struct Id {
  rdma_cm_id pub{};  // first: programs hold &pub
  State state = State::kIdle;
  bool sync = false;       // no channel given: the calls wait for their own events
  Channel* own = nullptr;  // the private channel of a synchronous id
  Socket* sock = nullptr;  // the listener or the link to the peer
  DeviceMatch dev;
  ibv_sa_path_rec path{};
  Endpoint local;  // what REQ/REP said about us
  Endpoint peer;   // what the peer said
  bool created_pd = false;
  bool created_cqs = false;
  bool has_qp_init = false;  // rdma_create_ep on a passive id: QPs for its requests
  ibv_qp_init_attr qp_init{};
  ibv_pd* ep_pd = nullptr;
  std::int64_t deadline_ms = 0;  // 0: none
  int unacked = 0;               // events retrieved and not yet acknowledged: rdma_destroy_id waits
  // Active side: the REQ to send, and how long a refused connect is tried again.
  std::vector<std::uint8_t> req;
  std::int64_t connect_deadline_ms = 0;
  std::int64_t refused_until_ms = 0;
  bool retrying = false;  // kConnecting: deadline_ms is when to try again
};

inline Id* id_of(rdma_cm_id* p) {
  return reinterpret_cast<Id*>(p);
}

std::mutex& cm_mutex();
std::condition_variable& acked();  // an event was acknowledged

// Queues an event for the id on its channel. Called with cm_mutex held.
void post_event(Id* id, rdma_cm_event_type type, int status, const Message* msg = nullptr,
                Id* listen = nullptr);

// Milliseconds of the monotonic clock.
std::int64_t now_ms();

// How long an active connect waits for its peer before UNREACHABLE (MROCE_CM_TIMEOUT_MS).
std::int64_t cm_timeout_ms();

}  // namespace mroce::rdmacm
