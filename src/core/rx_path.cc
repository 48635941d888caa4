#include "core/rx_path.h"

#include <bit>

#include "core/seq.h"

namespace mroce {

SackWindow::Verdict SackWindow::classify(std::uint32_t psn) const {
  const std::int32_t d = seq_diff(cum_, psn);
  if (d < 0) return Verdict::kDuplicate;
  if (d == 0) return Verdict::kNew;
  if (d > static_cast<std::int32_t>(wire::kSackBits)) return Verdict::kOutOfWindow;
  const unsigned i = static_cast<unsigned>(d - 1);
  return (bits_[i >> 6] >> (i & 63)) & 1 ? Verdict::kDuplicate : Verdict::kNew;
}

void SackWindow::mark(std::uint32_t psn) {
  const std::int32_t d = seq_diff(cum_, psn);
  if (d > 0) {
    const unsigned i = static_cast<unsigned>(d - 1);
    bits_[i >> 6] |= std::uint64_t{1} << (i & 63);
    return;
  }
  // psn == cum: advance past it and past every contiguous packet above it.
  unsigned run = 1;
  for (int w = 0; w < 4; ++w) {
    const unsigned ones = static_cast<unsigned>(std::countr_one(bits_[w]));
    run += ones;
    if (ones < 64) break;
  }
  cum_ += run;
  shift_right(run);
}

void SackWindow::shift_right(unsigned n) {
  if (n >= 256) {
    bits_ = {};
    return;
  }
  const unsigned words = n / 64, bits = n % 64;
  for (unsigned w = 0; w < 4; ++w) {
    const unsigned src = w + words;
    std::uint64_t v = src < 4 ? bits_[src] >> bits : 0;
    if (bits && src + 1 < 4) v |= bits_[src + 1] << (64 - bits);
    bits_[w] = v;
  }
}

}  // namespace mroce
