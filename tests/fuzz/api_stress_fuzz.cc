// libFuzzer target: the API stress run (tests/harness/api_stress.h) with the input bytes
// making every choice. A broken invariant prints itself and aborts.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "harness/api_stress.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mroce::testing::ByteChoices choices({data, size});
  const auto report = mroce::testing::run_api_stress(choices);
  if (!report.error.empty()) {
    std::fprintf(stderr, "api_stress: %s\n", report.error.c_str());
    std::abort();
  }
  return 0;
}
