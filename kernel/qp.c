// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * QPs created in the kernel for userspace: on an id through the core
 * (rdma_create_qp(3)), which kqp moves through their states as the
 * connection is made (cm_id.c), or alone for callers that move them
 * (ibv_create_qp() + rdma_init_qp_attr() + ibv_modify_qp()).
 *
 * Work requests and completions: wr.c.  States and attributes (MODIFY_QP,
 * QUERY_QP): qp_state.c.  Multicast attachments: mcast.c.
 */
#include <linux/file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"
#include "account.h"
#include "cm.h"
#include "core.h"
#include "cq.h"
#include "pd.h"
#include "qp.h"
#include "srq.h"

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

static void kqp_qp_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_qp *qp = container_of(vobj, struct kqp_qp, vobj);
	int ret;

	kqp_qp_mcast_detach_all(qp);

	/*
	 * Completions from its SRQ stop naming it before its kernel QP goes,
	 * on every path that destroys it (its id's close and device removal
	 * too): until then no other QP can have that address.
	 */
	if (qp->srq)
		kqp_srq_del_qp(qp->srq, qp);

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

	/*
	 * rdma_cm never holds it (kqp_core_create_qp()); kqp's moves of it
	 * find it gone.
	 */
	mutex_lock(&qp->move_mutex);
	ret = ib_destroy_qp(qp->qp);
	if (ret) {
		kqp_qp_hw_abandon(qp, ret);
	} else {
		/* A cached QP's events came through it (qp_cache.c). */
		kfree(qp->qpc_ctx);
		qp->qpc_ctx = NULL;
	}
	qp->qp = NULL;
	mutex_unlock(&qp->move_mutex);
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
		if (cm->qp == qp)
			kqp_cm_id_set_qp(cm, NULL);
		kqp_vobj_destroy_hw(&qp->vobj);
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

/* A QP struct for CREATE_QP; kqp_qp_create_hw() reserves its handle. */
static struct kqp_qp *kqp_qp_alloc(struct kqp_ucontext *uctx,
				   const struct kqp_create_qp *cmd)
{
	struct kqp_qp *qp;

	qp = kzalloc(sizeof(*qp), GFP_KERNEL_ACCOUNT);
	if (!qp)
		return ERR_PTR(-ENOMEM);
	spin_lock_init(&qp->lock);
	mutex_init(&qp->move_mutex);
	mutex_init(&qp->sq_mutex);
	INIT_WORK(&qp->drain_work, kqp_qp_drain_work);
	mutex_init(&qp->rq_mutex);
	mutex_init(&qp->mcast_mutex);
	INIT_LIST_HEAD(&qp->mcasts);
	qp->uctx = uctx;
	qp->uid = cmd->uid;
	qp->qp_type = cmd->qp_type == KQP_QPT_RC ? IB_QPT_RC : IB_QPT_UD;
	qp->sq_sig_all = cmd->flags & KQP_CREATE_QP_SQ_SIG_ALL;
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
 * caller did not name, or directly.  The caller's reference on @kdev is
 * dropped either way: a QP made holds its own (kqp_vobj_made()).
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
	ret = kqp_vobj_begin(us->uctx, &qp->vobj, KQP_OBJ_QP, kdev,
			     kqp_qp_precharge(kdev->ibdev, &attr->cap,
					      qp->srq));
	if (ret)
		goto err_hw;
	if (cm) {
		us->named_pd = qp->pd;
		/* Not bound into the id: kqp moves it (core.c, cm_id.c). */
		ret = kqp_core_create_qp(&us->scope, cm->cm_id,
					 qp->pd ? qp->pd->pd : NULL, attr,
					 &res, true, &ibqp);
		if (ret) {
			kqp_vobj_cancel(us->uctx, &qp->vobj);
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
			goto err_cancel;
		}
	}
	qp->qp = ibqp;
	qp->qpc_ctx = res.qpc_ctx;
	qp->qp_num = ibqp->qp_num;
	qp->cap = attr->cap;
	if (qp->srq)
		qp->srq_ibqp = ibqp;
	/* The id before the device list, which device removal walks. */
	if (cm) {
		qp->cm = cm;
		kref_get(&cm->mem_ref);
	}
	kqp_vobj_made(&qp->vobj, kdev, kqp_qp_destroy_hw);
	up_read(&kdev->hw_rwsem);
	kqp_device_put(kdev);
	return 0;

err_cancel:
	kqp_vobj_cancel(us->uctx, &qp->vobj);
err_hw:
	up_read(&kdev->hw_rwsem);
err_kdev:
	kqp_device_put(kdev);
	return ret;
}

void kqp_qp_cap_to_user(struct kqp_qp_cap *dst, const struct ib_qp_cap *src)
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
		kqp_cm_id_set_qp(cm, qp);
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

	if (cmd->out_rings.flags)
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
	kfree(qp);
	return ret;
}

int kqp_destroy_qp_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_destroy_qp *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_object *obj;
	struct kqp_cq_counts cq_counts[2] = {};

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

/* The QP @handle names, its device's hardware held (kqp_vobj_get_hw()). */
struct kqp_qp *kqp_qp_get_hw(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_vobj *vobj = kqp_vobj_get_hw(uctx, handle, KQP_OBJ_QP);

	if (IS_ERR(vobj))
		return ERR_CAST(vobj);
	return container_of(vobj, struct kqp_qp, vobj);
}
