#include "control.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string_view>

namespace mroce_target {
namespace {

using nlohmann::json;

template <typename T>
T need(const json& req, const char* key) {
  auto it = req.find(key);
  if (it == req.end()) throw Error(std::string("missing field '") + key + "'");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw Error(std::string("field '") + key + "' has the wrong type");
  }
}

template <typename T>
T opt(const json& req, const char* key, T fallback) {
  return req.contains(key) ? need<T>(req, key) : fallback;
}

ibv_wr_opcode opcode_of(const std::string& name) {
  if (name == "send") return IBV_WR_SEND;
  if (name == "send_imm") return IBV_WR_SEND_WITH_IMM;
  if (name == "write") return IBV_WR_RDMA_WRITE;
  if (name == "write_imm") return IBV_WR_RDMA_WRITE_WITH_IMM;
  if (name == "read") return IBV_WR_RDMA_READ;
  if (name == "fetch_add") return IBV_WR_ATOMIC_FETCH_AND_ADD;
  if (name == "cmp_swap") return IBV_WR_ATOMIC_CMP_AND_SWP;
  throw Error("unknown opcode '" + name + "'");
}

const char* wc_opcode_name(int op) {
  switch (op) {
    case IBV_WC_SEND:
      return "send";
    case IBV_WC_RDMA_WRITE:
      return "write";
    case IBV_WC_RDMA_READ:
      return "read";
    case IBV_WC_COMP_SWAP:
      return "cmp_swap";
    case IBV_WC_FETCH_ADD:
      return "fetch_add";
    case IBV_WC_RECV:
      return "recv";
    case IBV_WC_RECV_RDMA_WITH_IMM:
      return "recv_rdma_imm";
    default:
      return "other";
  }
}

std::string to_hex(const std::uint8_t* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (std::size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[p[i] >> 4];
    s[2 * i + 1] = digits[p[i] & 15];
  }
  return s;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  throw Error("bad hex digit");
}

void check_range(const Region& r, std::uint64_t offset, std::uint64_t length) {
  if (offset > r.bytes.size() || length > r.bytes.size() - offset) {
    throw Error("range outside region '" + r.name + "'");
  }
}

json region_json(const Region& r) {
  json access = json::array();
  if (r.access & IBV_ACCESS_REMOTE_WRITE) access.push_back("remote_write");
  if (r.access & IBV_ACCESS_REMOTE_READ) access.push_back("remote_read");
  if (r.access & IBV_ACCESS_REMOTE_ATOMIC) access.push_back("remote_atomic");
  return {{"addr", reinterpret_cast<std::uintptr_t>(r.bytes.data())},
          {"length", r.bytes.size()},
          {"rkey", r.mr->rkey},
          {"lkey", r.mr->lkey},
          {"seed", r.seed},
          {"access", access}};
}

json dispatch(VerbsTarget& t, const json& req) {
  const std::string op = need<std::string>(req, "op");
  if (op == "info") {
    json regions = json::object();
    for (const auto& r : t.regions()) regions[r->name] = region_json(*r);
    return {{"device", t.device_name()},
            {"gids", t.gids()},
            {"mtu", t.port_mtu()},
            {"pattern", "byte i = (i * 7 + seed) % 251"},
            {"regions", regions}};
  }
  if (op == "create_qp") {
    return {{"qpn", t.create_qp(opt<std::uint32_t>(req, "depth", 256))}};
  }
  if (op == "connect") {
    t.connect_qp(need<std::uint32_t>(req, "qpn"), need<std::string>(req, "gid"),
                 need<std::uint32_t>(req, "remote_qpn"), opt<std::uint32_t>(req, "psn", 0),
                 opt<std::uint32_t>(req, "rnr_retry", 7));
    return json::object();
  }
  if (op == "destroy_qp") {
    t.destroy_qp(need<std::uint32_t>(req, "qpn"));
    return json::object();
  }
  if (op == "query_qp") return {{"state", t.qp_state(need<std::uint32_t>(req, "qpn"))}};
  if (op == "post_recv") {
    t.post_recv(need<std::uint32_t>(req, "qpn"), opt<std::uint64_t>(req, "wr_id", 0),
                t.region(opt<std::string>(req, "region", "local")),
                opt<std::uint64_t>(req, "offset", 0), need<std::uint32_t>(req, "length"));
    return json::object();
  }
  if (op == "post_send") {
    VerbsTarget::SendRequest s;
    s.wr_id = opt<std::uint64_t>(req, "wr_id", 0);
    s.opcode = opcode_of(need<std::string>(req, "opcode"));
    s.local = &t.region(opt<std::string>(req, "region", "local"));
    s.offset = opt<std::uint64_t>(req, "offset", 0);
    s.length = need<std::uint32_t>(req, "length");
    s.remote_addr = opt<std::uint64_t>(req, "remote_addr", 0);
    s.rkey = opt<std::uint32_t>(req, "rkey", 0);
    s.imm = opt<std::uint32_t>(req, "imm", 0);
    s.compare_add = opt<std::uint64_t>(req, "compare_add", 0);
    s.swap = opt<std::uint64_t>(req, "swap", 0);
    s.signaled = opt<bool>(req, "signaled", true);
    s.fence = opt<bool>(req, "fence", false);
    t.post_send(need<std::uint32_t>(req, "qpn"), s);
    return json::object();
  }
  if (op == "poll") {
    json wcs = json::array();
    for (const Completion& c :
         t.poll(opt<std::uint32_t>(req, "count", 1), opt<int>(req, "timeout_ms", 1000))) {
      json w = {{"wr_id", c.wr_id},
                {"status", c.status},
                {"status_str", ibv_wc_status_str(static_cast<ibv_wc_status>(c.status))},
                {"opcode", wc_opcode_name(c.opcode)},
                {"byte_len", c.byte_len},
                {"qpn", c.qp_num}};
      if (c.with_imm) w["imm"] = c.imm;
      wcs.push_back(w);
    }
    return {{"wc", wcs}};
  }
  if (op == "read_mem") {
    Region& r = t.region(need<std::string>(req, "region"));
    auto offset = opt<std::uint64_t>(req, "offset", 0);
    auto length = need<std::uint64_t>(req, "length");
    check_range(r, offset, length);
    return {{"hex", to_hex(r.bytes.data() + offset, length)}};
  }
  if (op == "write_mem") {
    Region& r = t.region(need<std::string>(req, "region"));
    auto offset = opt<std::uint64_t>(req, "offset", 0);
    auto hex = need<std::string>(req, "hex");
    if (hex.size() % 2 != 0) throw Error("hex has an odd number of digits");
    check_range(r, offset, hex.size() / 2);
    for (std::size_t i = 0; i < hex.size() / 2; ++i) {
      r.bytes[offset + i] =
          static_cast<std::uint8_t>(hex_digit(hex[2 * i]) << 4 | hex_digit(hex[2 * i + 1]));
    }
    return json::object();
  }
  if (op == "reset_mem") {
    t.region(need<std::string>(req, "region")).fill_pattern();
    return json::object();
  }
  if (op == "counters") {
    std::string where;
    auto values = t.counters(where);
    if (values.empty()) {
      return {{"available", false}, {"reason", "the device has no " + where}};
    }
    return {{"available", true}, {"source", where}, {"counters", values}};
  }
  throw Error("unknown op '" + op + "'");
}

}  // namespace

std::string Control::handle(const std::string& line) {
  json reply;
  try {
    json req = json::parse(line);
    if (!req.is_object()) throw Error("a request is a JSON object");
    reply = dispatch(target_, req);
    reply["ok"] = true;
    if (req.contains("id")) reply["id"] = req["id"];
  } catch (const json::parse_error&) {
    reply = {{"ok", false}, {"error", "not a JSON object"}};
  } catch (const std::exception& e) {
    reply = {{"ok", false}, {"error", e.what()}};
  }
  return reply.dump();
}

}  // namespace mroce_target
