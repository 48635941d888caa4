#include "net/socket_table.h"

#include <sys/random.h>

#include <cerrno>

namespace mroce::net {

namespace {

// Where a free source-port range is looked for: the IANA dynamic range.
constexpr std::uint32_t kDynamicFirst = 49152;
constexpr std::uint32_t kDynamicEnd = 65536;
constexpr int kRangeAttempts = 64;
constexpr int kListenAttempts = 16;

std::uint32_t random_u32() {
  std::uint32_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v) v = 0x9e3779b9u;
  return v;
}

}  // namespace

bool SocketTable::open(const SocketTableConfig& config, std::string* error) {
  if (bind_all(config, error)) return true;
  sockets_.clear();  // every socket or none
  return false;
}

bool SocketTable::bind_all(const SocketTableConfig& config, std::string* error) {
  sockets_.clear();
  listen_port_ = 0;
  pool_base_ = 0;
  planes_ = config.planes.size();
  pool_count_ = config.pool_count;
  if (planes_ == 0 || pool_count_ == 0) {
    *error = "no planes or no source ports";
    return false;
  }
  // Both chosen and overlapping: refused before anything is bound, whether or not the
  // ports are free.
  if (config.listen_port != 0 && config.pool_base != 0 &&
      overlaps(config.listen_port, config.pool_base, error)) {
    return false;
  }
  sockets_.resize(planes_ * (pool_count_ + 1u));

  if (config.pool_base != 0) {
    if (std::uint32_t(config.pool_base) + pool_count_ > kDynamicEnd) {
      *error = "source ports " + std::to_string(config.pool_base) + "+" +
               std::to_string(pool_count_) + " run past 65535";
      return false;
    }
    // A free listening port is the kernel's choice: bound after the pool, it cannot be one
    // of the pool's ports (bound before it, it may be).
    if (config.listen_port != 0)
      return bind_listeners(config, error) && bind_pool(config, config.pool_base, error);
    return bind_pool(config, config.pool_base, error) && bind_listeners(config, error);
  }
  if (!bind_listeners(config, error)) return false;
  const std::uint32_t span = kDynamicEnd - kDynamicFirst;
  if (pool_count_ > span) {
    *error = "cannot find " + std::to_string(pool_count_) + " free source ports";
    return false;
  }
  std::string last;
  for (int attempt = 0; attempt < kRangeAttempts; ++attempt) {
    const auto base =
        static_cast<std::uint16_t>(kDynamicFirst + random_u32() % (span - pool_count_ + 1));
    if (bind_pool(config, base, &last)) return true;
  }
  *error = "no free range of " + std::to_string(pool_count_) + " source ports (last: " + last + ")";
  return false;
}

bool SocketTable::bind_listeners(const SocketTableConfig& config, std::string* error) {
  for (int attempt = 0; attempt < kListenAttempts; ++attempt) {
    std::uint16_t port = config.listen_port;
    bool ok = true;
    for (std::size_t p = 0; p < planes_ && ok; ++p) {
      UdpSocket& s = sockets_[p * (pool_count_ + 1u) + pool_count_];
      ok = s.open(config.planes[p], port, config.listen_options, error);
      if (ok) port = s.port();
    }
    if (ok) {
      listen_port_ = port;
      return true;
    }
    for (std::size_t p = 0; p < planes_; ++p)
      sockets_[p * (pool_count_ + 1u) + pool_count_].close();
    // A port of our own choosing may be taken on another plane: choose again.
    if (config.listen_port != 0 || errno != EADDRINUSE) return false;
  }
  return false;
}

bool SocketTable::bind_pool(const SocketTableConfig& config, std::uint16_t base,
                            std::string* error) {
  if (overlaps(listen_port_, base, error)) return false;
  for (std::size_t p = 0; p < planes_; ++p) {
    for (std::uint16_t i = 0; i < pool_count_; ++i) {
      UdpSocket& s = sockets_[p * (pool_count_ + 1u) + i];
      if (!s.open(config.planes[p], static_cast<std::uint16_t>(base + i), config.pool_options,
                  error)) {
        for (std::size_t q = 0; q < planes_; ++q) {
          for (std::uint16_t j = 0; j < pool_count_; ++j)
            sockets_[q * (pool_count_ + 1u) + j].close();
        }
        return false;
      }
    }
  }
  pool_base_ = base;
  return true;
}

bool SocketTable::overlaps(std::uint16_t listen_port, std::uint16_t base,
                           std::string* error) const {
  if (listen_port < base || listen_port >= std::uint32_t(base) + pool_count_) return false;
  *error = "source ports " + std::to_string(base) + "+" + std::to_string(pool_count_) +
           " include the listening port " + std::to_string(listen_port);
  return true;
}

}  // namespace mroce::net
