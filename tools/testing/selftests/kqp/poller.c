// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The table's poller (KQP_IOCTL_CREATE_POLLER): a thread of the process
 * that drains its RC QPs' rings with no doorbell while it is awake, and
 * asks for the doorbell again before it sleeps.  At the ioctl level
 * (rings_test.h), so that every doorbell is one this test counts.
 *
 * Kernels without CONFIG_VHOST_TASK (6.1) refuse the command with
 * EOPNOTSUPP; every test that needs a poller is then skipped, after
 * checking that refusal.
 */
#include <signal.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "rings_test.h"

static int make_poller(int fd, uint32_t idle_us)
{
	struct kqp_create_poller c = { .size = sizeof(c), .idle_us = idle_us };

	return kqp_test_ioctl(fd, KQP_IOCTL_CREATE_POLLER, &c);
}

static int pollers_in_self(void)
{
	return kqp_test_threads_named("kqp-poller");
}

/*
 * The threads of this process called "kqp-poller", once they are @n or
 * @ms have passed: a stopped poller has signalled its end to the release
 * a moment before it leaves the thread list.
 */
static int pollers_become(int n, int ms)
{
	long long end = rt_now_ms() + ms;
	int got;

	while ((got = pollers_in_self()) != n && rt_now_ms() < end)
		usleep(1000);
	return got;
}

static bool head_becomes(const struct kqp_wq_ring_hdr *h, uint32_t want,
			 int ms)
{
	long long end = rt_now_ms() + ms;

	while (rt_head(h) != want) {
		if (rt_now_ms() > end)
			return false;
		usleep(200);
	}
	return true;
}

#define SERVED		KQP_WQ_RING_POLLED
#define BOTH		(KQP_WQ_RING_NEED_DOORBELL | KQP_WQ_RING_POLLED)

/* A doorbell that drains nothing and wakes the poller. */
static int wake(const struct rt_qp *q)
{
	struct kqp_doorbell_entry e = {
		.qp = q->c.out_qp, .flags = KQP_DB_SEND, .out_errno = -1,
	};
	struct kqp_doorbell d = {
		.size = sizeof(d), .flags = KQP_DOORBELL_WAKE_POLLER,
		.count = 1, .entry_size = sizeof(e), .entries = (uintptr_t)&e,
	};
	int ret = kqp_test_ioctl(q->fd, KQP_IOCTL_DOORBELL, &d);

	return ret ? ret : e.out_errno;
}

/* A doorbell that names no QP: it only wakes the poller. */
static int wake_only(int fd)
{
	struct kqp_doorbell_entry e = { .qp = 0x7fffffff, .flags = KQP_DB_SEND };
	struct kqp_doorbell d = {
		.size = sizeof(d), .flags = KQP_DOORBELL_WAKE_POLLER,
		.count = 1, .entry_size = sizeof(e), .entries = (uintptr_t)&e,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_DOORBELL, &d);

	return ret ? ret : e.out_errno == ENOENT ? 0 : EIO;
}

/*
 * Wake the poller with a doorbell that posts one signaled write, and wait
 * for it: a ring is served only once the device has taken a send from it.
 */
static int serve(struct rt_pair *p)
{
	struct kqp_cqe wc[1];
	int ret;

	rt_a_write_put(p, 1000, true);
	rt_sq_publish(&p->a);
	ret = wake(&p->a);
	if (ret)
		return ret;
	if (rt_cq_poll(&p->ascq, wc, 1, 10000) != 1 || wc[0].wr_id != 1000 ||
	    wc[0].status != RT_WC_SUCCESS)
		return EIO;
	return 0;
}

/* ------------------------------------------------------------------ */

TEST(create_errnos)
{
	struct kqp_create_poller c = { .size = sizeof(c) };
	struct kqp_ctx_info info;
	int fd, ret;

	fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	c.flags = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(fd, KQP_IOCTL_CREATE_POLLER, &c));
	c.flags = 0;
	c.__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(fd, KQP_IOCTL_CREATE_POLLER, &c));
	c.__reserved = 0;
	c.idle_us = KQP_POLLER_IDLE_US_MAX + 1;
	ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_POLLER, &c);
	EXPECT_TRUE(ret == EINVAL || ret == EOPNOTSUPP);
	EXPECT_EQ(0, pollers_in_self());

	ret = make_poller(fd, KQP_POLLER_IDLE_US_MAX);
	if (ret == EOPNOTSUPP) {
		ASSERT_EQ(0, kqp_test_ctx_info(fd, &info));
		EXPECT_EQ(0, info.out_poller);
		close(fd);
		SKIP(return, "no poller on this kernel (no vhost_task)");
	}
	ASSERT_EQ(0, ret);
	EXPECT_EQ(1, pollers_in_self());
	EXPECT_EQ(EBUSY, make_poller(fd, 0));
	ASSERT_EQ(0, kqp_test_ctx_info(fd, &info));
	EXPECT_EQ(1, info.out_poller);
	EXPECT_EQ(1, pollers_in_self());
	/* The table goes with its file, and the thread with the table. */
	close(fd);
	EXPECT_EQ(0, pollers_become(0, 2000));
}

/*
 * The last close while the poller keeps being woken and going back to
 * sleep (1 us idle): the release's stop must never be lost between the
 * thread's check of it and its sleep, or the close would never return.
 */
FIXTURE(w) {
	int unused;
};

FIXTURE_SETUP(w)
{
}

FIXTURE_TEARDOWN(w)
{
}

TEST_F_TIMEOUT(w, close_while_waking, 300)
{
	int i, j, fd, ret;

	for (i = 0; i < 300; i++) {
		fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd);
		ret = make_poller(fd, 1);
		if (ret == EOPNOTSUPP) {
			close(fd);
			SKIP(return, "no poller on this kernel (no vhost_task)");
		}
		ASSERT_EQ(0, ret);
		for (j = 0; j < i % 8; j++)
			EXPECT_EQ(0, wake_only(fd));
		close(fd);
	}
	EXPECT_EQ(0, pollers_become(0, 2000));
}

FIXTURE(p) {
	struct rt_pair p;
};

FIXTURE_SETUP(p)
{
	int ret;

	ASSERT_EQ(0, rt_pair_make(&self->p, NULL, 7));
	ret = make_poller(self->p.fd, 300000);
	if (ret == EOPNOTSUPP)
		SKIP(return, "no poller on this kernel (no vhost_task)");
	ASSERT_EQ(0, ret);
}

FIXTURE_TEARDOWN(p)
{
	rt_pair_free(&self->p);
}

/*
 * Awake, the poller serves a's send ring: NEED_DOORBELL is clear with no
 * send outstanding, and unsignaled RDMA writes followed by a signaled one,
 * published and never rung, all reach b.  Without the poller the kernel
 * commits only while a signaled send is outstanding, so none of them
 * would move.
 */
TEST_F_TIMEOUT(p, sends_without_doorbell, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *sh = rt_sq_hdr(&p->a);
	struct kqp_ctx_info before, after;
	struct kqp_cqe wc[2];
	int i, round;

	EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL, rt_flags(sh) & BOTH);
	ASSERT_EQ(0, serve(p));
	ASSERT_TRUE(rt_flags_become(sh, BOTH, SERVED, 5000));
	ASSERT_EQ(0, kqp_test_ctx_info(p->fd, &before));
	EXPECT_LE(1, before.out_poller_wakeups);

	for (round = 0; round < 20; round++) {
		memset(p->buf, 'a' + round, 64);
		for (i = 0; i < 7; i++)
			rt_a_write_put(p, round * 8 + i, false);
		rt_a_write_put(p, round * 8 + 7, true);
		rt_sq_publish(&p->a);
		/* Served: nothing asks for the doorbell, and none is rung. */
		EXPECT_EQ(SERVED, rt_flags(sh) & BOTH);
		ASSERT_EQ(1, rt_cq_poll(&p->ascq, wc, 1, 10000));
		EXPECT_EQ(round * 8 + 7, wc[0].wr_id);
		EXPECT_EQ(RT_WC_SUCCESS, wc[0].status);
		/* The head is stored once the drain returns: maybe later. */
		EXPECT_TRUE(head_becomes(sh, 1 + (round + 1) * 8, 5000));
		EXPECT_EQ(0, memcmp(p->buf, p->buf + RT_HALF, 64));
	}
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, wc, 1, 50));
	ASSERT_EQ(0, kqp_test_ctx_info(p->fd, &after));
	EXPECT_LE(before.out_poller_entries + 160, after.out_poller_entries);
}

/*
 * Idle, the poller gives the rings back: NEED_DOORBELL again, and what is
 * published then waits for a doorbell.  A doorbell that wakes it makes it
 * serve them again.
 */
TEST_F_TIMEOUT(p, sleeps_and_asks_for_doorbell, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *sh = rt_sq_hdr(&p->a);
	struct kqp_ctx_info info;
	struct kqp_cqe wc[1];

	ASSERT_EQ(0, serve(p));
	ASSERT_TRUE(rt_flags_become(sh, BOTH, SERVED, 5000));
	/* 300 ms idle, then asleep. */
	ASSERT_TRUE(rt_flags_become(sh, BOTH, KQP_WQ_RING_NEED_DOORBELL, 5000));
	ASSERT_EQ(0, kqp_test_ctx_info(p->fd, &info));
	EXPECT_LT(0, info.out_poller_busy_ns);
	rt_a_write_put(p, 1, true);
	rt_sq_publish(&p->a);
	usleep(200000);
	EXPECT_EQ(1, rt_head(sh));
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, wc, 1, 0));
	ASSERT_EQ(0, wake(&p->a));
	EXPECT_EQ(2, rt_head(sh));
	ASSERT_EQ(1, rt_cq_poll(&p->ascq, wc, 1, 10000));
	EXPECT_EQ(1, wc[0].wr_id);
	EXPECT_TRUE(rt_flags_become(sh, BOTH, SERVED, 5000));
	rt_a_write_put(p, 2, true);
	rt_sq_publish(&p->a);
	ASSERT_EQ(1, rt_cq_poll(&p->ascq, wc, 1, 10000));
	EXPECT_EQ(2, wc[0].wr_id);
}

/*
 * A QP the device has not taken a send from is not served: a send to it
 * below RTS is rung, and the device's refusal is the post's errno at
 * once, as with rdma-core, not a send accepted and then lost.  Connected
 * and once sent on, it is served.
 */
TEST_F_TIMEOUT(p, not_served_before_it_sends, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_create_qp c;
	struct kqp_wq_ring_hdr *sh;
	struct kqp_cqe wc[1];
	struct rt_qp q;
	struct rt_send s = rt_send1(1, KQP_WR_OP_SEND, rt_abuf(p, 0), 8,
				    p->mr.out_lkey);

	rt_qp_req(&c, 0, 0, 0);
	c.pd = p->pd;
	c.send_cq = p->ascq.c.out_cq;
	c.recv_cq = p->arcq.c.out_cq;
	ASSERT_EQ(0, rt_qp_make(p->fd, &c, &q));
	sh = rt_sq_hdr(&q);
	ASSERT_EQ(0, wake(&q));
	/* The poller passes over it many times meanwhile. */
	usleep(100000);
	EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL, rt_flags(sh) & BOTH);
	rt_sq_put(&q, &s, RT_SEND1_LEN);
	rt_sq_publish(&q);
	EXPECT_EQ(EINVAL, rt_ring(&q, KQP_DB_SEND));
	EXPECT_EQ(0, rt_head(sh));
	usleep(50000);
	EXPECT_EQ(0, rt_head(sh));
	EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL, rt_flags(sh) & BOTH);
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, wc, 1, 0));
	EXPECT_EQ(0, rt_qp_destroy(&q));
	/* The pair's a, connected: served once it sent. */
	EXPECT_EQ(KQP_WQ_RING_NEED_DOORBELL, rt_flags(rt_sq_hdr(&p->a)) & BOTH);
	ASSERT_EQ(0, serve(p));
	EXPECT_TRUE(rt_flags_become(rt_sq_hdr(&p->a), BOTH, SERVED, 5000));
}

/*
 * A receive published on a served ring is posted by the poller: its head
 * moves with no doorbell, and a message sent after that finds it.
 */
TEST_F_TIMEOUT(p, receives_without_doorbell, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b);
	int i;

	ASSERT_EQ(0, wake(&p->a));
	ASSERT_TRUE(rt_flags_become(rh, BOTH, BOTH, 5000));
	for (i = 0; i < 4; i++) {
		rt_b_recvs(p, 200 + i, 1);
		ASSERT_TRUE(head_becomes(rh, i + 1, 5000));
		/* rnr_retry 7 would hide a late receive: check it was there. */
		rt_a_sends(p, 100 + i, 1, 32);
		rt_expect_a_to_b(_metadata, p, 100 + i, 200 + i, 1, 32);
	}
	rt_expect_data(_metadata, p, 103, 1, 32);
}

/*
 * A receive entry the kernel refuses stops the served ring: the poller
 * leaves it, and the doorbell reports the errno, as without a poller.
 */
TEST_F_TIMEOUT(p, refused_receive_stops_ring, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b);
	struct rt_recv r = rt_recv1(300, rt_bbuf(p, 0), 64, p->mr.out_lkey + 1);

	ASSERT_EQ(0, wake(&p->a));
	ASSERT_TRUE(rt_flags_become(rh, BOTH, BOTH, 5000));
	rt_rq_put(&p->b, &r, RT_RECV1_LEN);
	rt_rq_publish(&p->b);
	/* The poller tried it: the ring is no longer served. */
	ASSERT_TRUE(rt_flags_become(rh, BOTH, KQP_WQ_RING_NEED_DOORBELL, 5000));
	EXPECT_EQ(0, rt_head(rh));
	EXPECT_NE(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(0, rt_head(rh));
	/* Taken back, a good one, rung: served again. */
	p->b.rq_tail = 0;
	rt_b_recvs(p, 301, 1);
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(1, rt_head(rh));
	EXPECT_TRUE(rt_flags_become(rh, BOTH, BOTH, 5000));
	rt_a_sends(p, 100, 1, 32);
	rt_expect_a_to_b(_metadata, p, 100, 301, 1, 32);
}

/*
 * A tail more than the ring's entries past its head, written while the
 * poller serves the ring: the poller stops that ring (NEED_DOORBELL, the
 * doorbell's EINVAL) and goes on serving the others; with the tail put
 * back, the ring sends and is served again.
 */
TEST_F_TIMEOUT(p, garbage_tail_stops_only_its_ring, 60)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *sh = rt_sq_hdr(&p->a);
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b);
	uint32_t head;

	ASSERT_EQ(0, serve(p));
	ASSERT_TRUE(rt_flags_become(sh, BOTH, SERVED, 5000));
	head = rt_head(sh);
	rt_set_tail(sh, head + p->a.c.out_rings.sq.entries + 1);
	ASSERT_TRUE(rt_flags_become(sh, BOTH, KQP_WQ_RING_NEED_DOORBELL,
				    5000));
	EXPECT_EQ(EINVAL, rt_ring(&p->a, KQP_DB_SEND));
	EXPECT_EQ(head, rt_head(sh));
	/* b's receive ring is still served: posted with no doorbell. */
	EXPECT_EQ(BOTH, rt_flags(rh) & BOTH);
	rt_b_recvs(p, 200, 1);
	EXPECT_TRUE(head_becomes(rh, 1, 5000));

	p->a.sq_tail = head;
	rt_sq_publish(&p->a);
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	ASSERT_EQ(0, serve(p));
	EXPECT_TRUE(rt_flags_become(sh, BOTH, SERVED, 5000));
	rt_a_sends(p, 100, 1, 32);
	rt_expect_a_to_b(_metadata, p, 100, 200, 1, 32);
}

/*
 * QPs destroyed, and made, while the poller serves them; then the table
 * closed with the poller awake and entries published.
 */
TEST_F_TIMEOUT(p, destroy_while_served, 120)
{
	struct rt_pair *p = &self->p;
	struct kqp_create_qp c;
	struct rt_qp q;
	int i;

	ASSERT_EQ(0, wake(&p->a));
	for (i = 0; i < 50; i++) {
		rt_qp_req(&c, 0, 0, 0);
		c.pd = p->pd;
		c.send_cq = p->bscq.c.out_cq;
		c.recv_cq = p->brcq.c.out_cq;
		ASSERT_EQ(0, rt_qp_make(p->fd, &c, &q));
		EXPECT_EQ(0, rt_qp_destroy(&q));
	}
	for (i = 0; i < 8; i++)
		rt_a_write_put(p, i, true);
	rt_sq_publish(&p->a);
	EXPECT_EQ(0, rt_qp_destroy(&p->a));
	/*
	 * b sends to nobody: RNR retried for ever, until the close.  b
	 * never sent, so it still rings for these: a doorbell that names
	 * no QP only wakes the poller (asleep by now on a slow kernel),
	 * which drains every ring it finds published, served or not.
	 */
	ASSERT_EQ(0, wake_only(p->fd));
	for (i = 0; i < 8; i++) {
		struct rt_send s = rt_send1(i, KQP_WR_OP_SEND, rt_bbuf(p, 0),
					    64, p->mr.out_lkey);

		rt_sq_put(&p->b, &s, RT_SEND1_LEN);
	}
	rt_sq_publish(&p->b);
	EXPECT_TRUE(head_becomes(rt_sq_hdr(&p->b), 8, 5000));
	EXPECT_EQ(1, pollers_in_self());
	/* A mapping holds the file, and the file the table. */
	munmap(p->b.map, p->b.c.out_rings.mmap_size);
	p->b.map = NULL;
	munmap(p->ascq.map, p->ascq.c.out_ring.mmap_size);
	munmap(p->arcq.map, p->arcq.c.out_ring.mmap_size);
	munmap(p->bscq.map, p->bscq.c.out_ring.mmap_size);
	munmap(p->brcq.map, p->brcq.c.out_ring.mmap_size);
	close(p->fd);
	p->fd = -1;
	free(p->buf);
	p->buf = NULL;
	EXPECT_EQ(0, pollers_become(0, 2000));
}

/*
 * A process with a poller, awake and serving rings, that exits or is
 * killed: the thread goes with it, and nothing hangs.
 */
TEST_F_TIMEOUT(p, process_dies_with_poller, 120)
{
	int how, status;

	for (how = 0; how < 2; how++) {
		pid_t pid = fork();
		long long end;

		ASSERT_LE(0, pid);
		if (!pid) {
			struct rt_pair q;

			if (rt_pair_make(&q, NULL, 7) ||
			    make_poller(q.fd, KQP_POLLER_IDLE_US_MAX) ||
			    wake(&q.a))
				_exit(2);
			rt_a_write_put(&q, 1, true);
			rt_sq_publish(&q.a);
			if (how)
				pause();
			_exit(0);
		}
		if (how) {
			usleep(300000);
			kill(pid, SIGKILL);
		}
		end = rt_now_ms() + 20000;
		while (waitpid(pid, &status, WNOHANG) == 0) {
			if (rt_now_ms() > end) {
				kill(pid, SIGKILL);
				waitpid(pid, &status, 0);
				ASSERT_TRUE(0 && "the process did not end");
			}
			usleep(10000);
		}
		if (how) {
			EXPECT_TRUE(WIFSIGNALED(status));
		} else {
			EXPECT_TRUE(WIFEXITED(status));
			EXPECT_EQ(0, WEXITSTATUS(status));
		}
	}
}

TEST_HARNESS_MAIN
