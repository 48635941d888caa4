// Keeps completions Verbs would never produce away from the program.
//
// 1. Receive flushes caused by the peer. When a peer destroys its last queue pair towards
//    us, the engine closes the connection and flushes every stream bound to it, posted
//    receives included. On a Verbs RC queue pair the peer going away changes nothing until
//    a send of ours fails; ibv_rc_pingpong's client, which always has receives posted when
//    the server exits, would report the flush as an error. So a receive flush reaches the
//    program only once its queue pair reported an error of its own (then the QP is in
//    error, as in Verbs).
// 2. Completions of destroyed queue pairs: a destroyed QP lingers a moment in the engine
//    (see qp_reaper.h), and nothing it does then may surface.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "core/types.h"
#include "verbs/qpn.h"

namespace mroce::verbs {

class CompletionFilter {
 public:
  CompletionFilter() : flags_(new std::atomic<std::uint8_t>[kMaxStream + 1]()) {}

  // False for a completion the program must not see.
  bool admit(const Completion& c) {
    std::atomic<std::uint8_t>& f = flags_[c.stream & kMaxStream];
    const std::uint8_t now = f.load(std::memory_order_relaxed);
    if (now & kRetired) return false;
    if (c.status == WcStatus::kSuccess) return true;
    if (c.is_recv && c.status == WcStatus::kWrFlushErr) return now & kFailed;
    f.fetch_or(kFailed, std::memory_order_relaxed);
    return true;
  }

  // The program moved the QP to ERR: its receive flushes are for it to see.
  void fail(StreamId stream) { flags_[stream & kMaxStream].fetch_or(kFailed); }

  // The stream's QP was destroyed: drop whatever it still completes.
  void retire(StreamId stream) { flags_[stream & kMaxStream].store(kRetired); }

  // A new QP got the stream number (engine numbers are not reused, but be exact).
  void reset(StreamId stream) { flags_[stream & kMaxStream].store(0); }

 private:
  static constexpr std::uint8_t kFailed = 1;   // an error of its own was reported
  static constexpr std::uint8_t kRetired = 2;  // destroyed by the program
  std::unique_ptr<std::atomic<std::uint8_t>[]> flags_;
};

}  // namespace mroce::verbs
