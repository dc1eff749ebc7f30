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
 *  - the QP is created by rdma_cm on the id, so it is ready for receives
 *    (and, unconnected, for sends) when this returns, and rdma_cm moves a
 *    connected one to RTR and RTS when the connection is made;
 *  - the capabilities the device gave are written back into @attr; a
 *    device may give a deeper queue than a CQ allocated here holds, and
 *    the depth written back is then what the CQ holds, so that a caller
 *    who keeps to it never overflows the CQ.
 *
 * On error @res holds what was allocated here and the caller gives it
 * back with kqp_core_release(), outside any lock the scope's operations
 * must not be called under.
 */
#include "kqp.h"

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

int kqp_core_create_qp(struct kqp_core_scope *scope, struct rdma_cm_id *id,
		       struct ib_pd *pd, struct ib_qp_init_attr *attr,
		       struct kqp_core_qp *res)
{
	const struct kqp_core_scope_ops *ops = scope->ops;
	struct ib_cq *send_cq = attr->send_cq, *recv_cq = attr->recv_cq;
	struct kqp_device *kdev;
	struct ib_cq *cq;
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
	if (!send_cq) {
		cq = ops->alloc_cq(scope, kdev, max(attr->cap.max_send_wr, 1U),
				   true, &res->send_cq_token);
		if (IS_ERR(cq)) {
			ret = PTR_ERR(cq);
			res->send_cq_token = NULL;
			goto err;
		}
		attr->send_cq = cq;
	}
	if (!recv_cq) {
		cq = ops->alloc_cq(scope, kdev, max(attr->cap.max_recv_wr, 1U),
				   false, &res->recv_cq_token);
		if (IS_ERR(cq)) {
			ret = PTR_ERR(cq);
			res->recv_cq_token = NULL;
			goto err;
		}
		attr->recv_cq = cq;
	}

	ret = rdma_create_qp(id, pd, attr);
	if (ret)
		goto err;
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
