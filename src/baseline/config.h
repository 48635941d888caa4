// Settings of one RoCEv2 baseline engine (one NIC). Defaults follow common RoCEv2 NIC
// practice and the DCQCN paper (Zhu et al., SIGCOMM 2015); the simulator tightens the
// timers to its microsecond fabric.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace mroce::baseline {

inline constexpr std::uint16_t kRoceV2Port = 4791;
// RoceConfig::initial_psn value asking for a PSN derived from the two QPNs.
inline constexpr std::uint32_t kDerivedPsn = ~std::uint32_t{0};

// DCQCN: the notification point (receiver) turns CE marks into CNPs; the reaction point
// (sender) keeps a current rate Rc, a target rate Rt and a congestion estimate alpha.
struct DcqcnConfig {
  bool enabled = true;
  Time cnp_interval = 50 * kMicrosecond;  // at most one CNP per QP per interval
  double g = 1.0 / 256;                   // alpha gain
  double initial_alpha = 1.0;
  Time alpha_period = 55 * kMicrosecond;     // K: alpha decays when no CNP came for K
  Time increase_period = 55 * kMicrosecond;  // T: rate increase timer
  std::uint64_t byte_counter = 10'000'000;   // B: rate increase every B bytes sent
  std::uint32_t fast_recovery_steps = 5;     // F
  std::uint64_t ai_rate_bps = 40'000'000;    // R_AI, additive increase
  std::uint64_t hai_rate_bps = 400'000'000;  // R_HAI, hyper increase
  std::uint64_t min_rate_bps = 100'000'000;  // floor of Rc
};

struct RoceConfig {
  // One address per plane (NIC port). A QP lives on one plane: QPs take planes round-robin
  // at creation unless RoceEngine::bind_plane says otherwise.
  std::vector<Address> planes;
  std::uint16_t listen_port = kRoceV2Port;
  // A QP's UDP source port is src_port_base + hash(local QPN, remote QPN) % src_port_count.
  std::uint16_t src_port_base = 49152;
  std::uint16_t src_port_count = 16384;
  std::uint16_t pkey = 0xffff;

  std::uint32_t mtu = 4096;  // payload bytes per packet; both ends must agree
  // False: packets carry headers plus a 4-byte payload length instead of the payload
  // (simulator); both ends must agree.
  bool carry_payload = true;
  // With the payload carried: stamp the ICRC on what we send and drop what arrives with a
  // wrong one (as kMalformed), as a NIC does. Otherwise the field is zero and not checked.
  bool icrc = true;

  // Pacing: every packet costs (wire_length + frame_overhead) bytes at the QP's DCQCN
  // rate and at its port's line rate. line_rate_bps is the NIC's, all planes together:
  // each plane's port gets an equal share, and a QP never goes faster than its port.
  std::uint64_t line_rate_bps = 100'000'000'000;
  std::uint32_t frame_overhead = 42;  // Ethernet, IPv4 and UDP headers

  // Requester.
  Time ack_timeout = 1 * kMillisecond;  // local ACK timeout: go back to the oldest unacked PSN
  std::uint8_t retry_cnt = 7;           // timeouts and sequence NAKs without progress
  // Adaptive local ACK timeout: at least twice the smoothed RTT, and doubled by each
  // timeout until the next RTT sample (from a packet not sent again). Off on a NIC; on for a
  // software host, whose RTT grows past any fixed timeout when it is starved of CPU: then go-backs
  // every ack_timeout queue copies in front of the next ACK until the retries run out
  // with no packet lost.
  bool adaptive_ack_timeout = false;
  std::uint8_t max_rd_atomic = 16;  // READs and atomics outstanding per QP
  std::uint32_t initial_psn = kDerivedPsn;

  // Responder.
  // Coalescing: ACK on AckReq (message end), every ack_every packets, and on any packet
  // arriving ack_interval or more after the last ACK (a slow QP is acknowledged promptly).
  std::uint32_t ack_every = 16;
  Time ack_interval = 10 * kMicrosecond;
  std::uint8_t max_dest_rd_atomic = 16;  // READ/atomic responses queued per QP; atomic cache

  std::uint32_t max_qps = 65535;
  DcqcnConfig dcqcn;
  std::uint64_t seed = 1;  // memory key tags
};

}  // namespace mroce::baseline
