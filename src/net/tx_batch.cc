#include "net/tx_batch.h"

#include <netinet/in.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace mroce::net {

namespace {

// Limits of one GSO message: the kernel's segment cap (64 on older kernels) and the
// largest UDP payload of one IPv4 datagram.
constexpr std::uint32_t kMaxSegments = 64;
constexpr std::uint32_t kMaxGsoBytes = 65507;
constexpr std::size_t kControlSize = CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(std::uint16_t));

bool gso_refused(int err) {
  return err == EIO || err == EINVAL || err == EOPNOTSUPP;
}
bool queue_full(int err) {
  return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
}

}  // namespace

TxBatch::TxBatch(std::size_t capacity, std::size_t packet_size, bool gso)
    : capacity_(capacity),
      packet_size_(packet_size),
      gso_(gso),
      buffers_(capacity * packet_size),
      metas_(capacity),
      order_(capacity),
      socket_of_(capacity),
      messages_(capacity),
      headers_(capacity),
      iovs_(capacity),
      names_(capacity),
      control_(capacity * kControlSize) {}

void TxBatch::send(SocketTable& sockets, DatapathCounters* counters) {
  if (gso_off_.size() != sockets.size()) gso_off_.assign(sockets.size(), 0);
  std::size_t n = 0;
  for (std::uint32_t i = 0; i < count_; ++i) {
    socket_of_[i] =
        static_cast<std::uint32_t>(sockets.index_of(metas_[i].plane, metas_[i].src_port));
    if (socket_of_[i] == static_cast<std::uint32_t>(SocketTable::kNone)) {
      ++counters->tx_dropped;  // the engine named a port outside the pool: never expected
      continue;
    }
    order_[n++] = i;
  }
  std::stable_sort(order_.begin(), order_.begin() + n,
                   [&](std::uint32_t a, std::uint32_t b) { return socket_of_[a] < socket_of_[b]; });
  for (std::size_t begin = 0; begin < n;) {
    std::size_t end = begin + 1;
    while (end < n && socket_of_[order_[end]] == socket_of_[order_[begin]]) ++end;
    send_socket(socket_of_[order_[begin]], sockets.at(socket_of_[order_[begin]]),
                std::span<const std::uint32_t>(order_.data() + begin, end - begin), counters);
    begin = end;
  }
  count_ = 0;
}

void TxBatch::send_socket(std::size_t index, UdpSocket& s, std::span<const std::uint32_t> slots,
                          DatapathCounters* counters) {
  std::size_t n = build(s, slots, gso_ && !gso_off_[index]);
  std::size_t sent = 0;
  while (sent < n) {
    const int r = sendmmsg(s.fd(), &headers_[sent], static_cast<unsigned>(n - sent), 0);
    ++counters->tx_syscalls;
    if (r > 0) {
      for (std::size_t k = sent; k < sent + std::size_t(r); ++k) {
        counters->tx_datagrams += messages_[k].segments;
        counters->tx_gso_sends += messages_[k].segments > 1;
      }
      sent += std::size_t(r);
      continue;
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (messages_[sent].segments > 1 && gso_refused(err)) {
      // This route cannot take GSO (e.g. no checksum offload): send singly from here on.
      gso_off_[index] = 1;
      ++counters->tx_gso_fallbacks;
      slots = slots.subspan(messages_[sent].first_iov);
      n = build(s, slots, false);
      sent = 0;
      continue;
    }
    if (queue_full(err)) {
      for (std::size_t k = sent; k < n; ++k) counters->tx_dropped += messages_[k].segments;
      return;
    }
    counters->tx_dropped += messages_[sent].segments;  // no route, filtered, ...
    ++sent;
  }
}

std::size_t TxBatch::build(const UdpSocket& s, std::span<const std::uint32_t> slots, bool gso) {
  std::size_t m = 0;
  for (std::size_t i = 0; i < slots.size(); ++m) {
    const TxMeta& head = metas_[slots[i]];
    Message& msg = messages_[m];
    msg.first_iov = static_cast<std::uint32_t>(i);
    msg.segments = 0;
    msg.segment_size = static_cast<std::uint16_t>(head.length);
    std::uint32_t total = 0;
    while (i < slots.size()) {
      const TxMeta& t = metas_[slots[i]];
      if (msg.segments > 0) {
        if (!gso || msg.segments == kMaxSegments || t.dst != head.dst ||
            t.dst_port != head.dst_port || t.ecn != head.ecn || t.length > head.length ||
            total + t.length > kMaxGsoBytes) {
          break;
        }
      }
      iovs_[i] = iovec{buffers_.data() + slots[i] * packet_size_, t.length};
      total += t.length;
      ++msg.segments;
      ++i;
      if (t.length < head.length) break;  // only the last segment may be shorter
    }
    names_[m] = to_sockaddr(head.dst, head.dst_port);
    msghdr& h = headers_[m].msg_hdr;
    h = msghdr{};
    h.msg_name = names_[m].get();
    h.msg_namelen = names_[m].length;
    h.msg_iov = &iovs_[msg.first_iov];
    h.msg_iovlen = msg.segments;
    fill_control(h, m, s.family(), head.ecn, msg.segments > 1 ? msg.segment_size : 0);
  }
  return m;
}

void TxBatch::fill_control(msghdr& h, std::size_t m, int family, Ecn ecn, std::uint16_t gso_size) {
  h.msg_control = control_.data() + m * kControlSize;
  h.msg_controllen = kControlSize;
  std::memset(h.msg_control, 0, kControlSize);
  cmsghdr* c = CMSG_FIRSTHDR(&h);
  const int tos = static_cast<int>(ecn);  // DSCP 0; the ECN field as the engine asks
  c->cmsg_level = family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
  c->cmsg_type = family == AF_INET ? IP_TOS : IPV6_TCLASS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &tos, sizeof tos);
  std::size_t used = CMSG_SPACE(sizeof(int));
  if (gso_size > 0) {
    c = CMSG_NXTHDR(&h, c);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
    std::memcpy(CMSG_DATA(c), &gso_size, sizeof gso_size);
    used += CMSG_SPACE(sizeof(std::uint16_t));
  }
  h.msg_controllen = used;
}

}  // namespace mroce::net
