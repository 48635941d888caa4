// Registered memory regions and the key, bounds and rights checks that guard every
// placement. A region may have no backing bytes (host == nullptr) when the driver
// moves no payload; the checks are the same.
#pragma once

#include <cstdint>
#include <vector>

#include "core/random.h"
#include "core/types.h"

namespace mroce {

struct Region {
  std::uint64_t addr = 0;
  std::uint64_t length = 0;
  std::uint32_t access = 0;
  std::uint32_t key = 0;
  std::uint8_t* host = nullptr;
};

enum class AccessCheck : std::uint8_t { kOk, kBadKey, kOutOfRange, kDenied };

class MemoryTable {
 public:
  explicit MemoryTable(std::uint64_t seed) : random_(seed) {}

  Errc add(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host, MrKeys* out);
  Errc remove(std::uint32_t key);

  // Checks [addr, addr + length) against the region named by key for `right`
  // (an access:: bit, or 0 for local read).
  AccessCheck check(std::uint32_t key, std::uint64_t addr, std::uint64_t length,
                    std::uint32_t right, const Region** out) const;

  // Copies `length` bytes starting `offset` bytes into the buffer an SGE list describes,
  // out of it (gather) or into it (scatter, which needs local write rights). False when
  // an SGE's key, bounds or rights fail.
  bool gather(const Sge* sg, int count, std::uint64_t offset, std::uint8_t* dst,
              std::uint32_t length) const;
  bool scatter(const Sge* sg, int count, std::uint64_t offset, const std::uint8_t* src,
               std::uint32_t length) const;
  // The host bytes of [offset, offset + length) of the buffer an SGE list describes
  // when they lie in one SGE of registered memory with host bytes; null otherwise (the
  // caller gathers instead).
  const std::uint8_t* contiguous(const Sge* sg, int count, std::uint64_t offset,
                                 std::uint32_t length) const;
  // Whether every SGE names registered memory with the right (0: local read).
  bool sges_valid(const Sge* sg, int count, std::uint32_t right) const;

  // Host bytes of addr inside region r, or null when the region has none.
  static std::uint8_t* host_of(const Region& r, std::uint64_t addr) {
    return r.host ? r.host + (addr - r.addr) : nullptr;
  }

 private:
  std::vector<Region> regions_;  // indexed by key >> 8; key 0 never valid
  std::vector<std::uint32_t> free_;
  Random random_;
};

}  // namespace mroce
