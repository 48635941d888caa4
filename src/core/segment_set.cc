#include "core/segment_set.h"

#include <algorithm>
#include <bit>

namespace mroce {

unsigned BitmapPool::size_class(std::uint32_t words) {
  return static_cast<unsigned>(std::bit_width(std::bit_ceil(words)) - 1);
}

std::uint32_t BitmapPool::allocate(std::uint32_t words) {
  const unsigned c = size_class(words);
  const std::uint32_t rounded = 1u << c;
  if (c < free_.size() && !free_[c].empty()) {
    const std::uint32_t h = free_[c].back();
    free_[c].pop_back();
    std::fill_n(&words_[h], rounded, 0);
    return h;
  }
  const auto h = static_cast<std::uint32_t>(words_.size());
  words_.resize(words_.size() + rounded, 0);
  return h;
}

void BitmapPool::release(std::uint32_t handle, std::uint32_t words) {
  const unsigned c = size_class(words);
  if (free_.size() <= c) free_.resize(c + 1);
  free_[c].push_back(handle);
}

void SegmentSet::init(BitmapPool& pool, std::uint32_t segments) {
  segments_ = segments;
  count_ = 0;
  inline_ = 0;
  handle_ = segments > 64 ? pool.allocate((segments + 63) / 64) : 0;
}

void SegmentSet::release(BitmapPool& pool) {
  if (handle_) pool.release(handle_, (segments_ + 63) / 64);
  handle_ = 0;
  segments_ = count_ = 0;
}

bool SegmentSet::insert(BitmapPool& pool, std::uint32_t i) {
  std::uint64_t* word = handle_ ? pool.words(handle_) + i / 64 : &inline_;
  const std::uint64_t bit = std::uint64_t{1} << (i % 64);
  if (*word & bit) return false;
  *word |= bit;
  ++count_;
  return true;
}

}  // namespace mroce
