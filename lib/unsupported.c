// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The parts of librdmacm's and libibverbs' interfaces that kqp does not
 * implement.  Each still has a definition here, on the version node
 * rdma-core gives it: a binary run with LD_PRELOAD=libkqp.so must never
 * fall through to the real library, which would take kqp's objects for
 * its own.  Each fails the way its library fails for a feature the
 * device does not have, so callers take their usual fallback:
 *
 *  - ECE (rdma_*_ece, ibv_*_ece): kqp's ids carry no ECE options, as
 *    rxe's do not; ENOSYS (librdmacm) or EOPNOTSUPP (libibverbs).
 *  - Resizing CQs, re-registering MRs (after libibverbs' own checks of
 *    the arguments), dma-buf MRs, importing objects from another
 *    context's fd, and resolving a GID to a MAC address: EOPNOTSUPP.
 */
#include <stdarg.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "kqp_priv.h"

/* ECE. */

KQP_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return kqp_err(ENOSYS);
}

KQP_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return kqp_err(ENOSYS);
}

KQP_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			       uint8_t private_data_len)
{
	return kqp_err(ENOSYS);
}

KQP_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

KQP_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

/* The rest of libibverbs. */

KQP_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return EOPNOTSUPP;
}

/*
 * What libibverbs gives for a provider without re-registration (rxe's,
 * in rdma-core 44): its own checks of the arguments first (EINVAL and
 * IBV_REREG_MR_ERR_INPUT), then the provider's refusal, which it reports
 * as a failed command: errno EOPNOTSUPP, IBV_REREG_MR_ERR_CMD.  The MR
 * is unchanged either way.
 */
KQP_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			    void *addr, size_t length, int access)
{
	if ((flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!length || !addr)) ||
	    (access && !(flags & IBV_REREG_MR_CHANGE_ACCESS))) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_CMD;
}

KQP_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					    size_t length, uint64_t iova,
					    int fd, int access)
{
	return kqp_err_ptr(EOPNOTSUPP);
}

/* Objects live in one process's session; another's fd cannot share them. */
KQP_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	return kqp_err_ptr(EOPNOTSUPP);
}

KQP_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
					uint32_t pd_handle)
{
	return kqp_err_ptr(EOPNOTSUPP);
}

KQP_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	return kqp_err_ptr(EOPNOTSUPP);
}

KQP_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
					uint32_t dm_handle)
{
	return kqp_err_ptr(EOPNOTSUPP);
}

/* Nothing was ever imported, so there is nothing to let go of. */
KQP_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

KQP_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

KQP_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

/* 0: no promise that data lands in order, as for rxe under libibverbs. */
KQP_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					  enum ibv_wr_opcode op,
					  uint32_t flags)
{
	return 0;
}

/* For providers building address handles; kqp's kernel does that. */
KQP_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					   struct ibv_ah_attr *attr,
					   uint8_t eth_mac[ETHERNET_LL_SIZE],
					   uint16_t *vid)
{
	return -EOPNOTSUPP;
}

/*
 * A compat-only (hidden) version in libibverbs, kept for old external
 * providers that call it from their constructors; no binary can link to
 * it today, but one loaded into a preloaded process may still bind it.
 * kqp loads no providers, so there is nothing to register.
 */
void kqp_register_driver_1_1(const char *name, void *init_func);
__asm__(".symver kqp_register_driver_1_1, ibv_register_driver@IBVERBS_1.1");
KQP_EXPORT void kqp_register_driver_1_1(const char *name, void *init_func)
{
}
