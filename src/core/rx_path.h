// Receiver side of one path generation: which sequence numbers arrived, as a
// cumulative point and a 256-bit bitmap above it, exactly what an ACK carries.
#pragma once

#include <array>
#include <cstdint>

#include "core/types.h"
#include "wire/packet.h"

namespace mroce {

class SackWindow {
 public:
  enum class Verdict : std::uint8_t { kNew, kDuplicate, kOutOfWindow };

  void reset(std::uint32_t isn) {
    cum_ = isn;
    bits_ = {};
  }

  // Whether psn is new, already received, or beyond the 256 packets above cum.
  Verdict classify(std::uint32_t psn) const;
  // Records psn (classify() returned kNew).
  void mark(std::uint32_t psn);

  std::uint32_t cum() const { return cum_; }
  // True when something above cum arrived: there is a hole at cum.
  bool has_gap() const { return (bits_[0] | bits_[1] | bits_[2] | bits_[3]) != 0; }
  void fill(wire::AckHeader* ack) const {
    ack->cum_psn = cum_;
    ack->sack = bits_;
  }

 private:
  void shift_right(unsigned n);

  std::uint32_t cum_ = 0;                // next expected PSN
  std::array<std::uint64_t, 4> bits_{};  // bit i: PSN cum_ + 1 + i received
};

// Everything the receiver keeps about one of the peer's paths.
struct RxPath {
  std::uint8_t generation = 0;
  bool seen = false;  // any packet of this path arrived yet
  SackWindow window;
  std::uint32_t rx_packets = 0;  // accepted in this generation (wraps, as on the wire)
  std::uint32_t ce_packets = 0;
  std::uint32_t unacked = 0;  // accepted since the last ACK
  std::uint32_t echo_timestamp = 0;
  Time last_arrival = 0;
  Time ack_due = kNever;  // delayed-ACK deadline
  bool ack_now = false;   // queued for an immediate ACK
  // Where ACKs for this path go: the reverse of its latest data packet.
  Address local;
  Address remote;
  std::uint16_t remote_port = 0;
  std::uint8_t plane = 0;
};

}  // namespace mroce
