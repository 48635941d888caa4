/* rdma-core's private interface (version IBVERBS_PRIVATE_34) and kernel-ABI helpers.
 * Only hardware providers (libmlx5, libefa) and librdmacm import these; perftest links
 * those libraries, so the dynamic loader needs every symbol to exist. No program reaches
 * them through this library: the providers' constructors register a driver (ignored here),
 * and the rest would only run against a kernel RDMA device. Each fails with EOPNOTSUPP;
 * pointer-returning ones return NULL. Written without rdma-core's private headers (not
 * installed), so the prototypes are deliberately loose. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#define MROCE_FAIL_INT(name) \
  int name(void);            \
  int name(void) {           \
    errno = EOPNOTSUPP;      \
    return EOPNOTSUPP;       \
  }
#define MROCE_FAIL_PTR(name) \
  void* name(void);          \
  void* name(void) {         \
    errno = EOPNOTSUPP;      \
    return NULL;             \
  }
#define MROCE_NOTHING(name) \
  void name(void);          \
  void name(void) {}

bool verbs_allow_disassociate_destroy;

MROCE_NOTHING(verbs_register_driver_34)
MROCE_NOTHING(verbs_set_ops)
MROCE_NOTHING(verbs_init_cq)
MROCE_NOTHING(verbs_uninit_context)
MROCE_NOTHING(__verbs_log)
MROCE_FAIL_PTR(_verbs_init_and_alloc_context)
MROCE_FAIL_PTR(verbs_open_device)
MROCE_FAIL_INT(execute_ioctl)
MROCE_FAIL_INT(__ioctl_final_num_attrs)
MROCE_FAIL_INT(ibv_read_ibdev_sysfs_file)

MROCE_FAIL_INT(ibv_cmd_advise_mr)
MROCE_FAIL_INT(ibv_cmd_alloc_dm)
MROCE_FAIL_INT(ibv_cmd_alloc_mw)
MROCE_FAIL_INT(ibv_cmd_alloc_pd)
MROCE_FAIL_INT(ibv_cmd_attach_mcast)
MROCE_FAIL_INT(ibv_cmd_close_xrcd)
MROCE_FAIL_INT(ibv_cmd_create_ah)
MROCE_FAIL_INT(ibv_cmd_create_counters)
MROCE_FAIL_INT(ibv_cmd_create_cq)
MROCE_FAIL_INT(ibv_cmd_create_cq_ex)
MROCE_FAIL_INT(ibv_cmd_create_flow)
MROCE_FAIL_INT(ibv_cmd_create_flow_action_esp)
MROCE_FAIL_INT(ibv_cmd_create_qp)
MROCE_FAIL_INT(ibv_cmd_create_qp_ex)
MROCE_FAIL_INT(ibv_cmd_create_qp_ex2)
MROCE_FAIL_INT(ibv_cmd_create_rwq_ind_table)
MROCE_FAIL_INT(ibv_cmd_create_srq)
MROCE_FAIL_INT(ibv_cmd_create_srq_ex)
MROCE_FAIL_INT(ibv_cmd_create_wq)
MROCE_FAIL_INT(ibv_cmd_dealloc_mw)
MROCE_FAIL_INT(ibv_cmd_dealloc_pd)
MROCE_FAIL_INT(ibv_cmd_dereg_mr)
MROCE_FAIL_INT(ibv_cmd_destroy_ah)
MROCE_FAIL_INT(ibv_cmd_destroy_counters)
MROCE_FAIL_INT(ibv_cmd_destroy_cq)
MROCE_FAIL_INT(ibv_cmd_destroy_flow)
MROCE_FAIL_INT(ibv_cmd_destroy_flow_action)
MROCE_FAIL_INT(ibv_cmd_destroy_qp)
MROCE_FAIL_INT(ibv_cmd_destroy_rwq_ind_table)
MROCE_FAIL_INT(ibv_cmd_destroy_srq)
MROCE_FAIL_INT(ibv_cmd_destroy_wq)
MROCE_FAIL_INT(ibv_cmd_detach_mcast)
MROCE_FAIL_INT(ibv_cmd_free_dm)
MROCE_FAIL_INT(ibv_cmd_get_context)
MROCE_FAIL_INT(ibv_cmd_modify_cq)
MROCE_FAIL_INT(ibv_cmd_modify_flow_action_esp)
MROCE_FAIL_INT(ibv_cmd_modify_qp)
MROCE_FAIL_INT(ibv_cmd_modify_qp_ex)
MROCE_FAIL_INT(ibv_cmd_modify_srq)
MROCE_FAIL_INT(ibv_cmd_modify_wq)
MROCE_FAIL_INT(ibv_cmd_open_qp)
MROCE_FAIL_INT(ibv_cmd_open_xrcd)
MROCE_FAIL_INT(ibv_cmd_poll_cq)
MROCE_FAIL_INT(ibv_cmd_post_recv)
MROCE_FAIL_INT(ibv_cmd_post_send)
MROCE_FAIL_INT(ibv_cmd_post_srq_recv)
MROCE_FAIL_INT(ibv_cmd_query_context)
MROCE_FAIL_INT(ibv_cmd_query_device_any)
MROCE_FAIL_INT(ibv_cmd_query_mr)
MROCE_FAIL_INT(ibv_cmd_query_port)
MROCE_FAIL_INT(ibv_cmd_query_qp)
MROCE_FAIL_INT(ibv_cmd_query_srq)
MROCE_FAIL_INT(ibv_cmd_read_counters)
MROCE_FAIL_INT(ibv_cmd_reg_dm_mr)
MROCE_FAIL_INT(ibv_cmd_reg_dmabuf_mr)
MROCE_FAIL_INT(ibv_cmd_reg_mr)
MROCE_FAIL_INT(ibv_cmd_req_notify_cq)
MROCE_FAIL_INT(ibv_cmd_rereg_mr)
MROCE_FAIL_INT(ibv_cmd_resize_cq)

/* Kernel-ABI converters and sysfs helpers of IBVERBS_1.0/1.1 (librdmacm imports them). */
MROCE_NOTHING(ibv_copy_ah_attr_from_kern)
MROCE_NOTHING(ibv_copy_path_rec_from_kern)
MROCE_NOTHING(ibv_copy_path_rec_to_kern)
MROCE_NOTHING(ibv_copy_qp_attr_from_kern)

const char* ibv_get_sysfs_path(void);
const char* ibv_get_sysfs_path(void) {
  return "/sys";
}

int ibv_read_sysfs_file(void);
int ibv_read_sysfs_file(void) {
  errno = ENOENT;
  return -1;
}
