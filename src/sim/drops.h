// Why the network dropped a packet. Every drop is counted by cause.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace mroce::sim {

enum class DropCause : std::uint8_t {
  kQueueFull,     // tail drop at an output queue
  kSharedBuffer,  // the switch's shared buffer was exhausted
  kRandomLoss,    // the link's configured loss probability
  kBlackHole,     // silent failure: the link or switch swallows traffic
  kLinkDown,      // visible failure: the port is down
  kNoRoute,       // no path to the destination (e.g. every uplink down)
  kBadAddress,    // the engine sent to an address the fabric does not know
  kCount,
};

inline const char* to_string(DropCause c) {
  switch (c) {
    case DropCause::kQueueFull:
      return "queue_full";
    case DropCause::kSharedBuffer:
      return "shared_buffer";
    case DropCause::kRandomLoss:
      return "random_loss";
    case DropCause::kBlackHole:
      return "black_hole";
    case DropCause::kLinkDown:
      return "link_down";
    case DropCause::kNoRoute:
      return "no_route";
    case DropCause::kBadAddress:
      return "bad_address";
    case DropCause::kCount:
      break;
  }
  return "?";
}

struct DropCounters {
  std::array<std::uint64_t, static_cast<int>(DropCause::kCount)> by_cause{};
  std::uint64_t data_packets = 0;  // of which data-class packets

  std::uint64_t& operator[](DropCause c) { return by_cause[static_cast<int>(c)]; }
  std::uint64_t operator[](DropCause c) const { return by_cause[static_cast<int>(c)]; }
  DropCounters& operator+=(const DropCounters& o) {
    for (std::size_t i = 0; i < by_cause.size(); ++i) by_cause[i] += o.by_cause[i];
    data_packets += o.data_packets;
    return *this;
  }
  std::uint64_t total() const {
    std::uint64_t n = 0;
    for (auto v : by_cause) n += v;
    return n;
  }
};

}  // namespace mroce::sim
