// What a device says about itself: device and port attributes, GIDs, P_Keys.
// The values steer unmodified programs: vendor ids 0/0 keep perftest on plain
// ibv_create_qp + ibv_post_send, an active Ethernet port makes them use GID index 0.
#include <arpa/inet.h>
#include <endian.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "verbs/diagnostics.h"
#include "verbs/interfaces.h"
#include "verbs/objects.h"
#include "verbs/ops.h"
#include "verbs/qpn.h"

namespace mroce::verbs {
namespace {

constexpr int kQueueDepthMax = 1 << 16;  // the engine's send/receive queue limit
constexpr int kRdAtomMax = 16;

ibv_mtu mtu_enum(unsigned bytes) {
  if (bytes >= 4096) return IBV_MTU_4096;
  if (bytes >= 2048) return IBV_MTU_2048;
  if (bytes >= 1024) return IBV_MTU_1024;
  if (bytes >= 512) return IBV_MTU_512;
  return IBV_MTU_256;
}

// InfiniBand's (width, lane speed) pair closest below the line rate, for display.
void link_speed(std::uint64_t bps, std::uint8_t* width, std::uint8_t* speed) {
  *width = bps > 100'000'000'000ull ? 2 : 1;  // 4X above 100 Gbit/s, else 1X
  const std::uint64_t lane = *width == 2 ? bps / 4 : bps;
  struct Step {
    std::uint64_t bps;
    std::uint8_t code;
  };
  static constexpr Step kSteps[] = {{100'000'000'000ull, 128}, {50'000'000'000ull, 64},
                                    {25'000'000'000ull, 32},   {14'000'000'000ull, 16},
                                    {10'000'000'000ull, 4},    {5'000'000'000ull, 2}};
  *speed = 1;
  for (const auto& s : kSteps) {
    if (lane >= s.bps) {
      *speed = s.code;
      break;
    }
  }
}

void fill_device_attr(const Context& c, ibv_device_attr* a) {
  std::memset(a, 0, sizeof *a);
  std::snprintf(a->fw_ver, sizeof a->fw_ver, "OpenMetaRoCE");
  a->node_guid = c.entry->guid;
  a->sys_image_guid = c.entry->guid;
  a->max_mr_size = ~0ull;
  a->page_size_cap = ~0xfffull;
  a->vendor_id = 0;
  a->vendor_part_id = 0;
  a->max_qp = kMaxStream;
  a->max_qp_wr = kQueueDepthMax;
  a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
  a->max_sge = kMaxSge;
  a->max_sge_rd = kMaxSge;
  a->max_cq = 1 << 16;
  a->max_cqe = 1 << 20;
  a->max_mr = 1 << 24;
  a->max_pd = 1 << 24;
  a->max_qp_rd_atom = kRdAtomMax;
  a->max_res_rd_atom = kRdAtomMax * kMaxStream;
  a->max_qp_init_rd_atom = kRdAtomMax;
  a->atomic_cap = IBV_ATOMIC_HCA;
  a->max_srq = 1 << 16;
  a->max_srq_wr = kQueueDepthMax;
  a->max_srq_sge = kMaxSge;
  a->max_pkeys = 1;
  a->max_ah = 1 << 24;
  a->local_ca_ack_delay = 16;
  a->phys_port_cnt = 1;
}

void fill_port_attr(const Context& c, ibv_port_attr* p) {
  std::memset(p, 0, sizeof *p);
  p->state = IBV_PORT_ACTIVE;
  p->max_mtu = IBV_MTU_4096;
  p->active_mtu = mtu_enum(c.device->options().mtu);
  p->gid_tbl_len = static_cast<int>(c.entry->planes.size());
  p->max_msg_sz = 1u << 31;
  p->pkey_tbl_len = 1;
  p->max_vl_num = 1;
  p->phys_state = 5;  // LinkUp
  p->link_layer = IBV_LINK_LAYER_ETHERNET;
  link_speed(c.device->options().line_rate_bps, &p->active_width, &p->active_speed);
}

bool valid_gid(const Context& c, std::uint32_t port, std::uint32_t index) {
  return port == 1 && index < c.entry->planes.size();
}

void fill_gid_entry(const Context& c, std::uint32_t index, ibv_gid_entry* e) {
  std::memset(e, 0, sizeof *e);
  const Address& a = c.entry->planes[index];
  std::memcpy(e->gid.raw, a.bytes.data(), sizeof e->gid.raw);
  e->gid_index = index;
  e->port_num = 1;
  e->gid_type = IBV_GID_TYPE_ROCE_V2;
  e->ndev_ifindex = interface_index(a);
}

}  // namespace

int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr, size_t attr_len) {
  if (port_num != 1) return EINVAL;
  ibv_port_attr full;
  fill_port_attr(*context_of(context), &full);
  std::memset(attr, 0, attr_len);
  std::memcpy(attr, &full, std::min(attr_len, sizeof full));
  return 0;
}

int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
  if (input && input->comp_mask) return EINVAL;
  ibv_device_attr_ex full{};
  fill_device_attr(*context_of(context), &full.orig_attr);
  full.max_dm_size = 0;
  full.phys_port_cnt_ex = full.orig_attr.phys_port_cnt;
  // Completion timestamps are CLOCK_MONOTONIC nanoseconds (extended.cc): a 1 GHz clock.
  full.completion_timestamp_mask = ~0ull;
  full.hca_core_clock = 1'000'000;  // kHz
  std::memset(attr, 0, attr_size);
  std::memcpy(attr, &full, std::min(attr_size, sizeof full));
  return 0;
}

}  // namespace mroce::verbs

using namespace mroce::verbs;

// The exported names are macros in verbs.h (inline wrappers); these are the symbols.
#undef ibv_query_port

extern "C" {

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  fill_device_attr(*context_of(context), attr);
  return 0;
}

// The pre-1.2 symbol: callers that bypass the inline wrapper get the fields an old
// ibv_port_attr had (everything before port_cap_flags2).
int ibv_query_port(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* attr) {
  if (port_num != 1) return EINVAL;
  ibv_port_attr full;
  fill_port_attr(*context_of(context), &full);
  std::memcpy(attr, &full, offsetof(ibv_port_attr, port_cap_flags2));
  return 0;
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  const Context& c = *context_of(context);
  if (index < 0 || !valid_gid(c, port_num, static_cast<std::uint32_t>(index))) {
    errno = EINVAL;
    return -1;
  }
  std::memcpy(gid->raw, c.entry->planes[index].bytes.data(), sizeof gid->raw);
  return 0;
}

int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
  const Context& c = *context_of(context);
  if (flags || !valid_gid(c, port_num, gid_index)) return EINVAL;
  ibv_gid_entry full;
  fill_gid_entry(c, gid_index, &full);
  std::memcpy(entry, &full, std::min(entry_size, sizeof full));
  return 0;
}

ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries,
                             uint32_t flags, size_t entry_size) {
  const Context& c = *context_of(context);
  // As rdma-core: the buffer must hold the whole table.
  if (flags || entry_size < sizeof(ibv_gid_entry) || max_entries < c.entry->planes.size()) {
    return -EINVAL;
  }
  const std::size_t n = c.entry->planes.size();
  auto* out = reinterpret_cast<char*>(entries);
  for (std::size_t i = 0; i < n; ++i) {
    fill_gid_entry(c, static_cast<std::uint32_t>(i),
                   reinterpret_cast<ibv_gid_entry*>(out + i * entry_size));
  }
  return static_cast<ssize_t>(n);
}

// rdma-core's private call (driver.h): every GID here is RoCE v2 (1).
int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index, int* type) {
  if (!valid_gid(*context_of(context), port_num, index)) return EINVAL;
  *type = 1;
  return 0;
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  (void)context;
  if (port_num != 1 || index != 0) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htons(0xffff);  // the default partition, full membership
  return 0;
}

int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  (void)context;
  if (port_num != 1 || (ntohs(pkey) & 0x7fff) != 0x7fff) return -1;
  return 0;
}

}  // extern "C"
