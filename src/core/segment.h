// What a transmitted packet carried, kept so it can be rebuilt for retransmission
// without storing the packet itself.
#pragma once

#include <cstdint>

namespace mroce {

enum class SegmentKind : std::uint8_t {
  kNop,       // fills a sequence number; content went elsewhere or never existed
  kRequest,   // segment `index` of send-queue message (stream, msn)
  kResponse,  // segment `index` of response slot `stream`, answering message msn
};

struct SegmentRef {
  SegmentKind kind = SegmentKind::kNop;
  std::uint32_t stream = 0;  // local stream id, or response slot for kResponse
  std::uint32_t msn = 0;
  std::uint32_t index = 0;
};

}  // namespace mroce
