// Opening and closing a device: one mroce::Device (sockets, engine, progress thread) per
// ibv_context, listening on its own slot's port.
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "verbs/diagnostics.h"
#include "verbs/hw_counters.h"
#include "verbs/objects.h"
#include "verbs/ops.h"
#include "verbs/port_slot.h"
#include "verbs/stats.h"
#include "verbs/stats_server.h"

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
  c->vctx.alloc_dm = alloc_dm;
  ibv_context& ctx = c->vctx.context;
  ctx.device = &c->entry->ibv;
  ctx.ops.poll_cq = poll_cq;
  ctx.ops.req_notify_cq = req_notify_cq;
  ctx.ops.post_send = post_send;
  ctx.ops.post_recv = post_recv;
  ctx.ops.post_srq_recv = post_srq_recv;
  ctx.ops.alloc_mw = alloc_mw;
  ctx.cmd_fd = -1;
  ctx.num_comp_vectors = 1;
  ctx.abi_compat = reinterpret_cast<void*>(UINTPTR_MAX);
  pthread_mutex_init(&ctx.mutex, nullptr);
}

// Publishes the device's counters on <stats_directory()>/<pid>-<slot>.sock. A program
// runs as well without them: a failure is only reported with MROCE_DEBUG.
void publish_stats(Context* c) {
  if (!c->settings->stats) return;
  const std::string dir = stats_directory();
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    debug("no statistics: cannot create %s: %s", dir.c_str(), std::strerror(errno));
    return;
  }
  StatsIdentity id;
  id.pid = getpid();
  id.device = c->entry->ibv.name;
  id.slot = c->slot;
  id.port = c->device->endpoint().port;
  id.address = c->entry->addresses.front();
  const std::string path =
      dir + "/" + std::to_string(id.pid) + "-" + std::to_string(c->slot) + ".sock";
  const Device* device = c->device.get();
  std::string error;
  c->stats = StatsServer::start(
      path, [device, id](std::string_view q) { return stats_json(*device, id, q); }, &error);
  if (!c->stats) debug("no statistics: %s", error.c_str());
}

// Keeps the device's sysfs hw_counters files (made by mroce-run --device-files) current.
void publish_hw_counters(Context* c) {
  if (c->settings->sysfs_dir.empty()) return;
  const std::string dir =
      c->settings->sysfs_dir + "/" + c->entry->ibv.name + "/ports/1/hw_counters";
  const Device* device = c->device.get();
  std::string error;
  c->hw_counters = HwCounterFiles::start(
      dir, [device] { return device_counters(*device); },
      std::chrono::milliseconds(c->settings->hw_counters_ms), &error);
  if (!c->hw_counters) debug("no hw_counters files: %s", error.c_str());
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
  // One count per queued asynchronous event (SRQ limits; queue pair errors are
  // reported in completions).
  const int async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
  if (async_fd < 0) return nullptr;
  auto* c = new Context{};
  c->entry = entry;
  c->settings = settings;
  c->device = std::move(dev);
  c->slot = slot;
  fill_tables(c);
  c->vctx.context.async_fd = async_fd;
  publish_stats(c);
  publish_hw_counters(c);
  c->device->set_event_hook([c](const mroce::Event& e) {
    if (e.kind != mroce::EventKind::kSrqLimitReached) return;
    if (Srq* s = c->async.srq(e.srq)) {
      ibv_async_event ae{};
      ae.element.srq = &s->ibv;
      ae.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
      c->async.push(ae, c->vctx.context.async_fd);
    }
  });
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
  c->device->set_event_hook(nullptr);
  close(context->async_fd);
  pthread_mutex_destroy(&context->mutex);
  delete c;
  return 0;
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  // Blocks (unless the program made the fd non-blocking) until an event is queued.
  std::uint64_t value = 0;
  if (read(context->async_fd, &value, sizeof value) != sizeof value) return -1;
  if (context_of(context)->async.pop(event)) return 0;
  errno = EIO;
  return -1;
}

void ibv_ack_async_event(ibv_async_event* event) {
  (void)event;
}

}  // extern "C"
