#include "messages.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/settings.h"

namespace mroce::perf {

namespace {

// The value as the peer wrote it, cut short for an error line.
std::string shown(const nlohmann::json& v) {
  std::string text = v.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// A non-negative integer, however it is stored (parsed text holds them unsigned, values
// built in code signed).
bool as_uint(const nlohmann::json& v, std::uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<std::uint64_t>();
    return true;
  }
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    *out = static_cast<std::uint64_t>(v.get<std::int64_t>());
    return true;
  }
  return false;
}

// Reads the fields of one JSON object; the first bad one sets the error line, in the form
// every setting out of range gets: "mtu=70000: must be 256..16384".
class Fields {
 public:
  Fields(const nlohmann::json& j, const char* what, std::string* error)
      : j_(j), error_(error), ok_(j.is_object()) {
    if (!ok_) *error_ = std::string(what) + " is not a JSON object";
  }
  bool ok() const { return ok_; }

  template <typename T>
  Fields& uint(const char* key, std::uint64_t lo, std::uint64_t hi, T* out) {
    const nlohmann::json* v = field(key);
    if (!v) return *this;
    std::uint64_t n = 0;
    if (!as_uint(*v, &n) || n < lo || n > hi) {
      return fail(out_of_range(key, shown(*v), std::to_string(lo), std::to_string(hi)));
    }
    *out = static_cast<T>(n);
    return *this;
  }
  Fields& number(const char* key, double lo, double hi, double* out) {
    const nlohmann::json* v = field(key);
    if (!v) return *this;
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < lo ||
        v->get<double>() > hi) {
      return fail(out_of_range(key, shown(*v), shown(lo), shown(hi)));
    }
    *out = v->get<double>();
    return *this;
  }
  Fields& boolean(const char* key, bool* out) {
    const nlohmann::json* v = field(key);
    if (!v) return *this;
    if (!v->is_boolean())
      return fail(std::string(key) + "=" + shown(*v) + ": must be true or false");
    *out = v->get<bool>();
    return *this;
  }
  Fields& string(const char* key, std::string* out) {
    const nlohmann::json* v = field(key);
    if (!v) return *this;
    if (!v->is_string()) return fail(std::string(key) + "=" + shown(*v) + ": must be a string");
    *out = v->get<std::string>();
    return *this;
  }
  // An array of at most `max_count` integers, each in lo..hi.
  template <typename T>
  Fields& uints(const char* key, std::size_t max_count, std::uint64_t lo, std::uint64_t hi,
                std::vector<T>* out) {
    const nlohmann::json* v = field(key);
    if (!v) return *this;
    if (!v->is_array() || v->size() > max_count) {
      return fail(std::string(key) + "=" + shown(*v) + ": must be an array of at most " +
                  std::to_string(max_count) + " integers");
    }
    out->clear();
    for (const nlohmann::json& e : *v) {
      std::uint64_t n = 0;
      if (!as_uint(e, &n) || n < lo || n > hi) {
        return fail(out_of_range(std::string(key) + "[]", shown(e), std::to_string(lo),
                                 std::to_string(hi)));
      }
      out->push_back(static_cast<T>(n));
    }
    return *this;
  }
  const nlohmann::json* object(const char* key) {
    const nlohmann::json* v = field(key);
    if (v && !v->is_object()) {
      fail(std::string(key) + "=" + shown(*v) + ": must be an object");
      return nullptr;
    }
    return v;
  }

 private:
  const nlohmann::json* field(const char* key) {
    if (!ok_) return nullptr;
    const auto it = j_.find(key);
    if (it == j_.end()) {
      fail(std::string("'") + key + "' is missing");
      return nullptr;
    }
    return &*it;
  }
  Fields& fail(std::string line) {
    if (ok_) *error_ = std::move(line);
    ok_ = false;
    return *this;
  }

  const nlohmann::json& j_;
  std::string* error_;
  bool ok_;
};

// One of `names` (in enum order).
template <typename E, std::size_t N>
bool choice(const std::string& key, const std::string& value, const char* const (&names)[N], E* out,
            std::string* error) {
  for (std::size_t i = 0; i < N; ++i) {
    if (value == names[i]) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  std::string list;
  for (const char* n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  *error = key + "=\"" + value.substr(0, 40) + "\": must be one of " + list;
  return false;
}

}  // namespace

bool parse_line(std::string_view line, nlohmann::json* out, std::string* error) {
  if (line.size() > kMaxLine) {
    *error = "a line longer than " + std::to_string(kMaxLine >> 20) + " MiB";
    return false;
  }
  // Nesting is counted before parsing: a deep document costs the parser (and the
  // destructor) a frame per level.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : line) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) {
        *error = "a message nested more than " + std::to_string(kMaxNesting) + " deep";
        return false;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  *out = nlohmann::json::parse(line, nullptr, false);
  if (out->is_discarded()) {
    *error = "a line that is not JSON";
    return false;
  }
  if (!out->is_object()) {
    *error = "a message that is not a JSON object";
    return false;
  }
  return true;
}

bool parse_spec(const nlohmann::json& j, TestSpec* out, std::string* error) {
  static const char* const kTests[] = {"write", "send", "read"};
  static const char* const kTransports[] = {"mroce", "roce"};
  const Setting& mss = *find_setting("mss");
  const Setting& paths = *find_setting("paths");
  TestSpec s;
  std::string test, transport;
  Fields f(j, "spec", error);
  f.string("test", &test)
      .boolean("latency", &s.latency)
      .uints("sizes", kMaxSweepExponent, 1, kMaxMessageSize, &s.sizes)
      .uint("iterations", 1, kMaxIterations, &s.iterations)
      .number("duration", 0, kMaxDuration, &s.duration)
      .uint("depth", 1, kMaxDepth, &s.depth)
      .uint("qps", 1, kMaxQps, &s.qps)
      .uint("mtu", std::uint64_t(mss.min), std::uint64_t(mss.max), &s.mtu)
      .uint("paths", std::uint64_t(paths.min), std::uint64_t(paths.max), &s.paths)
      .string("transport", &transport)
      .boolean("check", &s.check)
      .uint("seed", 0, std::numeric_limits<std::uint64_t>::max(), &s.seed);
  if (!f.ok()) return false;
  if (!choice("test", test, kTests, &s.test, error)) return false;
  if (!choice("transport", transport, kTransports, &s.transport, error)) return false;
  if (s.duration != 0 && s.duration < kMinDuration) {
    *error = out_of_range("duration", shown(s.duration), shown(kMinDuration), shown(kMaxDuration));
    return false;
  }
  if (s.mtu % 4 != 0) {
    *error = "mtu=" + std::to_string(s.mtu) + ": must be a multiple of 4";
    return false;
  }
  if (s.sizes.empty()) {
    *error = "sizes=[]: must name at least one size";
    return false;
  }
  if (s.buffer_bytes() > kMaxBuffer) {
    *error = "sizes x depth x qps needs " + std::to_string(s.buffer_bytes() >> 20) +
             " MiB: at most " + std::to_string(kMaxBuffer >> 20) + " MiB";
    return false;
  }
  if (s.test == Test::kRead && s.latency && s.max_size() > kMaxReadLatencySize) {
    *error =
        "READ latency is limited to " + std::to_string(kMaxReadLatencySize >> 20) + " MiB messages";
    return false;
  }
  *out = std::move(s);
  return true;
}

bool parse_peer_info(const nlohmann::json& j, PeerInfo* out, std::string* error) {
  PeerInfo p;
  Fields f(j, "info", error);
  f.string("addr", &p.addr)
      .uint("port", 1, 65535, &p.port)
      .uints("qpns", kMaxQps, 0, std::numeric_limits<std::uint32_t>::max(), &p.qpns)
      .uint("buffer", 0, std::numeric_limits<std::uint64_t>::max(), &p.buffer)
      .uint("rkey", 0, std::numeric_limits<std::uint32_t>::max(), &p.rkey)
      .uint("slots", 1, std::numeric_limits<std::uint32_t>::max(), &p.slots);
  if (!f.ok()) return false;
  Address a;
  if (!parse_address(p.addr, &a)) {
    *error = "addr=" + shown(p.addr) + ": must be an IPv4 or IPv6 address";
    return false;
  }
  *out = std::move(p);
  return true;
}

bool parse_client_message(const nlohmann::json& j, const TestSpec* spec, ClientMessage* out,
                          std::string* error) {
  static const char* const kOps[] = {"hello", "connected", "check", "done"};
  std::string op;
  if (!Fields(j, "message", error).string("op", &op).ok()) return false;
  ClientMessage m;
  if (!choice("op", op, kOps, &m.op, error)) return false;
  if ((m.op == ClientOp::kHello) != (spec == nullptr)) {
    *error = spec ? "a second hello" : "'" + op + "' before hello";
    return false;
  }
  if (m.op == ClientOp::kHello) {
    Fields f(j, "hello", error);
    const nlohmann::json* s = f.object("spec");
    const nlohmann::json* i = f.object("info");
    if (!f.ok()) return false;
    if (!parse_spec(*s, &m.spec, error) || !parse_peer_info(*i, &m.info, error)) return false;
    if (m.info.qpns.size() != m.spec.qps) {
      *error = "info has " + std::to_string(m.info.qpns.size()) + " queue pairs, spec " +
               std::to_string(m.spec.qps);
      return false;
    }
  }
  if (m.op == ClientOp::kCheck) {
    const std::uint64_t big = std::numeric_limits<std::uint64_t>::max();
    if (!Fields(j, "check", error)
             .uint("size", 1, kMaxMessageSize, &m.size)
             .uints("first", spec->qps, 0, big, &m.first)
             .uints("counts", spec->qps, 0, big, &m.counts)
             .ok()) {
      return false;
    }
    if (std::find(spec->sizes.begin(), spec->sizes.end(), m.size) == spec->sizes.end()) {
      *error = "size=" + std::to_string(m.size) + ": not a size of this test";
      return false;
    }
    if (m.first.size() != spec->qps || m.counts.size() != spec->qps) {
      *error =
          "first and counts must have one entry per queue pair (" + std::to_string(spec->qps) + ")";
      return false;
    }
  }
  *out = std::move(m);
  return true;
}

bool parse_welcome(const nlohmann::json& j, PeerInfo* out, std::string* error) {
  bool ok = false;
  Fields f(j, "reply", error);
  if (!f.boolean("ok", &ok).ok()) return false;
  if (!ok) {
    std::string why;
    if (!f.string("error", &why).ok()) return false;
    *error = "server: " + why.substr(0, 500);
    return false;
  }
  const nlohmann::json* info = f.object("info");
  return f.ok() && parse_peer_info(*info, out, error);
}

bool parse_ready(const nlohmann::json& j, std::string* error) {
  std::string op;
  if (!Fields(j, "reply", error).string("op", &op).ok()) return false;
  if (op != "ready") {
    *error = "op=" + shown(op) + ": must be \"ready\"";
    return false;
  }
  return true;
}

bool parse_check_reply(const nlohmann::json& j, std::uint64_t* mismatches, std::string* error) {
  return Fields(j, "reply", error)
      .uint("mismatches", 0, std::numeric_limits<std::uint64_t>::max(), mismatches)
      .ok();
}

bool parse_done_reply(const nlohmann::json& j, nlohmann::json* report, std::uint64_t* mismatches,
                      std::string* error) {
  Fields f(j, "reply", error);
  const nlohmann::json* r = f.object("report");
  f.uint("mismatches", 0, std::numeric_limits<std::uint64_t>::max(), mismatches);
  if (!f.ok()) return false;
  *report = *r;
  return true;
}

nlohmann::json to_json(const PeerInfo& p) {
  return {{"addr", p.addr},     {"port", p.port}, {"qpns", p.qpns},
          {"buffer", p.buffer}, {"rkey", p.rkey}, {"slots", p.slots}};
}

const char* to_string(Test t) {
  switch (t) {
    case Test::kWrite:
      return "write";
    case Test::kSend:
      return "send";
    case Test::kRead:
      return "read";
  }
  return "?";
}

std::uint64_t TestSpec::max_size() const {
  return sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end());
}

std::uint64_t TestSpec::buffer_bytes() const {
  return std::uint64_t{qps} * (latency ? 1 : depth) * std::max<std::uint64_t>(max_size(), 8);
}

nlohmann::json TestSpec::to_json() const {
  return {{"test", to_string(test)},
          {"latency", latency},
          {"sizes", sizes},
          {"iterations", iterations},
          {"duration", duration},
          {"depth", depth},
          {"qps", qps},
          {"mtu", mtu},
          {"paths", paths},
          {"transport", transport == TransportKind::kRoceV2 ? "roce" : "mroce"},
          {"check", check},
          {"seed", seed}};
}

}  // namespace mroce::perf
