// The rest of librdmacm's interface: event names, and what is not offered (multicast,
// enhanced connection establishment, rsockets), which fails with EOPNOTSUPP (rsockets:
// ENOSYS) and says so once on stderr. rpoll and rselect work on ordinary descriptors.
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <sys/select.h>

#include <cerrno>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace {

int refuse(const char* call, const char* why, int error) {
  static std::mutex mutex;
  static auto* seen = new std::set<std::string>;
  {
    std::lock_guard lock(mutex);
    if (seen->insert(call).second) std::fprintf(stderr, "mroce-rdmacm: %s: %s\n", call, why);
  }
  errno = error;
  return -1;
}

constexpr const char* kNoMulticast = "multicast is not supported (EOPNOTSUPP)";
constexpr const char* kNoEce = "enhanced connection establishment is not supported (EOPNOTSUPP)";
constexpr const char* kNoRsockets = "rsockets are not supported (ENOSYS)";

}  // namespace

extern "C" {

const char* rdma_event_str(rdma_cm_event_type event) {
  static const char* const kNames[] = {
      "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
      "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
      "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
      "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
      "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
      "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
      "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
      "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT"};
  const auto i = static_cast<unsigned>(event);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "UNKNOWN EVENT";
}

int rdma_join_multicast(rdma_cm_id*, sockaddr*, void*) {
  return refuse("rdma_join_multicast", kNoMulticast, EOPNOTSUPP);
}
int rdma_join_multicast_ex(rdma_cm_id*, rdma_cm_join_mc_attr_ex*, void*) {
  return refuse("rdma_join_multicast_ex", kNoMulticast, EOPNOTSUPP);
}
int rdma_leave_multicast(rdma_cm_id*, sockaddr*) {
  return refuse("rdma_leave_multicast", kNoMulticast, EOPNOTSUPP);
}

int rdma_set_local_ece(rdma_cm_id*, ibv_ece*) {
  return refuse("rdma_set_local_ece", kNoEce, EOPNOTSUPP);
}
int rdma_get_remote_ece(rdma_cm_id*, ibv_ece*) {
  return refuse("rdma_get_remote_ece", kNoEce, EOPNOTSUPP);
}
int rdma_reject_ece(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
  return rdma_reject(id, private_data, private_data_len);
}

int rpoll(pollfd* fds, nfds_t nfds, int timeout) {
  return poll(fds, nfds, timeout);
}
int rselect(int nfds, fd_set* r, fd_set* w, fd_set* e, timeval* timeout) {
  return select(nfds, r, w, e, timeout);
}

#define MROCE_RSOCKET_STUB(ret, name, ...)                       \
  ret name(__VA_ARGS__) {                                        \
    return static_cast<ret>(refuse(#name, kNoRsockets, ENOSYS)); \
  }
MROCE_RSOCKET_STUB(int, rsocket, int, int, int)
MROCE_RSOCKET_STUB(int, rbind, int, const sockaddr*, socklen_t)
MROCE_RSOCKET_STUB(int, rlisten, int, int)
MROCE_RSOCKET_STUB(int, raccept, int, sockaddr*, socklen_t*)
MROCE_RSOCKET_STUB(int, rconnect, int, const sockaddr*, socklen_t)
MROCE_RSOCKET_STUB(int, rshutdown, int, int)
MROCE_RSOCKET_STUB(int, rclose, int)
MROCE_RSOCKET_STUB(ssize_t, rrecv, int, void*, size_t, int)
MROCE_RSOCKET_STUB(ssize_t, rrecvfrom, int, void*, size_t, int, sockaddr*, socklen_t*)
MROCE_RSOCKET_STUB(ssize_t, rrecvmsg, int, msghdr*, int)
MROCE_RSOCKET_STUB(ssize_t, rsend, int, const void*, size_t, int)
MROCE_RSOCKET_STUB(ssize_t, rsendto, int, const void*, size_t, int, const sockaddr*, socklen_t)
MROCE_RSOCKET_STUB(ssize_t, rsendmsg, int, const msghdr*, int)
MROCE_RSOCKET_STUB(ssize_t, rread, int, void*, size_t)
MROCE_RSOCKET_STUB(ssize_t, rreadv, int, const iovec*, int)
MROCE_RSOCKET_STUB(ssize_t, rwrite, int, const void*, size_t)
MROCE_RSOCKET_STUB(ssize_t, rwritev, int, const iovec*, int)
MROCE_RSOCKET_STUB(int, rgetpeername, int, sockaddr*, socklen_t*)
MROCE_RSOCKET_STUB(int, rgetsockname, int, sockaddr*, socklen_t*)
MROCE_RSOCKET_STUB(int, rsetsockopt, int, int, int, const void*, socklen_t)
MROCE_RSOCKET_STUB(int, rgetsockopt, int, int, int, void*, socklen_t*)
MROCE_RSOCKET_STUB(int, riounmap, int, void*, size_t)
MROCE_RSOCKET_STUB(size_t, riowrite, int, const void*, size_t, off_t, int)

int rfcntl(int, int, ...) {
  return refuse("rfcntl", kNoRsockets, ENOSYS);
}
off_t riomap(int, void*, size_t, int, int, off_t) {
  return refuse("riomap", kNoRsockets, ENOSYS);
}

}  // extern "C"
