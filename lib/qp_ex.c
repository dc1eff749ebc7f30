// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Extended QPs: what ibv_create_qp_ex() and rdma_create_qp_ex() accept
 * beyond a PD, ibv_qp_to_qp_ex(), and the work request builders
 * (ibv_wr_start(), ibv_wr_send(), ibv_wr_set_sge(), ..., ibv_wr_complete()).
 *
 * The builders write the batch in the kernel's KQP_IOCTL_POST_SEND form
 * into a buffer of the QP's; ibv_wr_complete() posts it with the same
 * ioctl as ibv_post_send(), so the kernel checks every request as it
 * checks those.  As rxe's provider does, a builder or setter that fails
 * records its errno and the batch's later calls do nothing; complete then
 * posts nothing and returns that errno.  The setters change the request
 * built last; which setter was called, not IBV_SEND_INLINE in wr_flags,
 * says whether its data is inline.
 */
#include <stdlib.h>
#include <string.h>

#include "kqp_priv.h"

/* What rxe (rdma-core 44) accepts and kqp's kernel can post. */
#define KQP_QP_EX_COMP_MASK (IBV_QP_INIT_ATTR_PD | \
			     IBV_QP_INIT_ATTR_CREATE_FLAGS | \
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
#define KQP_RC_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | \
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | \
			 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define KQP_UD_SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM)

/*
 * The extended attributes' checks, as rxe's: a comp_mask bit, a create
 * flag (rxe takes none) or a send op kqp does not have is EOPNOTSUPP.
 * rxe also takes local invalidate, memory window binds, send with
 * invalidate and atomic write, which kqp's kernel does not post.
 */
int kqp_qp_ex_check(const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t ops;

	if (attr->comp_mask & ~(uint32_t)KQP_QP_EX_COMP_MASK)
		return -EOPNOTSUPP;
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags)
		return -EOPNOTSUPP;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return 0;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
		ops = KQP_RC_SEND_OPS;
		break;
	case IBV_QPT_UD:
		ops = KQP_UD_SEND_OPS;
		break;
	default:
		return -EOPNOTSUPP;
	}
	return attr->send_ops_flags & ~ops ? -EOPNOTSUPP : 0;
}

/*
 * Whether a QP made with @attr is an extended one.  libibverbs' inline
 * ibv_create_qp_ex() takes a comp_mask of just a PD to ibv_create_qp(),
 * whose QPs ibv_qp_to_qp_ex() does not convert; librdmacm adds the PD
 * bit before calling it.
 */
bool kqp_qp_ex_wanted(const struct ibv_qp_init_attr_ex *attr)
{
	return (attr->comp_mask | IBV_QP_INIT_ATTR_PD) != IBV_QP_INIT_ATTR_PD;
}

static inline struct kqp_lqp *to_lqpx(struct ibv_qp_ex *ibx)
{
	return container_of(ibx, struct kqp_lqp, ibx);
}

static size_t kqp_align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Make room for @n more bytes; 0, or the batch's errno is set. */
static int kqp_batch_room(struct kqp_wr_batch *b, size_t n)
{
	size_t want = b->len + n, cap;
	char *p;

	if (want <= b->cap)
		return 0;
	/* The per-request checks keep a batch within @max. */
	if (want > b->max) {
		b->err = ENOSPC;
		return -1;
	}
	cap = b->cap ? b->cap : 4096;
	while (cap < want)
		cap *= 2;
	if (cap > b->max)
		cap = b->max;
	p = realloc(b->buf, cap);
	if (!p) {
		b->err = ENOMEM;
		return -1;
	}
	b->buf = p;
	b->cap = cap;
	return 0;
}

/*
 * A new request at the end of the batch, with the wr_id and flags the
 * caller set in the ibv_qp_ex now; NULL if the batch failed or is full.
 */
static struct kqp_send_wr *kqp_wr_new(struct ibv_qp_ex *ibx, uint32_t opcode)
{
	struct kqp_lqp *qp = to_lqpx(ibx);
	struct kqp_wr_batch *b = &qp->batch;
	struct kqp_send_wr *k;

	/* Outside a batch, as with rxe, a builder adds nothing. */
	if (!b->started || b->err)
		return NULL;
	if (b->count >= qp->cap.max_send_wr) {
		b->err = ENOSPC;
		return NULL;
	}
	if (kqp_batch_room(b, sizeof(*k)))
		return NULL;
	k = (struct kqp_send_wr *)(b->buf + b->len);
	memset(k, 0, sizeof(*k));
	k->wr_id = ibx->wr_id;
	k->opcode = opcode;
	k->send_flags = ibx->wr_flags;
	b->last = b->len;
	b->len += sizeof(*k);
	b->count++;
	return k;
}

/*
 * The last request, its SGEs or inline bytes dropped, with room for @n
 * bytes of new ones; NULL if there is none or the batch failed.
 */
static struct kqp_send_wr *kqp_wr_last(struct kqp_lqp *qp, size_t n)
{
	struct kqp_wr_batch *b = &qp->batch;
	struct kqp_send_wr *k;

	if (!b->started || b->err || !b->count)
		return NULL;
	b->len = b->last + sizeof(*k);
	if (kqp_batch_room(b, n))
		return NULL;
	k = (struct kqp_send_wr *)(b->buf + b->last);
	k->num_sge = 0;
	k->inline_len = 0;
	return k;
}

static void kqp_wr_send(struct ibv_qp_ex *ibx)
{
	kqp_wr_new(ibx, KQP_WR_OP_SEND);
}

static void kqp_wr_send_imm(struct ibv_qp_ex *ibx, __be32 imm_data)
{
	struct kqp_send_wr *k = kqp_wr_new(ibx, KQP_WR_OP_SEND_WITH_IMM);

	if (k)
		k->imm_data = (uint32_t)imm_data;
}

static void kqp_wr_rdma(struct ibv_qp_ex *ibx, uint32_t opcode, uint32_t rkey,
			uint64_t remote_addr, __be32 imm_data)
{
	struct kqp_send_wr *k = kqp_wr_new(ibx, opcode);

	if (!k)
		return;
	k->wr.rdma.remote_addr = remote_addr;
	k->wr.rdma.rkey = rkey;
	k->imm_data = (uint32_t)imm_data;
}

static void kqp_wr_rdma_write(struct ibv_qp_ex *ibx, uint32_t rkey,
			      uint64_t remote_addr)
{
	kqp_wr_rdma(ibx, KQP_WR_OP_RDMA_WRITE, rkey, remote_addr, 0);
}

static void kqp_wr_rdma_write_imm(struct ibv_qp_ex *ibx, uint32_t rkey,
				  uint64_t remote_addr, __be32 imm_data)
{
	kqp_wr_rdma(ibx, KQP_WR_OP_RDMA_WRITE_WITH_IMM, rkey, remote_addr,
		    imm_data);
}

static void kqp_wr_rdma_read(struct ibv_qp_ex *ibx, uint32_t rkey,
			     uint64_t remote_addr)
{
	kqp_wr_rdma(ibx, KQP_WR_OP_RDMA_READ, rkey, remote_addr, 0);
}

static void kqp_wr_atomic(struct ibv_qp_ex *ibx, uint32_t opcode,
			  uint32_t rkey, uint64_t remote_addr,
			  uint64_t compare_add, uint64_t swap)
{
	struct kqp_send_wr *k = kqp_wr_new(ibx, opcode);

	if (!k)
		return;
	k->wr.atomic.remote_addr = remote_addr;
	k->wr.atomic.compare_add = compare_add;
	k->wr.atomic.swap = swap;
	k->wr.atomic.rkey = rkey;
}

static void kqp_wr_atomic_cmp_swp(struct ibv_qp_ex *ibx, uint32_t rkey,
				  uint64_t remote_addr, uint64_t compare,
				  uint64_t swap)
{
	kqp_wr_atomic(ibx, KQP_WR_OP_ATOMIC_CMP_AND_SWP, rkey, remote_addr,
		      compare, swap);
}

static void kqp_wr_atomic_fetch_add(struct ibv_qp_ex *ibx, uint32_t rkey,
				    uint64_t remote_addr, uint64_t add)
{
	kqp_wr_atomic(ibx, KQP_WR_OP_ATOMIC_FETCH_AND_ADD, rkey, remote_addr,
		      add, 0);
}

/* The address of a UD send; the kernel checks the AH is the caller's. */
static void kqp_wr_set_ud_addr(struct ibv_qp_ex *ibx, struct ibv_ah *ah,
			       uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct kqp_lqp *qp = to_lqpx(ibx);
	struct kqp_wr_batch *b = &qp->batch;
	struct kqp_send_wr *k;

	if (!b->started || b->err || !b->count)
		return;
	/* wr.ud shares its bytes with wr.rdma: only a UD QP takes it. */
	if (qp->ibv.qp_type != IBV_QPT_UD)
		return;
	k = (struct kqp_send_wr *)(b->buf + b->last);
	k->wr.ud.ah = ah ? ah->handle : 0;
	k->wr.ud.remote_qpn = remote_qpn;
	k->wr.ud.remote_qkey = remote_qkey;
}

static void kqp_wr_set_sge_list(struct ibv_qp_ex *ibx, size_t num_sge,
				const struct ibv_sge *sg_list)
{
	struct kqp_lqp *qp = to_lqpx(ibx);
	struct kqp_send_wr *k;
	struct kqp_sge *s;
	size_t i;

	if (qp->batch.started && !qp->batch.err && qp->batch.count &&
	    num_sge > qp->cap.max_send_sge) {
		qp->batch.err = ENOSPC;
		return;
	}
	k = kqp_wr_last(qp, num_sge * sizeof(*s));
	if (!k)
		return;
	k->send_flags &= ~KQP_SEND_FLAG_INLINE;
	k->num_sge = num_sge;
	s = (struct kqp_sge *)(k + 1);
	for (i = 0; i < num_sge; i++) {
		s[i].addr = sg_list[i].addr;
		s[i].length = sg_list[i].length;
		s[i].lkey = sg_list[i].lkey;
	}
	qp->batch.len += num_sge * sizeof(*s);
}

/* As rxe's: a zero length means no SGE at all. */
static void kqp_wr_set_sge(struct ibv_qp_ex *ibx, uint32_t lkey,
			   uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	kqp_wr_set_sge_list(ibx, length ? 1 : 0, &sge);
}

/* The bytes are copied now: the caller may reuse its buffers at once. */
static void kqp_wr_set_inline_data_list(struct ibv_qp_ex *ibx, size_t num_buf,
					const struct ibv_data_buf *buf_list)
{
	struct kqp_lqp *qp = to_lqpx(ibx);
	struct kqp_wr_batch *b = &qp->batch;
	struct kqp_send_wr *k;
	size_t i, total = 0;
	char *d;

	if (!b->started || b->err || !b->count)
		return;
	for (i = 0; i < num_buf; i++) {
		if (buf_list[i].length > qp->cap.max_inline_data - total) {
			b->err = ENOSPC;
			return;
		}
		total += buf_list[i].length;
	}
	k = kqp_wr_last(qp, kqp_align8(total));
	if (!k)
		return;
	k->send_flags |= KQP_SEND_FLAG_INLINE;
	k->inline_len = total;
	d = (char *)(k + 1);
	for (i = 0; i < num_buf; i++) {
		memcpy(d, buf_list[i].addr, buf_list[i].length);
		d += buf_list[i].length;
	}
	memset(d, 0, kqp_align8(total) - total);
	b->len += kqp_align8(total);
}

static void kqp_wr_set_inline_data(struct ibv_qp_ex *ibx, void *addr,
				   size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	kqp_wr_set_inline_data_list(ibx, 1, &buf);
}

/* As rxe's: the QP's send queue lock is held until complete or abort. */
static void kqp_wr_start(struct ibv_qp_ex *ibx)
{
	struct kqp_wr_batch *b = &to_lqpx(ibx)->batch;

	pthread_mutex_lock(&b->lock);
	b->started = true;
	b->len = 0;
	b->count = 0;
	b->err = 0;
}

static void kqp_wr_end(struct kqp_wr_batch *b)
{
	b->started = false;
	b->len = 0;
	b->count = 0;
	b->err = 0;
	pthread_mutex_unlock(&b->lock);
}

/*
 * Post the batch: through the send ring if the QP has one, else in one
 * ioctl unless it is longer than KQP_POST_MAX_BYTES.  On failure, the
 * requests before the one the kernel refused were posted, as with
 * ibv_post_send().  0 or -errno.
 */
static int kqp_wr_post(struct kqp_lqp *qp)
{
	struct kqp_post_target t = kqp_qp_target(&qp->ibv, false);
	struct kqp_wr_batch *b = &qp->batch;
	size_t off = 0;
	int ret;

	if (qp->gone)
		return -ENOENT;
	while (off < b->len) {
		size_t len = 0, sz;
		uint32_t count = 0, posted;

		while (off + len < b->len) {
			sz = kqp_send_wr_len((const struct kqp_send_wr *)
					     (b->buf + off + len));
			if (!t.wq && len + sz > KQP_POST_MAX_BYTES)
				break;
			len += sz;
			count++;
		}
		ret = kqp_post_buf(&t, KQP_IOCTL_POST_SEND, false,
				   b->buf + off, len, count, &posted);
		/* A full send queue is ENOSPC for rxe's builders. */
		if (ret == -ENOMEM)
			return -ENOSPC;
		if (ret)
			return ret;
		off += len;
	}
	return 0;
}

/* 0, or the batch's first errno (nothing was posted then). */
static int kqp_wr_complete(struct ibv_qp_ex *ibx)
{
	struct kqp_lqp *qp = to_lqpx(ibx);
	struct kqp_wr_batch *b = &qp->batch;
	int ret;

	if (!b->started)
		return EINVAL;
	ret = b->err;
	if (!ret && b->count)
		ret = -kqp_wr_post(qp);
	kqp_wr_end(b);
	return ret;
}

static void kqp_wr_abort(struct ibv_qp_ex *ibx)
{
	struct kqp_wr_batch *b = &to_lqpx(ibx)->batch;

	if (b->started)
		kqp_wr_end(b);
}

/*
 * Make @qp, whose caps are set, an extended QP: with send ops, the
 * builders for exactly those ops (the others stay NULL, as rxe leaves
 * them) and the setters.
 */
void kqp_qp_ex_init(struct kqp_lqp *qp, const struct ibv_qp_init_attr_ex *attr)
{
	struct ibv_qp_ex *x = &qp->ibx;
	uint64_t ops = attr->send_ops_flags;
	size_t slot;

	qp->is_ex = true;
	pthread_mutex_init(&qp->batch.lock, NULL);
	slot = kqp_send_wr_bytes_max(qp->cap.max_send_sge,
				     qp->cap.max_inline_data);
	qp->batch.max = (size_t)qp->cap.max_send_wr * slot;
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE)
		x->wr_rdma_write = kqp_wr_rdma_write;
	if (ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		x->wr_rdma_write_imm = kqp_wr_rdma_write_imm;
	if (ops & IBV_QP_EX_WITH_SEND)
		x->wr_send = kqp_wr_send;
	if (ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		x->wr_send_imm = kqp_wr_send_imm;
	if (ops & IBV_QP_EX_WITH_RDMA_READ)
		x->wr_rdma_read = kqp_wr_rdma_read;
	if (ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		x->wr_atomic_cmp_swp = kqp_wr_atomic_cmp_swp;
	if (ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		x->wr_atomic_fetch_add = kqp_wr_atomic_fetch_add;
	x->wr_set_ud_addr = kqp_wr_set_ud_addr;
	x->wr_set_inline_data = kqp_wr_set_inline_data;
	x->wr_set_inline_data_list = kqp_wr_set_inline_data_list;
	x->wr_set_sge = kqp_wr_set_sge;
	x->wr_set_sge_list = kqp_wr_set_sge_list;
	x->wr_start = kqp_wr_start;
	x->wr_complete = kqp_wr_complete;
	x->wr_abort = kqp_wr_abort;
}

void kqp_qp_ex_fini(struct kqp_lqp *qp)
{
	if (!qp->is_ex)
		return;
	pthread_mutex_destroy(&qp->batch.lock);
	free(qp->batch.buf);
	qp->batch.buf = NULL;
}

/* As libibverbs: NULL, errno untouched, for a QP made the basic way. */
KQP_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct kqp_lqp *qp = to_lqp(ibqp);

	return qp->is_ex ? &qp->ibx : NULL;
}
