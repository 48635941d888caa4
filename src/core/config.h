// Settings of one MetaRoCE engine (one endpoint). Defaults suit the UDP stack on a
// LAN; the simulator tightens the timers to its microsecond fabric.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"

namespace mroce {

inline constexpr std::uint16_t kDefaultPort = 4793;

// How a setting is written and scaled (core/settings.h): a plain count, a size in
// bytes, a time in nanoseconds, a rate in bit/s, or a fraction.
enum class SettingUnit : std::uint8_t { kCount, kBytes, kTime, kRate, kRatio };

// Every setting a user may change, written once: the fields of EngineConfig below, the
// table of core/settings.h (names, ranges, meanings) and every front end that reads
// them come from this list. X(type, member, name, unit, default, min, max, meaning).
// Ranges are in the stored unit (bytes, ns, bit/s); a 0 that means "derived" is in the
// range where the meaning says so.
#define MROCE_ENGINE_SETTINGS(X)                                                                 \
  X(std::uint16_t, src_port_base, "src_port_base", kCount, 49152, 1, 65535,                      \
    "first UDP source port for path entropy (the driver receives on every one)")                 \
  X(std::uint16_t, src_port_count, "src_port_count", kCount, 256, 1, 65535,                      \
    "UDP source ports available for path entropy")                                               \
  X(std::uint16_t, paths, "paths", kCount, 16, 1, 256, "paths per connection")                   \
  X(std::uint16_t, max_paths, "max_paths", kCount, 0, 0, 256,                                    \
    "paths a connection may grow to when its window outgrows its paths' SACK spans (0: paths)")  \
  X(std::uint16_t, mss, "mss", kCount, 4096, 256, 16384, "payload bytes per data packet")        \
  X(std::uint32_t, path_window_packets, "path_window_packets", kCount, 128, 1, 256,              \
    "packets outstanding per path at most (rounded up to a power of two; the SACK span)")        \
  X(std::uint16_t, max_inbound_messages, "max_inbound_messages", kCount, 256, 1, 65535,          \
    "messages partly received per connection, advertised to the peer")                           \
  X(std::uint16_t, max_responses, "max_responses", kCount, 64, 1, 65535,                         \
    "READ and atomic responses being sent, advertised to the peer")                              \
  X(std::uint64_t, line_rate_bps, "line_rate", kRate, 100'000'000'000, 1'000'000,                \
    10'000'000'000'000, "sender's NIC rate, all planes together")                                \
  X(std::uint64_t, rx_capacity_bps, "rx_capacity", kRate, 0, 0, 10'000'000'000'000,              \
    "inbound capacity shared among senders (0: the line rate)")                                  \
  X(double, target_utilization, "target_utilization", kRatio, 0.98, 0.01, 1,                     \
    "part of the inbound capacity handed out as shares (the rest lets queues drain)")            \
  X(std::uint32_t, wire_overhead_bytes, "wire_overhead_bytes", kCount, 66, 0, 1024,              \
    "bytes a packet costs on the link beyond its UDP payload, counted by the pacer")             \
  X(std::uint32_t, initial_window_bytes, "initial_window", kBytes, 256 * 1024, 1024, 64 << 20,   \
    "connection window at start")                                                                \
  X(double, bdp_start, "bdp_start", kRatio, 0, 0, 1,                                             \
    "slow start opens at once to this part of line rate x RTT, for long haul (0: off)")          \
  X(std::uint32_t, min_path_window_bytes, "min_path_window", kBytes, 0, 0, 64 << 20,             \
    "smallest congestion window of a path (0: one mss)")                                         \
  X(Time, increase_interval, "increase_interval", kTime, 25 * kMicrosecond, 0, kSecond,          \
    "past slow start, windows gain their packet per this long, not per longer RTT (0: per RTT)") \
  X(double, dctcp_gain, "dctcp_gain", kRatio, 1.0 / 16, 0, 1,                                    \
    "weight of the newest ECN fraction in a path's average")                                     \
  X(Time, active_sender_timeout, "active_sender_timeout", kTime, 0, 0, 10 * kSecond,             \
    "a silent sender stops counting for shares (0: 4 x max(min RTT seen, initial_rtt))")         \
  X(std::uint32_t, ack_every, "ack_every", kCount, 2, 1, 256,                                    \
    "acknowledge every this many packets (at once on a gap, CE mark or request)")                \
  X(Time, ack_delay, "ack_delay", kTime, 20 * kMicrosecond, 0, 100 * kMillisecond,               \
    "acknowledge at the latest this long after a packet")                                        \
  X(Time, initial_rtt, "initial_rtt", kTime, 100 * kMicrosecond, kMicrosecond, 10 * kSecond,     \
    "RTT assumed before the first sample")                                                       \
  X(Time, min_rto, "min_rto", kTime, 1 * kMillisecond, kMicrosecond, 60 * kSecond,               \
    "smallest retransmission timeout")                                                           \
  X(Time, max_rto, "max_rto", kTime, 100 * kMillisecond, kMicrosecond, 60 * kSecond,             \
    "largest retransmission timeout (at least min_rto)")                                         \
  X(std::uint32_t, fail_after_timeouts, "fail_after_timeouts", kCount, 3, 1, 1000,               \
    "consecutive timeouts with no ACK before a path is failed")                                  \
  X(Time, probe_interval, "probe_interval", kTime, 1 * kMillisecond, kMicrosecond, 60 * kSecond, \
    "first re-probe of a failed path; doubles")                                                  \
  X(Time, max_probe_interval, "max_probe_interval", kTime, 100 * kMillisecond, kMicrosecond,     \
    60 * kSecond, "longest interval between re-probes (at least probe_interval)")                \
  X(Time, connect_timeout, "connect_timeout", kTime, 10 * kSecond, kMicrosecond, 3600 * kSecond, \
    "handshake, or every path dead, this long before giving up")                                 \
  X(Time, connect_retry, "connect_retry", kTime, 1 * kMillisecond, kMicrosecond, 60 * kSecond,   \
    "first set-up retry, doubling to 1 s (set-up crosses the same lossy fabric as data)")        \
  X(std::uint32_t, pacing_burst_bytes, "pacing_burst", kBytes, 64 * 1024, 1024, 64 << 20,        \
    "bytes the pacer lets out at once (timer granularity of real hosts)")                        \
  X(Time, delay_target, "delay_target", kTime, 1 * kMillisecond, 0, 10 * kSecond,                \
    "queueing (beyond the RTT floor, and the floor again) that counts as a mark (0: off)")       \
  X(std::uint32_t, path_train_bytes, "path_train", kBytes, 0, 0, 16 << 20,                       \
    "bytes of new data a path sends in a row before the next path's turn (0: one packet a turn)")

struct EngineConfig {
  // One address per plane (local interface). Path i of a connection uses plane
  // i mod min(local planes, peer planes), paired by index with the peer's planes.
  std::vector<Address> planes;
  std::uint16_t listen_port = kDefaultPort;
  // False: packets carry headers only and no payload is copied (simulator); both
  // ends must agree.
  bool carry_payload = true;
  // With carry_payload: DATA payload in registered memory is referenced from TxMeta
  // instead of copied into the packet buffer, where it lies in one SGE (the UDP stack).
  bool payload_by_reference = false;
  bool accept_incoming = true;

#define MROCE_SETTING_MEMBER(type, member, name, unit, def, min, max, meaning) type member = def;
  MROCE_ENGINE_SETTINGS(MROCE_SETTING_MEMBER)
#undef MROCE_SETTING_MEMBER

  std::uint64_t seed = 1;         // tokens, initial sequence numbers, port choice
  std::int64_t initial_psn = -1;  // -1: random per connection (tests pin it to probe wrap-around)
};

}  // namespace mroce
