/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Shared receive queues.
 */
#ifndef KQP_SRQ_H
#define KQP_SRQ_H

#include "kqp.h"

/*
 * The lifetime of an SRQ (struct kqp_srq), a verbs object like the rest:
 *  - the table entry and @vobj.obj.users as for every object: a command
 *    using the SRQ holds a reference; DESTROY_SRQ claims it only while no
 *    QP uses it (@users, under kqp_ucontext.lock: EBUSY otherwise), and
 *    the table's teardown destroys QPs before SRQs.
 *  - @users: QPs created on it.  Each holds one from CREATE_QP until its
 *    own hardware and deps are released, and is in @qps from just after
 *    its hardware is made until just before it goes.
 *  - the ib_srq: destroyed by whoever comes first of DESTROY_SRQ (or the
 *    table's teardown) and the device's removal, which releases QPs
 *    before SRQs.  The SRQ's PD is a user of the PD until the struct
 *    goes.
 *  - the memory, and the slot array, go after an RCU grace period: the
 *    completion path finds an SRQ by handle under RCU, as it finds QPs;
 *    a completion for an SRQ that is gone finds nothing and is dropped.
 */

/*
 * The deepest SRQ kqp makes: its slots' index must fit the kernel's wr_id
 * (srq.c).  KQP_IOCTL_QUERY_DEVICE reports no more as max_srq_wr.
 */
#define KQP_SRQ_DEPTH_MAX	(1U << 20)

/**
 * struct kqp_srq_slot - a receive posted to an SRQ and not completed yet
 * @wr_id: the caller's wr_id
 * @gen: bumped each time the slot is taken; the kernel's wr_id carries it
 * @next_free: the next free slot, while this one is free
 * @busy: posted, not completed
 */
struct kqp_srq_slot {
	u64 wr_id;
	u32 gen;
	u32 next_free;
	bool busy;
};

/**
 * struct kqp_srq - a shared receive queue
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @srq: the kernel SRQ; NULL once its hardware is gone
 * @pd: its PD, a user of it: receives are checked against its MRs
 * @uid: the caller's value, reported with async events
 * @max_sge: SGEs per receive, as the device gave it
 * @users: QPs using it, under @uctx->lock
 * @post_mutex: serialises posting and resizing
 * @lock: protects the slots, between posting and completions
 * @slots: @nslots slots; SRQ receives complete in any order, so each is
 *	retired alone
 * @nslots: slots, twice the depth: a receive a QP took when it went to
 *	the error state never completes and keeps its slot
 * @free_head: the first free slot, or U32_MAX
 * @busy: slots in use: receives posted and not completed, an upper bound
 *	of what the device holds (MODIFY_SRQ never shrinks it below that)
 * @qps: kernel QP address -> struct kqp_qp using the SRQ, for the QP
 *	number of a completion, looked up under RCU without following the
 *	kernel QP, which may be gone by the time its completion is polled
 * @async_reported: async events read for the SRQ
 * @ready: the SRQ was made whole; its events are queued from then on
 * @abandoned: the device refused to destroy the SRQ; it keeps the struct
 * @rcu: the completion path looks SRQs up under RCU
 */
struct kqp_srq {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_srq *srq;
	struct kqp_pd *pd;
	u64 uid;
	u32 max_sge;
	unsigned int users;
	struct mutex post_mutex;	/* posting, resizing */
	spinlock_t lock;		/* slots */
	struct kqp_srq_slot *slots;
	u32 nslots;
	u32 free_head;
	u32 busy;
	struct xarray qps;
	u32 async_reported;
	bool ready;
	bool abandoned;
	struct rcu_head rcu;
};

/* srq.c */
int kqp_create_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_modify_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_post_srq_recv_ioctl(struct kqp_ucmd *ucmd);
void kqp_srq_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
struct kqp_srq *kqp_srq_take(struct kqp_ucontext *uctx, u32 handle);
void kqp_srq_put_user(struct kqp_srq *srq);
int kqp_srq_add_qp(struct kqp_srq *srq, struct kqp_qp *qp);
void kqp_srq_del_qp(struct kqp_srq *srq, struct kqp_qp *qp);
void kqp_srq_complete(struct kqp_srq *srq, struct ib_wc *wc,
		      struct kqp_cqe *cqe, bool *report);

#endif /* KQP_SRQ_H */
