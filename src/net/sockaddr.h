// Conversions between the engines' Address (IPv6, or IPv4-mapped) and the socket API's
// sockaddr, and the textual forms users type.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "core/types.h"

namespace mroce::net {

// A socket address of either family, sized for both.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;

  sockaddr* get() { return reinterpret_cast<sockaddr*>(&storage); }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
};

// AF_INET for IPv4-mapped addresses, AF_INET6 otherwise.
int family_of(const Address& a);
SocketAddress to_sockaddr(const Address& a, std::uint16_t port);
// False when `sa` is neither AF_INET nor AF_INET6.
bool from_sockaddr(const sockaddr* sa, Address* addr, std::uint16_t* port);

// "a.b.c.d" or an IPv6 literal.
bool parse_ip(const std::string& text, Address* out);

}  // namespace mroce::net
