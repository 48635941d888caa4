// Messages partly received on a connection, keyed by (stream, msn): what each needs to
// complete, which of its segments were placed, and what to do when its turn comes.
// One table per connection, opened once the connection is established (a half-open one,
// perhaps a stranger's, holds none): it does not grow with the stream count, and it grows
// with the messages partly received at once, to twice max_messages slots at most.
#pragma once

#include <cstdint>
#include <vector>

#include "core/segment_set.h"
#include "core/transport.h"
#include "core/types.h"
#include "wire/packet.h"

namespace mroce {

struct InboundMessage {
  bool used = false;
  bool complete = false;  // every segment placed
  bool solicited = false;
  wire::DataOp op = wire::DataOp::kNop;
  std::uint32_t stream = 0;
  std::uint32_t msn = 0;
  std::uint32_t length = 0;
  SegmentSet placed;
  std::uint32_t ssn = 0;
  std::uint32_t imm = 0;
  std::uint64_t addr = 0;  // WRITE base, READ source, atomic target
  std::uint32_t rkey = 0;
  std::uint64_t operand = 0;
  std::uint64_t swap = 0;
  // An RDMA WRITE's last byte is published only when the message completes in order,
  // because programs poll on it.
  bool holds_last_byte = false;
  std::uint8_t last_byte = 0;
  WcStatus recv_status = WcStatus::kSuccess;  // receive-side failure to report
  // Refused (bad key, too long...): completes at once, places nothing more, and every
  // later copy of its segments is refused with the same code.
  bool failed = false;
  wire::NackCode fail_code = wire::NackCode::kRemoteAccess;
  DropReason fail_reason = DropReason::kAccessDenied;
};

class InboundTable {
 public:
  explicit InboundTable(std::uint32_t max_messages);
  // Allocates the first slots; until then the table is empty and refuses inserts.
  void open();

  InboundMessage* find(std::uint32_t stream, std::uint32_t msn);
  // Null when the table holds max_messages already.
  InboundMessage* insert(std::uint32_t stream, std::uint32_t msn);
  void erase(InboundMessage* m);
  // Frees every message of one local stream (it is being destroyed) and its bitmap.
  void erase_stream(std::uint32_t stream, BitmapPool& pool);
  std::uint32_t size() const { return size_; }

  template <typename Fn>
  void for_each(Fn fn) {
    for (auto& m : slots_)
      if (m.used) fn(m);
  }

 private:
  std::uint32_t home(std::uint32_t stream, std::uint32_t msn) const;
  std::uint32_t capacity() const;  // slots at most
  void grow();                     // twice the slots, every message moved to its new place

  static constexpr std::uint32_t kFirstSlots = 8;

  std::vector<InboundMessage> slots_;
  std::uint32_t mask_ = 0;
  std::uint32_t max_;
  std::uint32_t size_ = 0;
};

}  // namespace mroce
