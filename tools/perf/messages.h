// The side channel's messages (docs/STACK.md, "mroce-perf's side channel"), parsed from
// a line and checked, types and ranges, before anything uses them: what a peer sends can
// end the session with one line saying why, never the process.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "options.h"

namespace mroce::perf {

// A line (one message) is at most this long; a longer one ends the session unread.
inline constexpr std::size_t kMaxLine = 4 << 20;
// Objects and arrays nest at most this deep (the server's report is the deepest, 4).
inline constexpr int kMaxNesting = 16;

// What one end tells the other about itself: its device's endpoint, queue pair numbers,
// and where its buffer is.
struct PeerInfo {
  std::string addr;
  std::uint16_t port = 0;
  std::vector<std::uint32_t> qpns;
  std::uint64_t buffer = 0;
  std::uint32_t rkey = 0;
  std::uint32_t slots = 0;
};

enum class ClientOp : std::uint8_t { kHello, kConnected, kCheck, kDone };

// A message from the client; fields beyond `op` are set for the op that has them.
struct ClientMessage {
  ClientOp op = ClientOp::kDone;
  TestSpec spec;                             // hello
  PeerInfo info;                             // hello
  std::uint32_t size = 0;                    // check: the size just measured
  std::vector<std::uint64_t> first, counts;  // check: one per queue pair
};

// One line of JSON, an object, nested at most kMaxNesting deep.
bool parse_line(std::string_view line, nlohmann::json* out, std::string* error);

// Client to server. `spec` is the session's (checks a `check` against it; null before
// the hello).
bool parse_client_message(const nlohmann::json& j, const TestSpec* spec, ClientMessage* out,
                          std::string* error);
bool parse_spec(const nlohmann::json& j, TestSpec* out, std::string* error);
bool parse_peer_info(const nlohmann::json& j, PeerInfo* out, std::string* error);

// Server to client: the reply to hello ({"ok": true, "info": ...} or {"ok": false,
// "error": "..."}; false with the server's error line for the latter).
bool parse_welcome(const nlohmann::json& j, PeerInfo* out, std::string* error);
bool parse_ready(const nlohmann::json& j, std::string* error);
// The reply to check: {"mismatches": N}.
bool parse_check_reply(const nlohmann::json& j, std::uint64_t* mismatches, std::string* error);
// The reply to done: {"report": {...}, "mismatches": N}.
bool parse_done_reply(const nlohmann::json& j, nlohmann::json* report, std::uint64_t* mismatches,
                      std::string* error);

nlohmann::json to_json(const PeerInfo& info);

}  // namespace mroce::perf
