// What every queue pair of an engine shares: settings, registered memory, counters and the
// application's sink.
#pragma once

#include "baseline/config.h"
#include "baseline/memory.h"
#include "core/transport.h"

namespace mroce::baseline {

struct EngineContext {
  const RoceConfig& config;
  std::uint64_t port_rate_bps;  // line rate of one plane's port
  MemoryTable& memory;
  Counters& counters;
  Sink* const& sink;  // the engine's sink, which may be set after streams exist

  void complete(const Completion& c) const {
    if (sink) sink->on_completion(c);
  }
  void event(const Event& e) const {
    if (sink) sink->on_event(e);
  }
  void drop(DropReason r) const { ++counters.drops[static_cast<int>(r)]; }
};

// The drop reason for a failed memory check.
inline DropReason drop_reason(MemCheck c) {
  switch (c) {
    case MemCheck::kBadKey:
      return DropReason::kBadKey;
    case MemCheck::kOutOfRange:
      return DropReason::kOutOfRange;
    case MemCheck::kAccessDenied:
    case MemCheck::kOk:
      break;
  }
  return DropReason::kAccessDenied;
}

}  // namespace mroce::baseline
