// The ACK extended transport header: a syndrome (ACK with credits, RNR NAK with a timer,
// or NAK with a code) and the responder's message sequence number (IBA 9.3.5, 9.7.5.1).
#pragma once

#include <cstdint>

#include "core/types.h"

namespace mroce::baseline {

enum class AckType : std::uint8_t { kAck = 0, kRnrNak = 1, kReserved = 2, kNak = 3 };

enum class NakCode : std::uint8_t {
  kPsnSequenceError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOperationalError = 3,
};
inline constexpr std::uint8_t kNakCodeCount = 4;
const char* to_string(NakCode);

// Credit field value meaning "no end-to-end credit information".
inline constexpr std::uint8_t kNoCredits = 31;

struct Aeth {
  std::uint8_t syndrome = 0;
  std::uint32_t msn = 0;  // 24 bits

  AckType type() const { return static_cast<AckType>((syndrome >> 5) & 3); }
  std::uint8_t value() const { return syndrome & 0x1f; }  // credits, timer or NAK code

  static Aeth ack(std::uint8_t credit_code, std::uint32_t msn) {
    return {make(AckType::kAck, credit_code), msn};
  }
  static Aeth rnr_nak(std::uint8_t timer_code, std::uint32_t msn) {
    return {make(AckType::kRnrNak, timer_code), msn};
  }
  static Aeth nak(NakCode code, std::uint32_t msn) {
    return {make(AckType::kNak, static_cast<std::uint8_t>(code)), msn};
  }

 private:
  static std::uint8_t make(AckType t, std::uint8_t v) {
    return static_cast<std::uint8_t>(static_cast<std::uint8_t>(t) << 5 | (v & 0x1f));
  }
};

// The largest credit code whose count does not exceed `available` receive WQEs.
std::uint8_t credit_code(std::uint32_t available);
std::uint32_t credit_count(std::uint8_t code);  // code < kNoCredits

// RNR NAK timer field: the smallest code whose delay is at least `delay`.
std::uint8_t rnr_timer_code(Time delay);
Time rnr_timer_delay(std::uint8_t code);

}  // namespace mroce::baseline
