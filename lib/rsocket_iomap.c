// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rsockets' iomap: riomap() registers a buffer and gives the peer an
 * entry of the peer's iomap that names it (KRS_OP_IOMAP_SGL);
 * riowrite() is a plain RDMA WRITE into a buffer the peer gave in this
 * end's iomap, with no message and no credit.
 *
 * The peer writes this end's iomap whenever it likes.  An entry is only
 * ever read here, a field at a time, to address the peer's own memory;
 * the device checks that against the peer's registration.  Nothing local
 * is sized or indexed by it.  The one number that is checked is the index
 * an IOMAP_SGL message carries (rsocket_data.c).
 *
 * Every function here is called with the rsocket's mutex held.
 */
#include <stdlib.h>
#include <string.h>
#include <byteswap.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "kqp_priv.h"
#include "rsocket.h"

/*
 * The iomap's size on the wire: 8 bits, n itself up to 128, else
 * 0x80 | n / 256.  rdma-core's encoding; unscale(scale(n)) <= n.
 */
int krs_iomap_scale(uint32_t n)
{
	if (n > KRS_MAX_IOMAP)
		n = KRS_MAX_IOMAP;
	return n <= 128 ? (int)n : 0x80 | (int)(n >> 8);
}

uint32_t krs_iomap_unscale(uint8_t v)
{
	return v <= 128 ? v : (uint32_t)(v & 0x7f) << 8;
}

static bool krs_used(const struct krs *rs, uint32_t i)
{
	return rs->iomap_used[i / 64] & (1ull << (i % 64));
}

static void krs_set_used(struct krs *rs, uint32_t i, bool on)
{
	if (on)
		rs->iomap_used[i / 64] |= 1ull << (i % 64);
	else
		rs->iomap_used[i / 64] &= ~(1ull << (i % 64));
}

/* A free entry of the peer's iomap; -1 and ENOMEM when there is none. */
static int krs_take_index(struct krs *rs)
{
	uint32_t i, n = rs->remote_iomap.length;

	if (!rs->iomap_used && n) {
		rs->iomap_used = calloc((n + 63) / 64, sizeof(uint64_t));
		if (!rs->iomap_used)
			return kqp_err(ENOMEM);
	}
	for (i = 0; i < n; i++) {
		if (!krs_used(rs, i)) {
			krs_set_used(rs, i, true);
			return (int)i;
		}
	}
	return kqp_err(ENOMEM);
}

static void krs_iomr_free(struct krs *rs, struct krs_iomr *m)
{
	if (m->index >= 0)
		krs_set_used(rs, (uint32_t)m->index, false);
	ibv_dereg_mr(m->mr);
	free(m);
}

void krs_free_iomaps(struct krs *rs)
{
	struct krs_iomr *m;

	while ((m = rs->iomrs)) {
		rs->iomrs = m->next;
		krs_iomr_free(rs, m);
	}
	free(rs->iomap_used);
	rs->iomap_used = NULL;
}

/* The first riomap() the peer has not been told of; NULL for none. */
static struct krs_iomr *krs_unsent(struct krs *rs)
{
	struct krs_iomr *m;

	for (m = rs->iomrs; m; m = m->next)
		if (m->index >= 0 && !m->sent)
			return m;
	return NULL;
}

/*
 * Tell the peer of every riomap() it has not yet been told of, if any
 * (@iomap_pending says, without walking the list).  Waiting
 * for a credit drops the rsocket's mutex, and a riounmap() may free the
 * mapping meanwhile: the next one is looked for after each wait.
 */
int krs_send_iomaps(struct krs *rs, int flags)
{
	struct krs_iomap e;
	struct krs_iomr *m;
	int ret;

	if (!rs->iomap_pending)
		return 0;
	while (krs_unsent(rs)) {
		struct iovec v = { &e, sizeof(e) };
		const struct iovec *iov = &v;
		size_t off = 0;

		ret = krs_wait_send(rs, flags);
		if (ret)
			return ret;
		m = krs_unsent(rs);
		if (!m)
			break;
		e.offset = m->offset;
		e.sge.addr = (uintptr_t)m->mr->addr;
		e.sge.key = m->mr->rkey;
		e.sge.length = (uint32_t)m->mr->length;
		if (rs->swap) {
			e.offset = bswap_64(e.offset);
			e.sge.addr = bswap_64(e.sge.addr);
			e.sge.key = bswap_32(e.sge.key);
			e.sge.length = bswap_32(e.sge.length);
		}
		/* Like a data message, it takes a credit. */
		rs->sseq_no++;
		ret = krs_post_data(rs, &iov, &off, sizeof(e),
				    KRS_MSG(KRS_OP_IOMAP_SGL, m->index), true,
				    rs->remote_iomap.addr +
				    (uint64_t)m->index * sizeof(e),
				    rs->remote_iomap.key);
		if (ret)
			return ret;
		m->sent = true;
	}
	rs->iomap_pending = false;
	return 0;
}

static off_t krs_iomap(struct krs *rs, void *buf, size_t len, int prot,
		       int flags, off_t offset)
{
	int access = IBV_ACCESS_LOCAL_WRITE;
	struct krs_iomr *m, **tail;

	if (rs->dg)
		return kqp_err(EOPNOTSUPP);
	if (!rs->id || !rs->id->pd || (prot & ~PROT_WRITE) || flags ||
	    !buf || !len || len > UINT32_MAX || offset < -1)
		return kqp_err(EINVAL);
	m = calloc(1, sizeof(*m));
	if (!m)
		return kqp_err(ENOMEM);
	m->index = -1;
	if (prot & PROT_WRITE) {
		m->index = krs_take_index(rs);
		if (m->index < 0) {
			free(m);
			return -1;
		}
		access |= IBV_ACCESS_REMOTE_WRITE;
	}
	m->mr = ibv_reg_mr(rs->id->pd, buf, len, access);
	if (!m->mr) {
		if (m->index >= 0)
			krs_set_used(rs, (uint32_t)m->index, false);
		free(m);
		return -1;
	}
	m->offset = offset == -1 ? (uintptr_t)buf : (uint64_t)offset;
	/* At the end, so that the peer hears of them in the order made. */
	for (tail = &rs->iomrs; *tail; tail = &(*tail)->next)
		;
	*tail = m;
	if (m->index >= 0)
		rs->iomap_pending = true;
	return (off_t)m->offset;
}

/* rdma-core's: an offset of -1 maps the buffer at its own address. */
KQP_EXPORT off_t riomap(int s, void *buf, size_t len, int prot, int flags,
			off_t offset)
{
	return KRS_CALL(s, rs, krs_iomap(rs, buf, len, prot, flags, offset));
}

static int krs_iounmap(struct krs *rs, void *buf, size_t len)
{
	struct krs_iomr **p, *m;

	for (p = &rs->iomrs; (m = *p); p = &m->next) {
		if (m->mr->addr == buf && m->mr->length == len) {
			*p = m->next;
			krs_iomr_free(rs, m);
			return 0;
		}
	}
	return kqp_err(EINVAL);
}

/*
 * As rdma-core's, the peer is not told: its entry stays, and a write it
 * makes there now fails at the device and ends the connection.
 */
KQP_EXPORT int riounmap(int s, void *buf, size_t len)
{
	return KRS_CALL(s, rs, krs_iounmap(rs, buf, len));
}

/* Whether @e's range holds @at: a test that cannot wrap. */
static bool krs_iomap_holds(const struct krs_iomap *e, uint64_t at)
{
	return at >= e->offset && at - e->offset < e->sge.length;
}

/*
 * The entry of this end's iomap, as the peer last wrote it, whose range
 * holds @at; false when none does.  Each field is read once.
 */
static bool krs_find_iomap(const struct krs *rs, uint64_t at,
			   struct krs_iomap *e)
{
	uint32_t i;

	for (i = 0; rs->tiomap && i < rs->iomap_size; i++) {
		e->offset = rs->tiomap[i].offset;
		e->sge.length = rs->tiomap[i].sge.length;
		if (krs_iomap_holds(e, at)) {
			e->sge.addr = rs->tiomap[i].sge.addr;
			e->sge.key = rs->tiomap[i].sge.key;
			return true;
		}
	}
	return false;
}

static ssize_t krs_iowrite(struct krs *rs, const void *buf, size_t count,
			   off_t offset, int flags)
{
	struct iovec v = { (void *)buf, count };
	const struct iovec *iov = &v;
	uint32_t xfer, olen = KRS_OLAP_START;
	size_t left = count, off = 0;
	uint64_t at = (uint64_t)offset, in;
	struct krs_iomap e;
	bool have = false;
	int ret = 0;

	if (rs->dg)
		return kqp_err(EOPNOTSUPP);
	if (krs_send_start(rs, flags))
		return -1;
	if (count && !buf)
		return kqp_err(EFAULT);
	ret = krs_send_iomaps(rs, flags);
	if (ret)
		return ret;
	for (; left; left -= xfer, at += xfer) {
		if (!have || !krs_iomap_holds(&e, at)) {
			have = krs_find_iomap(rs, at, &e);
			/* As rdma-core's: a write to no mapping stops there. */
			if (!have)
				break;
		}
		ret = krs_wait_send(rs, flags);
		if (ret)
			break;
		xfer = krs_xfer_size(rs, left, &olen);
		in = at - e.offset;
		if (xfer > e.sge.length - in)
			xfer = (uint32_t)(e.sge.length - in);
		ret = krs_post_data(rs, &iov, &off, xfer,
				    KRS_MSG(KRS_OP_WRITE, xfer), false,
				    e.sge.addr + in, e.sge.key);
		if (ret)
			break;
	}
	return (ret && left == count) ? ret : (ssize_t)(count - left);
}

/*
 * rdma-core's: the bytes written, which stop short at the end of what the
 * peer mapped (0 when @offset is in no mapping); -1 and errno when
 * nothing could be written.
 */
KQP_EXPORT size_t riowrite(int s, const void *buf, size_t count,
			   off_t offset, int flags)
{
	return (size_t)KRS_CALL(s, rs,
				krs_iowrite(rs, buf, count, offset, flags));
}
