// Every socket of one device: on each plane, the listening socket on the fixed port and
// one socket per source port of the entropy pool [pool_base, pool_base + pool_count).
// Data leaves from pool sockets (the source port is the path); acknowledgements come
// back to them; the peer's data and set-up arrive on the listening socket.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/udp_socket.h"

namespace mroce::net {

struct SocketTableConfig {
  std::vector<Address> planes;
  std::uint16_t listen_port = 0;  // 0: any free port (the same on every plane)
  std::uint16_t pool_base = 0;    // 0: find a free range
  std::uint16_t pool_count = 64;
  SocketOptions listen_options;
  SocketOptions pool_options;
};

class SocketTable {
 public:
  // Binds every socket, or none: on failure returns false with one line in *error.
  bool open(const SocketTableConfig& config, std::string* error);

  std::uint16_t listen_port() const { return listen_port_; }
  std::uint16_t pool_base() const { return pool_base_; }
  std::uint16_t pool_count() const { return pool_count_; }
  std::size_t planes() const { return planes_; }

  static constexpr std::size_t kNone = ~std::size_t{0};
  // The index of the socket a datagram from (plane, src_port) must leave by, or kNone.
  std::size_t index_of(std::uint8_t plane, std::uint16_t src_port) const {
    if (plane >= planes_) return kNone;
    const std::size_t row = std::size_t(plane) * (pool_count_ + 1u);
    if (src_port == listen_port_) return row + pool_count_;
    const auto slot = static_cast<std::uint16_t>(src_port - pool_base_);
    return slot < pool_count_ ? row + slot : kNone;
  }

  std::size_t size() const { return sockets_.size(); }
  UdpSocket& at(std::size_t i) { return sockets_[i]; }
  const UdpSocket& at(std::size_t i) const { return sockets_[i]; }
  std::uint8_t plane_of(std::size_t i) const {
    return static_cast<std::uint8_t>(i / (pool_count_ + 1u));
  }
  bool is_listener(std::size_t i) const { return i % (pool_count_ + 1u) == pool_count_; }

 private:
  bool bind_all(const SocketTableConfig& config, std::string* error);
  bool bind_listeners(const SocketTableConfig& config, std::string* error);
  bool bind_pool(const SocketTableConfig& config, std::uint16_t base, std::string* error);
  // Whether the pool from `base` holds `listen_port`; if it does, says so in `error`.
  bool overlaps(std::uint16_t listen_port, std::uint16_t base, std::string* error) const;

  std::vector<UdpSocket> sockets_;  // plane-major; per plane: pool sockets, then listener
  std::size_t planes_ = 0;
  std::uint16_t listen_port_ = 0;
  std::uint16_t pool_base_ = 0;
  std::uint16_t pool_count_ = 0;
};

}  // namespace mroce::net
