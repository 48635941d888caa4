// The extended verbs of struct verbs_context that programs reach through inline
// functions: extended QPs (the ibv_wr_* send API) and extended CQs (ibv_start_poll and
// the ibv_wc_read_* accessors, with completion timestamps), and ibv_open_xrcd, which is
// offered only to say why it fails.
#include <arpa/inet.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "verbs/diagnostics.h"
#include "verbs/objects.h"
#include "verbs/ops.h"

namespace mroce::verbs {
namespace {

constexpr std::uint64_t kSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                                   IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
constexpr unsigned kWrFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE | IBV_SEND_IP_CSUM;

Qp* qp_of_ex(ibv_qp_ex* x) {
  return reinterpret_cast<Qp*>(x);
}

// ibv_wr_*: each opcode setter opens a work request carrying the QP's current wr_id and
// wr_flags; the SGE and inline setters fill the last one.
SendWr& open_wr(ibv_qp_ex* x, WrOpcode op) {
  Qp* q = qp_of_ex(x);
  if (x->wr_flags & ~kWrFlags) q->batch_error = EINVAL;
  SendWr& w = q->batch.emplace_back();
  w.wr_id = x->wr_id;
  w.opcode = op;
  w.flags = x->wr_flags & ~IBV_SEND_IP_CSUM & ~IBV_SEND_INLINE;
  return w;
}

SendWr* last_wr(ibv_qp_ex* x) {
  Qp* q = qp_of_ex(x);
  if (q->batch.empty()) {
    q->batch_error = EINVAL;
    return nullptr;
  }
  return &q->batch.back();
}

void wr_rdma(ibv_qp_ex* x, WrOpcode op, std::uint32_t rkey, std::uint64_t addr) {
  SendWr& w = open_wr(x, op);
  w.rkey = rkey;
  w.remote_addr = addr;
}

void wr_cmp_swp(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, uint64_t compare, uint64_t swap) {
  wr_rdma(x, WrOpcode::kAtomicCmpSwp, rkey, addr);
  SendWr& w = qp_of_ex(x)->batch.back();
  w.compare_add = compare;
  w.swap = swap;
}
void wr_fetch_add(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, uint64_t add) {
  wr_rdma(x, WrOpcode::kAtomicFetchAdd, rkey, addr);
  qp_of_ex(x)->batch.back().compare_add = add;
}
void wr_read(ibv_qp_ex* x, uint32_t rkey, uint64_t addr) {
  wr_rdma(x, WrOpcode::kRdmaRead, rkey, addr);
}
void wr_write(ibv_qp_ex* x, uint32_t rkey, uint64_t addr) {
  wr_rdma(x, WrOpcode::kRdmaWrite, rkey, addr);
}
void wr_write_imm(ibv_qp_ex* x, uint32_t rkey, uint64_t addr, __be32 imm) {
  wr_rdma(x, WrOpcode::kRdmaWriteWithImm, rkey, addr);
  qp_of_ex(x)->batch.back().imm = ntohl(imm);  // imm holds the wire bytes
}
void wr_send(ibv_qp_ex* x) {
  open_wr(x, WrOpcode::kSend);
}
void wr_send_imm(ibv_qp_ex* x, __be32 imm) {
  open_wr(x, WrOpcode::kSendWithImm).imm = ntohl(imm);
}

// Opcodes the engine does not carry: the batch fails at ibv_wr_complete.
void wr_bind_mw(ibv_qp_ex* x, ibv_mw*, uint32_t, const ibv_mw_bind_info*) {
  qp_of_ex(x)->batch_error = EOPNOTSUPP;
}
void wr_local_inv(ibv_qp_ex* x, uint32_t) {
  qp_of_ex(x)->batch_error = EOPNOTSUPP;
}
void wr_send_inv(ibv_qp_ex* x, uint32_t) {
  qp_of_ex(x)->batch_error = EOPNOTSUPP;
}
void wr_send_tso(ibv_qp_ex* x, void*, uint16_t, uint16_t) {
  qp_of_ex(x)->batch_error = EOPNOTSUPP;
}
void wr_atomic_write(ibv_qp_ex* x, uint32_t, uint64_t, const void*) {
  qp_of_ex(x)->batch_error = EOPNOTSUPP;
}
void wr_set_ud_addr(ibv_qp_ex* x, ibv_ah*, uint32_t, uint32_t) {
  qp_of_ex(x)->batch_error = EINVAL;  // not a UD QP
}
void wr_set_xrc_srqn(ibv_qp_ex* x, uint32_t) {
  qp_of_ex(x)->batch_error = EINVAL;  // not an XRC QP
}

void wr_set_sge_list(ibv_qp_ex* x, size_t n, const ibv_sge* sg) {
  SendWr* w = last_wr(x);
  if (!w) return;
  if (n > std::size_t{kMaxSge}) {
    qp_of_ex(x)->batch_error = EINVAL;
    return;
  }
  for (std::size_t i = 0; i < n; ++i) w->sg[i] = {sg[i].addr, sg[i].length, sg[i].lkey};
  w->num_sge = static_cast<std::uint8_t>(n);
}
void wr_set_sge(ibv_qp_ex* x, uint32_t lkey, uint64_t addr, uint32_t length) {
  const ibv_sge sg{addr, length, lkey};
  wr_set_sge_list(x, 1, &sg);
}

// Inline data is copied now, into one buffer the batch keeps until ibv_wr_complete.
void wr_set_inline_data_list(ibv_qp_ex* x, size_t n, const ibv_data_buf* bufs) {
  Qp* q = qp_of_ex(x);
  SendWr* w = last_wr(x);
  if (!w) return;
  std::vector<std::uint8_t>& copy = q->batch_inline.emplace_back();
  for (std::size_t i = 0; i < n; ++i) {
    const auto* p = static_cast<const std::uint8_t*>(bufs[i].addr);
    copy.insert(copy.end(), p, p + bufs[i].length);
  }
  if (copy.size() > q->cap.max_inline_data) q->batch_error = EINVAL;
  w->flags |= IBV_SEND_INLINE;
  w->sg[0] = {reinterpret_cast<std::uintptr_t>(copy.data()),
              static_cast<std::uint32_t>(copy.size()), 0};
  w->num_sge = 1;
}
void wr_set_inline_data(ibv_qp_ex* x, void* addr, size_t length) {
  const ibv_data_buf b{addr, length};
  wr_set_inline_data_list(x, 1, &b);
}

void wr_start(ibv_qp_ex* x) {
  Qp* q = qp_of_ex(x);
  q->batch.clear();
  q->batch_inline.clear();
  q->batch_error = 0;
}

void wr_abort(ibv_qp_ex* x) {
  wr_start(x);
}

// Posts the batch with one doorbell; on a refusal nothing after it is posted, as
// rdma-core's providers post nothing of a failed batch (ours may have posted a prefix).
int wr_complete(ibv_qp_ex* x) {
  Qp* q = qp_of_ex(x);
  int error = q->batch_error;
  if (!error && q->ibv.state != IBV_QPS_RTS) error = EINVAL;
  if (!error) error = errno_of(q->pair->post_send_list(q->batch, nullptr));
  if (error) debug("ibv_wr_complete on QP 0x%06x refused: %s", q->ibv.qp_num, std::strerror(error));
  wr_start(x);
  return error;
}

void fill_qp_ex(Qp* q) {
  ibv_qp_ex& x = q->ex;
  x.wr_atomic_cmp_swp = wr_cmp_swp;
  x.wr_atomic_fetch_add = wr_fetch_add;
  x.wr_bind_mw = wr_bind_mw;
  x.wr_local_inv = wr_local_inv;
  x.wr_rdma_read = wr_read;
  x.wr_rdma_write = wr_write;
  x.wr_rdma_write_imm = wr_write_imm;
  x.wr_send = wr_send;
  x.wr_send_imm = wr_send_imm;
  x.wr_send_inv = wr_send_inv;
  x.wr_send_tso = wr_send_tso;
  x.wr_set_ud_addr = wr_set_ud_addr;
  x.wr_set_xrc_srqn = wr_set_xrc_srqn;
  x.wr_set_inline_data = wr_set_inline_data;
  x.wr_set_inline_data_list = wr_set_inline_data_list;
  x.wr_set_sge = wr_set_sge;
  x.wr_set_sge_list = wr_set_sge_list;
  x.wr_start = wr_start;
  x.wr_complete = wr_complete;
  x.wr_abort = wr_abort;
  x.wr_atomic_write = wr_atomic_write;
  q->extended = true;
}

// Extended CQs: start_poll/next_poll take one entry each into Cq::current.
Cq* cq_of_ex(ibv_cq_ex* x) {
  return reinterpret_cast<Cq*>(x);
}

std::uint64_t monotonic_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::uint64_t(t.tv_sec) * 1'000'000'000u + std::uint64_t(t.tv_nsec);
}

int take_one(ibv_cq_ex* x) {
  Cq* q = cq_of_ex(x);
  if (poll_cq(&q->ibv, 1, &q->current) != 1) return ENOENT;
  q->ts = monotonic_ns();
  x->wr_id = q->current.wr_id;
  x->status = q->current.status;
  return 0;
}

int start_poll(ibv_cq_ex* x, ibv_poll_cq_attr* attr) {
  if (attr && attr->comp_mask) return EINVAL;
  return take_one(x);
}
int next_poll(ibv_cq_ex* x) {
  return take_one(x);
}
void end_poll(ibv_cq_ex*) {}

ibv_wc_opcode read_opcode(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.opcode;
}
uint32_t read_vendor_err(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.vendor_err;
}
uint32_t read_byte_len(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.byte_len;
}
__be32 read_imm_data(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.imm_data;
}
uint32_t read_qp_num(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.qp_num;
}
uint32_t read_src_qp(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.src_qp;
}
unsigned int read_wc_flags(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.wc_flags;
}
uint32_t read_slid(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.slid;
}
uint8_t read_sl(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.sl;
}
uint8_t read_dlid_path_bits(ibv_cq_ex* x) {
  return cq_of_ex(x)->current.dlid_path_bits;
}
// The device clock is CLOCK_MONOTONIC in nanoseconds (hca_core_clock 1 GHz): the moment
// the library took the entry, close to when the program sees it.
uint64_t read_completion_ts(ibv_cq_ex* x) {
  return cq_of_ex(x)->ts;
}
uint64_t read_completion_wallclock_ns(ibv_cq_ex* x) {
  return cq_of_ex(x)->ts;
}

constexpr std::uint64_t kWcFlags = std::uint64_t{IBV_WC_STANDARD_FLAGS} |
                                   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                                   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

}  // namespace

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  (void)context;
  const std::uint32_t known =
      IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  const bool send_ops = attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if ((attr->comp_mask & ~known) || attr->create_flags ||
      (send_ops && (attr->send_ops_flags & ~kSendOps))) {
    unsupported("ibv_create_qp_ex",
                "create flags, XRC and send opcodes beyond RDMA, SEND and atomics are not "
                "supported");
    return nullptr;
  }
  if (send_ops && attr->qp_type == IBV_QPT_UD) {
    unsupported("ibv_create_qp_ex", "the ibv_wr_* API on UD queue pairs is not supported");
    return nullptr;
  }
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_qp* qp = ibv_create_qp(attr->pd, reinterpret_cast<ibv_qp_init_attr*>(attr));
  if (qp && send_ops) fill_qp_ex(qp_of(qp));
  return qp;
}

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  const std::uint32_t flags_ok = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
  if ((attr->wc_flags & ~kWcFlags) || (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS) ||
      ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && (attr->flags & ~flags_ok))) {
    unsupported("ibv_create_cq_ex",
                "completion fields beyond the standard ones and timestamps (CVLAN, flow tag, "
                "tag matching), parent domains and overrun are not supported");
    return nullptr;
  }
  ibv_cq* cq = ibv_create_cq(context, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                             static_cast<int>(attr->comp_vector));
  if (!cq) return nullptr;
  ibv_cq_ex& x = cq_of(cq)->ex;
  x.start_poll = start_poll;
  x.next_poll = next_poll;
  x.end_poll = end_poll;
  x.read_opcode = read_opcode;
  x.read_vendor_err = read_vendor_err;
  x.read_byte_len = read_byte_len;
  x.read_imm_data = read_imm_data;
  x.read_qp_num = read_qp_num;
  x.read_src_qp = read_src_qp;
  x.read_wc_flags = read_wc_flags;
  x.read_slid = read_slid;
  x.read_sl = read_sl;
  x.read_dlid_path_bits = read_dlid_path_bits;
  x.read_completion_ts = read_completion_ts;
  x.read_completion_wallclock_ns = read_completion_wallclock_ns;
  return &x;
}

ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) {
  (void)context, (void)attr;
  unsupported("ibv_open_xrcd", "XRC domains are not supported");
  return nullptr;
}

}  // namespace mroce::verbs

using namespace mroce::verbs;

extern "C" {

// Only QPs created with send_ops_flags are extended ones.
ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  Qp* q = qp_of(qp);
  if (q->extended) return &q->ex;
  errno = EOPNOTSUPP;
  return nullptr;
}

}  // extern "C"
