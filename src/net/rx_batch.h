// Datagrams read from one socket with one recvmmsg, with what the engine must know of
// each: source, destination, plane and the ECN field. A read may hold several datagrams
// of one flow coalesced by the kernel (UDP GRO); they are split back here.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"
#include "mroce/mroce.h"
#include "net/sockaddr.h"
#include "net/udp_socket.h"

namespace mroce::net {

class RxBatch {
 public:
  // `slots` reads of up to `slot_size` bytes each (64 KiB when GRO may coalesce);
  // `max_datagram`: anything larger than one datagram we could send is discarded.
  RxBatch(std::size_t slots, std::size_t slot_size, std::size_t max_datagram);

  // Reads what `s` has queued, up to the batch size. Returns the reads made (0: none
  // waiting, or an error). `last_drops` is the socket's SO_RXQ_OVFL count seen before.
  // When more than `ce_threshold` bytes (if not 0) are still queued after a full batch,
  // the ECN-capable datagrams read are reported as CE.
  int receive(const UdpSocket& s, std::uint8_t plane, std::uint32_t ce_threshold,
              std::uint32_t* last_drops, DatapathCounters* counters);

  // Calls fn(const RxMeta&, std::span<const std::uint8_t>) for every datagram read.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (int i = 0; i < reads_; ++i) {
      const Read& r = reads_info_[i];
      if (r.discard) continue;
      const std::uint8_t* data = buffers_.data() + std::size_t(i) * slot_size_;
      if (r.length == 0) fn(r.meta, std::span<const std::uint8_t>());
      const std::size_t step = r.segment_size ? r.segment_size : r.length;
      for (std::size_t off = 0; off < r.length; off += step) {
        const std::size_t len = off + step <= r.length ? step : r.length - off;
        fn(r.meta, std::span<const std::uint8_t>(data + off, len));
      }
    }
  }

 private:
  void reset(std::size_t count);
  void mark_if_backlogged(const UdpSocket& s, std::uint32_t threshold, DatapathCounters* counters);

  struct Read {
    RxMeta meta;
    bool discard = false;
    std::uint32_t length = 0;
    std::uint32_t segment_size = 0;  // GRO: the size of each coalesced datagram
  };

  std::size_t slots_;
  std::size_t slot_size_;
  std::size_t max_datagram_;
  int reads_ = 0;
  std::vector<std::uint8_t> buffers_;
  std::vector<mmsghdr> headers_;
  std::vector<iovec> iovs_;
  std::vector<SocketAddress> names_;
  std::vector<std::uint8_t> control_;
  std::vector<Read> reads_info_;
};

}  // namespace mroce::net
