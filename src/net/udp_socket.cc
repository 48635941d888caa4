#include "net/udp_socket.h"

#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace mroce::net {

namespace {

// Root may exceed the sysctl limits (rmem_max, wmem_max); others get what they get.
void set_buffer(int fd, int force_opt, int opt, int bytes) {
  if (setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof bytes) != 0) {
    setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof bytes);
  }
}

}  // namespace

UdpSocket::~UdpSocket() {
  close();
}

UdpSocket::UdpSocket(UdpSocket&& other) noexcept {
  *this = std::move(other);
}

UdpSocket& UdpSocket::operator=(UdpSocket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    family_ = other.family_;
    port_ = other.port_;
    address_ = other.address_;
    gro_ = other.gro_;
  }
  return *this;
}

void UdpSocket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool UdpSocket::open(const Address& addr, std::uint16_t port, const SocketOptions& options,
                     std::string* error) {
  close();
  family_ = family_of(addr);
  fd_ = socket(family_, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd_ < 0) {
    *error = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  const int on = 1;
  if (family_ == AF_INET) {
    setsockopt(fd_, IPPROTO_IP, IP_RECVTOS, &on, sizeof on);
  } else {
    setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    setsockopt(fd_, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof on);
  }
  setsockopt(fd_, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);
  set_buffer(fd_, SO_RCVBUFFORCE, SO_RCVBUF, options.rcvbuf);
  set_buffer(fd_, SO_SNDBUFFORCE, SO_SNDBUF, options.sndbuf);
  gro_ = options.gro && setsockopt(fd_, IPPROTO_UDP, UDP_GRO, &on, sizeof on) == 0;

  const SocketAddress sa = to_sockaddr(addr, port);
  if (bind(fd_, sa.get(), sa.length) != 0) {
    const int saved = errno;
    *error =
        "bind " + addr.to_string() + " port " + std::to_string(port) + ": " + std::strerror(saved);
    close();
    errno = saved;
    return false;
  }
  SocketAddress bound;
  bound.length = sizeof bound.storage;
  getsockname(fd_, bound.get(), &bound.length);
  from_sockaddr(bound.get(), &address_, &port_);
  address_ = addr;
  return true;
}

}  // namespace mroce::net
