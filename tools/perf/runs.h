// The measurement loops of both ends. Bandwidth: the client keeps `depth` requests in
// flight per queue pair, the server reposts receives and checks what lands. Latency: a
// ping-pong of one message, the same loop on both ends.
#pragma once

#include <string>
#include <vector>

#include "report.h"
#include "session.h"

namespace mroce::perf {

inline constexpr std::uint32_t kLatencyWarmup = 100;
inline constexpr std::uint32_t kLatencyReceives = 32;
inline constexpr std::uint32_t kTxSlot = 0;  // latency: what we send from
inline constexpr std::uint32_t kRxSlot = 1;  // latency: where the peer's message lands

// Client: one bandwidth measurement at `size`. `sent` counts each queue pair's requests
// across sizes (it picks the slot each request uses, which --check relies on).
bool run_bandwidth(Session& s, const TestSpec& spec, std::uint32_t size, double interval,
                   std::vector<std::uint64_t>& sent, BandwidthResult* out, std::string* error);

// Latency, either end; `counter` numbers the round trips across sizes.
bool run_latency(Session& s, const TestSpec& spec, std::uint32_t size, bool client,
                 std::uint64_t& counter, LatencyResult* out, std::string* error);

// Server, bandwidth tests: receives posted ahead (SEND), each checked as it completes.
class Responder {
 public:
  Responder(Session& s, const TestSpec& spec) : s_(s), spec_(spec), received_(spec.qps) {}
  bool post_initial(std::string* error);
  // Handles what completed (waiting a while for it, or for `other_fd`, unless progress is
  // manual); false (with the reason) on a failed request.
  bool step(int other_fd, std::string* error);
  std::uint64_t mismatches() const { return mismatches_; }
  std::uint64_t received() const {
    std::uint64_t n = 0;
    for (auto r : received_) n += r;
    return n;
  }
  // WRITE --check: queue pair q's last `counts[q]` requests (at most depth of them), the
  // first in slot first[q] % depth, left `size` pattern bytes in their slots.
  std::uint64_t check_writes(std::uint32_t size, const std::vector<std::uint64_t>& first,
                             const std::vector<std::uint64_t>& counts);

 private:
  bool post_receive(std::uint32_t qp, std::uint32_t slot, std::string* error);
  Session& s_;
  const TestSpec& spec_;
  std::vector<std::uint64_t> received_;
  std::uint64_t mismatches_ = 0;
};

// Receives a latency test needs posted ahead (both ends).
bool post_latency_receives(Session& s, const TestSpec& spec, std::string* error);

}  // namespace mroce::perf
