// mroce-perf's side-channel messages: each is checked, types and ranges, before use, and a
// bad one is one line (tools/perf/messages.h).
#include <gtest/gtest.h>

#include "messages.h"

namespace mroce::perf {
namespace {

using nlohmann::json;

json hello() {
  TestSpec spec;
  spec.sizes = {4096, 65536};
  spec.qps = 2;
  PeerInfo info;
  info.addr = "127.0.0.1";
  info.port = 5000;
  info.qpns = {7, 8};
  info.slots = 128;
  return {{"op", "hello"}, {"spec", spec.to_json()}, {"info", to_json(info)}};
}

// parse_client_message refuses `j` with a line that starts with `start`.
void refused(const json& j, const TestSpec* spec, const std::string& start) {
  ClientMessage m;
  std::string error;
  EXPECT_FALSE(parse_client_message(j, spec, &m, &error)) << j.dump();
  EXPECT_EQ(error.rfind(start, 0), 0u) << "got: " << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(PerfMessages, AHelloReadsBackWhatWasSent) {
  ClientMessage m;
  std::string error;
  ASSERT_TRUE(parse_client_message(hello(), nullptr, &m, &error)) << error;
  EXPECT_EQ(m.op, ClientOp::kHello);
  EXPECT_EQ(m.spec.sizes, (std::vector<std::uint32_t>{4096, 65536}));
  EXPECT_EQ(m.spec.qps, 2u);
  EXPECT_EQ(m.info.qpns, (std::vector<std::uint32_t>{7, 8}));
  EXPECT_EQ(m.info.port, 5000);
}

TEST(PerfMessages, AHelloOutOfRangeOrOfWrongTypesIsRefused) {
  const auto with = [](const char* key, json v) {
    json j = hello();
    j["spec"][key] = std::move(v);
    return j;
  };
  refused(with("mtu", 70000), nullptr, "mtu=70000: must be 256..16384");  // was cut to 4464
  refused(with("mtu", 4097), nullptr, "mtu=4097: must be a multiple of 4");
  refused(with("paths", -1), nullptr, "paths=-1: must be 1..256");
  refused(with("qps", "2"), nullptr, "qps=\"2\": must be 1..64");
  refused(with("depth", 1.5), nullptr, "depth=1.5: must be 1..8192");
  refused(with("sizes", json::array()), nullptr, "sizes=[]");
  refused(with("sizes", 4096), nullptr, "sizes=4096: must be an array");
  refused(with("duration", 0.001), nullptr, "duration=0.001: must be");
  refused(with("test", "atomics"), nullptr, "test=\"atomics\": must be one of write, send, read");
  refused(with("transport", 1), nullptr, "transport=1: must be a string");
  refused(with("check", "yes"), nullptr, "check=\"yes\": must be true or false");
  refused(with("iterations", json(std::uint64_t{1} << 50)), nullptr, "iterations=");
  json j = hello();
  j["spec"].erase("seed");
  refused(j, nullptr, "'seed' is missing");
  j = hello();
  j["info"]["qpns"] = {1};
  refused(j, nullptr, "info has 1 queue pairs, spec 2");
  j = hello();
  j["info"]["addr"] = "nowhere";
  refused(j, nullptr, "addr=\"nowhere\": must be an IPv4 or IPv6 address");
  j = hello();
  j["spec"] = {1, 2, 3};
  refused(j, nullptr, "spec=[1,2,3]: must be an object");
  refused(json{{"op", 5}}, nullptr, "op=5: must be a string");
  refused(json{{"op", "fly"}}, nullptr, "op=\"fly\": must be one of hello");
  refused(json::array({1, 2, 3}), nullptr, "message is not a JSON object");
}

TEST(PerfMessages, ACheckIsCheckedAgainstTheSessionsSpec) {
  ClientMessage m;
  std::string error;
  ASSERT_TRUE(parse_client_message(hello(), nullptr, &m, &error));
  const TestSpec spec = m.spec;
  const json good = {{"op", "check"}, {"size", 4096}, {"first", {0, 0}}, {"counts", {5, 5}}};
  ASSERT_TRUE(parse_client_message(good, &spec, &m, &error)) << error;
  EXPECT_EQ(m.counts, (std::vector<std::uint64_t>{5, 5}));
  refused(good, nullptr, "'check' before hello");
  refused(hello(), &spec, "a second hello");
  json j = good;
  j["size"] = "big";
  refused(j, &spec, "size=\"big\": must be 1..67108864");
  j = good;
  j["size"] = 8192;  // not a size of this test: the server would read past its slots
  refused(j, &spec, "size=8192: not a size of this test");
  j = good;
  j["first"] = 1;
  refused(j, &spec, "first=1: must be an array of at most 2 integers");
  j = good;
  j["counts"] = {1, "x"};
  refused(j, &spec, "counts[]=\"x\": must be");
  j = good;
  j["counts"] = {1};
  refused(j, &spec, "first and counts must have one entry per queue pair (2)");
}

TEST(PerfMessages, LinesAreObjectsWithinTheLimits) {
  json j;
  std::string error;
  EXPECT_TRUE(parse_line(R"({"op": "done"})", &j, &error)) << error;
  EXPECT_FALSE(parse_line("[1,2,3]", &j, &error));
  EXPECT_EQ(error, "a message that is not a JSON object");
  EXPECT_FALSE(parse_line("{\"op\": ", &j, &error));
  EXPECT_EQ(error, "a line that is not JSON");
  EXPECT_FALSE(parse_line(std::string(100000, '['), &j, &error));
  EXPECT_EQ(error, "a message nested more than 16 deep");
  EXPECT_TRUE(parse_line(R"({"a": "[[[[[[[[[[[[[[[[[[[[[[[[\"["})", &j, &error)) << error;
  EXPECT_FALSE(parse_line(std::string(kMaxLine + 1, ' '), &j, &error));
  EXPECT_EQ(error, "a line longer than 4 MiB");
}

TEST(PerfMessages, TheServersRepliesAreChecked) {
  PeerInfo info;
  std::string error;
  EXPECT_FALSE(parse_welcome({{"ok", "yes"}}, &info, &error));
  EXPECT_EQ(error, "ok=\"yes\": must be true or false");
  EXPECT_FALSE(parse_welcome({{"ok", false}, {"error", 5}}, &info, &error));
  EXPECT_EQ(error, "error=5: must be a string");
  EXPECT_FALSE(parse_welcome({{"ok", false}, {"error", "no device"}}, &info, &error));
  EXPECT_EQ(error, "server: no device");
  EXPECT_FALSE(parse_welcome({{"ok", true}, {"info", {{"addr", 1}}}}, &info, &error));
  EXPECT_EQ(error, "addr=1: must be a string");
  std::uint64_t n = 0;
  EXPECT_FALSE(parse_check_reply({{"mismatches", "many"}}, &n, &error));
  EXPECT_EQ(error.rfind("mismatches=\"many\": must be 0..", 0), 0u) << error;
  EXPECT_FALSE(parse_check_reply({{"mismatches", -1}}, &n, &error));
  EXPECT_TRUE(parse_check_reply({{"mismatches", 3}}, &n, &error));
  EXPECT_EQ(n, 3u);
  json report;
  EXPECT_FALSE(parse_done_reply({{"report", 5}, {"mismatches", 0}}, &report, &n, &error));
  EXPECT_EQ(error, "report=5: must be an object");
  EXPECT_FALSE(parse_ready({{"op", "steady"}}, &error));
  EXPECT_FALSE(parse_ready({{"error", "x"}}, &error));
}

}  // namespace
}  // namespace mroce::perf
