// A small, fast, seedable generator (SplitMix64). Each component owns its own stream,
// derived from the scenario seed and the component's identity, so that adding a link
// or a host does not shift the random numbers every other component sees.
#pragma once

#include <cstdint>

namespace mroce::sim {

inline constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A seed for component `id` of kind `salt` under the scenario seed.
inline constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t salt,
                                           std::uint64_t id = 0) {
  return mix64(mix64(seed ^ 0x9e3779b97f4a7c15ull) ^ mix64(salt * 0x632be59bd9b4e019ull + id));
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : state_(seed) {}
  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, n).
  std::uint64_t below(std::uint64_t n) {
    return static_cast<std::uint64_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  bool chance(double p) { return p > 0 && uniform() < p; }

 private:
  std::uint64_t state_;
};

}  // namespace mroce::sim
