#include "net/tx_batch.h"

#include <liburing.h>
#include <netinet/in.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/tsan_sockets.h"

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

TxBatch::TxBatch(std::size_t capacity, std::size_t packet_size, bool gso, bool uring)
    : capacity_(capacity),
      packet_size_(packet_size),
      gso_(gso),
      buffers_(capacity * packet_size),
      metas_(capacity),
      order_(capacity),
      socket_of_(capacity),
      messages_(capacity),
      headers_(capacity),
      iovs_(2 * capacity),
      names_(capacity),
      control_(capacity * kControlSize),
      groups_(capacity),
      results_(capacity) {
  if (!uring) return;
  ring_ = new io_uring;
  unsigned entries = 1;
  while (entries < capacity) entries *= 2;
  if (io_uring_queue_init(entries, ring_, 0) != 0) {
    delete ring_;
    ring_ = nullptr;
  }
}

TxBatch::~TxBatch() {
  if (!ring_) return;
  io_uring_queue_exit(ring_);
  delete ring_;
}

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
  tsan_sent();
  if (ring_) {
    send_uring(sockets, n, counters);
    count_ = 0;
    return;
  }
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
      slots = slots.subspan(messages_[sent].first_slot);
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

void TxBatch::send_uring(SocketTable& sockets, std::size_t n, DatapathCounters* counters) {
  std::size_t groups = 0, messages = 0, iov = 0;
  for (std::size_t begin = 0; begin < n; ++groups) {
    std::size_t end = begin + 1;
    while (end < n && socket_of_[order_[end]] == socket_of_[order_[begin]]) ++end;
    Group& g = groups_[groups];
    g.socket = socket_of_[order_[begin]];
    g.begin = static_cast<std::uint32_t>(begin);
    g.end = static_cast<std::uint32_t>(end);
    g.first = static_cast<std::uint32_t>(messages);
    g.count = static_cast<std::uint32_t>(build(
        sockets.at(g.socket), std::span<const std::uint32_t>(order_.data() + begin, end - begin),
        gso_ && !gso_off_[g.socket], messages, &iov));
    // MSG_DONTWAIT: a full socket answers EAGAIN at once (dropped, as with sendmmsg)
    // instead of being retried later, which could reorder a path's packets.
    for (std::size_t k = g.first; k < g.first + g.count; ++k) {
      io_uring_sqe* sqe = io_uring_get_sqe(ring_);
      io_uring_prep_sendmsg(sqe, sockets.at(g.socket).fd(), &headers_[k].msg_hdr, MSG_DONTWAIT);
      sqe->user_data = k;
    }
    messages += g.count;
    begin = end;
  }
  if (messages == 0) return;
  int r;
  do {
    r = io_uring_submit_and_wait(ring_, static_cast<unsigned>(messages));
  } while (r == -EINTR);
  ++counters->tx_syscalls;
  std::size_t done = 0;
  while (done < messages) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(ring_, &cqe) != 0) break;
    results_[cqe->user_data] = cqe->res;
    io_uring_cqe_seen(ring_, cqe);
    ++done;
  }
  // Results, and sendmmsg for a socket whose route refused GSO (all its messages are
  // complete by now, so its headers may be rebuilt).
  for (std::size_t gi = 0; gi < groups; ++gi) {
    const Group g = groups_[gi];
    for (std::size_t k = g.first; k < g.first + g.count; ++k) {
      const int res = results_[k];
      if (res >= 0) {
        counters->tx_datagrams += messages_[k].segments;
        counters->tx_gso_sends += messages_[k].segments > 1;
        continue;
      }
      if (messages_[k].segments > 1 && gso_refused(-res)) {
        gso_off_[g.socket] = 1;
        ++counters->tx_gso_fallbacks;
        const std::uint32_t from = g.begin + messages_[k].first_slot;
        send_socket(g.socket, sockets.at(g.socket),
                    std::span<const std::uint32_t>(order_.data() + from, g.end - from), counters);
        break;
      }
      counters->tx_dropped += messages_[k].segments;
    }
  }
}

std::size_t TxBatch::build(const UdpSocket& s, std::span<const std::uint32_t> slots, bool gso,
                           std::size_t first, std::size_t* iov_at) {
  const auto size_of = [](const TxMeta& t) { return t.length + t.payload_length; };
  std::size_t m = first;
  std::size_t iov = iov_at ? *iov_at : 0;
  for (std::size_t i = 0; i < slots.size(); ++m) {
    const TxMeta& head = metas_[slots[i]];
    Message& msg = messages_[m];
    msg.first_slot = static_cast<std::uint32_t>(i);
    msg.segments = 0;
    msg.segment_size = size_of(head);
    const std::size_t first_iov = iov;
    std::uint32_t total = 0;
    while (i < slots.size()) {
      const TxMeta& t = metas_[slots[i]];
      const std::uint32_t size = size_of(t);
      if (msg.segments > 0) {
        if (!gso || msg.segments == kMaxSegments || t.dst != head.dst ||
            t.dst_port != head.dst_port || t.ecn != head.ecn || size > msg.segment_size ||
            total + size > kMaxGsoBytes) {
          break;
        }
      }
      iovs_[iov++] = iovec{buffers_.data() + slots[i] * packet_size_, t.length};
      if (t.payload_length > 0) {
        // The kernel only reads it: iovec's pointer is not const.
        iovs_[iov++] = iovec{const_cast<std::uint8_t*>(t.payload), t.payload_length};
      }
      total += size;
      ++msg.segments;
      ++i;
      if (size < msg.segment_size) break;  // only the last segment may be shorter
    }
    names_[m] = to_sockaddr(head.dst, head.dst_port);
    msghdr& h = headers_[m].msg_hdr;
    h = msghdr{};
    h.msg_name = names_[m].get();
    h.msg_namelen = names_[m].length;
    h.msg_iov = &iovs_[first_iov];
    h.msg_iovlen = iov - first_iov;
    fill_control(h, m, s.family(), head.ecn,
                 msg.segments > 1 ? static_cast<std::uint16_t>(msg.segment_size) : 0);
  }
  if (iov_at) *iov_at = iov;
  return m - first;
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
