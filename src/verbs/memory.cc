// Protection domains and memory regions. One device has one key space, so a PD is only a
// handle; a region's keys come from the engine, which checks every access against them.
#include <cerrno>

#include "verbs/diagnostics.h"
#include "verbs/objects.h"

namespace mroce::verbs {
namespace {

// Rights the engine enforces (ibv_access_flags' low four bits).
constexpr unsigned kEnforced = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
// Accepted and without effect here: memory is plain process memory, always present.
constexpr unsigned kHarmless =
    IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE;

bool valid_access(unsigned access) {
  if (access & ~(kEnforced | kHarmless)) return false;
  // As Verbs requires: remote writes and atomics need local write.
  const bool needs_local = access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  return !needs_local || (access & IBV_ACCESS_LOCAL_WRITE);
}

ibv_mr* register_region(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  if (!valid_access(access)) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = context_of(pd->context);
  auto region = c->device->reg_mr_iova(addr, length, iova, access & kEnforced);
  if (!region) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* m = new Mr{};
  m->ibv.context = pd->context;
  m->ibv.pd = pd;
  m->ibv.addr = addr;
  m->ibv.length = length;
  m->ibv.handle = c->next_handle++;
  m->ibv.lkey = region->lkey();
  m->ibv.rkey = region->rkey();
  m->region = std::move(region);
  ++c->children;
  return &m->ibv;
}

}  // namespace
}  // namespace mroce::verbs

using namespace mroce::verbs;

// ibv_reg_mr and ibv_reg_mr_iova are macros in verbs.h; these are the symbols.
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  Context* c = context_of(context);
  auto* p = new Pd{};
  p->ibv.context = context;
  p->ibv.handle = c->next_handle++;
  ++c->children;
  return &p->ibv;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  --context_of(pd->context)->children;
  delete pd_of(pd);
  return 0;
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return register_region(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                         static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return register_region(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
  return register_region(pd, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  --context_of(mr->context)->children;
  delete mr_of(mr);
  return 0;
}

int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  (void)mr, (void)flags, (void)pd, (void)addr, (void)length, (void)access;
  unsupported("ibv_rereg_mr", "re-registration is not supported; deregister and register");
  return IBV_REREG_MR_ERR_INPUT;
}

ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                          int access) {
  (void)pd, (void)offset, (void)length, (void)iova, (void)fd, (void)access;
  unsupported("ibv_reg_dmabuf_mr", "dma-buf memory is not supported");
  return nullptr;
}

}  // extern "C"
