#include "baseline/aeth.h"

namespace mroce::baseline {

namespace {

// IBA table 44: receive credits by credit code.
constexpr std::uint32_t kCredits[31] = {
    0,   1,   2,   3,   4,    6,    8,    12,   16,   24,   32,   48,    64,    96,    128,  192,
    256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};

// IBA table 45: RNR NAK timer in units of 10 microseconds; code 0 is the longest.
constexpr std::uint32_t kRnrTenUs[32] = {65536, 1,    2,    3,     4,     6,     8,     12,
                                         16,    24,   32,   48,    64,    96,    128,   192,
                                         256,   384,  512,  768,   1024,  1536,  2048,  3072,
                                         4096,  6144, 8192, 12288, 16384, 24576, 32768, 49152};

}  // namespace

const char* to_string(NakCode c) {
  switch (c) {
    case NakCode::kPsnSequenceError:
      return "PSN sequence error";
    case NakCode::kInvalidRequest:
      return "invalid request";
    case NakCode::kRemoteAccessError:
      return "remote access error";
    case NakCode::kRemoteOperationalError:
      return "remote operational error";
  }
  return "?";
}

std::uint8_t credit_code(std::uint32_t available) {
  std::uint8_t code = 0;
  while (code + 1 < 31 && kCredits[code + 1] <= available) ++code;
  return code;
}

std::uint32_t credit_count(std::uint8_t code) {
  return code < 31 ? kCredits[code] : 0;
}

std::uint8_t rnr_timer_code(Time delay) {
  for (std::uint8_t code = 1; code < 32; ++code) {
    if (rnr_timer_delay(code) >= delay) return code;
  }
  return 0;
}

Time rnr_timer_delay(std::uint8_t code) {
  return Time{kRnrTenUs[code & 0x1f]} * 10 * kMicrosecond;
}

}  // namespace mroce::baseline
