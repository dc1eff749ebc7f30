// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The max_queue_bytes parameter: a per-user budget of the kernel memory
 * queues take (CQs, QPs, SRQs), estimated from their depths.  Past it a
 * create, or an SRQ resize, fails with ENOMEM before the device allocates
 * anything, and leaves nothing behind; destroying a queue, or closing the
 * file that holds it, gives its share back.
 *
 * Runs as root: the parameter binds root too.  The depths below are far
 * apart from the budget, so that the tests hold whatever the exact
 * estimate (it rounds depths and entry sizes up to powers of two).
 */
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kqp_test.h"
#include "params.h"
#include "nobody.h"

#define BUDGET		"4194304"	/* 4 MiB */
#define HUGE_DEPTH	65536		/* well over 4 MiB for any queue */
#define CQ_BUDGET	"1048576"	/* 1 MiB */
#define CQ_DEPTH	8192		/* well over 1 MiB */
#define SMALL_DEPTH	16
#define FILL_DEPTH	1024		/* a few hundred KiB per queue */
#define MAX_QUEUES	64

/* /sys/kernel/debug/kqp/objects: the live count of @what, or -1. */
static long objects_live(const char *what)
{
	FILE *f = fopen("/sys/kernel/debug/kqp/objects", "r");
	char name[32];
	unsigned long long made;
	long live, found = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%31s %ld", name, &live) == 2) {
		if (!strcmp(name, what))
			found = live;
		if (strcmp(name, "contexts") && fscanf(f, "%llu", &made) != 1)
			break;
	}
	fclose(f);
	return found;
}

static int create_cq(int fd, uint32_t dev, uint32_t cqe, uint32_t *cq)
{
	struct kqp_create_cq c = {
		.size = sizeof(c), .device_index = dev, .cqe = cqe,
		.channel_fd = -1,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_CQ, &c);

	if (!ret)
		*cq = c.out_cq;
	return ret;
}

static int destroy_cq(int fd, uint32_t cq)
{
	struct kqp_destroy_cq d = { .size = sizeof(d), .cq = cq };

	return kqp_test_ioctl(fd, KQP_IOCTL_DESTROY_CQ, &d);
}

static int alloc_pd(int fd, uint32_t dev, uint32_t *pd)
{
	struct kqp_alloc_pd a = { .size = sizeof(a), .device_index = dev };
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_ALLOC_PD, &a);

	if (!ret)
		*pd = a.out_pd;
	return ret;
}

static int create_srq(int fd, uint32_t pd, uint32_t max_wr, uint32_t *srq)
{
	struct kqp_create_srq c = {
		.size = sizeof(c), .pd = pd,
		.attr = { .max_wr = max_wr, .max_sge = 1 },
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_SRQ, &c);

	if (!ret)
		*srq = c.out_srq;
	return ret;
}

FIXTURE(qbudget) {
	char saved[32];
	int fd;
	uint32_t dev;
	long cqs, qps, srqs;
};

FIXTURE_SETUP(qbudget)
{
	ASSERT_EQ(0, geteuid());
	ASSERT_EQ(0, param_read("max_queue_bytes", self->saved,
				sizeof(self->saved)));
	self->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	self->dev = kqp_test_rxe_index(self->fd);
	ASSERT_NE(KQP_NO_DEVICE, self->dev);
	self->cqs = objects_live("cqs");
	self->qps = objects_live("qps");
	self->srqs = objects_live("srqs");
	ASSERT_LE(0, self->cqs);
	ASSERT_EQ(0, param_write("max_queue_bytes", BUDGET));
}

FIXTURE_TEARDOWN(qbudget)
{
	if (self->fd >= 0)
		close(self->fd);
	param_write("max_queue_bytes", self->saved);
}

/*
 * A CQ past the budget is refused before it exists.  rxe's max_cqe is
 * below HUGE_DEPTH (EINVAL): a smaller budget and a depth it takes.
 */
TEST_F(qbudget, cq)
{
	uint32_t cq;

	ASSERT_EQ(0, param_write("max_queue_bytes", CQ_BUDGET));
	EXPECT_EQ(ENOMEM, create_cq(self->fd, self->dev, CQ_DEPTH, &cq));
	EXPECT_EQ(self->cqs, objects_live("cqs"));
	ASSERT_EQ(0, create_cq(self->fd, self->dev, SMALL_DEPTH, &cq));
	EXPECT_EQ(self->cqs + 1, objects_live("cqs"));
	EXPECT_EQ(0, destroy_cq(self->fd, cq));
	EXPECT_EQ(self->cqs, objects_live("cqs"));
}

/*
 * Fill the budget with CQs: the next is refused; one destroyed, one more
 * fits; the file closed, a new one fits as many again.
 */
TEST_F(qbudget, fill_destroy_close)
{
	uint32_t cqs[MAX_QUEUES], cq;
	int n, i, ret = 0;

	for (n = 0; n < MAX_QUEUES; n++) {
		ret = create_cq(self->fd, self->dev, FILL_DEPTH, &cqs[n]);
		if (ret)
			break;
	}
	ASSERT_EQ(ENOMEM, ret);
	ASSERT_LT(1, n);
	EXPECT_EQ(self->cqs + n, objects_live("cqs"));
	EXPECT_EQ(ENOMEM, create_cq(self->fd, self->dev, FILL_DEPTH, &cq));

	ASSERT_EQ(0, destroy_cq(self->fd, cqs[n - 1]));
	ASSERT_EQ(0, create_cq(self->fd, self->dev, FILL_DEPTH, &cqs[n - 1]));
	EXPECT_EQ(ENOMEM, create_cq(self->fd, self->dev, FILL_DEPTH, &cq));

	/* The budget is the user's: a second file shares it. */
	{
		int fd2 = open(KQP_DEV, O_RDWR | O_CLOEXEC);

		ASSERT_LE(0, fd2);
		EXPECT_EQ(ENOMEM, create_cq(fd2, self->dev, FILL_DEPTH, &cq));
		close(fd2);
	}
	/* Another user's is its own: this one's full budget stops it not. */
	{
		int status;
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (!pid) {
			int ofd;

			if (setgroups(0, NULL) || setgid(NOBODY) ||
			    setuid(NOBODY))
				_exit(10);
			ofd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
			if (ofd < 0)
				_exit(11);
			_exit(create_cq(ofd, self->dev, FILL_DEPTH, &cq));
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status));
	}

	close(self->fd);
	self->fd = -1;
	EXPECT_EQ(self->cqs, objects_live("cqs"));
	self->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, create_cq(self->fd, self->dev, FILL_DEPTH,
				       &cqs[i]));
	EXPECT_EQ(ENOMEM, create_cq(self->fd, self->dev, FILL_DEPTH, &cq));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, destroy_cq(self->fd, cqs[i]));
}

/*
 * A ring stays charged while it is mapped, even once its CQ is gone: the
 * pages live as long as the mapping.  Fill the budget, map every ring,
 * destroy every CQ: fewer fit again until the rings are unmapped, then
 * as many as before.
 */
TEST_F(qbudget, mapped_ring_stays_charged)
{
	struct kqp_create_cq c = {
		.size = sizeof(c), .device_index = self->dev,
		.cqe = FILL_DEPTH, .channel_fd = -1,
	};
	uint32_t cqs[MAX_QUEUES];
	void *maps[MAX_QUEUES];
	size_t len[MAX_QUEUES];
	int n, m, i, ret = 0;

	for (n = 0; n < MAX_QUEUES; n++) {
		ret = kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_CQ, &c);
		if (ret)
			break;
		cqs[n] = c.out_cq;
		len[n] = c.out_ring.mmap_size;
		maps[n] = mmap(NULL, len[n], PROT_READ | PROT_WRITE,
			       MAP_SHARED, self->fd, c.out_ring.mmap_offset);
		ASSERT_NE(MAP_FAILED, maps[n]);
	}
	ASSERT_EQ(ENOMEM, ret);
	ASSERT_LT(4, n);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, destroy_cq(self->fd, cqs[i]));
	EXPECT_EQ(self->cqs, objects_live("cqs"));

	for (m = 0; m < n; m++)
		if (kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_CQ, &c))
			break;
		else
			cqs[m] = c.out_cq;
	EXPECT_LT(m, n) TH_LOG("%d CQs fit again with %d rings mapped", m, n);
	for (i = 0; i < m; i++)
		ASSERT_EQ(0, destroy_cq(self->fd, cqs[i]));

	for (i = 0; i < n; i++)
		ASSERT_EQ(0, munmap(maps[i], len[i]));
	for (m = 0; m < n; m++)
		if (kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_CQ, &c))
			break;
		else
			cqs[m] = c.out_cq;
	EXPECT_EQ(n, m);
	for (i = 0; i < m; i++)
		EXPECT_EQ(0, destroy_cq(self->fd, cqs[i]));
}

/* A QP past the budget: nothing made, neither QP nor CQ. */
TEST_F(qbudget, qp)
{
	struct kqp_create_qp c = {
		.size = sizeof(c), .qp_type = KQP_QPT_RC,
		.cap = { .max_send_wr = HUGE_DEPTH, .max_recv_wr = SMALL_DEPTH,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct kqp_destroy_qp d = { .size = sizeof(d) };
	uint32_t pd, scq, rcq;

	ASSERT_EQ(0, alloc_pd(self->fd, self->dev, &pd));
	ASSERT_EQ(0, create_cq(self->fd, self->dev, SMALL_DEPTH, &scq));
	ASSERT_EQ(0, create_cq(self->fd, self->dev, SMALL_DEPTH, &rcq));
	c.pd = pd;
	c.send_cq = scq;
	c.recv_cq = rcq;
	EXPECT_EQ(ENOMEM, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	EXPECT_EQ(self->qps, objects_live("qps"));
	EXPECT_EQ(self->cqs + 2, objects_live("cqs"));
	c.cap.max_send_wr = HUGE_DEPTH / 2;
	c.cap.max_recv_wr = HUGE_DEPTH / 2;
	EXPECT_EQ(ENOMEM, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	EXPECT_EQ(self->qps, objects_live("qps"));

	c.cap.max_send_wr = SMALL_DEPTH;
	c.cap.max_recv_wr = SMALL_DEPTH;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	EXPECT_EQ(self->qps + 1, objects_live("qps"));
	d.qp = c.out_qp;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP, &d));
	EXPECT_EQ(self->qps, objects_live("qps"));
}

/*
 * An SRQ past the budget is refused; a resize past it is refused and
 * leaves the SRQ as it was; one within it goes through.
 */
TEST_F(qbudget, srq)
{
	struct kqp_modify_srq m = {
		.size = sizeof(m), .attr_mask = KQP_SRQ_MAX_WR,
		.attr = { .max_wr = HUGE_DEPTH },
	};
	struct kqp_query_srq q = { .size = sizeof(q) };
	struct kqp_destroy_srq d = { .size = sizeof(d) };
	uint32_t pd, srq, before;

	ASSERT_EQ(0, alloc_pd(self->fd, self->dev, &pd));
	EXPECT_EQ(ENOMEM, create_srq(self->fd, pd, HUGE_DEPTH, &srq));
	EXPECT_EQ(self->srqs, objects_live("srqs"));
	ASSERT_EQ(0, create_srq(self->fd, pd, SMALL_DEPTH, &srq));
	EXPECT_EQ(self->srqs + 1, objects_live("srqs"));

	q.srq = srq;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_QUERY_SRQ, &q));
	before = q.out_attr.max_wr;
	m.srq = srq;
	EXPECT_EQ(ENOMEM, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_QUERY_SRQ, &q));
	EXPECT_EQ(before, q.out_attr.max_wr);

	/* The refused resize gave its charge back: one within fits. */
	m.attr.max_wr = 2 * SMALL_DEPTH;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_SRQ, &m));
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_QUERY_SRQ, &q));
	EXPECT_LE(2 * SMALL_DEPTH, q.out_attr.max_wr);

	d.srq = srq;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_SRQ, &d));
	EXPECT_EQ(self->srqs, objects_live("srqs"));
}

TEST_HARNESS_MAIN
