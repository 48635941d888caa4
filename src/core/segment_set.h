// Which segments of a message have been placed, so a copy that arrives twice (for
// instance once on a path that later failed and once on the path its content moved
// to) is placed and counted once. Up to 64 segments live inline; longer messages
// borrow words from a pool shared by the engine, reused without freeing.
#pragma once

#include <cstdint>
#include <vector>

namespace mroce {

class BitmapPool {
 public:
  // Returns a handle to `words` zeroed words (handles are never 0).
  std::uint32_t allocate(std::uint32_t words);
  void release(std::uint32_t handle, std::uint32_t words);
  std::uint64_t* words(std::uint32_t handle) { return &words_[handle]; }

 private:
  static unsigned size_class(std::uint32_t words);
  std::vector<std::uint64_t> words_ = std::vector<std::uint64_t>(1);  // word 0 unused
  std::vector<std::vector<std::uint32_t>> free_;                      // by size class
};

class SegmentSet {
 public:
  void init(BitmapPool& pool, std::uint32_t segments);
  void release(BitmapPool& pool);
  // Sets bit i; returns false if it was already set.
  bool insert(BitmapPool& pool, std::uint32_t i);
  bool contains(BitmapPool& pool, std::uint32_t i) const {
    const std::uint64_t* word = handle_ ? pool.words(handle_) + i / 64 : &inline_;
    return (*word >> (i % 64)) & 1;
  }
  std::uint32_t count() const { return count_; }
  std::uint32_t size() const { return segments_; }
  bool full() const { return count_ == segments_; }

 private:
  std::uint64_t inline_ = 0;
  std::uint32_t handle_ = 0;
  std::uint32_t segments_ = 0;
  std::uint32_t count_ = 0;
};

}  // namespace mroce
