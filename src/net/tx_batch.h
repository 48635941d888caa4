// Datagrams the engine produced, gathered so that they leave in few system calls. The
// engine sprays consecutive packets over different paths (sockets), so the batch is
// regrouped by socket, keeping each socket's order (each path's sequence numbers must
// leave in order); then each socket's run of equal-sized datagrams to one destination
// with one ECN value becomes one UDP GSO message, and all of a socket's messages one
// sendmmsg.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"
#include "mroce/mroce.h"
#include "net/sockaddr.h"
#include "net/socket_table.h"

namespace mroce::net {

class TxBatch {
 public:
  TxBatch(std::size_t capacity, std::size_t packet_size, bool gso);

  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == capacity_; }
  std::size_t size() const { return count_; }

  // The next free slot: the engine writes a datagram there, then commit() keeps it.
  std::span<std::uint8_t> slot() { return {buffers_.data() + count_ * packet_size_, packet_size_}; }
  TxMeta* slot_meta() { return &metas_[count_]; }
  void commit() { ++count_; }

  // Hands every datagram to the kernel and empties the batch. Datagrams the kernel
  // refuses are counted and dropped: the transport recovers them as losses.
  void send(SocketTable& sockets, DatapathCounters* counters);

 private:
  struct Message {
    std::uint32_t first_iov = 0;
    std::uint32_t segments = 0;
    std::uint16_t segment_size = 0;
  };

  void send_socket(std::size_t index, UdpSocket& s, std::span<const std::uint32_t> slots,
                   DatapathCounters* counters);
  // Builds the messages for `slots` (one socket's datagrams, in order) from msg_first on.
  std::size_t build(const UdpSocket& s, std::span<const std::uint32_t> slots, bool gso);
  void fill_control(msghdr& h, std::size_t m, int family, Ecn ecn, std::uint16_t gso_size);

  std::size_t capacity_;
  std::size_t packet_size_;
  bool gso_;
  std::size_t count_ = 0;
  std::vector<std::uint8_t> buffers_;
  std::vector<TxMeta> metas_;
  // Scratch, one entry per datagram at most.
  std::vector<std::uint32_t> order_;
  std::vector<std::uint32_t> socket_of_;
  std::vector<Message> messages_;
  std::vector<mmsghdr> headers_;
  std::vector<iovec> iovs_;
  std::vector<SocketAddress> names_;
  std::vector<std::uint8_t> control_;
  std::vector<std::uint8_t> gso_off_;  // by socket index: GSO failed there once
};

}  // namespace mroce::net
