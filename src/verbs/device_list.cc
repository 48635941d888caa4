// ibv_get_device_list and the calls that describe a device without opening it.
#include <endian.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "verbs/diagnostics.h"
#include "verbs/interfaces.h"
#include "verbs/objects.h"

namespace mroce::verbs {
namespace {

// A locally administered EUI-64 built from the first plane's address: 02:4d:52:00 then
// the IPv4 address (or a fold of the IPv6 one).
__be64 guid_of(const Address& a) {
  std::uint32_t low = 0;
  if (a.is_ipv4()) {
    low = a.ipv4_value();
  } else {
    for (int i = 0; i < 16; i += 4) {
      low ^= std::uint32_t{a.bytes[i]} << 24 | std::uint32_t{a.bytes[i + 1]} << 16 |
             std::uint32_t{a.bytes[i + 2]} << 8 | a.bytes[i + 3];
    }
  }
  return htobe64(0x024d520000000000ull | low);
}

DeviceEntry* make_entry(int index, std::vector<std::string> addresses) {
  auto* e = new DeviceEntry{};
  e->index = index;
  for (const auto& text : addresses) {
    Address a;
    parse_address(text, &a);  // validated by parse_settings, or taken from getifaddrs
    e->planes.push_back(a);
  }
  e->addresses = std::move(addresses);
  e->guid = guid_of(e->planes.front());
  e->ibv.node_type = IBV_NODE_CA;
  e->ibv.transport_type = IBV_TRANSPORT_IB;
  std::snprintf(e->ibv.name, sizeof e->ibv.name, "mroce%d", index);
  std::snprintf(e->ibv.dev_name, sizeof e->ibv.dev_name, "mroce%d", index);
  // Where rdma-core's device would be; mroce-run --device-files makes these.
  std::snprintf(e->ibv.dev_path, sizeof e->ibv.dev_path, "/sys/class/infiniband_verbs/uverbs%d",
                index);
  std::snprintf(e->ibv.ibdev_path, sizeof e->ibv.ibdev_path, "/sys/class/infiniband/mroce%d",
                index);
  return e;
}

// The devices, built on first use and kept until exit. Null (and *error set) on a bad
// configuration.
const std::vector<DeviceEntry*>* device_entries(std::string* error) {
  // Never freed: programs keep ibv_device pointers past ibv_free_device_list.
  static std::once_flag once;
  static std::vector<DeviceEntry*>* entries = nullptr;
  std::call_once(once, [] {
    const Settings* s = process_settings(nullptr);
    if (!s) return;
    auto sets = s->devices.empty() ? interface_devices() : s->devices;
    entries = new std::vector<DeviceEntry*>;
    for (auto& set : sets) {
      entries->push_back(make_entry(static_cast<int>(entries->size()), std::move(set)));
    }
  });
  if (!entries) process_settings(error);
  return entries;
}

}  // namespace

}  // namespace mroce::verbs

using mroce::verbs::entry_of;

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
  if (num_devices) *num_devices = 0;
  std::string error;
  const auto* entries = mroce::verbs::device_entries(&error);
  if (!entries) {
    mroce::verbs::report("%s", error.c_str());
    errno = EINVAL;
    return nullptr;
  }
  // An array of pointers, NULL-terminated, as rdma-core returns it.
  auto** list = static_cast<ibv_device**>(
      std::calloc(entries->size() + 1, sizeof(ibv_device*)));  // NOLINT(bugprone-sizeof-expression)
  if (!list) {
    errno = ENOMEM;
    return nullptr;
  }
  for (std::size_t i = 0; i < entries->size(); ++i) list[i] = &(*entries)[i]->ibv;
  if (num_devices) *num_devices = static_cast<int>(entries->size());
  return list;
}

void ibv_free_device_list(ibv_device** list) {
  std::free(list);
}

const char* ibv_get_device_name(ibv_device* device) {
  return device->name;
}

__be64 ibv_get_device_guid(ibv_device* device) {
  return entry_of(device)->guid;
}

int ibv_get_device_index(ibv_device* device) {
  return entry_of(device)->index;
}

}  // extern "C"
