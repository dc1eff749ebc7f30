// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma_create_qp(3)'s semantics, in one place: the ioctl path and the
 * exported in-kernel API both create QPs on ids through here.
 *
 *  - the id must be bound to a device;
 *  - a PD, if given, must be of that device; none means the device's
 *    default PD in the caller's scope;
 *  - a missing send or receive CQ is allocated, sized from the queue's
 *    capabilities;
 *  - an id has at most one QP; its type is the id's;
 *  - the QP is ready for receives (and, unconnected, for sends) when this
 *    returns, and moves to RTR and RTS when the connection is made;
 *  - the exported API's QP is created by rdma_cm on the id (rdma_cm moves
 *    it, and its callers use the id as any of rdma_cm's);
 *  - the ioctl path's (@unbound) is made outside the id, with the states
 *    and attributes rdma_cm gives (rdma_init_qp_attr()), as librdmacm
 *    does over ucma: to INIT here (a UD QP on to RTS), and a connected
 *    one to RTR and RTS by cm_id.c, with its number in the connection
 *    parameters.  rdma_cm will not join a multicast group on an id that
 *    holds a QP (it WARNs, which panics a machine with panic_on_warn),
 *    and a QP rdma_cm does not own could be made ahead of the call;
 *  - an unbound QP with no CQs on the default PD may be one the scope
 *    made ahead (take_cached: the ioctl path's QP cache, qp_cache.c),
 *    with its CQs; otherwise it is made on the call;
 *  - the capabilities the device gave are written back into @attr; a
 *    device may give a deeper queue than a CQ allocated here holds, and
 *    the depth written back is then what the CQ holds, so that a caller
 *    who keeps to it never overflows the CQ.
 *
 * On error @res holds what was allocated here and the caller gives it
 * back with kqp_core_release(), outside any lock the scope's operations
 * must not be called under.
 *
 * A scope says where a caller's default PD and CQs come from.  The ioctl
 * path's is at the end of this file: the table's PDs, and ring CQs with
 * completion channels.  The exported API's is in kapi.c.
 */
#include "kqp.h"
#include "account.h"
#include "core.h"
#include "cq.h"
#include "pd.h"
#include "qp_cache.h"

/*
 * Lower @depth to what @cq, allocated here, holds.  Not a resize: a CQ
 * of the ioctl path has a ring sized with it, which stays as it was.
 */
static void kqp_core_fit_cq(struct ib_cq *cq, u32 *depth)
{
	if (*depth > cq->cqe)
		*depth = cq->cqe;
}

void kqp_core_release(struct kqp_core_scope *scope, struct kqp_core_qp *res)
{
	const struct kqp_core_scope_ops *ops = scope->ops;

	if (res->send_cq_token)
		ops->free_cq(scope, res->send_cq_token);
	if (res->recv_cq_token)
		ops->free_cq(scope, res->recv_cq_token);
	if (res->pd_token)
		ops->put_default_pd(scope, res->pd_token);
	memset(res, 0, sizeof(*res));
}

/*
 * A QP that rdma_cm does not hold to INIT, and a UD one on to RTS, as
 * rdma_cm moves its own (cma_init_conn_qp(), cma_init_ud_qp()).
 */
static int kqp_core_unbound_init(struct rdma_cm_id *id, struct ib_qp *qp)
{
	struct ib_qp_attr qp_attr = { .qp_state = IB_QPS_INIT };
	int mask, ret;

	ret = rdma_init_qp_attr(id, &qp_attr, &mask);
	if (ret)
		return ret;
	ret = ib_modify_qp(qp, &qp_attr, mask);
	if (ret || id->qp_type != IB_QPT_UD)
		return ret;
	qp_attr.qp_state = IB_QPS_RTR;
	ret = ib_modify_qp(qp, &qp_attr, IB_QP_STATE);
	if (ret)
		return ret;
	qp_attr.qp_state = IB_QPS_RTS;
	qp_attr.sq_psn = 0;
	return ib_modify_qp(qp, &qp_attr, IB_QP_STATE | IB_QP_SQ_PSN);
}

/*
 * A CQ for a queue of @depth the caller left without one, in *@cqp; its
 * token in *@token, or NULL when none was made.
 */
static int kqp_core_alloc_cq(struct kqp_core_scope *scope,
			     struct kqp_device *kdev, u32 depth, bool send,
			     void **token, struct ib_cq **cqp)
{
	struct ib_cq *cq;

	cq = scope->ops->alloc_cq(scope, kdev, max(depth, 1U), send, token);
	if (IS_ERR(cq)) {
		*token = NULL;
		return PTR_ERR(cq);
	}
	*cqp = cq;
	return 0;
}

/*
 * Destroy an unbound QP made here that the caller never saw.  A cached
 * QP the device refused to destroy keeps its event context, which no
 * longer reaches anyone, and the module stays loaded for the device.
 */
static void kqp_core_destroy_unbound(struct ib_qp *qp, struct kqp_core_qp *res)
{
	if (!ib_destroy_qp(qp)) {
		kfree(res->qpc_ctx);
	} else if (res->qpc_ctx) {
		kqp_qpc_ctx_clear(res->qpc_ctx);
		__module_get(THIS_MODULE);
	}
	res->qpc_ctx = NULL;
}

/* A CQ for each queue the caller left without one, in @attr. */
static int kqp_core_alloc_cqs(struct kqp_core_scope *scope,
			      struct kqp_device *kdev,
			      struct ib_qp_init_attr *attr,
			      struct kqp_core_qp *res)
{
	int ret;

	if (!attr->send_cq) {
		ret = kqp_core_alloc_cq(scope, kdev, attr->cap.max_send_wr, true,
					&res->send_cq_token, &attr->send_cq);
		if (ret)
			return ret;
	}
	if (!attr->recv_cq)
		return kqp_core_alloc_cq(scope, kdev, attr->cap.max_recv_wr,
					 false, &res->recv_cq_token,
					 &attr->recv_cq);
	return 0;
}

/*
 * An unbound QP: with no CQs or SRQ given, a cached one (qp_cache.c) if
 * the scope has one that fits, else one made now.  Either way in RESET,
 * with its CQs in @attr.
 */
static int kqp_core_make_unbound(struct kqp_core_scope *scope,
				 struct kqp_device *kdev, struct ib_pd *pd,
				 struct ib_qp_init_attr *attr,
				 struct kqp_core_qp *res, struct ib_qp **qp)
{
	const struct kqp_core_scope_ops *ops = scope->ops;
	int ret;

	if (!attr->send_cq && !attr->recv_cq && !attr->srq &&
	    ops->take_cached) {
		ret = ops->take_cached(scope, kdev, res->pd_token, attr, res, qp);
		if (ret != -EAGAIN)
			return ret;
	}
	ret = kqp_core_alloc_cqs(scope, kdev, attr, res);
	if (ret)
		return ret;
	*qp = ib_create_qp(pd, attr);
	return PTR_ERR_OR_ZERO(*qp);
}

/*
 * The QP is returned in *@qp; with @unbound it is not @id->qp, and the
 * caller moves it through its states and destroys it with
 * ib_destroy_qp(), then frees @res->qpc_ctx (kqp_core_destroy_unbound()).
 */
int kqp_core_create_qp(struct kqp_core_scope *scope, struct rdma_cm_id *id,
		       struct ib_pd *pd, struct ib_qp_init_attr *attr,
		       struct kqp_core_qp *res, bool unbound,
		       struct ib_qp **qp)
{
	const struct kqp_core_scope_ops *ops = scope->ops;
	struct ib_cq *send_cq = attr->send_cq, *recv_cq = attr->recv_cq;
	struct kqp_device *kdev;
	int ret;

	memset(res, 0, sizeof(*res));
	if (!id->device || id->qp || attr->qp_type != id->qp_type)
		return -EINVAL;
	if (pd && pd->device != id->device)
		return -EINVAL;
	if ((send_cq && send_cq->device != id->device) ||
	    (recv_cq && recv_cq->device != id->device))
		return -EINVAL;
	kdev = kqp_device_of(id->device);
	if (!kdev)
		return -ENODEV;

	if (!pd) {
		pd = ops->get_default_pd(scope, kdev, &res->pd_token);
		if (IS_ERR(pd)) {
			ret = PTR_ERR(pd);
			res->pd_token = NULL;
			goto err;
		}
	}
	if (unbound) {
		attr->port_num = id->port_num;
		ret = kqp_core_make_unbound(scope, kdev, pd, attr, res, qp);
		if (ret)
			goto err;
		ret = kqp_core_unbound_init(id, *qp);
		if (ret) {
			kqp_core_destroy_unbound(*qp, res);
			goto err;
		}
	} else {
		ret = kqp_core_alloc_cqs(scope, kdev, attr, res);
		if (ret)
			goto err;
		ret = rdma_create_qp(id, pd, attr);
		if (ret)
			goto err;
		*qp = id->qp;
	}
	if (!send_cq)
		kqp_core_fit_cq(attr->send_cq, &attr->cap.max_send_wr);
	if (!recv_cq)
		kqp_core_fit_cq(attr->recv_cq, &attr->cap.max_recv_wr);
	kqp_device_put(kdev);
	return 0;

err:
	attr->send_cq = send_cq;
	attr->recv_cq = recv_cq;
	kqp_device_put(kdev);
	return ret;
}

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

/*
 * A ring CQ with a completion channel of its own, as librdmacm makes:
 * made now, or the spare *@spare of a cached QP adopted (then NULL).
 */
static struct ib_cq *kqp_uscope_make_cq(struct kqp_uscope *us,
					struct kqp_device *kdev, u32 cqe,
					struct kqp_uscope_cq *q,
					struct kqp_cq **spare, void **token)
{
	struct kqp_channel *chan;
	struct kqp_cq *cq;
	int ret;

	chan = kqp_channel_make_fd(&q->fd, &q->filp);
	if (IS_ERR(chan))
		return ERR_CAST(chan);
	kref_get(&chan->ref);
	if (spare) {
		cq = *spare;
		ret = kqp_cq_adopt_locked(cq, us->uctx, kdev, chan, q->uid);
		if (ret)
			cq = ERR_PTR(ret);
		else
			*spare = NULL;
	} else {
		cq = kqp_cq_create_locked(us->uctx, kdev, cqe, 0, chan, q->uid);
	}
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

static struct ib_cq *kqp_uscope_alloc_cq(struct kqp_core_scope *scope,
					 struct kqp_device *kdev, u32 cqe,
					 bool send, void **token)
{
	struct kqp_uscope *us = container_of(scope, struct kqp_uscope, scope);

	return kqp_uscope_make_cq(us, kdev, cqe, send ? &us->send : &us->recv,
				  NULL, token);
}

/*
 * A cached QP of the default PD's group that fits @attr (the PD the
 * caller named, or @pd_token when it named none), its
 * CQs adopted as the table's (qp_cache.c); -EAGAIN if none fits.  The
 * table is charged for the QP and CQs as they become its objects, and
 * the PD's charge for its spare slots drops by one.
 */
static int kqp_uscope_take_cached(struct kqp_core_scope *scope,
				  struct kqp_device *kdev, void *pd_token,
				  struct ib_qp_init_attr *attr,
				  struct kqp_core_qp *res, struct ib_qp **qp)
{
	struct kqp_uscope *us = container_of(scope, struct kqp_uscope, scope);
	struct kqp_ucontext *uctx = us->uctx;
	struct kqp_pd *pd = pd_token ? pd_token : us->named_pd;
	struct kqp_qpc_slot *slot;
	struct ib_cq *cq;

	/* A PD of the caller's own is no cache's. */
	if (!pd || !pd->is_default)
		return -EAGAIN;
	mutex_lock(&uctx->lock);
	slot = kqp_qpc_take(kdev, pd->qpc, attr);
	if (slot)
		kqp_pd_qpc_took(pd);
	mutex_unlock(&uctx->lock);
	if (!slot)
		return -EAGAIN;

	cq = kqp_uscope_make_cq(us, kdev, 0, &us->send, &slot->send_cq,
				&res->send_cq_token);
	if (IS_ERR(cq))
		goto err;
	attr->send_cq = cq;
	cq = kqp_uscope_make_cq(us, kdev, 0, &us->recv, &slot->recv_cq,
				&res->recv_cq_token);
	if (IS_ERR(cq))
		goto err;
	attr->recv_cq = cq;
	attr->cap = slot->cap;
	*qp = slot->qp;
	res->qpc_ctx = slot->ctx;
	kqp_qpc_ctx_set(slot->ctx, attr->event_handler, attr->qp_context);
	slot->qp = NULL;
	slot->ctx = NULL;
	kqp_qpc_slot_free(slot);
	return 0;

err:
	/* The QP first; CQs adopted already are the caller's to release. */
	kqp_qpc_slot_free(slot);
	return PTR_ERR(cq);
}

/* Undo kqp_uscope_alloc_cq(): the CQ was never published. */
void kqp_uscope_cq_abort(struct kqp_ucontext *uctx, struct kqp_uscope_cq *q)
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

const struct kqp_core_scope_ops kqp_uscope_ops = {
	.get_default_pd = kqp_uscope_get_default_pd,
	.put_default_pd = kqp_uscope_put_default_pd,
	.alloc_cq = kqp_uscope_alloc_cq,
	.free_cq = kqp_uscope_free_cq,
	.take_cached = kqp_uscope_take_cached,
};
