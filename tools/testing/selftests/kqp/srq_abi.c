// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * SRQs at the ioctl level, with no library in between: handles of the
 * wrong type or of another file, reserved fields and unknown mask bits,
 * the limits, every receive checked against the SRQ's PD before anything
 * reaches the device (and nothing from the first refused one on posted),
 * an SRQ in use, and closing the file while other threads post.  kqp
 * only: rxe's provider checks none of this at post time.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

/* IBV_ACCESS_LOCAL_WRITE, as the kernel takes it. */
#define LOCAL_WRITE 1

static int kq_pd(int fd, uint32_t dev, uint32_t *pd)
{
	struct kqp_alloc_pd a = { .size = sizeof(a), .device_index = dev };
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_ALLOC_PD, &a);

	*pd = a.out_pd;
	return ret;
}

static int kq_srq(int fd, uint32_t pd, uint32_t max_wr, uint32_t max_sge,
		  uint32_t *srq)
{
	struct kqp_create_srq c = {
		.size = sizeof(c), .pd = pd, .uid = 0x5151,
		.attr = { .max_wr = max_wr, .max_sge = max_sge },
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_SRQ, &c);

	*srq = c.out_srq;
	return ret;
}

static int kq_destroy_srq(int fd, uint32_t srq)
{
	struct kqp_destroy_srq d = { .size = sizeof(d), .srq = srq };

	return kqp_test_ioctl(fd, KQP_IOCTL_DESTROY_SRQ, &d);
}

static int kq_query_srq(int fd, uint32_t srq, struct kqp_srq_attr *a)
{
	struct kqp_query_srq q = { .size = sizeof(q), .srq = srq };
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_QUERY_SRQ, &q);

	*a = q.out_attr;
	return ret;
}

static int kq_mr(int fd, uint32_t pd, void *buf, size_t len, uint32_t access,
		 uint32_t *lkey)
{
	struct kqp_reg_mr r = {
		.size = sizeof(r), .pd = pd, .access = access,
		.addr = (uintptr_t)buf, .iova = (uintptr_t)buf, .length = len,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_REG_MR, &r);

	*lkey = r.out_lkey;
	return ret;
}

static int kq_cq(int fd, uint32_t dev, uint32_t *cq)
{
	struct kqp_create_cq c = {
		.size = sizeof(c), .device_index = dev, .cqe = 16,
		.channel_fd = -1,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_CQ, &c);

	*cq = c.out_cq;
	return ret;
}

/* A list of receives of up to 3 SGEs each. */
struct rlist {
	struct {
		struct kqp_recv_wr wr;
		struct kqp_sge sge[3];
	} r[4];
};

/*
 * Post @n receives of @rl to SRQ (or with @qp, QP) @h; *@posted gets
 * out_posted.  Each receive takes the room its num_sge says.
 */
static int kq_post(int fd, unsigned long req, uint32_t h, struct rlist *rl,
		   unsigned int n, uint32_t *posted)
{
	char buf[sizeof(*rl)];
	size_t off = 0;
	unsigned int i;
	struct kqp_post p = { .size = sizeof(p), .qp = h, .count = n,
			      .out_posted = 0xdead };
	int ret;

	for (i = 0; i < n; i++) {
		size_t len = sizeof(rl->r[i].wr) +
			     rl->r[i].wr.num_sge * sizeof(struct kqp_sge);

		if (rl->r[i].wr.num_sge > 3)
			len = sizeof(rl->r[i]);
		memcpy(buf + off, &rl->r[i], len);
		off += len;
	}
	p.wrs = (uintptr_t)buf;
	p.wrs_len = off;
	ret = kqp_test_ioctl(fd, req, &p);
	if (posted)
		*posted = p.out_posted;
	return ret;
}

FIXTURE(s) {
	int fd;
	uint32_t dev, pd, pd2, srq, cq, lkey, lkey2, lkey_ro;
	char *buf;
};

FIXTURE_SETUP(s)
{
	self->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->dev = kqp_test_rxe_index(self->fd);
	ASSERT_NE(KQP_NO_DEVICE, self->dev);
	self->buf = aligned_alloc(4096, 3 * 4096);
	ASSERT_NE(NULL, self->buf);
	memset(self->buf, 0, 3 * 4096);
	ASSERT_EQ(0, kq_pd(self->fd, self->dev, &self->pd));
	ASSERT_EQ(0, kq_pd(self->fd, self->dev, &self->pd2));
	ASSERT_EQ(0, kq_srq(self->fd, self->pd, 4, 2, &self->srq));
	ASSERT_EQ(0, kq_cq(self->fd, self->dev, &self->cq));
	ASSERT_EQ(0, kq_mr(self->fd, self->pd, self->buf, 4096,
			   LOCAL_WRITE, &self->lkey));
	ASSERT_EQ(0, kq_mr(self->fd, self->pd2, self->buf + 4096, 4096,
			   LOCAL_WRITE, &self->lkey2));
	ASSERT_EQ(0, kq_mr(self->fd, self->pd, self->buf + 8192, 4096, 0,
			   &self->lkey_ro));
}

FIXTURE_TEARDOWN(s)
{
	close(self->fd);
	free(self->buf);
}

static void one(struct rlist *rl, unsigned int i, uint64_t addr,
		uint32_t len, uint32_t lkey)
{
	memset(&rl->r[i], 0, sizeof(rl->r[i]));
	rl->r[i].wr.wr_id = 0x10 + i;
	rl->r[i].wr.num_sge = 1;
	rl->r[i].sge[0] = (struct kqp_sge){ addr, len, lkey };
}

/* Handles of other types, of nothing, of another file: ENOENT. */
TEST_F(s, handles)
{
	struct kqp_modify_srq m = { .size = sizeof(m), .srq = self->pd,
				    .attr_mask = KQP_SRQ_LIMIT };
	struct kqp_create_qp c = {
		.size = sizeof(c), .pd = self->pd, .send_cq = self->cq,
		.recv_cq = self->cq, .qp_type = KQP_QPT_RC, .srq = self->cq,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct kqp_srq_attr a;
	struct rlist rl;
	uint32_t srq, other_srq, other_pd;
	int fd2;

	one(&rl, 0, (uintptr_t)self->buf, 64, self->lkey);
	EXPECT_EQ(ENOENT, kq_destroy_srq(self->fd, self->pd));
	EXPECT_EQ(ENOENT, kq_destroy_srq(self->fd, self->cq));
	EXPECT_EQ(ENOENT, kq_query_srq(self->fd, self->pd, &a));
	EXPECT_EQ(ENOENT, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	EXPECT_EQ(ENOENT, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->cq,
				  &rl, 1, NULL));
	/* An SRQ is not a QP, nor a QP an SRQ. */
	EXPECT_EQ(ENOENT, kq_post(self->fd, KQP_IOCTL_POST_RECV, self->srq,
				  &rl, 1, NULL));
	EXPECT_EQ(ENOENT, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	EXPECT_EQ(ENOENT, kq_srq(self->fd, self->cq, 4, 1, &srq));
	EXPECT_EQ(ENOENT, kq_srq(self->fd, 0, 4, 1, &srq));

	/* Another file's table: its handles name nothing here. */
	fd2 = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, kq_pd(fd2, self->dev, &other_pd));
	ASSERT_EQ(0, kq_srq(fd2, other_pd, 4, 1, &other_srq));
	if (other_srq != self->srq) {
		EXPECT_EQ(ENOENT, kq_query_srq(self->fd, other_srq, &a));
		EXPECT_EQ(ENOENT, kq_destroy_srq(self->fd, other_srq));
	}
	c.srq = other_srq;
	if (other_srq != self->srq)
		EXPECT_EQ(ENOENT,
			  kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	EXPECT_EQ(0, kq_query_srq(fd2, other_srq, &a));
	EXPECT_EQ(0, kq_destroy_srq(fd2, other_srq));
	close(fd2);
	EXPECT_EQ(0, kq_query_srq(self->fd, self->srq, &a));
}

/* Reserved fields, unknown mask bits, limits. */
TEST_F(s, fields_and_limits)
{
	struct kqp_query_device qd = { .size = sizeof(qd),
				       .device_index = self->dev };
	struct kqp_create_srq c = { .size = sizeof(c), .pd = self->pd,
				    .attr = { .max_wr = 4, .max_sge = 1 } };
	struct kqp_modify_srq m = { .size = sizeof(m), .srq = self->srq };
	struct kqp_query_srq q = { .size = sizeof(q), .srq = self->srq };
	struct kqp_srq_attr a;
	uint32_t srq;

	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_QUERY_DEVICE, &qd));
	EXPECT_LT(0, qd.out_max_srq);
	EXPECT_LT(0, qd.out_max_srq_sge);
	EXPECT_GE(1U << 20, qd.out_max_srq_wr);

	c.__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));
	c.__reserved = 0;
	c.attr.__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));
	c.attr.__reserved = 0;
	c.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));
	c.flags = 0;
	c.attr.max_wr = 0;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));
	c.attr.max_wr = qd.out_max_srq_wr + 1;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));
	c.attr.max_wr = 0xffffffff;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));
	c.attr.max_wr = 4;
	c.attr.max_sge = qd.out_max_srq_sge + 1;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));
	c.attr.max_sge = 0xffffffff;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_SRQ, &c));

	m.attr_mask = 1U << 2;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	m.attr_mask = KQP_SRQ_LIMIT;
	m.attr.__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	m.attr.__reserved = 0;
	m.attr_mask = KQP_SRQ_MAX_WR;
	m.attr.max_wr = 0;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	m.attr.max_wr = 0xffffffff;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	q.__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_QUERY_SRQ, &q));

	/* Nothing changed. */
	ASSERT_EQ(0, kq_query_srq(self->fd, self->srq, &a));
	EXPECT_LE(4, a.max_wr);
	EXPECT_GT(64, a.max_wr);
	EXPECT_EQ(2, a.max_sge);
	EXPECT_EQ(0, a.srq_limit);
	ASSERT_EQ(0, kq_srq(self->fd, self->pd, 4, 0, &srq));
	EXPECT_EQ(0, kq_destroy_srq(self->fd, srq));
}

/*
 * Every receive is checked against the SRQ's PD and max_sge before
 * anything reaches the device; the first refused one stops the list, and
 * out_posted names it.  Then only what was posted fills the queue.
 */
TEST_F(s, post_checks)
{
	uint64_t b = (uintptr_t)self->buf;
	struct kqp_srq_attr a;
	struct rlist rl;
	uint32_t posted, n;

	one(&rl, 0, b, 64, self->lkey);
	one(&rl, 1, b, 64, 0xdeadbeef);			/* no such MR */
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 2, &posted));
	EXPECT_EQ(1, posted);
	one(&rl, 0, b + 4090, 64, self->lkey);		/* past the MR */
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	EXPECT_EQ(0, posted);
	one(&rl, 0, b - 64, 64, self->lkey);		/* before it */
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	one(&rl, 0, b, 0xffffffff, self->lkey);		/* wraps */
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	one(&rl, 0, b + 4096, 64, self->lkey2);		/* another PD's MR */
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	one(&rl, 0, b + 8192, 64, self->lkey_ro);	/* no local write */
	EXPECT_EQ(EACCES, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	one(&rl, 0, b, 64, self->lkey);
	rl.r[0].wr.num_sge = 3;				/* max_sge is 2 */
	rl.r[0].sge[1] = rl.r[0].sge[2] = rl.r[0].sge[0];
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	one(&rl, 0, b, 64, self->lkey);
	rl.r[0].wr.__reserved = 1;			/* the uapi's rule */
	EXPECT_EQ(EOPNOTSUPP, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	one(&rl, 0, b, 64, self->lkey);
	rl.r[0].wr.num_sge = 1000;			/* far past max_sge */
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));

	/* One went in: the rest of the depth, then ENOMEM. */
	ASSERT_EQ(0, kq_query_srq(self->fd, self->srq, &a));
	one(&rl, 0, b, 64, self->lkey);
	for (n = 0; n < a.max_wr + 1; n++)
		if (kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq, &rl,
			    1, &posted))
			break;
	EXPECT_EQ(a.max_wr - 1, n);
	EXPECT_EQ(ENOMEM, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
				  &rl, 1, &posted));
	EXPECT_EQ(0, posted);
}

/*
 * A depth below the receives posted is refused before the device sees
 * it: rxe finds out only while resizing, and before 6.12 then freed the
 * queue it kept using (a NULL dereference on the next post or message).
 * The SRQ keeps its depth and takes receives as before.
 */
TEST_F(s, shrink_below_posted)
{
	struct kqp_modify_srq m = { .size = sizeof(m), .srq = self->srq,
				    .attr_mask = KQP_SRQ_MAX_WR };
	uint64_t b = (uintptr_t)self->buf;
	struct kqp_srq_attr a, after;
	struct rlist rl;
	uint32_t posted, n;

	/* A deeper SRQ first, then fill most of it. */
	m.attr.max_wr = 64;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	ASSERT_EQ(0, kq_query_srq(self->fd, self->srq, &a));
	ASSERT_LE(64, a.max_wr);
	one(&rl, 0, b, 64, self->lkey);
	for (n = 0; n < 40; n++)
		ASSERT_EQ(0, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV,
				     self->srq, &rl, 1, &posted));
	m.attr.max_wr = 16;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	ASSERT_EQ(0, kq_query_srq(self->fd, self->srq, &after));
	EXPECT_EQ(a.max_wr, after.max_wr);
	EXPECT_EQ(0, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
			     &rl, 1, &posted));
	EXPECT_EQ(1, posted);
	/* Still room for the posted ones: allowed. */
	m.attr.max_wr = 48;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	EXPECT_EQ(0, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, self->srq,
			     &rl, 1, &posted));
}

/*
 * A QP with an SRQ: its own receive queue refuses posts; the SRQ may be
 * of another PD (ib_core allows it); it cannot go while the QP is there.
 */
TEST_F(s, qp_with_srq)
{
	struct kqp_create_qp c = {
		.size = sizeof(c), .pd = self->pd2, .send_cq = self->cq,
		.recv_cq = self->cq, .qp_type = KQP_QPT_UD, .srq = self->srq,
		.cap = { .max_send_wr = 4, .max_send_sge = 1,
			 .max_recv_wr = 0xffffffff, .max_recv_sge = 0xffffffff },
	};
	struct kqp_query_qp q = { .size = sizeof(q) };
	struct kqp_destroy_qp d = { .size = sizeof(d) };
	struct rlist rl;
	uint32_t posted;

	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	q.qp = c.out_qp;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_QUERY_QP, &q));
	EXPECT_EQ(0, q.out_cap.max_recv_wr);
	EXPECT_EQ(0, q.out_cap.max_recv_sge);
	one(&rl, 0, (uintptr_t)self->buf + 4096, 64, self->lkey2);
	EXPECT_EQ(EINVAL, kq_post(self->fd, KQP_IOCTL_POST_RECV, c.out_qp, &rl,
				  1, &posted));
	EXPECT_EQ(0, posted);
	EXPECT_EQ(EBUSY, kq_destroy_srq(self->fd, self->srq));
	d.qp = c.out_qp;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP, &d));
	EXPECT_EQ(0, kq_destroy_srq(self->fd, self->srq));
	EXPECT_EQ(ENOENT, kq_destroy_srq(self->fd, self->srq));
}

struct poster {
	int fd;
	uint32_t srq, lkey;
	uint64_t addr;
	unsigned long ok, failed;
	bool stop;
};

static void *post_loop(void *arg)
{
	struct poster *p = arg;
	struct rlist rl;

	one(&rl, 0, p->addr, 64, p->lkey);
	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		if (kq_post(p->fd, KQP_IOCTL_POST_SRQ_RECV, p->srq, &rl, 1,
			    NULL))
			p->failed++;
		else
			p->ok++;
	}
	return NULL;
}

/*
 * Threads post while the SRQ is destroyed and its file closed: each call
 * succeeds, or fails with ENOMEM (full), ENOENT (gone) or EBADF (closed);
 * the debug kernel judges the rest.
 */
TEST_F_TIMEOUT(s, close_races_post, 60)
{
	struct poster p[3];
	pthread_t t[3];
	int i, round;

	for (round = 0; round < 20; round++) {
		int fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
		uint32_t pd, srq, lkey;

		ASSERT_LE(0, fd);
		ASSERT_EQ(0, kq_pd(fd, self->dev, &pd));
		ASSERT_EQ(0, kq_srq(fd, pd, 256, 1, &srq));
		ASSERT_EQ(0, kq_mr(fd, pd, self->buf, 4096,
				   LOCAL_WRITE, &lkey));
		for (i = 0; i < 3; i++) {
			p[i] = (struct poster){ .fd = fd, .srq = srq,
						.lkey = lkey,
						.addr = (uintptr_t)self->buf };
			ASSERT_EQ(0, pthread_create(&t[i], NULL, post_loop,
						    &p[i]));
		}
		usleep(20000);
		if (round & 1)
			kq_destroy_srq(fd, srq);
		usleep(5000);
		close(fd);
		usleep(5000);
		for (i = 0; i < 3; i++) {
			__atomic_store_n(&p[i].stop, true, __ATOMIC_RELEASE);
			pthread_join(t[i], NULL);
		}
		EXPECT_LT(0, p[0].ok + p[1].ok + p[2].ok);
	}
}

/*
 * A second rxe device: a QP cannot take an SRQ of another device
 * (EINVAL).  Then the device goes while an SRQ with receives posted and a
 * QP on it exist: the QP's hardware goes first, then the SRQ's; the SRQ
 * answers ENXIO, and both can still be destroyed.
 */
TEST_F_TIMEOUT(s, other_device_and_removal, 90)
{
	const char *netdev = getenv("KQP_TEST_NORDMA_NETDEV") ?: "kqp1";
	struct kqp_create_qp c = {
		.size = sizeof(c), .pd = self->pd, .send_cq = self->cq,
		.recv_cq = self->cq, .qp_type = KQP_QPT_RC,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	struct kqp_destroy_qp d = { .size = sizeof(d) };
	struct kqp_modify_srq m = { .size = sizeof(m),
				    .attr_mask = KQP_SRQ_LIMIT,
				    .attr = { .srq_limit = 1 } };
	uint32_t dev2, pd2, srq2, cq2, lkey2, posted;
	struct kqp_srq_attr a;
	struct rlist rl;

	ASSERT_EQ(0, kqp_test_sh("rdma link add kqpsrq type rxe netdev %s",
				 netdev));
	dev2 = kqp_test_dev_index(self->fd, "kqpsrq");
	ASSERT_NE(KQP_NO_DEVICE, dev2);
	ASSERT_EQ(0, kq_pd(self->fd, dev2, &pd2));
	ASSERT_EQ(0, kq_srq(self->fd, pd2, 8, 1, &srq2));
	ASSERT_EQ(0, kq_cq(self->fd, dev2, &cq2));
	ASSERT_EQ(0, kq_mr(self->fd, pd2, self->buf, 4096, LOCAL_WRITE,
			   &lkey2));

	c.srq = srq2;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	c.pd = pd2;
	c.send_cq = c.recv_cq = cq2;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	one(&rl, 0, (uintptr_t)self->buf, 64, lkey2);
	ASSERT_EQ(0, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, srq2, &rl, 1,
			     &posted));

	EXPECT_EQ(0, kqp_test_sh("rdma link delete kqpsrq"));
	EXPECT_EQ(ENXIO, kq_query_srq(self->fd, srq2, &a));
	m.srq = srq2;
	EXPECT_EQ(ENXIO, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	EXPECT_EQ(ENXIO, kq_post(self->fd, KQP_IOCTL_POST_SRQ_RECV, srq2, &rl,
				 1, &posted));
	EXPECT_EQ(EBUSY, kq_destroy_srq(self->fd, srq2));
	d.qp = c.out_qp;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP, &d));
	EXPECT_EQ(0, kq_destroy_srq(self->fd, srq2));
	/* The first device's SRQ never noticed. */
	EXPECT_EQ(0, kq_query_srq(self->fd, self->srq, &a));
}

TEST_HARNESS_MAIN
