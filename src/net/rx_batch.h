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

// One read: a datagram, or a train of them coalesced by UDP GRO, and what the engine
// must know of it.
struct RxRead {
  RxMeta meta;
  const std::uint8_t* data = nullptr;
  std::uint32_t length = 0;
  std::uint32_t segment_size = 0;  // GRO: the size of each coalesced datagram; 0: one
  bool discard = false;            // truncated, or larger than any datagram we send
};

// Fills *r from one message that `s` (on `plane`) received: its source, control messages
// (ECN, GRO segment size, the socket's SO_RXQ_OVFL count, last seen *last_drops) and
// length, counting it. A read larger than `max_datagram` per datagram, or truncated, is
// marked discard.
void parse_read(const msghdr& h, const std::uint8_t* data, std::uint32_t length, const UdpSocket& s,
                std::uint8_t plane, std::size_t max_datagram, std::uint32_t* last_drops,
                DatapathCounters* counters, RxRead* r);

// Room for the control messages a read asks for: ECN, GRO segment size, SO_RXQ_OVFL.
inline constexpr std::size_t kRxControlSize =
    CMSG_SPACE(sizeof(int)) * 2 + CMSG_SPACE(sizeof(std::uint32_t)) + 64;

// The host's own receive queue was deep: an ECN-capable read goes to the engine as
// CE-marked, as a switch marks a queue past its threshold.
void mark_local_ce(RxRead* r, DatapathCounters* counters);

// Calls fn(const RxMeta&, std::span<const std::uint8_t>) for every datagram of a read.
template <typename Fn>
void for_each_datagram(const RxRead& r, Fn&& fn) {
  if (r.discard) return;
  if (r.length == 0) fn(r.meta, std::span<const std::uint8_t>());
  const std::size_t step = r.segment_size ? r.segment_size : r.length;
  for (std::size_t off = 0; off < r.length; off += step) {
    const std::size_t len = off + step <= r.length ? step : r.length - off;
    fn(r.meta, std::span<const std::uint8_t>(r.data + off, len));
  }
}

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

  // The reads the last receive() made.
  std::span<const RxRead> reads() const { return {reads_info_.data(), std::size_t(reads_)}; }

 private:
  void reset(std::size_t count);
  void mark_if_backlogged(const UdpSocket& s, std::uint32_t threshold, DatapathCounters* counters);

  std::size_t slots_;
  std::size_t slot_size_;
  std::size_t max_datagram_;
  int reads_ = 0;
  std::vector<std::uint8_t> buffers_;
  std::vector<mmsghdr> headers_;
  std::vector<iovec> iovs_;
  std::vector<SocketAddress> names_;
  std::vector<std::uint8_t> control_;
  std::vector<RxRead> reads_info_;
};

}  // namespace mroce::net
