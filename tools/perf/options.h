// mroce-perf's settings: what the command line says for either role, and the part of it
// the client hands to the server over the side channel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mroce/mroce.h"

namespace mroce::perf {

enum class Test : std::uint8_t { kWrite, kSend, kRead };

// Limits of a test, the same whether the command line or the side channel says it.
inline constexpr std::uint64_t kMaxBuffer = 1ull << 30;     // bytes each side registers
inline constexpr std::uint32_t kMaxSweepExponent = 23;      // -a: 2 B .. 8 MiB, as perftest
inline constexpr std::uint32_t kMaxMessageSize = 1u << 26;  // --size
inline constexpr std::uint64_t kMaxReadLatencySize = 1u << 24;
inline constexpr std::uint64_t kMaxIterations = 1ull << 40;
inline constexpr std::uint32_t kMaxDepth = 8192;  // requests outstanding per queue pair
inline constexpr std::uint32_t kMaxQps = 64;
inline constexpr double kMinDuration = 0.01;  // seconds per size, when not 0
inline constexpr double kMaxDuration = 86400;
const char* to_string(Test t);

// What both ends must agree on; the client decides and tells the server.
struct TestSpec {
  Test test = Test::kWrite;
  bool latency = false;
  std::vector<std::uint32_t> sizes{65536};
  std::uint64_t iterations = 5000;
  double duration = 0;        // seconds; 0: run `iterations`
  std::uint32_t depth = 128;  // work requests outstanding per queue pair
  std::uint32_t qps = 1;
  std::uint32_t mtu = 4096;
  std::uint16_t paths = 16;
  TransportKind transport = TransportKind::kMetaRoce;
  bool check = false;  // verify every byte
  std::uint64_t seed = 1;
  // Client only, not sent to the server: bandwidth tests ask for a completion on one
  // request in cq_mod (the rest complete silently, as perftest's --cq-mod) and post
  // requests in lists of up to cq_mod; 0: min(16, depth).
  std::uint32_t cq_mod = 0;
  std::uint32_t moderation() const {
    const std::uint32_t m = cq_mod ? cq_mod : 16;
    return m < depth ? m : depth;
  }

  std::uint64_t max_size() const;
  // Bytes each side registers: one slot of max_size() per outstanding request.
  std::uint64_t buffer_bytes() const;

  nlohmann::json to_json() const;  // parse_spec (messages.h) reads it back
};

struct Options {
  bool server = false;
  std::string host;  // client: the server's address (side channel and plane 0)
  std::uint16_t tcp_port = 18515;
  DeviceOptions device;  // this end's device
  bool once = false;     // server: one session, then exit
  double interval = 0;   // client: seconds between goodput samples printed; 0: none
  std::string json_path;
  TestSpec spec;
};

// Parses argv. On a bad argument prints one line to stderr and returns false with
// *exit_code = 2; for --help prints the help and returns false with *exit_code = 0.
bool parse_options(int argc, char** argv, Options* out, int* exit_code);

}  // namespace mroce::perf
