#include "verbs/port_slot.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "verbs/qpn.h"

namespace mroce::verbs {
namespace {

// Binds a throw-away socket (without SO_REUSEADDR/PORT, so any holder conflicts).
bool bind_fails_in_use(const std::string& address, std::uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof *v4;
  } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof *v6;
  } else {
    return false;
  }
  const int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool in_use = bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno == EADDRINUSE;
  close(fd);
  return in_use;
}

}  // namespace

bool port_in_use(const std::vector<std::string>& addresses, std::uint16_t port) {
  for (const auto& a : addresses) {
    if (bind_fails_in_use(a, port)) return true;
  }
  return false;
}

std::unique_ptr<Device> open_on_free_slot(DeviceOptions options, std::uint16_t base, int* slot,
                                          std::string* error) {
  const auto& addresses = options.addresses;
  for (int s = 0; s < kMaxSlots; ++s) {
    const std::uint16_t port = slot_port(base, s);
    if (port == 0) break;
    if (port_in_use(addresses, port)) continue;
    options.port = port;
    std::string why;
    if (auto device = Device::open(options, &why)) {
      *slot = s;
      return device;
    }
    // Another process may have taken the port between the check and the open.
    if (!port_in_use(addresses, port)) {
      *error = why;
      return nullptr;
    }
  }
  *error = "no free UDP port from " + std::to_string(base) + " upward (" +
           std::to_string(kMaxSlots) + " slots, see MROCE_PORT)";
  return nullptr;
}

}  // namespace mroce::verbs
