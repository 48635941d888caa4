// Which Verbs device carries an IP address: the one with a GID equal to it (IPv4-mapped
// for IPv4), found through the public Verbs calls. Devices are opened on first use and
// stay open until exit, shared by every id, as librdmacm shares its contexts.
#pragma once

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include <cstdint>
#include <vector>

namespace mroce::rdmacm {

struct DeviceMatch {
  ibv_context* verbs = nullptr;
  std::uint8_t gid_index = 0;
  ibv_gid gid{};
  ibv_mtu mtu = IBV_MTU_1024;
};

// The device and GID for a local address. A loopback or wildcard address (no device
// carries it) falls back to the first device's first GID, as the kernel's rdma_cm binds
// loopback to any device. False if there is none.
bool device_for(const sockaddr* addr, DeviceMatch* out);

// The address as a GID (IPv4-mapped for IPv4).
ibv_gid gid_of(const sockaddr* addr);

// Every device, opened (for rdma_get_devices).
std::vector<ibv_context*> all_devices();

}  // namespace mroce::rdmacm
