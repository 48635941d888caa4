#include "core/stream.h"

#include <bit>

namespace mroce {

Stream::Stream(StreamId stream_id, const StreamConfig& cfg)
    : id(stream_id),
      config(cfg),
      sq_(std::bit_ceil(std::max<std::uint32_t>(cfg.sq_depth, 1))),
      rq_(std::bit_ceil(std::max<std::uint32_t>(cfg.rq_depth, 1))),
      sq_mask_(static_cast<std::uint32_t>(sq_.size() - 1)),
      rq_mask_(static_cast<std::uint32_t>(rq_.size() - 1)),
      inline_(sq_.size() * cfg.max_inline) {}

}  // namespace mroce
