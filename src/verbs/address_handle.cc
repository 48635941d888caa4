// Address handles for UD queue pairs: ibv_create_ah and its helpers for answering a
// received datagram (ibv_init_ah_from_wc reads the GRH the datagram arrived behind).
#include "verbs/address_handle.h"

#include <cerrno>
#include <cstring>

#include "verbs/diagnostics.h"

namespace mroce::verbs {

Address peer_address(const Context& c, const ibv_ah_attr& ah) {
  Address a;
  if (ah.is_global) std::memcpy(a.bytes.data(), ah.grh.dgid.raw, 16);
  if (!a.is_zero()) return a;
  if (c.settings->peer) return *c.settings->peer;
  return c.entry->planes.front();
}

namespace {

// The local plane a datagram to `to` leaves from: the address vector's GID index when it
// names a plane of the same address family, else the first such plane.
std::uint8_t plane_for(const Context& c, const ibv_ah_attr& ah, const Address& to) {
  const auto& planes = c.entry->planes;
  if (ah.is_global && ah.grh.sgid_index < planes.size() &&
      planes[ah.grh.sgid_index].is_ipv4() == to.is_ipv4()) {
    return ah.grh.sgid_index;
  }
  for (std::size_t i = 0; i < planes.size(); ++i) {
    if (planes[i].is_ipv4() == to.is_ipv4()) return static_cast<std::uint8_t>(i);
  }
  return 0;
}

Address mapped_ipv4(const std::uint8_t* four) {
  Address a;
  a.bytes[10] = a.bytes[11] = 0xff;
  std::memcpy(a.bytes.data() + 12, four, 4);
  return a;
}

}  // namespace
}  // namespace mroce::verbs

using namespace mroce;
using namespace mroce::verbs;

extern "C" {

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (!pd || !attr || attr->port_num != 1) {
    errno = EINVAL;
    return nullptr;
  }
  Context* c = context_of(pd->context);
  if (attr->is_global && attr->grh.sgid_index >= c->entry->planes.size()) {
    errno = EINVAL;
    return nullptr;
  }
  auto* a = new Ah{};
  a->ibv.context = pd->context;
  a->ibv.pd = pd;
  a->ibv.handle = c->next_handle++;
  a->addr = peer_address(*c, *attr);
  a->plane = plane_for(*c, *attr, a->addr);
  ++c->children;
  return &a->ibv;
}

int ibv_destroy_ah(ibv_ah* ah) {
  --context_of(ah->context)->children;
  delete ah_of(ah);
  return 0;
}

// As rdma-core for a RoCE port: the GRH gives the sender's GID (from the IPv4 header in
// its last 20 bytes when its first 20 are zero, as written for IPv4 peers) and the local
// GID it was sent to, whose index becomes sgid_index.
int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
  if (!context || !wc || !ah_attr || port_num != 1) return EINVAL;
  *ah_attr = ibv_ah_attr{};
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port_num;
  if (!(wc->wc_flags & IBV_WC_GRH)) return 0;
  if (!grh) return EINVAL;
  const auto* raw = reinterpret_cast<const std::uint8_t*>(grh);
  static constexpr std::uint8_t kZero[20] = {};
  Address from, to;
  if (std::memcmp(raw, kZero, 20) == 0 && (raw[20] >> 4) == 4) {
    from = mapped_ipv4(raw + 32);
    to = mapped_ipv4(raw + 36);
    ah_attr->grh.traffic_class = raw[21];
  } else if ((raw[0] >> 4) == 6) {
    std::memcpy(from.bytes.data(), grh->sgid.raw, 16);
    std::memcpy(to.bytes.data(), grh->dgid.raw, 16);
    ah_attr->grh.traffic_class = static_cast<std::uint8_t>((raw[0] & 0x0f) << 4 | raw[1] >> 4);
  } else {
    return EINVAL;
  }
  const auto& planes = context_of(context)->entry->planes;
  std::uint8_t index = 0;
  for (std::size_t i = 0; i < planes.size(); ++i) {
    if (planes[i] == to) index = static_cast<std::uint8_t>(i);
  }
  ah_attr->is_global = 1;
  std::memcpy(ah_attr->grh.dgid.raw, from.bytes.data(), 16);
  ah_attr->grh.sgid_index = index;
  ah_attr->grh.hop_limit = 0xff;
  return 0;
}

ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  ibv_ah_attr attr;
  if (const int e = ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr)) {
    errno = e;
    return nullptr;
  }
  return ibv_create_ah(pd, &attr);
}

}  // extern "C"
