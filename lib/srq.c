// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Shared receive queues: ibv_create_srq(), ibv_create_srq_ex() (the
 * extended context's create_srq_ex), ibv_modify_srq(), ibv_query_srq(),
 * ibv_destroy_srq(), the post_srq_recv op, and librdmacm's SRQ calls on
 * an id.  The kernel owns the SRQ and posts every receive after checking
 * it (KQP_IOCTL_POST_SRQ_RECV, see qp.c); a receive's completion reaches
 * the ring of the CQ of the QP that took it.
 */
#include <stdlib.h>
#include <string.h>

#include "kqp_priv.h"

/* Wait until every async event reported for the SRQ was acked. */
static void kqp_srq_wait_events(struct ibv_srq *srq, uint32_t reported)
{
	pthread_mutex_lock(&srq->mutex);
	while (srq->events_completed != reported)
		pthread_cond_wait(&srq->cond, &srq->mutex);
	pthread_mutex_unlock(&srq->mutex);
}

/* A basic SRQ on @pd; NULL and *@err (a negative errno) on failure. */
static struct ibv_srq *kqp_srq_create(struct ibv_pd *pd,
				      struct ibv_srq_attr *attr,
				      void *srq_context, int *err)
{
	struct kqp_create_srq cmd = { .size = sizeof(cmd) };
	struct kqp_lsrq *srq;
	int ret;

	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		*err = -ENOMEM;
		return NULL;
	}
	cmd.pd = pd->handle;
	cmd.uid = (uintptr_t)&srq->ibv;
	cmd.attr.max_wr = attr->max_wr;
	cmd.attr.max_sge = attr->max_sge;
	cmd.attr.srq_limit = attr->srq_limit;
	ret = kqp_ioctl(pd->context->cmd_fd, KQP_IOCTL_CREATE_SRQ, &cmd);
	if (ret) {
		free(srq);
		*err = ret;
		return NULL;
	}
	/* What the device made, written back as ibv_create_srq(3) says. */
	attr->max_wr = cmd.attr.max_wr;
	attr->max_sge = cmd.attr.max_sge;
	srq->ibv.context = pd->context;
	srq->ibv.srq_context = srq_context;
	srq->ibv.pd = pd;
	srq->ibv.handle = cmd.out_srq;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	return &srq->ibv;
}

KQP_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					  struct ibv_srq_init_attr *attr)
{
	struct ibv_srq *srq;
	int err;

	if (!pd || !attr)
		return kqp_err_ptr(EINVAL);
	srq = kqp_srq_create(pd, &attr->attr, attr->srq_context, &err);
	if (!srq)
		errno = -err;
	return srq;
}

/*
 * The extended context's create_srq_ex, which ibv_create_srq_ex() calls
 * for what ibv_create_srq() cannot express.  As rdma-core's on rxe: a
 * basic SRQ (a CQ given is not used by one); XRC without an XRCD and a CQ
 * is EINVAL, and with them too, as no XRCD can exist here; tag matching
 * without a CQ and tags is EINVAL, and EOPNOTSUPP with them, as rxe
 * answers.
 */
struct ibv_srq *kqp_create_srq_ex(struct ibv_context *context,
				  struct ibv_srq_init_attr_ex *attr)
{
	enum ibv_srq_type type = IBV_SRQT_BASIC;
	struct ibv_srq *srq;
	int err;

	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		type = attr->srq_type;
	switch (type) {
	case IBV_SRQT_BASIC:
		break;
	case IBV_SRQT_TM:
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
		    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) ||
		    !attr->tm_cap.max_num_tags)
			return kqp_err_ptr(EINVAL);
		return kqp_err_ptr(EOPNOTSUPP);
	default:
		return kqp_err_ptr(EINVAL);
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context->cmd_fd != context->cmd_fd)
		return kqp_err_ptr(EINVAL);
	srq = kqp_srq_create(attr->pd, &attr->attr, attr->srq_context, &err);
	if (!srq)
		errno = -err;
	return srq;
}

/* As libibverbs: 0, or the errno value. */
KQP_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			      int attr_mask)
{
	struct kqp_modify_srq cmd = {
		.size = sizeof(cmd),
		.srq = srq->handle,
		.attr_mask = attr_mask,
	};

	cmd.attr.max_wr = attr->max_wr;
	cmd.attr.srq_limit = attr->srq_limit;
	return -kqp_ioctl(srq->context->cmd_fd, KQP_IOCTL_MODIFY_SRQ, &cmd);
}

KQP_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct kqp_query_srq cmd = { .size = sizeof(cmd), .srq = srq->handle };
	int ret;

	ret = kqp_ioctl(srq->context->cmd_fd, KQP_IOCTL_QUERY_SRQ, &cmd);
	if (ret)
		return -ret;
	attr->max_wr = cmd.out_attr.max_wr;
	attr->max_sge = cmd.out_attr.max_sge;
	attr->srq_limit = cmd.out_attr.srq_limit;
	return 0;
}

/*
 * As libibverbs: EBUSY while a QP uses it; once the kernel's SRQ is gone,
 * waits until every async event reported for it was acked.
 */
KQP_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	struct kqp_destroy_srq cmd = { .size = sizeof(cmd), .srq = srq->handle };
	int ret;

	ret = kqp_ioctl(srq->context->cmd_fd, KQP_IOCTL_DESTROY_SRQ, &cmd);
	if (ret)
		return -ret;
	kqp_srq_wait_events(srq, cmd.out_events_reported);
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&srq->mutex);
	free(to_lsrq(srq));
	return 0;
}

/*
 * librdmacm: an SRQ for the id's QP to use (rdma_create_qp() takes it
 * when the caller names none).  The PD defaults to the id's.  A basic SRQ
 * needs no CQ; XRC ones, for which librdmacm makes one, cannot be made
 * here (XRC ids are not either).
 */
KQP_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				  struct ibv_srq_init_attr_ex *attr)
{
	struct ibv_srq *srq;

	if (!id || !attr)
		return kqp_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return kqp_err(EINVAL);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (!id->verbs)
		return kqp_err(EINVAL);
	srq = ibv_create_srq_ex(id->verbs, attr);
	if (!srq)
		return -1;
	if (!id->pd)
		id->pd = attr->pd;
	id->srq = srq;
	return 0;
}

KQP_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			       struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex attr_ex;
	int ret;

	if (!attr)
		return kqp_err(EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, attr, sizeof(*attr));
	attr_ex.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	attr_ex.srq_type = IBV_SRQT_BASIC;
	attr_ex.pd = pd;
	ret = rdma_create_srq_ex(id, &attr_ex);
	memcpy(attr, &attr_ex, sizeof(*attr));
	return ret;
}

/*
 * As librdmacm, which ignores ibv_destroy_srq()'s answer: an SRQ a QP
 * still uses stays, and the id forgets it.  librdmacm also destroys the
 * id's CQs here, which it made for XRC SRQs; kqp's go with the id's QP.
 */
KQP_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}
