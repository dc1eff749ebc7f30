// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * librdmacm's QP calls on an id: rdma_create_qp(), rdma_create_qp_ex()
 * (with the extended attributes ibv_create_qp_ex() takes, qp_ex.c) and
 * rdma_destroy_qp().  A QP made on an id without CQs gets two the
 * kernel makes for it ("automatic" CQs), each with a completion channel
 * of its own, as librdmacm makes them; they go with the QP.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kqp_priv.h"

/*
 * The CQs kqp made for an id's QP went with the QP (@d says what was
 * read for them): drop their wrappers and channels once every
 * notification and async event read for them was acked, as
 * ibv_destroy_cq() waits.  A CQ another QP still uses stayed (@d's
 * out_flags): the id lets go of it, and it lives on, with its channel,
 * as an ordinary CQ, just as librdmacm's ibv_destroy_cq() of it fails
 * with EBUSY and leaves it.
 */
static void kqp_id_drop_auto_cqs(struct rdma_cm_id *id,
				 const struct kqp_destroy_qp *d)
{
	struct ibv_cq *cqs[2] = { id->send_cq, id->recv_cq };
	struct ibv_comp_channel *chans[2] = { id->send_cq_channel,
					      id->recv_cq_channel };
	uint32_t comp[2] = { d->out_send_cq_events, d->out_recv_cq_events };
	uint32_t async[2] = { d->out_send_cq_async_events,
			      d->out_recv_cq_async_events };
	uint32_t kept[2] = { KQP_DESTROY_QP_SEND_CQ_KEPT,
			     KQP_DESTROY_QP_RECV_CQ_KEPT };
	int i;

	for (i = 0; i < 2; i++) {
		struct kqp_lcq *cq;

		if (!cqs[i] || to_lcq(cqs[i])->auto_id != id)
			continue;
		cq = to_lcq(cqs[i]);
		if (d->out_flags & kept[i]) {
			cq->auto_id = NULL;
		} else {
			kqp_cq_wait_acks(&cq->ibv, comp[i], async[i]);
			kqp_cq_unmap(cq);
			free(cq);
			if (chans[i])
				ibv_destroy_comp_channel(chans[i]);
		}
		if (i == 0) {
			id->send_cq = NULL;
			id->send_cq_channel = NULL;
		} else {
			id->recv_cq = NULL;
			id->recv_cq_channel = NULL;
		}
	}
}

/*
 * Set up @cq, the wrapper of the send (or with @recv, the receive) CQ kqp
 * made for the id's QP with @cmd, and hand it to the id.  0 or -errno;
 * on failure the channel's fd is left for kqp_id_qp_undo() to close.
 */
static int kqp_id_auto_cq(struct rdma_cm_id *id, struct kqp_lcq *cq,
			  const struct kqp_create_qp *cmd, bool recv)
{
	const struct kqp_ring_info *ring = recv ? &cmd->out_recv_ring :
						  &cmd->out_send_ring;
	uint32_t handle = recv ? cmd->out_recv_cq : cmd->out_send_cq;
	uint32_t cqe = recv ? cmd->out_recv_cqe : cmd->out_send_cqe;
	int fd = recv ? cmd->out_recv_channel_fd : cmd->out_send_channel_fd;
	struct ibv_comp_channel *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->context = id->verbs;
	c->fd = fd;
	/* cq_context is the id, as librdmacm, for rdma_get_send_comp(). */
	ret = kqp_cq_map(cq, ring, handle, cqe, id->verbs, c, id);
	if (ret) {
		free(c);
		return ret;
	}
	cq->auto_id = id;
	if (recv) {
		id->recv_cq_channel = c;
		id->recv_cq = &cq->ibv;
	} else {
		id->send_cq_channel = c;
		id->send_cq = &cq->ibv;
	}
	return 0;
}

/*
 * rdma_create_qp(3)'s checks, before anything is made: the PD to use in
 * *@pd (NULL: the id's default PD), 0 or -errno.
 */
static int kqp_id_qp_check(struct rdma_cm_id *id,
			   const struct ibv_qp_init_attr_ex *attr,
			   struct ibv_pd **pd)
{
	int ret;

	*pd = NULL;
	/* An unbound id has no device. */
	if (!id->verbs || id->qp)
		return -EINVAL;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) && attr->pd) {
		if (attr->pd->context != id->verbs)
			return -EINVAL;
		*pd = attr->pd;
	}
	ret = kqp_qp_ex_check(attr);
	if (ret)
		return ret;
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD)
		return -EOPNOTSUPP;
	if ((attr->send_cq && attr->send_cq->context != id->verbs) ||
	    (attr->recv_cq && attr->recv_cq->context != id->verbs) ||
	    (attr->srq && attr->srq->context->cmd_fd != id->verbs->cmd_fd))
		return -EINVAL;
	return 0;
}

/*
 * Wrap the CQs the kernel made for the QP (where the caller gave none)
 * and hand them to the id and to @attr.  0 or -errno; on failure
 * kqp_id_qp_undo() cleans up.
 */
static int kqp_id_qp_auto_cqs(struct rdma_cm_id *id,
			      struct ibv_qp_init_attr_ex *attr,
			      struct kqp_lcq *scq, struct kqp_lcq *rcq,
			      const struct kqp_create_qp *cmd)
{
	int ret;

	if (scq) {
		ret = kqp_id_auto_cq(id, scq, cmd, false);
		if (ret)
			return ret;
		attr->send_cq = id->send_cq;
	}
	if (rcq) {
		ret = kqp_id_auto_cq(id, rcq, cmd, true);
		if (ret)
			return ret;
		attr->recv_cq = id->recv_cq;
	}
	return 0;
}

/*
 * Undo a failed rdma_create_qp_ex(): with @created, destroy the kernel's
 * QP (and with it the CQs made for it).  A CQ that got its wrapper went
 * to the id, whose channel is closed and wrapper freed with the id's
 * automatic CQs; for one that did not, close the channel fd the kernel
 * gave (only here: kqp_id_auto_cq() leaves it) and free the wrapper.
 */
static void kqp_id_qp_undo(struct rdma_cm_id *id, bool created,
			   const struct kqp_create_qp *cmd, struct kqp_lqp *qp,
			   struct kqp_lcq *scq, struct kqp_lcq *rcq)
{
	struct kqp_destroy_qp d = { .size = sizeof(d), .qp = cmd->out_qp };
	bool s_wrapped = scq && scq->ring, r_wrapped = rcq && rcq->ring;

	if (created) {
		kqp_ioctl(id->channel->fd, KQP_IOCTL_DESTROY_QP, &d);
		kqp_id_drop_auto_cqs(id, &d);
		if (scq && !s_wrapped)
			close(cmd->out_send_channel_fd);
		if (rcq && !r_wrapped)
			close(cmd->out_recv_channel_fd);
	}
	if (!s_wrapped)
		free(scq);
	if (!r_wrapped)
		free(rcq);
	free(qp);
}

KQP_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct kqp_create_qp cmd = { .size = sizeof(cmd) };
	struct kqp_lcq *scq = NULL, *rcq = NULL;
	struct ibv_qp_init_attr init = {};
	struct ibv_pd *pd;
	struct kqp_lqp *qp;
	int ret;

	ret = kqp_id_qp_check(id, attr, &pd);
	if (ret)
		return kqp_err(-ret);
	/* As librdmacm: the id's SRQ (rdma_create_srq()) unless given one. */
	if (id->srq && !attr->srq)
		attr->srq = id->srq;
	qp = calloc(1, sizeof(*qp));
	if (!attr->send_cq)
		scq = calloc(1, sizeof(*scq));
	if (!attr->recv_cq)
		rcq = calloc(1, sizeof(*rcq));
	if (!qp || (!attr->send_cq && !scq) || (!attr->recv_cq && !rcq)) {
		kqp_id_qp_undo(id, false, &cmd, qp, scq, rcq);
		return kqp_err(ENOMEM);
	}

	/* No PD: the kernel uses the device's default PD, as id->pd. */
	kqp_qp_cmd_init(&cmd, qp, attr->qp_type, attr->sq_sig_all, &attr->cap);
	cmd.id = to_kid(id)->handle;
	cmd.pd = pd ? pd->handle : 0;
	cmd.send_cq = attr->send_cq ? attr->send_cq->handle : 0;
	cmd.recv_cq = attr->recv_cq ? attr->recv_cq->handle : 0;
	cmd.srq = attr->srq ? attr->srq->handle : 0;
	cmd.send_cq_uid = (uintptr_t)scq;
	cmd.recv_cq_uid = (uintptr_t)rcq;
	ret = kqp_create_qp_cmd(id->channel->fd, &cmd);
	if (ret) {
		kqp_id_qp_undo(id, false, &cmd, qp, scq, rcq);
		return kqp_err(-ret);
	}
	ret = kqp_id_qp_auto_cqs(id, attr, scq, rcq, &cmd);
	if (ret) {
		kqp_id_qp_undo(id, true, &cmd, qp, scq, rcq);
		return kqp_err(-ret);
	}

	/* What the device gave, written back as rdma_create_qp(3) says. */
	kqp_qp_cap_from_kern(&attr->cap, &cmd.cap);
	if (!pd)
		pd = id->pd;
	attr->pd = pd;
	attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	init.qp_context = attr->qp_context;
	init.send_cq = attr->send_cq;
	init.recv_cq = attr->recv_cq;
	init.srq = attr->srq;
	init.qp_type = attr->qp_type;

	/* rdma_cm moved it: RTS for UD, INIT (receives) for RC. */
	kqp_qp_init(qp, &cmd, id->verbs, pd, &init,
		    attr->qp_type == IBV_QPT_UD ? IBV_QPS_RTS : IBV_QPS_INIT);
	/* librdmacm's ibv_create_qp_ex() makes it an extended QP. */
	if (kqp_qp_ex_wanted(attr))
		kqp_qp_ex_init(qp, attr);
	qp->id = id;
	id->qp = &qp->ibv;
	id->pd = pd;
	return 0;
}

KQP_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex attr_ex;
	int ret;

	if (!qp_init_attr)
		return kqp_err(EINVAL);
	memset(&attr_ex, 0, sizeof(attr_ex));
	memcpy(&attr_ex, qp_init_attr, sizeof(*qp_init_attr));
	/*
	 * The copy brought the caller's trailing padding into comp_mask,
	 * which ibv_qp_init_attr_ex has where the padding was: set it.
	 */
	attr_ex.comp_mask = 0;
	if (pd) {
		attr_ex.comp_mask = IBV_QP_INIT_ATTR_PD;
		attr_ex.pd = pd;
	}
	ret = rdma_create_qp_ex(id, &attr_ex);
	if (!ret)
		memcpy(qp_init_attr, &attr_ex, sizeof(*qp_init_attr));
	return ret;
}

KQP_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id || !id->qp)
		return;
	ibv_destroy_qp(id->qp);
}

/*
 * ibv_destroy_qp() of an id's QP: the id lets go of it and its CQs; @d is
 * the kernel's answer to the QP's destruction.
 */
void kqp_id_qp_gone(struct rdma_cm_id *id, const struct kqp_destroy_qp *d)
{
	id->qp = NULL;
	kqp_id_drop_auto_cqs(id, d);
}

