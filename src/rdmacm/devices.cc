#include "rdmacm/devices.h"

#include <netinet/in.h>

#include <cstring>
#include <mutex>

namespace mroce::rdmacm {
namespace {

struct OpenDevice {
  ibv_context* verbs = nullptr;
  std::vector<ibv_gid> gids;
  ibv_mtu mtu = IBV_MTU_1024;
};

class Devices {
 public:
  // Opens devices in list order until `want` says stop; returns the one it stopped at.
  template <typename Want>
  const OpenDevice* find(Want want) {
    std::lock_guard lock(mutex_);
    for (const auto& d : open_) {
      if (want(d)) return &d;
    }
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (!list) return nullptr;
    const OpenDevice* found = nullptr;
    for (int i = static_cast<int>(open_.size()); i < n && !found; ++i) {
      OpenDevice d;
      if (!open(list[i], &d)) break;
      open_.push_back(d);
      if (want(open_.back())) found = &open_.back();
    }
    ibv_free_device_list(list);
    return found;
  }

 private:
  static bool open(ibv_device* dev, OpenDevice* d) {
    d->verbs = ibv_open_device(dev);
    if (!d->verbs) return false;
    ibv_port_attr port{};
    if (ibv_query_port(d->verbs, 1, &port) == 0) {
      d->mtu = port.active_mtu;
      for (int i = 0; i < port.gid_tbl_len; ++i) {
        ibv_gid g{};
        if (ibv_query_gid(d->verbs, 1, i, &g) != 0) break;
        d->gids.push_back(g);
      }
    }
    return true;
  }

  std::mutex mutex_;
  std::vector<OpenDevice> open_;  // reserved so pointers stay valid
 public:
  Devices() { open_.reserve(64); }
};

Devices& devices() {
  static auto* d = new Devices;  // never freed: contexts live until exit
  return *d;
}

bool is_loopback_or_any(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    const auto v = ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr);
    return v == INADDR_ANY || (v >> 24) == 127;
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr;
  return IN6_IS_ADDR_LOOPBACK(&v6) || IN6_IS_ADDR_UNSPECIFIED(&v6);
}

}  // namespace

ibv_gid gid_of(const sockaddr* a) {
  ibv_gid g{};
  if (a->sa_family == AF_INET) {
    g.raw[10] = g.raw[11] = 0xff;
    std::memcpy(&g.raw[12], &reinterpret_cast<const sockaddr_in*>(a)->sin_addr, 4);
  } else if (a->sa_family == AF_INET6) {
    std::memcpy(g.raw, &reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr, 16);
  }
  return g;
}

bool device_for(const sockaddr* addr, DeviceMatch* out) {
  const ibv_gid want = gid_of(addr);
  int index = -1;
  const OpenDevice* d = devices().find([&](const OpenDevice& dev) {
    for (std::size_t i = 0; i < dev.gids.size(); ++i) {
      if (std::memcmp(dev.gids[i].raw, want.raw, 16) == 0) {
        index = static_cast<int>(i);
        return true;
      }
    }
    return false;
  });
  if (!d && is_loopback_or_any(addr)) {
    d = devices().find([](const OpenDevice& dev) { return !dev.gids.empty(); });
    index = 0;
  }
  if (!d) return false;
  out->verbs = d->verbs;
  out->gid_index = static_cast<std::uint8_t>(index);
  out->gid = d->gids[static_cast<std::size_t>(index)];
  out->mtu = d->mtu;
  return true;
}

std::vector<ibv_context*> all_devices() {
  std::vector<ibv_context*> v;
  devices().find([&](const OpenDevice&) { return false; });
  devices().find([&](const OpenDevice& d) {
    v.push_back(d.verbs);
    return false;
  });
  return v;
}

}  // namespace mroce::rdmacm
