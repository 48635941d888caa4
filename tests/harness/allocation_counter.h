// Counts heap allocations for the no-allocation tests: a test binary that links
// mroce_allocation_counter has every global operator new replaced by one that counts
// while counting is on.
#pragma once

#include <cstdint>

namespace mroce::testing {

void count_allocations(bool on);
std::uint64_t allocations();

}  // namespace mroce::testing
