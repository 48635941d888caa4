#include "sim/scenario.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <toml++/toml.h>

#include "sim/addressing.h"
#include "sim/errors.h"
#include "sim/units.h"

namespace mroce::sim {

const char* to_string(WorkloadKind k) {
  switch (k) {
    case WorkloadKind::kPermutation:
      return "permutation";
    case WorkloadKind::kIncast:
      return "incast";
    case WorkloadKind::kAllToAll:
      return "all_to_all";
    case WorkloadKind::kRingAllReduce:
      return "ring_allreduce";
    case WorkloadKind::kKvCache:
      return "kv_cache";
  }
  return "?";
}

const char* to_string(FailureTarget t) {
  switch (t) {
    case FailureTarget::kPlane:
      return "plane";
    case FailureTarget::kSwitch:
      return "switch";
    case FailureTarget::kLink:
      return "link";
    case FailureTarget::kHostLink:
      return "host_link";
  }
  return "?";
}

namespace {

std::string join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// The scalar keys of a table as Params; nested tables are allowed only where named.
Params scalars(const toml::table& t, const std::string& prefix,
               std::initializer_list<const char*> nested = {}) {
  Params p(prefix);
  for (auto&& [k, v] : t) {
    const std::string key(k.str());
    if (v.is_table() || v.is_array_of_tables()) {
      bool allowed = false;
      for (const char* n : nested) allowed |= key == n;
      if (!allowed) throw ConfigError("unknown key '" + join(prefix, key) + "'");
      continue;
    }
    if (auto b = v.as_boolean()) {
      p.set(key, b->get());
    } else if (auto i = v.as_integer()) {
      p.set(key, i->get());
    } else if (auto d = v.as_floating_point()) {
      p.set(key, d->get());
    } else if (auto s = v.as_string()) {
      p.set(key, s->get());
    } else {
      throw ConfigError(join(prefix, key) + ": arrays and dates are not supported here");
    }
  }
  return p;
}

const toml::table* subtable(const toml::table& t, const char* key, const std::string& prefix) {
  const toml::node* n = t.get(key);
  if (!n) return nullptr;
  if (!n->is_table()) throw ConfigError(join(prefix, key) + ": expected a table");
  return n->as_table();
}

// A key that may hold one table or an array of them.
std::vector<const toml::table*> tables(const toml::table& t, const char* key) {
  std::vector<const toml::table*> out;
  const toml::node* n = t.get(key);
  if (!n) return out;
  if (n->is_table()) {
    out.push_back(n->as_table());
  } else if (n->is_array_of_tables()) {
    for (auto&& e : *n->as_array()) out.push_back(e.as_table());
  } else {
    throw ConfigError(std::string(key) + ": expected a table or an array of tables");
  }
  return out;
}

WrOpcode parse_op(Params& p, const char* def = "write") {
  std::string op = p.get_choice("op", def, {"write", "write_imm", "send", "read"});
  if (op == "write_imm") return WrOpcode::kRdmaWriteWithImm;
  if (op == "send") return WrOpcode::kSend;
  if (op == "read") return WrOpcode::kRdmaRead;
  return WrOpcode::kRdmaWrite;
}

void read_topology(const toml::table* t, Scenario& s) {
  Params p = t ? scalars(*t, "topology") : Params("topology");
  TopologySpec& spec = s.network.topology;
  std::string kind = p.get_choice("kind", "fat_tree", {"fat_tree", "leaf_spine"});
  spec.kind = kind == "fat_tree" ? TopologyKind::kFatTree : TopologyKind::kLeafSpine;
  spec.hosts = static_cast<std::uint32_t>(p.get_uint("hosts", 0, 0, kMaxHosts));
  spec.planes = static_cast<std::uint32_t>(p.get_uint("planes", 1, 1, 8));
  spec.oversubscription = static_cast<std::uint32_t>(p.get_uint("oversubscription", 1, 1, 64));
  spec.k = static_cast<std::uint32_t>(p.get_uint("k", 8, 2, 128));
  spec.hosts_per_leaf = static_cast<std::uint32_t>(p.get_uint("hosts_per_leaf", 16, 1, 1024));
  spec.spines = static_cast<std::uint32_t>(p.get_uint("spines", 0, 0, 1024));
  spec.links_per_spine = static_cast<std::uint32_t>(p.get_uint("links_per_spine", 1, 1, 64));
  const std::uint64_t rate = p.get_rate("link_rate", 100'000'000'000);
  spec.host_rate_bps = p.get_rate("host_link_rate", rate);
  spec.fabric_rate_bps = p.get_rate("fabric_link_rate", rate);
  const SimTime delay = p.get_time("link_delay", kUs);
  spec.host_delay = p.get_time("host_link_delay", delay);
  spec.fabric_delay = p.get_time("fabric_link_delay", delay);
  spec.data_centers = static_cast<std::uint32_t>(p.get_uint("data_centers", 1, 1, 2));
  spec.long_haul_links = static_cast<std::uint32_t>(p.get_uint("long_haul_links", 1, 1, 64));
  spec.long_haul_rate_bps = p.get_rate("long_haul_rate", 400'000'000'000);
  spec.long_haul_delay = p.get_time("long_haul_delay", kMs);
  p.reject_unused();
}

void read_queue(const toml::table* t, Scenario& s) {
  Params p = t ? scalars(*t, "queue") : Params("queue");
  s.queue_bdp = p.get_double("bdp", 1.0, 0.01, 1000);
  s.queue_bytes = p.get_bytes("bytes", 0);
  s.long_haul_queue_bdp = p.get_double("long_haul_bdp", 1.0, 0.01, 1000);
  s.long_haul_queue_bytes = p.get_bytes("long_haul_bytes", 0);
  s.network.queue.ecn = p.get_bool("ecn", true);
  s.ecn_min_bytes = p.get_bytes("ecn_min", 0);
  s.ecn_max_bytes = p.get_bytes("ecn_max", 0);
  s.ecn_min_fraction = p.get_double("ecn_min_fraction", 0.2, 0, 1);
  s.ecn_max_fraction = p.get_double("ecn_max_fraction", 0.8, 0, 1);
  s.network.queue.ecn_max_prob = p.get_double("ecn_max_prob", 1.0, 0, 1);
  s.network.queue.ecn_at_dequeue =
      p.get_choice("ecn_at", "enqueue", {"enqueue", "dequeue"}) == "dequeue";
  s.network.switches.shared_buffer_bytes = p.get_bytes("shared_buffer", 0);
  s.network.nic_queue_packets = static_cast<std::uint32_t>(p.get_uint("nic_packets", 2, 1, 4096));
  s.network.steer_planes = p.get_bool("steer_planes", true);
  p.reject_unused();
  if (s.ecn_min_bytes > s.ecn_max_bytes && s.ecn_max_bytes != 0) {
    throw ConfigError("queue.ecn_min must not exceed queue.ecn_max");
  }
  if (s.ecn_min_fraction > s.ecn_max_fraction) {
    throw ConfigError("queue.ecn_min_fraction must not exceed queue.ecn_max_fraction");
  }
}

void read_pfc(const toml::table* t, Scenario& s) {
  Params p = t ? scalars(*t, "pfc") : Params("pfc");
  std::string mode = p.get_choice("mode", "auto", {"auto", "on", "off"});
  s.pfc = mode == "on" ? PfcMode::kOn : mode == "off" ? PfcMode::kOff : PfcMode::kAuto;
  s.pfc_xoff_bytes = p.get_bytes("xoff", 0);
  s.pfc_xon_bytes = p.get_bytes("xon", 0);
  p.reject_unused();
  if (s.pfc_xoff_bytes && s.pfc_xon_bytes > s.pfc_xoff_bytes) {
    throw ConfigError("pfc.xon must not exceed pfc.xoff");
  }
}

void read_loss(const toml::table* t, Scenario& s) {
  Params p = t ? scalars(*t, "loss") : Params("loss");
  s.network.loss_rate = p.get_double("rate", 0, 0, 1);
  std::string scope = p.get_choice("scope", "fabric", {"fabric", "host", "all"});
  s.network.loss_scope = scope == "fabric" ? LossScope::kFabric
                         : scope == "host" ? LossScope::kHost
                                           : LossScope::kAll;
  p.reject_unused();
}

void read_output(const toml::table* t, Scenario& s) {
  Params p = t ? scalars(*t, "output") : Params("output");
  s.output.sample_interval = p.get_time("sample_interval", 10 * kUs);
  if (s.output.sample_interval < kNs) throw ConfigError("output.sample_interval must be >= 1ns");
  s.output.trace_host = static_cast<std::uint32_t>(p.get_uint("trace_host", 0, 0, kMaxHosts));
  s.output.trace_connections =
      static_cast<std::uint32_t>(p.get_uint("trace_connections", 2, 0, 1024));
  p.reject_unused();
}

// scalars() rejects nested tables unless allowed; the transport table allows any.
Params transport_scalars(const toml::table& t) {
  Params p("transport");
  for (auto&& [k, v] : t) {
    if (v.is_table()) continue;
    if (auto str = v.as_string()) {
      p.set(std::string(k.str()), str->get());
    } else {
      throw ConfigError("transport." + std::string(k.str()) +
                        ": expected a transport table or name");
    }
  }
  return p;
}

WorkloadSpec read_workload(const toml::table& t, std::size_t index) {
  const std::string prefix = "workload." + std::to_string(index);
  Params p = scalars(t, prefix);
  WorkloadSpec w;
  std::string kind = p.get_choice(
      "kind", "", {"permutation", "incast", "all_to_all", "ring_allreduce", "kv_cache"});
  w.kind = kind == "permutation"  ? WorkloadKind::kPermutation
           : kind == "incast"     ? WorkloadKind::kIncast
           : kind == "all_to_all" ? WorkloadKind::kAllToAll
           : kind == "kv_cache"   ? WorkloadKind::kKvCache
                                  : WorkloadKind::kRingAllReduce;
  w.name = p.get_string("name", kind);
  w.hosts = static_cast<std::uint32_t>(p.get_uint("hosts", 0, 0, kMaxHosts));
  w.bytes = p.get_bytes("bytes", 1 << 20);
  if (w.bytes == 0 || w.bytes > 0xffffffffull) {
    throw ConfigError(p.name("bytes") + ": messages must be 1 byte to 4GiB-1");
  }
  w.op = parse_op(p, w.kind == WorkloadKind::kKvCache ? "read" : "write");
  w.start = p.get_time("start", 0);
  w.jitter = p.get_time("jitter", 0);
  w.messages = static_cast<std::uint32_t>(p.get_uint("messages", 1, 1, 1'000'000));
  w.senders = static_cast<std::uint32_t>(p.get_uint("senders", 0, 0, kMaxHosts));
  w.peers = static_cast<std::uint32_t>(p.get_uint("peers", 0, 0, kMaxHosts));
  w.receiver = static_cast<std::uint32_t>(p.get_uint("receiver", 0, 0, kMaxHosts));
  w.iterations = static_cast<std::uint32_t>(p.get_uint("iterations", 1, 1, 100000));
  w.per_plane = p.get_bool("per_plane", false);
  w.readers = static_cast<std::uint32_t>(p.get_uint("readers", 0, 0, kMaxHosts));
  w.fanout = static_cast<std::uint32_t>(p.get_uint("fanout", 0, 0, kMaxHosts));
  const std::string sizes = p.get_string("sizes", "");
  p.reject_unused();
  for (std::size_t at = 0; !sizes.empty() && at <= sizes.size();) {
    const std::size_t comma = std::min(sizes.find(',', at), sizes.size());
    std::string item = sizes.substr(at, comma - at);
    item.erase(0, item.find_first_not_of(' '));
    item.erase(item.find_last_not_of(' ') + 1);
    const auto b = parse_bytes(item);
    if (!b || *b == 0 || *b > 0xffffffffull) {
      throw ConfigError(p.name("sizes") + ": '" + item +
                        "' is no message size (a list like \"16KiB, 256KiB, 2MiB\")");
    }
    w.sizes.push_back(*b);
    at = comma + 1;
  }
  if (!w.sizes.empty() && w.kind != WorkloadKind::kKvCache) {
    throw ConfigError(p.name("sizes") + ": only kv_cache draws sizes from a list");
  }
  if (w.kind == WorkloadKind::kKvCache && (w.readers == 0 || w.fanout == 0)) {
    throw ConfigError(prefix + ": kv_cache needs readers and fanout");
  }
  if (w.kind == WorkloadKind::kRingAllReduce && w.op != WrOpcode::kSend &&
      w.op != WrOpcode::kRdmaWriteWithImm) {
    throw ConfigError(prefix +
                      ".op: ring_allreduce needs \"send\" or \"write_imm\" (steps wait "
                      "for a receive completion)");
  }
  return w;
}

FailureSpec read_failure(const toml::table& t, std::size_t index) {
  const std::string prefix = "failure." + std::to_string(index);
  Params p = scalars(t, prefix);
  FailureSpec f;
  std::string target = p.get_choice("target", "", {"plane", "switch", "link", "host_link"});
  f.target = target == "plane"    ? FailureTarget::kPlane
             : target == "switch" ? FailureTarget::kSwitch
             : target == "link"   ? FailureTarget::kLink
                                  : FailureTarget::kHostLink;
  f.plane = static_cast<std::uint32_t>(p.get_uint("plane", 0, 0, 7));
  f.node = p.get_string("node", "");
  f.peer = p.get_string("peer", "");
  f.host = static_cast<std::uint32_t>(p.get_uint("host", 0, 0, kMaxHosts));
  f.visible = p.get_choice("mode", "silent", {"silent", "visible"}) == "visible";
  f.at = p.get_time("at", 0);
  f.recover = p.get_time("recover", kSimNever);
  f.reroute_delay = p.get_time("reroute_delay", 0);
  p.reject_unused();
  if (f.recover != kSimNever && f.recover <= f.at) {
    throw ConfigError(prefix + ".recover must be later than " + prefix + ".at");
  }
  if (f.target == FailureTarget::kSwitch && f.node.empty()) {
    throw ConfigError(prefix + ": target \"switch\" needs node = \"<switch name>\"");
  }
  if (f.target == FailureTarget::kLink && (f.node.empty() || f.peer.empty())) {
    throw ConfigError(prefix + ": target \"link\" needs node and peer (switch names)");
  }
  return f;
}

// Applies "a.b.c=value" to the document before it is read.
void apply_override(toml::table& doc, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError("--set " + assignment + ": expected key=value");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) {
    if (part.empty()) throw ConfigError("--set " + assignment + ": empty key segment");
    parts.push_back(part);
  }
  toml::node* cur = &doc;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    const std::string& seg = parts[i];
    if (auto tbl = cur->as_table()) {
      toml::node* next = tbl->get(seg);
      if (!next) {
        tbl->insert(seg, toml::table{});
        next = tbl->get(seg);
      }
      cur = next;
    } else if (auto arr = cur->as_array()) {
      char* end = nullptr;
      unsigned long idx = std::strtoul(seg.c_str(), &end, 10);
      if (*end != '\0' || idx >= arr->size()) {
        throw ConfigError("--set " + assignment + ": no element '" + seg + "'");
      }
      cur = arr->get(idx);
    } else {
      throw ConfigError("--set " + assignment + ": '" + seg + "' is not a table");
    }
  }
  auto tbl = cur->as_table();
  if (!tbl) throw ConfigError("--set " + assignment + ": parent of the key is not a table");
  toml::table value;
  try {
    value = toml::parse("v = " + text);
  } catch (const toml::parse_error&) {
    value.insert("v", text);  // a bare word: take it as a string
  }
  value.get("v")->visit([&](auto&& v) { tbl->insert_or_assign(parts.back(), v); });
}

}  // namespace

Scenario parse_scenario(std::string_view text, const std::string& source,
                        const std::vector<std::string>& overrides) {
  toml::table doc;
  try {
    doc = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw ConfigError(source + ":" + std::to_string(where.line) + ":" +
                      std::to_string(where.column) + ": " + std::string(e.description()));
  }
  for (const auto& o : overrides) apply_override(doc, o);

  Scenario s;
  Params top = scalars(
      doc, "", {"topology", "queue", "pfc", "loss", "output", "transport", "workload", "failure"});
  s.name = top.get_string("name", source);
  s.description = top.get_string("description", "");
  s.seed = top.get_uint("seed", 1);
  s.stop = top.get_time("stop", kSimNever);
  s.partitions = static_cast<std::uint32_t>(top.get_uint("partitions", 1, 1, 64));
  s.mtu = static_cast<std::uint32_t>(top.get_uint("mtu", 4096, 256, 9000));
  top.reject_unused();

  read_topology(subtable(doc, "topology", ""), s);
  read_queue(subtable(doc, "queue", ""), s);
  read_pfc(subtable(doc, "pfc", ""), s);
  read_loss(subtable(doc, "loss", ""), s);
  read_output(subtable(doc, "output", ""), s);
  if (const toml::table* t = subtable(doc, "transport", "")) {
    Params p = transport_scalars(*t);
    s.transport = p.get_string("name", s.transport);
    p.reject_unused();
    for (auto&& [k, v] : *t) {
      if (!v.is_table()) continue;
      const std::string name(k.str());
      s.transport_settings.emplace(name, scalars(*v.as_table(), "transport." + name));
    }
  }
  auto workloads = tables(doc, "workload");
  for (std::size_t i = 0; i < workloads.size(); ++i) {
    s.workloads.push_back(read_workload(*workloads[i], i));
  }
  auto failures = tables(doc, "failure");
  for (std::size_t i = 0; i < failures.size(); ++i) {
    s.failures.push_back(read_failure(*failures[i], i));
  }
  s.network.seed = s.seed;
  if (s.workloads.empty() && s.stop == kSimNever) {
    throw ConfigError(source + ": no [[workload]] and no stop time: nothing would end the run");
  }
  return s;
}

const NamedScenario* find_builtin(const std::string& name) {
  for (const auto& s : builtin_scenarios()) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides) {
  if (const NamedScenario* b = find_builtin(name_or_path)) {
    return parse_scenario(b->toml, b->name, overrides);
  }
  std::ifstream in(name_or_path, std::ios::binary);
  if (!in) {
    throw ConfigError("'" + name_or_path +
                      "' is neither a named scenario (see 'mroce-sim list') nor a readable file");
  }
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_scenario(buf.str(), name_or_path, overrides);
}

}  // namespace mroce::sim
