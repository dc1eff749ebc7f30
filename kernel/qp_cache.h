/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The QP cache (qp_cache.c): kernel QPs made ahead of rdma_create_qp(),
 * per device, in groups that share a PD.
 */
#ifndef KQP_QP_CACHE_H
#define KQP_QP_CACHE_H

#include "kqp.h"

struct kqp_qpc;
struct kqp_qpc_group;

/* The rdma cgroup objects of a spare slot: its QP and two CQs. */
#define KQP_QPC_SLOT_OBJS	3

/*
 * The context a cached QP's events go to: its kernel QP's qp_context
 * from creation to destruction, so that nothing the driver reads changes
 * when a table takes the QP.  Freed after the kernel QP is destroyed
 * (never, if the device refused).
 */
struct kqp_qpc_ctx {
	void (*handler)(struct ib_event *event, void *context);
	void *context;
};

/**
 * struct kqp_qpc_slot - a cached QP with the two CQs made for it
 * @entry: on its group's list
 * @qp: the kernel QP, in RESET, never used
 * @send_cq: its send CQ, a spare (kqp_cq_make_spare())
 * @recv_cq: its receive CQ, a spare
 * @cap: what the device gave
 * @ctx: @qp's event context
 */
struct kqp_qpc_slot {
	struct list_head entry;
	struct ib_qp *qp;
	struct kqp_cq *send_cq;
	struct kqp_cq *recv_cq;
	struct ib_qp_cap cap;
	struct kqp_qpc_ctx *ctx;
};

int kqp_qpc_init(struct kqp_device *kdev);
void kqp_qpc_exit(struct kqp_device *kdev);
void kqp_qpc_free(struct kqp_device *kdev);
void kqp_qpc_kick_all(void);
void kqp_qpc_debugfs_init(struct dentry *dir);

struct kqp_qpc_group *kqp_qpc_adopt(struct kqp_device *kdev);
void kqp_qpc_unadopt(struct kqp_device *kdev, struct kqp_qpc_group *group);
struct ib_pd *kqp_qpc_group_pd(struct kqp_qpc_group *group);
u64 kqp_qpc_group_bytes(struct kqp_qpc_group *group);
unsigned int kqp_qpc_group_nr(struct kqp_qpc_group *group);
void kqp_qpc_group_release(struct kqp_qpc_group *group);

struct kqp_qpc_slot *kqp_qpc_take(struct kqp_device *kdev,
				  struct kqp_qpc_group *group,
				  const struct ib_qp_init_attr *attr);
void kqp_qpc_slot_free(struct kqp_qpc_slot *slot);
void kqp_qpc_ctx_set(struct kqp_qpc_ctx *ctx,
		     void (*handler)(struct ib_event *, void *),
		     void *context);
void kqp_qpc_ctx_clear(struct kqp_qpc_ctx *ctx);

#endif /* KQP_QP_CACHE_H */
