// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues: ibv_create_srq() and friends.
 *
 * As with a QP's receives, the kernel posts every receive itself, after
 * checking it against the SRQ's PD; the kernel's wr_id names the SRQ (by
 * handle) and a slot that holds the caller's wr_id.  Unlike a QP's, an
 * SRQ's receives complete in any order (each QP takes the next one when
 * a message arrives, and QPs complete independently), so each slot is
 * retired alone: the slots are a free list, and the wr_id carries the
 * slot's generation so that a completion for a slot taken again since is
 * recognised.
 *
 * Why a 10-bit generation is enough: a completion is stale only if its
 * slot was freed and taken again while the receive it names was still
 * with the device, and a slot is freed by nothing but (a) the completion
 * of its own receive, once, with the generation it was posted with, or
 * (b) a post the device refused, of a single request (bad_wr is that
 * request), which the device never completes.  A receive a QP took and
 * never completes (the QP failed, or went) keeps its slot for good:
 * hence twice as many slots as the depth.  So while a receive is with
 * the device its slot stays busy under its generation, whatever the
 * generations wrap to, and every completion finds its own slot; the
 * generation only catches a device that completes what it was never
 * given, or twice.  For that case too, the refused post's give-back
 * checks that the slot is still busy with its own generation, so that a
 * slot never goes on the free list twice.
 *
 * The proof takes one more premise: the handle in the wr_id names the
 * SRQ the receive was posted to.  Handles are allocated cyclically over
 * 32 bits (kqp_handle_alloc()), so that holds until a table has made
 * 2^32 objects while a completion of a destroyed SRQ was still held in
 * a CQ; after that wrap it can reach a new SRQ under the same handle, as
 * a QP's can reach a new QP.  Such a completion is the table's own; it
 * can retire a live slot early and leave @busy low, which is why nothing
 * here may WARN on it.
 *
 * A completion carries the number of the QP that took the receive: the
 * SRQ keeps its QPs by the kernel QP's address, and finds
 * the one a completion names by that address, never following it, as
 * the QP may be gone by the time its completion is polled (then the
 * completion says QP number 0; the QP leaves the SRQ's map before its
 * kernel QP is destroyed, so no other QP can take the address while it is
 * there).  One lookup per completion, however many
 * QPs share the SRQ.
 *
 * The limit event (IB_EVENT_SRQ_LIMIT_REACHED) and SRQ_ERR go to the
 * table's async fd, as KQP_ASYNC_SRQ events, like a QP's.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"
#include "account.h"
#include "pd.h"
#include "qp.h"
#include "srq.h"

/*
 * The kernel's wr_id for a receive posted to an SRQ: the handle in bits
 * 63..32, bit 31 set (a receive, as for a QP), the slot's generation in
 * bits 30..21 and its index in bits 20..0.
 */
#define KQP_SRQ_WRID_RECV	BIT(31)
#define KQP_SRQ_IDX_BITS	21
#define KQP_SRQ_IDX_MASK	(BIT(KQP_SRQ_IDX_BITS) - 1)
#define KQP_SRQ_GEN_MASK	(BIT(31 - KQP_SRQ_IDX_BITS) - 1)
#define KQP_SRQ_NO_SLOT		U32_MAX

static_assert(2 * KQP_SRQ_DEPTH_MAX <= BIT(KQP_SRQ_IDX_BITS));

static u64 kqp_srq_wrid(struct kqp_srq *srq, u32 idx, u32 gen)
{
	return (u64)srq->vobj.obj.id << 32 | KQP_SRQ_WRID_RECV |
	       (gen & KQP_SRQ_GEN_MASK) << KQP_SRQ_IDX_BITS | idx;
}

/*
 * Room for receives of a depth of @max_wr: twice as many slots, as a
 * receive taken by a QP that went to the error state never completes and
 * keeps its slot, but no more than the wr_id can name (a device may make
 * an SRQ deeper than asked: posts past the slots fail with ENOMEM, as on
 * a full queue).  Only ever grows; with srq->post_mutex held (or before
 * the SRQ is published), so that no post takes a slot meanwhile.
 */
static u32 kqp_srq_nslots(u32 max_wr)
{
	return min_t(u64, 2ULL * max(max_wr, 1U), BIT(KQP_SRQ_IDX_BITS));
}

/* Grow the slots to kqp_srq_nslots(@max_wr), as said above. */
static int kqp_srq_grow(struct kqp_srq *srq, u32 max_wr)
{
	u32 want = kqp_srq_nslots(max_wr);
	struct kqp_srq_slot *slots, *old;
	u32 i, n;

	if (want <= srq->nslots)
		return 0;
	slots = kvcalloc(want, sizeof(*slots), GFP_KERNEL_ACCOUNT);
	if (!slots)
		return -ENOMEM;
	spin_lock_irq(&srq->lock);
	n = srq->nslots;
	if (n)
		memcpy(slots, srq->slots, n * sizeof(*slots));
	/* The new slots go on the free list, before the old free ones. */
	for (i = n; i < want; i++)
		slots[i].next_free = i + 1 < want ? i + 1 : srq->free_head;
	srq->free_head = n;
	old = srq->slots;
	srq->slots = slots;
	srq->nslots = want;
	spin_unlock_irq(&srq->lock);
	kvfree(old);
	return 0;
}

/*
 * Fill @cqe from a completion of a receive posted to @srq; under the CQ's
 * lock and RCU (kqp_qp_complete()).  A completion for a slot that is not
 * outstanding, or was taken again since, is stale: dropped.
 */
void kqp_srq_complete(struct kqp_srq *srq, struct ib_wc *wc,
		      struct kqp_cqe *cqe, bool *report)
{
	u32 low = (u32)wc->wr_id & ~KQP_SRQ_WRID_RECV;
	u32 idx = low & KQP_SRQ_IDX_MASK, gen = low >> KQP_SRQ_IDX_BITS;
	struct kqp_srq_slot *slot;
	struct kqp_qp *qp;
	u32 qp_num = 0;

	*report = false;
	/* Under RCU: a QP's memory goes after a grace period. */
	qp = xa_load(&srq->qps, (unsigned long)wc->qp);
	if (qp)
		qp_num = qp->qp_num;
	spin_lock(&srq->lock);
	if (idx >= srq->nslots)
		goto unlock;
	slot = &srq->slots[idx];
	if (!slot->busy || (slot->gen & KQP_SRQ_GEN_MASK) != gen)
		goto unlock;
	kqp_wc_to_cqe(wc, cqe, slot->wr_id, qp_num, KQP_WC_OP_RECV);
	slot->busy = false;
	slot->next_free = srq->free_head;
	srq->free_head = idx;
	srq->busy--;
	*report = true;
unlock:
	spin_unlock(&srq->lock);
}

/*
 * The QP's hardware was just made: its completions can be named.  One
 * that came before (a UD QP is ready at once) says QP number 0.
 */
int kqp_srq_add_qp(struct kqp_srq *srq, struct kqp_qp *qp)
{
	return xa_insert(&srq->qps, (unsigned long)qp->srq_ibqp, qp,
			 GFP_KERNEL_ACCOUNT);
}

/*
 * The QP is going: its completions still in a CQ say QP number 0.  Only
 * its own entry goes; one that failed to go in finds another's there.
 */
void kqp_srq_del_qp(struct kqp_srq *srq, struct kqp_qp *qp)
{
	if (qp->srq_ibqp)
		xa_cmpxchg(&srq->qps, (unsigned long)qp->srq_ibqp, qp, NULL,
			   GFP_KERNEL);
}

static void kqp_srq_event_handler(struct ib_event *event, void *context)
{
	struct kqp_srq *srq = context;

	/*
	 * Pairs with synchronize_rcu() in kqp_srq_destroy_hw() and on
	 * kqp_srq_create_hw()'s error path; an SRQ not made whole yet
	 * (@ready) has nobody to tell, and may be freed unpublished.
	 */
	rcu_read_lock();
	if (READ_ONCE(srq->ready) && !READ_ONCE(srq->abandoned))
		kqp_async_queue_event(srq->uctx, event->event, KQP_ASYNC_SRQ,
				      srq->vobj.obj.id, srq->uid,
				      &srq->async_reported);
	rcu_read_unlock();
}

/*
 * ib_core refuses to destroy an SRQ a QP still uses; kqp destroys its QPs
 * first, so that is a QP the device itself refused to destroy
 * (kqp_qp_hw_abandon()).  The device keeps the SRQ, and the struct its
 * handler is given, for good, as for such a QP.
 */
static void kqp_srq_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_srq *srq = container_of(vobj, struct kqp_srq, vobj);
	int ret;

	ret = ib_destroy_srq_user(srq->srq, NULL);
	if (ret) {
		pr_err_ratelimited("kqp: the device refused to destroy an SRQ (%d); left to it\n",
				   ret);
		WRITE_ONCE(srq->abandoned, true);
		__module_get(THIS_MODULE);
		synchronize_rcu();
	}
	srq->srq = NULL;
}

static void kqp_srq_free_rcu(struct rcu_head *rcu)
{
	struct kqp_srq *srq = container_of(rcu, struct kqp_srq, rcu);

	kvfree(srq->slots);
	mutex_destroy(&srq->post_mutex);
	/* The device may still hand it to kqp_srq_event_handler(). */
	if (!srq->abandoned)
		kfree(srq);
}

/*
 * The SRQ is claimed, or was never published.  Returns how many async
 * events were read for it.
 */
static u32 kqp_srq_free(struct kqp_ucontext *uctx, struct kqp_srq *srq)
{
	struct kqp_device *kdev = srq->vobj.kdev;
	u32 reported;

	kqp_object_drain(&srq->vobj.obj);
	kqp_vobj_destroy_hw(&srq->vobj);
	WARN_ON(!xa_empty(&srq->qps));
	xa_destroy(&srq->qps);
	kqp_async_forget(uctx, &srq->async_reported);
	reported = srq->async_reported;
	kqp_pd_put_user(srq->pd);
	kqp_object_release_id(uctx, &srq->vobj.obj);
	kqp_device_put(kdev);
	/* The slots go after a grace period, which cannot be refused. */
	kqp_queue_uncharge(uctx, &srq->vobj);
	call_rcu(&srq->rcu, kqp_srq_free_rcu);
	return reported;
}

void kqp_srq_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	kqp_srq_free(uctx, container_of(obj, struct kqp_srq, vobj.obj));
}

/* The checks ib_core leaves to the driver, made before anything is made. */
static int kqp_srq_check_init(struct ib_device *dev,
			      const struct kqp_srq_attr *a)
{
	if (!a->max_wr ||
	    a->max_wr > min_t(u32, dev->attrs.max_srq_wr, KQP_SRQ_DEPTH_MAX) ||
	    a->max_sge > (u32)max(dev->attrs.max_srq_sge, 0))
		return -EINVAL;
	return 0;
}

/*
 * Make the kernel SRQ, its slots, and put it on the device; with the
 * device's hw_rwsem held for reading and the device alive.
 */
static int kqp_srq_create_hw(struct kqp_srq *srq, struct kqp_ucontext *uctx,
			     struct kqp_device *kdev, struct kqp_srq_attr *a)
{
	struct ib_srq_init_attr init = {
		.event_handler = kqp_srq_event_handler,
		.srq_context = srq,
		.srq_type = IB_SRQT_BASIC,
		.attr = {
			.max_wr = a->max_wr,
			.max_sge = a->max_sge,
			.srq_limit = a->srq_limit,
		},
	};
	struct ib_srq_attr got;
	struct ib_srq *ibsrq;
	int ret;

	ret = kqp_srq_check_init(kdev->ibdev, a);
	if (ret)
		return ret;
	ret = kqp_vobj_begin(uctx, &srq->vobj, KQP_OBJ_SRQ, kdev,
			     kqp_srq_queue_bytes(a->max_wr, a->max_sge,
						 kqp_srq_nslots(a->max_wr)));
	if (ret)
		return ret;
	ibsrq = ib_create_srq(srq->pd->pd, &init);
	if (IS_ERR(ibsrq)) {
		ret = PTR_ERR(ibsrq);
		goto err_cancel;
	}
	/* What the device made: at least what was asked. */
	ret = ib_query_srq(ibsrq, &got);
	if (ret)
		goto err_srq;
	ret = -EINVAL;
	if (got.max_wr < a->max_wr || got.max_sge < a->max_sge)
		goto err_srq;
	/* A device that gave more than asked is charged what it made. */
	ret = kqp_queue_charge(uctx, &srq->vobj,
			       max(srq->vobj.queue_bytes,
				   kqp_srq_queue_bytes(got.max_wr, got.max_sge,
						       kqp_srq_nslots(got.max_wr))),
			       false);
	if (ret)
		goto err_srq;
	srq->max_sge = min_t(u32, got.max_sge,
			     max(kdev->ibdev->attrs.max_srq_sge, 0));
	ret = kqp_srq_grow(srq, got.max_wr);
	if (ret)
		goto err_srq;
	srq->srq = ibsrq;
	a->max_wr = got.max_wr;
	a->max_sge = srq->max_sge;
	WRITE_ONCE(srq->ready, true);
	kqp_vobj_made(&srq->vobj, kdev, kqp_srq_destroy_hw);
	return 0;

err_srq:
	ib_destroy_srq(ibsrq);
	/* A handler that was running sees !ready, but reads @srq. */
	synchronize_rcu();
err_cancel:
	kqp_vobj_cancel(uctx, &srq->vobj);
	return ret;
}

int kqp_create_srq_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_srq *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_device *kdev;
	struct kqp_srq *srq;
	struct kqp_pd *pd;
	int ret;

	srq = kzalloc(sizeof(*srq), GFP_KERNEL_ACCOUNT);
	if (!srq)
		return -ENOMEM;
	mutex_init(&srq->post_mutex);
	spin_lock_init(&srq->lock);
	xa_init(&srq->qps);
	srq->free_head = KQP_SRQ_NO_SLOT;
	srq->uctx = uctx;
	srq->uid = cmd->uid;
	pd = kqp_pd_take(uctx, cmd->pd);
	if (IS_ERR(pd)) {
		ret = PTR_ERR(pd);
		goto err_free;
	}
	srq->pd = pd;
	kdev = pd->vobj.kdev;

	down_read(&kdev->hw_rwsem);
	if (kdev->dead || pd->vobj.hw_gone)
		ret = -ENXIO;
	else
		ret = kqp_srq_create_hw(srq, uctx, kdev, &cmd->attr);
	up_read(&kdev->hw_rwsem);
	if (ret)
		goto err_pd;

	cmd->out_srq = srq->vobj.obj.id;
	return kqp_object_commit(ucmd, &srq->vobj.obj, sizeof(*cmd));

err_pd:
	kqp_pd_put_user(pd);
err_free:
	kvfree(srq->slots);
	mutex_destroy(&srq->post_mutex);
	kfree(srq);
	return ret;
}

/* The SRQ @handle names, with a reference on its object. */
static struct kqp_srq *kqp_srq_get(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_object *obj = kqp_object_get(uctx, handle, KQP_OBJ_SRQ);

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	return container_of(obj, struct kqp_srq, vobj.obj);
}

/* The SRQ @handle names, its device's hardware held (kqp_vobj_get_hw()). */
static struct kqp_srq *kqp_srq_get_hw(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_vobj *vobj = kqp_vobj_get_hw(uctx, handle, KQP_OBJ_SRQ);

	if (IS_ERR(vobj))
		return ERR_CAST(vobj);
	return container_of(vobj, struct kqp_srq, vobj);
}

int kqp_destroy_srq_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_destroy_srq *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_srq *srq;
	int ret = 0;

	srq = kqp_srq_get(uctx, cmd->srq);
	if (IS_ERR(srq))
		return PTR_ERR(srq);
	/* Same lock as QPs taking the SRQ: an SRQ in use stays. */
	mutex_lock(&uctx->lock);
	if (srq->users)
		ret = -EBUSY;
	else if (!kqp_object_claim(uctx, &srq->vobj.obj))
		ret = -ENOENT;
	mutex_unlock(&uctx->lock);
	kqp_object_put(&srq->vobj.obj);
	if (ret)
		return ret;
	cmd->out_events_reported = kqp_srq_free(uctx, srq);
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * The SRQ @handle names, with one more user (a QP being created); its
 * handle still names it once the count is taken, under the same lock
 * DESTROY_SRQ claims it with.
 */
struct kqp_srq *kqp_srq_take(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_srq *srq = kqp_srq_get(uctx, handle);
	int ret = 0;

	if (IS_ERR(srq))
		return srq;
	mutex_lock(&uctx->lock);
	if (xa_load(&uctx->objects, srq->vobj.obj.id) != srq)
		ret = -ENOENT;
	else
		srq->users++;
	mutex_unlock(&uctx->lock);
	kqp_object_put(&srq->vobj.obj);
	return ret ? ERR_PTR(ret) : srq;
}

void kqp_srq_put_user(struct kqp_srq *srq)
{
	mutex_lock(&srq->uctx->lock);
	srq->users--;
	mutex_unlock(&srq->uctx->lock);
}

static void kqp_srq_attr_to_user(struct kqp_srq_attr *dst,
				 const struct ib_srq_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->max_wr = src->max_wr;
	dst->max_sge = src->max_sge;
	dst->srq_limit = src->srq_limit;
}

int kqp_modify_srq_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_modify_srq *cmd = ucmd->cmd;
	struct ib_srq_attr attr = {};
	struct ib_device *dev;
	struct kqp_srq *srq;
	u64 old_bytes, want;
	u32 old_nslots;
	int ret = 0;

	if (cmd->attr_mask & ~(KQP_SRQ_MAX_WR | KQP_SRQ_LIMIT))
		return -EOPNOTSUPP;
	srq = kqp_srq_get_hw(ucmd->uctx, cmd->srq);
	if (IS_ERR(srq))
		return PTR_ERR(srq);
	dev = srq->srq->device;
	if ((cmd->attr_mask & KQP_SRQ_MAX_WR) &&
	    (!(dev->attrs.device_cap_flags & IB_DEVICE_SRQ_RESIZE) ||
	     !cmd->attr.max_wr ||
	     cmd->attr.max_wr > min_t(u32, dev->attrs.max_srq_wr,
				      KQP_SRQ_DEPTH_MAX)))
		ret = -EINVAL;
	if (ret || !cmd->attr_mask)
		goto out;

	attr.max_wr = cmd->attr.max_wr;
	attr.srq_limit = cmd->attr.srq_limit;
	/* Posts wait while the slots grow and the device resizes. */
	mutex_lock(&srq->post_mutex);
	/*
	 * Never below what is posted: rxe notices only late, and before
	 * 6.12 ("RDMA/rxe: fix null deref on srq->rq.queue after resize
	 * failure") it then freed the queue it still used.
	 */
	if (cmd->attr_mask & KQP_SRQ_MAX_WR) {
		spin_lock_irq(&srq->lock);
		if (attr.max_wr < srq->busy)
			ret = -EINVAL;
		spin_unlock_irq(&srq->lock);
	}
	/*
	 * Deeper: the difference is charged against max_queue_bytes before
	 * anything grows (a shallower SRQ keeps its charge), and given back
	 * if the resize fails, all but the slots that grew meanwhile.
	 */
	old_bytes = srq->vobj.queue_bytes;
	old_nslots = srq->nslots;
	if (!ret && (cmd->attr_mask & KQP_SRQ_MAX_WR)) {
		want = kqp_srq_queue_bytes(attr.max_wr, srq->max_sge,
					   max(old_nslots,
					       kqp_srq_nslots(attr.max_wr)));
		ret = kqp_queue_charge(ucmd->uctx, &srq->vobj,
				       max(old_bytes, want), false);
	}
	if (!ret && (cmd->attr_mask & KQP_SRQ_MAX_WR))
		ret = kqp_srq_grow(srq, attr.max_wr);
	if (!ret)
		ret = ib_modify_srq(srq->srq, &attr, cmd->attr_mask);
	if (!ret && (cmd->attr_mask & KQP_SRQ_MAX_WR) &&
	    !ib_query_srq(srq->srq, &attr)) {
		/*
		 * Deeper than asked: more slots if they can be had; if not,
		 * posts past them fail with ENOMEM, as on a full queue.  The
		 * device made it already: charged whatever the budget says.
		 */
		kqp_srq_grow(srq, attr.max_wr);
		want = kqp_srq_queue_bytes(attr.max_wr, srq->max_sge,
					   srq->nslots);
		kqp_queue_charge(ucmd->uctx, &srq->vobj,
				 max(srq->vobj.queue_bytes, want), true);
	}
	if (ret) {
		want = old_bytes +
		       kqp_srq_queue_bytes(0, 0, srq->nslots - old_nslots);
		kqp_queue_charge(ucmd->uctx, &srq->vobj, want, true);
	}
	mutex_unlock(&srq->post_mutex);
out:
	kqp_vobj_put_hw(&srq->vobj);
	return ret;
}

int kqp_query_srq_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query_srq *cmd = ucmd->cmd;
	struct ib_srq_attr attr = {};
	struct kqp_srq *srq;
	int ret;

	srq = kqp_srq_get_hw(ucmd->uctx, cmd->srq);
	if (IS_ERR(srq))
		return PTR_ERR(srq);
	ret = ib_query_srq(srq->srq, &attr);
	kqp_vobj_put_hw(&srq->vobj);
	if (ret)
		return ret;
	kqp_srq_attr_to_user(&cmd->out_attr, &attr);
	/* Not under hw_rwsem: device removal would wait on the copy. */
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/*
 * Give a built receive a slot and hand it to the device; with
 * srq->post_mutex held, so a failed post can give its slot back.  The
 * slot is taken before posting: the device may complete the receive
 * before ib_post_srq_recv() returns.
 */
static int kqp_srq_post_one(struct kqp_srq *srq, struct ib_recv_wr *wr,
			    u64 wr_id)
{
	const struct ib_recv_wr *bad;
	struct kqp_srq_slot *slot;
	u32 idx, gen;
	int ret;

	spin_lock_irq(&srq->lock);
	idx = srq->free_head;
	if (idx == KQP_SRQ_NO_SLOT) {
		spin_unlock_irq(&srq->lock);
		return -ENOMEM;
	}
	slot = &srq->slots[idx];
	srq->free_head = slot->next_free;
	slot->busy = true;
	srq->busy++;
	gen = ++slot->gen;
	slot->wr_id = wr_id;
	wr->wr_id = kqp_srq_wrid(srq, idx, gen);
	spin_unlock_irq(&srq->lock);

	ret = ib_post_srq_recv(srq->srq, wr, &bad);
	if (ret) {
		spin_lock_irq(&srq->lock);
		/* The slot array may have moved; the index has not. */
		slot = &srq->slots[idx];
		/* Never freed twice, whatever completed meanwhile: above. */
		if (slot->busy && slot->gen == gen) {
			slot->busy = false;
			slot->next_free = srq->free_head;
			srq->free_head = idx;
			srq->busy--;
		}
		spin_unlock_irq(&srq->lock);
	}
	return ret;
}

/*
 * As KQP_IOCTL_POST_RECV (kqp_post() in wr.c), on an SRQ: the list is
 * copied once, each request checked against the SRQ's max_sge and PD,
 * then posted; the first that fails stops the list.
 */
int kqp_post_srq_recv_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_post *cmd = ucmd->cmd;
	struct ib_recv_wr wr;
	struct ib_sge *ksge;
	struct kqp_srq *srq;
	size_t off = 0;
	u32 i = 0;
	void *buf;
	int ret = 0;

	buf = kqp_post_copy(cmd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	srq = kqp_srq_get_hw(ucmd->uctx, cmd->qp);
	if (IS_ERR(srq)) {
		kvfree(buf);
		return PTR_ERR(srq);
	}
	ksge = kmalloc_array(max(srq->max_sge, 1U), sizeof(*ksge),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!ksge) {
		ret = -ENOMEM;
		goto out;
	}
	mutex_lock(&srq->post_mutex);
	for (i = 0; i < cmd->count; i++) {
		long used = kqp_build_recv(srq->pd, srq->max_sge, buf + off,
					   cmd->wrs_len - off, &wr, ksge);

		if (used < 0) {
			ret = used;
			break;
		}
		ret = kqp_srq_post_one(srq, &wr, *(const u64 *)(buf + off));
		if (ret)
			break;
		off += used;
	}
	mutex_unlock(&srq->post_mutex);
	kfree(ksge);
out:
	kqp_vobj_put_hw(&srq->vobj);
	kvfree(buf);
	cmd->out_posted = i;
	/* The posted count is part of the answer, failure or not. */
	if (kqp_ucmd_respond(ucmd, sizeof(*cmd)))
		return -EFAULT;
	return ret;
}
