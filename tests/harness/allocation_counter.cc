#include "harness/allocation_counter.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace {
bool g_counting = false;
std::uint64_t g_allocations = 0;
}  // namespace

namespace mroce::testing {

void count_allocations(bool on) {
  g_counting = on;
}
std::uint64_t allocations() {
  return g_allocations;
}

}  // namespace mroce::testing

void* operator new(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
// Over-aligned types (the engine's cache-line aligned entries) come through these.
void* operator new(std::size_t n, std::align_val_t al) {
  if (g_counting) ++g_allocations;
  const auto a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (std::max<std::size_t>(n, 1) + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) {
  return operator new(n, al);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
