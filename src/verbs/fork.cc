// fork() support calls. Registered memory is ordinary process memory here (nothing is
// pinned for a NIC), so a child never corrupts a region: there is nothing to set up.
#include <infiniband/verbs.h>

extern "C" {

int ibv_fork_init(void) {
  return 0;
}

ibv_fork_status ibv_is_fork_initialized(void) {
  return IBV_FORK_UNNEEDED;
}

int ibv_dontfork_range(void* base, size_t size) {
  (void)base, (void)size;
  return 0;
}

int ibv_dofork_range(void* base, size_t size) {
  (void)base, (void)size;
  return 0;
}

}  // extern "C"
