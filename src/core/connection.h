// One MetaRoCE connection between two endpoints: many paths below (each its own
// sequence space, window, RTT and ECN history, held with their totals by a PathSet),
// many streams above, one congestion controller (congestion.h) and one pacer (pacer.h).
// The methods are split by concern over several files:
//   connection.cc         set-up, tear-down, timers, stream binding
//   connection_send.cc    choosing what to send next
//   connection_receive.cc placing data and completing messages in stream order
//   connection_ack.cc     ACK/NACK processing, loss recovery, path failure
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "core/congestion.h"
#include "core/context.h"
#include "core/inbound.h"
#include "core/pacer.h"
#include "core/path_set.h"
#include "core/ring.h"
#include "core/rx_path.h"
#include "core/tx_path.h"
#include "wire/packet.h"

namespace mroce {

// A READ or atomic request being answered.
struct Response {
  bool used = false;
  wire::DataOp op = wire::DataOp::kReadResponse;
  std::uint32_t dst_stream = 0;  // the requester's stream
  std::uint32_t msn = 0;
  std::uint64_t addr = 0;
  std::uint32_t rkey = 0;
  std::uint32_t length = 0;
  std::uint32_t segments = 0;
  std::uint32_t sent = 0;
  std::uint32_t acked = 0;
  std::uint64_t value = 0;  // atomic: the original value
};

class Connection {
 public:
  // How long a connection closed by its peer answers the peer's retried CLOSE: the
  // closer's first nine retries (1 ms doubling), 20 CLOSEs (SPEC §4.3).
  static constexpr Time kTimeWaitDuration = kSecond;

  Connection(EngineContext& ctx, ConnId id, const Endpoint& peer, Time now);

  // Set-up.
  void start_connect(Time now);
  void on_handshake(Time now, const wire::Packet& pkt);
  void on_confirm(Time now);
  void on_close(Time now, bool ack);
  std::uint32_t peer_conn() const { return peer_conn_; }
  std::uint64_t peer_token() const { return peer_token_; }
  // A CLOSE_ACK is due and not sent yet.
  bool close_ack_owed() const { return send_close_ack_; }
  // An ACCEPT must come from the endpoint we are connecting to: one of its addresses is
  // the one we know it by, with its listening port.
  bool answers_from_peer(const wire::HandshakeHeader& hs) const {
    if (hs.listen_port != peer_.port) return false;
    for (std::size_t i = 0; i < hs.address_count && i < hs.addresses.size(); ++i) {
      if (hs.addresses[i] == peer_.addr.bytes) return true;
    }
    return false;
  }
  bool matches_peer_incarnation(const wire::HandshakeHeader& hs) const {
    return peer_conn_ == hs.src_conn && peer_token_ == hs.src_token;
  }
  // Until the connection is established or adopted by a local stream, set-up answers
  // go to the source of the latest CONNECT, never to an address the CONNECT names.
  void answer_at(const Endpoint& source) { reply_to_ = source; }
  // The source of the latest CONNECT, ACCEPT or CLOSE: an answer to it goes there.
  void heard_from(const Endpoint& source) { answer_to_ = source; }
  const Endpoint& handshake_destination() const { return reply_to_.port ? reply_to_ : peer_; }
  bool has_streams() const { return !streams_.empty(); }

  // Streams.
  void bind(Time now, Stream& s);
  void unbind(Time now, Stream& s);
  // The stream has new work to send.
  void schedule_stream(Stream& s);
  // A READ or atomic was posted: the peer will owe us a response, so it counts as one of
  // our senders from now on (every request then carries a share that counts them all).
  void expect_response(Time now);

  // Datapath.
  void on_data(Time now, const RxMeta& meta, const wire::Packet& pkt);
  void on_ack(Time now, const wire::Packet& pkt);
  void on_nack(Time now, const wire::Packet& pkt);
  bool poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  void on_timer(Time now);
  Time next_deadline() const;

  ConnId id() const { return id_; }
  std::uint64_t token() const { return local_token_; }
  ConnState state() const { return state_; }
  const Endpoint& peer() const { return peer_; }
  bool established() const { return state_ == ConnState::kEstablished; }
  bool finished() const { return state_ == ConnState::kClosed || state_ == ConnState::kFailed; }
  void stats(ConnStats* out) const;
  bool path_stats(std::uint16_t path, PathStats* out) const;
  // Aborts if a total kept over the paths disagrees with the paths.
  void validate() const { paths_.validate(); }

  // Engine bookkeeping.
  std::size_t heap_index = ~std::size_t{0};
  Time heap_key = kNever;
  bool in_ready = false;
  bool waiting_for_planes = false;  // in EngineContext::waiting_for_planes
  bool half_open = false;           // in the engine's table of unproven set-ups
  // The application put the stream in error: its open work is flushed.
  void flush_to_error(Stream& s) { flush_stream(s, WcStatus::kWrFlushErr); }

 private:
  // connection.cc
  void adopt_peer(const wire::HandshakeHeader& hs);
  // `asked`: when we sent the timed set-up packet that the one establishing it answers
  // (kNever if none: the set-up then measures no round trip).
  void establish(Time now, Time asked);
  void fail(Time now, WcStatus status);
  void flush_stream(Stream& s, WcStatus first_status);
  // A work request leaves the send queue, whatever its state: the peer's message slot
  // it held (and response slot, for a READ or atomic) is free again. Every way out of
  // the queue goes through here, so the counts cannot drift.
  void retire(Stream& s, Wqe& w);
  void emit_event(Time now, EventKind kind, std::uint16_t path = 0, std::uint8_t plane = 0);
  std::uint16_t pool_port(std::uint32_t i) const;
  // Counts the peer as an active sender while its latest DATA says it has more queued.
  void note_peer_backlog(Time now, std::uint32_t sent_at, bool backlog);
  void update_activity(Time now);

  // connection_send.cc
  bool emit_handshake(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  bool emit_nack(std::span<std::uint8_t> buf, TxMeta* out);
  bool emit_ack(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  bool emit_probe(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  bool emit_retransmit(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  bool emit_tail_probe(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  bool emit_new(Time now, std::span<std::uint8_t> buf, TxMeta* out);
  bool next_segment(Time now, SegmentRef* seg, bool* moved);
  std::uint16_t fresh_port(const TxPath& p);
  bool segment_valid(const SegmentRef& seg);
  void transmit(Time now, TxPath& p, std::uint32_t psn, bool retransmit,
                std::span<std::uint8_t> buf, TxMeta* out);
  std::size_t build_data(Time now, TxPath& p, std::uint32_t psn, const SegmentRef& seg,
                         bool retransmit, std::span<std::uint8_t> buf, std::uint32_t* payload,
                         const std::uint8_t** reference);
  bool has_unsent() const;
  std::uint64_t pacing_rate() const;
  void fill_reply_meta(const RxPath& r, TxMeta* out) const;

  // connection_receive.cc
  enum class Verdict : std::uint8_t { kAccept, kNack, kDrop };
  struct Outcome {
    Verdict verdict = Verdict::kAccept;
    wire::NackCode code = wire::NackCode::kReceiverNotReady;
    DropReason reason = DropReason::kMalformed;
  };
  Outcome place(Time now, const wire::DataHeader& d, std::span<const std::uint8_t> payload);
  Outcome place_request(Time now, Stream& s, const wire::DataHeader& d,
                        std::span<const std::uint8_t> payload);
  // The first packet of a message: its inbound record, and the checks made once per message.
  bool take_shared(Time now, Stream& s, std::uint32_t ssn);
  Outcome open_message(Time now, Stream& s, const wire::DataHeader& d, InboundMessage** out);
  // Which segment of `m` the packet is; false if its offset or length does not fit.
  bool segment_index(const InboundMessage& m, const wire::DataHeader& d,
                     std::uint32_t* index) const;
  // Copies a WRITE or SEND segment into final memory (other ops carry no payload to place).
  Outcome write_segment(Time now, Stream& s, InboundMessage& m, const wire::DataHeader& d,
                        std::span<const std::uint8_t> payload);
  Outcome place_response(Time now, Stream& s, const wire::DataHeader& d,
                         std::span<const std::uint8_t> payload);
  Outcome fail_message(Time now, Stream& s, InboundMessage& m, wire::NackCode code,
                       DropReason reason, WcStatus recv_status);
  void publish_last_byte(const InboundMessage& m);
  void advance_receiver(Time now, Stream& s);
  void execute(Time now, Stream& s, const InboundMessage& m);
  // A fetch-and-add or compare-and-swap on its target word; returns the word's old value.
  std::uint64_t apply_atomic(const InboundMessage& m);
  void ack_held_paths();
  void queue_nack(const RxPath& r, std::uint8_t path, const wire::DataHeader& d,
                  wire::NackCode code);
  Response* allocate_response();

  // connection_ack.cc
  // The path an ACK or NACK is about, if it names a current path generation.
  TxPath* feedback_path(const wire::CommonHeader& c);
  // What one ACK newly acknowledged on its path.
  struct Acked {
    std::uint32_t packets = 0;
    std::uint32_t bytes = 0;
    bool retransmission = false;  // among them a PSN sent more than once
    std::uint32_t highest = 0;    // one past the highest PSN acknowledged
  };
  // What one ACK newly reports received and CE-marked on its path.
  struct Reported {
    std::uint32_t rx = 0;
    std::uint32_t ce = 0;
  };
  Acked acknowledge(Time now, TxPath& p, const wire::AckHeader& a);
  void detect_losses(Time now, TxPath& p, const Acked& acked);
  void sample_rtt(Time now, TxPath& p, const wire::AckHeader& a);
  bool older_than_read(const TxPath& p, const wire::AckHeader& a) const;
  Reported read_counters(TxPath& p, const wire::AckHeader& a);
  void note_progress(Time now, TxPath& p, std::uint32_t packets);
  void segment_acked(Time now, const SegmentRef& seg);
  void declare_lost(Time now, TxPath& p, TxEntry& e, bool congestion_check);
  bool loses_far_more(const TxPath& p) const;
  void move_content(TxEntry& e);
  void check_timeouts(Time now);
  void fail_path(Time now, TxPath& p);
  void reroute_path(Time now, TxPath& p);
  void go_home(Time now, TxPath& p, bool scouting);
  // How long a path that a failure moved off its set-up port waits before trying that
  // port again: a heal is found within about this; each time home is still dead, twice
  // as long.
  // A group's scout waits at most kLastScouting; the rest of its group wait for the
  // scout's word, or kLastHomecoming on their own.
  static constexpr Time kFirstHomecoming = 500 * kMillisecond;
  static constexpr Time kLastScouting = 1 * kSecond;
  static constexpr Time kLastHomecoming = 16 * kSecond;
  void home_answered(Time now, TxPath& p);
  void schedule_home(Time now, TxPath& p);
  void recover_path(Time now, TxPath& p);
  // How many of the other paths a new port would share its route with, as far as the
  // connection knows (same port, or a port whose home path shares fate with it), plus
  // a large penalty if the route is believed dead.
  std::uint32_t crowding(const TxPath& p, std::uint16_t port, const std::uint16_t* port_fate) const;
  static constexpr std::uint16_t kUnknownFate = 0xffff;
  void update_planes(Time now);
  void complete_sends(Time now, Stream& s);
  void fail_wqe(Time now, Stream& s, Wqe& w, WcStatus status);
  void on_congestion_signal(Time now, TxPath& p, double cut_alpha);
  void update_windows(Time now, TxPath& p, std::uint32_t acked_bytes, std::uint32_t rx_delta,
                      std::uint32_t ce_delta);
  std::uint32_t max_path_window() const;
  void open_to_bdp(Time rtt);
  // The paths announced at set-up: `paths` are used from the start, the rest (up to
  // max_paths) once the window needs them (add_paths).
  std::uint16_t announced_paths() const { return std::max(cfg_.paths, cfg_.max_paths); }
  // Up to `want` paths in use, never more than announced; a new path starts with the mean
  // window of the active ones.
  void add_paths(std::size_t want);
  void init_path(TxPath& p);
  std::uint32_t increase_boost(const TxPath& p) const;
  void arm_path_timer(Time at) { path_timer_at_ = std::min(path_timer_at_, at); }
  Time path_rto(const TxPath& p) const;
  Time path_pto(const TxPath& p) const;
  Time tail_probe_due(const TxPath& p) const;
  void arm_tail_probes();

  EngineContext& ctx_;
  const EngineConfig& cfg_;

  // Hot: what every poll and every packet reads, together in the first cache lines.
  ConnId id_;
  std::uint32_t peer_conn_ = 0;
  std::uint64_t peer_token_ = 0;
  ConnState state_ = ConnState::kConnecting;
  bool handshake_copy_ = false;  // the second of a timed pair is still to go
  // ACCEPTs owed, one per CONNECT received (copies read in one batch too), never more:
  // a stranger draws no more packets than it sent.
  std::uint8_t accepts_due_ = 0;
  std::uint8_t confirms_due_ = 0;  // CONFIRMs still to send
  bool send_close_ = false;
  bool send_close_ack_ = false;
  bool counted_sender_ = false;
  bool peer_seen_ = false;     // DATA has arrived from the peer
  bool rtt_sampled_ = false;   // an ACK has given an RTT sample
  bool peer_backlog_ = false;  // the BACKLOG flag of the latest DATA it sent
  std::uint16_t mss_;
  std::uint32_t open_requests_ = 0;  // READ/atomic started, not completed
  std::uint32_t peer_sent_at_ = 0;   // sender timestamp of that DATA
  Time handshake_at_ = kNever;       // next CONNECT/ACCEPT/CLOSE retransmission
  // Our latest timed CONNECT and ACCEPT: an ACCEPT answers the one, a CONFIRM (or anything
  // with our token) the other. Apart, because when both sides open at once each sends a
  // CONNECT and then an ACCEPT, and the peer's ACCEPT answers our CONNECT.
  Time connect_sent_ = kNever;
  Time accept_sent_ = kNever;
  Time last_backlog_ = 0;
  Time peer_noted_at_ = 0;  // when peer_backlog_ was last set
  // Timers kept as lower bounds, so the deadline is O(1) however many paths: when one
  // fires, the paths are scanned and the bound recomputed.
  Time path_timer_at_ = kNever;      // retransmission timeouts and probes
  Time ack_timer_at_ = kNever;       // delayed ACKs
  Time srtt_ = 0;                    // smoothed RTT over every path's samples
  Time latest_rtt_ = 0;              // the latest sample on any path
  bool tail_armed_ = false;          // nothing unsent: the paths' tail probes are armed
  std::uint32_t burst_packets_ = 0;  // new packets since the data last ran out
  Time last_ce_at_ = kNever;         // the latest ACK that reported new CE marks
  Time tail_since_ = 0;              // when the latest new data left with nothing after it
  bool message_completed_ = false;   // by the DATA being received: every path acks now
  Time all_failed_since_ = kNever;
  PathSet paths_;
  CongestionController cc_;  // the connection-level window, rate hint, ECN seen
  Pacer pacer_;
  std::uint64_t tx_data_bytes_ = 0;
  std::uint64_t rx_data_bytes_ = 0;
  std::vector<RxPath> rx_;
  struct PendingNack {
    std::uint8_t path;
    std::uint8_t generation;
    wire::NackHeader nack;
  };
  Ring<PendingNack> nacks_;
  Ring<std::uint8_t> ack_queue_;
  struct Waiting {
    SegmentRef seg;
    Time not_before;
  };
  Ring<SegmentRef> moved_;  // content taken off a path, to send on any path
  Ring<StreamId> sendable_;
  Ring<Waiting> rnr_waiting_;  // content refused for want of a receive

  // Identities (set-up exchanges them).
  Endpoint peer_;
  Endpoint reply_to_;  // port 0: none, answers go to peer_
  Endpoint answer_to_;
  bool initiator_ = false;
  std::uint64_t local_token_;
  std::uint32_t tx_isn_;
  std::uint32_t rx_isn_ = 0;
  std::array<Address, wire::kMaxPlanes> peer_planes_{};
  std::uint8_t planes_ = 1;  // used: min(local, peer)
  std::uint16_t peer_max_messages_ = 0;
  std::uint16_t peer_max_responses_ = 0;
  std::uint16_t peer_paths_ = 0;  // its receive paths are allocated once established

  // Set-up and tear-down retransmission.
  Time started_ = 0;
  Time handshake_interval_ = 0;
  std::uint32_t handshake_tries_ = 0;
  bool send_connect_ = false;
  Time time_wait_until_ = kNever;

  // Paths.
  std::uint32_t path_window_packets_;  // a path's packets outstanding at most, set up once
  std::uint32_t retransmit_cursor_ = 0;
  std::uint8_t plane_down_mask_ = 0;
  std::uint32_t port_salt_;

  // Streams.
  std::vector<StreamId> streams_;
  std::uint32_t open_messages_ = 0;  // started, not completed (bounds the peer's table)

  // Receiver side.
  InboundTable inbound_;
  std::vector<Response> responses_;
  Ring<std::uint32_t> responding_;  // slots with segments never sent

  // Statistics.
  std::uint64_t retransmits_ = 0;
  Time fate_until_ = 0;          // a home route dying before this shares the fate below
  std::uint8_t fate_label_ = 0;  // the label of the latest group of home routes that died
  std::uint64_t reentropies_ = 0;
  std::uint64_t path_failures_ = 0;
  std::uint64_t plane_failures_ = 0;
};

}  // namespace mroce
