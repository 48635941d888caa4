// libFuzzer target: mroce-perf's side-channel parser (tools/perf/messages.h) on arbitrary
// lines, as either end reads them. Nothing may throw or crash; what parses is in range.
#include <cstdint>
#include <string_view>

#include "messages.h"

using namespace mroce::perf;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  nlohmann::json j;
  std::string error;
  if (!parse_line({reinterpret_cast<const char*>(data), size}, &j, &error)) return 0;
  ClientMessage hello;
  const bool first = parse_client_message(j, nullptr, &hello, &error);
  if (first &&
      (hello.spec.qps == 0 || hello.spec.qps > kMaxQps || hello.spec.sizes.empty() ||
       hello.spec.buffer_bytes() > kMaxBuffer || hello.info.qpns.size() != hello.spec.qps)) {
    __builtin_trap();
  }
  // The same line later in a session: against a spec of its own if it had one.
  TestSpec spec;
  spec.qps = 2;
  spec.sizes = {4096, 65536};
  ClientMessage later;
  if (parse_client_message(j, first ? &hello.spec : &spec, &later, &error) &&
      later.op == ClientOp::kCheck && later.counts.size() != (first ? hello.spec : spec).qps) {
    __builtin_trap();
  }
  PeerInfo info;
  std::uint64_t n = 0;
  nlohmann::json report;
  parse_welcome(j, &info, &error);
  parse_ready(j, &error);
  parse_check_reply(j, &n, &error);
  parse_done_reply(j, &report, &n, &error);
  return 0;
}
