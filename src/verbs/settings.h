// The stand-in library's configuration, read once from the environment. The stack's own
// variables (MROCE_ADDRS, MROCE_PATHS, MROCE_MTU, MROCE_PORT, ...; apply_environment in
// mroce.h) mean the same here; the Verbs layer adds MROCE_DEVICES, MROCE_PEER,
// MROCE_MAX_INLINE, MROCE_POLL_YIELD and MROCE_DEBUG. docs/VERBS.md lists them all.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "mroce/mroce.h"

namespace mroce::verbs {

struct Settings {
  // What every context's device starts from; addresses and port are set per context.
  DeviceOptions device;
  // One entry per Verbs device, each a list of local addresses (its planes). Empty: the
  // devices come from the machine's interfaces.
  std::vector<std::vector<std::string>> devices;
  std::uint16_t base_port = 4793;   // a context listens on base_port + its slot
  std::optional<Address> peer;      // where an all-zero GID points
  std::uint32_t max_inline = 4096;  // inline size offered when a QP asks for less
  bool poll_yield = true;           // an empty ibv_poll_cq yields the CPU once
  bool debug = false;
  bool stats = true;  // publish counters for mroce-stat (docs/VERBS.md, Counters)
  // Where `mroce-run --device-files` made the devices' sysfs entries (MROCE_SYSFS_DIR;
  // empty: none): each context keeps <dir>/<device>/ports/1/hw_counters up to date,
  // every hw_counters_ms (MROCE_HW_COUNTERS_MS).
  std::string sysfs_dir;
  std::uint32_t hw_counters_ms = 20;
};

// Returns the value of a variable, or null when it is unset.
using EnvLookup = std::function<const char*(const char*)>;

// Completes `out` (whose `device` already holds the stack's variables) with the Verbs
// layer's own. On a bad value returns false and sets *error to one line naming it.
bool parse_verbs_settings(const EnvLookup& env, Settings* out, std::string* error);

// The process's settings, parsed on first use. Null (and *error set) if they are invalid.
const Settings* process_settings(std::string* error);

}  // namespace mroce::verbs
