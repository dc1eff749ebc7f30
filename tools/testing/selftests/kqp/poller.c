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
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
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
	    wc[0].status != KQP_WC_SUCCESS)
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
		EXPECT_EQ(KQP_WC_SUCCESS, wc[0].status);
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

/* ------------------------------------------------------------------ */

/*
 * Who the poller belongs to.  The table is its maker's: every process on
 * its mm may use it, but only the maker's thread group may give it a
 * poller, since the thread is one of the caller's and dies with it.  A
 * CLONE_VM child, a vfork() child, and so posix_spawn()'s, share the mm
 * but not the thread group: their CREATE_POLLER is EPERM, and the table
 * is left with no poller, not with one that dies as they exec or exit.
 */
struct clone_arg {
	int fd;
	int ret;
};

static int clone_make_poller(void *data)
{
	struct clone_arg *a = data;

	a->ret = make_poller(a->fd, 0);
	/* Not exit(): that would run the parent's atexit work on its mm. */
	_exit(0);
}

/* clone(CLONE_VM) a child running @fn(@arg) on a stack of its own; -1 if not. */
static pid_t clone_vm(int (*fn)(void *), void *arg, void **stack)
{
	const size_t sz = 256 * 1024;

	*stack = malloc(sz);
	if (!*stack)
		return -1;
	return clone(fn, (char *)*stack + sz, CLONE_VM | SIGCHLD, arg);
}

TEST(clone_vm_child_makes_none)
{
	struct clone_arg a = { .ret = -1 };
	struct kqp_ctx_info info;
	int status, ret;
	void *stack;
	pid_t pid;

	a.fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, a.fd);
	/* The table is made, and so owned, by this process. */
	ASSERT_EQ(0, kqp_test_ctx_info(a.fd, &info));

	pid = clone_vm(clone_make_poller, &a, &stack);
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	free(stack);
	EXPECT_EQ(EPERM, a.ret);

	/* vfork() shares the mm the same way. */
	pid = vfork();
	if (!pid)
		_exit(make_poller(a.fd, 0));
	ASSERT_LT(0, pid);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(EPERM, WEXITSTATUS(status));

	/* Nothing was made, so nothing died: the doorbell's flag does nothing. */
	ASSERT_EQ(0, kqp_test_ctx_info(a.fd, &info));
	EXPECT_EQ(0, info.out_poller);
	EXPECT_EQ(0, wake_only(a.fd));
	EXPECT_EQ(0, pollers_in_self());

	/* The maker may. */
	ret = make_poller(a.fd, 0);
	if (ret == EOPNOTSUPP) {
		close(a.fd);
		SKIP(return, "no poller on this kernel (no vhost_task)");
	}
	EXPECT_EQ(0, ret);
	EXPECT_EQ(1, pollers_in_self());
	EXPECT_EQ(0, wake_only(a.fd));
	close(a.fd);
	EXPECT_EQ(0, pollers_become(0, 2000));
}

/*
 * The poller dies with the process that made it, while a process sharing
 * its mm lives on with the table: that one's doorbell with
 * KQP_DOORBELL_WAKE_POLLER is ESRCH and drains nothing, one without the
 * flag works as ever, and CREATE_POLLER stays EPERM.  The thread that
 * died is never woken: before 6.17 (and its stable backports) that wake
 * would be wake_up_process() on a task_struct already freed.
 */
struct survivor {
	int fd;
	int res;	/* the pipe the results go to */
};

/* What the survivor saw, in the order it tried. */
struct survivor_saw {
	int gone;	/* CTX_INFO reported the poller gone */
	int woken;	/* DOORBELL with WAKE_POLLER */
	int rung;	/* the same doorbell without the flag */
	int made;	/* CREATE_POLLER */
	int entry;	/* the entry's out_errno of the WAKE_POLLER doorbell */
};

static int doorbell_flags(int fd, uint32_t flags, int *entry_errno)
{
	struct kqp_doorbell_entry e = {
		.qp = 0x7fffffff, .flags = KQP_DB_SEND, .out_errno = -1,
	};
	struct kqp_doorbell d = {
		.size = sizeof(d), .flags = flags,
		.count = 1, .entry_size = sizeof(e), .entries = (uintptr_t)&e,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_DOORBELL, &d);

	*entry_errno = e.out_errno;
	return ret;
}

static int survive(void *data)
{
	struct survivor *s = data;
	struct survivor_saw saw = { .gone = -1 };
	struct kqp_ctx_info info;
	long long end = rt_now_ms() + 20000;
	int ignored;

	/* The maker is gone once getppid() changes; its poller a moment later. */
	while (rt_now_ms() < end) {
		if (kqp_test_ctx_info(s->fd, &info))
			break;
		if (!info.out_poller) {
			saw.gone = 1;
			break;
		}
		usleep(2000);
	}
	saw.woken = doorbell_flags(s->fd, KQP_DOORBELL_WAKE_POLLER, &saw.entry);
	saw.rung = doorbell_flags(s->fd, 0, &ignored);
	if (!saw.rung && ignored != ENOENT)
		saw.rung = EIO;
	saw.made = make_poller(s->fd, 0);
	close(s->fd);
	/* _exit(), as in clone_make_poller(). */
	_exit(write(s->res, &saw, sizeof(saw)) != sizeof(saw));
}

TEST_F_TIMEOUT(w, wake_after_owner_died, 120)
{
	struct survivor_saw saw;
	int res[2], status, n;
	long before;
	pid_t maker;

	before = kqp_test_objects_live();
	ASSERT_LE(0, before);
	/* The survivor is reparented to this process when its maker dies. */
	ASSERT_EQ(0, prctl(PR_SET_CHILD_SUBREAPER, 1));
	ASSERT_EQ(0, pipe(res));
	maker = fork();
	ASSERT_LE(0, maker);
	if (!maker) {
		struct survivor s = { .res = res[1] };
		void *stack;

		close(res[0]);
		s.fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
		if (s.fd < 0)
			_exit(2);
		n = make_poller(s.fd, 0);
		if (n == EOPNOTSUPP)
			_exit(77);
		if (n || kqp_test_threads_named("kqp-poller") != 1)
			_exit(3);
		if (clone_vm(survive, &s, &stack) < 0)
			_exit(4);
		/* The poller, a thread of this process, is killed as it exits. */
		_exit(0);
	}
	close(res[1]);
	ASSERT_EQ(maker, waitpid(maker, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		close(res[0]);
		SKIP(return, "no poller on this kernel (no vhost_task)");
	}
	ASSERT_EQ(0, WEXITSTATUS(status));
	n = read(res[0], &saw, sizeof(saw));
	close(res[0]);
	/* The survivor, reparented here. */
	while (waitpid(-1, &status, 0) > 0)
		;
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	ASSERT_EQ(sizeof(saw), n);
	EXPECT_EQ(1, saw.gone);
	EXPECT_EQ(ESRCH, saw.woken);
	/* Refused before anything was drained. */
	EXPECT_EQ(-1, saw.entry);
	EXPECT_EQ(0, saw.rung);
	EXPECT_EQ(EPERM, saw.made);
	/* Its last file closed, the table went, and every object with it. */
	EXPECT_EQ(before, kqp_test_objects_become(before, 5000));
}

/*
 * The racy form of the same: threads ring with KQP_DOORBELL_WAKE_POLLER
 * as fast as they can while the process is SIGKILLed, so that the poller
 * dies during their wakes.  Every round ends with the process killed and
 * nothing of its table left.
 */
static void *wake_forever(void *data)
{
	int fd = *(int *)data;

	for (;;)
		wake_only(fd);
	return NULL;
}

TEST_F_TIMEOUT(w, wake_racing_sigkill, 300)
{
	long before = kqp_test_objects_live();
	int round, status, go[2];

	ASSERT_LE(0, before);
	for (round = 0; round < 30; round++) {
		pid_t pid;
		char c;

		ASSERT_EQ(0, pipe(go));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			pthread_t t[2];
			int fd, ret;

			close(go[0]);
			fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
			if (fd < 0)
				_exit(2);
			/* 1 us idle: it sleeps and wakes all the time. */
			ret = make_poller(fd, 1);
			if (ret)
				_exit(ret == EOPNOTSUPP ? 77 : 3);
			if (pthread_create(&t[0], NULL, wake_forever, &fd) ||
			    pthread_create(&t[1], NULL, wake_forever, &fd))
				_exit(4);
			c = 1;
			if (write(go[1], &c, 1) != 1)
				_exit(5);
			for (;;)
				pause();
		}
		close(go[1]);
		if (read(go[0], &c, 1) != 1) {
			close(go[0]);
			ASSERT_EQ(pid, waitpid(pid, &status, 0));
			if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
				SKIP(return, "no poller on this kernel (no vhost_task)");
			ASSERT_TRUE(0 && "the ringer did not start");
		}
		close(go[0]);
		usleep((round % 10) * 3000);
		ASSERT_EQ(0, kill(pid, SIGKILL));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	}
	EXPECT_EQ(before, kqp_test_objects_become(before, 5000));
}

TEST_HARNESS_MAIN
