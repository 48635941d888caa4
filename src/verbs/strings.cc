// Names of Verbs enum values, for programs that print them.
#include <infiniband/verbs.h>

#include <iterator>

namespace {

template <std::size_t N>
const char* pick(const char* const (&names)[N], int value, const char* fallback) {
  return value >= 0 && static_cast<std::size_t>(value) < N ? names[value] : fallback;
}

constexpr const char* kNodeTypes[] = {"unknown",           "InfiniBand channel adapter",
                                      "InfiniBand switch", "InfiniBand router",
                                      "iWARP NIC",         "usNIC",
                                      "usNIC UDP",         "unspecified"};

constexpr const char* kPortStates[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                       "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};

constexpr const char* kEvents[] = {"CQ error",
                                   "local work queue catastrophic error",
                                   "invalid request local work queue error",
                                   "local access violation work queue error",
                                   "communication established",
                                   "send queue drained",
                                   "path migrated",
                                   "path migration request error",
                                   "local catastrophic error",
                                   "port active",
                                   "port error",
                                   "LID change",
                                   "P_Key change",
                                   "SM change",
                                   "SRQ catastrophic error",
                                   "SRQ limit reached",
                                   "last WQE reached",
                                   "client reregistration",
                                   "GID table change",
                                   "WQ fatal"};

constexpr const char* kWcStatus[] = {"success",
                                     "local length error",
                                     "local QP operation error",
                                     "local EE context operation error",
                                     "local protection error",
                                     "Work Request Flushed Error",
                                     "memory management operation error",
                                     "bad response error",
                                     "local access error",
                                     "remote invalid request error",
                                     "remote access error",
                                     "remote operation error",
                                     "transport retry counter exceeded",
                                     "RNR retry counter exceeded",
                                     "local RDD violation error",
                                     "remote invalid RD request",
                                     "aborted error",
                                     "invalid EE context number",
                                     "invalid EE context state",
                                     "fatal error",
                                     "response timeout error",
                                     "general error",
                                     "TM error",
                                     "TM software rendezvous"};

static_assert(std::size(kEvents) == IBV_EVENT_WQ_FATAL + 1);
static_assert(std::size(kWcStatus) == IBV_WC_TM_RNDV_INCOMPLETE + 1);

}  // namespace

extern "C" {

const char* ibv_node_type_str(ibv_node_type node_type) {
  return pick(kNodeTypes, node_type, "unknown");
}

const char* ibv_port_state_str(ibv_port_state port_state) {
  return pick(kPortStates, port_state, "unknown");
}

const char* ibv_event_type_str(ibv_event_type event) {
  return pick(kEvents, event, "unknown");
}

const char* ibv_wc_status_str(ibv_wc_status status) {
  return pick(kWcStatus, status, "unknown");
}

}  // extern "C"
