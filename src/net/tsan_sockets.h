// ThreadSanitizer sees a datagram sent on one socket and received on another only
// through its interceptors of the send and receive calls (a release and an acquire of
// one object shared by every socket). io_uring sends and receives inside io_uring_enter,
// which it does not intercept; these say the same for every send and receive of the
// datapath, whatever carries it. They compile to nothing without ThreadSanitizer.
#pragma once

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MROCE_TSAN_SOCKETS 1
#include <sanitizer/tsan_interface.h>
#endif
#endif

namespace mroce::net {

#ifdef MROCE_TSAN_SOCKETS
inline char tsan_datagrams;
// Before datagrams are handed to the kernel.
inline void tsan_sent() {
  __tsan_release(&tsan_datagrams);
}
// After datagrams were received, before anyone reads them.
inline void tsan_received() {
  __tsan_acquire(&tsan_datagrams);
}
#else
inline void tsan_sent() {}
inline void tsan_received() {}
#endif

}  // namespace mroce::net
