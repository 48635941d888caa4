// Receiving from every socket of a device through one io_uring. A multishot recvmsg is
// armed on each socket; the kernel takes buffers from two rings it picks from (large
// ones for the listening sockets, where GRO trains of data arrive, small ones for the
// pool sockets' acknowledgements), and one io_uring_enter both waits for all sockets and
// receives what they hold. With epoll and recvmmsg that took a call to wait and one more
// per ready socket: acknowledgements come back spread over as many sockets as paths.
//
// The ring runs with DEFER_TASKRUN: the kernel receives only inside that call, on the
// calling thread. So one thread owns the ring, from open() on (the progress thread);
// nobody else may read the sockets meanwhile, or a socket's datagrams would reach the
// engine out of order.
#pragma once

#include <liburing.h>
#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/types.h"
#include "mroce/mroce.h"
#include "net/rx_batch.h"
#include "net/socket_table.h"

namespace mroce::net {

class RxRing {
 public:
  RxRing() = default;
  ~RxRing();
  RxRing(const RxRing&) = delete;
  RxRing& operator=(const RxRing&) = delete;

  // Sets up the ring on the calling thread over every socket of `sockets` and the
  // eventfd `wake_fd` (a write to it ends a wait). Returns false with one line in
  // *error where the kernel refuses (io_uring disabled; before Linux 6.1).
  bool open(const SocketTable& sockets, int wake_fd, std::size_t max_datagram, std::string* error);

  // Submits what is pending (re-armed receives) and waits until something arrives,
  // wake_fd is written, or the clock reaches `deadline` (kNever: no limit; a past one:
  // just look). The kernel receives what waits in the sockets here.
  void wait(Time now, Time deadline);

  // Takes up to `max` reads that arrived (reads()), parsed; returns how many, 0 when none
  // is left. They stay valid until release(). `rxq_drops`: the last SO_RXQ_OVFL count
  // by socket. Datagrams that found more than `ce_threshold` bytes (if not 0) of their
  // socket ahead of them since the last wait are handed on as CE-marked.
  std::size_t take(std::size_t max, std::uint32_t ce_threshold, std::uint32_t* rxq_drops,
                   DatapathCounters* counters);
  std::span<const RxRead> reads() const { return {reads_.data(), taken_}; }
  // Gives the taken reads' buffers back to the kernel.
  void release();

 private:
  // One set of equal buffers the kernel picks from.
  struct Pool {
    io_uring_buf_ring* ring = nullptr;
    std::uint8_t* memory = nullptr;
    std::size_t bytes = 0;  // mapped: the ring's entries, then the buffers
    std::uint32_t count = 0;
    std::uint32_t size = 0;
    std::uint16_t group = 0;
  };
  bool open_pool(Pool* pool, std::uint16_t group, std::uint32_t count, std::uint32_t size,
                 std::string* error);
  void close_pool(Pool* pool);
  std::uint8_t* buffer(const Pool& pool, std::uint32_t id) const {
    return pool.memory + std::size_t(id) * pool.size;
  }
  void arm(std::size_t socket);
  void arm_wake();
  io_uring_sqe* sqe();

  io_uring ring_{};
  bool open_ = false;
  const SocketTable* sockets_ = nullptr;
  int wake_fd_ = -1;
  std::size_t max_datagram_ = 0;
  msghdr template_{};  // what every multishot receive asks for: name and control room
  Pool data_;          // listening sockets
  Pool acks_;          // pool sockets
  std::vector<RxRead> reads_;
  struct Taken {
    Pool* pool;
    std::uint32_t id;
  };
  std::vector<Taken> buffers_;  // of the reads taken, to give back
  std::size_t taken_ = 0;
  std::vector<std::uint64_t> queued_;  // by socket: bytes taken since the last wait
};

}  // namespace mroce::net
