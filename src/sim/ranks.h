// The processes of a run split across ranks (MPI, when the build has it): every rank
// builds the whole network and runs the partitions it owns; between windows they swap
// the packets crossing from one rank's partitions to another's and agree on the next
// window. The simulator sees only this interface, so it builds and runs without MPI.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace mroce::sim {

using Bytes = std::vector<std::uint8_t>;

class Ranks {
 public:
  virtual ~Ranks() = default;
  virtual std::uint32_t rank() const = 0;
  virtual std::uint32_t size() const = 0;
  // to[r]: what this rank sends rank r (to[rank()] is ignored). Returns what every rank
  // sent this one, indexed by sender. Every rank calls it together.
  virtual std::vector<Bytes> exchange(const std::vector<Bytes>& to) = 0;
  // Every rank's `mine`, indexed by rank. Every rank calls it together.
  virtual std::vector<Bytes> all_gather(const Bytes& mine) = 0;
};

// Appends trivially copyable values and vectors of them to a byte buffer.
class Writer {
 public:
  explicit Writer(Bytes& out) : out_(out) {}
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* data, std::size_t n) {
    if (n == 0) return;
    const auto* p = static_cast<const std::uint8_t*>(data);
    out_.insert(out_.end(), p, p + n);
  }
  template <class T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    put<std::uint64_t>(v.size());
    put_bytes(v.data(), v.size() * sizeof(T));
  }

 private:
  Bytes& out_;
};

// Reads back what a Writer wrote, in the same order.
class Reader {
 public:
  explicit Reader(const Bytes& in) : in_(in) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    get_bytes(&v, sizeof(T));
    return v;
  }
  void get_bytes(void* data, std::size_t n) {
    if (n == 0) return;
    if (n > in_.size() - pos_) throw std::runtime_error("a message between ranks is truncated");
    std::memcpy(data, in_.data() + pos_, n);
    pos_ += n;
  }
  template <class T>
  std::vector<T> get_vector() {
    std::vector<T> v(get<std::uint64_t>());
    get_bytes(v.data(), v.size() * sizeof(T));
    return v;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  const Bytes& in_;
  std::size_t pos_ = 0;
};

}  // namespace mroce::sim
