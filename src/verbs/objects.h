// The objects the library hands to programs. Each is rdma-core's public struct as the
// first member of a record of ours (a class without bases or virtual functions, so both
// share one address); programs read the public fields directly, the library casts back.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mroce/mroce.h"
#include "net/thread_annotations.h"
#include "verbs/completion_filter.h"
#include "verbs/qp_reaper.h"
#include "verbs/settings.h"

namespace mroce::verbs {

struct DeviceEntry {
  ibv_device ibv;
  int index = 0;
  std::vector<std::string> addresses;  // the planes, as configured
  std::vector<Address> planes;         // the same, parsed: GID i is planes[i]
  __be64 guid = 0;
};

struct Context {
  verbs_context vctx;  // programs hold &vctx.context (its last member)
  DeviceEntry* entry = nullptr;
  const Settings* settings = nullptr;
  std::unique_ptr<Device> device;
  int slot = 0;                  // see qpn.h
  std::atomic<int> children{0};  // PDs, CQs, QPs, channels not yet destroyed
  std::atomic<std::uint32_t> next_handle{1};
  CompletionFilter filter;
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
  ibv_cq ibv;
  std::unique_ptr<CompletionQueue> queue;
  std::atomic<int> qps{0};  // queue pairs that report here
};

struct Qp {
  ibv_qp ibv;
  std::unique_ptr<QueuePair> pair;
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  net::Mutex mutex;                            // also serialises the state changes of modify_qp
  ibv_qp_attr attr MROCE_GUARDED_BY(mutex){};  // what modify_qp was told, for query_qp
  bool min_rnr_timer_set MROCE_GUARDED_BY(mutex) = false;
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

}  // namespace mroce::verbs
