/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * rdma_create_qp(3)'s semantics (core.c), and the exported API's scope
 * (kapi.c).
 */
#ifndef KQP_CORE_H
#define KQP_CORE_H

#include "kqp.h"

/* kapi.c: the exported API's scope */
void kqp_kapi_init(struct dentry *debugfs);
void kqp_kapi_exit(void);

/* core.c: rdma_create_qp(3) semantics, shared with the exported API */
struct kqp_core_scope;
struct kqp_core_qp;
struct kqp_qpc_ctx;

/**
 * struct kqp_core_scope_ops - where a caller's default PD and CQs come from
 * @get_default_pd: the default PD of @kdev in this scope, one more user
 * @put_default_pd: drop the user @get_default_pd took
 * @alloc_cq: a CQ of at least @cqe entries for a QP that has none
 * @free_cq: free a CQ @alloc_cq made
 * @take_cached: optional; for an unbound QP with no CQs or SRQ given, a
 *	QP made ahead (qp_cache.c) on the default PD (@pd_token when the
 *	core took it, else the PD the scope knows was named), in RESET,
 *	with its CQs in @attr and their tokens in @res; -EAGAIN when there
 *	is none that fits
 */
struct kqp_core_scope_ops {
	struct ib_pd *(*get_default_pd)(struct kqp_core_scope *scope,
					struct kqp_device *kdev, void **token);
	void (*put_default_pd)(struct kqp_core_scope *scope, void *token);
	struct ib_cq *(*alloc_cq)(struct kqp_core_scope *scope,
				  struct kqp_device *kdev, u32 cqe, bool send,
				  void **token);
	void (*free_cq)(struct kqp_core_scope *scope, void *token);
	int (*take_cached)(struct kqp_core_scope *scope,
			   struct kqp_device *kdev, void *pd_token,
			   struct ib_qp_init_attr *attr,
			   struct kqp_core_qp *res, struct ib_qp **qp);
};

struct kqp_core_scope {
	const struct kqp_core_scope_ops *ops;
};

/**
 * struct kqp_core_qp - what the core allocated for one QP
 * @pd_token: the default PD's, when the caller passed none
 * @send_cq_token: the send CQ's, when the caller passed none
 * @recv_cq_token: the receive CQ's, when the caller passed none
 * @qpc_ctx: a cached QP's event context, freed once the QP is destroyed
 */
struct kqp_core_qp {
	void *pd_token;
	void *send_cq_token;
	void *recv_cq_token;
	struct kqp_qpc_ctx *qpc_ctx;
};

int kqp_core_create_qp(struct kqp_core_scope *scope, struct rdma_cm_id *id,
		       struct ib_pd *pd, struct ib_qp_init_attr *attr,
		       struct kqp_core_qp *res, bool unbound,
		       struct ib_qp **qp);
void kqp_core_release(struct kqp_core_scope *scope, struct kqp_core_qp *res);

/* core.c: the ioctl path's scope, the user twin of kapi.c's */

/**
 * struct kqp_uscope_cq - a CQ the core made for one queue of a QP on an id
 * @uid: the caller's value for it
 * @cq: the CQ, reserved but not published, or NULL
 * @fd: its completion channel's fd, reserved but not installed, or -1
 * @filp: the channel's file, for @fd
 */
struct kqp_uscope_cq {
	u64 uid;
	struct kqp_cq *cq;
	int fd;
	struct file *filp;
};

/*
 * What the ioctl path gives the core: the table's PDs and ring CQs.  The
 * core calls the allocating operations with the device's hw_rwsem held
 * for reading; the freeing ones are called after it is dropped.
 * @named_pd is the PD the caller named, with a user held, or NULL: a
 * default PD named is one the QP cache may serve.
 */
struct kqp_uscope {
	struct kqp_core_scope scope;
	struct kqp_ucontext *uctx;
	struct kqp_pd *named_pd;
	struct kqp_uscope_cq send;
	struct kqp_uscope_cq recv;
};

extern const struct kqp_core_scope_ops kqp_uscope_ops;
void kqp_uscope_cq_abort(struct kqp_ucontext *uctx, struct kqp_uscope_cq *q);

#endif /* KQP_CORE_H */
