// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A QP's state and attributes: KQP_IOCTL_MODIFY_QP and _QUERY_QP, the
 * attributes between the ABI's struct kqp_qp_attr and ib_core's, what a
 * move to RESET does to the kernel's slots and rings, and how kqp moves
 * a QP on an id as its connection is made and taken down.
 */
#include <rdma/ib_cm.h>

#include "kqp.h"
#include "pd.h"
#include "qp.h"

/* States and attribute masks go to ib_core as the caller gave them. */
KQP_SAME_AS_IB(KQP_QPS_RESET, IB_QPS_RESET);
KQP_SAME_AS_IB(KQP_QPS_INIT, IB_QPS_INIT);
KQP_SAME_AS_IB(KQP_QPS_RTR, IB_QPS_RTR);
KQP_SAME_AS_IB(KQP_QPS_RTS, IB_QPS_RTS);
KQP_SAME_AS_IB(KQP_QPS_SQD, IB_QPS_SQD);
KQP_SAME_AS_IB(KQP_QPS_SQE, IB_QPS_SQE);
KQP_SAME_AS_IB(KQP_QPS_ERR, IB_QPS_ERR);
KQP_SAME_AS_IB(KQP_QP_ATTR_STATE, IB_QP_STATE);
KQP_SAME_AS_IB(KQP_QP_ATTR_CUR_STATE, IB_QP_CUR_STATE);
KQP_SAME_AS_IB(KQP_QP_ATTR_EN_SQD_ASYNC_NOTIFY, IB_QP_EN_SQD_ASYNC_NOTIFY);
KQP_SAME_AS_IB(KQP_QP_ATTR_ACCESS_FLAGS, IB_QP_ACCESS_FLAGS);
KQP_SAME_AS_IB(KQP_QP_ATTR_PKEY_INDEX, IB_QP_PKEY_INDEX);
KQP_SAME_AS_IB(KQP_QP_ATTR_PORT, IB_QP_PORT);
KQP_SAME_AS_IB(KQP_QP_ATTR_QKEY, IB_QP_QKEY);
KQP_SAME_AS_IB(KQP_QP_ATTR_AV, IB_QP_AV);
KQP_SAME_AS_IB(KQP_QP_ATTR_PATH_MTU, IB_QP_PATH_MTU);
KQP_SAME_AS_IB(KQP_QP_ATTR_TIMEOUT, IB_QP_TIMEOUT);
KQP_SAME_AS_IB(KQP_QP_ATTR_RETRY_CNT, IB_QP_RETRY_CNT);
KQP_SAME_AS_IB(KQP_QP_ATTR_RNR_RETRY, IB_QP_RNR_RETRY);
KQP_SAME_AS_IB(KQP_QP_ATTR_RQ_PSN, IB_QP_RQ_PSN);
KQP_SAME_AS_IB(KQP_QP_ATTR_MAX_QP_RD_ATOMIC, IB_QP_MAX_QP_RD_ATOMIC);
KQP_SAME_AS_IB(KQP_QP_ATTR_ALT_PATH, IB_QP_ALT_PATH);
KQP_SAME_AS_IB(KQP_QP_ATTR_MIN_RNR_TIMER, IB_QP_MIN_RNR_TIMER);
KQP_SAME_AS_IB(KQP_QP_ATTR_SQ_PSN, IB_QP_SQ_PSN);
KQP_SAME_AS_IB(KQP_QP_ATTR_MAX_DEST_RD_ATOMIC, IB_QP_MAX_DEST_RD_ATOMIC);
KQP_SAME_AS_IB(KQP_QP_ATTR_PATH_MIG_STATE, IB_QP_PATH_MIG_STATE);
KQP_SAME_AS_IB(KQP_QP_ATTR_CAP, IB_QP_CAP);
KQP_SAME_AS_IB(KQP_QP_ATTR_DEST_QPN, IB_QP_DEST_QPN);

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
	if (r->nr) {
		/* Pairs with kqp_wq_retired() (lib/ring.h): the slots are free. */
		smp_store_release(&r->hdr->retired, qp->sq.tail);
	}
	/* No receive is left to drain the ring after: it is rung again. */
	if (qp->rq_async) {
		kqp_rq_commit(qp, false);
		/* Pairs with kqp_wq_retired() (lib/ring.h), as above. */
		smp_store_release(&rr->hdr->retired, qp->rq.tail);
	}
	spin_unlock_irq(&qp->lock);
}

/*
 * Move @qp, an RC QP on @cm_id that rdma_cm does not hold
 * (kqp_core_create_qp()), to @state as rdma_cm moves the QPs it holds
 * (cma_modify_qp_rtr(), _rts() and _err()): to RTR, INIT again first for
 * what the id learnt since the QP was made, and on to RTS, with @param's
 * responder resources and initiator depth when it is given; or to ERR.
 * The attributes are rdma_cm's (rdma_init_qp_attr()).  ENXIO once the
 * QP's hardware went.  Under the id's handler lock or its mutex; takes
 * only @qp->move_mutex, so rdma_cm's handler, shared by every id, never
 * waits for a device's hw_rwsem.
 */
int kqp_qp_cm_move(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		   enum ib_qp_state state, const struct rdma_conn_param *param)
{
	static const enum ib_qp_state steps[] = {
		IB_QPS_INIT, IB_QPS_RTR, IB_QPS_RTS,
	};
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	int i, mask = IB_QP_STATE, ret = 0;

	mutex_lock(&qp->move_mutex);
	if (!qp->qp) {
		ret = -ENXIO;
		goto out;
	}
	if (state == IB_QPS_ERR) {
		ret = ib_modify_qp(qp->qp, &attr, mask);
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = steps[i];
		ret = rdma_init_qp_attr(cm_id, &attr, &mask);
		if (ret)
			break;
		if (param && steps[i] == IB_QPS_RTR)
			attr.max_dest_rd_atomic = param->responder_resources;
		if (param && steps[i] == IB_QPS_RTS)
			attr.max_rd_atomic = param->initiator_depth;
		ret = ib_modify_qp(qp->qp, &attr, mask);
		if (ret || steps[i] == state)
			break;
	}
out:
	mutex_unlock(&qp->move_mutex);
	return ret;
}

/*
 * rdma_accept(), with the handler's lock held: the passive side's answer
 * to a REQ (@param), or the active side's to a REP (NULL: the RTU, as
 * ucma's users answer CONNECT_RESPONSE).  @qp, the id's RC QP or NULL,
 * first goes to RTS, or to RTR where iWARP's CM takes it on, with
 * @param's resources, as rdma_cm moves a QP it holds (cma_accept_ib(),
 * cma_accept_iw(), cma_rep_recv()).  When that or the accept fails, the
 * QP goes to ERR and the peer gets a REJ, as from rdma_accept().
 */
int kqp_qp_cm_accept(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		     struct rdma_conn_param *param)
{
	enum ib_qp_state to = IB_QPS_RTS;
	int ret = 0;

	if (param && !rdma_cap_ib_cm(cm_id->device, cm_id->port_num))
		to = IB_QPS_RTR;
	if (qp)
		ret = kqp_qp_cm_move(qp, cm_id, to, param);
	if (ret) {
		kqp_qp_cm_move(qp, cm_id, IB_QPS_ERR, NULL);
		rdma_reject(cm_id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
		return ret;
	}
	/* It moves no QP of ours, and rejects on failure. */
	ret = rdma_accept(cm_id, param);
	if (ret && qp)
		kqp_qp_cm_move(qp, cm_id, IB_QPS_ERR, NULL);
	return ret;
}

/*
 * What rdma_cm's handler does for a QP it holds, for @qp (the id's RC QP,
 * or NULL), in the handler: a REP is answered at once
 * (kqp_qp_cm_accept()), and the owner gets ESTABLISHED, or
 * CONNECT_ERROR; a REJ on an IB CM device moves the QP to ERR.  An id
 * without a QP gets CONNECT_RESPONSE, which its owner answers
 * (kqp_establish_ioctl()).
 */
void kqp_qp_cm_event(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		     struct rdma_cm_event *event)
{
	int ret;

	if (!qp)
		return;
	if (event->event == RDMA_CM_EVENT_REJECTED &&
	    rdma_cap_ib_cm(cm_id->device, cm_id->port_num)) {
		kqp_qp_cm_move(qp, cm_id, IB_QPS_ERR, NULL);
	} else if (event->event == RDMA_CM_EVENT_CONNECT_RESPONSE) {
		ret = kqp_qp_cm_accept(qp, cm_id, NULL);
		event->event = ret ? RDMA_CM_EVENT_CONNECT_ERROR :
				     RDMA_CM_EVENT_ESTABLISHED;
		event->status = ret;
	}
}

/* The standard attribute bits, as enum ibv_qp_attr_mask; no resizing. */
#define KQP_QP_ATTR_SETTABLE	(((IB_QP_DEST_QPN << 1) - 1) & ~IB_QP_CAP)

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

	if (mask & ~KQP_QP_ATTR_SETTABLE)
		return -EOPNOTSUPP;
	if (((mask & IB_QP_STATE) && u->qp_state > IB_QPS_ERR) ||
	    ((mask & IB_QP_CUR_STATE) && u->cur_qp_state > IB_QPS_ERR))
		return -EINVAL;
	/*
	 * One of IB's five MTUs: rxe refuses only those above its port's,
	 * and turns 0 into a packet size of -1 (ib_mtu_enum_to_int()).
	 */
	if ((mask & IB_QP_PATH_MTU) &&
	    (u->path_mtu < IB_MTU_256 || u->path_mtu > IB_MTU_4096))
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
	 * kqp moves a QP on an id from state to state (kqp_qp_cm_move());
	 * the caller may break it (into ERR) and change what its current
	 * state allows (RTS to RTS, say), as librdmacm's users do.
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
	kqp_vobj_put_hw(&qp->vobj);
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

	if (cmd->attr_mask & ~(KQP_QP_ATTR_SETTABLE | IB_QP_CAP))
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
	kqp_vobj_put_hw(&qp->vobj);
	/* Not under hw_rwsem: device removal would wait on the copy. */
	return ret ? ret : kqp_ucmd_respond(ucmd, sizeof(*cmd));
}
