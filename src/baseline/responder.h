// The responder half of an RC queue pair: accepts the peer's requests strictly in PSN
// order, places them, and answers in order. An out-of-order request is discarded and
// draws one PSN-sequence NAK until the expected PSN arrives; a duplicate is acknowledged
// again and never executed twice (READs are read again, atomics answered from a cache).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "baseline/codec.h"
#include "baseline/response_queue.h"
#include "core/transport.h"

namespace mroce::baseline {

class QueuePair;

class Responder {
 public:
  Responder(QueuePair& qp, const StreamConfig& config);

  void start(std::uint32_t expected_psn);
  Errc post(const RecvWr& wr);
  void on_request(Time now, const Packet& p);

  bool has_control() const {
    return !queue_.empty() && queue_.front().kind != Response::Kind::kRead;
  }
  bool has_data() const { return !queue_.empty() && queue_.front().kind == Response::Kind::kRead; }
  // Writes the next response; *retransmit when it answers a duplicate request.
  std::size_t write(std::span<std::uint8_t> buf, TxMeta* out, bool* retransmit);
  // Completes every posted receive with kWrFlushErr and drops pending READ/atomic answers.
  void flush();

 private:
  enum class InMessage : std::uint8_t { kNone, kSend, kWrite };
  struct AtomicResult {
    std::uint32_t psn = 0;
    std::uint64_t original = 0;
    bool valid = false;
  };

  void on_send(Time now, const Packet& p);
  void on_write(Time now, const Packet& p);
  void on_read(Time now, const Packet& p);
  void on_atomic(Time now, const Packet& p);
  void on_duplicate(const Packet& p);

  // The packet at the expected PSN was executed.
  void accept(const Packet& p);
  void acknowledge_if_due(Time now, const Packet& p);
  void push_control(const Response& r);
  void push_answer(const Response& r);
  void receiver_not_ready();
  void fatal(Time now, NakCode code, DropReason reason);
  bool pop_receive(RecvWr* out);
  void complete_receive(const RecvWr& wr, WcStatus status, WcOpcode opcode, std::uint32_t length,
                        bool has_imm, std::uint32_t imm);
  Aeth ack_aeth() const;
  std::uint32_t packets_for(std::uint32_t length) const;

  QueuePair& qp_;
  std::uint32_t mtu_;
  std::uint8_t rnr_timer_code_;
  std::uint8_t max_answers_;
  std::vector<RecvWr> rq_;
  std::uint64_t rq_head_ = 0;
  std::uint64_t rq_tail_ = 0;
  ResponseQueue queue_;
  std::uint32_t answers_queued_ = 0;  // READ and atomic entries in queue_
  // The last max_dest_rd_atomic atomics executed, oldest overwritten first: a requester
  // never has more outstanding, so a duplicate always finds its answer.
  std::vector<AtomicResult> atomic_cache_;
  std::size_t atomic_next_ = 0;

  std::uint32_t epsn_ = 0;
  std::uint32_t msn_ = 0;
  bool nak_sent_ = false;  // one NAK per sequence error or RNR, until the PSN comes
  std::uint32_t since_ack_ = 0;
  Time last_ack_ = 0;

  InMessage in_ = InMessage::kNone;
  RecvWr receive_;  // the receive a multi-packet SEND fills
  bool receive_held_ = false;
  std::uint64_t received_ = 0;
  std::uint64_t write_va_ = 0;
  std::uint32_t write_rkey_ = 0;
  std::uint32_t write_length_ = 0;
  std::uint32_t written_ = 0;
};

}  // namespace mroce::baseline
