/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What a table's objects cost their user, and who pays (account.c): the
 * per-user limits, the estimate of a queue's kernel memory, the rdma
 * cgroup charges; and the memory of the rings (vmem.c), charged for as
 * long as any mapping of it lives.
 */
#ifndef KQP_ACCOUNT_H
#define KQP_ACCOUNT_H

#include "kqp.h"

/* account.c */
struct kqp_user *kqp_user_get(kuid_t kuid);
void kqp_user_put(struct kqp_user *user);
int kqp_user_handle_charge(struct kqp_ucontext *uctx);
void kqp_user_handle_uncharge(struct kqp_ucontext *uctx);
int kqp_vobj_charge(struct kqp_vobj *vobj, struct kqp_ucontext *uctx,
		    struct kqp_device *kdev);
void kqp_vobj_uncharge(struct kqp_vobj *vobj);
u64 kqp_cq_queue_bytes(u32 cqe);
u64 kqp_qp_queue_bytes(const struct ib_qp_cap *cap, bool srq);
u64 kqp_srq_queue_bytes(u32 max_wr, u32 max_sge, u32 nslots);
int kqp_queue_charge(struct kqp_ucontext *uctx, struct kqp_vobj *vobj,
		     u64 bytes, bool force);
struct kqp_user *kqp_user_charge(struct kqp_ucontext *uctx, u64 bytes);
int kqp_user_mr_charge(struct kqp_ucontext *uctx, u64 bytes);
void kqp_user_mr_uncharge(struct kqp_ucontext *uctx, u64 bytes);
struct workqueue_struct *kqp_user_wq(struct kqp_ucontext *uctx);
void kqp_user_uncharge(struct kqp_user *user, u64 bytes);
void kqp_queue_uncharge(struct kqp_ucontext *uctx, struct kqp_vobj *vobj);
void kqp_users_exit(void);

/* vmem.c */
struct kqp_vmem;
struct kqp_vmem *kqp_vmem_alloc(struct kqp_ucontext *uctx, size_t bytes);
void *kqp_vmem_addr(const struct kqp_vmem *v);
size_t kqp_vmem_size(const struct kqp_vmem *v);
void kqp_vmem_put(struct kqp_vmem *v);
int kqp_vmem_mmap(struct kqp_vmem *v, struct vm_area_struct *vma);

#endif /* KQP_ACCOUNT_H */
