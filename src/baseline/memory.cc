#include "baseline/memory.h"

#include <algorithm>
#include <cstring>

namespace mroce::baseline {

namespace {

constexpr std::uint32_t kMaxRegions = (1u << 24) - 1;

}  // namespace

Errc MemoryTable::reg(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host,
                      MrKeys* out) {
  if (access & ~access::kAll) return Errc::kInvalidArgument;
  // Verbs: remote write or atomic rights need local write.
  if ((access & (access::kRemoteWrite | access::kRemoteAtomic)) && !(access & access::kLocalWrite))
    return Errc::kInvalidArgument;
  if (length > ~std::uint64_t{0} - addr) return Errc::kInvalidArgument;
  std::uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
  } else {
    if (regions_.size() >= kMaxRegions) return Errc::kNoResources;
    slot = std::uint32_t(regions_.size());
    regions_.push_back(Region{.tag = std::uint8_t(tag_seed_ + regions_.size())});
  }
  Region& r = regions_[slot];
  r.addr = addr;
  r.length = length;
  r.access = access;
  r.host = static_cast<std::uint8_t*>(host);
  r.tag = std::uint8_t(r.tag + 1);  // a re-registered slot never reuses its last key
  r.live = true;
  const std::uint32_t key = (slot + 1) << 8 | r.tag;
  *out = MrKeys{key, key};
  return Errc::kOk;
}

Errc MemoryTable::dereg(std::uint32_t key) {
  const std::uint32_t slot = (key >> 8) - 1;
  if (slot >= regions_.size()) return Errc::kNotFound;
  Region& r = regions_[slot];
  if (!r.live || r.tag != std::uint8_t(key)) return Errc::kNotFound;
  r.live = false;
  free_.push_back(slot);
  return Errc::kOk;
}

MemCheck MemoryTable::check(std::uint32_t key, std::uint64_t addr, std::uint64_t length,
                            std::uint32_t need, std::uint8_t** host) const {
  const std::uint32_t slot = (key >> 8) - 1;
  if (slot >= regions_.size()) return MemCheck::kBadKey;
  const Region& r = regions_[slot];
  if (!r.live || r.tag != std::uint8_t(key)) return MemCheck::kBadKey;
  if (addr < r.addr || length > r.length || addr - r.addr > r.length - length)
    return MemCheck::kOutOfRange;
  if ((r.access & need) != need) return MemCheck::kAccessDenied;
  *host = r.host ? r.host + (addr - r.addr) : nullptr;
  return MemCheck::kOk;
}

std::uint64_t SgList::total() const {
  std::uint64_t n = 0;
  for (std::uint8_t i = 0; i < count; ++i) n += sg[i].length;
  return n;
}

MemCheck SgList::check(const MemoryTable& mem, std::uint32_t need) const {
  for (std::uint8_t i = 0; i < count; ++i) {
    if (sg[i].length == 0) continue;
    std::uint8_t* host = nullptr;
    const MemCheck c = mem.check(sg[i].lkey, sg[i].addr, sg[i].length, need, &host);
    if (c != MemCheck::kOk) return c;
  }
  return MemCheck::kOk;
}

namespace {

// Calls fn(host, sge_offset_of_chunk, chunk_length, span_offset) for each SGE chunk.
template <typename Fn>
void for_each_chunk(const MemoryTable& mem, SgList list, std::uint64_t offset, std::size_t len,
                    Fn fn) {
  std::size_t done = 0;
  for (std::uint8_t i = 0; i < list.count && done < len; ++i) {
    const Sge& s = list.sg[i];
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const std::size_t n = std::min<std::uint64_t>(s.length - offset, len - done);
    std::uint8_t* host = nullptr;
    if (mem.check(s.lkey, s.addr + offset, n, 0, &host) == MemCheck::kOk && host) fn(host, n, done);
    done += n;
    offset = 0;
  }
}

}  // namespace

void gather(const MemoryTable& mem, SgList list, std::uint64_t offset,
            std::span<std::uint8_t> out) {
  for_each_chunk(mem, list, offset, out.size(),
                 [&](std::uint8_t* host, std::size_t n, std::size_t at) {
                   std::memcpy(out.data() + at, host, n);
                 });
}

void scatter(const MemoryTable& mem, SgList list, std::uint64_t offset,
             std::span<const std::uint8_t> in) {
  for_each_chunk(mem, list, offset, in.size(),
                 [&](std::uint8_t* host, std::size_t n, std::size_t at) {
                   std::memcpy(host, in.data() + at, n);
                 });
}

}  // namespace mroce::baseline
