// Bounds-checked big-endian (network order) reading and writing of header fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace mroce::wire {

class ByteWriter {
 public:
  explicit ByteWriter(std::span<std::uint8_t> out) : out_(out) {}

  void u8(std::uint8_t v) { put(&v, 1); }
  void u16(std::uint16_t v) {
    const std::uint8_t b[2] = {std::uint8_t(v >> 8), std::uint8_t(v)};
    put(b, 2);
  }
  void u32(std::uint32_t v) {
    const std::uint8_t b[4] = {std::uint8_t(v >> 24), std::uint8_t(v >> 16), std::uint8_t(v >> 8),
                               std::uint8_t(v)};
    put(b, 4);
  }
  void u64(std::uint64_t v) {
    u32(std::uint32_t(v >> 32));
    u32(std::uint32_t(v));
  }
  void bytes(const void* p, std::size_t n) { put(p, n); }
  void zeros(std::size_t n) {
    if (!reserve(n)) return;
    std::memset(out_.data() + pos_, 0, n);
    pos_ += n;
  }

  bool ok() const { return ok_; }
  std::size_t size() const { return pos_; }

 private:
  bool reserve(std::size_t n) {
    if (!ok_ || out_.size() - pos_ < n) {
      ok_ = false;
      return false;
    }
    return true;
  }
  void put(const void* p, std::size_t n) {
    if (!reserve(n)) return;
    std::memcpy(out_.data() + pos_, p, n);
    pos_ += n;
  }

  std::span<std::uint8_t> out_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// Writes big-endian fields with no bounds checks: for encoders that have already
// checked that the whole header fits.
class RawWriter {
 public:
  explicit RawWriter(std::uint8_t* p) : p_(p) {}
  void u8(std::uint8_t v) { *p_++ = v; }
  void u16(std::uint16_t v) {
    p_[0] = std::uint8_t(v >> 8);
    p_[1] = std::uint8_t(v);
    p_ += 2;
  }
  void u32(std::uint32_t v) {
    v = __builtin_bswap32(v);
    std::memcpy(p_, &v, 4);
    p_ += 4;
  }
  void u64(std::uint64_t v) {
    v = __builtin_bswap64(v);
    std::memcpy(p_, &v, 8);
    p_ += 8;
  }
  void bytes(const void* src, std::size_t n) {
    std::memcpy(p_, src, n);
    p_ += n;
  }
  void zeros(std::size_t n) {
    std::memset(p_, 0, n);
    p_ += n;
  }

 private:
  std::uint8_t* p_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::uint8_t> in) : in_(in) {}

  std::uint8_t u8() {
    std::uint8_t b[1] = {};
    get(b, 1);
    return b[0];
  }
  std::uint16_t u16() {
    std::uint8_t b[2] = {};
    get(b, 2);
    return std::uint16_t(b[0] << 8 | b[1]);
  }
  std::uint32_t u32() {
    std::uint8_t b[4] = {};
    get(b, 4);
    return std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 | std::uint32_t{b[2]} << 8 | b[3];
  }
  std::uint64_t u64() {
    const std::uint64_t hi = u32();
    return hi << 32 | u32();
  }
  void bytes(void* p, std::size_t n) { get(p, n); }

  bool ok() const { return ok_; }
  std::size_t position() const { return pos_; }
  std::size_t remaining() const { return in_.size() - pos_; }
  std::span<const std::uint8_t> rest() const { return in_.subspan(pos_); }

 private:
  void get(void* p, std::size_t n) {
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      std::memset(p, 0, n);
      return;
    }
    std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
  }

  std::span<const std::uint8_t> in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace mroce::wire
