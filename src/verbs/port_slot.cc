#include "verbs/port_slot.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "verbs/qpn.h"

namespace mroce::verbs {
namespace {

// Opens of one slot while its port looks free. Another process looking for its own slot
// binds the port for a moment (bind_fails_in_use): an open that meets that bind fails
// although the port is free when looked at again, and the slot is still the right one.
constexpr int kOpenAttempts = 16;
constexpr auto kOpenRetryPause = std::chrono::microseconds(200);

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
    options.port = port;
    std::string why;
    bool held = false;
    for (int attempt = 0; attempt < kOpenAttempts; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(kOpenRetryPause);
      held = port_in_use(addresses, port);
      if (held) break;  // the next slot
      if (auto device = Device::open(options, &why)) {
        *slot = s;
        return device;
      }
    }
    if (!held) {  // free every time we looked, and never ours: not a race
      *error = why;
      return nullptr;
    }
  }
  *error = "no free UDP port from " + std::to_string(base) + " upward (" +
           std::to_string(kMaxSlots) + " slots, see MROCE_PORT)";
  return nullptr;
}

}  // namespace mroce::verbs
