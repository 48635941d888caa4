// A minimal transport for exercising the simulator before the real engines exist, and
// as a yardstick in its tests: one path per stream (a fixed source port, like a RoCE
// QP), in-order go-back-N with cumulative ACKs, a fixed window, fast rewind after three
// duplicate ACKs and a retransmission timeout. WRITE, WRITE_IMM, SEND and READ; headers
// only. Not a model of any real protocol: it has no congestion control.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/transport.h"

namespace mroce::sim::testing {

struct GbnConfig {
  std::vector<Address> planes;
  std::uint16_t port = 4793;
  std::uint16_t src_port_base = 49152;
  std::uint16_t src_port_count = 4096;
  std::uint32_t mss = 4096;
  std::uint32_t window_packets = 64;
  Time rto = 200 * kMicrosecond;
  bool ecn = true;            // mark data ECT(0)
  bool spread_planes = true;  // stream s uses plane s mod planes
};

class GbnTransport final : public Transport {
 public:
  static constexpr std::uint32_t kHeaderBytes = 32;

  explicit GbnTransport(GbnConfig config);

  Errc reg_mr(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
              MrKeys* out) override;
  Errc dereg_mr(std::uint32_t) override { return Errc::kOk; }
  Errc create_stream(const StreamConfig& config, StreamId* out) override;
  Errc connect_stream(Time now, StreamId stream, const Endpoint& peer, StreamId remote) override;
  Errc destroy_stream(Time now, StreamId stream) override;
  Errc post_send(Time now, StreamId stream, const SendWr& wr) override;
  Errc post_recv(Time now, StreamId stream, const RecvWr& wr) override;

  void on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) override;
  bool poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) override;
  void on_timer(Time now) override;
  Time next_deadline() const override { return timer_; }
  std::size_t max_packet_size() const override { return 64; }

  const Counters& counters() const override { return counters_; }
  StreamState stream_state(StreamId stream) const override;
  ConnId stream_connection(StreamId stream) const override;
  bool connection_stats(ConnId conn, ConnStats* out) const override;
  bool path_stats(ConnId conn, std::uint16_t path, PathStats* out) const override;
  void for_each_connection(const std::function<void(ConnId)>& fn) const override;

  std::uint64_t timeouts() const { return timeouts_; }

 private:
  enum Op : std::uint8_t { kWrite, kWriteImm, kSend, kReadReq, kReadResp };
  struct OutMsg {
    std::uint64_t wr_id;
    Op op;
    bool signaled;
    std::uint32_t len;
    std::uint32_t imm;
    std::uint32_t first_psn;
    std::uint32_t npkts;
  };
  struct Stream {
    bool used = false;
    bool connected = false;
    Endpoint peer;
    StreamId remote = kNoStream;
    std::uint16_t src_port = 0;
    std::uint8_t plane = 0;
    Address local;
    Address remote_addr;
    std::uint32_t sq_depth = 0;
    // Sender.
    std::deque<OutMsg> msgs;          // unacknowledged, in PSN order
    std::deque<std::uint64_t> reads;  // READs awaiting their response
    std::uint32_t next_psn = 0;       // next to assign
    std::uint32_t una = 0;
    std::uint32_t nxt = 0;
    std::uint32_t high = 0;  // one past the highest PSN ever sent
    std::uint32_t recover = 0;
    std::uint32_t dup_acks = 0;
    Time last_progress = 0;
    bool ready = false;  // in ready_
    // Receiver.
    std::uint32_t expected = 0;
    std::deque<RecvWr> recvs;
    std::uint32_t read_resp_bytes = 0;
    bool ack_due = false;
    bool ce_echo = false;
    // Statistics.
    PathStats path;
    std::uint64_t rx_data_bytes = 0;
  };

  Stream* find(StreamId id);
  const Stream* find(StreamId id) const;
  bool can_send(const Stream& s) const;
  void make_ready(StreamId id);
  void enqueue_message(Stream& s, StreamId id, OutMsg m);
  void on_data(Time now, StreamId id, Stream& s, const std::uint8_t* h, Ecn ecn);
  void on_ack(Time now, StreamId id, Stream& s, std::uint32_t cum);
  void complete(std::uint64_t wr_id, StreamId id, WcOpcode op, std::uint32_t len, bool recv,
                bool imm, std::uint32_t imm_value);
  void arm(Time now);

  GbnConfig config_;
  std::vector<Stream> streams_;
  std::deque<StreamId> ready_;
  std::deque<StreamId> acks_;
  std::uint32_t next_key_ = 1;
  Time timer_ = kNever;
  Counters counters_;
  std::uint64_t timeouts_ = 0;
};

}  // namespace mroce::sim::testing
