// The two roles of mroce-perf.
#pragma once

#include "options.h"

namespace mroce::perf {

int run_client(const Options& options);
int run_server(const Options& options);

}  // namespace mroce::perf
