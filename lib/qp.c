// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * QPs: ibv_create_qp() and friends for QPs the caller moves through their
 * states, and the post calls every QP uses.  Posting copies a whole list
 * of work requests into one buffer and hands it to the kernel in one
 * ioctl; the kernel checks each request before posting it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kqp_priv.h"
#include "ring.h"

/* Wait until every async event reported for the QP was acked. */
int kqp_qp_wait_events(struct kqp_lqp *qp, uint32_t reported)
{
	pthread_mutex_lock(&qp->ibv.mutex);
	while (qp->ibv.events_completed != reported)
		pthread_cond_wait(&qp->ibv.cond, &qp->ibv.mutex);
	pthread_mutex_unlock(&qp->ibv.mutex);
	return 0;
}

/* What every KQP_IOCTL_CREATE_QP says of the QP; the caller adds the rest. */
void kqp_qp_cmd_init(struct kqp_create_qp *cmd, struct kqp_lqp *qp,
		     enum ibv_qp_type type, int sq_sig_all,
		     const struct ibv_qp_cap *cap)
{
	const char *rings = getenv("KQP_RINGS");
	const char *recv = getenv("KQP_RECV_ASYNC");

	cmd->qp_type = type == IBV_QPT_RC ? KQP_QPT_RC : KQP_QPT_UD;
	cmd->flags = sq_sig_all ? KQP_CREATE_QP_SQ_SIG_ALL : 0;
	/*
	 * KQP_RINGS=0: post with the ioctls; KQP_RECV_ASYNC=0: ring for
	 * every receive; both for comparisons.
	 */
	if (!rings || strcmp(rings, "0")) {
		cmd->flags |= KQP_CREATE_QP_RINGS;
		if (!recv || strcmp(recv, "0"))
			cmd->flags |= KQP_CREATE_QP_RECV_ASYNC;
	}
	cmd->uid = (uintptr_t)qp;
	kqp_qp_cap_to_kern(&cmd->cap, cap);
}

/*
 * KQP_IOCTL_CREATE_QP; a kernel without asynchronous receive rings, or
 * without submission rings, is asked again without them.  0 or -errno.
 */
int kqp_create_qp_cmd(int fd, struct kqp_create_qp *cmd)
{
	int ret;

	ret = kqp_ioctl(fd, KQP_IOCTL_CREATE_QP, cmd);
	if (ret == -EOPNOTSUPP && (cmd->flags & KQP_CREATE_QP_RECV_ASYNC)) {
		cmd->flags &= ~KQP_CREATE_QP_RECV_ASYNC;
		ret = kqp_ioctl(fd, KQP_IOCTL_CREATE_QP, cmd);
	}
	if (ret == -EOPNOTSUPP && (cmd->flags & KQP_CREATE_QP_RINGS)) {
		cmd->flags &= ~KQP_CREATE_QP_RINGS;
		ret = kqp_ioctl(fd, KQP_IOCTL_CREATE_QP, cmd);
	}
	return ret;
}

static void kqp_lwq_init(struct kqp_lwq *wq, void *ring,
			 const struct kqp_wq_ring_info *info, uint32_t max_sge,
			 uint32_t max_inline, uint32_t depth, bool async)
{
	if (!info->entries)
		return;
	wq->max_sge = max_sge;
	wq->max_inline = max_inline;
	wq->depth = depth < info->entries ? depth : info->entries;
	wq->async = async;
	wq->hdr = (struct kqp_wq_ring_hdr *)((char *)ring + info->off_hdr);
	wq->entries = (char *)ring + info->off_entries;
	wq->entry_size = info->entry_size;
	wq->tail = 0;
	wq->nr = info->entries;
}

/*
 * Note the rings the kernel gave the QP, if any; they are mapped when the
 * QP is first posted to.  A mapping costs a QP's creation and destruction
 * more than the rings themselves (an mmap() and a munmap() together cost
 * about half a CREATE_QP), and a connection that never posts, or posts
 * only through its peer, never needs it.
 */
static void kqp_qp_offer_rings(struct kqp_lqp *qp,
			       const struct kqp_create_qp *cmd)
{
	pthread_mutex_init(&qp->sq.lock, NULL);
	pthread_mutex_init(&qp->rq.lock, NULL);
	pthread_mutex_init(&qp->ring_lock, NULL);
	qp->ring_gen = kqp_fork_gen();
	qp->ring_state = KQP_RINGS_NONE;
	if ((cmd->flags & KQP_CREATE_QP_RINGS) && cmd->out_rings.mmap_size) {
		qp->ring_info = cmd->out_rings;
		qp->ring_state = KQP_RINGS_OFFERED;
	}
}

/*
 * True when the QP's rings are mapped, mapping them first if they were
 * only offered.  A QP whose rings cannot be mapped posts with the ioctls,
 * which work on it all the same; so does a child after fork(), which has
 * no mapping and cannot make one (the table is its parent's), and gets
 * the error every command gets there.
 */
static bool kqp_qp_rings(struct kqp_lqp *qp)
{
	const struct kqp_qp_ring_info *info = &qp->ring_info;
	int state;
	void *ring;

	if (qp->ring_gen != kqp_fork_gen())
		return false;
	/* Pairs with the store-release below: the queues are filled in. */
	state = __atomic_load_n(&qp->ring_state, __ATOMIC_ACQUIRE);
	if (state != KQP_RINGS_OFFERED)
		return state == KQP_RINGS_MAPPED;

	pthread_mutex_lock(&qp->ring_lock);
	if (qp->ring_state == KQP_RINGS_OFFERED) {
		ring = mmap(NULL, info->mmap_size, PROT_READ | PROT_WRITE,
			    MAP_SHARED, qp->ibv.context->cmd_fd,
			    info->mmap_offset);
		state = KQP_RINGS_NONE;
		if (ring != MAP_FAILED) {
			qp->ring = ring;
			kqp_lwq_init(&qp->sq, ring, &info->sq,
				     qp->cap.max_send_sge,
				     qp->cap.max_inline_data,
				     qp->cap.max_send_wr,
				     info->flags & KQP_QP_RINGS_SEND_ASYNC);
			kqp_lwq_init(&qp->rq, ring, &info->rq,
				     qp->cap.max_recv_sge, 0,
				     qp->cap.max_recv_wr,
				     info->flags & KQP_QP_RINGS_RECV_ASYNC);
			state = KQP_RINGS_MAPPED;
		}
		__atomic_store_n(&qp->ring_state, state, __ATOMIC_RELEASE);
	}
	state = qp->ring_state;
	pthread_mutex_unlock(&qp->ring_lock);
	return state == KQP_RINGS_MAPPED;
}

/* Undo kqp_qp_init(): the QP is about to be freed. */
void kqp_qp_fini(struct kqp_lqp *qp)
{
	if (qp->ring)
		munmap(qp->ring, qp->ring_info.mmap_size);
	pthread_mutex_destroy(&qp->ring_lock);
	pthread_mutex_destroy(&qp->sq.lock);
	pthread_mutex_destroy(&qp->rq.lock);
	pthread_cond_destroy(&qp->ibv.cond);
	pthread_mutex_destroy(&qp->ibv.mutex);
}

/*
 * Fill in the ibv_qp of a QP the kernel made with @cmd, in @state; of
 * @attr, only qp_context, the CQs, the SRQ and qp_type are used.
 */
void kqp_qp_init(struct kqp_lqp *qp, const struct kqp_create_qp *cmd,
		 struct ibv_context *ctx, struct ibv_pd *pd,
		 const struct ibv_qp_init_attr *attr, enum ibv_qp_state state)
{
	kqp_qp_cap_from_kern(&qp->cap, &cmd->cap);
	qp->ibv.context = ctx;
	qp->ibv.qp_context = attr->qp_context;
	qp->ibv.pd = pd;
	qp->ibv.send_cq = attr->send_cq;
	qp->ibv.recv_cq = attr->recv_cq;
	qp->ibv.srq = attr->srq;
	qp->ibv.handle = cmd->out_qp;
	qp->ibv.qp_num = cmd->out_qp_num;
	qp->ibv.state = state;
	qp->ibv.qp_type = attr->qp_type;
	pthread_mutex_init(&qp->ibv.mutex, NULL);
	pthread_cond_init(&qp->ibv.cond, NULL);
	kqp_qp_offer_rings(qp, cmd);
}

/*
 * ibv_create_qp(), and with @ex (already checked) ibv_create_qp_ex(): the
 * QP in *@qpp, 0 or -errno.
 */
static int kqp_qp_create(struct ibv_pd *pd, struct ibv_qp_init_attr *attr,
			 const struct ibv_qp_init_attr_ex *ex,
			 struct ibv_qp **qpp)
{
	struct kqp_create_qp cmd = { .size = sizeof(cmd) };
	struct kqp_lqp *qp;
	int ret;

	if (!pd || !attr || !attr->send_cq || !attr->recv_cq)
		return -EINVAL;
	if (attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UD)
		return -EOPNOTSUPP;
	if (attr->srq && attr->srq->context->cmd_fd != pd->context->cmd_fd)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	kqp_qp_cmd_init(&cmd, qp, attr->qp_type, attr->sq_sig_all, &attr->cap);
	/*
	 * The flag would assert that the peer retries RNR NAKs for ever: the
	 * kernel learns that from an id's connection, the library cannot
	 * know it of a QP the program connects itself.
	 */
	cmd.flags &= ~KQP_CREATE_QP_RECV_ASYNC;
	cmd.pd = pd->handle;
	cmd.send_cq = attr->send_cq->handle;
	cmd.recv_cq = attr->recv_cq->handle;
	cmd.srq = attr->srq ? attr->srq->handle : 0;
	ret = kqp_create_qp_cmd(pd->context->cmd_fd, &cmd);
	if (ret) {
		free(qp);
		return ret;
	}
	kqp_qp_cap_from_kern(&attr->cap, &cmd.cap);
	kqp_qp_init(qp, &cmd, pd->context, pd, attr, IBV_QPS_RESET);
	if (ex)
		kqp_qp_ex_init(qp, ex);
	*qpp = &qp->ibv;
	return 0;
}

KQP_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
					struct ibv_qp_init_attr *attr)
{
	struct ibv_qp *qp;
	int ret;

	ret = kqp_qp_create(pd, attr, NULL, &qp);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return qp;
}

/*
 * The context op behind the inline ibv_create_qp_ex(), which takes a
 * comp_mask of just a PD to ibv_create_qp() itself.
 */
struct ibv_qp *kqp_create_qp_ex(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_init_attr init = {};
	struct ibv_qp *qp;
	int ret;

	ret = kqp_qp_ex_check(attr);
	if (!ret && (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd ||
		     attr->pd->context != context))
		ret = -EINVAL;
	if (ret) {
		errno = -ret;
		return NULL;
	}
	init.qp_context = attr->qp_context;
	init.send_cq = attr->send_cq;
	init.recv_cq = attr->recv_cq;
	init.srq = attr->srq;
	init.cap = attr->cap;
	init.qp_type = attr->qp_type;
	init.sq_sig_all = attr->sq_sig_all;
	ret = kqp_qp_create(attr->pd, &init, attr, &qp);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	attr->cap = init.cap;
	return qp;
}

KQP_EXPORT int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			     int attr_mask)
{
	struct kqp_modify_qp cmd = {
		.size = sizeof(cmd),
		.qp = qp->handle,
		.attr_mask = attr_mask,
	};
	int ret;

	if (to_lqp(qp)->gone)
		return ENOENT;
	kqp_qp_attr_to_kern(&cmd.attr, attr);
	ret = kqp_ioctl(qp->context->cmd_fd, KQP_IOCTL_MODIFY_QP, &cmd);
	if (ret)
		return -ret;
	if (attr_mask & IBV_QP_STATE)
		qp->state = attr->qp_state;
	return 0;
}

KQP_EXPORT int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			    int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct kqp_query_qp cmd = {
		.size = sizeof(cmd),
		.qp = qp->handle,
		.attr_mask = attr_mask,
	};
	struct kqp_qp_attr *a = &cmd.out_attr;
	int ret;

	if (to_lqp(qp)->gone)
		return ENOENT;
	ret = kqp_ioctl(qp->context->cmd_fd, KQP_IOCTL_QUERY_QP, &cmd);
	if (ret)
		return -ret;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = a->qp_state;
	kqp_qp_attr_from_kern(attr, a);
	kqp_qp_cap_from_kern(&attr->cap, &cmd.out_cap);
	if (init_attr) {
		memset(init_attr, 0, sizeof(*init_attr));
		init_attr->qp_context = qp->qp_context;
		init_attr->send_cq = qp->send_cq;
		init_attr->recv_cq = qp->recv_cq;
		init_attr->srq = qp->srq;
		init_attr->cap = attr->cap;
		init_attr->qp_type = qp->qp_type;
		init_attr->sq_sig_all = cmd.out_sq_sig_all;
	}
	qp->state = attr->qp_state;
	return 0;
}

/*
 * Destroy the kernel's QP, and let the id it was made on (if any) drop it
 * and the CQs made for it; the struct stays.  Returns 0 or -errno.
 */
int kqp_qp_destroy_kern(struct kqp_lqp *qp)
{
	struct kqp_destroy_qp cmd = { .size = sizeof(cmd), .qp = qp->ibv.handle };
	int ret;

	ret = kqp_ioctl(qp->ibv.context->cmd_fd, KQP_IOCTL_DESTROY_QP, &cmd);
	if (ret)
		return ret;
	kqp_qp_wait_events(qp, cmd.out_events_reported);
	/* A QP made on an id: the CQs kqp made for it went with it. */
	if (qp->id)
		kqp_id_qp_gone(qp->id, &cmd);
	qp->id = NULL;
	return 0;
}

KQP_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct kqp_lqp *qp = to_lqp(ibqp);
	int ret;

	/* Its id took the kernel's QP with it; only ours is left. */
	if (!qp->gone) {
		ret = kqp_qp_destroy_kern(qp);
		if (ret)
			return -ret;
	}
	kqp_qp_ex_fini(qp);
	kqp_qp_fini(qp);
	free(qp);
	return 0;
}

static int kqp_qp_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			uint16_t lid, unsigned long req)
{
	struct kqp_mcast_attach cmd = {
		.size = sizeof(cmd), .qp = qp->handle, .lid = lid,
	};

	if (!gid)
		return -EINVAL;
	if (to_lqp(qp)->gone)
		return -ENOENT;
	memcpy(cmd.gid, gid->raw, sizeof(cmd.gid));
	return kqp_ioctl(qp->context->cmd_fd, req, &cmd);
}

/* As libibverbs: 0, or the errno value. */
KQP_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				uint16_t lid)
{
	return -kqp_qp_mcast(qp, gid, lid, KQP_IOCTL_ATTACH_MCAST);
}

KQP_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
				uint16_t lid)
{
	return -kqp_qp_mcast(qp, gid, lid, KQP_IOCTL_DETACH_MCAST);
}

/* A request's opcode and flags go to the kernel as the caller wrote them. */
KQP_SAME_AS_IBV(KQP_WR_OP_RDMA_WRITE, IBV_WR_RDMA_WRITE);
KQP_SAME_AS_IBV(KQP_WR_OP_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
KQP_SAME_AS_IBV(KQP_WR_OP_SEND, IBV_WR_SEND);
KQP_SAME_AS_IBV(KQP_WR_OP_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM);
KQP_SAME_AS_IBV(KQP_WR_OP_RDMA_READ, IBV_WR_RDMA_READ);
KQP_SAME_AS_IBV(KQP_WR_OP_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
KQP_SAME_AS_IBV(KQP_WR_OP_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
KQP_SAME_AS_IBV(KQP_SEND_FLAG_FENCE, IBV_SEND_FENCE);
KQP_SAME_AS_IBV(KQP_SEND_FLAG_SIGNALED, IBV_SEND_SIGNALED);
KQP_SAME_AS_IBV(KQP_SEND_FLAG_SOLICITED, IBV_SEND_SOLICITED);
KQP_SAME_AS_IBV(KQP_SEND_FLAG_INLINE, IBV_SEND_INLINE);

/*
 * Bytes a request takes in the kernel's list; the kernel reads the layout
 * from the flags as they pass through.
 */
static size_t kqp_send_wr_size(const struct ibv_send_wr *wr)
{
	size_t len = 0;
	int i;

	if (!(wr->send_flags & KQP_SEND_FLAG_INLINE))
		return kqp_send_wr_bytes(wr->num_sge, 0);
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	return kqp_send_wr_bytes(0, len);
}

/*
 * The list in the kernel's form: each request followed by its SGEs or,
 * inline, by its bytes (copied here, from the caller's buffers).
 */
static void kqp_send_wr_fill(void *p, enum ibv_qp_type type,
			     const struct ibv_send_wr *wr)
{
	struct kqp_send_wr *k = p;
	int i;

	memset(k, 0, sizeof(*k));
	k->wr_id = wr->wr_id;
	k->opcode = wr->opcode;
	k->send_flags = wr->send_flags;
	k->imm_data = wr->imm_data;
	switch (k->opcode) {
	case KQP_WR_OP_ATOMIC_CMP_AND_SWP:
	case KQP_WR_OP_ATOMIC_FETCH_AND_ADD:
		k->wr.atomic.remote_addr = wr->wr.atomic.remote_addr;
		k->wr.atomic.compare_add = wr->wr.atomic.compare_add;
		k->wr.atomic.swap = wr->wr.atomic.swap;
		k->wr.atomic.rkey = wr->wr.atomic.rkey;
		break;
	case KQP_WR_OP_RDMA_WRITE:
	case KQP_WR_OP_RDMA_WRITE_WITH_IMM:
	case KQP_WR_OP_RDMA_READ:
		k->wr.rdma.remote_addr = wr->wr.rdma.remote_addr;
		k->wr.rdma.rkey = wr->wr.rdma.rkey;
		break;
	default:
		/* wr.ud shares its bytes with wr.rdma: only UD reads it. */
		if (type == IBV_QPT_UD && wr->wr.ud.ah) {
			k->wr.ud.ah = wr->wr.ud.ah->handle;
			k->wr.ud.remote_qpn = wr->wr.ud.remote_qpn;
			k->wr.ud.remote_qkey = wr->wr.ud.remote_qkey;
		}
		break;
	}
	if (k->send_flags & KQP_SEND_FLAG_INLINE) {
		char *d = (char *)(k + 1);

		for (i = 0; i < wr->num_sge; i++) {
			memcpy(d, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			d += wr->sg_list[i].length;
			k->inline_len += wr->sg_list[i].length;
		}
	} else {
		struct kqp_sge *s = (struct kqp_sge *)(k + 1);

		k->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			s[i].addr = wr->sg_list[i].addr;
			s[i].length = wr->sg_list[i].length;
			s[i].lkey = wr->sg_list[i].lkey;
		}
	}
}

/*
 * A quarter of the queue, at most 16: the sends in flight that keep the
 * device busy through a kworker's wakeup, and the receives a send's
 * doorbell takes along (kqp_rq_published()).
 */
static uint32_t kqp_lwq_busy(const struct kqp_lwq *wq)
{
	uint32_t busy = wq->depth / 4;

	return busy > 16 ? 16 : busy ? busy : 1;
}

/*
 * Has an asynchronous receive ring a batch of entries the kernel has not
 * taken (kqp_lwq_busy())?  A send's doorbell posts them, and that work is
 * on the send's way to the wire, so it is done a batch at a time: a
 * ping-pong pays it once in that many round trips, not on each.  Fewer
 * wait: the kernel is committed to drain them before the device runs
 * short.  A stale answer costs a drain, or leaves them to the kernel:
 * relaxed loads suffice.
 */
static bool kqp_rq_published(const struct kqp_lwq *rq)
{
	return rq && __atomic_load_n(&rq->hdr->tail, __ATOMIC_RELAXED) -
		     __atomic_load_n(&rq->hdr->head, __ATOMIC_RELAXED) >=
		     kqp_lwq_busy(rq);
}

/*
 * One doorbell for one of a QP's rings; the QP's errno, or the call's.
 * A send's also drains the receives an asynchronous receive ring holds,
 * as an entry of its own, whose errno is not the send's: a ping-pong's
 * receives then reach the device in its sends' system calls, a batch at
 * a time, with no kworker to wake after a completion.  Only with the receive
 * queue's lock, taken without waiting: a receive post that holds it may
 * be taking back entries a refused doorbell left (kqp_ring_post()),
 * which no other drain may post meanwhile.
 */
static int kqp_ring_doorbell(const struct kqp_post_target *t, bool recv)
{
	struct kqp_doorbell_entry e[2] = {
		{ .qp = t->handle, .flags = KQP_DB_RECV },
		{ .qp = t->handle, .flags = KQP_DB_SEND },
	};
	struct kqp_doorbell db = {
		.size = sizeof(db),
		.flags = kqp_session_poller() ? KQP_DOORBELL_WAKE_POLLER : 0,
		.count = 1,
		.entry_size = sizeof(e[0]),
		.entries = (uintptr_t)&e[recv ? 0 : 1],
	};
	struct kqp_doorbell_entry *mine = recv ? &e[0] : &e[1];
	bool rq_locked = false;
	int ret;

	if (!recv && kqp_rq_published(t->rq) &&
	    !pthread_mutex_trylock(&t->rq->lock)) {
		rq_locked = true;
		db.count = 2;
		db.entries = (uintptr_t)e;
	}

	ret = kqp_ioctl(t->fd, KQP_IOCTL_DOORBELL, &db);
	/*
	 * The poller died with the process that made it, and this one
	 * shares its table (a CLONE_VM child): nothing was drained, so
	 * ring as a table without one does, from now on.
	 */
	if (ret == -ESRCH && db.flags) {
		kqp_session_poller_gone();
		db.flags = 0;
		ret = kqp_ioctl(t->fd, KQP_IOCTL_DOORBELL, &db);
	}
	if (rq_locked)
		pthread_mutex_unlock(&t->rq->lock);
	return ret ? ret : -mine->out_errno;
}

/*
 * What rdma-core's providers refuse at post time, and the kernel, which
 * reports the rest of a send's faults as completions on a ring, would
 * otherwise only report that way: the request's shape against the QP's
 * type and caps.  Its MRs and AH are the kernel's to check.
 */
static bool kqp_send_entry_ok(const struct kqp_lwq *wq, enum ibv_qp_type type,
			      const struct kqp_send_wr *k)
{
	const uint32_t flags = KQP_SEND_FLAG_FENCE | KQP_SEND_FLAG_SIGNALED |
			       KQP_SEND_FLAG_SOLICITED | KQP_SEND_FLAG_INLINE;
	bool inl = k->send_flags & KQP_SEND_FLAG_INLINE;

	if (k->send_flags & ~flags)
		return false;
	if (inl ? k->inline_len > wq->max_inline : k->num_sge > wq->max_sge)
		return false;
	switch (k->opcode) {
	case KQP_WR_OP_SEND:
	case KQP_WR_OP_SEND_WITH_IMM:
		return true;
	case KQP_WR_OP_RDMA_WRITE:
	case KQP_WR_OP_RDMA_WRITE_WITH_IMM:
		return type == IBV_QPT_RC;
	case KQP_WR_OP_RDMA_READ:
		return type == IBV_QPT_RC && !inl;
	case KQP_WR_OP_ATOMIC_CMP_AND_SWP:
	case KQP_WR_OP_ATOMIC_FETCH_AND_ADD:
		return type == IBV_QPT_RC && !inl && k->num_sge == 1 &&
		       ((const struct kqp_sge *)(k + 1))->length == 8;
	default:
		return false;
	}
}

/* Ring until the kernel's head passes @end, or it stops; its errno. */
static int kqp_ring_until(const struct kqp_post_target *t, bool recv,
			  uint32_t end)
{
	struct kqp_lwq *wq = t->wq;
	uint32_t head = kqp_wq_consumed(&wq->hdr->head), h;
	int ret;

	/* A doorbell takes a bounded number: ring again. */
	do {
		ret = kqp_ring_doorbell(t, recv);
		h = kqp_wq_consumed(&wq->hdr->head);
		if (h == head)
			break;
		head = h;
	} while (!ret && (int32_t)(end - head) > 0);
	if (!ret && (int32_t)(end - head) > 0)
		ret = -EIO;
	return ret;
}

/*
 * How long a receive waits for the poller to post it before it rings:
 * KQP_RECV_SPIN_US, 50 us by default (a pass of the poller over a few QPs
 * takes a few microseconds, several times that under TCG).
 */
static uint64_t kqp_recv_spin_ns(void)
{
	static uint64_t ns = UINT64_MAX;
	uint64_t v = __atomic_load_n(&ns, __ATOMIC_RELAXED);
	unsigned long us = 50;

	if (v != UINT64_MAX)
		return v;
	/* Anything but a number up to 1 s keeps the default. */
	if (kqp_env_ulong("KQP_RECV_SPIN_US", 1000000, &us) < 0)
		us = 50;
	v = us * 1000ULL;
	__atomic_store_n(&ns, v, __ATOMIC_RELAXED);
	return v;
}

static uint64_t kqp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * A receive ring the poller serves (KQP_WQ_RING_POLLED): wait a while for
 * its head to pass @end, which means the device has every receive below
 * it.  False when it did not (the poller went to sleep, the ring stopped
 * on an entry, or time ran out): the caller rings.  The head's acquire
 * load pairs with kqp_ring_drain()'s release (kqp_wq_consumed()); the
 * flag's load is relaxed, as it guards nothing we read: a stale one
 * costs a wait or a doorbell, never a receive.
 */
static bool kqp_recv_wait_poller(struct kqp_lwq *wq, uint32_t end)
{
	uint64_t deadline = 0;
	unsigned int i;

	for (i = 0;; i++) {
		if ((int32_t)(kqp_wq_consumed(&wq->hdr->head) - end) >= 0)
			return true;
		if (!(kqp_ring_flags(&wq->hdr->flags) & KQP_WQ_RING_POLLED))
			return false;
		if (i % 64 == 0) {
			uint64_t now = kqp_now_ns();

			if (!deadline)
				deadline = now + kqp_recv_spin_ns();
			else if (now >= deadline)
				return false;
		}
	}
}

/*
 * Post through the queue's ring: copy as many requests as fit into its
 * entries and publish them.
 *
 * Receives are rung for at once, and return only once the kernel has
 * posted them: a receive is there for a message that follows our
 * return.  The kernel stops at one it refuses; those it did not take are
 * withdrawn by moving the tail back, under the queue's lock, so nobody
 * else's entries are lost.  An asynchronous receive ring (@wq->async) is
 * rung for only when the kernel asks: while the device holds half the
 * queue it posts them at the next doorbell (kqp_ring_doorbell()), or
 * once the device is down to fewer, and fails the QP at one it refuses.
 *
 * On a send ring the kernel drains after completions (@wq->async),
 * sends are rung for only when the kernel asks (NEED_DOORBELL): while a
 * signaled send is outstanding it drains the ring after the completion.
 * The device takes @depth sends past @retired, so a fuller queue is
 * ENOMEM, as on a device.  A send the kernel refuses later (an lkey, an
 * address) completes in error; what it can refuse only now is refused
 * here with EINVAL, as rdma-core's providers do.  A device that refuses
 * the sends (a QP not ready to send) fails the doorbell, and ours are
 * withdrawn as receives are: the kernel drains nothing more until the
 * next doorbell.  Elsewhere, sends are posted as receives are.
 */
static int kqp_ring_post(const struct kqp_post_target *t, bool recv,
			 const char *buf, size_t len, uint32_t count,
			 uint32_t *posted)
{
	struct kqp_lwq *wq = t->wq;
	uint32_t start, n = 0, room, head, retired;
	size_t off = 0;
	int ret = 0;

	pthread_mutex_lock(&wq->lock);
	start = wq->tail;
	retired = kqp_wq_retired(&wq->hdr->retired);
	if (wq->async)
		room = wq->depth - (start - retired);
	else
		room = wq->nr - (start - kqp_wq_consumed(&wq->hdr->head));
	/* Only a kernel gone wrong says more than it has. */
	if (room > wq->nr)
		room = 0;
	while (n < count && off < len) {
		const void *e = buf + off;
		size_t sz = recv ? kqp_recv_wr_len(e) : kqp_send_wr_len(e);

		/* More SGEs or inline bytes than the QP's caps, or worse. */
		if (sz > wq->entry_size ||
		    (recv ? ((const struct kqp_recv_wr *)e)->num_sge >
			    wq->max_sge : !kqp_send_entry_ok(wq, t->type, e))) {
			ret = -EINVAL;
			break;
		}
		if (n == room) {
			ret = -ENOMEM;
			break;
		}
		memcpy(wq->entries +
		       (size_t)((start + n) & (wq->nr - 1)) * wq->entry_size,
		       e, sz);
		off += sz;
		n++;
	}
	if (!n)
		goto out;
	wq->tail = start + n;
	kqp_wq_publish(&wq->hdr->tail, wq->tail);
	if (wq->async && recv) {
		/*
		 * Committed: the kernel drains at the next doorbell, or after
		 * the completion that leaves the device fewer than half the
		 * queue, before it runs out; or the poller does.
		 */
		if (!kqp_wq_need_doorbell(&wq->hdr->flags,
					  KQP_WQ_RING_NEED_DOORBELL))
			goto out;
	}
	if (wq->async && !recv) {
		int err;

		/*
		 * The kernel drains after the next signaled completion, a
		 * kworker's wakeup away: worth a saved system call only while
		 * the device has enough queued not to run dry meanwhile.
		 */
		uint32_t f = kqp_wq_need_doorbell(&wq->hdr->flags,
						  KQP_WQ_RING_NEED_DOORBELL |
						  KQP_WQ_RING_POLLED);

		/* The poller drains it: no wakeup, and no system call. */
		if (f == KQP_WQ_RING_POLLED)
			goto out;
		if (!f && start - retired >= kqp_lwq_busy(wq))
			goto out;
		/*
		 * Whatever the doorbell leaves, the kernel keeps, unless it
		 * fails: it drains on (a long list, or a refused entry that
		 * waits for the sends before it) once sends complete.
		 */
		err = kqp_ring_doorbell(t, false);
		if (!err)
			goto out;
		ret = err;
	} else if (!recv || !kqp_recv_wait_poller(wq, wq->tail)) {
		ret = kqp_ring_until(t, recv, wq->tail) ?: ret;
	}
	head = kqp_wq_consumed(&wq->hdr->head);
	/* Ours that the kernel did not take (older ones failed first: none). */
	if ((int32_t)(wq->tail - head) > 0) {
		if ((int32_t)(head - start) < 0)
			head = start;
		n = head - start;
		wq->tail = head;
		kqp_wq_publish(&wq->hdr->tail, wq->tail);
	}
out:
	pthread_mutex_unlock(&wq->lock);
	*posted = n;
	return ret;
}

/*
 * Post @count requests in the kernel's form (@buf, @len bytes): through
 * the queue's ring if it has one, otherwise with one ioctl (@req).
 * *@posted: how many were posted; on failure, the index of the one that
 * was not.  0 or -errno.
 */
int kqp_post_buf(const struct kqp_post_target *t, unsigned long req,
		 bool recv, void *buf, size_t len, uint32_t count,
		 uint32_t *posted)
{
	struct kqp_post cmd = {
		.size = sizeof(cmd),
		.qp = t->handle,
		.count = count,
		.wrs = (uintptr_t)buf,
		.wrs_len = len,
	};
	int ret;

	if (t->wq)
		return kqp_ring_post(t, recv, buf, len, count, posted);
	ret = kqp_ioctl(t->fd, req, &cmd);
	*posted = ret ? cmd.out_posted : count;
	return ret;
}

/* The request after @wr, an ibv_recv_wr or an ibv_send_wr. */
static void *kqp_wr_next(const void *wr, bool recv)
{
	return recv ? (void *)((const struct ibv_recv_wr *)wr)->next :
		      (void *)((const struct ibv_send_wr *)wr)->next;
}

/*
 * Hand a built list to the kernel; on failure point at the culprit.
 * 0 or -errno.
 */
static int kqp_post_list(const struct kqp_post_target *t, unsigned long req,
			 void *buf, size_t len, uint32_t count, void *first,
			 void **bad, bool recv)
{
	uint32_t i, posted;
	int ret;
	void *w;

	ret = kqp_post_buf(t, req, recv, buf, len, count, &posted);
	if (!ret)
		return 0;
	w = first;
	for (i = 0; i < posted && w; i++)
		w = kqp_wr_next(w, recv);
	if (bad)
		*bad = w;
	return ret;
}

static size_t kqp_recv_wr_size(const struct ibv_recv_wr *wr)
{
	return kqp_recv_wr_bytes(wr->num_sge);
}

static void kqp_recv_wr_fill(void *p, const struct ibv_recv_wr *wr)
{
	struct kqp_recv_wr *k = p;
	struct kqp_sge *s = (struct kqp_sge *)(k + 1);
	int i;

	k->wr_id = wr->wr_id;
	k->num_sge = wr->num_sge;
	k->__reserved = 0;
	for (i = 0; i < wr->num_sge; i++) {
		s[i].addr = wr->sg_list[i].addr;
		s[i].length = wr->sg_list[i].length;
		s[i].lkey = wr->sg_list[i].lkey;
	}
}

/*
 * A list of ibv_send_wr or of ibv_recv_wr: the walk over either, which
 * kqp_post() writes once.  @req: the ioctl that posts it without a ring.
 */
struct kqp_post_kind {
	unsigned long req;
	bool recv;
};

static const struct kqp_post_kind kqp_send_kind = {
	.req = KQP_IOCTL_POST_SEND,
};

static const struct kqp_post_kind kqp_recv_kind = {
	.req = KQP_IOCTL_POST_RECV,
	.recv = true,
};

static const struct kqp_post_kind kqp_srq_recv_kind = {
	.req = KQP_IOCTL_POST_SRQ_RECV,
	.recv = true,
};

static int kqp_wr_num_sge(const void *wr, bool recv)
{
	return recv ? ((const struct ibv_recv_wr *)wr)->num_sge :
		      ((const struct ibv_send_wr *)wr)->num_sge;
}

/* The request's size in the kernel's form; its num_sge is not negative. */
static size_t kqp_wr_size(const void *wr, bool recv)
{
	return recv ? kqp_recv_wr_size(wr) : kqp_send_wr_size(wr);
}

static void kqp_wr_fill(void *p, enum ibv_qp_type type, const void *wr,
			bool recv)
{
	if (recv)
		kqp_recv_wr_fill(p, wr);
	else
		kqp_send_wr_fill(p, type, wr);
}

/*
 * Post a list in as few ioctls as it takes: one, unless it is longer than
 * KQP_POST_MAX_BYTES in the kernel's form.  A request that cannot be
 * expressed (negative num_sge, larger than a whole list may be) stops the
 * list there, as the kernel stops at one it refuses.  0 or -errno.
 */
static int kqp_post(const struct kqp_post_target *t,
		    const struct kqp_post_kind *kind, void *wr, void **bad)
{
	uint64_t stack[512];
	void *buf = stack, *w, *invalid;
	size_t cap = sizeof(stack);
	int ret = 0;

	if (t->gone) {
		if (bad)
			*bad = wr;
		return -ENOENT;
	}
	while (wr) {
		size_t len = 0, off = 0, sz;
		uint32_t count = 0;

		invalid = NULL;
		for (w = wr; w; w = kqp_wr_next(w, kind->recv)) {
			if (kqp_wr_num_sge(w, kind->recv) < 0 ||
			    (sz = kqp_wr_size(w, kind->recv)) >
			    KQP_POST_MAX_BYTES) {
				invalid = w;
				break;
			}
			if (len + sz > KQP_POST_MAX_BYTES)
				break;
			len += sz;
			count++;
		}
		if (count) {
			if (len > cap) {
				void *p = malloc(len);

				if (!p) {
					ret = -ENOMEM;
					invalid = wr;
					break;
				}
				if (buf != stack)
					free(buf);
				buf = p;
				cap = len;
			}
			for (w = wr; off < len; w = kqp_wr_next(w, kind->recv)) {
				kqp_wr_fill((char *)buf + off, t->type, w,
					    kind->recv);
				off += kqp_wr_size(w, kind->recv);
			}
			ret = kqp_post_list(t, kind->req, buf, len, count, wr,
					    bad, kind->recv);
			if (ret)
				goto out;
		}
		if (invalid) {
			ret = -EINVAL;
			break;
		}
		wr = w;
	}
	if (ret && bad)
		*bad = invalid;
out:
	if (buf != stack)
		free(buf);
	return ret;
}

struct kqp_post_target kqp_qp_target(struct ibv_qp *qp, bool recv)
{
	struct kqp_lqp *lqp = to_lqp(qp);
	struct kqp_lwq *wq = recv ? &lqp->rq : &lqp->sq;

	bool rings = kqp_qp_rings(lqp);

	return (struct kqp_post_target){
		.fd = qp->context->cmd_fd,
		.handle = qp->handle,
		.type = qp->qp_type,
		.gone = lqp->gone,
		.wq = rings && wq->nr ? wq : NULL,
		.rq = rings && !recv && lqp->rq.nr && lqp->rq.async ?
		      &lqp->rq : NULL,
	};
}

/* The context op behind ibv_post_send(): returns 0 or an errno value. */
int kqp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr)
{
	struct kqp_post_target t = kqp_qp_target(qp, false);

	return -kqp_post(&t, &kqp_send_kind, wr, (void **)bad_wr);
}

/* The context op behind ibv_post_recv(). */
int kqp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr)
{
	struct kqp_post_target t = kqp_qp_target(qp, true);

	return -kqp_post(&t, &kqp_recv_kind, wr, (void **)bad_wr);
}

/* The context op behind ibv_post_srq_recv(). */
int kqp_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	struct kqp_post_target t = {
		.fd = srq->context->cmd_fd,
		.handle = srq->handle,
		.type = IBV_QPT_RC,
	};

	return -kqp_post(&t, &kqp_srq_recv_kind, wr, (void **)bad_wr);
}
