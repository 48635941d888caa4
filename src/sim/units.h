// Quantities as users write them: "32MiB", "4KB", "1.5us", "100Gbps". Each parser
// returns nullopt for text it cannot read exactly (no silent truncation).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/time.h"

namespace mroce::sim {

// Bytes: an integer with an optional suffix B, KB/MB/GB (powers of 1000) or
// KiB/MiB/GiB (powers of 1024).
std::optional<std::uint64_t> parse_bytes(std::string_view text);
// Time: a number with a unit ps, ns, us, ms or s. Rounded to the picosecond.
std::optional<SimTime> parse_time(std::string_view text);
// Rate: a number with a unit bps, Kbps, Mbps, Gbps or Tbps (a bare number is Gbit/s).
std::optional<std::uint64_t> parse_rate(std::string_view text);

std::string format_bytes(std::uint64_t bytes);
std::string format_time(SimTime t);

}  // namespace mroce::sim
