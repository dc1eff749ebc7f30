// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * QPs created in the kernel for userspace: on an id through the core
 * (rdma_create_qp(3)), or alone for callers that move them through their
 * states (ibv_create_qp() + rdma_init_qp_attr() + ibv_modify_qp()).
 *
 * The kernel posts every work request itself, so each one is checked
 * first.  A posted request takes a slot in its queue; the kernel's wr_id
 * names the QP (by handle) and the slot, and the slot holds the caller's
 * wr_id.  A completion retires its slot and every unsignaled one before
 * it.  Completions name their QP by handle, looked up under RCU, so one
 * that arrives for a QP already destroyed is recognised and dropped.
 *
 * A UD QP on an id is not bound into the id (core.c), because rdma_cm
 * refuses to join multicast groups on an id with a QP.  The process
 * attaches it to a group (KQP_IOCTL_ATTACH_MCAST) once the join tells it
 * the group's GID, as librdmacm does with ibv_attach_mcast(); the QP
 * keeps the list, because ib_core refuses to destroy a QP still attached.
 */
#include <linux/file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"
#include "cm.h"
#include "core.h"
#include "cq.h"
#include "pd.h"
#include "qp.h"
#include "srq.h"

#define KQP_WRID_RECV		BIT(31)
#define KQP_WRID_SLOT_MASK	(KQP_WRID_RECV - 1)

static u64 kqp_wrid(struct kqp_qp *qp, u32 slot, bool recv)
{
	return (u64)qp->vobj.obj.id << 32 | (recv ? KQP_WRID_RECV : 0) |
	       (slot & KQP_WRID_SLOT_MASK);
}

/*
 * The completion opcodes a kernel ib_wc carries are passed to the ring as
 * they are; the uapi's names for them must therefore be ib_core's values.
 */
#define KQP_SAME_AS_IB(kqp, ib) static_assert((int)(kqp) == (int)(ib))
KQP_SAME_AS_IB(KQP_WC_OP_SEND, IB_WC_SEND);
KQP_SAME_AS_IB(KQP_WC_OP_RDMA_WRITE, IB_WC_RDMA_WRITE);
KQP_SAME_AS_IB(KQP_WC_OP_RDMA_READ, IB_WC_RDMA_READ);
KQP_SAME_AS_IB(KQP_WC_OP_COMP_SWAP, IB_WC_COMP_SWAP);
KQP_SAME_AS_IB(KQP_WC_OP_FETCH_ADD, IB_WC_FETCH_ADD);
KQP_SAME_AS_IB(KQP_WC_OP_RECV, IB_WC_RECV);
KQP_SAME_AS_IB(KQP_WC_OP_RECV_RDMA_WITH_IMM, IB_WC_RECV_RDMA_WITH_IMM);

/* The completion opcode of a send request, for a completion in error. */
static u32 kqp_wc_opcode_of_wr(u32 opcode)
{
	switch (opcode) {
	case KQP_WR_OP_RDMA_WRITE:
	case KQP_WR_OP_RDMA_WRITE_WITH_IMM:
		return KQP_WC_OP_RDMA_WRITE;
	case KQP_WR_OP_RDMA_READ:
		return KQP_WC_OP_RDMA_READ;
	case KQP_WR_OP_ATOMIC_CMP_AND_SWP:
		return KQP_WC_OP_COMP_SWAP;
	case KQP_WR_OP_ATOMIC_FETCH_AND_ADD:
		return KQP_WC_OP_FETCH_ADD;
	default:
		return KQP_WC_OP_SEND;
	}
}

/* ib_wc_flags to enum kqp_wc_flags */
static u32 kqp_wc_flags(int flags)
{
	u32 out = 0;

	if (flags & IB_WC_GRH)
		out |= KQP_WC_FLAG_GRH;
	if (flags & IB_WC_WITH_IMM)
		out |= KQP_WC_FLAG_WITH_IMM;
	if (flags & IB_WC_IP_CSUM_OK)
		out |= KQP_WC_FLAG_IP_CSUM_OK;
	if (flags & IB_WC_WITH_INVALIDATE)
		out |= KQP_WC_FLAG_WITH_INV;
	return out;
}

/*
 * Fill @cqe from a kernel completion of the request the caller posted as
 * @wr_id; @err_opcode is the completion opcode of a request that failed.
 */
void kqp_wc_to_cqe(const struct ib_wc *wc, struct kqp_cqe *cqe, u64 wr_id,
		   u32 qp_num, u32 err_opcode)
{
	memset(cqe, 0, sizeof(*cqe));
	cqe->wr_id = wr_id;
	cqe->status = wc->status;
	cqe->opcode = wc->status == IB_WC_SUCCESS ? wc->opcode : err_opcode;
	cqe->vendor_err = wc->vendor_err;
	cqe->byte_len = wc->byte_len;
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE)
		cqe->imm_data = wc->ex.invalidate_rkey;
	else
		cqe->imm_data = (__force u32)wc->ex.imm_data;
	cqe->qp_num = qp_num;
	cqe->src_qp = wc->src_qp;
	cqe->wc_flags = kqp_wc_flags(wc->wc_flags);
	cqe->slid = wc->slid;
	cqe->pkey_index = wc->pkey_index;
	cqe->sl = wc->sl;
	cqe->dlid_path_bits = wc->dlid_path_bits;
}

/*
 * Retire @n sends, the oldest first, with qp->lock held.  On a QP with
 * rings, tell userspace how far (the ring's @retired: it may reuse that
 * much room), and when a signaled send retired while the kernel is
 * committed to drain the send ring (qp->sq_committed), have it drained:
 * whatever the process published without ringing is posted now, and the
 * settle that follows decides whether it must ring again (ring.c).
 */
static void kqp_qp_retire_sends(struct kqp_qp *qp, u32 n)
{
	struct kqp_wq *wq = &qp->sq;
	u32 sig = 0;

	for (; n; n--, wq->tail++)
		if (wq->slots[wq->tail & (wq->size - 1)].signaled)
			sig++;
	if (WARN_ON_ONCE(sig > qp->sq_sig_out))
		sig = qp->sq_sig_out;
	qp->sq_sig_out -= sig;
	if (!qp->sq_ring.nr)
		return;
	/*
	 * Pairs with the acquire load in kqp_wq_retired() (lib/ring.h): the
	 * slots below it are free, so the process may publish up to
	 * @entries past it and the kernel still has a slot for each.
	 */
	smp_store_release(&qp->sq_ring.hdr->retired, wq->tail);
	if (sig && qp->sq_committed)
		kqp_sq_retired(qp);
}

/*
 * The QP went to RESET, which discards its work without completions:
 * its slots are free again (a late completion for one is stale and
 * dropped), nothing signaled is outstanding, no receive either, an
 * asynchronous receive ring's unposted entries are dropped, and a ring
 * that failed (ring.c) posts requests again, not placeholders that a QP
 * able to send would send.  Called with sq_mutex and rq_mutex held,
 * the transition made under them, so no drain sees the QP between the
 * two.
 */
static void kqp_qp_reset(struct kqp_qp *qp)
{
	struct kqp_ring *r = &qp->sq_ring, *rr = &qp->rq_ring;
	u32 n = 0;

	r->failed = false;
	r->fail_status = 0;
	rr->failed = false;
	rr->fail_status = 0;
	qp->sq_ready = false;
	/*
	 * What an asynchronous receive ring holds unposted was posted as far
	 * as the process knows: it goes with the queue, as a device's
	 * receives do, and does not reach the QP's next connection.  The
	 * tail is read once and checked, as a drain reads it; the slots move
	 * with the ring, so that @retired keeps counting ring entries.
	 */
	if (qp->rq_async) {
		n = READ_ONCE(rr->hdr->tail) - rr->head;
		if (n > rr->nr)
			n = 0;
		WRITE_ONCE(rr->head, rr->head + n);
		rr->stopped = false;
		/* Pairs with kqp_wq_consumed() (lib/ring.h), as a drain's. */
		smp_store_release(&rr->hdr->head, rr->head);
	}
	spin_lock_irq(&qp->lock);
	qp->sq.tail = qp->sq.head;
	if (!qp->srq) {
		qp->rq.head += n;
		qp->rq.tail = qp->rq.head;
	}
	qp->sq_sig_out = 0;
	kqp_sq_commit(qp, false);
	if (r->nr)
		smp_store_release(&r->hdr->retired, qp->sq.tail);
	/* No receive is left to drain the ring after: it is rung again. */
	if (qp->rq_async) {
		kqp_rq_commit(qp, false);
		smp_store_release(&rr->hdr->retired, qp->rq.tail);
	}
	spin_unlock_irq(&qp->lock);
}

/*
 * Fill @cqe from a kernel completion; @report says whether it is to be
 * reported.  Runs in the CQ's poller (a softirq) or a flush, under the
 * CQ's lock.  The handle in the kernel's wr_id names a QP, or for a
 * receive posted to an SRQ, the SRQ.
 */
void kqp_qp_complete(struct kqp_ucontext *uctx, struct ib_wc *wc,
		     struct kqp_cqe *cqe, bool *report)
{
	u32 handle = wc->wr_id >> 32, slot_id = (u32)wc->wr_id;
	bool recv = slot_id & KQP_WRID_RECV;
	struct kqp_wr_slot *slot;
	struct kqp_object *obj;
	struct kqp_qp *qp;
	struct kqp_wq *wq;
	u32 idx, n;

	*report = false;
	rcu_read_lock();
	obj = xa_load(&uctx->objects, handle);
	if (obj && obj->type == KQP_OBJ_SRQ && recv) {
		kqp_srq_complete(container_of(obj, struct kqp_srq, vobj.obj),
				 wc, cqe, report);
		goto out;
	}
	if (!obj || obj->type != KQP_OBJ_QP)
		goto out;
	qp = container_of(obj, struct kqp_qp, vobj.obj);
	spin_lock(&qp->lock);
	wq = recv ? &qp->rq : &qp->sq;
	idx = slot_id & KQP_WRID_SLOT_MASK;
	/* Not outstanding: a stale completion; drop it. */
	if (!wq->slots || ((idx - wq->tail) & KQP_WRID_SLOT_MASK) >=
			  ((wq->head - wq->tail) & KQP_WRID_SLOT_MASK))
		goto unlock;
	slot = &wq->slots[idx & (wq->size - 1)];

	kqp_wc_to_cqe(wc, cqe, slot->wr_id, qp->qp_num,
		      recv ? KQP_WC_OP_RECV : kqp_wc_opcode_of_wr(slot->opcode));
	/* A placeholder for a ring entry the kernel refused (ring.c). */
	if (slot->err_status && wc->status != IB_WC_SUCCESS) {
		cqe->status = slot->err_status;
		cqe->vendor_err = 0;
	}

	/* Completions come in order: everything before it is done too. */
	n = ((idx - wq->tail) & KQP_WRID_SLOT_MASK) + 1;
	if (!recv) {
		kqp_qp_retire_sends(qp, n);
	} else {
		wq->tail += n;
		if (qp->rq_async)
			kqp_rq_retired(qp);
	}
	*report = true;
unlock:
	spin_unlock(&qp->lock);
out:
	rcu_read_unlock();
}

static void kqp_qp_event_handler(struct ib_event *event, void *context)
{
	struct kqp_qp *qp = context;

	/* Pairs with synchronize_rcu() in kqp_qp_hw_abandon(). */
	rcu_read_lock();
	if (!READ_ONCE(qp->abandoned))
		kqp_async_queue_event(qp->uctx, event->event, KQP_ASYNC_QP,
				      qp->vobj.obj.id, qp->uid,
				      &qp->async_reported);
	rcu_read_unlock();
}

/*
 * The device refused to destroy a QP (ib_core does while groups are
 * attached).  The device may still call the handler, with the context
 * it was given: a driver reads the handler and the context apart, so
 * neither may change.  The handler does nothing once @abandoned is set
 * and a call that began before has ended; the QP struct is never freed
 * (kqp_qp_free()), and the module, whose code the device may still call,
 * stays loaded.
 */
static void kqp_qp_hw_abandon(struct kqp_qp *qp, int err)
{
	pr_err_ratelimited("kqp: the device refused to destroy QP %u (%d); left to it\n",
			   qp->qp->qp_num, err);
	WRITE_ONCE(qp->abandoned, true);
	__module_get(THIS_MODULE);
	synchronize_rcu();
}

/*
 * Devices keep a group's members per device, and rxe's attach and detach
 * race each other across QPs: an attach can land in a group a detach on
 * another QP is tearing down, and then neither detach nor destroy can
 * undo it.  kqp's attaches and detaches take turns.  Those of ib_uverbs
 * and of kernel ULPs on the same device do not, and a uverbs user racing
 * a kqp QP's attach to the same group can still leave it undestroyable
 * (an rxe bug, reachable through uverbs alone): kqp_qp_hw_abandon().
 * A leaf lock: taken under hw_rwsem and a QP's mcast_mutex.
 */
static DEFINE_MUTEX(kqp_mcast_hw_mutex);

/**
 * struct kqp_qp_mcast - a multicast group a QP is attached to
 * @list: in qp->mcasts
 * @gid: the group's GID
 * @lid: the group's LID
 */
struct kqp_qp_mcast {
	struct list_head list;
	union ib_gid gid;
	u16 lid;
};

static void kqp_qp_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_qp *qp = container_of(vobj, struct kqp_qp, vobj);
	struct rdma_cm_id *cm_id = qp->cm ? qp->cm->cm_id : NULL;
	struct kqp_qp_mcast *m, *tmp;
	int ret;

	/*
	 * hw_rwsem, held for writing, keeps this QP's attach and detach
	 * out; kqp_mcast_hw_mutex keeps other kqp QPs'.  Each group was
	 * attached once and checked to stay valid (see kqp_qp_mcast()), so
	 * detaching cannot be refused; if the device refuses anyway, the
	 * destroy below says so.
	 */
	mutex_lock(&kqp_mcast_hw_mutex);
	list_for_each_entry_safe(m, tmp, &qp->mcasts, list) {
		ib_detach_mcast(qp->qp, &m->gid, m->lid);
		list_del(&m->list);
		kfree(m);
	}
	mutex_unlock(&kqp_mcast_hw_mutex);
	qp->nr_mcasts = 0;

	/*
	 * Completions from its SRQ stop naming it before its kernel QP goes,
	 * on every path that destroys it (its id's close and device removal
	 * too): until then no other QP can have that address.
	 */
	if (qp->srq)
		kqp_srq_del_qp(qp->srq, qp);

	/*
	 * While the id lives, rdma_cm holds the QP and must let go of it
	 * itself.  The id's close destroys this before the id, under the
	 * same lock, so a live cm_id here is one rdma_cm still uses.
	 */
	/*
	 * No drain runs from here on (hw_rwsem, held for writing, keeps
	 * them out, and they find hw_gone): the process must ring, and
	 * learns from the doorbell that the QP is gone.
	 */
	if (qp->sq_ring.nr) {
		spin_lock_irq(&qp->lock);
		kqp_sq_commit(qp, false);
		spin_unlock_irq(&qp->lock);
	}
	/* Nor does the poller post receives: a receive rings, and learns. */
	if (qp->rq_ring.nr) {
		WRITE_ONCE(qp->rq_polled, false);
		spin_lock_irq(&qp->lock);
		kqp_rq_commit(qp, false);
		spin_unlock_irq(&qp->lock);
	}

	if (cm_id && cm_id->qp == qp->qp) {
		rdma_destroy_qp(cm_id);
	} else {
		ret = ib_destroy_qp(qp->qp);
		if (ret)
			kqp_qp_hw_abandon(qp, ret);
	}
	qp->qp = NULL;
}

static void kqp_qp_free_rcu(struct rcu_head *rcu)
{
	struct kqp_qp *qp = container_of(rcu, struct kqp_qp, rcu);

	kfree(qp->sq.slots);
	kfree(qp->rq.slots);
	/* The device may still hand it to kqp_qp_event_handler(). */
	if (!qp->abandoned)
		kfree(qp);
}

/*
 * Drop the CQs, PD and id a QP used; it is no longer on the device.  CQs
 * made for it are destroyed; @cq_counts (send, receive) gets what was
 * read for them.
 */
static void kqp_qp_release_deps(struct kqp_ucontext *uctx, struct kqp_qp *qp,
				struct kqp_cq_counts *cq_counts)
{
	struct kqp_cq *cqs[2] = { qp->send_cq, qp->recv_cq };
	int i;

	/* A CQ used for both queues was taken twice. */
	for (i = 0; i < 2; i++) {
		if (!cqs[i])
			continue;
		/*
		 * Another QP's automatic CQ is one this QP only used; only
		 * the owner ever clears the field, so it never reads as
		 * this QP if it is not.
		 */
		if (READ_ONCE(cqs[i]->auto_qp) == qp)
			kqp_cq_release_auto(uctx, cqs[i], &cq_counts[i]);
		else
			kqp_cq_put_user(cqs[i]);
	}
	if (qp->srq)
		kqp_srq_put_user(qp->srq);
	if (qp->pd)
		kqp_pd_put_user(qp->pd);
	if (qp->cm)
		kqp_cm_id_mem_put(qp->cm);
}

/*
 * The QP is claimed, or was never published.  Returns how many async
 * events were read for it.
 */
static u32 kqp_qp_free(struct kqp_ucontext *uctx, struct kqp_object *obj,
		       struct kqp_cq_counts *cq_counts)
{
	struct kqp_qp *qp = container_of(obj, struct kqp_qp, vobj.obj);
	struct kqp_cm_id *cm = qp->cm;
	struct kqp_cq_counts dummy[2];
	u32 reported;

	kqp_object_drain(obj);
	if (cm) {
		mutex_lock(&cm->mutex);
		kqp_vobj_destroy_hw(&qp->vobj);
		if (cm->qp == qp)
			cm->qp = NULL;
		mutex_unlock(&cm->mutex);
	} else {
		kqp_vobj_destroy_hw(&qp->vobj);
	}
	/* Work still posted is discarded with the QP. */
	spin_lock_irq(&qp->lock);
	qp->sq.tail = qp->sq.head;
	qp->rq.tail = qp->rq.head;
	spin_unlock_irq(&qp->lock);
	kqp_async_forget(uctx, &qp->async_reported);
	reported = qp->async_reported;
	kqp_qp_release_deps(uctx, qp, cq_counts ? cq_counts : dummy);
	kqp_object_release_id(uctx, obj);
	kqp_device_put(qp->vobj.kdev);
	/* No command uses the rings any more; a mapping keeps its pages. */
	kqp_qp_rings_free(qp);
	/* The slots go after a grace period, which cannot be refused. */
	kqp_queue_uncharge(uctx, &qp->vobj);
	call_rcu(&qp->rcu, kqp_qp_free_rcu);
	return reported;
}

void kqp_qp_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	kqp_qp_free(uctx, obj, NULL);
}

static int kqp_wq_init(struct kqp_wq *wq, u32 depth)
{
	wq->size = roundup_pow_of_two(max(depth, 1U));
	wq->slots = kcalloc(wq->size, sizeof(*wq->slots),
			    GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	return wq->slots ? 0 : -ENOMEM;
}

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
 */
struct kqp_uscope {
	struct kqp_core_scope scope;
	struct kqp_ucontext *uctx;
	struct kqp_uscope_cq send;
	struct kqp_uscope_cq recv;
};

static struct ib_pd *kqp_uscope_get_default_pd(struct kqp_core_scope *scope,
					       struct kqp_device *kdev,
					       void **token)
{
	struct kqp_uscope *us = container_of(scope, struct kqp_uscope, scope);
	struct kqp_pd *pd = kqp_pd_get_default_locked(us->uctx, kdev);

	if (IS_ERR(pd))
		return ERR_CAST(pd);
	*token = pd;
	return pd->pd;
}

static void kqp_uscope_put_default_pd(struct kqp_core_scope *scope,
				      void *token)
{
	kqp_pd_put_user(token);
}

/* A ring CQ with a completion channel of its own, as librdmacm makes. */
static struct ib_cq *kqp_uscope_alloc_cq(struct kqp_core_scope *scope,
					 struct kqp_device *kdev, u32 cqe,
					 bool send, void **token)
{
	struct kqp_uscope *us = container_of(scope, struct kqp_uscope, scope);
	struct kqp_uscope_cq *q = send ? &us->send : &us->recv;
	struct kqp_channel *chan;
	struct kqp_cq *cq;

	chan = kqp_channel_make_fd(&q->fd, &q->filp);
	if (IS_ERR(chan))
		return ERR_CAST(chan);
	kref_get(&chan->ref);
	cq = kqp_cq_create_locked(us->uctx, kdev, cqe, 0, chan, q->uid);
	if (IS_ERR(cq)) {
		kqp_channel_put(chan);
		kqp_channel_unmake_fd(q->fd, q->filp);
		q->fd = -1;
		return ERR_CAST(cq);
	}
	cq->users = 1;
	q->cq = cq;
	*token = cq;
	return cq->cq;
}

/* Undo kqp_uscope_alloc_cq(): the CQ was never published. */
static void kqp_uscope_cq_abort(struct kqp_ucontext *uctx,
				struct kqp_uscope_cq *q)
{
	kqp_object_abort(uctx, &q->cq->vobj.obj);
	kqp_channel_unmake_fd(q->fd, q->filp);
	q->cq = NULL;
	q->fd = -1;
}

static void kqp_uscope_free_cq(struct kqp_core_scope *scope, void *token)
{
	struct kqp_uscope *us = container_of(scope, struct kqp_uscope, scope);

	kqp_uscope_cq_abort(us->uctx, us->send.cq == token ? &us->send :
							     &us->recv);
}

static const struct kqp_core_scope_ops kqp_uscope_ops = {
	.get_default_pd = kqp_uscope_get_default_pd,
	.put_default_pd = kqp_uscope_put_default_pd,
	.alloc_cq = kqp_uscope_alloc_cq,
	.free_cq = kqp_uscope_free_cq,
};

/* A QP struct for CREATE_QP, reserved in the table. */
static struct kqp_qp *kqp_qp_alloc(struct kqp_ucontext *uctx,
				   const struct kqp_create_qp *cmd)
{
	struct kqp_qp *qp;
	int ret;

	qp = kzalloc(sizeof(*qp), GFP_KERNEL_ACCOUNT);
	if (!qp)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&qp->lock);
	mutex_init(&qp->sq_mutex);
	INIT_WORK(&qp->drain_work, kqp_qp_drain_work);
	mutex_init(&qp->rq_mutex);
	mutex_init(&qp->mcast_mutex);
	INIT_LIST_HEAD(&qp->mcasts);
	qp->uctx = uctx;
	qp->uid = cmd->uid;
	qp->qp_type = cmd->qp_type == KQP_QPT_RC ? IB_QPT_RC : IB_QPT_UD;
	qp->sq_sig_all = cmd->flags & KQP_CREATE_QP_SQ_SIG_ALL;
	ret = kqp_object_reserve(uctx, &qp->vobj.obj, KQP_OBJ_QP);
	if (ret) {
		kfree(qp);
		return ERR_PTR(ret);
	}
	return qp;
}

/*
 * Take a user reference on the PD, CQs and SRQ the caller named.  On
 * failure what was taken is in @qp, for kqp_qp_release_deps().
 */
static int kqp_qp_take_deps(struct kqp_ucontext *uctx, struct kqp_qp *qp,
			    const struct kqp_create_qp *cmd)
{
	struct kqp_srq *srq;
	struct kqp_pd *pd;
	struct kqp_cq *cq;

	if (cmd->pd) {
		pd = kqp_pd_take(uctx, cmd->pd);
		if (IS_ERR(pd))
			return PTR_ERR(pd);
		qp->pd = pd;
	}
	if (cmd->send_cq) {
		cq = kqp_cq_take(uctx, cmd->send_cq);
		if (IS_ERR(cq))
			return PTR_ERR(cq);
		qp->send_cq = cq;
	}
	if (cmd->recv_cq) {
		cq = kqp_cq_take(uctx, cmd->recv_cq);
		if (IS_ERR(cq))
			return PTR_ERR(cq);
		qp->recv_cq = cq;
	}
	if (cmd->srq) {
		srq = kqp_srq_take(uctx, cmd->srq);
		if (IS_ERR(srq))
			return PTR_ERR(srq);
		qp->srq = srq;
	}
	return 0;
}

/* Are the PD, CQs and SRQ the QP has so far all on @kdev? */
static bool kqp_qp_deps_on(struct kqp_qp *qp, struct kqp_device *kdev)
{
	return (!qp->pd || qp->pd->vobj.kdev == kdev) &&
	       (!qp->send_cq || qp->send_cq->vobj.kdev == kdev) &&
	       (!qp->recv_cq || qp->recv_cq->vobj.kdev == kdev) &&
	       (!qp->srq || qp->srq->vobj.kdev == kdev);
}

/* Did the hardware of any of them go?  Under their device's hw_rwsem. */
static bool kqp_qp_deps_gone(struct kqp_qp *qp)
{
	return (qp->pd && qp->pd->vobj.hw_gone) ||
	       (qp->send_cq && qp->send_cq->vobj.hw_gone) ||
	       (qp->recv_cq && qp->recv_cq->vobj.hw_gone) ||
	       (qp->srq && qp->srq->vobj.hw_gone);
}

/*
 * The device the QP goes on, referenced: the id's, or for a QP without
 * one (ibv_create_qp(), where the caller names everything) its PD's.
 * With an id, returns with it in *@cmp, held and locked; on failure
 * nothing is held.
 */
static struct kqp_device *kqp_qp_resolve_dev(struct kqp_ucmd *ucmd,
					     struct kqp_qp *qp, u32 id,
					     struct kqp_cm_id **cmp)
{
	struct kqp_cm_id *cm = NULL;
	struct kqp_device *kdev;
	int ret;

	if (id) {
		cm = kqp_cm_id_lock(ucmd, id);
		if (IS_ERR(cm))
			return ERR_CAST(cm);
		/* One QP per id. */
		ret = cm->qp ? -EINVAL : kqp_cm_id_check_bound(cm);
		if (ret)
			goto err_cm;
		kdev = kqp_device_of(cm->cm_id->device);
		if (!kdev) {
			ret = -ENODEV;
			goto err_cm;
		}
	} else {
		if (!qp->pd || !qp->send_cq || !qp->recv_cq)
			return ERR_PTR(-EINVAL);
		kdev = qp->pd->vobj.kdev;
		kref_get(&kdev->ref);
	}
	if (!kqp_qp_deps_on(qp, kdev)) {
		ret = -EINVAL;
		goto err_kdev;
	}
	*cmp = cm;
	return kdev;

err_kdev:
	kqp_device_put(kdev);
err_cm:
	if (cm)
		kqp_cm_id_unlock(cm);
	return ERR_PTR(ret);
}

/*
 * What a QP is charged against max_queue_bytes before the device makes
 * it: the capabilities asked for.  A request past the device's limits is
 * not charged here: the device refuses it with EINVAL, as with uverbs,
 * and one it takes anyway is charged once it has said what it gave.  The
 * device has no limit on inline data to read; past
 * KQP_QP_INLINE_PRECHARGE it is charged after creation too.
 */
#define KQP_QP_INLINE_PRECHARGE	SZ_64K

static u64 kqp_qp_precharge(struct ib_device *dev,
			    const struct ib_qp_cap *want, bool srq)
{
	u32 max_wr = max(dev->attrs.max_qp_wr, 0);
	struct ib_qp_cap cap = *want;

	if (cap.max_send_wr > max_wr ||
	    cap.max_send_sge > (u32)max(dev->attrs.max_send_sge, 0) ||
	    (!srq && (cap.max_recv_wr > max_wr ||
		      cap.max_recv_sge > (u32)max(dev->attrs.max_recv_sge, 0))))
		return 0;
	cap.max_inline_data = min_t(u32, cap.max_inline_data,
				    KQP_QP_INLINE_PRECHARGE);
	return kqp_qp_queue_bytes(&cap, srq);
}

/*
 * Create the QP on @kdev: through the core on an id, which makes what the
 * caller did not name, or directly.  The QP takes over the reference on
 * @kdev; on failure it is dropped.
 */
static int kqp_qp_create_hw(struct kqp_uscope *us, struct kqp_qp *qp,
			    struct kqp_cm_id *cm, struct kqp_device *kdev,
			    struct ib_qp_init_attr *attr)
{
	struct kqp_core_qp res = {};
	struct ib_qp *ibqp;
	int ret;

	down_read(&kdev->hw_rwsem);
	if (kdev->dead || kqp_qp_deps_gone(qp)) {
		ret = -ENXIO;
		goto err_hw;
	}
	/* Within max_queue_bytes before the device allocates anything. */
	ret = kqp_queue_charge(us->uctx, &qp->vobj,
			       kqp_qp_precharge(kdev->ibdev, &attr->cap,
						qp->srq),
			       false);
	if (ret)
		goto err_hw;
	ret = kqp_vobj_charge(&qp->vobj, us->uctx, kdev);
	if (ret)
		goto err_queue;
	if (cm) {
		/* UD: not bound into the id, so that it can join groups. */
		ret = kqp_core_create_qp(&us->scope, cm->cm_id,
					 qp->pd ? qp->pd->pd : NULL, attr,
					 &res, qp->qp_type == IB_QPT_UD, &ibqp);
		if (ret) {
			kqp_vobj_uncharge(&qp->vobj);
			kqp_queue_uncharge(us->uctx, &qp->vobj);
			up_read(&kdev->hw_rwsem);
			kqp_core_release(&us->scope, &res);
			goto err_kdev;
		}
		/* The core's default PD and CQs are this QP's now. */
		if (res.pd_token)
			qp->pd = res.pd_token;
		if (res.send_cq_token) {
			qp->send_cq = res.send_cq_token;
			qp->send_cq->auto_qp = qp;
		}
		if (res.recv_cq_token) {
			qp->recv_cq = res.recv_cq_token;
			qp->recv_cq->auto_qp = qp;
		}
	} else {
		ibqp = ib_create_qp(qp->pd->pd, attr);
		if (IS_ERR(ibqp)) {
			ret = PTR_ERR(ibqp);
			goto err_vobj;
		}
	}
	qp->qp = ibqp;
	qp->qp_num = ibqp->qp_num;
	qp->cap = attr->cap;
	if (qp->srq)
		qp->srq_ibqp = ibqp;
	/*
	 * The id before the device list: once the device's removal can
	 * find the QP, it must see whether rdma_cm holds it, or it would
	 * ib_destroy_qp() a QP the id still points at.
	 */
	if (cm) {
		qp->cm = cm;
		kref_get(&cm->mem_ref);
	}
	kqp_vobj_init(&qp->vobj, kdev, kqp_qp_destroy_hw);
	up_read(&kdev->hw_rwsem);
	return 0;

err_vobj:
	kqp_vobj_uncharge(&qp->vobj);
err_queue:
	kqp_queue_uncharge(us->uctx, &qp->vobj);
err_hw:
	up_read(&kdev->hw_rwsem);
err_kdev:
	kqp_device_put(kdev);
	return ret;
}

static void kqp_qp_cap_to_user(struct kqp_qp_cap *dst, const struct ib_qp_cap *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->max_send_wr = src->max_send_wr;
	dst->max_recv_wr = src->max_recv_wr;
	dst->max_send_sge = src->max_send_sge;
	dst->max_recv_sge = src->max_recv_sge;
	dst->max_inline_data = src->max_inline_data;
}

static void kqp_uscope_cq_to_user(const struct kqp_uscope_cq *q, s32 *fd,
				  u32 *cqe, struct kqp_ring_info *ring)
{
	*fd = q->fd;
	*cqe = q->cq ? q->cq->cqe : 0;
	if (q->cq)
		kqp_cq_fill_ring_info(q->cq, ring);
	else
		memset(ring, 0, sizeof(*ring));
}

/* CREATE_QP's answer, written with the id's mutex held (if any). */
static int kqp_create_qp_respond(struct kqp_ucmd *ucmd, struct kqp_qp *qp,
				 const struct kqp_uscope *us)
{
	struct kqp_create_qp *cmd = ucmd->cmd;

	kqp_qp_cap_to_user(&cmd->cap, &qp->cap);
	/* Zero without rings: this answer's, not the caller's bytes. */
	kqp_qp_rings_to_user(qp, &cmd->out_rings);
	cmd->out_qp = qp->vobj.obj.id;
	cmd->out_qp_num = qp->qp_num;
	cmd->out_pd = qp->pd->vobj.obj.id;
	cmd->out_send_cq = qp->send_cq->vobj.obj.id;
	cmd->out_recv_cq = qp->recv_cq->vobj.obj.id;
	kqp_uscope_cq_to_user(&us->send, &cmd->out_send_channel_fd,
			      &cmd->out_send_cqe, &cmd->out_send_ring);
	kqp_uscope_cq_to_user(&us->recv, &cmd->out_recv_channel_fd,
			      &cmd->out_recv_cqe, &cmd->out_recv_ring);
	return kqp_ucmd_respond_locked(ucmd, sizeof(*cmd));
}

/* The CQs made for the QP, then the QP: nothing can fail any more. */
static void kqp_create_qp_publish(struct kqp_uscope *us, struct kqp_qp *qp,
				  struct kqp_cm_id *cm)
{
	struct kqp_uscope_cq *qs[] = { &us->send, &us->recv };
	int i;

	for (i = 0; i < ARRAY_SIZE(qs); i++) {
		if (!qs[i]->cq)
			continue;
		kqp_object_publish(us->uctx, &qs[i]->cq->vobj.obj);
		fd_install(qs[i]->fd, qs[i]->filp);
	}
	kqp_object_publish(us->uctx, &qp->vobj.obj);
	/* For the poller; only while the entry is still this QP's. */
	if (qp->ring_mem && qp->qp_type == IB_QPT_RC) {
		struct xarray *xa = &us->uctx->objects;

		xa_lock(xa);
		if (xa_load(xa, qp->vobj.obj.id) == &qp->vobj.obj)
			__xa_set_mark(xa, qp->vobj.obj.id, KQP_OBJ_MARK_RINGS);
		xa_unlock(xa);
	}
	if (cm) {
		cm->qp = qp;
		kqp_cm_id_unlock(cm);
	}
}

/*
 * Undo a QP that was made but never published, and the CQs made for it:
 * nobody was told their handles, and the fds were never installed.  The
 * QP goes first, as it uses the CQs.
 */
static void kqp_create_qp_abort(struct kqp_uscope *us, struct kqp_qp *qp,
				struct kqp_cm_id *cm)
{
	if (cm)
		mutex_unlock(&cm->mutex);
	if (us->send.cq)
		qp->send_cq = NULL;
	if (us->recv.cq)
		qp->recv_cq = NULL;
	kqp_object_abort(us->uctx, &qp->vobj.obj);
	if (us->send.cq)
		kqp_uscope_cq_abort(us->uctx, &us->send);
	if (us->recv.cq)
		kqp_uscope_cq_abort(us->uctx, &us->recv);
	if (cm)
		kqp_cm_id_put(cm);
}

/*
 * rdma_create_qp(3) on an id, or ibv_create_qp(): resolve the PD, CQs and
 * id the caller named, create the QP, answer, then publish.
 */
int kqp_create_qp_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_qp *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_uscope us = {
		.scope.ops = &kqp_uscope_ops,
		.uctx = uctx,
		.send = { .uid = cmd->send_cq_uid, .fd = -1 },
		.recv = { .uid = cmd->recv_cq_uid, .fd = -1 },
	};
	struct ib_qp_init_attr attr = {};
	struct kqp_cm_id *cm = NULL;
	struct kqp_device *kdev;
	struct kqp_qp *qp;
	struct kqp_cq_counts unused[2];
	int ret;

	if (cmd->__reserved2 || cmd->cap.__reserved || cmd->out_rings.flags)
		return -EOPNOTSUPP;
	if (cmd->qp_type != KQP_QPT_RC && cmd->qp_type != KQP_QPT_UD)
		return -EINVAL;
	/* The rings' answer must have somewhere to go. */
	if ((cmd->flags & KQP_CREATE_QP_RINGS) &&
	    ucmd->user_size < offsetofend(struct kqp_create_qp, out_rings))
		return -EINVAL;
	qp = kqp_qp_alloc(uctx, cmd);
	if (IS_ERR(qp))
		return PTR_ERR(qp);

	attr.qp_type = qp->qp_type;
	attr.sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	attr.cap.max_send_wr = cmd->cap.max_send_wr;
	attr.cap.max_recv_wr = cmd->cap.max_recv_wr;
	attr.cap.max_send_sge = cmd->cap.max_send_sge;
	attr.cap.max_recv_sge = cmd->cap.max_recv_sge;
	attr.cap.max_inline_data = cmd->cap.max_inline_data;
	attr.event_handler = kqp_qp_event_handler;
	attr.qp_context = qp;

	ret = kqp_qp_take_deps(uctx, qp, cmd);
	if (ret)
		goto err_deps;
	kdev = kqp_qp_resolve_dev(ucmd, qp, cmd->id, &cm);
	if (IS_ERR(kdev)) {
		ret = PTR_ERR(kdev);
		goto err_deps;
	}
	if (qp->send_cq)
		attr.send_cq = qp->send_cq->cq;
	if (qp->recv_cq)
		attr.recv_cq = qp->recv_cq->cq;
	if (qp->srq)
		attr.srq = qp->srq->srq;
	ret = kqp_qp_create_hw(&us, qp, cm, kdev, &attr);
	if (ret)
		goto err_cm;

	/*
	 * With an SRQ the receive caps are the caller's, unchecked (rxe
	 * leaves them as given): the QP has no receive queue of its own.
	 */
	ret = qp->srq ? kqp_srq_add_qp(qp->srq, qp) : 0;
	/* A device that gave more than asked is charged what it made. */
	if (!ret)
		ret = kqp_queue_charge(uctx, &qp->vobj,
				       max(qp->vobj.queue_bytes,
					   kqp_qp_queue_bytes(&qp->cap,
							      qp->srq)),
				       false);
	if (!ret)
		ret = kqp_wq_init(&qp->sq, qp->cap.max_send_wr);
	if (!ret)
		ret = kqp_wq_init(&qp->rq, qp->srq ? 0 : qp->cap.max_recv_wr);
	/* Without them (memory, max_queue_bytes) it posts with the ioctls. */
	if (!ret && (cmd->flags & KQP_CREATE_QP_RINGS))
		kqp_qp_rings_init(qp, cmd->flags & KQP_CREATE_QP_RECV_ASYNC,
				  cmd->cap.max_recv_wr);
	if (!ret)
		ret = kqp_create_qp_respond(ucmd, qp, &us);
	if (ret) {
		kqp_create_qp_abort(&us, qp, cm);
		return ret;
	}
	kqp_create_qp_publish(&us, qp, cm);
	return 0;

err_cm:
	if (cm)
		kqp_cm_id_unlock(cm);
err_deps:
	kqp_qp_release_deps(uctx, qp, unused);
	kqp_object_release_id(uctx, &qp->vobj.obj);
	kfree(qp);
	return ret;
}

int kqp_destroy_qp_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_destroy_qp *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_object *obj;
	struct kqp_cq_counts cq_counts[2] = {};

	if (cmd->__reserved)
		return -EOPNOTSUPP;
	obj = kqp_object_claim_id(uctx, cmd->qp, KQP_OBJ_QP);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	cmd->out_events_reported = kqp_qp_free(uctx, obj, cq_counts);
	cmd->out_send_cq_events = cq_counts[0].comp;
	cmd->out_recv_cq_events = cq_counts[1].comp;
	cmd->out_send_cq_async_events = cq_counts[0].async;
	cmd->out_recv_cq_async_events = cq_counts[1].async;
	cmd->out_flags = (cq_counts[0].kept ? KQP_DESTROY_QP_SEND_CQ_KEPT : 0) |
			 (cq_counts[1].kept ? KQP_DESTROY_QP_RECV_CQ_KEPT : 0);
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/* Look up a QP and hold its device's hardware for a command. */
struct kqp_qp *kqp_qp_get_hw(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_object *obj;
	struct kqp_qp *qp;

	obj = kqp_object_get(uctx, handle, KQP_OBJ_QP);
	if (IS_ERR(obj))
		return ERR_CAST(obj);
	qp = container_of(obj, struct kqp_qp, vobj.obj);
	down_read(&qp->vobj.kdev->hw_rwsem);
	if (qp->vobj.hw_gone) {
		up_read(&qp->vobj.kdev->hw_rwsem);
		kqp_object_put(obj);
		return ERR_PTR(-ENXIO);
	}
	return qp;
}

void kqp_qp_put_hw(struct kqp_qp *qp)
{
	up_read(&qp->vobj.kdev->hw_rwsem);
	kqp_object_put(&qp->vobj.obj);
}

/*
 * mmap of a QP's rings: the offset names the QP, the rules are a CQ
 * ring's (kqp_vmalloc_mmap()).  ENOENT when the handle is no QP's.
 */
int kqp_qp_mmap(struct kqp_ucontext *uctx, struct vm_area_struct *vma)
{
	struct kqp_object *obj;
	struct kqp_qp *qp;
	int ret;

	obj = kqp_object_get(uctx, vma->vm_pgoff, KQP_OBJ_QP);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	qp = container_of(obj, struct kqp_qp, vobj.obj);
	/* Set before the QP was published, never changed until its free. */
	ret = qp->ring_vmem ? kqp_vmem_mmap(qp->ring_vmem, vma) : -EINVAL;
	kqp_object_put(obj);
	return ret;
}

/* The standard attribute bits, as enum ibv_qp_attr_mask; no resizing. */
#define KQP_QP_ATTR_MASK	(((IB_QP_DEST_QPN << 1) - 1) & ~IB_QP_CAP)

/*
 * Ports are checked before ib_modify_qp(): ib_core indexes its per-port
 * array with them before the driver could refuse.  As ib_uverbs: a
 * primary AV's port is the QP's in INIT to RTR, when the port cannot be
 * given; elsewhere (SQD to SQD) it is the port given, or becomes the
 * QP's.  An alternate path's port is its AV's.
 */
static int kqp_modify_qp_check_ports(struct kqp_qp *qp, struct kqp_qp_attr *u,
				     u32 *mask)
{
	struct ib_device *dev = qp->qp->device;

	if ((*mask & IB_QP_PORT) && !rdma_is_port_valid(dev, u->port_num))
		return -EINVAL;
	if (*mask & IB_QP_AV) {
		if (!rdma_is_port_valid(dev, u->ah_attr.port_num))
			return -EINVAL;
		if ((*mask & IB_QP_STATE) && u->qp_state == IB_QPS_RTR) {
			if (u->ah_attr.port_num != qp->qp->port)
				return -EINVAL;
		} else if (*mask & IB_QP_PORT) {
			if (u->port_num != u->ah_attr.port_num)
				return -EINVAL;
		} else {
			*mask |= IB_QP_PORT;
			u->port_num = u->ah_attr.port_num;
		}
	}
	if ((*mask & IB_QP_ALT_PATH) &&
	    (!rdma_is_port_valid(dev, u->alt_port_num) ||
	     u->alt_port_num != u->alt_ah_attr.port_num))
		return -EINVAL;
	return 0;
}

/*
 * The caller's attributes as ib_qp_attr, for the attributes @mask names
 * that are addresses; the others are copied whatever @mask says.
 */
static int kqp_qp_attr_from_user(struct kqp_qp *qp, const struct kqp_qp_attr *u,
				 u32 mask, struct ib_qp_attr *attr)
{
	struct ib_device *dev = qp->qp->device;
	struct ib_ah *ah;
	int ret;

	attr->qp_state = u->qp_state;
	attr->cur_qp_state = u->cur_qp_state;
	attr->path_mtu = u->path_mtu;
	attr->path_mig_state = u->path_mig_state;
	attr->qkey = u->qkey;
	attr->rq_psn = u->rq_psn;
	attr->sq_psn = u->sq_psn;
	attr->dest_qp_num = u->dest_qp_num;
	attr->qp_access_flags = u->qp_access_flags;
	attr->pkey_index = u->pkey_index;
	attr->alt_pkey_index = u->alt_pkey_index;
	attr->en_sqd_async_notify = u->en_sqd_async_notify;
	attr->max_rd_atomic = u->max_rd_atomic;
	attr->max_dest_rd_atomic = u->max_dest_rd_atomic;
	attr->min_rnr_timer = u->min_rnr_timer;
	attr->port_num = u->port_num;
	attr->timeout = u->timeout;
	attr->retry_cnt = u->retry_cnt;
	attr->rnr_retry = u->rnr_retry;
	attr->alt_port_num = u->alt_port_num;
	attr->alt_timeout = u->alt_timeout;
	if (mask & IB_QP_ALT_PATH) {
		ret = kqp_ah_attr_from_user(dev, &u->alt_ah_attr,
					    &attr->alt_ah_attr);
		if (ret)
			return ret;
	}
	if (!(mask & IB_QP_AV))
		return 0;
	ret = kqp_ah_attr_from_user(dev, &u->ah_attr, &attr->ah_attr);
	if (ret)
		return ret;
	/*
	 * Kernel callers hand ib_modify_qp() resolved RoCE addresses; the
	 * caller's has a GID only.  Creating an AH resolves the peer's MAC
	 * address into the attributes, as the user verbs path does.
	 */
	if (attr->ah_attr.type == RDMA_AH_ATTR_TYPE_ROCE) {
		ah = rdma_create_user_ah(qp->pd->pd, &attr->ah_attr, NULL);
		if (IS_ERR(ah))
			return PTR_ERR(ah);
		rdma_destroy_ah(ah, RDMA_DESTROY_AH_SLEEPABLE);
	}
	return 0;
}

int kqp_modify_qp_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_modify_qp *cmd = ucmd->cmd;
	struct kqp_qp_attr *u = &cmd->attr;
	struct ib_qp_attr attr = {};
	u32 mask = cmd->attr_mask;
	struct kqp_qp *qp;
	int ret;

	if (u->__reserved)
		return -EOPNOTSUPP;
	if (mask & ~KQP_QP_ATTR_MASK)
		return -EOPNOTSUPP;
	if (((mask & IB_QP_STATE) && u->qp_state > IB_QPS_ERR) ||
	    ((mask & IB_QP_CUR_STATE) && u->cur_qp_state > IB_QPS_ERR))
		return -EINVAL;
	/*
	 * A Q_Key with the high bit set is privileged (IBA 10.2.4): only a
	 * caller that could send raw packets may give one to its QP, as
	 * ib_uverbs requires.
	 */
	if ((mask & IB_QP_QKEY) && (u->qkey & 0x80000000) &&
	    !capable(CAP_NET_RAW))
		return -EPERM;
	qp = kqp_qp_get_hw(ucmd->uctx, cmd->qp);
	if (IS_ERR(qp))
		return PTR_ERR(qp);

	ret = kqp_modify_qp_check_ports(qp, u, &mask);
	if (ret)
		goto out;
	/*
	 * rdma_cm moves a QP on an id from state to state; the caller may
	 * break it (into ERR) and change what its current state allows
	 * (RTS to RTS, say), as librdmacm's users do.
	 */
	if (qp->cm && (mask & IB_QP_STATE) && u->qp_state != IB_QPS_ERR) {
		struct ib_qp_init_attr init;
		struct ib_qp_attr cur;

		ret = ib_query_qp(qp->qp, &cur, IB_QP_STATE, &init);
		if (!ret && cur.qp_state != u->qp_state)
			ret = -EINVAL;
		if (ret)
			goto out;
	}
	ret = kqp_qp_attr_from_user(qp, u, mask, &attr);
	if (ret)
		goto out;
	if ((mask & IB_QP_STATE) && attr.qp_state == IB_QPS_RESET) {
		/* With the rings' drains out (kqp_qp_reset()). */
		mutex_lock(&qp->sq_mutex);
		mutex_lock(&qp->rq_mutex);
		ret = ib_modify_qp(qp->qp, &attr, mask);
		if (!ret)
			kqp_qp_reset(qp);
		mutex_unlock(&qp->rq_mutex);
		mutex_unlock(&qp->sq_mutex);
	} else {
		ret = ib_modify_qp(qp->qp, &attr, mask);
	}
out:
	kqp_qp_put_hw(qp);
	return ret;
}

void kqp_qp_attr_to_user(struct ib_device *ibdev, struct kqp_qp_attr *dst,
			 struct ib_qp_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->qp_state = src->qp_state;
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
	kqp_ah_attr_to_user(ibdev, &dst->ah_attr, &src->ah_attr);
	kqp_ah_attr_to_user(ibdev, &dst->alt_ah_attr, &src->alt_ah_attr);
}

int kqp_query_qp_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query_qp *cmd = ucmd->cmd;
	struct kqp_qp_attr *u = &cmd->out_attr;
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr attr = {};
	struct kqp_qp *qp;
	int ret;

	if (cmd->attr_mask & ~(KQP_QP_ATTR_MASK | IB_QP_CAP))
		return -EOPNOTSUPP;
	qp = kqp_qp_get_hw(ucmd->uctx, cmd->qp);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	ret = ib_query_qp(qp->qp, &attr, cmd->attr_mask, &init);
	if (ret)
		goto out;

	kqp_qp_attr_to_user(qp->qp->device, u, &attr);
	kqp_qp_cap_to_user(&cmd->out_cap, &qp->cap);
	if (qp->srq) {
		cmd->out_cap.max_recv_wr = 0;
		cmd->out_cap.max_recv_sge = 0;
	}
	cmd->out_qp_type = qp->qp_type == IB_QPT_RC ? KQP_QPT_RC : KQP_QPT_UD;
	cmd->out_sq_sig_all = qp->sq_sig_all;
out:
	kqp_qp_put_hw(qp);
	/* Not under hw_rwsem: device removal would wait on the copy. */
	return ret ? ret : kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/* The caller's list of work requests, copied once. */
void *kqp_post_copy(struct kqp_post *cmd)
{
	void *buf;

	if (!cmd->count || !cmd->wrs_len || cmd->wrs_len > KQP_POST_MAX_BYTES)
		return ERR_PTR(-EINVAL);
	buf = kvmalloc(cmd->wrs_len, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(buf, u64_to_user_ptr(cmd->wrs), cmd->wrs_len)) {
		kvfree(buf);
		return ERR_PTR(-EFAULT);
	}
	return buf;
}

/*
 * Check an SGE list (already in kernel memory) against a PD (the QP's, or
 * the SRQ's) and convert it.  @access is what the device will do with the
 * memory.
 */
static int kqp_post_sges(struct kqp_pd *pd, const struct kqp_sge *usge,
			 u32 num, struct ib_sge *ksge, int access)
{
	u32 i;
	int ret;

	for (i = 0; i < num; i++) {
		ret = kqp_mr_check_sge(pd, usge[i].addr, usge[i].length,
				       usge[i].lkey, access);
		if (ret)
			return ret;
		ksge[i].addr = usge[i].addr;
		ksge[i].length = usge[i].length;
		ksge[i].lkey = usge[i].lkey;
	}
	return 0;
}

/*
 * The part of a send request that depends on the QP's type and the
 * opcode: a UD request's AH (a reference in *@ahp, which the caller puts
 * once the request was posted or failed), an atomic's or an RDMA
 * request's remote memory.
 */
static int kqp_build_send_remote(struct kqp_qp *qp, struct kqp_object **ahp,
				 const struct kqp_send_wr *hdr,
				 union kqp_kwr *kwr)
{
	bool inl = hdr->send_flags & KQP_SEND_FLAG_INLINE;
	struct ib_send_wr *wr = &kwr->send;

	if (qp->qp_type == IB_QPT_UD) {
		struct kqp_object *obj;
		struct kqp_ah *ah;

		/* A UD QP sends, with or without immediate data, and only. */
		if (wr->opcode != IB_WR_SEND &&
		    wr->opcode != IB_WR_SEND_WITH_IMM)
			return -EINVAL;
		if (hdr->wr.ud.__reserved)
			return -EOPNOTSUPP;
		obj = kqp_object_get(qp->uctx, hdr->wr.ud.ah, KQP_OBJ_AH);
		if (IS_ERR(obj))
			return PTR_ERR(obj) == -ENOENT ? -EINVAL : PTR_ERR(obj);
		*ahp = obj;
		ah = container_of(obj, struct kqp_ah, vobj.obj);
		if (ah->pd != qp->pd || ah->vobj.hw_gone)
			return -EINVAL;
		kwr->ud.ah = ah->ah;
		kwr->ud.remote_qpn = hdr->wr.ud.remote_qpn & 0xffffff;
		kwr->ud.remote_qkey = hdr->wr.ud.remote_qkey;
	} else if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		if (hdr->wr.atomic.__reserved)
			return -EOPNOTSUPP;
		/* Atomics work on one 8-byte operand. */
		if (inl || hdr->num_sge != 1 ||
		    ((const struct kqp_sge *)(hdr + 1))->length != 8)
			return -EINVAL;
		kwr->atomic.remote_addr = hdr->wr.atomic.remote_addr;
		kwr->atomic.compare_add = hdr->wr.atomic.compare_add;
		kwr->atomic.swap = hdr->wr.atomic.swap;
		kwr->atomic.rkey = hdr->wr.atomic.rkey;
	} else if (wr->opcode != IB_WR_SEND &&
		   wr->opcode != IB_WR_SEND_WITH_IMM) {
		if (hdr->wr.rdma.__reserved)
			return -EOPNOTSUPP;
		if (inl && wr->opcode == IB_WR_RDMA_READ)
			return -EINVAL;
		kwr->rdma.remote_addr = hdr->wr.rdma.remote_addr;
		kwr->rdma.rkey = hdr->wr.rdma.rkey;
	}
	return 0;
}

/*
 * Build one send request from @p (in a kernel copy: a list's, or a ring
 * entry's), checking it against the QP's type and capabilities and the
 * caller's MRs.  @len is what is left of the copy; returns the request's
 * size in it, and its opcode in *@opcode.  A UD request's AH reference
 * goes to *@ah, which must be NULL, on failure too.  Inline data stays in
 * the copy, which must outlive the post.
 */
long kqp_build_send(struct kqp_qp *qp, struct kqp_object **ah,
		    const void *p, size_t len, union kqp_kwr *kwr,
		    struct ib_sge *ksge, u32 *opcode)
{
	const struct kqp_send_wr *hdr = p;
	const unsigned int allowed = KQP_SEND_FLAG_FENCE | KQP_SEND_FLAG_SIGNALED |
				     KQP_SEND_FLAG_SOLICITED | KQP_SEND_FLAG_INLINE;
	struct ib_send_wr *wr = &kwr->send;
	bool inl;
	size_t need;
	int access = 0, ret;

	/* Nothing of the request is read before it is known to be there. */
	if (len < sizeof(*hdr))
		return -EINVAL;
	if (hdr->__reserved)
		return -EOPNOTSUPP;
	if (hdr->send_flags & ~allowed)
		return -EINVAL;
	inl = hdr->send_flags & KQP_SEND_FLAG_INLINE;
	if (inl) {
		if (hdr->num_sge || hdr->inline_len > qp->cap.max_inline_data)
			return -EINVAL;
		need = sizeof(*hdr) + ALIGN(hdr->inline_len, 8);
	} else {
		if (hdr->inline_len || hdr->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		need = sizeof(*hdr) + hdr->num_sge * sizeof(struct kqp_sge);
	}
	if (need > len)
		return -EINVAL;

	memset(kwr, 0, sizeof(*kwr));
	switch (hdr->opcode) {
	case KQP_WR_OP_SEND:
		wr->opcode = IB_WR_SEND;
		break;
	case KQP_WR_OP_SEND_WITH_IMM:
		wr->opcode = IB_WR_SEND_WITH_IMM;
		break;
	case KQP_WR_OP_RDMA_WRITE:
		wr->opcode = IB_WR_RDMA_WRITE;
		break;
	case KQP_WR_OP_RDMA_WRITE_WITH_IMM:
		wr->opcode = IB_WR_RDMA_WRITE_WITH_IMM;
		break;
	case KQP_WR_OP_RDMA_READ:
		wr->opcode = IB_WR_RDMA_READ;
		access = IB_ACCESS_LOCAL_WRITE;
		break;
	case KQP_WR_OP_ATOMIC_CMP_AND_SWP:
		wr->opcode = IB_WR_ATOMIC_CMP_AND_SWP;
		access = IB_ACCESS_LOCAL_WRITE;
		break;
	case KQP_WR_OP_ATOMIC_FETCH_AND_ADD:
		wr->opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
		access = IB_ACCESS_LOCAL_WRITE;
		break;
	default:
		return -EINVAL;
	}

	ret = kqp_build_send_remote(qp, ah, hdr, kwr);
	if (ret)
		return ret;

	/*
	 * The request itself is sound: a failure from here on is one of its
	 * SGEs (ring.c reports it as a protection error).
	 */
	*opcode = hdr->opcode;
	if (inl) {
		/*
		 * The device copies inline data when the request is posted;
		 * point it at the kernel's copy of the caller's bytes.
		 */
		if (hdr->inline_len) {
			ksge[0].addr = (uintptr_t)(hdr + 1);
			ksge[0].length = hdr->inline_len;
			wr->num_sge = 1;
		}
		wr->send_flags |= IB_SEND_INLINE;
	} else {
		ret = kqp_post_sges(qp->pd, (const struct kqp_sge *)(hdr + 1),
				    hdr->num_sge, ksge, access);
		if (ret)
			return ret;
		wr->num_sge = hdr->num_sge;
	}
	wr->sg_list = ksge;
	wr->ex.imm_data = (__force __be32)hdr->imm_data;
	if (hdr->send_flags & KQP_SEND_FLAG_FENCE)
		wr->send_flags |= IB_SEND_FENCE;
	if ((hdr->send_flags & KQP_SEND_FLAG_SIGNALED) || qp->sq_sig_all)
		wr->send_flags |= IB_SEND_SIGNALED;
	if (hdr->send_flags & KQP_SEND_FLAG_SOLICITED)
		wr->send_flags |= IB_SEND_SOLICITED;
	*opcode = hdr->opcode;
	return need;
}

/*
 * Build one receive request, for a QP or an SRQ with @max_sge SGEs per
 * request whose receives are checked against @pd; as kqp_build_send().
 */
long kqp_build_recv(struct kqp_pd *pd, u32 max_sge, const void *p,
		    size_t len, struct ib_recv_wr *wr, struct ib_sge *ksge)
{
	const struct kqp_recv_wr *hdr = p;
	int ret;

	/* Nothing of the request is read before it is known to be there. */
	if (len < sizeof(*hdr))
		return -EINVAL;
	/* As for sends and every other reserved field: the uapi's contract. */
	if (hdr->__reserved)
		return -EOPNOTSUPP;
	if (hdr->num_sge > max_sge ||
	    len - sizeof(*hdr) < hdr->num_sge * sizeof(struct kqp_sge))
		return -EINVAL;
	memset(wr, 0, sizeof(*wr));
	ret = kqp_post_sges(pd, (const struct kqp_sge *)(hdr + 1),
			    hdr->num_sge, ksge, IB_ACCESS_LOCAL_WRITE);
	wr->sg_list = ksge;
	wr->num_sge = hdr->num_sge;
	if (ret)
		return ret;
	return sizeof(*hdr) + hdr->num_sge * sizeof(struct kqp_sge);
}

/*
 * Give @n built requests slots and hand them to the device as one chain:
 * take the slots under qp->lock, then post without it (the device may
 * complete a request before ib_post_*() returns, and the CQ's poller
 * takes qp->lock).  The queue's mutex, held by the caller, keeps other
 * posters out, so slots the device did not take can be given back.
 * Returns how many requests the device took, the first of @kwrs first;
 * when that is fewer than @n, *@err says why the next one was not:
 * ENOMEM for a full queue, or the device's errno.  @err_status, if not
 * NULL, gives each request's placeholder status (struct kqp_wr_slot).
 * Signaled sends are counted in qp->sq_sig_out from when their slot is
 * taken until their completion retires it.
 */
u32 kqp_post_chain(struct kqp_qp *qp, bool recv, union kqp_kwr *kwrs,
		   const u64 *wr_ids, const u32 *opcodes, const u8 *err_status,
		   u32 n, int *err)
{
	struct kqp_wq *wq = recv ? &qp->rq : &qp->sq;
	const struct ib_send_wr *bad_send = NULL;
	const struct ib_recv_wr *bad_recv = NULL;
	struct kqp_wr_slot *slot;
	u32 first, m, i, posted;
	int ret;

	spin_lock_irq(&qp->lock);
	m = min(n, wq->size - (wq->head - wq->tail));
	first = wq->head;
	for (i = 0; i < m; i++) {
		slot = &wq->slots[(first + i) & (wq->size - 1)];
		slot->wr_id = wr_ids[i];
		slot->opcode = opcodes[i];
		slot->signaled = recv ||
				 (kwrs[i].send.send_flags & IB_SEND_SIGNALED);
		slot->err_status = err_status ? err_status[i] : 0;
		if (!recv && slot->signaled)
			qp->sq_sig_out++;
	}
	wq->head += m;
	spin_unlock_irq(&qp->lock);
	*err = m < n ? -ENOMEM : 0;
	if (!m)
		return 0;

	for (i = 0; i < m; i++) {
		if (recv) {
			kwrs[i].recv.wr_id = kqp_wrid(qp, first + i, true);
			kwrs[i].recv.next = i + 1 < m ? &kwrs[i + 1].recv : NULL;
		} else {
			kwrs[i].send.wr_id = kqp_wrid(qp, first + i, false);
			kwrs[i].send.next = i + 1 < m ? &kwrs[i + 1].send : NULL;
		}
	}
	if (recv)
		ret = ib_post_recv(qp->qp, &kwrs[0].recv, &bad_recv);
	else
		ret = ib_post_send(qp->qp, &kwrs[0].send, &bad_send);
	if (!ret)
		return m;

	/*
	 * The device took the requests before the one it names.  One that
	 * names none of ours is taken to have posted none: give the slots
	 * back all the same, as a single post always did.
	 */
	posted = 0;
	for (i = 0; i < m; i++) {
		if (recv ? bad_recv == &kwrs[i].recv : bad_send == &kwrs[i].send) {
			posted = i;
			break;
		}
	}
	spin_lock_irq(&qp->lock);
	/*
	 * Never below a slot already retired: a device that completed a
	 * request it said it did not take would otherwise leave the tail
	 * ahead of the head, and the room computed above would wrap.
	 */
	if (wq->tail - first > posted && wq->tail - first <= m)
		posted = wq->tail - first;
	/* The slots given back were never the device's: not outstanding. */
	for (i = posted; !recv && i < m; i++)
		if (wq->slots[(first + i) & (wq->size - 1)].signaled)
			qp->sq_sig_out--;
	wq->head = first + posted;
	spin_unlock_irq(&qp->lock);
	*err = ret;
	return posted;
}

/* Post one built request: a chain of one. */
static int kqp_post_one(struct kqp_qp *qp, bool recv, union kqp_kwr *kwr,
			u64 wr_id, u32 opcode)
{
	int err;

	kqp_post_chain(qp, recv, kwr, &wr_id, &opcode, NULL, 1, &err);
	return err;
}

/*
 * Post one request at a time: build it, give it a slot, hand it to the
 * device.  The first request that fails stops the list; none after it is
 * posted, and out_posted says which it was.
 */
static int kqp_post(struct kqp_ucmd *ucmd, bool recv)
{
	struct kqp_post *cmd = ucmd->cmd;
	struct kqp_object *ah = NULL;
	struct ib_sge *ksge;
	union kqp_kwr *kwr;
	struct kqp_qp *qp;
	size_t off = 0;
	void *buf;
	u32 i = 0, max_sge;
	int ret = 0;

	buf = kqp_post_copy(cmd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	qp = kqp_qp_get_hw(ucmd->uctx, cmd->qp);
	if (IS_ERR(qp)) {
		kvfree(buf);
		return PTR_ERR(qp);
	}
	/* Its receives come from its SRQ: KQP_IOCTL_POST_SRQ_RECV. */
	if (recv && qp->srq) {
		ret = -EINVAL;
		goto out;
	}
	max_sge = max(recv ? qp->cap.max_recv_sge : qp->cap.max_send_sge, 1U);
	kwr = kmalloc(sizeof(*kwr) + max_sge * sizeof(*ksge),
		      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!kwr) {
		ret = -ENOMEM;
		goto out;
	}
	ksge = (struct ib_sge *)(kwr + 1);

	mutex_lock(recv ? &qp->rq_mutex : &qp->sq_mutex);
	for (i = 0; i < cmd->count; i++) {
		u32 opcode = 0;
		long used;

		if (recv) {
			used = kqp_build_recv(qp->pd, qp->cap.max_recv_sge,
					      buf + off, cmd->wrs_len - off,
					      &kwr->recv, ksge);
		} else {
			used = kqp_build_send(qp, &ah, buf + off,
					      cmd->wrs_len - off, kwr, ksge,
					      &opcode);
		}
		if (used < 0) {
			ret = used;
			goto put_ah;
		}

		ret = kqp_post_one(qp, recv, kwr, *(const u64 *)(buf + off),
				   opcode);
put_ah:
		if (ah) {
			kqp_object_put(ah);
			ah = NULL;
		}
		if (ret)
			break;
		off += used;
	}
	mutex_unlock(recv ? &qp->rq_mutex : &qp->sq_mutex);
	kfree(kwr);
out:
	kqp_qp_put_hw(qp);
	kvfree(buf);
	cmd->out_posted = i;
	/* The posted count is part of the answer, failure or not. */
	if (kqp_ucmd_respond(ucmd, sizeof(*cmd)))
		return -EFAULT;
	return ret;
}

int kqp_post_send_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_post(ucmd, false);
}

int kqp_post_recv_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_post(ucmd, true);
}

/*
 * Would ib_core take @lid for a group on @dev whatever port and state the
 * QP is in?  It checks the LID against the QP's port once the QP has one
 * (any LID on Ethernet, a multicast LID on InfiniBand), and against every
 * port before that.  Detaching must pass the same check as attaching did,
 * so a LID is taken only if it passes every way.
 */
static bool kqp_mcast_lid_ok(struct ib_device *dev, u16 lid)
{
	u32 port;

	rdma_for_each_port(dev, port)
		if (rdma_port_get_link_layer(dev, port) ==
		    IB_LINK_LAYER_INFINIBAND)
			return lid >= be16_to_cpu(IB_MULTICAST_LID_BASE) &&
			       lid != be16_to_cpu(IB_LID_PERMISSIVE);
	return true;
}

/*
 * Attach a UD QP to a multicast group, or detach it, as ib_uverbs does:
 * attaching twice attaches once, detaching what is not attached is
 * EINVAL.  Unlike ib_uverbs, a group is the GID alone: the same GID with
 * another LID is EINVAL, since a device may ignore the LID (rxe does) and
 * count two attachments where it made one, which detaching would then
 * fail to undo and destroying the QP be refused for.  A QP is in at most
 * max_mcast groups (ENOSPC).
 */
static int kqp_qp_mcast(struct kqp_ucmd *ucmd, bool attach)
{
	struct kqp_mcast_attach *cmd = ucmd->cmd;
	struct kqp_qp_mcast *m, *found = NULL;
	union ib_gid gid;
	struct kqp_qp *qp;
	int ret = 0;

	if (cmd->__reserved)
		return -EOPNOTSUPP;
	memcpy(gid.raw, cmd->gid, sizeof(gid.raw));
	qp = kqp_qp_get_hw(ucmd->uctx, cmd->qp);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	if (qp->qp_type != IB_QPT_UD) {
		ret = -EINVAL;
		goto out;
	}
	mutex_lock(&qp->mcast_mutex);
	list_for_each_entry(m, &qp->mcasts, list) {
		if (!memcmp(&m->gid, &gid, sizeof(gid))) {
			found = m;
			break;
		}
	}
	if (found && found->lid != cmd->lid) {
		ret = -EINVAL;
		goto unlock;
	}
	if (!attach) {
		if (!found) {
			ret = -EINVAL;
			goto unlock;
		}
		mutex_lock(&kqp_mcast_hw_mutex);
		ret = ib_detach_mcast(qp->qp, &gid, cmd->lid);
		mutex_unlock(&kqp_mcast_hw_mutex);
		if (!ret) {
			list_del(&found->list);
			qp->nr_mcasts--;
			kfree(found);
		}
		goto unlock;
	}
	if (found)
		goto unlock;
	if (!kqp_mcast_lid_ok(qp->qp->device, cmd->lid)) {
		ret = -EINVAL;
		goto unlock;
	}
	if (qp->nr_mcasts >= READ_ONCE(kqp_max_mcast)) {
		ret = -ENOSPC;
		goto unlock;
	}
	m = kzalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);
	if (!m) {
		ret = -ENOMEM;
		goto unlock;
	}
	m->gid = gid;
	m->lid = cmd->lid;
	mutex_lock(&kqp_mcast_hw_mutex);
	ret = ib_attach_mcast(qp->qp, &gid, cmd->lid);
	mutex_unlock(&kqp_mcast_hw_mutex);
	if (ret) {
		kfree(m);
		goto unlock;
	}
	list_add_tail(&m->list, &qp->mcasts);
	qp->nr_mcasts++;
unlock:
	mutex_unlock(&qp->mcast_mutex);
out:
	kqp_qp_put_hw(qp);
	return ret;
}

int kqp_attach_mcast_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_qp_mcast(ucmd, true);
}

int kqp_detach_mcast_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_qp_mcast(ucmd, false);
}
