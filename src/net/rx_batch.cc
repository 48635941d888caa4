#include "net/rx_batch.h"

#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/udp.h>

#include <cerrno>
#include <cstring>

#include "net/tsan_sockets.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace mroce::net {

void parse_read(const msghdr& h, const std::uint8_t* data, std::uint32_t length, const UdpSocket& s,
                std::uint8_t plane, std::size_t max_datagram, std::uint32_t* last_drops,
                DatapathCounters* counters, RxRead* out) {
  RxRead& r = *out;
  r = RxRead{};
  r.meta.plane = plane;
  r.meta.dst = s.address();
  r.meta.dst_port = s.port();
  if ((h.msg_flags & MSG_TRUNC) ||
      !from_sockaddr(static_cast<const sockaddr*>(h.msg_name), &r.meta.src, &r.meta.src_port)) {
    ++counters->rx_truncated;
    r.discard = true;
    return;
  }
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
      r.meta.ecn = static_cast<Ecn>(*CMSG_DATA(c) & 3);
    } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
      int tclass = 0;
      std::memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
      r.meta.ecn = static_cast<Ecn>(tclass & 3);
    } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
      int size = 0;
      std::memcpy(&size, CMSG_DATA(c), sizeof size);
      if (size > 0) r.segment_size = static_cast<std::uint32_t>(size);
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
      std::uint32_t drops = 0;
      std::memcpy(&drops, CMSG_DATA(c), sizeof drops);
      counters->rx_socket_drops += drops - *last_drops;
      *last_drops = drops;
    }
  }
  const std::uint32_t unit = r.segment_size ? r.segment_size : length;
  if (unit > max_datagram) {
    ++counters->rx_truncated;
    r.discard = true;
    return;
  }
  r.data = data;
  r.length = length;
  if (r.segment_size >= length) r.segment_size = 0;
  if (r.segment_size) ++counters->rx_gro_reads;
  counters->rx_datagrams += r.segment_size ? (length + r.segment_size - 1) / r.segment_size : 1;
}

RxBatch::RxBatch(std::size_t slots, std::size_t slot_size, std::size_t max_datagram)
    : slots_(slots),
      slot_size_(slot_size),
      max_datagram_(max_datagram),
      buffers_(slots * slot_size),
      headers_(slots),
      iovs_(slots),
      names_(slots),
      control_(slots * kRxControlSize),
      reads_info_(slots) {
  // What recvmmsg never changes is set once: buffers, names and control areas.
  for (std::size_t i = 0; i < slots_; ++i) {
    iovs_[i] = iovec{buffers_.data() + i * slot_size_, slot_size_};
    msghdr& h = headers_[i].msg_hdr;
    h = msghdr{};
    h.msg_name = names_[i].get();
    h.msg_iov = &iovs_[i];
    h.msg_iovlen = 1;
    h.msg_control = control_.data() + i * kRxControlSize;
  }
  reset(slots_);
}

void RxBatch::reset(std::size_t count) {
  // The kernel writes back lengths and flags of the slots it filled, and only those.
  for (std::size_t i = 0; i < count; ++i) {
    msghdr& h = headers_[i].msg_hdr;
    h.msg_namelen = sizeof(sockaddr_storage);
    h.msg_controllen = kRxControlSize;
    h.msg_flags = 0;
  }
}

int RxBatch::receive(const UdpSocket& s, std::uint8_t plane, std::uint32_t ce_threshold,
                     std::uint32_t* last_drops, DatapathCounters* counters) {
  // A poll that finds nothing (the common case when spinning) costs one system call and
  // no setup; after a read, only the slots it filled are reset.
  reset(std::size_t(reads_));
  reads_ = 0;
  int n;
  do {
    n = recvmmsg(s.fd(), headers_.data(), static_cast<unsigned>(slots_), MSG_DONTWAIT, nullptr);
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return 0;
  ++counters->rx_syscalls;
  tsan_received();
  reads_ = n;
  for (int i = 0; i < n; ++i) {
    parse_read(headers_[i].msg_hdr, buffers_.data() + std::size_t(i) * slot_size_,
               headers_[i].msg_len, s, plane, max_datagram_, last_drops, counters, &reads_info_[i]);
  }
  // A batch that was not full emptied the queue: no need to ask how deep it is.
  if (ce_threshold > 0 && std::size_t(n) == slots_) mark_if_backlogged(s, ce_threshold, counters);
  return n;
}

void RxBatch::mark_if_backlogged(const UdpSocket& s, std::uint32_t threshold,
                                 DatapathCounters* counters) {
  std::uint32_t info[SK_MEMINFO_VARS] = {};
  socklen_t len = sizeof info;
  if (getsockopt(s.fd(), SOL_SOCKET, SO_MEMINFO, info, &len) != 0) return;
  if (info[SK_MEMINFO_RMEM_ALLOC] <= threshold) return;
  for (int i = 0; i < reads_; ++i) mark_local_ce(&reads_info_[i], counters);
}

void mark_local_ce(RxRead* r, DatapathCounters* counters) {
  if (r->discard || (r->meta.ecn != Ecn::kEct0 && r->meta.ecn != Ecn::kEct1)) return;
  r->meta.ecn = Ecn::kCe;
  counters->rx_local_ce +=
      r->segment_size ? (r->length + r->segment_size - 1) / r->segment_size : 1;
}

}  // namespace mroce::net
