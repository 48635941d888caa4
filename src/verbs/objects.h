// The objects the library hands to programs. Each is rdma-core's public struct as the
// first member of a record of ours (a class without bases or virtual functions, so both
// share one address); programs read the public fields directly, the library casts back.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "mroce/mroce.h"
#include "net/thread_annotations.h"
#include "verbs/completion_filter.h"
#include "verbs/hw_counters.h"
#include "verbs/qp_reaper.h"
#include "verbs/settings.h"
#include "verbs/stats_server.h"

namespace mroce::verbs {

struct DeviceEntry {
  ibv_device ibv;
  int index = 0;
  std::vector<std::string> addresses;  // the planes, as configured
  std::vector<Address> planes;         // the same, parsed: GID i is planes[i]
  __be64 guid = 0;
};

struct Srq;

// Asynchronous events for ibv_get_async_event: queued by the engine's event hook, one
// count of the context's async_fd (a semaphore eventfd) per event.
class AsyncEvents {
 public:
  void push(const ibv_async_event& e, int fd) MROCE_EXCLUDES(mutex_);
  bool pop(ibv_async_event* out) MROCE_EXCLUDES(mutex_);
  // SRQs by engine id, so that an engine event names the program's ibv_srq.
  void add_srq(SrqId id, Srq* srq) MROCE_EXCLUDES(mutex_);
  void remove_srq(SrqId id) MROCE_EXCLUDES(mutex_);
  Srq* srq(SrqId id) MROCE_EXCLUDES(mutex_);

 private:
  net::Mutex mutex_;
  std::deque<ibv_async_event> queue_ MROCE_GUARDED_BY(mutex_);
  std::unordered_map<SrqId, Srq*> srqs_ MROCE_GUARDED_BY(mutex_);
};

struct Context {
  verbs_context vctx;  // programs hold &vctx.context (its last member)
  DeviceEntry* entry = nullptr;
  const Settings* settings = nullptr;
  std::unique_ptr<Device> device;
  std::unique_ptr<StatsServer> stats;           // after device: stopped before it is destroyed
  std::unique_ptr<HwCounterFiles> hw_counters;  // likewise
  int slot = 0;                                 // see qpn.h
  std::atomic<int> children{0};                 // PDs, CQs, QPs, channels not yet destroyed
  std::atomic<std::uint32_t> next_handle{1};
  CompletionFilter filter;
  AsyncEvents async;
  QpReaper reaper;  // after device: destroyed first, so its QPs go before the device
};

struct Pd {
  ibv_pd ibv;
};

struct Mr {
  ibv_mr ibv;
  std::unique_ptr<MemoryRegion> region;
};

struct Channel {
  ibv_comp_channel ibv;  // ibv.fd is an epoll set of the CQs' notification fds
};

struct Cq {
  union {
    ibv_cq ibv;
    ibv_cq_ex ex;  // same first fields; the rest only for CQs from ibv_create_cq_ex
  };
  ibv_wc current{};      // the entry ibv_start_poll/ibv_next_poll stand on
  std::uint64_t ts = 0;  // when it was taken (CLOCK_MONOTONIC ns)
  std::unique_ptr<CompletionQueue> queue;
  std::atomic<int> qps{0};                  // queue pairs that report here
  std::atomic<bool> solicited_only{false};  // as the last ibv_req_notify_cq asked
};

struct Srq {
  ibv_srq ibv;
  std::unique_ptr<SharedReceiveQueue> queue;
  std::uint32_t max_sge = 1;
  std::atomic<int> qps{0};  // queue pairs that take their receives here
};

struct Qp {
  union {
    ibv_qp ibv;
    ibv_qp_ex ex;  // same first member; the rest only for QPs from ibv_create_qp_ex
  };
  bool extended = false;
  // Work requests between ibv_wr_start and ibv_wr_complete (one thread at a time, as
  // the ibv_wr_* API requires), and copies of their inline data.
  std::vector<SendWr> batch;
  std::deque<std::vector<std::uint8_t>> batch_inline;
  int batch_error = 0;
  std::unique_ptr<QueuePair> pair;
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  net::Mutex mutex;                            // also serialises the state changes of modify_qp
  ibv_qp_attr attr MROCE_GUARDED_BY(mutex){};  // what modify_qp was told, for query_qp
  bool min_rnr_timer_set MROCE_GUARDED_BY(mutex) = false;
};

// An address handle: where a UD send goes, resolved when it is created (an all-zero GID
// is the configured peer, as for RC; see queue_pair.cc).
struct Ah {
  ibv_ah ibv;
  Address addr;
  std::uint8_t plane = 0;  // the local plane to send from (the GID index, when valid)
};

inline Context* context_of(ibv_context* c) {
  auto* vctx = reinterpret_cast<verbs_context*>(reinterpret_cast<char*>(c) -
                                                offsetof(verbs_context, context));
  return reinterpret_cast<Context*>(vctx);
}
inline DeviceEntry* entry_of(ibv_device* d) {
  return reinterpret_cast<DeviceEntry*>(d);
}
inline Pd* pd_of(ibv_pd* p) {
  return reinterpret_cast<Pd*>(p);
}
inline Mr* mr_of(ibv_mr* m) {
  return reinterpret_cast<Mr*>(m);
}
inline Channel* channel_of(ibv_comp_channel* c) {
  return reinterpret_cast<Channel*>(c);
}
inline Cq* cq_of(ibv_cq* c) {
  return reinterpret_cast<Cq*>(c);
}
inline Qp* qp_of(ibv_qp* q) {
  return reinterpret_cast<Qp*>(q);
}
inline Ah* ah_of(ibv_ah* a) {
  return reinterpret_cast<Ah*>(a);
}
inline Srq* srq_of(ibv_srq* s) {
  return reinterpret_cast<Srq*>(s);
}

}  // namespace mroce::verbs
