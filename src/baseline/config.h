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
// Its settings, written once (as core/config.h's MROCE_ENGINE_SETTINGS; the table is in
// baseline/settings.h): X(type, member, name, unit, default, min, max, meaning).
#define MROCE_DCQCN_SETTINGS(X)                                                                    \
  X(Time, cnp_interval, "dcqcn_cnp_interval", kTime, 50 * kMicrosecond, 0, kSecond,                \
    "at most one CNP per QP per interval")                                                         \
  X(double, g, "dcqcn_g", kRatio, 1.0 / 256, 0, 1, "alpha gain")                                   \
  X(double, initial_alpha, "dcqcn_initial_alpha", kRatio, 1.0, 0, 1, "alpha at start")             \
  X(Time, alpha_period, "dcqcn_alpha_period", kTime, 55 * kMicrosecond, kMicrosecond, kSecond,     \
    "K: alpha decays when no CNP came for K")                                                      \
  X(Time, increase_period, "dcqcn_increase_period", kTime, 55 * kMicrosecond, kMicrosecond,        \
    kSecond, "T: rate increase timer")                                                             \
  X(std::uint64_t, byte_counter, "dcqcn_byte_counter", kBytes, 10'000'000, 1024, 1ull << 40,       \
    "B: rate increase every B bytes sent")                                                         \
  X(std::uint32_t, fast_recovery_steps, "dcqcn_fast_recovery_steps", kCount, 5, 0, 1000,           \
    "F: fast recovery steps before additive increase")                                             \
  X(std::uint64_t, ai_rate_bps, "dcqcn_ai_rate", kRate, 40'000'000, 1'000'000, 10'000'000'000'000, \
    "R_AI, additive increase")                                                                     \
  X(std::uint64_t, hai_rate_bps, "dcqcn_hai_rate", kRate, 400'000'000, 1'000'000,                  \
    10'000'000'000'000, "R_HAI, hyper increase")                                                   \
  X(std::uint64_t, min_rate_bps, "dcqcn_min_rate", kRate, 100'000'000, 1'000'000,                  \
    10'000'000'000'000, "floor of the current rate")

struct DcqcnConfig {
  bool enabled = true;
#define MROCE_SETTING_MEMBER(type, member, name, unit, def, min, max, meaning) type member = def;
  MROCE_DCQCN_SETTINGS(MROCE_SETTING_MEMBER)
#undef MROCE_SETTING_MEMBER
};

// The RoCEv2 engine's own settings, in the same form.
#define MROCE_ROCE_SETTINGS(X)                                                             \
  X(std::uint16_t, src_port_base, "src_port_base", kCount, 49152, 1, 65535,                \
    "first UDP source port; a QP's is base + hash(local QPN, remote QPN) % count")         \
  X(std::uint16_t, src_port_count, "src_port_count", kCount, 16384, 1, 65535,              \
    "UDP source ports QPs hash onto")                                                      \
  X(std::uint32_t, mtu, "mtu", kCount, 4096, 256, 65532,                                   \
    "payload bytes per packet, a multiple of 4; both ends must agree")                     \
  X(std::uint64_t, line_rate_bps, "line_rate", kRate, 100'000'000'000, 1'000'000,          \
    10'000'000'000'000, "the NIC's rate, all planes together (each port an equal share)")  \
  X(Time, ack_timeout, "ack_timeout", kTime, 1 * kMillisecond, kMicrosecond, 60 * kSecond, \
    "local ACK timeout: go back to the oldest unacknowledged PSN")                         \
  X(std::uint8_t, retry_cnt, "retry_cnt", kCount, 7, 0, 7,                                 \
    "timeouts and sequence NAKs without progress before the QP fails")                     \
  X(std::uint8_t, max_rd_atomic, "max_rd_atomic", kCount, 16, 1, 255,                      \
    "READs and atomics outstanding per QP")                                                \
  X(std::uint32_t, ack_every, "ack_every", kCount, 16, 1, 65535,                           \
    "the responder acknowledges every this many packets (and on AckReq)")                  \
  X(Time, ack_interval, "ack_interval", kTime, 10 * kMicrosecond, 0, kSecond,              \
    "and any packet arriving this long or more after the last ACK")                        \
  X(std::uint8_t, max_dest_rd_atomic, "max_dest_rd_atomic", kCount, 16, 1, 255,            \
    "READ/atomic responses queued per QP; the atomic cache")

struct RoceConfig {
  // One address per plane (NIC port). A QP lives on one plane: QPs take planes round-robin
  // at creation unless RoceEngine::bind_plane says otherwise.
  std::vector<Address> planes;
  std::uint16_t listen_port = kRoceV2Port;
  std::uint16_t pkey = 0xffff;
  // False: packets carry headers plus a 4-byte payload length instead of the payload
  // (simulator); both ends must agree.
  bool carry_payload = true;
  // With the payload carried: stamp the ICRC on what we send and drop what arrives with a
  // wrong one (as kMalformed), as a NIC does. Otherwise the field is zero and not checked.
  bool icrc = true;

  // Pacing: every packet costs (wire_length + frame_overhead) bytes at the QP's DCQCN
  // rate and at its port's line rate; a QP never goes faster than its port.
  std::uint32_t frame_overhead = 42;  // Ethernet, IPv4 and UDP headers
  // Adaptive local ACK timeout: at least twice the smoothed RTT, and doubled by each
  // timeout until the next RTT sample (from a packet not sent again). Off on a NIC; on for
  // a software host, whose RTT grows past any fixed timeout when it is starved of CPU:
  // then go-backs every ack_timeout queue copies in front of the next ACK until the
  // retries run out with no packet lost.
  bool adaptive_ack_timeout = false;
  std::uint32_t initial_psn = kDerivedPsn;

#define MROCE_SETTING_MEMBER(type, member, name, unit, def, min, max, meaning) type member = def;
  MROCE_ROCE_SETTINGS(MROCE_SETTING_MEMBER)
#undef MROCE_SETTING_MEMBER

  std::uint32_t max_qps = 65535;
  DcqcnConfig dcqcn;
  std::uint64_t seed = 1;  // memory key tags
};

}  // namespace mroce::baseline
