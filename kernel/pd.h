/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Protection domains and what lives in them: MRs and AHs.
 */
#ifndef KQP_PD_H
#define KQP_PD_H

#include "kqp.h"

/**
 * struct kqp_pd - a protection domain
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @pd: the kernel PD; NULL once its device is gone
 * @users: QPs (and later MRs and AHs) using it, under @uctx->lock
 * @default_refs: for a default PD, the references KQP_PD_DEFAULT handed
 *	out, under @uctx->lock; it goes with the last of these and @users
 * @is_default: this is its context's default PD for the device
 * @mrs: lkey -> struct kqp_mr registered in this PD; what work requests
 *	are checked against
 * @qpc: for a default PD adopted from the QP cache, its group: the spare
 *	QPs on it (qp_cache.c), taken under @uctx->lock; back to the cache,
 *	or destroyed, with it
 * @qpc_cg: the rdma cgroup charged for the spare QPs and their CQs
 * @qpc_objs: how many hca_objects it is charged for them
 */
struct kqp_pd {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_pd *pd;
	unsigned int users;
	unsigned int default_refs;
	bool is_default;
	struct xarray mrs;
	struct kqp_qpc_group *qpc;
	struct rdma_cgroup *qpc_cg;
	unsigned int qpc_objs;
};

/**
 * struct kqp_mr - memory the caller registered
 * @vobj: handle, device, lifetime
 * @pd: its PD, a user of it
 * @mr: the kernel MR; NULL once its device is gone
 * @lkey: local key, as handed out
 * @iova: first address work requests may name
 * @length: bytes from @iova
 * @access: IB_ACCESS_* flags
 */
struct kqp_mr {
	struct kqp_vobj vobj;
	struct kqp_pd *pd;
	struct ib_mr *mr;
	u32 lkey;
	u64 iova;
	u64 length;
	u64 charged;
	int access;
};

/**
 * struct kqp_ah - an address handle for UD sends
 * @vobj: handle, device, lifetime
 * @pd: its PD, a user of it
 * @ah: the kernel AH; NULL once its device is gone
 */
struct kqp_ah {
	struct kqp_vobj vobj;
	struct kqp_pd *pd;
	struct ib_ah *ah;
};

/* pd.c */
int kqp_alloc_pd_ioctl(struct kqp_ucmd *ucmd);
int kqp_dealloc_pd_ioctl(struct kqp_ucmd *ucmd);
struct kqp_pd *kqp_pd_get_default_locked(struct kqp_ucontext *uctx,
					 struct kqp_device *kdev);
struct kqp_pd *kqp_pd_take(struct kqp_ucontext *uctx, u32 handle);
void kqp_pd_put_user(struct kqp_pd *pd);
void kqp_pd_qpc_took(struct kqp_pd *pd);
void kqp_ib_pd_dealloc(struct ib_pd *ibpd);
void kqp_pd_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);

/* mr.c */
int kqp_reg_mr_ioctl(struct kqp_ucmd *ucmd);
int kqp_dereg_mr_ioctl(struct kqp_ucmd *ucmd);
void kqp_mr_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
int kqp_mr_check_sge(struct kqp_pd *pd, u64 addr, u32 length, u32 lkey,
		     int access);

/* ah.c */
int kqp_create_ah_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_ah_ioctl(struct kqp_ucmd *ucmd);
void kqp_ah_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
int kqp_ah_attr_from_user(struct ib_device *ibdev,
			  const struct kqp_ah_attr *src,
			  struct rdma_ah_attr *dst);
void kqp_ah_attr_to_user(struct ib_device *ibdev, struct kqp_ah_attr *dst,
			 struct rdma_ah_attr *src);

#endif /* KQP_PD_H */
