// The receiver's side of rate control: its inbound capacity (times the target
// utilization) shared equally among the senders that currently have data queued for it.
// Every ACK carries the share.
#pragma once

#include <algorithm>
#include <cstdint>

namespace mroce {

class FairShare {
 public:
  explicit FairShare(std::uint64_t capacity_bps) : capacity_bps_(capacity_bps) {}

  void add_sender() { ++active_; }
  void remove_sender() { --active_; }
  std::uint32_t active() const { return active_; }

  // Share for one sender; one that is not yet counted is counted as joining.
  std::uint64_t share_bps(bool counted) const {
    const std::uint64_t n = std::max<std::uint64_t>(1, active_ + (counted ? 0 : 1));
    return capacity_bps_ / n;
  }

 private:
  std::uint64_t capacity_bps_;
  std::uint32_t active_ = 0;
};

}  // namespace mroce
