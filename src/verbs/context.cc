// Opening and closing a device: one mroce::Device (sockets, engine, progress thread) per
// ibv_context, listening on its own slot's port.
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "verbs/diagnostics.h"
#include "verbs/objects.h"
#include "verbs/ops.h"
#include "verbs/port_slot.h"

namespace mroce::verbs {
namespace {

DeviceOptions device_options(const Settings& s, const DeviceEntry& entry) {
  DeviceOptions o = s.device;
  o.addresses = entry.addresses;
  return o;
}

// The layout inline functions of verbs.h expect: verbs_get_ctx() needs abi_compat set to
// the extended marker and sz covering every op up to the ibv_context.
void fill_tables(Context* c) {
  c->vctx.sz = sizeof(verbs_context);
  c->vctx.query_port = query_port;
  c->vctx.query_device_ex = query_device_ex;
  c->vctx.create_qp_ex = create_qp_ex;
  c->vctx.create_cq_ex = create_cq_ex;
  c->vctx.create_srq_ex = create_srq_ex;
  c->vctx.open_xrcd = open_xrcd;
  ibv_context& ctx = c->vctx.context;
  ctx.device = &c->entry->ibv;
  ctx.ops.poll_cq = poll_cq;
  ctx.ops.req_notify_cq = req_notify_cq;
  ctx.ops.post_send = post_send;
  ctx.ops.post_recv = post_recv;
  ctx.cmd_fd = -1;
  ctx.num_comp_vectors = 1;
  ctx.abi_compat = reinterpret_cast<void*>(UINTPTR_MAX);
  pthread_mutex_init(&ctx.mutex, nullptr);
}

}  // namespace
}  // namespace mroce::verbs

using namespace mroce::verbs;

extern "C" {

ibv_context* ibv_open_device(ibv_device* device) {
  std::string error;
  const Settings* settings = process_settings(&error);
  if (!settings) {
    report("%s", error.c_str());
    errno = EINVAL;
    return nullptr;
  }
  DeviceEntry* entry = entry_of(device);
  int slot = 0;
  auto dev =
      open_on_free_slot(device_options(*settings, *entry), settings->base_port, &slot, &error);
  if (!dev) {
    report("cannot open %s: %s", device->name, error.c_str());
    errno = ENODEV;
    return nullptr;
  }
  // The async fd never fires: queue pair errors are reported in completions.
  const int async_fd = eventfd(0, EFD_CLOEXEC);
  if (async_fd < 0) return nullptr;
  auto* c = new Context{};
  c->entry = entry;
  c->settings = settings;
  c->device = std::move(dev);
  c->slot = slot;
  fill_tables(c);
  c->vctx.context.async_fd = async_fd;
  debug("opened %s on %s port %u (slot %d)", device->name, entry->addresses.front().c_str(),
        c->device->endpoint().port, slot);
  return &c->vctx.context;
}

int ibv_close_device(ibv_context* context) {
  Context* c = context_of(context);
  if (const int left = c->children.load()) {
    // As rdma-core, closing succeeds; objects the program forgot keep the device (and this
    // record) alive until exit, so a late destroy call still finds them.
    debug("%s closed with %d objects still alive: kept until exit", context->device->name, left);
    return 0;
  }
  c->reaper.drain();
  close(context->async_fd);
  pthread_mutex_destroy(&context->mutex);
  delete c;
  return 0;
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  (void)event;
  // Nothing is ever signalled; a blocking caller waits as on a healthy device.
  std::uint64_t value = 0;
  if (read(context->async_fd, &value, sizeof value) != sizeof value) return -1;
  errno = EIO;
  return -1;
}

void ibv_ack_async_event(ibv_async_event* event) {
  (void)event;
}

}  // extern "C"
