#include "net/rx_ring.h"

#include <poll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "net/clock.h"
#include "net/tsan_sockets.h"

namespace mroce::net {

namespace {

// What a completion's user_data names besides a socket index.
constexpr std::uint64_t kWakeData = ~std::uint64_t{0};
// Room in front of each payload: the kernel's io_uring_recvmsg_out, the source address
// and the control messages.
constexpr std::uint32_t kHeadroom = 512;
// Listening sockets: GRO trains of data up to 64 KiB. Pool sockets: acknowledgements
// (72 bytes) and set-up answers, coalesced by GRO into at most 64 of them.
constexpr std::uint32_t kDataBuffers = 32;
constexpr std::uint32_t kDataBufferSize = 65536 + kHeadroom;
constexpr std::uint32_t kAckBuffers = 256;
constexpr std::uint32_t kAckBufferSize = 8192;

std::uint32_t page_round(std::size_t n) {
  const std::size_t page = 4096;
  return static_cast<std::uint32_t>((n + page - 1) / page * page);
}

}  // namespace

RxRing::~RxRing() {
  if (!open_) return;
  io_uring_queue_exit(&ring_);
  close_pool(&data_);
  close_pool(&acks_);
}

bool RxRing::open(const SocketTable& sockets, int wake_fd, std::size_t max_datagram,
                  std::string* error) {
  // Every socket's receive is armed at once, plus re-arms and the wake-up: room for all.
  unsigned entries = 64;
  while (entries < 2 * sockets.size() + 8) entries *= 2;
  io_uring_params p{};
  p.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  p.flags |= IORING_SETUP_CQSIZE;
  p.cq_entries = 4 * (kDataBuffers + kAckBuffers);
  const int r = io_uring_queue_init_params(entries, &ring_, &p);
  if (r < 0) {
    *error = std::string("io_uring_setup: ") + std::strerror(-r);
    return false;
  }
  open_ = true;
  if (!open_pool(&data_, 0, kDataBuffers, kDataBufferSize, error) ||
      !open_pool(&acks_, 1, kAckBuffers, kAckBufferSize, error)) {
    return false;
  }
  sockets_ = &sockets;
  wake_fd_ = wake_fd;
  max_datagram_ = max_datagram;
  template_ = msghdr{};
  template_.msg_namelen = sizeof(sockaddr_storage);
  template_.msg_controllen = kRxControlSize;
  static_assert(sizeof(io_uring_recvmsg_out) + sizeof(sockaddr_storage) + kRxControlSize <=
                kHeadroom);
  reads_.resize(kDataBuffers + kAckBuffers);
  buffers_.resize(kDataBuffers + kAckBuffers);
  queued_.assign(sockets.size(), 0);
  for (std::size_t i = 0; i < sockets.size(); ++i) arm(i);
  arm_wake();
  // The first submission shows whether multishot receives are refused (before 6.0).
  const int s = io_uring_submit(&ring_);
  if (s < 0) {
    *error = std::string("io_uring_submit: ") + std::strerror(-s);
    return false;
  }
  return true;
}

bool RxRing::open_pool(Pool* pool, std::uint16_t group, std::uint32_t count, std::uint32_t size,
                       std::string* error) {
  const std::size_t ring_bytes = page_round(count * sizeof(io_uring_buf));
  pool->bytes = ring_bytes + std::size_t(count) * size;
  // Mapped, not allocated: pages cost memory only once the kernel has written to them.
  void* m = mmap(nullptr, pool->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    *error = std::string("mmap: ") + std::strerror(errno);
    pool->bytes = 0;
    return false;
  }
  pool->ring = static_cast<io_uring_buf_ring*>(m);
  pool->memory = static_cast<std::uint8_t*>(m) + ring_bytes;
  pool->count = count;
  pool->size = size;
  pool->group = group;
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uint64_t>(pool->ring);
  reg.ring_entries = count;
  reg.bgid = group;
  const int r = io_uring_register_buf_ring(&ring_, &reg, 0);
  if (r < 0) {
    *error = std::string("io_uring_register_buf_ring: ") + std::strerror(-r);
    return false;
  }
  io_uring_buf_ring_init(pool->ring);
  const int mask = io_uring_buf_ring_mask(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    io_uring_buf_ring_add(pool->ring, buffer(*pool, i), size, static_cast<unsigned short>(i), mask,
                          static_cast<int>(i));
  }
  io_uring_buf_ring_advance(pool->ring, static_cast<int>(count));
  return true;
}

void RxRing::close_pool(Pool* pool) {
  if (pool->bytes) munmap(pool->ring, pool->bytes);
  pool->bytes = 0;
}

io_uring_sqe* RxRing::sqe() {
  io_uring_sqe* e = io_uring_get_sqe(&ring_);
  if (!e) {
    // The submission queue is full of re-arms: hand them over first.
    io_uring_submit(&ring_);
    e = io_uring_get_sqe(&ring_);
  }
  return e;
}

void RxRing::arm(std::size_t socket) {
  io_uring_sqe* e = sqe();
  if (!e) return;  // cannot happen with the ring sized for every socket twice
  const Pool& pool = sockets_->is_listener(socket) ? data_ : acks_;
  io_uring_prep_recvmsg_multishot(e, sockets_->at(socket).fd(), &template_, 0);
  e->flags |= IOSQE_BUFFER_SELECT;
  e->buf_group = pool.group;
  io_uring_sqe_set_data64(e, socket);
}

void RxRing::arm_wake() {
  io_uring_sqe* e = sqe();
  if (!e) return;
  io_uring_prep_poll_multishot(e, wake_fd_, POLLIN);
  io_uring_sqe_set_data64(e, kWakeData);
}

void RxRing::wait(Time now, Time deadline) {
  std::fill(queued_.begin(), queued_.end(), 0);
  io_uring_cqe* cqe = nullptr;
  if (deadline == kNever) {
    io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, nullptr, nullptr);
    return;
  }
  const timespec t = to_timespec(deadline > now ? deadline - now : 0);
  __kernel_timespec ts{t.tv_sec, t.tv_nsec};
  io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
}

std::size_t RxRing::take(std::size_t max, std::uint32_t ce_threshold, std::uint32_t* rxq_drops,
                         DatapathCounters* counters) {
  max = std::min(max, reads_.size());
  taken_ = 0;
  io_uring_cqe* cqe = nullptr;
  while (taken_ < max && io_uring_peek_cqe(&ring_, &cqe) == 0) {
    const std::uint64_t data = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    const std::uint32_t flags = cqe->flags;
    io_uring_cqe_seen(&ring_, cqe);
    if (data == kWakeData) {
      std::uint64_t v;
      [[maybe_unused]] ssize_t r = read(wake_fd_, &v, sizeof v);
      if (!(flags & IORING_CQE_F_MORE)) arm_wake();
      continue;
    }
    const auto socket = static_cast<std::size_t>(data);
    // A receive ends when the buffers run out (ENOBUFS) or on an error; it is armed
    // again, and goes on once its buffers come back.
    if (!(flags & IORING_CQE_F_MORE)) arm(socket);
    if (res < 0 || !(flags & IORING_CQE_F_BUFFER)) continue;
    Pool& pool = sockets_->is_listener(socket) ? data_ : acks_;
    const auto id = static_cast<std::uint32_t>(flags >> IORING_CQE_BUFFER_SHIFT);
    std::uint8_t* base = buffer(pool, id);
    buffers_[taken_] = Taken{&pool, id};
    RxRead& read = reads_[taken_++];
    ++counters->rx_ring_reads;
    io_uring_recvmsg_out* out = io_uring_recvmsg_validate(base, res, &template_);
    if (!out) {
      read = RxRead{};
      read.discard = true;
      ++counters->rx_truncated;
      continue;
    }
    msghdr h{};
    h.msg_name = io_uring_recvmsg_name(out);
    h.msg_namelen = out->namelen;
    h.msg_control = reinterpret_cast<std::uint8_t*>(out + 1) + template_.msg_namelen;
    h.msg_controllen = out->controllen;
    h.msg_flags = static_cast<int>(out->flags);
    const auto* payload =
        static_cast<const std::uint8_t*>(io_uring_recvmsg_payload(out, &template_));
    const std::uint32_t length = io_uring_recvmsg_payload_length(out, res, &template_);
    const std::uint8_t plane = sockets_->plane_of(socket);
    parse_read(h, payload, length, sockets_->at(socket), plane, max_datagram_, &rxq_drops[socket],
               counters, &read);
    // Bytes of this socket the kernel received before this read, in this wait: they
    // were queued ahead of it when it arrived.
    if (ce_threshold > 0 && queued_[socket] > ce_threshold) mark_local_ce(&read, counters);
    queued_[socket] += length;
  }
  if (taken_ > 0) tsan_received();
  return taken_;
}

void RxRing::release() {
  if (taken_ == 0) return;
  int added_data = 0, added_acks = 0;
  for (std::size_t i = 0; i < taken_; ++i) {
    Pool& pool = *buffers_[i].pool;
    int& added = &pool == &data_ ? added_data : added_acks;
    io_uring_buf_ring_add(pool.ring, buffer(pool, buffers_[i].id), pool.size,
                          static_cast<unsigned short>(buffers_[i].id),
                          io_uring_buf_ring_mask(pool.count), added++);
  }
  if (added_data) io_uring_buf_ring_advance(data_.ring, added_data);
  if (added_acks) io_uring_buf_ring_advance(acks_.ring, added_acks);
  taken_ = 0;
}

}  // namespace mroce::net
