// The sans-I/O interface every transport engine offers to its drivers (the UDP
// datapath, the simulator's host model, tests). Packets and the current time go in;
// packets to send, completions, events and the next timer deadline come out. An engine
// never reads a clock, opens a socket or starts a thread.
//
// Driving loop:
//   on_packet(now, ...) for every datagram received;
//   on_timer(now) once now >= next_deadline();
//   post_*(...) as the application asks;
//   then poll_transmit(now, ...) until it returns false, sending what it yields.
// Completions and events are delivered synchronously to the Sink from inside those
// calls. A Sink may call post_send/post_recv; it must not call on_packet, on_timer or
// poll_transmit.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "core/types.h"

namespace mroce {

enum class EventKind : std::uint8_t {
  kConnEstablished,
  kConnFailed,  // handshake gave up, or every path stayed dead too long
  kConnClosed,
  kPathFailed,     // a path was declared failed and re-entropied
  kPathRecovered,  // a failed path answered again
  kPlaneDown,      // every path on a plane failed
  kPlaneUp,
  kSrqLimitReached,  // a shared receive queue fell below its armed limit (now disarmed)
};
const char* to_string(EventKind);

struct Event {
  EventKind kind = EventKind::kConnEstablished;
  Time time = 0;
  ConnId conn = 0;
  Endpoint peer;
  std::uint16_t path = 0;
  std::uint8_t plane = 0;
  SrqId srq = kNoSrq;  // kSrqLimitReached
};

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void on_completion(const Completion& c) = 0;
  virtual void on_event(const Event&) {}
};

// Why a received packet was dropped without effect. Every drop is counted.
enum class DropReason : std::uint8_t {
  kMalformed,         // failed wire validation
  kUnknownConn,       // no live connection with that id
  kBadToken,          // connection exists, token wrong
  kStaleGeneration,   // sent on a path generation that was since retired
  kOutOfWindow,       // sequence number outside the receive window
  kDuplicate,         // already received (still acknowledged)
  kBadStream,         // stream unknown or not bound to this connection
  kBadKey,            // rkey names no region
  kOutOfRange,        // address range outside the region
  kAccessDenied,      // region lacks the needed right
  kInvalidRequest,    // e.g. message longer than the posted receive, misaligned atomic
  kReceiverNotReady,  // SEND with no posted receive
  kNoResources,       // message table full
  kBadAck,            // acknowledges data never sent
  kWrongPeer,         // set-up packet naming an endpoint the connection is not with
  kForgedConnect,     // CONNECT of a new incarnation of a live peer that never proved itself
  kSetupEvicted,      // unconfirmed set-up evicted, oldest first, from the full half-open table
  kOldAck,   // ACK older than one already read (replayed, duplicated, overtaken): SACK only
  kBadQkey,  // DATAGRAM whose Q_Key is not its queue pair's
  kCount,
};
const char* to_string(DropReason);

struct Counters {
  std::uint64_t rx_packets = 0;
  std::uint64_t rx_bytes = 0;
  std::uint64_t tx_packets = 0;
  std::uint64_t tx_bytes = 0;
  std::uint64_t tx_data_packets = 0;
  std::uint64_t tx_retransmits = 0;
  std::uint64_t rx_ce_packets = 0;
  // Over every connection, closed ones included (ConnStats has each one's own):
  std::uint64_t path_failures = 0;  // active paths declared failed (silence)
  std::uint64_t reentropies = 0;    // new source ports taken by paths, for any reason
  std::uint64_t paths_home = 0;     // paths sent back to their home port after a failure
  std::uint64_t drops[static_cast<int>(DropReason::kCount)] = {};
  std::uint64_t drop(DropReason r) const { return drops[static_cast<int>(r)]; }
  std::uint64_t total_drops() const;
};

enum class PathState : std::uint8_t { kActive, kFailed };
const char* to_string(PathState);

// What one path of a connection did (sender side), since the connection began.
struct PathStats {
  PathState state = PathState::kActive;
  std::uint8_t plane = 0;
  std::uint8_t generation = 0;
  std::uint16_t src_port = 0;
  std::uint64_t tx_packets = 0;  // first transmissions and retransmissions
  std::uint64_t tx_bytes = 0;
  std::uint64_t acked_packets = 0;
  std::uint64_t ce_packets = 0;  // CE marks the receiver reported
  std::uint64_t retransmits = 0;
  std::uint64_t lost_packets = 0;  // declared lost by SACK gap or timeout
  std::uint64_t timeouts = 0;
  std::uint64_t tail_probes = 0;  // NOPs sent to draw a SACK after silence
  std::uint32_t reentropies = 0;
  std::uint32_t cwnd_bytes = 0;
  std::uint32_t inflight_bytes = 0;
  Time srtt = 0;
  Time min_rtt = 0;
};

enum class ConnState : std::uint8_t {
  kConnecting,
  kAccepting,
  kEstablished,
  kClosing,
  kClosed,
  kFailed,
  kTimeWait  // closed by the peer; still answers its retried CLOSE (SPEC §4.3)
};
const char* to_string(ConnState);

struct ConnStats {
  ConnState state = ConnState::kConnecting;
  Endpoint peer;
  std::uint16_t paths = 0;
  std::uint8_t planes = 0;
  std::uint32_t streams = 0;
  std::uint64_t tx_data_bytes = 0;  // payload bytes sent, retransmissions included
  std::uint64_t rx_data_bytes = 0;  // payload bytes placed (first copies only)
  std::uint64_t retransmits = 0;
  std::uint64_t reentropies = 0;
  std::uint64_t path_failures = 0;
  std::uint64_t plane_failures = 0;
  std::uint32_t cwnd_bytes = 0;  // connection window
  std::uint32_t inflight_bytes = 0;
  std::uint32_t open_messages = 0;     // started, not yet completed
  std::uint32_t inbound_messages = 0;  // the peer's messages partly received here
  std::uint64_t rate_hint_bps = 0;     // fair share the peer last granted us (0: none yet)
  std::uint64_t pacing_rate_bps = 0;
  std::uint32_t inbound_senders = 0;  // our own view: active senders we share among
};

enum class StreamState : std::uint8_t { kIdle, kConnecting, kReady, kError, kDestroyed };
const char* to_string(StreamState);

struct StreamConfig {
  std::uint32_t sq_depth = 128;  // work requests outstanding on the send queue
  std::uint32_t rq_depth = 128;  // receives posted ahead
  std::uint32_t max_inline = 0;  // bytes copied at post time with send_flags::kInline
  std::uint8_t rnr_retry = 7;    // 7 retries forever, as in Verbs
  Time rnr_timer = 100 * kMicrosecond;
  // Receives come from this shared receive queue instead of the stream's own (rq_depth
  // then bounds how many it holds taken for messages not yet complete).
  SrqId srq = kNoSrq;
  // What the peer may do to this endpoint's memory through this stream (Verbs'
  // qp_access_flags), on top of each region's own rights.
  std::uint32_t remote_access = access::kRemoteWrite | access::kRemoteRead | access::kRemoteAtomic;
  // Transports whose streams live on one local interface (a RoCE QP on one NIC port):
  // the plane to use, -1 for the transport's choice. MetaRoCE spreads every connection's
  // paths over all planes and ignores it.
  std::int16_t plane = -1;
};

// A datagram queue pair (Verbs' UD): connectionless and unreliable, each message one
// DATAGRAM packet of at most the MSS, placed behind a 40-byte GRH in the receive buffer.
struct DatagramConfig {
  std::uint32_t sq_depth = 256;
  std::uint32_t rq_depth = 256;
  std::uint32_t max_inline = 0;
  std::uint32_t qkey = 0;
};

// Where one datagram goes: the peer endpoint (its address and listening port), its queue
// pair, the Q_Key to carry, and the local plane to send from.
struct DatagramDest {
  Endpoint peer;
  StreamId remote = kNoStream;
  std::uint32_t qkey = 0;
  std::uint8_t plane = 0;
};

// The GRH written before a datagram's payload (IBA 8.3; for IPv4 peers the IPv4 header in
// its last 20 bytes, as RoCEv2 devices write it).
inline constexpr std::uint32_t kGrhSize = 40;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual void set_sink(Sink* sink) { sink_ = sink; }

  // Memory. `host` points at the bytes of [addr, addr+length) when the driver moves real
  // payload, and is null when it does not (the simulator): keys, bounds and rights are
  // checked either way.
  virtual Errc reg_mr(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
                      MrKeys* out) = 0;
  virtual Errc dereg_mr(std::uint32_t lkey) = 0;

  // Streams: the engine's queue pairs. A stream is created idle, then bound to a peer
  // endpoint and the peer's stream number; streams bound to the same peer share one
  // connection. Work posted before the connection is up waits for it.
  virtual Errc create_stream(const StreamConfig& config, StreamId* out) = 0;
  virtual Errc connect_stream(Time now, StreamId stream, const Endpoint& peer, StreamId remote) = 0;
  virtual Errc destroy_stream(Time now, StreamId stream) = 0;
  virtual Errc post_send(Time now, StreamId stream, const SendWr& wr) = 0;
  virtual Errc post_recv(Time now, StreamId stream, const RecvWr& wr) = 0;
  // Receiver-not-ready policy for work posted from now on: Verbs sets it when a queue
  // pair moves to RTR/RTS, after creation. Retry 7 means forever.
  virtual Errc set_rnr_policy(StreamId stream, std::uint8_t retry, Time timer) {
    (void)stream;
    (void)retry;
    (void)timer;
    return Errc::kNotSupported;
  }
  // Puts the stream in error, as Verbs' move to ERR: every work request still posted
  // completes with WR_FLUSH_ERR, and later ones are flushed at once.
  virtual Errc fail_stream(Time now, StreamId stream) {
    (void)now;
    (void)stream;
    return Errc::kNotSupported;
  }

  // Shared receive queues. A stream created with StreamConfig::srq takes its receives
  // from one; post_recv on such a stream is refused. Destroying the queue leaves its
  // streams with no receives. The limit arms a one-shot
  // kSrqLimitReached event for when fewer receives than it remain (0 disarms).
  virtual Errc create_srq(std::uint32_t depth, SrqId* out) {
    (void)depth, (void)out;
    return Errc::kNotSupported;
  }
  virtual Errc destroy_srq(SrqId srq) {
    (void)srq;
    return Errc::kNotSupported;
  }
  virtual Errc post_srq_recv(Time now, SrqId srq, const RecvWr& wr) {
    (void)now, (void)srq, (void)wr;
    return Errc::kNotSupported;
  }
  virtual Errc set_srq_limit(SrqId srq, std::uint32_t limit) {
    (void)srq, (void)limit;
    return Errc::kNotSupported;
  }
  virtual Errc query_srq(SrqId srq, std::uint32_t* limit, std::uint32_t* count) const {
    (void)srq, (void)limit, (void)count;
    return Errc::kNotSupported;
  }
  // The application is done with the stream, which lingers only to acknowledge what it
  // received: it takes no more shared receives, and what it cannot place is dropped
  // without a NACK (a destroyed queue pair on a NIC answers nothing; its peer times out).
  virtual Errc quiesce_stream(StreamId stream) {
    (void)stream;
    return Errc::kNotSupported;
  }
  // The remote rights of a stream (StreamConfig::remote_access), changed after creation
  // as Verbs' ibv_modify_qp does.
  virtual Errc set_remote_access(StreamId stream, std::uint32_t access) {
    (void)stream, (void)access;
    return Errc::kNotSupported;
  }

  // Datagram queue pairs. They share the stream numbers (and destroy_stream, post_recv,
  // fail_stream, quiesce_stream and stream_state) with streams, but never a connection.
  virtual Errc create_datagram(const DatagramConfig& config, StreamId* out) {
    (void)config, (void)out;
    return Errc::kNotSupported;
  }
  virtual Errc post_datagram(Time now, StreamId qp, const SendWr& wr, const DatagramDest& dest) {
    (void)now, (void)qp, (void)wr, (void)dest;
    return Errc::kNotSupported;
  }
  virtual Errc set_qkey(StreamId qp, std::uint32_t qkey) {
    (void)qp, (void)qkey;
    return Errc::kNotSupported;
  }

  // Datapath.
  virtual void on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) = 0;
  // Writes the next datagram to send into `buf` (at least max_packet_size() bytes) and
  // fills `out`; returns false when nothing may be sent now.
  virtual bool poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) = 0;
  // The planes whose send queues in the driver are full (bit i: plane i), so that new
  // data goes to paths on the others instead of waiting behind them. A driver with a
  // queue per plane calls it as they fill and drain. Returns false when the transport
  // cannot steer: the driver then stops polling while any queue is full.
  virtual bool set_blocked_planes(std::uint8_t mask) {
    (void)mask;
    return false;
  }
  virtual void on_timer(Time now) = 0;
  virtual Time next_deadline() const = 0;
  virtual std::size_t max_packet_size() const = 0;

  // Introspection.
  virtual const Counters& counters() const = 0;
  virtual StreamState stream_state(StreamId stream) const = 0;
  virtual ConnId stream_connection(StreamId stream) const = 0;
  virtual bool connection_stats(ConnId conn, ConnStats* out) const = 0;
  virtual bool path_stats(ConnId conn, std::uint16_t path, PathStats* out) const = 0;
  virtual void for_each_connection(const std::function<void(ConnId)>& fn) const = 0;

 protected:
  Sink* sink_ = nullptr;
};

}  // namespace mroce
