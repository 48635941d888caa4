#include "verbs/interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>

namespace mroce::verbs {
namespace {

Address address_of(const sockaddr* sa) {
  Address a;
  if (sa->sa_family == AF_INET) {
    a = Address::ipv4(ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr));
  } else if (sa->sa_family == AF_INET6) {
    std::memcpy(a.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
  }
  return a;
}

}  // namespace

std::vector<std::vector<std::string>> interface_devices() {
  std::vector<std::vector<std::string>> others, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {{"127.0.0.1"}};
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr, text,
              sizeof text);
    (i->ifa_flags & IFF_LOOPBACK ? loopback : others).push_back({text});
  }
  freeifaddrs(list);
  others.insert(others.end(), loopback.begin(), loopback.end());
  if (others.empty()) others.push_back({"127.0.0.1"});
  return others;
}

unsigned interface_index(const Address& addr) {
  unsigned index = 0;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return 0;
  for (ifaddrs* i = list; i && index == 0; i = i->ifa_next) {
    if (i->ifa_addr && address_of(i->ifa_addr) == addr && !address_of(i->ifa_addr).is_zero()) {
      index = if_nametoindex(i->ifa_name);
    }
  }
  freeifaddrs(list);
  return index;
}

}  // namespace mroce::verbs
