/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * QPs: work request slots, submission rings, the poller.
 */
#ifndef KQP_QP_H
#define KQP_QP_H

#include "kqp.h"

/**
 * struct kqp_wr_slot - a posted work request the QP still owns
 * @wr_id: the caller's wr_id
 * @opcode: the caller's opcode (enum ibv_wr_opcode), for flush completions
 * @signaled: a completion is reported for it
 * @err_status: a ring entry the kernel refused, posted in its place to a
 *	QP in ERR (ring.c): the status its completion reports, or 0 for the
 *	device's own (a flush)
 */
struct kqp_wr_slot {
	u64 wr_id;
	u32 opcode;
	bool signaled;
	u8 err_status;
};

/**
 * struct kqp_wq - one work queue's slots: a ring indexed by post counter
 * @slots: @size entries
 * @size: a power of two at least the queue's depth
 * @head: posts so far
 * @tail: posts retired so far
 */
struct kqp_wq {
	struct kqp_wr_slot *slots;
	u32 size;
	u32 head;
	u32 tail;
};

/* One request, in kernel form, with room for the largest of its kinds. */
union kqp_kwr {
	struct ib_send_wr send;
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
	struct ib_ud_wr ud;
	struct ib_recv_wr recv;
};

/**
 * struct kqp_ring - a QP's submission ring for one work queue (ring.c)
 * @hdr: the shared header, in the QP's ring mapping
 * @entries: the first entry, in the mapping
 * @nr: entries, a power of two; 0 when the queue has no ring
 * @entry_size: bytes per entry, a power of two
 * @head: the consumer index; @hdr's copy is only ever written
 * @batch: entries copied and posted as one chain
 * @max_sge: SGEs per request the staging area has room for
 * @kwrs: @batch requests being built
 * @ahs: the AH each of them holds, or NULL
 * @sges: @max_sge SGEs for each of them
 * @stage: @batch copies of entries, each checked and used only there
 * @failed: the send ring refused an entry: the QP was moved to ERR and
 *	every entry from then on is posted as a placeholder (ring.c)
 * @fail_status: the ib_wc_status the refused entry completes with
 * @stopped: the last drain failed (the device or the checks refused an
 *	entry of a receive ring, the device a send chain, or the tail was
 *	impossible): only a doorbell drains it again, so that the process
 *	can take back what it published first
 *
 * Everything but @hdr and the entries is the kernel's alone, used under
 * the queue's mutex (kqp_qp.sq_mutex or rq_mutex).
 */
struct kqp_ring {
	struct kqp_wq_ring_hdr *hdr;
	void *entries;
	u32 nr;
	u32 entry_size;
	u32 head;
	u32 batch;
	u32 max_sge;
	union kqp_kwr *kwrs;
	struct kqp_object **ahs;
	struct ib_sge *sges;
	void *stage;
	bool failed;
	bool stopped;
	u8 fail_status;
};

/**
 * struct kqp_qp - a QP created in the kernel for a userspace caller
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @qp: the kernel QP; NULL once destroyed
 * @qpc_ctx: for a QP taken from the QP cache, the context its events come
 *	through (qp_cache.c), freed when @qp is destroyed
 * @cm: the id it was created on, or NULL for a QP the caller transitions
 * @move_mutex: serialises kqp's moves of a QP on an id (kqp_qp_cm_move(),
 *	called under the rdma_cm handler's lock) with the destruction of its
 *	hardware, which clears @qp under it: so rdma_cm's handler never
 *	waits for the device's hw_rwsem
 * @pd: the PD, a user of it
 * @send_cq: a user of it
 * @recv_cq: a user of it
 * @srq: the SRQ it receives from, a user of it, or NULL
 * @srq_ibqp: the kernel QP, as an SRQ completion names it: its key in
 *	@srq->qps, never followed
 * @uid: the caller's value, reported with async events
 * @qp_num: the QP number
 * @qp_type: IB_QPT_RC or IB_QPT_UD
 * @sq_sig_all: every send is signaled
 * @cap: the actual capabilities
 * @lock: protects @sq and @rq, between posting and completions
 * @sq_mutex: serialises posting sends
 * @rq_mutex: serialises posting receives
 * @sq: send slots
 * @rq: receive slots
 * @ring_mem: with KQP_CREATE_QP_RINGS, the memory userspace maps: both
 *	rings' headers and entries, in @ring_vmem
 * @ring_vmem: its owner, dropped with the QP; it lives on while mapped
 * @ring_bytes: its length, page aligned
 * @sq_ring: the send ring
 * @rq_ring: the receive ring
 * @sq_sig_out: signaled sends the device has and has not completed, under
 *	@lock
 * @sq_committed: under @lock: the send ring's NEED_DOORBELL is clear, and
 *	the completion of a signaled send queues @drain_work (ring.c)
 * @sq_polled: the table's poller serves the send ring (poller.c): the
 *	kernel stays committed without a signaled send.  Written by the
 *	poller under @sq_mutex and @lock, read under either
 * @rq_polled: the poller serves the receive ring, under @rq_mutex
 * @rq_async: the receive ring is drained after receive completions
 *	(KQP_QP_RINGS_RECV_ASYNC); set before the QP is published
 * @rq_committed: under @lock: the receive ring's NEED_DOORBELL is clear,
 *	and a receive completion queues @drain_work (ring.c)
 * @rq_low: with @rq_async, the receives the device must hold for the
 *	kernel to stay committed to the receive ring: half those asked for
 * @rq_peer_waits: the peer retries an RNR NAK for ever (the id's CONNECT
 *	or ACCEPT said so): only then does the kernel commit (ring.c)
 * @sq_ready: under @sq_mutex: the device took a send chain since the QP
 *	was made or last reset, so it is in a state that sends; only then
 *	does the poller commit to the send ring (ring.c)
 * @drain_work: drains the rings after completions, holding a reference
 *	to the QP
 * @async_reported: async events read for the QP
 * @mcast_mutex: protects @mcasts and @nr_mcasts
 * @mcasts: struct kqp_qp_mcast, the groups the QP is attached to; they are
 *	detached before the QP is destroyed (ib_core refuses otherwise)
 * @nr_mcasts: entries in @mcasts
 * @abandoned: the device refused to destroy the QP: it keeps this struct
 *	as its context, for good, and the handler must not touch the rest
 * @rcu: the CQ's poll looks QPs up under RCU (kqp_qp_complete())
 */
struct kqp_qp {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_qp *qp;
	struct kqp_qpc_ctx *qpc_ctx;
	struct kqp_cm_id *cm;
	struct mutex move_mutex;	/* @qp's moves and destruction */
	struct kqp_pd *pd;
	struct kqp_cq *send_cq;
	struct kqp_cq *recv_cq;
	struct kqp_srq *srq;
	const void *srq_ibqp;
	u64 uid;
	u32 qp_num;
	enum ib_qp_type qp_type;
	bool sq_sig_all;
	struct ib_qp_cap cap;
	spinlock_t lock;		/* @sq and @rq */
	struct mutex sq_mutex;		/* posting sends */
	struct mutex rq_mutex;		/* posting receives */
	struct kqp_wq sq;
	struct kqp_wq rq;
	void *ring_mem;
	struct kqp_vmem *ring_vmem;
	u32 ring_bytes;
	struct kqp_ring sq_ring;
	struct kqp_ring rq_ring;
	u32 sq_sig_out;
	bool sq_committed;
	bool sq_polled;
	bool rq_polled;
	bool rq_async;
	bool rq_committed;
	bool rq_peer_waits;
	u32 rq_low;
	bool sq_ready;
	struct work_struct drain_work;
	u32 async_reported;
	struct mutex mcast_mutex;	/* @mcasts, @nr_mcasts */
	struct list_head mcasts;
	unsigned int nr_mcasts;
	bool abandoned;
	struct rcu_head rcu;
};

/* qp.c */
int kqp_create_qp_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_qp_ioctl(struct kqp_ucmd *ucmd);
void kqp_qp_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
struct kqp_qp *kqp_qp_get_hw(struct kqp_ucontext *uctx, u32 handle);
void kqp_qp_cap_to_user(struct kqp_qp_cap *dst, const struct ib_qp_cap *src);

/* qp_state.c */
int kqp_modify_qp_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_qp_ioctl(struct kqp_ucmd *ucmd);
void kqp_qp_attr_to_user(struct ib_device *ibdev, struct kqp_qp_attr *dst,
			 struct ib_qp_attr *src);
int kqp_qp_cm_move(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		   enum ib_qp_state state, const struct rdma_conn_param *param);
int kqp_qp_cm_accept(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		     struct rdma_conn_param *param);
void kqp_qp_cm_event(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		     struct rdma_cm_event *event);

/* wr.c */
int kqp_post_send_ioctl(struct kqp_ucmd *ucmd);
int kqp_post_recv_ioctl(struct kqp_ucmd *ucmd);
void kqp_qp_complete(struct kqp_ucontext *uctx, struct ib_wc *wc,
		     struct kqp_cqe *cqe, bool *report);
void kqp_wc_to_cqe(const struct ib_wc *wc, struct kqp_cqe *cqe, u64 wr_id,
		   u32 qp_num, u32 err_opcode);
void *kqp_post_copy(struct kqp_post *cmd);
long kqp_build_send(struct kqp_qp *qp, struct kqp_object **ah,
		    const void *p, size_t len, union kqp_kwr *kwr,
		    struct ib_sge *ksge, u32 *opcode);
long kqp_build_recv(struct kqp_pd *pd, u32 max_sge, const void *p,
		    size_t len, struct ib_recv_wr *wr, struct ib_sge *ksge);
u32 kqp_post_chain(struct kqp_qp *qp, bool recv, union kqp_kwr *kwrs,
		   const u64 *wr_ids, const u32 *opcodes, const u8 *err_status,
		   u32 n, int *err);

/* ring.c */
void kqp_qp_rings_init(struct kqp_qp *qp, bool recv_async, u32 recv_asked);
void kqp_rq_retired(struct kqp_qp *qp);
void kqp_qp_peer_rnr(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		     u8 rnr_retry);
void kqp_rq_commit(struct kqp_qp *qp, bool commit);
void kqp_qp_rings_free(struct kqp_qp *qp);
void kqp_qp_rings_to_user(const struct kqp_qp *qp,
			  struct kqp_qp_ring_info *info);
void kqp_qp_drain_work(struct work_struct *work);
void kqp_sq_retired(struct kqp_qp *qp);
void kqp_sq_commit(struct kqp_qp *qp, bool commit);
int kqp_doorbell_ioctl(struct kqp_ucmd *ucmd);
u32 kqp_qp_poll(struct kqp_qp *qp, bool polled);

/* poller.c */
int kqp_create_poller_ioctl(struct kqp_ucmd *ucmd);
int kqp_poller_alive(struct kqp_ucontext *uctx);
int kqp_poller_wake(struct kqp_ucontext *uctx);
void kqp_poller_info(struct kqp_ucontext *uctx, struct kqp_ctx_info *info);
void kqp_poller_stop(struct kqp_ucontext *uctx);

#endif /* KQP_QP_H */
