// The entry points programs reach through the context's tables (ctx->ops and struct
// verbs_context) rather than through exported symbols.
#pragma once

#include <infiniband/verbs.h>

namespace mroce::verbs {

int poll_cq(ibv_cq* cq, int num_entries, ibv_wc* wc);
int req_notify_cq(ibv_cq* cq, int solicited_only);
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr, size_t attr_len);
int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size);
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);
ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr);
ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr);
ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr);
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr);

}  // namespace mroce::verbs
