// The transport's counters of one opened device, for readers outside the program:
// mroce-stat (through StatsServer) and a sysfs hw_counters view.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mroce/mroce.h"

namespace mroce::verbs {

struct NamedCounter {
  std::string name;
  std::uint64_t value = 0;
};

// The device's totals, one name per counter as in a hw_counters directory: the
// transport's packets and bytes, drops by reason (drop_<reason>), and the datapath's
// datagrams and system calls. Names are stable; new ones are only ever added.
std::vector<NamedCounter> device_counters(const Device& d);

// Who publishes: what mroce-stat shows beside the numbers.
struct StatsIdentity {
  int pid = 0;
  std::string device;  // ibv device name
  int slot = 0;        // port slot, see qpn.h
  std::uint16_t port = 0;
  std::string address;  // primary address
};

// What a reader asks for, one word on a line: "counters" (device totals), "connections"
// (each connection with its paths), or "all" (both; also for anything else).
std::string stats_json(const Device& d, const StatsIdentity& id, std::string_view query);

}  // namespace mroce::verbs
