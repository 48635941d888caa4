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
};
const char* to_string(EventKind);

struct Event {
  EventKind kind = EventKind::kConnEstablished;
  Time time = 0;
  ConnId conn = 0;
  Endpoint peer;
  std::uint16_t path = 0;
  std::uint8_t plane = 0;
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
  kFailed
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
  // Transports whose streams live on one local interface (a RoCE QP on one NIC port):
  // the plane to use, -1 for the transport's choice. MetaRoCE spreads every connection's
  // paths over all planes and ignores it.
  std::int16_t plane = -1;
};

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

  // Datapath.
  virtual void on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) = 0;
  // Writes the next datagram to send into `buf` (at least max_packet_size() bytes) and
  // fills `out`; returns false when nothing may be sent now.
  virtual bool poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) = 0;
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
