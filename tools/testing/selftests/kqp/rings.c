// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Submission rings at the ioctl level: KQP_CREATE_QP_RINGS and what it
 * reports, mmap of a QP's rings, KQP_IOCTL_DOORBELL's errnos (the call's
 * and each QP's), and data through the rings of two QPs connected by
 * hand: receives and sends posted by writing entries and ringing, in
 * batches, two QPs in one doorbell, past the end of the ring, and beside
 * the legacy POST ioctls.  The hostile caller is rings_hostile.c.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "rings_test.h"

/* A file with a PD and a CQ, for QPs that stay in RESET. */
FIXTURE(v) {
	int fd;
	uint32_t dev, pd;
	struct rt_cq cq;
	long page;
};

FIXTURE_SETUP(v)
{
	self->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->dev = kqp_test_rxe_index(self->fd);
	ASSERT_NE(KQP_NO_DEVICE, self->dev);
	ASSERT_EQ(0, rt_pd(self->fd, self->dev, &self->pd));
	ASSERT_EQ(0, rt_cq_make(self->fd, self->dev, 32, &self->cq));
	self->page = sysconf(_SC_PAGESIZE);
}

FIXTURE_TEARDOWN(v)
{
	close(self->fd);
}

static void v_req(FIXTURE_DATA(v) *self, struct kqp_create_qp *c)
{
	rt_qp_req(c, self->pd, self->cq.c.out_cq, self->cq.c.out_cq);
}

/* The flag needs a size that holds out_rings; refusing makes nothing. */
TEST_F(v, flag_needs_size)
{
	struct kqp_create_qp c;
	struct kqp_ctx_info info;
	struct rt_qp q;

	v_req(self, &c);
	c.size = offsetof(struct kqp_create_qp, out_rings);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	v_req(self, &c);
	c.size = offsetof(struct kqp_create_qp, out_rings) + 8;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	v_req(self, &c);
	c.size = offsetofend(struct kqp_create_qp, out_rings) - 4;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	ASSERT_EQ(0, kqp_test_ctx_info(self->fd, &info));
	EXPECT_EQ(0, info.out_qps);

	/* The short size is fine without the flag: it was the flag. */
	v_req(self, &c);
	c.flags = 0;
	c.size = offsetof(struct kqp_create_qp, out_rings);
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	/* And with the whole size, the flag works. */
	v_req(self, &c);
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	ASSERT_EQ(0, kqp_test_ctx_info(self->fd, &info));
	EXPECT_EQ(2, info.out_qps);
	/* An unknown flag beside it is still EOPNOTSUPP. */
	v_req(self, &c);
	c.flags |= 1U << 7;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP,
					     &c));
	EXPECT_EQ(0, rt_qp_destroy(&q));
}

/* What out_rings says, checked against the caps the QP got. */
static void check_rings(struct __test_metadata *_metadata,
			FIXTURE_DATA(v) *self, const struct kqp_create_qp *c,
			bool srq)
{
	const struct kqp_qp_ring_info *ri = &c->out_rings;
	const struct kqp_wq_ring_info *sq = &ri->sq, *rq = &ri->rq;
	uint32_t inl = (c->cap.max_inline_data + 7) & ~7U;
	uint64_t send_end, recv_end;

	TH_LOG("caps %u/%u wr %u/%u sge %u inline: sq %u x %u at %u/%u, rq %u x %u at %u/%u, %u bytes",
	       c->cap.max_send_wr, c->cap.max_recv_wr, c->cap.max_send_sge,
	       c->cap.max_recv_sge, c->cap.max_inline_data, sq->entries,
	       sq->entry_size, sq->off_hdr, sq->off_entries, rq->entries,
	       rq->entry_size, rq->off_hdr, rq->off_entries, ri->mmap_size);
	EXPECT_EQ((uint64_t)c->out_qp * self->page, ri->mmap_offset);
	EXPECT_EQ(0, ri->mmap_size % self->page);
	EXPECT_EQ(KQP_QP_RINGS_SEND_ASYNC, ri->flags);

	EXPECT_TRUE(rt_is_pow2(sq->entries));
	EXPECT_LE(c->cap.max_send_wr, sq->entries);
	EXPECT_TRUE(rt_is_pow2(sq->entry_size));
	EXPECT_LE(RT_SEND_HDR + c->cap.max_send_sge * 16, sq->entry_size);
	EXPECT_LE(RT_SEND_HDR + inl, sq->entry_size);
	EXPECT_EQ(0, sq->off_hdr % 8);
	EXPECT_EQ(0, sq->off_entries % 8);
	EXPECT_LE(sq->off_hdr + sizeof(struct kqp_wq_ring_hdr),
		  ri->mmap_size);
	send_end = sq->off_entries + (uint64_t)sq->entries * sq->entry_size;
	EXPECT_LE(send_end, ri->mmap_size);
	/* The header is not among the entries. */
	EXPECT_TRUE(sq->off_hdr + sizeof(struct kqp_wq_ring_hdr) <=
		    sq->off_entries || sq->off_hdr >= send_end);

	if (srq) {
		EXPECT_EQ(0, rq->entries);
		return;
	}
	EXPECT_TRUE(rt_is_pow2(rq->entries));
	EXPECT_LE(c->cap.max_recv_wr, rq->entries);
	EXPECT_TRUE(rt_is_pow2(rq->entry_size));
	EXPECT_LE(RT_RECV_HDR + c->cap.max_recv_sge * 16, rq->entry_size);
	EXPECT_EQ(0, rq->off_hdr % 8);
	EXPECT_EQ(0, rq->off_entries % 8);
	EXPECT_LE(rq->off_hdr + sizeof(struct kqp_wq_ring_hdr),
		  ri->mmap_size);
	recv_end = rq->off_entries + (uint64_t)rq->entries * rq->entry_size;
	EXPECT_LE(recv_end, ri->mmap_size);
	/* The four regions do not overlap. */
	EXPECT_TRUE(recv_end <= sq->off_entries || rq->off_entries >= send_end);
	EXPECT_TRUE(rq->off_hdr + sizeof(struct kqp_wq_ring_hdr) <=
		    sq->off_hdr || rq->off_hdr >= sq->off_hdr +
		    sizeof(struct kqp_wq_ring_hdr));
	EXPECT_TRUE(rq->off_hdr + sizeof(struct kqp_wq_ring_hdr) <=
		    sq->off_entries || rq->off_hdr >= send_end);
	EXPECT_TRUE(sq->off_hdr + sizeof(struct kqp_wq_ring_hdr) <=
		    rq->off_entries || sq->off_hdr >= recv_end);
}

TEST_F(v, ring_info_sane)
{
	static const struct kqp_qp_cap caps[] = {
		{ 1, 1, 1, 1, 0, 0 },
		{ 8, 8, 1, 1, 0, 0 },
		{ 16, 16, 2, 2, 64, 0 },
		{ 100, 30, 4, 3, 0, 0 },
		{ 5, 3, 1, 4, 200, 0 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		struct kqp_create_qp c;
		struct rt_qp q;
		struct kqp_wq_ring_hdr *h;

		v_req(self, &c);
		c.cap = caps[i];
		ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
		check_rings(_metadata, self, &q.c, false);
		h = rt_sq_hdr(&q);
		EXPECT_EQ(0, h->tail);
		EXPECT_EQ(0, h->head);
		EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL,
			  h->flags & KQP_WQ_RING_NEED_DOORBELL);
		h = rt_rq_hdr(&q);
		EXPECT_EQ(0, h->tail);
		EXPECT_EQ(0, h->head);
		EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL,
			  h->flags & KQP_WQ_RING_NEED_DOORBELL);
		/* Nothing published, nothing to do. */
		EXPECT_EQ(0, rt_ring(&q, KQP_DB_SEND | KQP_DB_RECV));
		EXPECT_EQ(0, rt_sq_hdr(&q)->head);
		EXPECT_EQ(0, rt_qp_destroy(&q));
	}
}

/* A QP without rings reports none and has nothing to map or ring. */
TEST_F(v, no_rings_without_flag)
{
	struct kqp_create_qp c;
	struct rt_qp q;
	void *p;

	v_req(self, &c);
	c.flags = 0;
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	EXPECT_EQ(0, q.c.out_rings.mmap_size);
	EXPECT_EQ(0, q.c.out_rings.sq.entries);
	EXPECT_EQ(0, q.c.out_rings.rq.entries);
	p = mmap(NULL, self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, (off_t)q.c.out_qp * self->page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(EINVAL, rt_ring(&q, KQP_DB_SEND));
	EXPECT_EQ(EINVAL, rt_ring(&q, KQP_DB_RECV));
	EXPECT_EQ(0, rt_qp_destroy(&q));
}

/*
 * KQP_CREATE_QP_RECV_ASYNC is given where a receive ring can be drained
 * after completions: an RC QP with rings and a receive queue of its own.
 * Asked for elsewhere, the QP is made without it.  It starts asking for
 * the doorbell: the device holds no receive yet.
 */
TEST_F(v, recv_async_only_where_it_can_be)
{
	struct kqp_create_srq s = {
		.size = sizeof(s), .pd = self->pd,
		.attr = { .max_wr = 8, .max_sge = 1 },
	};
	struct kqp_destroy_srq ds = { .size = sizeof(ds) };
	struct kqp_create_qp c;
	struct rt_qp q;

	v_req(self, &c);
	c.flags |= KQP_CREATE_QP_RECV_ASYNC;
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	EXPECT_EQ(KQP_QP_RINGS_SEND_ASYNC | KQP_QP_RINGS_RECV_ASYNC,
		  q.c.out_rings.flags);
	EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL,
		  rt_rq_hdr(&q)->flags & KQP_WQ_RING_NEED_DOORBELL);
	EXPECT_EQ(0, rt_qp_destroy(&q));

	/* Without rings. */
	v_req(self, &c);
	c.flags = KQP_CREATE_QP_RECV_ASYNC;
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	EXPECT_EQ(0, q.c.out_rings.mmap_size);
	EXPECT_EQ(0, q.c.out_rings.flags);
	EXPECT_EQ(0, rt_qp_destroy(&q));

	/* UD. */
	v_req(self, &c);
	c.flags |= KQP_CREATE_QP_RECV_ASYNC;
	c.qp_type = KQP_QPT_UD;
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	EXPECT_EQ(KQP_QP_RINGS_SEND_ASYNC, q.c.out_rings.flags);
	EXPECT_EQ(0, rt_qp_destroy(&q));

	/* On an SRQ: no receive ring at all. */
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &s));
	v_req(self, &c);
	c.flags |= KQP_CREATE_QP_RECV_ASYNC;
	c.srq = s.out_srq;
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	EXPECT_EQ(KQP_QP_RINGS_SEND_ASYNC, q.c.out_rings.flags);
	EXPECT_EQ(0, rt_qp_destroy(&q));
	ds.srq = s.out_srq;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_SRQ, &ds));
}

/* A QP on an SRQ has a send ring and no receive ring. */
TEST_F(v, srq_qp_has_no_recv_ring)
{
	struct kqp_create_srq s = {
		.size = sizeof(s), .pd = self->pd,
		.attr = { .max_wr = 8, .max_sge = 1 },
	};
	struct kqp_destroy_srq ds = { .size = sizeof(ds) };
	struct kqp_create_qp c;
	struct rt_qp q;

	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &s));
	v_req(self, &c);
	c.srq = s.out_srq;
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	check_rings(_metadata, self, &q.c, true);
	EXPECT_EQ(EINVAL, rt_ring(&q, KQP_DB_RECV));
	EXPECT_EQ(EINVAL, rt_ring(&q, KQP_DB_RECV | KQP_DB_SEND));
	/* The send ring is there, and empty. */
	EXPECT_EQ(0, rt_ring(&q, KQP_DB_SEND));
	EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL,
		  rt_sq_hdr(&q)->flags & KQP_WQ_RING_NEED_DOORBELL);
	EXPECT_EQ(0, rt_qp_destroy(&q));
	ds.srq = s.out_srq;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_SRQ, &ds));
}

/* mmap of the rings: exactly their offset and length, shared, never exec. */
TEST_F(v, mmap_rules)
{
	struct kqp_create_qp c;
	struct rt_qp q;
	size_t len;
	void *p, *keep;

	v_req(self, &c);
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	len = q.c.out_rings.mmap_size;
	ASSERT_LT(0, len);

	p = mmap(NULL, len + self->page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, q.c.out_rings.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	if (len > (size_t)self->page) {
		p = mmap(NULL, len - self->page, PROT_READ | PROT_WRITE,
			 MAP_SHARED, self->fd, q.c.out_rings.mmap_offset);
		EXPECT_EQ(MAP_FAILED, p);
		EXPECT_EQ(EINVAL, errno);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
		 q.c.out_rings.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd,
		 q.c.out_rings.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_SHARED,
		 self->fd, q.c.out_rings.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* Not executable later either. */
	EXPECT_EQ(-1, mprotect(q.map, len, PROT_READ | PROT_EXEC));
	/* Another object's offset (the PD's), and one past the QP's. */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)self->pd * self->page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 q.c.out_rings.mmap_offset + self->page);
	EXPECT_EQ(MAP_FAILED, p);
	/* The CQ's ring offset with the QP rings' length. */
	if (self->cq.c.out_ring.mmap_size != len) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, self->cq.c.out_ring.mmap_offset);
		EXPECT_EQ(MAP_FAILED, p);
	}

	/* A second mapping shows the same memory. */
	keep = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		    q.c.out_rings.mmap_offset);
	ASSERT_NE(MAP_FAILED, keep);
	{
		struct kqp_wq_ring_hdr *h2 = (void *)((char *)keep +
					q.c.out_rings.sq.off_hdr);

		rt_set_tail(rt_sq_hdr(&q), 7);
		EXPECT_EQ(7, h2->tail);
		EXPECT_EQ(rt_sq_hdr(&q)->flags, h2->flags);
		rt_set_tail(h2, 0);
		EXPECT_EQ(0, rt_sq_hdr(&q)->tail);
	}

	/* Destroyed: the offset names nothing any more. */
	{
		struct kqp_destroy_qp d = { .size = sizeof(d),
					    .qp = q.c.out_qp };

		ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP,
					    &d));
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 q.c.out_rings.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(ENOENT, rt_ring(&q, KQP_DB_SEND));
	/* The old mappings are still one memory, until unmapped. */
	{
		struct kqp_wq_ring_hdr *h2 = (void *)((char *)keep +
					q.c.out_rings.sq.off_hdr);

		rt_set_tail(h2, 9);
		EXPECT_EQ(9, rt_sq_hdr(&q)->tail);
	}
	EXPECT_EQ(0, munmap(keep, len));
	EXPECT_EQ(0, munmap(q.map, len));
}

/*
 * A child after fork() inherits no mapping of the rings, can map none,
 * and can ring no doorbell of its parent's table; the parent goes on.
 */
TEST_F(v, fork_child)
{
	struct kqp_create_qp c;
	struct rt_qp q;
	pid_t pid;

	v_req(self, &c);
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	rt_sq_hdr(&q)->tail = 0;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		unsigned char vec[16];
		int bad = 0;

		/* The range is not mapped in the child at all. */
		if (mincore(q.map, self->page, vec) != -1 || errno != ENOMEM)
			bad |= 1;
		if (rt_ring(&q, KQP_DB_SEND) != EPERM)
			bad |= 2;
		if (rt_ring(&q, KQP_DB_RECV) != EPERM)
			bad |= 4;
		if (mmap(NULL, q.c.out_rings.mmap_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, self->fd, q.c.out_rings.mmap_offset) !=
		    MAP_FAILED || errno != EPERM)
			bad |= 8;
		if (bad)
			_exit(bad);
		/* This faults. */
		rt_sq_hdr(&q)->tail = 1;
		_exit(64);
	}
	kqp_test_expect_segv(_metadata, pid);
	/* The parent's mapping and doorbell are untouched. */
	EXPECT_EQ(0, rt_sq_hdr(&q)->tail);
	EXPECT_EQ(0, rt_ring(&q, KQP_DB_SEND));
	EXPECT_EQ(0, rt_qp_destroy(&q));
}

/* The call's own errnos: nothing is drained when any of them fires. */
TEST_F(v, doorbell_call_errnos)
{
	struct kqp_create_qp c;
	struct rt_qp q;
	struct rt_recv r = rt_recv1(1, 0, 0, 0);
	struct kqp_doorbell_entry e[2], *many, se = { .flags = KQP_DB_SEND };
	struct kqp_qp_attr init = { .qp_state = KQP_QPS_INIT, .port_num = 1 };
	struct kqp_doorbell d;
	struct kqp_reg_mr mr;
	uint32_t i, done;
	char *big, *mem = aligned_alloc(4096, 4096);

	ASSERT_NE(NULL, mem);
	ASSERT_EQ(0, kqp_test_reg_mr(self->fd, self->pd, mem, 4096, 1, &mr));
	v_req(self, &c);
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &q));
	/*
	 * A receive published on a QP in INIT, which takes receives: any
	 * drain would move head to 1.  The checks below are all made
	 * before any drain, so head and out_errno stay as they were.
	 */
	ASSERT_EQ(0, rt_modify(self->fd, q.c.out_qp, KQP_QP_ATTR_STATE |
			       KQP_QP_ATTR_PKEY_INDEX | KQP_QP_ATTR_PORT |
			       KQP_QP_ATTR_ACCESS_FLAGS, &init));
	r.sge[0] = (struct kqp_sge){ (uintptr_t)mem, 64, mr.out_lkey };
	rt_rq_put(&q, &r, RT_RECV1_LEN);
	rt_rq_publish(&q);
	memset(e, 0, sizeof(e));
	se.qp = q.c.out_qp;
	e[0].qp = e[1].qp = q.c.out_qp;
	e[0].flags = e[1].flags = KQP_DB_RECV;
	e[0].out_errno = e[1].out_errno = 12345;

	/* count 0 and past the maximum */
	EXPECT_EQ(EINVAL, rt_doorbell(self->fd, e, 0, NULL));
	many = calloc(KQP_DOORBELL_MAX + 1, sizeof(*many));
	ASSERT_NE(NULL, many);
	for (i = 0; i <= KQP_DOORBELL_MAX; i++) {
		many[i].qp = q.c.out_qp;
		many[i].flags = KQP_DB_SEND;
	}
	EXPECT_EQ(EINVAL, rt_doorbell(self->fd, many, KQP_DOORBELL_MAX + 1,
				      NULL));
	/* The maximum itself is fine: an empty send ring, 1024 times. */
	EXPECT_EQ(0, rt_doorbell(self->fd, many, KQP_DOORBELL_MAX, &done));
	EXPECT_EQ(KQP_DOORBELL_MAX, done);
	for (i = 0; i < KQP_DOORBELL_MAX; i++)
		if (many[i].out_errno)
			break;
	EXPECT_EQ(KQP_DOORBELL_MAX, i);
	free(many);

	/* entry_size: below 16, and a longer one with a tail. */
	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.count = 1;
	d.entries = (uintptr_t)e;
	d.entry_size = 15;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	d.entry_size = 0;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	d.entry_size = 8;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	{
		/* 24-byte entries: zero tails are fine, a non-zero is not. */
		uint32_t w[12] = { 0 };

		w[0] = q.c.out_qp;
		w[1] = KQP_DB_SEND;
		w[6] = q.c.out_qp;
		w[7] = KQP_DB_SEND;
		d.entries = (uintptr_t)w;
		d.entry_size = 24;
		d.count = 2;
		EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
		EXPECT_EQ(2, d.out_done);
		w[11] = 1;
		EXPECT_EQ(E2BIG, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL,
						&d));
		/* Its entry size applies: the second QP is at byte 24. */
		w[11] = 0;
		w[6] = 0xdead;
		w[8] = 0;
		EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
		EXPECT_EQ(0, (int32_t)w[2]);
		EXPECT_EQ(ENOENT, (int32_t)w[8]);
	}

	/*
	 * The struct's own fields, with an entry that may be drained: the
	 * empty send ring.
	 */
	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.count = 1;
	d.entry_size = sizeof(e[0]);
	d.entries = (uintptr_t)&se;
	d.flags = KQP_DOORBELL_WAKE_POLLER << 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	/* Known, and a no-op for a table without a poller. */
	d.flags = KQP_DOORBELL_WAKE_POLLER;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	d.flags = 0;
	d.__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	d.__reserved = 0;
	d.size = offsetof(struct kqp_doorbell, entries);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	{
		char longer[sizeof(d) + 8] __attribute__((aligned(8)));

		memset(longer, 0, sizeof(longer));
		d.size = sizeof(longer);
		memcpy(longer, &d, sizeof(d));
		EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL,
					    longer));
		longer[sizeof(d) + 3] = 1;
		EXPECT_EQ(E2BIG, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL,
						longer));
	}
	EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, NULL));

	/*
	 * Bad pointers: NULL, unmapped, and running into a PROT_NONE page
	 * behind an entry that would drain the receive: nothing is.
	 */
	d.size = sizeof(d);
	d.entries = 0;
	EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	big = mmap(NULL, 2 * self->page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, big);
	ASSERT_EQ(0, mprotect(big + self->page, self->page, PROT_NONE));
	memcpy(big + self->page - sizeof(e[0]), &e[0], sizeof(e[0]));
	d.entries = (uintptr_t)big + self->page - sizeof(e[0]);
	d.count = 2;
	EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	d.entries = (uintptr_t)big + self->page;
	d.count = 1;
	EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, KQP_IOCTL_DOORBELL, &d));
	munmap(big, 2 * self->page);

	/*
	 * Entries: no flag, an unknown flag, a reserved word, even behind a
	 * good entry: EOPNOTSUPP, and the good one is not drained either.
	 */
	e[1].flags = 0;
	EXPECT_EQ(EOPNOTSUPP, rt_doorbell(self->fd, e, 2, NULL));
	e[1].flags = KQP_DB_RECV | (1U << 2);
	EXPECT_EQ(EOPNOTSUPP, rt_doorbell(self->fd, e, 2, NULL));
	e[1].flags = 1U << 31;
	EXPECT_EQ(EOPNOTSUPP, rt_doorbell(self->fd, e, 2, NULL));
	e[1].flags = KQP_DB_RECV;
	e[1].__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, rt_doorbell(self->fd, e, 2, NULL));
	EXPECT_EQ(12345, e[0].out_errno);
	EXPECT_EQ(12345, e[1].out_errno);
	EXPECT_EQ(0, rt_head(rt_rq_hdr(&q)));
	EXPECT_EQ(1, rt_rq_hdr(&q)->tail);

	/* The same two, sane: the receive is taken, once. */
	e[1].__reserved = 0;
	EXPECT_EQ(0, rt_doorbell(self->fd, e, 2, &done));
	EXPECT_EQ(2, done);
	EXPECT_EQ(0, e[0].out_errno);
	EXPECT_EQ(0, e[1].out_errno);
	EXPECT_EQ(1, rt_head(rt_rq_hdr(&q)));
	EXPECT_EQ(0, rt_qp_destroy(&q));
	EXPECT_EQ(0, rt_dereg(self->fd, mr.out_mr));
	free(mem);
}

/* Each QP's own errnos, in out_errno; the others are drained anyway. */
TEST_F(v, doorbell_per_qp_errnos)
{
	struct kqp_create_qp c;
	struct rt_qp ring, plain;
	struct kqp_doorbell_entry e[6];
	uint32_t done = 0;
	int i;

	v_req(self, &c);
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &ring));
	v_req(self, &c);
	c.flags = 0;
	ASSERT_EQ(0, rt_qp_make(self->fd, &c, &plain));

	memset(e, 0, sizeof(e));
	for (i = 0; i < 6; i++) {
		e[i].flags = KQP_DB_SEND;
		e[i].out_errno = 12345;
	}
	e[0].qp = 0xdead;			/* nothing */
	e[1].qp = self->cq.c.out_cq;		/* a CQ */
	e[2].qp = self->pd;			/* a PD */
	e[3].qp = plain.c.out_qp;		/* a QP without rings */
	e[4].qp = ring.c.out_qp;		/* fine */
	e[5].qp = 0;
	EXPECT_EQ(0, rt_doorbell(self->fd, e, 6, &done));
	EXPECT_EQ(6, done);
	EXPECT_EQ(ENOENT, e[0].out_errno);
	EXPECT_EQ(ENOENT, e[1].out_errno);
	EXPECT_EQ(ENOENT, e[2].out_errno);
	EXPECT_EQ(EINVAL, e[3].out_errno);
	EXPECT_EQ(0, e[4].out_errno);
	EXPECT_EQ(ENOENT, e[5].out_errno);

	/* Another file's QP is not this file's. */
	{
		int other = open(KQP_DEV, O_RDWR | O_CLOEXEC);
		struct kqp_doorbell_entry oe = { .qp = ring.c.out_qp,
						 .flags = KQP_DB_SEND };
		uint32_t pd;

		ASSERT_LE(0, other);
		ASSERT_EQ(0, rt_pd(other, self->dev, &pd));
		EXPECT_EQ(0, rt_doorbell(other, &oe, 1, &done));
		EXPECT_EQ(ENOENT, oe.out_errno);
		close(other);
	}

	/* A tail more than entries past head: EINVAL, nothing taken. */
	rt_set_tail(rt_sq_hdr(&ring), ring.c.out_rings.sq.entries + 1);
	EXPECT_EQ(EINVAL, rt_ring(&ring, KQP_DB_SEND));
	EXPECT_EQ(0, rt_head(rt_sq_hdr(&ring)));
	rt_set_tail(rt_sq_hdr(&ring), 0);
	EXPECT_EQ(0, rt_ring(&ring, KQP_DB_SEND));
	EXPECT_EQ(0, rt_qp_destroy(&ring));
	EXPECT_EQ(0, rt_qp_destroy(&plain));
}

/* ------------------------------------------------------------------ */
/* Data through the rings                                               */

FIXTURE(d) {
	struct rt_pair p;
};

FIXTURE_SETUP(d)
{
	ASSERT_EQ(0, rt_pair_make(&self->p, NULL, 7));
}

FIXTURE_TEARDOWN(d)
{
	rt_pair_free(&self->p);
}

TEST_F(d, send_recv)
{
	struct rt_pair *p = &self->p;

	rt_b_recvs(p, 200, 4);
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	/* Synchronous: taken by the time the doorbell returns. */
	EXPECT_EQ(4, rt_head(rt_rq_hdr(&p->b)));
	EXPECT_EQ(0, rt_head(rt_sq_hdr(&p->b)));
	rt_a_sends(p, 100, 4, 100);
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	EXPECT_EQ(4, rt_head(rt_sq_hdr(&p->a)));
	rt_expect_a_to_b(_metadata, p, 100, 200, 4, 100);
	rt_expect_data(_metadata, p, 100, 4, 100);
	/* Ringing again takes nothing more. */
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND | KQP_DB_RECV));
	EXPECT_EQ(4, rt_head(rt_sq_hdr(&p->a)));
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, NULL, 1, 100));
}

/*
 * Sends a, from @first, at buffer offsets from @slot * 256, each with its
 * own bytes; published, not rung.
 */
static void a_sends_at(struct rt_pair *p, uint64_t first, int slot, int n,
		       uint32_t len, uint32_t lkey)
{
	int i;

	for (i = 0; i < n; i++) {
		uint32_t off = (uint32_t)((slot + i) * 256);
		struct rt_send s = rt_send1(first + i, KQP_WR_OP_SEND,
					    rt_abuf(p, off), len, lkey);

		memset(p->buf + off, (int)((first + i) & 0x7f) | 1, len);
		rt_sq_put(&p->a, &s, RT_SEND1_LEN);
	}
	rt_sq_publish(&p->a);
}

/* NEED_DOORBELL on a's send ring, waited for up to @ms. */
static bool a_needs_doorbell(struct rt_pair *p, bool want, int ms)
{
	uint32_t need = KQP_WQ_RING_NEED_DOORBELL;

	return rt_flags_become(rt_sq_hdr(&p->a), need, want ? need : 0, ms) ?
	       want : !want;
}

/*
 * While a signaled send is outstanding the kernel has committed to look
 * at the send ring again: NEED_DOORBELL is clear, and what is published
 * then is posted after that send's completion, with no doorbell.  The
 * first send waits for b's receive (RNR, retried for ever), so nothing
 * completes until b posts one; once everything has completed, the flag
 * is set again.
 */
TEST_F_TIMEOUT(d, drained_after_completion, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *sh = rt_sq_hdr(&p->a);

	EXPECT_TRUE(a_needs_doorbell(p, true, 0));
	a_sends_at(p, 100, 0, 1, 64, p->mr.out_lkey);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	EXPECT_EQ(1, rt_head(sh));
	EXPECT_FALSE(a_needs_doorbell(p, false, 0));

	/* Published, never rung: held until the first send completes. */
	a_sends_at(p, 101, 1, 3, 64, p->mr.out_lkey);
	usleep(200000);
	EXPECT_EQ(1, rt_head(sh));
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, NULL, 1, 0));

	rt_b_recvs(p, 200, 4);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	rt_expect_a_to_b(_metadata, p, 100, 200, 4, 64);
	rt_expect_data(_metadata, p, 100, 4, 64);
	EXPECT_EQ(4, rt_head(sh));
	/* Nothing outstanding: the process must ring again. */
	EXPECT_TRUE(a_needs_doorbell(p, true, 5000));
}

/* Write @val to tracefs file @path; 0 or -1. */
static int trace_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

#define TRACE_ROOT	"/sys/kernel/tracing"
#define TRACE_INST	TRACE_ROOT "/instances/kqp_rings_test"
#define TRACE_EVENT	TRACE_INST "/events/workqueue/workqueue_queue_work/enable"

/*
 * The drains the kernel committed to run after a completion (the test
 * above) are work that no process's CPU accounting sees: they run on the
 * workqueue of the table's user, "kqp-u" and its uid, ordered so that a
 * user takes one CPU at a time at most.  The workqueue tracepoint names
 * the queue each drain went to.
 */
TEST_F_TIMEOUT(d, drains_on_the_users_queue, 60)
{
	struct rt_pair *p = &self->p;
	char want[64], line[512], *w;
	int drains = 0, others = 0;
	FILE *f;

	if (access(TRACE_ROOT "/instances", F_OK) &&
	    system("mount -t tracefs nodev " TRACE_ROOT " 2>/dev/null"))
		SKIP(return, "no tracefs");
	rmdir(TRACE_INST);
	ASSERT_EQ(0, mkdir(TRACE_INST, 0700));
	ASSERT_EQ(0, trace_write(TRACE_EVENT, "1"));

	a_sends_at(p, 100, 0, 1, 64, p->mr.out_lkey);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	EXPECT_FALSE(a_needs_doorbell(p, false, 0));
	a_sends_at(p, 101, 1, 3, 64, p->mr.out_lkey);
	rt_b_recvs(p, 200, 4);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	rt_expect_a_to_b(_metadata, p, 100, 200, 4, 64);
	EXPECT_EQ(4, rt_head(rt_sq_hdr(&p->a)));

	EXPECT_EQ(0, trace_write(TRACE_EVENT, "0"));
	snprintf(want, sizeof(want), "workqueue=kqp-u%u", (unsigned)geteuid());
	f = fopen(TRACE_INST "/trace", "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "function=kqp_qp_drain_work"))
			continue;
		w = strstr(line, "workqueue=");
		if (w && !strncmp(w, want, strlen(want)) &&
		    (w[strlen(want)] == ' ' || w[strlen(want)] == '\n'))
			drains++;
		else {
			others++;
			TH_LOG("%s", line);
		}
	}
	fclose(f);
	rmdir(TRACE_INST);
	/* The three entries published behind the first send were drained. */
	EXPECT_LT(0, drains);
	EXPECT_EQ(0, others);
}

/*
 * An entry the kernel refuses, published while it is committed and never
 * rung, fails the QP as a device would: the send before it completes, it
 * completes with a protection error, the one after it is flushed, a goes
 * to ERR, and b receives only the first message.
 */
TEST_F_TIMEOUT(d, refused_without_doorbell, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_cqe wc[3];

	a_sends_at(p, 300, 0, 1, 64, p->mr.out_lkey);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	EXPECT_FALSE(a_needs_doorbell(p, false, 0));
	/* The PD's local_dma_lkey reaches any memory: never from userspace. */
	RT_NEED_DMA_LKEY(p);
	a_sends_at(p, 301, 1, 1, 64, p->pd_dma_lkey);
	a_sends_at(p, 302, 2, 1, 64, p->mr.out_lkey);
	usleep(100000);
	EXPECT_EQ(1, rt_head(rt_sq_hdr(&p->a)));

	rt_b_recvs(p, 400, 3);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	ASSERT_EQ(3, rt_cq_poll(&p->ascq, wc, 3, 20000));
	EXPECT_EQ(300, wc[0].wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(301, wc[1].wr_id);
	EXPECT_EQ(KQP_WC_LOC_PROT_ERR, wc[1].status);
	EXPECT_EQ(302, wc[2].wr_id);
	EXPECT_EQ(KQP_WC_WR_FLUSH_ERR, wc[2].status);
	EXPECT_EQ(3, rt_head(rt_sq_hdr(&p->a)));
	EXPECT_EQ(KQP_QPS_ERR, rt_qp_state(&p->a, NULL));
	ASSERT_EQ(1, rt_cq_poll(&p->brcq, wc, 1, 20000));
	EXPECT_EQ(400, wc[0].wr_id);
	EXPECT_EQ(64, wc[0].byte_len);
	EXPECT_EQ(0, rt_cq_poll(&p->brcq, wc, 1, 200));
	rt_expect_data(_metadata, p, 300, 1, 64);

	/* Connected again through RESET, a sends as before. */
	ASSERT_EQ(0, rt_a_reconnect(p));
	a_sends_at(p, 303, 3, 1, 64, p->mr.out_lkey);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	ASSERT_EQ(1, rt_cq_poll(&p->ascq, wc, 1, 20000));
	EXPECT_EQ(303, wc[0].wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc[0].status);
	ASSERT_EQ(1, rt_cq_poll(&p->brcq, wc, 1, 20000));
	EXPECT_EQ(401, wc[0].wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc[0].status);
}

/*
 * RESET throws away a QP's work without completions: a ring committed to
 * drain after a send that will now never complete must ask for the
 * doorbell again, with every slot free (retired caught up), or what the
 * process posts after connecting again would wait for ever.
 */
TEST_F_TIMEOUT(d, reset_asks_for_doorbell, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *sh = rt_sq_hdr(&p->a);
	struct kqp_qp_attr r = { .qp_state = KQP_QPS_RESET };
	struct kqp_cqe wc;

	a_sends_at(p, 500, 0, 1, 64, p->mr.out_lkey);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	EXPECT_FALSE(a_needs_doorbell(p, false, 0));
	EXPECT_EQ(0, __atomic_load_n(&sh->retired, __ATOMIC_ACQUIRE));

	ASSERT_EQ(0, rt_modify(p->fd, p->a.c.out_qp, KQP_QP_ATTR_STATE, &r));
	EXPECT_TRUE(a_needs_doorbell(p, true, 0));
	EXPECT_EQ(1, __atomic_load_n(&sh->retired, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, rt_a_reconnect(p));

	rt_b_recvs(p, 600, 1);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	a_sends_at(p, 501, 1, 1, 64, p->mr.out_lkey);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	ASSERT_EQ(1, rt_cq_poll(&p->ascq, &wc, 1, 20000));
	EXPECT_EQ(501, wc.wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc.status);
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, &wc, 1, 200));
	ASSERT_EQ(1, rt_cq_poll(&p->brcq, &wc, 1, 20000));
	EXPECT_EQ(600, wc.wr_id);
	EXPECT_EQ(64, wc.byte_len);
}

/* Sixteen sends published at once and one doorbell for them all. */
TEST_F(d, batch_of_16)
{
	struct rt_pair *p = &self->p;
	uint32_t done = 0;

	ASSERT_LE(16, p->a.c.out_rings.sq.entries);
	ASSERT_LE(16, p->b.c.out_rings.rq.entries);
	ASSERT_LE(16, p->a.c.cap.max_send_wr);
	rt_b_recvs(p, 1000, 16);
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(16, rt_head(rt_rq_hdr(&p->b)));
	rt_a_sends(p, 2000, 16, 64);
	{
		struct kqp_doorbell_entry e = { .qp = p->a.c.out_qp,
						.flags = KQP_DB_SEND,
						.out_errno = -1 };

		EXPECT_EQ(0, rt_doorbell(p->fd, &e, 1, &done));
		EXPECT_EQ(1, done);
		EXPECT_EQ(0, e.out_errno);
	}
	EXPECT_EQ(16, rt_head(rt_sq_hdr(&p->a)));
	rt_expect_a_to_b(_metadata, p, 2000, 1000, 16, 64);
	rt_expect_data(_metadata, p, 2000, 16, 64);
}

/*
 * One doorbell naming two QPs: b's receives, then a's sends to b, then
 * a's receives and b's sends back with both flags on one entry (the
 * receive ring is drained first).
 */
TEST_F(d, one_doorbell_two_qps)
{
	struct rt_pair *p = &self->p;
	struct kqp_doorbell_entry e[3];
	uint32_t done = 0;
	int i;

	rt_b_recvs(p, 300, 3);
	rt_a_sends(p, 400, 3, 32);
	memset(e, 0, sizeof(e));
	e[0] = (struct kqp_doorbell_entry){ .qp = p->b.c.out_qp,
					    .flags = KQP_DB_RECV,
					    .out_errno = -1 };
	e[1] = (struct kqp_doorbell_entry){ .qp = p->a.c.out_qp,
					    .flags = KQP_DB_SEND,
					    .out_errno = -1 };
	EXPECT_EQ(0, rt_doorbell(p->fd, e, 2, &done));
	EXPECT_EQ(2, done);
	EXPECT_EQ(0, e[0].out_errno);
	EXPECT_EQ(0, e[1].out_errno);
	EXPECT_EQ(3, rt_head(rt_rq_hdr(&p->b)));
	EXPECT_EQ(3, rt_head(rt_sq_hdr(&p->a)));
	rt_expect_a_to_b(_metadata, p, 400, 300, 3, 32);

	/* Back: a's receives and b's sends, and a third entry naming a. */
	for (i = 0; i < 2; i++) {
		struct rt_recv r = rt_recv1(500 + i,
					    rt_abuf(p, 8192 + i * 256), 256,
					    p->mr.out_lkey);
		struct rt_send s = rt_send1(600 + i, KQP_WR_OP_SEND,
					    rt_bbuf(p, 8192 + i * 256), 48,
					    p->mr.out_lkey);

		rt_rq_put(&p->a, &r, RT_RECV1_LEN);
		rt_sq_put(&p->b, &s, RT_SEND1_LEN);
	}
	rt_rq_publish(&p->a);
	rt_sq_publish(&p->b);
	e[0] = (struct kqp_doorbell_entry){ .qp = p->a.c.out_qp,
					    .flags = KQP_DB_RECV | KQP_DB_SEND,
					    .out_errno = -1 };
	e[1] = (struct kqp_doorbell_entry){ .qp = p->b.c.out_qp,
					    .flags = KQP_DB_RECV | KQP_DB_SEND,
					    .out_errno = -1 };
	e[2] = (struct kqp_doorbell_entry){ .qp = p->a.c.out_qp,
					    .flags = KQP_DB_SEND,
					    .out_errno = -1 };
	EXPECT_EQ(0, rt_doorbell(p->fd, e, 3, &done));
	EXPECT_EQ(3, done);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, e[i].out_errno);
	EXPECT_EQ(2, rt_head(rt_rq_hdr(&p->a)));
	EXPECT_EQ(2, rt_head(rt_sq_hdr(&p->b)));
	EXPECT_EQ(3, rt_head(rt_sq_hdr(&p->a)));
	rt_expect_cqes(_metadata, &p->bscq, 600, 2, KQP_WC_OP_SEND, 0,
		    p->b.c.out_qp_num);
	rt_expect_cqes(_metadata, &p->arcq, 500, 2, KQP_WC_OP_RECV, 48,
		    p->a.c.out_qp_num);
}

/* Round after round, the indices run past the ring's end many times. */
TEST_F_TIMEOUT(d, wraps_around, 120)
{
	struct rt_pair *p = &self->p;
	uint32_t sq = p->a.c.out_rings.sq.entries;
	uint32_t rq = p->b.c.out_rings.rq.entries;
	uint64_t id = 1;
	int round, k;

	for (round = 0; round < 40; round++) {
		k = 1 + round % 7;
		rt_b_recvs(p, 10000 + id, k);
		ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
		rt_a_sends(p, id, k, 16 + round);
		ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
		ASSERT_EQ(p->a.sq_tail, rt_head(rt_sq_hdr(&p->a)));
		ASSERT_EQ(p->b.rq_tail, rt_head(rt_rq_hdr(&p->b)));
		rt_expect_a_to_b(_metadata, p, id, 10000 + id, k, 16 + round);
		rt_expect_data(_metadata, p, id, k, 16 + round);
		id += k;
	}
	TH_LOG("%u sends through a ring of %u, %u receives through %u",
	       p->a.sq_tail, sq, p->b.rq_tail, rq);
	EXPECT_LT(3 * sq, p->a.sq_tail);
	EXPECT_LT(3 * rq, p->b.rq_tail);
}

/* Inline bytes follow the request in its entry. */
TEST_F(d, inline_send)
{
	struct rt_pair *p = &self->p;
	struct rt_send s = {
		.wr = { .wr_id = 77, .opcode = KQP_WR_OP_SEND_WITH_IMM,
			.send_flags = KQP_SEND_FLAG_SIGNALED |
				      KQP_SEND_FLAG_INLINE,
			.inline_len = 41, .imm_data = htonl(0x1234) },
	};
	struct kqp_cqe wc;

	ASSERT_LE(41, p->a.c.cap.max_inline_data);
	memcpy(s.sge, "inline bytes, in the ring entry itself.!", 41);
	rt_b_recvs(p, 88, 1);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	rt_sq_put(&p->a, &s, RT_SEND_HDR + 48);
	rt_sq_publish(&p->a);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	rt_expect_cqes(_metadata, &p->ascq, 77, 1, KQP_WC_OP_SEND, 0,
		    p->a.c.out_qp_num);
	ASSERT_EQ(1, rt_cq_poll(&p->brcq, &wc, 1, 20000));
	EXPECT_EQ(88, wc.wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc.status);
	EXPECT_EQ(41, wc.byte_len);
	EXPECT_EQ(htonl(0x1234), wc.imm_data);
	EXPECT_EQ(0, memcmp(p->buf + RT_HALF, s.sge, 41));
}

/* An RDMA write and read posted through the ring. */
TEST_F(d, rdma_through_ring)
{
	struct rt_pair *p = &self->p;
	struct rt_send w = rt_send1(5, KQP_WR_OP_RDMA_WRITE, rt_abuf(p, 0),
				    128, p->mr.out_lkey);
	struct rt_send r = rt_send1(6, KQP_WR_OP_RDMA_READ, rt_abuf(p, 4096),
				    128, p->mr.out_lkey);
	struct kqp_cqe wc[2];

	memset(p->buf, 'w', 128);
	memset(p->buf + RT_HALF + 1024, 'r', 128);
	w.wr.wr.rdma.remote_addr = rt_bbuf(p, 0);
	w.wr.wr.rdma.rkey = p->mr.out_rkey;
	r.wr.wr.rdma.remote_addr = rt_bbuf(p, 1024);
	r.wr.wr.rdma.rkey = p->mr.out_rkey;
	rt_sq_put(&p->a, &w, RT_SEND1_LEN);
	rt_sq_put(&p->a, &r, RT_SEND1_LEN);
	rt_sq_publish(&p->a);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	ASSERT_EQ(2, rt_cq_poll(&p->ascq, wc, 2, 20000));
	EXPECT_EQ(5, wc[0].wr_id);
	EXPECT_EQ(KQP_WC_OP_RDMA_WRITE, wc[0].opcode);
	EXPECT_EQ(KQP_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(6, wc[1].wr_id);
	EXPECT_EQ(KQP_WC_OP_RDMA_READ, wc[1].opcode);
	EXPECT_EQ(KQP_WC_SUCCESS, wc[1].status);
	EXPECT_EQ(0, memcmp(p->buf, p->buf + RT_HALF, 128));
	EXPECT_EQ(0, memcmp(p->buf + 4096, p->buf + RT_HALF + 1024, 128));
	/* Nothing went to b's receive side. */
	EXPECT_EQ(0, rt_cq_poll(&p->brcq, NULL, 1, 100));
}

/* The POST ioctls still work on a ring QP, beside the rings. */
TEST_F(d, legacy_post_beside_rings)
{
	struct rt_pair *p = &self->p;
	struct rt_recv r = rt_recv1(31, rt_bbuf(p, 0), 256, p->mr.out_lkey);
	struct rt_send s = rt_send1(41, KQP_WR_OP_SEND, rt_abuf(p, 0), 20,
				    p->mr.out_lkey);
	struct kqp_post post = {
		.size = sizeof(post), .qp = p->b.c.out_qp, .count = 1,
		.wrs = (uintptr_t)&r, .wrs_len = RT_RECV1_LEN,
	};

	memset(p->buf, 41 | 1, 20);
	ASSERT_EQ(0, kqp_test_ioctl(p->fd, KQP_IOCTL_POST_RECV, &post));
	EXPECT_EQ(1, post.out_posted);
	post.qp = p->a.c.out_qp;
	post.wrs = (uintptr_t)&s;
	post.wrs_len = RT_SEND1_LEN;
	ASSERT_EQ(0, kqp_test_ioctl(p->fd, KQP_IOCTL_POST_SEND, &post));
	/* The rings did not move. */
	EXPECT_EQ(0, rt_head(rt_rq_hdr(&p->b)));
	EXPECT_EQ(0, rt_head(rt_sq_hdr(&p->a)));
	rt_expect_a_to_b(_metadata, p, 41, 31, 1, 20);
	rt_expect_data(_metadata, p, 41, 1, 20);

	/* Then the rings, then the ioctl again: in the order posted. */
	rt_b_recvs(p, 50, 1);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	r.wr.wr_id = 51;
	r.sge[0].addr = rt_bbuf(p, 256);
	post.qp = p->b.c.out_qp;
	post.wrs = (uintptr_t)&r;
	post.wrs_len = RT_RECV1_LEN;
	ASSERT_EQ(0, kqp_test_ioctl(p->fd, KQP_IOCTL_POST_RECV, &post));
	rt_a_sends(p, 60, 2, 8);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	rt_expect_a_to_b(_metadata, p, 60, 50, 2, 8);
}

/*
 * A receive is in the device's queue when the doorbell returns: a send
 * rung right after it never meets an empty queue, so with rnr_retry 0
 * there is no RNR error, round after round.
 */
TEST_F_TIMEOUT(d, recv_posted_before_return, 120)
{
	struct rt_pair *p = &self->p;
	int i;

	/* No RNR retries: an RNR NAK is an error completion. */
	rt_pair_free(p);
	ASSERT_EQ(0, rt_pair_make(p, NULL, 0));
	for (i = 0; i < 30; i++) {
		rt_b_recvs(p, 700 + i, 1);
		ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
		rt_a_sends(p, 800 + i, 1, 8);
		ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
		rt_expect_a_to_b(_metadata, p, 800 + i, 700 + i, 1, 8);
	}
}

/*
 * Results that cannot be written back: the entries are readable but
 * not writable.  EFAULT, and the drain happened all the same (head says
 * so, the receive is there); ringing again takes nothing more.
 */
TEST_F(d, efault_writing_results_back)
{
	struct rt_pair *p = &self->p;
	long page = sysconf(_SC_PAGESIZE);
	struct kqp_doorbell_entry *ro;
	uint32_t done = 12345;

	ro = mmap(NULL, page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro[0] = (struct kqp_doorbell_entry){ .qp = p->b.c.out_qp,
					     .flags = KQP_DB_RECV,
					     .out_errno = 777 };
	ASSERT_EQ(0, mprotect(ro, page, PROT_READ));
	rt_b_recvs(p, 90, 1);
	EXPECT_EQ(EFAULT, rt_doorbell(p->fd, ro, 1, &done));
	EXPECT_EQ(777, ro[0].out_errno);
	EXPECT_EQ(1, rt_head(rt_rq_hdr(&p->b)));
	/* Idempotent: nothing is taken twice. */
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(1, rt_head(rt_rq_hdr(&p->b)));
	rt_a_sends(p, 91, 1, 8);
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	rt_expect_a_to_b(_metadata, p, 91, 90, 1, 8);
	munmap(ro, page);
}

/*
 * Two threads ring a's send ring over and over while this one publishes
 * RDMA writes one at a time, and a fourth posts writes of its own with
 * the POST_SEND ioctl: every request is posted exactly once, and each
 * producer's requests complete in the order it made them.
 */
struct ringer2 {
	struct rt_pair *p;
	volatile int stop;
	unsigned long rings, bad;
};

static void *ring2_loop(void *arg)
{
	struct ringer2 *r = arg;

	while (!r->stop) {
		int ret = rt_ring(&r->p->a, KQP_DB_SEND);

		r->rings++;
		if (ret && ret != ENOMEM)
			r->bad++;
	}
	return NULL;
}

#define LEGACY_BASE	1000000
#define RING_N		300
#define LEGACY_N	100

struct poster {
	struct rt_pair *p;
	int sent, bad;
};

static void *legacy_post(void *arg)
{
	struct poster *l = arg;
	struct rt_pair *p = l->p;

	while (l->sent < LEGACY_N) {
		struct rt_send s = rt_send1(LEGACY_BASE + l->sent,
					    KQP_WR_OP_RDMA_WRITE,
					    rt_abuf(p, 1024), 8,
					    p->mr.out_lkey);
		struct kqp_post post = {
			.size = sizeof(post), .qp = p->a.c.out_qp, .count = 1,
			.wrs = (uintptr_t)&s, .wrs_len = RT_SEND1_LEN,
		};
		int ret;

		s.wr.wr.rdma.remote_addr = rt_bbuf(p, 1024);
		s.wr.wr.rdma.rkey = p->mr.out_rkey;
		ret = kqp_test_ioctl(p->fd, KQP_IOCTL_POST_SEND, &post);
		if (ret == ENOMEM) {
			usleep(100);
			continue;
		}
		if (ret) {
			l->bad++;
			break;
		}
		l->sent++;
	}
	return NULL;
}

TEST_F_TIMEOUT(d, concurrent_ringers_exactly_once, 180)
{
	struct rt_pair *p = &self->p;
	struct ringer2 r = { .p = p };
	struct poster l = { .p = p };
	uint32_t in_flight_max = p->a.c.cap.max_send_wr / 2;
	uint64_t next_ring = 1, next_legacy = LEGACY_BASE;
	int seen = 0, dup_or_order = 0, failed = 0, published = 0;
	struct kqp_cqe wc[32];
	long long end = rt_now_ms() + 120000;
	pthread_t t[3];
	int i, n;

	ASSERT_EQ(0, pthread_create(&t[0], NULL, ring2_loop, &r));
	ASSERT_EQ(0, pthread_create(&t[1], NULL, ring2_loop, &r));
	ASSERT_EQ(0, pthread_create(&t[2], NULL, legacy_post, &l));
	while (seen < RING_N + LEGACY_N && rt_now_ms() < end) {
		/* Publish while the ring has room and little is in flight. */
		if (published < RING_N &&
		    p->a.sq_tail - rt_head(rt_sq_hdr(&p->a)) < in_flight_max) {
			struct rt_send s = rt_send1(published + 1,
						    KQP_WR_OP_RDMA_WRITE,
						    rt_abuf(p, 0), 8,
						    p->mr.out_lkey);

			s.wr.wr.rdma.remote_addr = rt_bbuf(p, 0);
			s.wr.wr.rdma.rkey = p->mr.out_rkey;
			rt_sq_put(&p->a, &s, RT_SEND1_LEN);
			rt_sq_publish(&p->a);
			published++;
		}
		n = rt_cq_poll(&p->ascq, wc, 32, 0);
		for (i = 0; i < n; i++) {
			seen++;
			if (wc[i].status != KQP_WC_SUCCESS)
				failed++;
			if (wc[i].wr_id >= LEGACY_BASE) {
				dup_or_order += wc[i].wr_id != next_legacy;
				next_legacy = wc[i].wr_id + 1;
			} else {
				dup_or_order += wc[i].wr_id != next_ring;
				next_ring = wc[i].wr_id + 1;
			}
		}
		if (!n)
			usleep(100);
	}
	r.stop = 1;
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	TH_LOG("%lu doorbells by two threads, %d ring writes, %d ioctl writes",
	       r.rings, published, l.sent);
	EXPECT_EQ(0, r.bad);
	EXPECT_EQ(0, l.bad);
	EXPECT_EQ(RING_N + LEGACY_N, seen);
	EXPECT_EQ(0, failed);
	EXPECT_EQ(0, dup_or_order);
	EXPECT_EQ(RING_N + 1, next_ring);
	EXPECT_EQ(LEGACY_BASE + LEGACY_N, next_legacy);
	EXPECT_EQ(p->a.sq_tail, rt_head(rt_sq_hdr(&p->a)));
	/* Nothing more comes. */
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, wc, 1, 200));
}

/*
 * A sender that rings only when the kernel asks: RDMA writes, every
 * fourth one signaled, as fast as the room @retired gives allows, for
 * a second.  Every signaled one completes exactly once, in order and
 * successfully; then more are published without ringing and the QP is
 * destroyed at once, drains perhaps still queued behind completions.
 */
TEST_F_TIMEOUT(d, rings_only_when_asked, 120)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *sh = rt_sq_hdr(&p->a);
	uint32_t depth = p->a.c.cap.max_send_wr, published = 0, next = 4;
	unsigned long doorbells = 0, seen = 0, bad = 0;
	struct kqp_cqe wc[32];
	long long end = rt_now_ms() + 1000;
	int i, n;

	ASSERT_LE(8, depth);
	for (;;) {
		bool last = rt_now_ms() > end;

		while (!last && p->a.sq_tail -
		       __atomic_load_n(&sh->retired, __ATOMIC_ACQUIRE) < depth) {
			rt_a_write_put(p, published + 1, !((published + 1) % 4));
			rt_sq_publish(&p->a);
			published++;
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			if (__atomic_load_n(&sh->flags, __ATOMIC_RELAXED) &
			    KQP_WQ_RING_NEED_DOORBELL) {
				doorbells++;
				if (rt_ring(&p->a, KQP_DB_SEND))
					bad++;
			}
		}
		if (last && next > published)
			break;
		n = rt_cq_poll(&p->ascq, wc, 32, last ? 20000 : 0);
		if (last && !n) {
			bad++;
			break;
		}
		for (i = 0; i < n; i++) {
			seen++;
			bad += wc[i].status != KQP_WC_SUCCESS ||
			       wc[i].wr_id != next;
			next += 4;
		}
	}
	TH_LOG("%u writes, %lu completions, %lu doorbells", published, seen,
	       doorbells);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(published / 4, seen);
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, wc, 1, 100));

	/* Published behind a signaled one, not rung, and destroyed. */
	for (i = 0; i < 4; i++)
		rt_a_write_put(p, ++published, true);
	rt_sq_publish(&p->a);
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	for (i = 0; i < 8; i++)
		rt_a_write_put(p, ++published, true);
	rt_sq_publish(&p->a);
	EXPECT_EQ(0, rt_qp_destroy(&p->a));
}

/* ------------------------------------------------------------------ */
/* The device goes away                                                 */

/* A second rxe device, on the netdev no RDMA device uses. */
static const char *dev2 = "kqpring0";

static int dev2_add(void)
{
	return kqp_test_sh("rdma link add %s type rxe netdev %s", dev2,
			   getenv("KQP_TEST_NORDMA_NETDEV") ?: "kqp1");
}

static int dev2_del(void)
{
	return kqp_test_sh("rdma link delete %s 2>/dev/null", dev2);
}

struct db_loop {
	int fd;
	uint32_t qp;
	volatile int stop;
	unsigned long rings, ok, gone, other;
	int last_other;
};

static void *db_loop(void *arg)
{
	struct db_loop *l = arg;

	while (!l->stop) {
		struct kqp_doorbell_entry e = {
			.qp = l->qp, .flags = KQP_DB_SEND | KQP_DB_RECV,
		};
		int ret = rt_doorbell(l->fd, &e, 1, NULL);

		l->rings++;
		if (!ret && !e.out_errno) {
			l->ok++;
		} else if (!ret && e.out_errno == ENXIO) {
			l->gone++;
		} else {
			l->other++;
			l->last_other = ret ? ret : e.out_errno;
		}
	}
	return NULL;
}

/*
 * The device is deleted under a ring QP whose rings are mapped, with a
 * receive taken and one published, while another thread rings it: the
 * doorbells give 0 and then ENXIO, nothing else; the mapping is still
 * memory; the QP can still be destroyed.
 */
FIXTURE(gone) {
	int unused;
};

FIXTURE_SETUP(gone)
{
}

FIXTURE_TEARDOWN(gone)
{
	dev2_del();
}

TEST_F_TIMEOUT(gone, device_removed_under_rings, 120)
{
	struct kqp_qp_attr init = { .qp_state = KQP_QPS_INIT, .port_num = 1 };
	struct db_loop l = { 0 };
	struct kqp_create_qp c;
	struct kqp_reg_mr mr;
	struct rt_recv r;
	struct rt_cq cq;
	struct rt_qp q;
	uint32_t dev, pd;
	char *mem = aligned_alloc(4096, 4096);
	pthread_t t;
	int fd, i;

	ASSERT_EQ(0, geteuid());
	ASSERT_NE(NULL, mem);
	dev2_del();
	ASSERT_EQ(0, dev2_add());
	fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	for (i = 0; i < 100 && (dev = kqp_test_dev_index(fd, dev2)) == KQP_NO_DEVICE; i++)
		usleep(50000);
	ASSERT_NE(KQP_NO_DEVICE, dev);
	ASSERT_EQ(0, rt_pd(fd, dev, &pd));
	ASSERT_EQ(0, rt_cq_make(fd, dev, 16, &cq));
	ASSERT_EQ(0, kqp_test_reg_mr(fd, pd, mem, 4096, 1, &mr));
	rt_qp_req(&c, pd, cq.c.out_cq, cq.c.out_cq);
	ASSERT_EQ(0, rt_qp_make(fd, &c, &q));
	ASSERT_EQ(0, rt_modify(fd, q.c.out_qp, KQP_TEST_RC_INIT, &init));
	r = rt_recv1(1, (uintptr_t)mem, 64, mr.out_lkey);
	rt_rq_put(&q, &r, RT_RECV1_LEN);
	rt_rq_publish(&q);
	ASSERT_EQ(0, rt_ring(&q, KQP_DB_RECV));
	ASSERT_EQ(1, rt_head(rt_rq_hdr(&q)));
	r.wr.wr_id = 2;
	rt_rq_put(&q, &r, RT_RECV1_LEN);

	l.fd = fd;
	l.qp = q.c.out_qp;
	ASSERT_EQ(0, pthread_create(&t, NULL, db_loop, &l));
	usleep(100000);
	EXPECT_EQ(0, dev2_del());
	for (i = 0; i < 200 && !l.gone; i++)
		usleep(50000);
	l.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%lu doorbells: %lu fine, %lu ENXIO, %lu other (last %d)",
	       l.rings, l.ok, l.gone, l.other, l.last_other);
	EXPECT_EQ(0, l.other);
	EXPECT_LT(0, l.ok);
	EXPECT_LT(0, l.gone);

	/* Gone for good: the published receive is not taken. */
	rt_rq_publish(&q);
	EXPECT_EQ(ENXIO, rt_ring(&q, KQP_DB_RECV));
	EXPECT_EQ(ENXIO, rt_ring(&q, KQP_DB_SEND));
	EXPECT_EQ(1, rt_head(rt_rq_hdr(&q)));
	EXPECT_EQ(2, rt_rq_hdr(&q)->tail);
	EXPECT_EQ(0, rt_qp_destroy(&q));
	rt_dereg(fd, mr.out_mr);
	rt_cq_free(&cq);
	close(fd);
	free(mem);
}

/* ------------------------------------------------------------------ */
/* Receive rings drained after completions (KQP_CREATE_QP_RECV_ASYNC)  */

FIXTURE(ra) {
	struct rt_pair p;
	uint32_t low;	/* receives b's device must hold for no doorbell */
};

FIXTURE_SETUP(ra)
{
	struct kqp_create_qp c;
	uint32_t asked;

	rt_qp_req(&c, 0, 0, 0);
	c.flags |= KQP_CREATE_QP_RECV_ASYNC;
	asked = c.cap.max_recv_wr;
	ASSERT_EQ(0, rt_pair_make(&self->p, &c, 7));
	ASSERT_TRUE(self->p.b.c.out_rings.flags & KQP_QP_RINGS_RECV_ASYNC);
	/*
	 * Half the receives asked for, not half of what the device made of
	 * them: a process posts the depth it asked for.  rxe on 6.12 makes
	 * 31 of 16, the case where the two differ; on 6.1 it makes 16.
	 */
	ASSERT_LE(asked, self->p.b.c.cap.max_recv_wr);
	self->low = asked / 2;
	ASSERT_LE(2, self->low);
	ASSERT_GE(30, self->low);
}

FIXTURE_TEARDOWN(ra)
{
	rt_pair_free(&self->p);
}

/* NEED_DOORBELL on b's receive ring is @want, waited for up to @ms. */
static bool b_rq_needs_doorbell(struct rt_pair *p, bool want, int ms)
{
	uint32_t need = KQP_WQ_RING_NEED_DOORBELL;

	return rt_flags_become(rt_rq_hdr(&p->b), need, want ? need : 0, ms) ?
	       want : !want;
}

/* Receive @wr_id at b for up to 256 bytes, at slot @slot of b's half. */
static void b_recv_at(struct rt_pair *p, uint64_t wr_id, uint32_t slot,
		      uint32_t lkey)
{
	struct rt_recv r = rt_recv1(wr_id, rt_bbuf(p, slot * 256), 256, lkey);

	rt_rq_put(&p->b, &r, RT_RECV1_LEN);
}

/*
 * The kernel asks for the doorbell until the device holds half of the
 * receives asked for, then commits: a receive published without a
 * doorbell waits in the ring, and the receive completion that leaves
 * the device below the mark (here the first) has it drained, so a message
 * past the ones the device held still finds it.
 * Once the device holds too few again, the doorbell is asked for again.
 */
TEST_F_TIMEOUT(ra, drained_after_receive_completion, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b);
	uint32_t i, low = self->low;

	EXPECT_TRUE(b_rq_needs_doorbell(p, true, 0));
	for (i = 0; i < low - 1; i++)
		b_recv_at(p, 200 + i, i, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(low - 1, rt_head(rh));
	/* One short of the mark: still rung for. */
	EXPECT_TRUE(b_rq_needs_doorbell(p, true, 0));
	b_recv_at(p, 200 + i, i, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(low, rt_head(rh));
	EXPECT_FALSE(b_rq_needs_doorbell(p, false, 0));

	/* Published, never rung: nothing takes it before a completion. */
	b_recv_at(p, 200 + low, low, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	usleep(200000);
	EXPECT_EQ(low, rt_head(rh));
	EXPECT_EQ(0, __atomic_load_n(&rh->retired, __ATOMIC_ACQUIRE));

	/* One message more than the device held when it was published. */
	rt_a_sends(p, 100, (int)low + 1, 64);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	rt_expect_a_to_b(_metadata, p, 100, 200, (int)low + 1, 64);
	rt_expect_data(_metadata, p, 100, (int)low + 1, 64);
	EXPECT_EQ(low + 1, rt_head(rh));
	EXPECT_EQ(low + 1, __atomic_load_n(&rh->retired, __ATOMIC_ACQUIRE));
	/* The device holds none: ring again. */
	EXPECT_TRUE(b_rq_needs_doorbell(p, true, 5000));
}

/*
 * A send's doorbell drains the receives published behind the
 * commitment too, when asked in the same call: a ping-pong's receive
 * reaches the device in its send's system call.  Each entry of the
 * doorbell has its own errno.
 */
TEST_F_TIMEOUT(ra, drained_by_a_send_doorbell, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_doorbell_entry e[2] = {
		{ .qp = p->b.c.out_qp, .flags = KQP_DB_RECV, .out_errno = -1 },
		{ .qp = p->b.c.out_qp, .flags = KQP_DB_SEND, .out_errno = -1 },
	};
	uint32_t i, done = 0, low = self->low;

	for (i = 0; i < low; i++)
		b_recv_at(p, 200 + i, i, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_FALSE(b_rq_needs_doorbell(p, false, 0));
	b_recv_at(p, 200 + low, low, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	EXPECT_EQ(low, rt_head(rt_rq_hdr(&p->b)));
	ASSERT_EQ(0, rt_doorbell(p->fd, e, 2, &done));
	EXPECT_EQ(2, done);
	EXPECT_EQ(0, e[0].out_errno);
	EXPECT_EQ(0, e[1].out_errno);
	EXPECT_EQ(low + 1, rt_head(rt_rq_hdr(&p->b)));
}

/*
 * An entry the kernel refuses, published behind the commitment and never
 * rung, fails b as a device would: the message that arrives completes its
 * receive, the QP goes to ERR, the refused entry completes with a
 * protection error and every other receive is flushed, and b's doorbell
 * still answers 0.  a's send completes once: with success, or, where b
 * went to ERR before it acknowledged the message (the drain that met the
 * entry can run between the receive's completion and the ACK, as it does
 * on PREEMPT_RT), with a's retries exhausted (kqp-abi.h says so).
 */
TEST_F_TIMEOUT(ra, refused_completes_in_error, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b);
	uint32_t i, low = self->low, flushed = 0, prot = 0;
	struct kqp_cqe wc[64];
	int got = 0, n;
	bool forced = false;
	long long end;

	for (i = 0; i < low; i++)
		b_recv_at(p, 200 + i, i, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_FALSE(b_rq_needs_doorbell(p, false, 0));
	/* An lkey of nothing, then a good one after it. */
	b_recv_at(p, 999, low, p->mr.out_lkey ^ 0x5a5a00);
	b_recv_at(p, 1000, low + 1, p->mr.out_lkey);
	rt_rq_publish(&p->b);

	rt_a_sends(p, 100, 1, 64);
	ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));

	/* 200 with the message, then low - 1 flushes, 999 and 1000. */
	end = rt_now_ms() + 20000;
	while (got < (int)low + 2 && rt_now_ms() < end) {
		n = rt_cq_poll(&p->brcq, wc + got, (int)low + 2 - got, 1000);
		if (n > 0)
			got += n;
	}
	ASSERT_EQ((int)low + 2, got);
	EXPECT_EQ(200, wc[0].wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc[0].status);
	EXPECT_EQ(64, wc[0].byte_len);
	for (i = 1; i < low + 2; i++) {
		if (wc[i].wr_id == 999) {
			EXPECT_EQ(KQP_WC_LOC_PROT_ERR, wc[i].status);
			prot++;
		} else {
			EXPECT_EQ(KQP_WC_WR_FLUSH_ERR, wc[i].status);
			flushed++;
		}
	}
	EXPECT_EQ(1, prot);
	EXPECT_EQ(low, flushed);
	EXPECT_EQ(0, rt_cq_poll(&p->brcq, wc, 1, 200));
	EXPECT_EQ(KQP_QPS_ERR, rt_qp_state(&p->b, NULL));
	EXPECT_EQ(low + 2, rt_head(rh));
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	rt_expect_data(_metadata, p, 100, 1, 64);

	/*
	 * a's send completes once, whatever became of b's ACK.  When b
	 * went to ERR before it acknowledged the message, a retransmits to
	 * a QP that drops everything, and rxe takes a retry_cnt of 7 for
	 * "for ever" (rxe_comp.c): a would never give up.  So a is moved
	 * to ERR after a while, which flushes the send if nothing else
	 * completed it.
	 */
	n = rt_cq_poll(&p->ascq, wc, 1, 2000);
	if (!n) {
		ASSERT_EQ(0, rt_to_err(&p->a));
		n = rt_cq_poll(&p->ascq, wc, 1, 20000);
		forced = true;
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(100, wc[0].wr_id);
	/* An ACK late past the wait still completes it before the flush. */
	if (wc[0].status != KQP_WC_SUCCESS)
		EXPECT_EQ(forced ? KQP_WC_WR_FLUSH_ERR : KQP_WC_RETRY_EXC_ERR,
			  wc[0].status);
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, wc, 1, 200));
}

/*
 * RESET throws the receives away without completions, those the ring
 * still held unposted too: a committed receive ring must ask for the
 * doorbell again, with every slot free and nothing left to drain into
 * the QP's next connection.
 */
TEST_F_TIMEOUT(ra, reset_asks_for_doorbell, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b);
	struct kqp_qp_attr r = { .qp_state = KQP_QPS_RESET };
	uint32_t i, low = self->low;

	for (i = 0; i < low; i++)
		b_recv_at(p, 200 + i, i, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_FALSE(b_rq_needs_doorbell(p, false, 0));
	b_recv_at(p, 200 + low, low, p->mr.out_lkey);
	rt_rq_publish(&p->b);
	EXPECT_EQ(low, rt_head(rh));
	ASSERT_EQ(0, rt_modify(p->fd, p->b.c.out_qp, KQP_QP_ATTR_STATE, &r));
	EXPECT_TRUE(b_rq_needs_doorbell(p, true, 0));
	EXPECT_EQ(low + 1, rt_head(rh));
	EXPECT_EQ(low + 1, __atomic_load_n(&rh->retired, __ATOMIC_ACQUIRE));
	/* Nothing is left: a doorbell now posts nothing to the QP in RESET. */
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(low + 1, rt_head(rh));
}

TEST_HARNESS_MAIN
