// Settings of one MetaRoCE engine (one endpoint). Defaults suit the UDP stack on a
// LAN; the simulator tightens the timers to its microsecond fabric.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace mroce {

inline constexpr std::uint16_t kDefaultPort = 4793;

struct EngineConfig {
  // One address per plane (local interface). Path i of a connection uses plane
  // i mod min(local planes, peer planes), paired by index with the peer's planes.
  std::vector<Address> planes;
  std::uint16_t listen_port = kDefaultPort;
  // Source ports available for path entropy: [src_port_base, src_port_base + src_port_count).
  // The driver must receive on every one of them (acknowledgements come back there).
  std::uint16_t src_port_base = 49152;
  std::uint16_t src_port_count = 256;

  std::uint16_t paths = 16;  // paths per connection
  std::uint16_t mss = 4096;  // payload bytes per data packet
  // False: packets carry headers only and no payload is copied (simulator); both
  // ends must agree.
  bool carry_payload = true;
  bool accept_incoming = true;

  // Per path: packets outstanding at most (power of two, <= 256, the SACK span).
  std::uint32_t path_window_packets = 128;
  // Receiver tables advertised to the peer at set-up.
  std::uint16_t max_inbound_messages = 256;  // messages partly received, per connection
  std::uint16_t max_responses = 64;          // READ/atomic responses being sent

  // Congestion control.
  std::uint64_t line_rate_bps = 100'000'000'000;  // sender's NIC rate, all planes together
  std::uint64_t rx_capacity_bps = 0;              // inbound capacity to share; 0: line_rate_bps
  // Of that capacity, the part handed out as shares: the rest lets queues drain.
  double target_utilization = 0.98;
  // Bytes each packet costs on the link beyond its UDP payload (Ethernet header, FCS,
  // preamble and gap, IPv4, UDP), counted by the pacer.
  std::uint32_t wire_overhead_bytes = 66;
  std::uint32_t initial_window_bytes = 256 * 1024;  // connection window at start
  std::uint32_t min_path_window_bytes = 0;          // 0: one mss
  double dctcp_gain = 1.0 / 16;
  Time active_sender_timeout = 0;  // 0: 4 x max(min RTT seen, initial_rtt)

  // Acknowledgements: at once on a gap, CE mark, or request; else every ack_every
  // packets or after ack_delay.
  std::uint32_t ack_every = 2;
  Time ack_delay = 20 * kMicrosecond;

  // Loss recovery and failure detection.
  Time initial_rtt = 100 * kMicrosecond;
  Time min_rto = 1 * kMillisecond;
  Time max_rto = 100 * kMillisecond;
  std::uint32_t fail_after_timeouts = 3;   // consecutive timeouts with no ACK: path failed
  Time probe_interval = 1 * kMillisecond;  // first re-probe of a failed path; doubles
  Time max_probe_interval = 100 * kMillisecond;
  Time connect_timeout = 10 * kSecond;  // handshake, or every path dead, before giving up
  // First set-up retry, doubling to 1 s. Set-up packets cross the same lossy fabric as data,
  // so the retry is on the scale of min_rto, not of TCP's SYN timer.
  Time connect_retry = 1 * kMillisecond;
  // Pacing lets a burst of this many bytes out at once (timer granularity of real hosts).
  std::uint32_t pacing_burst_bytes = 64 * 1024;

  std::uint64_t seed = 1;         // tokens, initial sequence numbers, port choice
  std::int64_t initial_psn = -1;  // -1: random per connection (tests pin it to probe wrap-around)
};

}  // namespace mroce
