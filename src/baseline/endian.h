// Big-endian (network order) loads and stores of header fields.
#pragma once

#include <cstdint>

namespace mroce::baseline {

inline void store16(std::uint8_t* p, std::uint16_t v) {
  p[0] = std::uint8_t(v >> 8);
  p[1] = std::uint8_t(v);
}
inline void store24(std::uint8_t* p, std::uint32_t v) {
  p[0] = std::uint8_t(v >> 16);
  p[1] = std::uint8_t(v >> 8);
  p[2] = std::uint8_t(v);
}
inline void store32(std::uint8_t* p, std::uint32_t v) {
  store16(p, std::uint16_t(v >> 16));
  store16(p + 2, std::uint16_t(v));
}
inline void store64(std::uint8_t* p, std::uint64_t v) {
  store32(p, std::uint32_t(v >> 32));
  store32(p + 4, std::uint32_t(v));
}

inline std::uint16_t load16(const std::uint8_t* p) {
  return std::uint16_t(p[0] << 8 | p[1]);
}
inline std::uint32_t load24(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 16 | std::uint32_t{p[1]} << 8 | p[2];
}
inline std::uint32_t load32(const std::uint8_t* p) {
  return std::uint32_t{load16(p)} << 16 | load16(p + 2);
}
inline std::uint64_t load64(const std::uint8_t* p) {
  return std::uint64_t{load32(p)} << 32 | load32(p + 4);
}

}  // namespace mroce::baseline
