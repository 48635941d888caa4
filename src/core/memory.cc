#include "core/memory.h"

#include <algorithm>
#include <cstring>

namespace mroce {

Errc MemoryTable::add(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
                      MrKeys* out) {
  if (length == 0 || addr + length < addr) return Errc::kInvalidArgument;
  std::uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    if (regions_.empty()) regions_.emplace_back();  // index 0 unused
    if (regions_.size() >= (1u << 24)) return Errc::kNoResources;
    index = static_cast<std::uint32_t>(regions_.size());
    regions_.emplace_back();
  }
  // The low byte is random so a stale or guessed key rarely names a live region.
  const std::uint32_t tag = 1 + static_cast<std::uint32_t>(random_.below(255));
  Region& r = regions_[index];
  r = Region{addr, length, access, index << 8 | tag, static_cast<std::uint8_t*>(host)};
  out->lkey = out->rkey = r.key;
  return Errc::kOk;
}

Errc MemoryTable::remove(std::uint32_t key) {
  const std::uint32_t index = key >> 8;
  if (index == 0 || index >= regions_.size() || regions_[index].key != key) {
    return Errc::kNotFound;
  }
  regions_[index] = Region{};
  free_.push_back(index);
  return Errc::kOk;
}

AccessCheck MemoryTable::check(std::uint32_t key, std::uint64_t addr, std::uint64_t length,
                               std::uint32_t right, const Region** out) const {
  const std::uint32_t index = key >> 8;
  if (index == 0 || index >= regions_.size() || regions_[index].key != key) {
    return AccessCheck::kBadKey;
  }
  const Region& r = regions_[index];
  if (addr < r.addr || addr - r.addr > r.length || length > r.length - (addr - r.addr)) {
    return AccessCheck::kOutOfRange;
  }
  if ((r.access & right) != right) return AccessCheck::kDenied;
  *out = &r;
  return AccessCheck::kOk;
}

namespace {

template <typename Copy>
bool walk(const MemoryTable& table, const Sge* sg, int count, std::uint64_t offset,
          std::uint32_t length, std::uint32_t right, Copy copy) {
  for (int i = 0; i < count && length > 0; ++i) {
    if (offset >= sg[i].length) {
      offset -= sg[i].length;
      continue;
    }
    const auto take =
        static_cast<std::uint32_t>(std::min<std::uint64_t>(length, sg[i].length - offset));
    const Region* r = nullptr;
    if (table.check(sg[i].lkey, sg[i].addr + offset, take, right, &r) != AccessCheck::kOk) {
      return false;
    }
    if (std::uint8_t* host = MemoryTable::host_of(*r, sg[i].addr + offset)) copy(host, take);
    length -= take;
    offset = 0;
  }
  return length == 0;
}

}  // namespace

bool MemoryTable::gather(const Sge* sg, int count, std::uint64_t offset, std::uint8_t* dst,
                         std::uint32_t length) const {
  return walk(*this, sg, count, offset, length, 0, [&](std::uint8_t* host, std::uint32_t n) {
    std::memcpy(dst, host, n);
    dst += n;
  });
}

bool MemoryTable::scatter(const Sge* sg, int count, std::uint64_t offset, const std::uint8_t* src,
                          std::uint32_t length) const {
  return walk(*this, sg, count, offset, length, access::kLocalWrite,
              [&](std::uint8_t* host, std::uint32_t n) {
                std::memcpy(host, src, n);
                src += n;
              });
}

const std::uint8_t* MemoryTable::contiguous(const Sge* sg, int count, std::uint64_t offset,
                                            std::uint32_t length) const {
  for (int i = 0; i < count; ++i) {
    if (offset >= sg[i].length) {
      offset -= sg[i].length;
      continue;
    }
    const Region* r = nullptr;
    if (length > sg[i].length - offset ||
        check(sg[i].lkey, sg[i].addr + offset, length, 0, &r) != AccessCheck::kOk) {
      return nullptr;
    }
    return host_of(*r, sg[i].addr + offset);
  }
  return nullptr;
}

bool MemoryTable::sges_valid(const Sge* sg, int count, std::uint32_t right) const {
  for (int i = 0; i < count; ++i) {
    const Region* r = nullptr;
    if (sg[i].length > 0 &&
        check(sg[i].lkey, sg[i].addr, sg[i].length, right, &r) != AccessCheck::kOk) {
      return false;
    }
  }
  return true;
}

}  // namespace mroce
