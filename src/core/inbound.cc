#include "core/inbound.h"

#include <algorithm>
#include <bit>

namespace mroce {

InboundTable::InboundTable(std::uint32_t max_messages) : max_(max_messages) {}

void InboundTable::open() {
  if (!slots_.empty()) return;
  slots_.resize(std::min(kFirstSlots, capacity()));
  mask_ = static_cast<std::uint32_t>(slots_.size() - 1);
}

std::uint32_t InboundTable::capacity() const {
  return std::bit_ceil(std::max<std::uint32_t>(2 * max_, 2));
}

void InboundTable::grow() {
  std::vector<InboundMessage> old(2 * slots_.size());
  old.swap(slots_);
  mask_ = static_cast<std::uint32_t>(slots_.size() - 1);
  for (const InboundMessage& m : old) {
    if (!m.used) continue;
    std::uint32_t i = home(m.stream, m.msn);
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = m;
  }
}

std::uint32_t InboundTable::home(std::uint32_t stream, std::uint32_t msn) const {
  std::uint64_t h = (std::uint64_t{stream} << 32 | msn) * 0x9e3779b97f4a7c15ull;
  return static_cast<std::uint32_t>(h >> 40) & mask_;
}

InboundMessage* InboundTable::find(std::uint32_t stream, std::uint32_t msn) {
  if (slots_.empty()) return nullptr;
  for (std::uint32_t i = home(stream, msn);; i = (i + 1) & mask_) {
    InboundMessage& m = slots_[i];
    if (!m.used) return nullptr;
    if (m.stream == stream && m.msn == msn) return &m;
  }
}

InboundMessage* InboundTable::insert(std::uint32_t stream, std::uint32_t msn) {
  if (size_ >= max_ || slots_.empty()) return nullptr;
  // At most half full, as the table at its largest is.
  if (2 * (size_ + 1) > slots_.size() && slots_.size() < capacity()) grow();
  std::uint32_t i = home(stream, msn);
  while (slots_[i].used) i = (i + 1) & mask_;
  InboundMessage& m = slots_[i];
  m = InboundMessage{};
  m.used = true;
  m.stream = stream;
  m.msn = msn;
  ++size_;
  return &m;
}

void InboundTable::erase(InboundMessage* m) {
  // Backward-shift deletion keeps every probe chain unbroken without tombstones.
  std::uint32_t hole = static_cast<std::uint32_t>(m - slots_.data());
  slots_[hole].used = false;
  --size_;
  for (std::uint32_t j = (hole + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
    const std::uint32_t h = home(slots_[j].stream, slots_[j].msn);
    // Move j into the hole if its home is not in (hole, j] cyclically.
    const bool stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (stays) continue;
    slots_[hole] = slots_[j];
    slots_[j].used = false;
    hole = j;
  }
}

void InboundTable::erase_stream(std::uint32_t stream, BitmapPool& pool) {
  for (std::size_t i = 0; i < slots_.size() && size_ > 0;) {
    InboundMessage& m = slots_[i];
    if (m.used && m.stream == stream) {
      m.placed.release(pool);
      erase(&m);  // may shift a later entry into slot i: look at it again
    } else {
      ++i;
    }
  }
}

}  // namespace mroce
