// The requester half of an RC queue pair: the send queue, PSN assignment, go-back-N
// recovery and in-order completion. Packets are rebuilt from the work request whenever
// they are (re)sent, so no per-packet state is kept.
//
// PSN bookkeeping: una_ is the oldest PSN not yet acknowledged, next_psn_ the next one to
// (re)send, high_psn_ one past the highest ever sent. Recovery moves the send cursor back
// to una_ (go-back-N); anything below high_psn_ sent again is a retransmission.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "baseline/codec.h"
#include "core/transport.h"

namespace mroce::baseline {

class QueuePair;

class Requester {
 public:
  Requester(QueuePair& qp, const StreamConfig& config);

  void start(std::uint32_t initial_psn);
  Errc post(Time now, const SendWr& wr);

  bool can_send() const;
  // Writes the next request packet; *retransmit tells whether its PSN was sent before.
  std::size_t write(Time now, std::span<std::uint8_t> buf, TxMeta* out, bool* retransmit);
  // ACK, NAK, READ response or atomic ACK addressed to this QP.
  void on_response(Time now, const Packet& p);
  void on_timer(Time now);
  Time deadline() const { return rto_at_ < rnr_until_ ? rto_at_ : rnr_until_; }
  // Completes every outstanding work request with kWrFlushErr.
  void flush();

  std::uint32_t outstanding_packets() const;
  std::uint64_t acked_packets() const { return acked_packets_; }
  std::uint64_t loss_events() const { return loss_events_; }
  std::uint64_t timeouts() const { return timeouts_; }
  Time srtt() const { return srtt_; }
  Time min_rtt() const { return min_rtt_; }

 private:
  struct Wqe {
    SendWr wr;
    std::uint32_t length = 0;
    std::uint32_t first_psn = 0;
    std::uint32_t packets = 0;    // PSNs it takes: request packets, or READ response packets
    std::uint32_t responses = 0;  // READ/atomic response packets received, in order
    std::uint32_t read_from = 0;  // READ: first response packet the last request asked for
    bool started = false;
    WcStatus local_status = WcStatus::kSuccess;  // a bad local key fails it at its turn
  };

  Wqe& at(std::uint64_t index) { return ring_[index % ring_.size()]; }
  const Wqe& at(std::uint64_t index) const { return ring_[index % ring_.size()]; }
  std::uint8_t* inline_data(std::uint64_t index) {
    return inline_.data() + (index % ring_.size()) * max_inline_;
  }
  static bool is_read_or_atomic(const Wqe& w);
  static std::uint32_t last_psn(const Wqe& w);

  std::size_t write_send_or_write(Wqe& w, std::span<std::uint8_t> buf, TxMeta* out);
  std::size_t write_read(Wqe& w, std::span<std::uint8_t> buf, TxMeta* out);
  std::size_t write_atomic(Wqe& w, std::span<std::uint8_t> buf, TxMeta* out);

  void on_ack(Time now, std::uint32_t psn);
  void on_rnr_nak(Time now, std::uint32_t psn, std::uint8_t timer_code);
  void on_sequence_nak(Time now, std::uint32_t psn);
  void on_fatal_nak(Time now, std::uint32_t psn, NakCode code);
  void on_read_response(Time now, const Packet& p);
  void on_atomic_ack(Time now, const Packet& p);

  // Acknowledges every PSN before `psn`, short of a READ or atomic still missing
  // responses (an implied NAK: that request is sent again).
  void ack_before(Time now, std::uint32_t psn);
  void progress(Time now, std::uint32_t una);
  void move_cursor(std::uint32_t psn);
  void go_back(std::uint32_t psn);
  void go_back_once(std::uint32_t psn);
  bool consume_retry(Time now);
  Time ack_timeout() const;
  void complete_done(Time now);
  void complete(const Wqe& w, WcStatus status);
  void fail_head(Time now, WcStatus status);

  QueuePair& qp_;
  std::uint32_t mtu_;
  std::uint32_t max_inline_;
  std::uint8_t rnr_retry_;
  std::vector<Wqe> ring_;
  std::vector<std::uint8_t> inline_;
  std::uint64_t head_ = 0;  // oldest work request not completed
  std::uint64_t send_ = 0;  // work request being (re)sent
  std::uint64_t tail_ = 0;  // next free slot
  std::uint32_t send_packet_ = 0;
  std::uint32_t next_psn_ = 0;
  std::uint32_t una_ = 0;
  std::uint32_t high_psn_ = 0;
  std::uint32_t rd_outstanding_ = 0;  // READs and atomics started, not completed
  std::uint8_t retry_left_ = 0;
  std::uint8_t rnr_left_ = 0;
  std::uint8_t backoff_ = 0;  // timeouts since the last RTT sample (adaptive_ack_timeout)
  Time rto_at_ = kNever;
  Time rnr_until_ = kNever;
  bool recovering_ = false;  // went back to recovery_psn_; a repeated NAK for it is stale
  std::uint32_t recovery_psn_ = 0;

  bool probing_ = false;  // one RTT sample in flight, never on a retransmission
  std::uint32_t probe_psn_ = 0;
  Time probe_sent_ = 0;
  Time srtt_ = 0;
  Time min_rtt_ = 0;
  std::uint64_t acked_packets_ = 0;
  std::uint64_t loss_events_ = 0;
  std::uint64_t timeouts_ = 0;
};

}  // namespace mroce::baseline
