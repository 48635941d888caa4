#include "net/sockaddr.h"

#include <arpa/inet.h>

#include <cstring>

namespace mroce::net {

int family_of(const Address& a) {
  return a.is_ipv4() ? AF_INET : AF_INET6;
}

SocketAddress to_sockaddr(const Address& a, std::uint16_t port) {
  SocketAddress out;
  if (a.is_ipv4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&out.storage);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    sin->sin_addr.s_addr = htonl(a.ipv4_value());
    out.length = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    std::memcpy(&sin6->sin6_addr, a.bytes.data(), 16);
    out.length = sizeof(sockaddr_in6);
  }
  return out;
}

bool from_sockaddr(const sockaddr* sa, Address* addr, std::uint16_t* port) {
  if (sa->sa_family == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(sa);
    *addr = Address::ipv4(ntohl(sin->sin_addr.s_addr));
    *port = ntohs(sin->sin_port);
    return true;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(sa);
    std::memcpy(addr->bytes.data(), &sin6->sin6_addr, 16);
    *port = ntohs(sin6->sin6_port);
    return true;
  }
  return false;
}

bool parse_ip(const std::string& text, Address* out) {
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    *out = Address::ipv4(ntohl(v4.s_addr));
    return true;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(out->bytes.data(), &v6, 16);
    return true;
  }
  return false;
}

}  // namespace mroce::net
