// A stream: one ordered sequence of messages in each direction, the engine's queue
// pair. Its record is small and fixed; the queues are the application's, sized when it
// creates the stream, as for a Verbs QP.
#pragma once

#include <cstdint>
#include <vector>

#include "core/segment_set.h"
#include "core/transport.h"
#include "wire/packet.h"

namespace mroce {

// A posted send work request and its progress.
struct Wqe {
  SendWr wr;
  std::uint32_t msn = 0;
  std::uint32_t ssn = 0;     // receive it consumes at the peer (SEND*, WRITE_IMM)
  std::uint32_t length = 0;  // bytes (READ: bytes to read; atomics: 8)
  std::uint32_t segments = 0;
  std::uint32_t sent = 0;   // segments handed to paths at least once
  std::uint32_t acked = 0;  // segments acknowledged (placed at the peer)
  SegmentSet response;      // READ: response segments placed
  bool done = false;        // ready to complete once every earlier WQE has
  WcStatus status = WcStatus::kSuccess;
  std::uint8_t rnr_left = 0;
  Time rnr_episode_end = 0;
  std::uint32_t inline_offset = 0;  // into Stream::inline_data when wr is inline

  bool is_read() const { return wr.opcode == WrOpcode::kRdmaRead; }
  bool is_atomic() const {
    return wr.opcode == WrOpcode::kAtomicCmpSwp || wr.opcode == WrOpcode::kAtomicFetchAdd;
  }
  bool consumes_receive() const {
    return wr.opcode == WrOpcode::kSend || wr.opcode == WrOpcode::kSendWithImm ||
           wr.opcode == WrOpcode::kRdmaWriteWithImm;
  }
};

struct RecvWqe {
  RecvWr wr;
  std::uint64_t length = 0;  // sum of its SGEs
};

class Stream {
 public:
  Stream(StreamId id, const StreamConfig& config);

  StreamId id;
  StreamConfig config;
  StreamState state = StreamState::kIdle;
  ConnId conn = 0;
  Endpoint peer;
  StreamId remote = kNoStream;

  // Send queue: WQEs with msn in [sq_head, sq_tail); sq_cursor is the first WQE with
  // segments never sent.
  std::uint32_t sq_head = 0;
  std::uint32_t sq_cursor = 0;
  std::uint32_t sq_tail = 0;
  std::uint32_t next_ssn = 0;
  std::uint32_t reads_in_progress = 0;  // READ/atomic WQEs not done, for fences
  bool error_pending = false;           // a WQE failed: stop sending, flush when reached
  Time rnr_until = 0;

  Wqe& wqe(std::uint32_t msn) { return sq_[msn & sq_mask_]; }
  std::uint32_t sq_capacity() const { return config.sq_depth; }
  bool sq_full() const { return sq_tail - sq_head >= config.sq_depth; }

  // Receive queue: receives with ssn in [rq_head, rq_tail).
  std::uint32_t rq_head = 0;
  std::uint32_t rq_tail = 0;
  RecvWqe& recv(std::uint32_t ssn) { return rq_[ssn & rq_mask_]; }
  bool rq_full() const { return rq_tail - rq_head >= config.rq_depth; }
  bool receive_posted(std::uint32_t ssn) const {
    return static_cast<std::int32_t>(ssn - rq_head) >= 0 &&
           static_cast<std::int32_t>(rq_tail - ssn) > 0;
  }

  // Receiver side: the next message to complete, in order.
  std::uint32_t rx_next_msn = 0;
  // The first message refused (SPEC §7.3): copies of it once it has completed are refused
  // with its code, so a lost NACK cannot become a success; no later message executes.
  bool rx_refused = false;
  std::uint32_t rx_refused_msn = 0;
  wire::NackCode rx_refused_code = wire::NackCode::kRemoteAccess;
  DropReason rx_refused_reason = DropReason::kAccessDenied;

  // Inline payloads, max_inline bytes per send-queue slot.
  std::uint8_t* inline_slot(std::uint32_t msn) {
    return inline_.data() + std::size_t(msn & sq_mask_) * config.max_inline;
  }

  bool quiesced = false;  // see Transport::quiesce_stream

  // Connection's round-robin of streams with something to send.
  bool scheduled = false;

 private:
  std::vector<Wqe> sq_;
  std::vector<RecvWqe> rq_;
  std::uint32_t sq_mask_;
  std::uint32_t rq_mask_;
  std::vector<std::uint8_t> inline_;
};

}  // namespace mroce
