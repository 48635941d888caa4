// The bytes --check expects: a pseudo-random pattern per (seed, queue pair, slot), so a
// message placed in the wrong slot or torn between two messages is caught.
#pragma once

#include <cstdint>
#include <cstring>

namespace mroce::perf {

inline std::uint64_t pattern_state(std::uint64_t seed, std::uint32_t qp, std::uint64_t slot) {
  return (seed * 0x9e3779b97f4a7c15ull) ^ (std::uint64_t{qp} << 40) ^
         (slot * 0xbf58476d1ce4e5b9ull) ^ 0x94d049bb133111ebull;
}

inline void fill_pattern(std::uint8_t* dst, std::size_t length, std::uint64_t state) {
  for (std::size_t i = 0; i < length; i += 8) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::memcpy(dst + i, &state, length - i < 8 ? length - i : 8);
  }
}

// Whether [data, data + length) holds the pattern's first `length` bytes.
inline bool matches_pattern(const std::uint8_t* data, std::size_t length, std::uint64_t state) {
  std::uint8_t chunk[8];
  for (std::size_t i = 0; i < length; i += 8) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::memcpy(chunk, &state, 8);
    const std::size_t n = length - i < 8 ? length - i : 8;
    if (std::memcmp(chunk, data + i, n) != 0) return false;
  }
  return true;
}

}  // namespace mroce::perf
