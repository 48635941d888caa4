// Registered memory regions: keys, bounds and access rights, and the copies between a
// region's bytes and packets. A region without host bytes (the simulator) is checked the
// same way; copies to and from it do nothing.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/types.h"

namespace mroce::baseline {

enum class MemCheck : std::uint8_t { kOk, kBadKey, kOutOfRange, kAccessDenied };

class MemoryTable {
 public:
  explicit MemoryTable(std::uint64_t seed)
      : tag_seed_(std::uint8_t(seed * 0x9e3779b97f4a7c15ull >> 56)) {}

  // Key = (slot + 1) << 8 | tag; lkey and rkey are the same key, as on most RoCE NICs.
  Errc reg(std::uint64_t addr, std::uint64_t length, std::uint32_t access, void* host, MrKeys* out);
  Errc dereg(std::uint32_t key);

  // Checks that `key` names a live region holding [addr, addr + length) with every right in
  // `need`. On success *host is the byte at addr, or null when the region has no bytes.
  MemCheck check(std::uint32_t key, std::uint64_t addr, std::uint64_t length, std::uint32_t need,
                 std::uint8_t** host) const;

 private:
  struct Region {
    std::uint64_t addr = 0;
    std::uint64_t length = 0;
    std::uint32_t access = 0;
    std::uint8_t* host = nullptr;
    std::uint8_t tag = 0;
    bool live = false;
  };

  std::uint8_t tag_seed_;
  std::vector<Region> regions_;
  std::vector<std::uint32_t> free_;
};

// A local scatter/gather list; each element is checked against the table when used.
struct SgList {
  const Sge* sg = nullptr;
  std::uint8_t count = 0;

  std::uint64_t total() const;
  // Checks every element for `need`; kOk when all pass.
  MemCheck check(const MemoryTable& mem, std::uint32_t need) const;
};

// Copies len bytes starting `offset` bytes into the list (a region without bytes reads
// as nothing and leaves `out` as it was).
void gather(const MemoryTable& mem, SgList list, std::uint64_t offset, std::span<std::uint8_t> out);
void scatter(const MemoryTable& mem, SgList list, std::uint64_t offset,
             std::span<const std::uint8_t> in);

}  // namespace mroce::baseline
