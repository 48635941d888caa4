// The RoCEv2 baseline: a sans-I/O engine behind the same Transport interface as the
// MetaRoCE engine, behaving as an RC queue pair on a RoCEv2 NIC does. One stream is one
// QP, its own connection and its own single path (one UDP source port on one plane);
// delivery is in order with go-back-N recovery, and DCQCN sets each QP's rate.
//
//   RoceConfig config;
//   config.planes = {Address::ipv4(0x0a000001)};
//   RoceEngine nic(config);
//   StreamId qp;
//   nic.create_stream(StreamConfig{}, &qp);
//   nic.connect_stream(now, qp, Endpoint{peer_address, kRoceV2Port}, peer_qpn);
#pragma once

#include <memory>
#include <vector>

#include "baseline/config.h"
#include "baseline/context.h"
#include "baseline/memory.h"
#include "baseline/pacer.h"
#include "baseline/slot_queue.h"
#include "baseline/timer_heap.h"
#include "core/transport.h"

namespace mroce::baseline {

class QueuePair;

class RoceEngine final : public Transport {
 public:
  // Throws std::invalid_argument for an MTU that is not a multiple of 4 in [256, 65532].
  explicit RoceEngine(RoceConfig config);
  ~RoceEngine() override;
  RoceEngine(const RoceEngine&) = delete;
  RoceEngine& operator=(const RoceEngine&) = delete;

  Errc reg_mr(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
              MrKeys* out) override;
  Errc dereg_mr(std::uint32_t lkey) override;

  Errc create_stream(const StreamConfig& config, StreamId* out) override;
  Errc connect_stream(Time now, StreamId stream, const Endpoint& peer, StreamId remote) override;
  Errc destroy_stream(Time now, StreamId stream) override;
  Errc post_send(Time now, StreamId stream, const SendWr& wr) override;
  Errc post_recv(Time now, StreamId stream, const RecvWr& wr) override;

  void on_packet(Time now, const RxMeta& meta, std::span<const std::uint8_t> bytes) override;
  bool poll_transmit(Time now, std::span<std::uint8_t> buf, TxMeta* out) override;
  void on_timer(Time now) override;
  Time next_deadline() const override;
  std::size_t max_packet_size() const override;

  const Counters& counters() const override { return counters_; }
  StreamState stream_state(StreamId stream) const override;
  ConnId stream_connection(StreamId stream) const override;
  bool connection_stats(ConnId conn, ConnStats* out) const override;
  bool path_stats(ConnId conn, std::uint16_t path, PathStats* out) const override;
  void for_each_connection(const std::function<void(ConnId)>& fn) const override;

  const RoceConfig& config() const { return config_; }
  // A QP lives on one plane (NIC port): StreamConfig::plane when it names one (a plane
  // beyond config.planes is kInvalidArgument), else round-robin at creation; this moves a QP
  // that is not connected yet, so that its peer address can be the one on that plane.
  Errc bind_plane(StreamId stream, std::uint8_t plane);
  int stream_plane(StreamId stream) const;  // -1: no such stream
  // The UDP source port of a QP connected to `remote`, from the QPN pair as Linux's RoCE
  // stack derives it (rdma_calc_flow_label, rdma_flow_label_to_udp_sport).
  std::uint16_t src_port_for(StreamId local, StreamId remote) const;

 private:
  QueuePair* find(StreamId stream) const;
  static std::uint32_t slot_of(StreamId stream) { return (stream & 0xffff) - 1; }
  // After anything that may change what a QP wants: queue it to send, arm its deadline.
  void refresh(std::uint32_t slot, Time now);
  std::uint32_t initial_psn(StreamId sender, StreamId receiver) const;

  RoceConfig config_;
  Counters counters_;
  MemoryTable memory_;
  EngineContext ctx_;
  std::vector<std::unique_ptr<QueuePair>> qps_;  // by slot
  std::vector<std::uint8_t> generations_;
  std::vector<std::uint32_t> free_slots_;
  std::uint32_t next_plane_ = 0;

  SlotQueue control_ready_;            // QPs with an ACK, NAK or CNP to send
  std::vector<SlotQueue> data_ready_;  // by plane: QPs whose pacer allows a data packet now
  std::vector<Pacer> ports_;           // by plane: the port's line rate, shared by its QPs
  std::size_t next_port_ = 0;          // round-robin among ports with data
  TimerHeap deadlines_;                // retransmission and RNR timers, pacing of blocked QPs
};

}  // namespace mroce::baseline
