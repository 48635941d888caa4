// mroce-perf: perftest-style bandwidth and latency over the OpenMetaRoCE UDP stack.
#include "options.h"
#include "perf.h"

int main(int argc, char** argv) {
  mroce::perf::Options options;
  int exit_code = 0;
  if (!mroce::perf::parse_options(argc, argv, &options, &exit_code)) return exit_code;
  return options.server ? mroce::perf::run_server(options) : mroce::perf::run_client(options);
}
