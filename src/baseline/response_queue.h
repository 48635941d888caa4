// What a responder owes its requester, in PSN order: acknowledgements, NAKs, READ
// responses and atomic responses. Order matters: an ACK sent ahead of an earlier READ's
// responses would tell the requester those responses were lost.
#pragma once

#include <cstdint>
#include <vector>

#include "baseline/aeth.h"

namespace mroce::baseline {

struct Response {
  enum class Kind : std::uint8_t { kAck, kNak, kRead, kAtomic };
  Kind kind = Kind::kAck;
  bool duplicate = false;  // answers a request executed before: a retransmission
  std::uint32_t psn = 0;
  Aeth aeth;
  // READ: what is left to send.
  std::uint64_t va = 0;
  std::uint32_t rkey = 0;
  std::uint32_t length = 0;
  std::uint32_t packets = 0;
  std::uint32_t sent = 0;
  // Atomic: the value found before the operation.
  std::uint64_t original = 0;

  bool is_control() const { return kind == Kind::kAck || kind == Kind::kNak; }
};

// A fixed ring, sized when the queue pair is created.
class ResponseQueue {
 public:
  explicit ResponseQueue(std::size_t capacity) : ring_(capacity) {}

  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == ring_.size(); }
  Response& front() { return ring_[head_]; }
  const Response& front() const { return ring_[head_]; }
  Response& back() { return ring_[(head_ + size_ - 1) % ring_.size()]; }
  void push(const Response& r) {
    ring_[(head_ + size_) % ring_.size()] = r;
    ++size_;
  }
  void pop() {
    head_ = (head_ + 1) % ring_.size();
    --size_;
  }
  // Keeps only the acknowledgements and NAKs, in order.
  void keep_control() {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < size_; ++i) {
      const Response r = ring_[(head_ + i) % ring_.size()];
      if (r.is_control()) ring_[(head_ + kept++) % ring_.size()] = r;
    }
    size_ = kept;
  }

 private:
  std::vector<Response> ring_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace mroce::baseline
