// One non-blocking, unconnected UDP socket bound to (address, port), set up for the
// datapath: ECN of every received datagram reported (IP_RECVTOS / IPV6_RECVTCLASS),
// receive-queue drops counted (SO_RXQ_OVFL), GRO coalescing where offered, and large
// buffers. Unconnected on purpose: a connected socket's packets carry the socket's own
// flow hash, which some hops use for ECMP instead of the 5-tuple.
#pragma once

#include <cstdint>
#include <string>

#include "core/types.h"
#include "net/sockaddr.h"

namespace mroce::net {

struct SocketOptions {
  int rcvbuf = 4 << 20;
  int sndbuf = 4 << 20;
  bool gro = true;
};

class UdpSocket {
 public:
  UdpSocket() = default;
  ~UdpSocket();
  UdpSocket(UdpSocket&& other) noexcept;
  UdpSocket& operator=(UdpSocket&& other) noexcept;
  UdpSocket(const UdpSocket&) = delete;
  UdpSocket& operator=(const UdpSocket&) = delete;

  // Binds to (addr, port); port 0 takes any free port. On failure returns false with
  // errno set and a reason in *error.
  bool open(const Address& addr, std::uint16_t port, const SocketOptions& options,
            std::string* error);
  void close();

  int fd() const { return fd_; }
  int family() const { return family_; }
  std::uint16_t port() const { return port_; }
  const Address& address() const { return address_; }
  // Whether the kernel coalesces arriving datagrams for us (UDP_GRO accepted).
  bool gro() const { return gro_; }

 private:
  int fd_ = -1;
  int family_ = 0;
  std::uint16_t port_ = 0;
  Address address_;
  bool gro_ = false;
};

}  // namespace mroce::net
