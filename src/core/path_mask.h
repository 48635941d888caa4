// A set of path indices as bits, walked in index order from any start. The sender keeps
// in it every path that may have window room, so that choosing a path reads only those
// paths, not all of them: with windows of a few packets most paths are full most of the
// time, and each one read is a cache line.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace mroce {

// Inline, not on the heap: it is read with the connection's other per-packet fields.
class PathMask {
 public:
  static constexpr std::size_t kMaxPaths = 256;

  // n <= kMaxPaths.
  void reset(std::size_t n, bool value) {
    n_ = n;
    words_ = {};
    if (!value) return;
    for (std::size_t i = 0; i < n / 64; ++i) words_[i] = ~std::uint64_t{0};
    if (n % 64 != 0) words_[n / 64] = (std::uint64_t{1} << (n % 64)) - 1;
  }
  // n (>= size(), <= kMaxPaths) members possible; the new ones are not in the set.
  void grow(std::size_t n) { n_ = n; }
  void set(std::size_t i) { words_[i >> 6] |= std::uint64_t{1} << (i & 63); }
  void clear(std::size_t i) { words_[i >> 6] &= ~(std::uint64_t{1} << (i & 63)); }
  bool test(std::size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }

  // The first member at or after i, or size() if there is none.
  std::size_t next(std::size_t i) const {
    std::size_t w = i >> 6;
    const std::size_t words = (n_ + 63) / 64;
    if (w >= words) return n_;
    std::uint64_t bits = words_[w] & (~std::uint64_t{0} << (i & 63));
    while (bits == 0) {
      if (++w == words) return n_;
      bits = words_[w];
    }
    return w << 6 | static_cast<std::size_t>(std::countr_zero(bits));
  }
  std::size_t size() const { return n_; }

 private:
  std::array<std::uint64_t, kMaxPaths / 64> words_{};
  std::size_t n_ = 0;
};

}  // namespace mroce
