// A host: one transport engine and one NIC per plane. It feeds the engine every
// packet its NICs receive, keeps one timer event for the engine's next deadline, and
// after every call into the engine pulls packets while all its NIC queues have room.
// NIC queues are kept short so that the engine, not the NIC, holds the backlog.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/transport.h"
#include "sim/context.h"
#include "sim/link.h"
#include "sim/node.h"

namespace mroce::sim {

// Where a host reports what its engine tells the application.
class HostListener {
 public:
  virtual void on_completion(SimTime now, std::uint32_t host, const Completion& c) = 0;
  virtual void on_transport_event(SimTime, std::uint32_t, const Event&) {}

 protected:
  ~HostListener() = default;
};

struct HostStats {
  std::uint64_t tx_packets = 0;
  std::uint64_t tx_data_packets = 0;  // packets carrying payload, resends included
  std::uint64_t rx_packets = 0;
  std::uint64_t rx_data_packets = 0;   // packets carrying payload, duplicates included
  std::uint64_t rx_payload_bytes = 0;  // their payload
  std::uint64_t timer_calls = 0;
};

class Host final : public Node, public EventHandler, public Sink {
 public:
  Host(SimContext& ctx, std::uint32_t id, std::uint32_t planes, std::uint32_t nic_queue_packets,
       bool steer_planes = true);

  void attach_nic(std::uint32_t plane, Link* uplink) { nics_[plane] = uplink; }
  void set_transport(std::unique_ptr<Transport> transport);
  void set_listener(HostListener* listener) { listener_ = listener; }

  // Application calls, made at the current simulated time.
  Errc post_send(StreamId stream, const SendWr& wr);
  Errc post_recv(StreamId stream, const RecvWr& wr);
  Errc connect_stream(StreamId stream, const Endpoint& peer, StreamId remote);

  Transport& transport() { return *transport_; }
  const Transport& transport() const { return *transport_; }
  std::uint32_t id() const { return id_; }
  SimContext& context() const { return ctx_; }
  std::uint32_t planes() const { return static_cast<std::uint32_t>(nics_.size()); }
  Link* nic(std::uint32_t plane) const { return nics_[plane]; }
  const HostStats& stats() const { return stats_; }

  // Node: a NIC received a packet, or a NIC queue started sending one.
  void receive(SimTime now, PacketId p, std::uint16_t plane) override;
  void on_dequeue(SimTime now, const Packet& p, std::uint16_t plane) override;
  // EventHandler: the engine's timer.
  void on_event(SimTime now, std::uint64_t generation) override;
  // Sink.
  void on_completion(const Completion& c) override;
  void on_event(const Event& e) override;

 private:
  // Runs after the outermost call into the engine returns.
  void flush(SimTime now);
  void pump(SimTime now);
  // The NICs holding nic_queue_packets or more, bit i for plane i.
  std::uint8_t full_nics() const;
  void transmit(SimTime now, const TxMeta& meta);
  void rearm(SimTime now);

  SimContext& ctx_;
  std::uint32_t id_;
  std::uint32_t nic_queue_packets_;
  std::vector<Link*> nics_;
  std::unique_ptr<Transport> transport_;
  HostListener* listener_ = nullptr;
  std::vector<std::uint8_t> scratch_;
  int depth_ = 0;  // calls into the engine in progress
  bool pumping_ = false;
  // The transport steers new data away from full NICs (Transport::set_blocked_planes):
  // the host then pulls while any NIC has room, else only while all have.
  bool steer_planes_;  // the scenario allows it
  bool steers_ = false;
  std::uint8_t blocked_ = 0;  // the mask the transport last heard
  SimTime timer_at_ = kSimNever;
  std::uint64_t timer_generation_ = 0;
  SimTime last_timer_ = kSimNever;
  std::uint32_t same_time_timers_ = 0;
  HostStats stats_;
};

}  // namespace mroce::sim
