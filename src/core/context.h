// What every connection of one engine shares: configuration, registered memory,
// streams, the bitmap and send-ring pools, counters, randomness, the receiver's fair share, and the
// sink that receives completions and events.
#pragma once

#include <memory>
#include <vector>

#include "core/config.h"
#include "core/fair_share.h"
#include "core/memory.h"
#include "core/random.h"
#include "core/segment_set.h"
#include "core/shared_recv_queue.h"
#include "core/stream.h"
#include "core/transport.h"
#include "core/tx_path.h"

namespace mroce {

struct EngineContext {
  explicit EngineContext(const EngineConfig& cfg)
      : config(cfg),
        memory(cfg.seed ^ 0x6d656d),
        random(cfg.seed),
        share(static_cast<std::uint64_t>(
            double(cfg.rx_capacity_bps ? cfg.rx_capacity_bps : cfg.line_rate_bps) *
            cfg.target_utilization)) {}

  Stream* stream(StreamId id) {
    return id && id <= streams.size() ? streams[id - 1].get() : nullptr;
  }
  SharedRecvQueue* srq(SrqId id) { return id && id <= srqs.size() ? srqs[id - 1].get() : nullptr; }
  void complete(const Completion& c) {
    if (sink) sink->on_completion(c);
  }
  void event(const Event& e) {
    if (sink) sink->on_event(e);
  }
  void drop(DropReason r) { ++counters.drops[static_cast<int>(r)]; }

  EngineConfig config;
  MemoryTable memory;
  Random random;
  FairShare share;
  BitmapPool bitmaps;
  EntryPool entries;  // send rings of every connection's paths
  Counters counters;
  Sink* sink = nullptr;
  std::uint8_t blocked_planes = 0;                     // the driver's full per-plane queues
  std::vector<ConnId> waiting_for_planes;              // connections that had data for those alone
  std::vector<std::unique_ptr<Stream>> streams;        // id - 1; null once destroyed
  std::vector<std::unique_ptr<SharedRecvQueue>> srqs;  // id - 1; null once destroyed
};

}  // namespace mroce
