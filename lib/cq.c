// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * CQs and completion channels.  A CQ's completions are read from a ring
 * the kernel fills and this process maps: ibv_poll_cq() (and an extended
 * CQ's start_poll/next_poll/end_poll) makes no syscall while completions
 * are waiting, and ibv_req_notify_cq() none at all.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kqp_priv.h"
#include "ring.h"

KQP_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct kqp_create_comp_channel cmd = { .size = sizeof(cmd) };
	struct ibv_comp_channel *channel;
	int ret;

	channel = kqp_ioctl_new(context->cmd_fd, KQP_IOCTL_CREATE_COMP_CHANNEL,
				&cmd, sizeof(*channel), &ret);
	if (!channel) {
		errno = -ret;
		return NULL;
	}
	channel->context = context;
	channel->fd = cmd.out_fd;
	return channel;
}

KQP_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	/* As libibverbs: refused while a CQ uses it. */
	if (channel->refcnt)
		return EBUSY;
	close(channel->fd);
	free(channel);
	return 0;
}

/*
 * Map a CQ's ring and fill in the ibv_cq; the kernel object exists.
 * Returns 0 or -errno.
 */
int kqp_cq_map(struct kqp_lcq *cq, const struct kqp_ring_info *info,
	       uint32_t handle, int cqe, struct ibv_context *ctx,
	       struct ibv_comp_channel *channel, void *cq_context)
{
	void *ring;

	ring = mmap(NULL, info->mmap_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    ctx->cmd_fd, info->mmap_offset);
	if (ring == MAP_FAILED)
		return -errno;
	cq->ring = ring;
	cq->ring_size = info->mmap_size;
	cq->head = (uint32_t *)((char *)ring + info->off_head);
	cq->tail = (uint32_t *)((char *)ring + info->off_tail);
	cq->arm = (uint32_t *)((char *)ring + info->off_arm);
	cq->flags = (uint32_t *)((char *)ring + info->off_flags);
	cq->cqes = (struct kqp_cqe *)((char *)ring + info->off_cqes);
	cq->mask = info->entries - 1;
	cq->head_cache = kqp_ring_load_head(cq->head);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);

	cq->ibv.context = ctx;
	cq->ibv.channel = channel;
	cq->ibv.cq_context = cq_context;
	cq->ibv.handle = handle;
	cq->ibv.cqe = cqe;
	pthread_mutex_init(&cq->ibv.mutex, NULL);
	pthread_cond_init(&cq->ibv.cond, NULL);
	if (channel)
		__atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
	return 0;
}

void kqp_cq_unmap(struct kqp_lcq *cq)
{
	if (cq->ibv.channel)
		__atomic_sub_fetch(&cq->ibv.channel->refcnt, 1,
				   __ATOMIC_RELAXED);
	munmap(cq->ring, cq->ring_size);
	pthread_spin_destroy(&cq->lock);
	pthread_cond_destroy(&cq->ibv.cond);
	pthread_mutex_destroy(&cq->ibv.mutex);
}

/* A new CQ in *@cqp; 0 or -errno. */
static int kqp_cq_create(struct ibv_context *context, int cqe,
			 void *cq_context, struct ibv_comp_channel *channel,
			 int comp_vector, struct kqp_lcq **cqp)
{
	struct kqp_create_cq cmd = {
		.size = sizeof(cmd),
		.device_index = kqp_dev_index(context),
		.channel_fd = channel ? channel->fd : -1,
	};
	struct kqp_destroy_cq d = { .size = sizeof(d) };
	struct kqp_lcq *cq;
	int ret;

	if (cqe <= 0 || comp_vector < 0)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cmd.cqe = cqe;
	cmd.comp_vector = comp_vector;
	cmd.uid = (uintptr_t)cq;
	ret = kqp_ioctl(context->cmd_fd, KQP_IOCTL_CREATE_CQ, &cmd);
	if (ret)
		goto err_free;
	ret = kqp_cq_map(cq, &cmd.out_ring, cmd.out_cq, cmd.out_cqe, context,
			 channel, cq_context);
	if (ret) {
		d.cq = cmd.out_cq;
		kqp_ioctl(context->cmd_fd, KQP_IOCTL_DESTROY_CQ, &d);
		goto err_free;
	}
	*cqp = cq;
	return 0;

err_free:
	free(cq);
	return ret;
}

KQP_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
					void *cq_context,
					struct ibv_comp_channel *channel,
					int comp_vector)
{
	struct kqp_lcq *cq;
	int ret;

	ret = kqp_cq_create(context, cqe, cq_context, channel, comp_vector,
			    &cq);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &cq->ibv;
}

/* Wait until every notification and async event reported was acked. */
void kqp_cq_wait_acks(struct ibv_cq *cq, uint32_t comp, uint32_t async)
{
	pthread_mutex_lock(&cq->mutex);
	while (cq->comp_events_completed != comp ||
	       cq->async_events_completed != async)
		pthread_cond_wait(&cq->cond, &cq->mutex);
	pthread_mutex_unlock(&cq->mutex);
}

KQP_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct kqp_destroy_cq cmd = {
		.size = sizeof(cmd),
		.cq = ibcq->handle,
	};
	struct kqp_lcq *cq = to_lcq(ibcq);
	int ret;

	ret = kqp_ioctl(ibcq->context->cmd_fd, KQP_IOCTL_DESTROY_CQ, &cmd);
	if (ret)
		return -ret;
	kqp_cq_wait_acks(ibcq, cmd.out_comp_events_reported,
			 cmd.out_async_events_reported);
	kqp_cq_unmap(cq);
	free(cq);
	return 0;
}

KQP_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
				struct ibv_cq **cq, void **cq_context)
{
	struct kqp_comp_event ev;

	if (read(channel->fd, &ev, sizeof(ev)) != sizeof(ev))
		return -1;
	*cq = (struct ibv_cq *)(uintptr_t)ev.cq_uid;
	*cq_context = (*cq)->cq_context;
	return 0;
}

KQP_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/*
 * A completion's status, opcode and flags reach the caller as the kernel
 * wrote them.
 */
KQP_SAME_AS_IBV(KQP_WC_OP_SEND, IBV_WC_SEND);
KQP_SAME_AS_IBV(KQP_WC_OP_RDMA_WRITE, IBV_WC_RDMA_WRITE);
KQP_SAME_AS_IBV(KQP_WC_OP_RDMA_READ, IBV_WC_RDMA_READ);
KQP_SAME_AS_IBV(KQP_WC_OP_COMP_SWAP, IBV_WC_COMP_SWAP);
KQP_SAME_AS_IBV(KQP_WC_OP_FETCH_ADD, IBV_WC_FETCH_ADD);
KQP_SAME_AS_IBV(KQP_WC_OP_RECV, IBV_WC_RECV);
KQP_SAME_AS_IBV(KQP_WC_OP_RECV_RDMA_WITH_IMM, IBV_WC_RECV_RDMA_WITH_IMM);
KQP_SAME_AS_IBV(KQP_WC_FLAG_GRH, IBV_WC_GRH);
KQP_SAME_AS_IBV(KQP_WC_FLAG_WITH_IMM, IBV_WC_WITH_IMM);
KQP_SAME_AS_IBV(KQP_WC_FLAG_IP_CSUM_OK, IBV_WC_IP_CSUM_OK);
KQP_SAME_AS_IBV(KQP_WC_FLAG_WITH_INV, IBV_WC_WITH_INV);
KQP_SAME_AS_IBV(KQP_WC_SUCCESS, IBV_WC_SUCCESS);
KQP_SAME_AS_IBV(KQP_WC_LOC_LEN_ERR, IBV_WC_LOC_LEN_ERR);
KQP_SAME_AS_IBV(KQP_WC_LOC_QP_OP_ERR, IBV_WC_LOC_QP_OP_ERR);
KQP_SAME_AS_IBV(KQP_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_EEC_OP_ERR);
KQP_SAME_AS_IBV(KQP_WC_LOC_PROT_ERR, IBV_WC_LOC_PROT_ERR);
KQP_SAME_AS_IBV(KQP_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
KQP_SAME_AS_IBV(KQP_WC_MW_BIND_ERR, IBV_WC_MW_BIND_ERR);
KQP_SAME_AS_IBV(KQP_WC_BAD_RESP_ERR, IBV_WC_BAD_RESP_ERR);
KQP_SAME_AS_IBV(KQP_WC_LOC_ACCESS_ERR, IBV_WC_LOC_ACCESS_ERR);
KQP_SAME_AS_IBV(KQP_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR);
KQP_SAME_AS_IBV(KQP_WC_REM_ACCESS_ERR, IBV_WC_REM_ACCESS_ERR);
KQP_SAME_AS_IBV(KQP_WC_REM_OP_ERR, IBV_WC_REM_OP_ERR);
KQP_SAME_AS_IBV(KQP_WC_RETRY_EXC_ERR, IBV_WC_RETRY_EXC_ERR);
KQP_SAME_AS_IBV(KQP_WC_RNR_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR);
KQP_SAME_AS_IBV(KQP_WC_LOC_RDD_VIOL_ERR, IBV_WC_LOC_RDD_VIOL_ERR);
KQP_SAME_AS_IBV(KQP_WC_REM_INV_RD_REQ_ERR, IBV_WC_REM_INV_RD_REQ_ERR);
KQP_SAME_AS_IBV(KQP_WC_REM_ABORT_ERR, IBV_WC_REM_ABORT_ERR);
KQP_SAME_AS_IBV(KQP_WC_INV_EECN_ERR, IBV_WC_INV_EECN_ERR);
KQP_SAME_AS_IBV(KQP_WC_INV_EEC_STATE_ERR, IBV_WC_INV_EEC_STATE_ERR);
KQP_SAME_AS_IBV(KQP_WC_FATAL_ERR, IBV_WC_FATAL_ERR);
KQP_SAME_AS_IBV(KQP_WC_RESP_TIMEOUT_ERR, IBV_WC_RESP_TIMEOUT_ERR);
KQP_SAME_AS_IBV(KQP_WC_GENERAL_ERR, IBV_WC_GENERAL_ERR);

static void kqp_wc_from_cqe(struct ibv_wc *wc, const struct kqp_cqe *e)
{
	wc->wr_id = e->wr_id;
	wc->status = e->status;
	wc->opcode = e->opcode;
	wc->vendor_err = e->vendor_err;
	wc->byte_len = e->byte_len;
	wc->imm_data = e->imm_data;
	wc->qp_num = e->qp_num;
	wc->src_qp = e->src_qp;
	wc->wc_flags = e->wc_flags;
	wc->pkey_index = e->pkey_index;
	wc->slid = e->slid;
	wc->sl = e->sl;
	wc->dlid_path_bits = e->dlid_path_bits;
}

/*
 * The ring filled and completions wait in the kernel: now that there is
 * room, ask for them.  True if the kernel may have added some.  Under
 * the CQ's lock, with the head stored.
 */
static bool kqp_cq_flush(struct kqp_lcq *cq)
{
	struct kqp_flush_cq f = { .size = sizeof(f), .cq = cq->ibv.handle };

	if (!(kqp_ring_flags(cq->flags) & KQP_CQ_RING_OVERFLOW))
		return false;
	return !kqp_ioctl(cq->ibv.context->cmd_fd, KQP_IOCTL_FLUSH_CQ, &f);
}

/* The context op behind ibv_poll_cq(). */
int kqp_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct kqp_lcq *cq = to_lcq(ibcq);
	uint32_t head, tail;
	bool flushed = false;
	int got = 0;

	pthread_spin_lock(&cq->lock);
again:
	head = cq->head_cache;
	tail = kqp_ring_load_tail(cq->tail);
	while (got < n && head != tail) {
		kqp_wc_from_cqe(&wc[got++], &cq->cqes[head & cq->mask]);
		head++;
	}
	if (head != cq->head_cache) {
		cq->head_cache = head;
		kqp_ring_store_head(cq->head, head);
	}
	/* Once per call. */
	if (got < n && !flushed) {
		flushed = true;
		if (kqp_cq_flush(cq))
			goto again;
	}
	pthread_spin_unlock(&cq->lock);
	return got;
}

/*
 * The extended CQ's poll family.  start_poll takes the CQ's lock, as
 * rxe's does, and end_poll drops it; in between, the entry at poll_head
 * is copied once into cur, and the read_* ops report the copy.  The
 * consumed entries go back to the kernel (the head is stored) when
 * next_poll finds the ring empty and at end_poll.
 */

/* Copy the entry at poll_head if the ring has one; under the lock. */
static bool kqp_cq_ex_fetch(struct kqp_lcq *cq)
{
	uint32_t tail = kqp_ring_load_tail(cq->tail);

	if (cq->poll_head == tail) {
		if (cq->poll_head != cq->head_cache) {
			cq->head_cache = cq->poll_head;
			kqp_ring_store_head(cq->head, cq->poll_head);
		}
		if (!kqp_cq_flush(cq))
			return false;
		tail = kqp_ring_load_tail(cq->tail);
		if (cq->poll_head == tail)
			return false;
	}
	cq->cur = cq->cqes[cq->poll_head & cq->mask];
	cq->ibx.status = cq->cur.status;
	cq->ibx.wr_id = cq->cur.wr_id;
	return true;
}

static inline struct kqp_lcq *to_lcqx(struct ibv_cq_ex *ibx)
{
	return container_of(ibx, struct kqp_lcq, ibx);
}

/* As rxe's: the attributes are not looked at; ENOENT if empty. */
static int kqp_cq_start_poll(struct ibv_cq_ex *ibx,
			     struct ibv_poll_cq_attr *attr)
{
	struct kqp_lcq *cq = to_lcqx(ibx);

	(void)attr;
	pthread_spin_lock(&cq->lock);
	cq->poll_head = cq->head_cache;
	if (!kqp_cq_ex_fetch(cq)) {
		pthread_spin_unlock(&cq->lock);
		return ENOENT;
	}
	cq->poll_valid = true;
	return 0;
}

/* ENOENT if no entry follows; end_poll is still to be called. */
static int kqp_cq_next_poll(struct ibv_cq_ex *ibx)
{
	struct kqp_lcq *cq = to_lcqx(ibx);

	if (!cq->poll_valid)
		return ENOENT;
	cq->poll_head++;
	if (!kqp_cq_ex_fetch(cq)) {
		cq->poll_valid = false;
		return ENOENT;
	}
	return 0;
}

static void kqp_cq_end_poll(struct ibv_cq_ex *ibx)
{
	struct kqp_lcq *cq = to_lcqx(ibx);

	if (cq->poll_valid)
		cq->poll_head++;
	cq->poll_valid = false;
	if (cq->poll_head != cq->head_cache) {
		cq->head_cache = cq->poll_head;
		kqp_ring_store_head(cq->head, cq->poll_head);
	}
	pthread_spin_unlock(&cq->lock);
}

/* The ibv_wc_read_*() of the entry start_poll or next_poll copied. */
#define KQP_CQ_READ(name, type)						\
	static type kqp_cq_read_##name(struct ibv_cq_ex *ibx)		\
	{								\
		return to_lcqx(ibx)->cur.name;				\
	}

KQP_CQ_READ(opcode, enum ibv_wc_opcode)
KQP_CQ_READ(vendor_err, uint32_t)
KQP_CQ_READ(byte_len, uint32_t)
KQP_CQ_READ(imm_data, __be32)
KQP_CQ_READ(qp_num, uint32_t)
KQP_CQ_READ(src_qp, uint32_t)
KQP_CQ_READ(wc_flags, unsigned int)
KQP_CQ_READ(slid, uint32_t)
KQP_CQ_READ(sl, uint8_t)
KQP_CQ_READ(dlid_path_bits, uint8_t)

/* rxe's (rdma-core 44) completion fields: a kqp_cqe holds each. */
#define KQP_CQ_EX_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
			    IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
			    IBV_WC_EX_WITH_DLID_PATH_BITS)

/*
 * The context op behind the inline ibv_create_cq_ex().  As rxe: other
 * wc_flags (timestamps, VLAN, flow tag, tag matching) and comp_mask bits
 * than flags and a PD get EOPNOTSUPP, and so does
 * IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN, which rxe's kernel driver refuses;
 * IBV_CREATE_CQ_ATTR_SINGLE_THREADED is a hint, and the PD (a parent
 * domain's, for a provider's allocators) is not used.
 */
struct ibv_cq_ex *kqp_create_cq_ex(struct ibv_context *context,
				   struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *x;
	struct kqp_lcq *cq;
	int ret;

	if ((attr->wc_flags & ~(uint64_t)KQP_CQ_EX_WC_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					   IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))
		return kqp_err_ptr(EOPNOTSUPP);
	if (attr->cqe > INT32_MAX || attr->comp_vector > INT32_MAX)
		return kqp_err_ptr(EINVAL);
	ret = kqp_cq_create(context, (int)attr->cqe, attr->cq_context,
			    attr->channel, (int)attr->comp_vector, &cq);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	x = &cq->ibx;
	x->start_poll = kqp_cq_start_poll;
	x->next_poll = kqp_cq_next_poll;
	x->end_poll = kqp_cq_end_poll;
	x->read_opcode = kqp_cq_read_opcode;
	x->read_vendor_err = kqp_cq_read_vendor_err;
	x->read_wc_flags = kqp_cq_read_wc_flags;
	if (attr->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = kqp_cq_read_byte_len;
	if (attr->wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = kqp_cq_read_imm_data;
	if (attr->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = kqp_cq_read_qp_num;
	if (attr->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = kqp_cq_read_src_qp;
	if (attr->wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = kqp_cq_read_slid;
	if (attr->wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = kqp_cq_read_sl;
	if (attr->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = kqp_cq_read_dlid_path_bits;
	return x;
}

/* The context op behind ibv_req_notify_cq(): no syscall. */
int kqp_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct kqp_lcq *cq = to_lcq(ibcq);

	pthread_spin_lock(&cq->lock);
	/* A new value each time: the kernel fires once per value. */
	cq->arm_seq += 2;
	if (!cq->arm_seq)
		cq->arm_seq = 2;
	kqp_ring_arm(cq->arm, cq->arm_seq |
			      (solicited_only ? KQP_CQ_ARM_SOLICITED : 0));
	pthread_spin_unlock(&cq->lock);
	return 0;
}
