// Datagrams the engine produced, gathered so that they leave in few system calls. The
// engine sprays consecutive packets over different paths (sockets), so the batch is
// regrouped by socket, keeping each socket's order (each path's sequence numbers must
// leave in order); then each socket's run of equal-sized datagrams to one destination
// with one ECN value becomes one UDP GSO message, and all of a socket's messages one
// sendmmsg. A datagram is its slot's bytes followed by the payload its TxMeta references
// in registered memory (zero-copy): two iovecs, which GSO splits at the segment size
// like any other bytes, so a train of [header, payload] pairs is still one message.
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

struct io_uring;

namespace mroce::net {

class TxBatch {
 public:
  // uring: submit every socket's messages in one io_uring_enter instead of one sendmmsg
  // per socket (falls back to sendmmsg where io_uring cannot be set up).
  TxBatch(std::size_t capacity, std::size_t packet_size, bool gso, bool uring = false);
  ~TxBatch();
  TxBatch(const TxBatch&) = delete;
  TxBatch& operator=(const TxBatch&) = delete;

  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == capacity_; }
  std::size_t size() const { return count_; }

  // The next free slot: the engine writes a datagram there, then commit() keeps it.
  std::span<std::uint8_t> slot() { return {buffers_.data() + count_ * packet_size_, packet_size_}; }
  TxMeta* slot_meta() {
    metas_[count_].payload = nullptr;  // a transport that never references leaves it so
    metas_[count_].payload_length = 0;
    return &metas_[count_];
  }
  void commit() { ++count_; }

  // Hands every datagram to the kernel and empties the batch. Datagrams the kernel
  // refuses are counted and dropped: the transport recovers them as losses. Referenced
  // payload is read by the kernel inside sendmmsg, and not after it returns.
  void send(SocketTable& sockets, DatapathCounters* counters);

 private:
  struct Message {
    std::uint32_t first_slot = 0;  // index into the socket's slots
    std::uint32_t segments = 0;
    std::uint32_t segment_size = 0;
  };

  void send_socket(std::size_t index, UdpSocket& s, std::span<const std::uint32_t> slots,
                   DatapathCounters* counters);
  // Every socket's messages in one io_uring submission.
  void send_uring(SocketTable& sockets, std::size_t n, DatapathCounters* counters);
  // Builds the messages for `slots` (one socket's datagrams, in order) from message
  // `first` and iovec *iov on; returns how many.
  std::size_t build(const UdpSocket& s, std::span<const std::uint32_t> slots, bool gso,
                    std::size_t first = 0, std::size_t* iov = nullptr);
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
  std::vector<iovec> iovs_;  // two per datagram at most: header, referenced payload
  std::vector<SocketAddress> names_;
  std::vector<std::uint8_t> control_;
  std::vector<std::uint8_t> gso_off_;  // by socket index: GSO failed there once
  struct Group {                       // one socket's share of a submission
    std::uint32_t socket = 0;
    std::uint32_t begin = 0, end = 0;    // into order_
    std::uint32_t first = 0, count = 0;  // messages
  };
  std::vector<Group> groups_;
  std::vector<int> results_;  // by message: what its completion said
  ::io_uring* ring_ = nullptr;
};

}  // namespace mroce::net
