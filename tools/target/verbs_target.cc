#include "verbs_target.h"

#include <arpa/inet.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace mroce_target {
namespace {

std::string errno_text(const char* call) {
  return std::string(call) + " failed: " + std::strerror(errno);
}

struct RegionSpec {
  const char* name;
  std::size_t bytes;
  int access;
  std::uint8_t seed;
};

// The regions every target registers (docs/COMPLIANCE.md lists them).
constexpr RegionSpec kRegions[] = {
    {"rw", 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ, 1},
    {"ro", 16384, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 2},
    {"wo", 16384, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 3},
    {"atomic", 4096,
     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ |
         IBV_ACCESS_REMOTE_WRITE,
     4},
    {"none", 4096, IBV_ACCESS_LOCAL_WRITE, 5},
    {"local", 262144, IBV_ACCESS_LOCAL_WRITE, 6},
};

std::uint32_t mtu_bytes(ibv_mtu m) {
  switch (m) {
    case IBV_MTU_256:
      return 256;
    case IBV_MTU_512:
      return 512;
    case IBV_MTU_1024:
      return 1024;
    case IBV_MTU_2048:
      return 2048;
    case IBV_MTU_4096:
      return 4096;
  }
  return 0;
}

}  // namespace

void Region::fill_pattern() {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::uint8_t>((i * 7 + seed) % 251);
  }
}

VerbsTarget::VerbsTarget(const std::string& device, int gid_index) : gid_index_(gid_index) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) throw Error(errno_text("ibv_get_device_list"));
  ibv_device* chosen = nullptr;
  for (int i = 0; i < n && chosen == nullptr; ++i) {
    if (device.empty() || device == ibv_get_device_name(list[i])) chosen = list[i];
  }
  if (chosen == nullptr) {
    ibv_free_device_list(list);
    throw Error(device.empty() ? "no Verbs device" : "no Verbs device named '" + device + "'");
  }
  device_name_ = ibv_get_device_name(chosen);
  sysfs_path_ = chosen->ibdev_path;
  ctx_ = ibv_open_device(chosen);
  ibv_free_device_list(list);
  if (ctx_ == nullptr) throw Error(errno_text("ibv_open_device"));
  ibv_port_attr port{};
  if (ibv_query_port(ctx_, 1, &port) != 0) throw Error(errno_text("ibv_query_port"));
  active_mtu_ = port.active_mtu;
  mtu_ = mtu_bytes(port.active_mtu);
  pd_ = ibv_alloc_pd(ctx_);
  if (pd_ == nullptr) throw Error(errno_text("ibv_alloc_pd"));
  cq_ = ibv_create_cq(ctx_, 4096, nullptr, nullptr, 0);
  if (cq_ == nullptr) throw Error(errno_text("ibv_create_cq"));
  for (const RegionSpec& spec : kRegions) {
    auto r = std::make_unique<Region>();
    r->name = spec.name;
    r->access = spec.access;
    r->seed = spec.seed;
    r->bytes.resize(spec.bytes);
    r->fill_pattern();
    r->mr = ibv_reg_mr(pd_, r->bytes.data(), r->bytes.size(), spec.access);
    if (r->mr == nullptr) throw Error(errno_text("ibv_reg_mr"));
    regions_.push_back(std::move(r));
  }
}

VerbsTarget::~VerbsTarget() {
  for (auto& [n, q] : qps_) ibv_destroy_qp(q);
  for (auto& r : regions_) {
    if (r->mr != nullptr) ibv_dereg_mr(r->mr);
  }
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (ctx_ != nullptr) ibv_close_device(ctx_);
}

std::vector<std::string> VerbsTarget::gids() const {
  std::vector<std::string> out;
  ibv_port_attr port{};
  if (ibv_query_port(ctx_, 1, &port) != 0) return out;
  for (int i = 0; i < port.gid_tbl_len; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(ctx_, 1, i, &g) != 0) break;
    char text[INET6_ADDRSTRLEN] = {};
    inet_ntop(AF_INET6, g.raw, text, sizeof text);
    out.emplace_back(text);
  }
  return out;
}

Region& VerbsTarget::region(const std::string& name) {
  for (auto& r : regions_) {
    if (r->name == name) return *r;
  }
  throw Error("unknown region '" + name + "'");
}

ibv_qp* VerbsTarget::qp(std::uint32_t qpn) {
  auto it = qps_.find(qpn);
  if (it == qps_.end()) throw Error("unknown qp " + std::to_string(qpn));
  return it->second;
}

std::uint32_t VerbsTarget::create_qp(std::uint32_t depth) {
  if (depth == 0 || depth > 4096) throw Error("depth must be 1..4096");
  ibv_qp_init_attr a{};
  a.send_cq = cq_;
  a.recv_cq = cq_;
  a.cap.max_send_wr = depth;
  a.cap.max_recv_wr = depth;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.qp_type = IBV_QPT_RC;
  ibv_qp* q = ibv_create_qp(pd_, &a);
  if (q == nullptr) throw Error(errno_text("ibv_create_qp"));
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.pkey_index = 0;
  attr.port_num = 1;
  attr.qp_access_flags =
      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(q, &attr,
                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
    std::string e = errno_text("ibv_modify_qp(INIT)");
    ibv_destroy_qp(q);
    throw Error(e);
  }
  qps_[q->qp_num] = q;
  return q->qp_num;
}

void VerbsTarget::connect_qp(std::uint32_t qpn, const std::string& gid, std::uint32_t remote_qpn,
                             std::uint32_t psn, std::uint32_t rnr_retry) {
  ibv_qp* q = qp(qpn);
  if (rnr_retry > 7) throw Error("rnr_retry must be 0..7");
  ibv_gid dgid{};
  std::string text = gid;
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) text = "::ffff:" + text;
  if (inet_pton(AF_INET6, text.c_str(), dgid.raw) != 1) throw Error("bad gid '" + gid + "'");
  if (remote_qpn == 0 || remote_qpn > 0xffffff) throw Error("remote qpn must be 1..2^24-1");
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = active_mtu_;
  attr.dest_qp_num = remote_qpn;
  attr.rq_psn = psn & 0xffffff;
  attr.max_dest_rd_atomic = 16;
  attr.min_rnr_timer = 1;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = dgid;
  attr.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index_);
  attr.ah_attr.grh.hop_limit = 64;
  attr.ah_attr.port_num = 1;
  if (ibv_modify_qp(q, &attr,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
    throw Error(errno_text("ibv_modify_qp(RTR)"));
  }
  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.timeout = 14;
  attr.retry_cnt = 7;
  attr.rnr_retry = static_cast<std::uint8_t>(rnr_retry);
  attr.sq_psn = psn & 0xffffff;
  attr.max_rd_atomic = 16;
  if (ibv_modify_qp(q, &attr,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
    throw Error(errno_text("ibv_modify_qp(RTS)"));
  }
}

void VerbsTarget::destroy_qp(std::uint32_t qpn) {
  ibv_qp* q = qp(qpn);
  if (ibv_destroy_qp(q) != 0) throw Error(errno_text("ibv_destroy_qp"));
  qps_.erase(qpn);
}

std::string VerbsTarget::qp_state(std::uint32_t qpn) {
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  if (ibv_query_qp(qp(qpn), &attr, IBV_QP_STATE, &init) != 0) {
    throw Error(errno_text("ibv_query_qp"));
  }
  switch (attr.qp_state) {
    case IBV_QPS_RESET:
      return "RESET";
    case IBV_QPS_INIT:
      return "INIT";
    case IBV_QPS_RTR:
      return "RTR";
    case IBV_QPS_RTS:
      return "RTS";
    case IBV_QPS_SQD:
      return "SQD";
    case IBV_QPS_SQE:
      return "SQE";
    case IBV_QPS_ERR:
      return "ERR";
    default:
      return "UNKNOWN";
  }
}

namespace {
ibv_sge sge_of(Region& r, std::uint64_t offset, std::uint32_t length) {
  if (offset > r.bytes.size() || length > r.bytes.size() - offset) {
    throw Error("range outside region '" + r.name + "'");
  }
  ibv_sge s{};
  s.addr = reinterpret_cast<std::uintptr_t>(r.bytes.data() + offset);
  s.length = length;
  s.lkey = r.mr->lkey;
  return s;
}
}  // namespace

void VerbsTarget::post_recv(std::uint32_t qpn, std::uint64_t wr_id, Region& r, std::uint64_t offset,
                            std::uint32_t length) {
  ibv_sge s = sge_of(r, offset, length);
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &s;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (ibv_post_recv(qp(qpn), &wr, &bad) != 0) throw Error(errno_text("ibv_post_recv"));
}

void VerbsTarget::post_send(std::uint32_t qpn, const SendRequest& req) {
  ibv_sge s = sge_of(*req.local, req.offset, req.length);
  ibv_send_wr wr{};
  wr.wr_id = req.wr_id;
  wr.sg_list = &s;
  wr.num_sge = 1;
  wr.opcode = req.opcode;
  wr.send_flags = (req.signaled ? IBV_SEND_SIGNALED : 0) | (req.fence ? IBV_SEND_FENCE : 0);
  switch (req.opcode) {
    case IBV_WR_SEND_WITH_IMM:
      wr.imm_data = htonl(req.imm);
      break;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      wr.imm_data = htonl(req.imm);
      [[fallthrough]];
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_READ:
      wr.wr.rdma.remote_addr = req.remote_addr;
      wr.wr.rdma.rkey = req.rkey;
      break;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
      wr.wr.atomic.remote_addr = req.remote_addr;
      wr.wr.atomic.rkey = req.rkey;
      wr.wr.atomic.compare_add = req.compare_add;
      wr.wr.atomic.swap = req.swap;
      break;
    default:
      break;
  }
  ibv_send_wr* bad = nullptr;
  if (ibv_post_send(qp(qpn), &wr, &bad) != 0) throw Error(errno_text("ibv_post_send"));
}

std::vector<Completion> VerbsTarget::poll(std::size_t count, int timeout_ms) {
  std::vector<Completion> out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  ibv_wc wc[16];
  while (out.size() < count) {
    int n = ibv_poll_cq(cq_, 16, wc);
    if (n < 0) throw Error("ibv_poll_cq failed");
    for (int i = 0; i < n; ++i) {
      out.push_back({wc[i].wr_id, static_cast<int>(wc[i].status), static_cast<int>(wc[i].opcode),
                     wc[i].byte_len, (wc[i].wc_flags & IBV_WC_WITH_IMM) != 0, ntohl(wc[i].imm_data),
                     wc[i].qp_num});
    }
    if (n == 0 && std::chrono::steady_clock::now() >= deadline) break;
  }
  return out;
}

std::map<std::string, std::string> VerbsTarget::counters(std::string& where) const {
  std::map<std::string, std::string> out;
  namespace fs = std::filesystem;
  fs::path dir = fs::path(sysfs_path_) / "ports" / "1" / "hw_counters";
  where = dir.string();
  std::error_code ec;
  if (sysfs_path_.empty() || !fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().starts_with(".")) continue;  // not a counter
    std::ifstream in(entry.path());
    std::string value;
    if (in >> value) out[entry.path().filename().string()] = value;
  }
  return out;
}

}  // namespace mroce_target
