// The MetaRoCE engine: one endpoint, any number of connections, as a pure state
// machine behind the Transport interface. See docs/SPEC.md for the protocol and
// docs/DESIGN.md for how the pieces fit.
#pragma once

#include <array>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/config.h"
#include "core/connection.h"
#include "core/context.h"
#include "core/datagram.h"
#include "core/deadline_heap.h"
#include "core/ring.h"
#include "core/transport.h"

namespace mroce {

class Engine final : public Transport {
 public:
  explicit Engine(const EngineConfig& config);
  ~Engine() override;

  void set_sink(Sink* sink) override {
    sink_ = sink;
    ctx_.sink = sink;
  }

  Errc reg_mr(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
              MrKeys* out) override;
  Errc dereg_mr(std::uint32_t lkey) override;

  Errc create_stream(const StreamConfig& config, StreamId* out) override;
  Errc connect_stream(Time now, StreamId stream, const Endpoint& peer, StreamId remote) override;
  Errc destroy_stream(Time now, StreamId stream) override;
  Errc post_send(Time now, StreamId stream, const SendWr& wr) override;
  Errc post_recv(Time now, StreamId stream, const RecvWr& wr) override;
  Errc set_rnr_policy(StreamId stream, std::uint8_t retry, Time timer) override;
  Errc fail_stream(Time now, StreamId stream) override;
  Errc create_srq(std::uint32_t depth, SrqId* out) override;
  Errc destroy_srq(SrqId srq) override;
  Errc post_srq_recv(Time now, SrqId srq, const RecvWr& wr) override;
  Errc set_srq_limit(SrqId srq, std::uint32_t limit) override;
  Errc query_srq(SrqId srq, std::uint32_t* limit, std::uint32_t* count) const override;
  Errc set_remote_access(StreamId stream, std::uint32_t access) override;
  Errc quiesce_stream(StreamId stream) override;
  Errc create_datagram(const DatagramConfig& config, StreamId* out) override;
  Errc post_datagram(Time now, StreamId qp, const SendWr& wr, const DatagramDest& dest) override;
  Errc set_qkey(StreamId qp, std::uint32_t qkey) override;

  void on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) override;
  bool poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) override;
  bool set_blocked_planes(std::uint8_t mask) override;
  void on_timer(Time now) override;
  Time next_deadline() const override { return heap_.top_key(); }
  std::size_t max_packet_size() const override;

  const Counters& counters() const override { return ctx_.counters; }
  StreamState stream_state(StreamId stream) const override;
  ConnId stream_connection(StreamId stream) const override;
  bool connection_stats(ConnId conn, ConnStats* out) const override;
  bool path_stats(ConnId conn, std::uint16_t path, PathStats* out) const override;
  void for_each_connection(const std::function<void(ConnId)>& fn) const override;

  const EngineConfig& config() const { return ctx_.config; }

  // Connections created by a CONNECT whose sender has not yet shown that it receives at
  // its address (no CONFIRM, no valid packet, no local stream bound): at most this many;
  // a new one evicts the oldest.
  static constexpr std::size_t kMaxHalfOpen = 256;

  // Aborts with a message if a connection's kept totals disagree with its paths. Every
  // call above that changes state runs it on return in builds without NDEBUG (debug,
  // sanitizer and fuzz builds), never in release.
  void validate() const;

 private:
  struct EndpointHash {
    std::size_t operator()(const Endpoint& e) const {
      return std::hash<Address>()(e.addr) ^ (std::size_t{e.port} * 0x9e3779b97f4a7c15ull);
    }
  };

  // A half-open connection's place in the table.
  struct HalfOpen {
    ConnId id;
    std::uint32_t connects;  // CONNECTs it answered
    bool restart;            // a new incarnation of a live connection's peer
  };

  Connection* find(ConnId id) const;
  // listed: the connection is the one by_peer_ names for its peer.
  Connection* create(Time now, const Endpoint& peer, bool listed = true);
  void on_connect(Time now, const RxMeta& meta, const wire::Packet& pkt);
  void on_restart_connect(Time now, const RxMeta& meta, const wire::Packet& pkt,
                          const Endpoint& peer);
  Connection* open_half(Time now, const Endpoint& peer, bool restart);
  HalfOpen* half_open_entry(ConnId id);
  // A half-open connection that has proved its peer (or that the application adopted)
  // leaves the table; a confirmed new incarnation replaces the live connection.
  void settle(Time now, Connection& c);
  bool is_local(const Endpoint& e) const;
  // A CLOSE answering a CONNECT of the other payload mode (SPEC §2).
  bool emit_refusal(std::span<std::uint8_t> buf, TxMeta* out);
  // After any call into a connection: re-arm its timer, offer it a turn to send, and
  // release it once it has ended.
  void touch(Connection& c);
  void release(Connection& c);

  EngineContext ctx_;
  DatagramTable datagrams_{ctx_};  // UD queue pairs: no connection, no state per peer
  std::vector<std::unique_ptr<Connection>> conns_;  // by slot
  std::vector<std::uint16_t> generations_;          // by slot
  std::vector<std::uint32_t> free_slots_;
  std::unordered_map<Endpoint, ConnId, EndpointHash> by_peer_;
  std::vector<HalfOpen> half_open_;  // oldest first
  Ring<ConnId> ready_;
  DeadlineHeap<Connection> heap_;
  std::vector<Connection*> expired_;  // scratch for on_timer
  wire::Packet rx_;                   // the packet being handled, reused
  // A bare answer owed to a datagram's source that no connection sends: the CLOSE
  // refusing a CONNECT of the other mode, or a CLOSE_ACK to a CLOSE that arrived while
  // its connection still owed one (a CLOSE pair read in one batch draws two, §4.3).
  struct Refusal {
    Endpoint to;
    ConnId conn;
    std::uint64_t token;
    wire::PacketType type = wire::PacketType::kClose;
  };
  std::array<Refusal, 16> refusals_{};  // answers owed; more in one burst go unanswered
  std::size_t refusals_count_ = 0;
};

}  // namespace mroce
