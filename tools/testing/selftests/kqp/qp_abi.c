// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * PDs, CQs, rings and QPs at the ioctl level: the kernel's own checks
 * (the core's rules on an id, mmap of a ring, a consumer index userspace
 * corrupted, tables shared between files) with no library in between.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

static int kq_open(void)
{
	return open(KQP_DEV, O_RDWR | O_CLOEXEC | O_NONBLOCK);
}

static int kq_pd(int fd, uint32_t dev, uint32_t flags, uint32_t *pd)
{
	struct kqp_alloc_pd a = {
		.size = sizeof(a), .flags = flags, .device_index = dev,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_ALLOC_PD, &a);

	*pd = a.out_pd;
	return ret;
}

static int kq_cq(int fd, uint32_t dev, uint32_t cqe, struct kqp_create_cq *c)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->device_index = dev;
	c->cqe = cqe;
	c->channel_fd = -1;
	return kqp_test_ioctl(fd, KQP_IOCTL_CREATE_CQ, c);
}

static int kq_destroy_cq(int fd, uint32_t cq)
{
	struct kqp_destroy_cq d = { .size = sizeof(d), .cq = cq };

	return kqp_test_ioctl(fd, KQP_IOCTL_DESTROY_CQ, &d);
}

static int kq_info(int fd, struct kqp_ctx_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return kqp_test_ioctl(fd, KQP_IOCTL_CTX_INFO, info);
}

static int kq_bound_id(int fd, uint16_t port, uint32_t *id)
{
	struct kqp_create_id c = {
		.size = sizeof(c), .uid = 1, .port_space = KQP_PS_TCP,
		.qp_type = KQP_QPT_RC,
	};
	struct kqp_bind_addr b = { .size = sizeof(b) };
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_port = htons(port),
	};
	int ret;

	ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_ID, &c);
	if (ret)
		return ret;
	*id = c.out_id;
	if (!port)
		return 0;
	inet_pton(AF_INET, getenv("KQP_TEST_ADDR") ?: "192.0.2.1",
		  &sin.sin_addr);
	memcpy(&b.addr, &sin, sizeof(sin));
	b.id = c.out_id;
	return kqp_test_ioctl(fd, KQP_IOCTL_BIND_ADDR, &b);
}

static void qp_req(struct kqp_create_qp *c, uint32_t id)
{
	kqp_test_rc_req(c, 8, 1);
	c->id = id;
}

static uint16_t port(void)
{
	static uint16_t next;

	if (!next)
		next = 46000 + (getpid() % 500) * 10;
	return next++;
}

FIXTURE(v) {
	int fd;
	uint32_t dev;
};

FIXTURE_SETUP(v)
{
	self->fd = kq_open();
	ASSERT_LE(0, self->fd);
	self->dev = kqp_test_rxe_index(self->fd);
	ASSERT_NE(KQP_NO_DEVICE, self->dev);
}

FIXTURE_TEARDOWN(v)
{
	close(self->fd);
}

/* The core's rules, enforced by the kernel itself. */
TEST_F(v, core_rules_on_id)
{
	struct kqp_create_qp c;
	struct kqp_ctx_info info;
	uint32_t unbound, bound;

	ASSERT_EQ(0, kq_bound_id(self->fd, 0, &unbound));
	qp_req(&c, unbound);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));

	ASSERT_EQ(0, kq_bound_id(self->fd, port(), &bound));
	qp_req(&c, bound);
	c.qp_type = KQP_QPT_UD;	/* not the id's */
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));

	/* No PD, no CQs: the default PD and two CQs with their channels. */
	qp_req(&c, bound);
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	EXPECT_LE(0, c.out_send_channel_fd);
	EXPECT_LE(0, c.out_recv_channel_fd);
	EXPECT_NE(c.out_send_cq, c.out_recv_cq);
	EXPECT_LE(8, c.cap.max_send_wr);
	EXPECT_NE(0, c.out_qp_num);
	EXPECT_LE(8, c.out_send_ring.entries);
	ASSERT_EQ(0, kq_info(self->fd, &info));
	EXPECT_EQ(1, info.out_default_pds);
	EXPECT_EQ(2, info.out_cqs);
	EXPECT_EQ(1, info.out_qps);

	/* One QP per id, and nothing changes. */
	{
		struct kqp_create_qp c2;

		qp_req(&c2, bound);
		EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP,
						 &c2));
		ASSERT_EQ(0, kq_info(self->fd, &info));
		EXPECT_EQ(2, info.out_cqs);
		EXPECT_EQ(1, info.out_qps);
	}

	/* rdma_cm moves it from state to state; the caller may break it. */
	{
		struct kqp_modify_qp m = {
			.size = sizeof(m), .qp = c.out_qp,
			.attr_mask = KQP_QP_ATTR_STATE,
			.attr.qp_state = KQP_QPS_RTS,
		};

		EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd,
						 KQP_IOCTL_MODIFY_QP, &m));
		m.attr.qp_state = KQP_QPS_ERR;
		EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_QP,
					    &m));
	}
	/* Its made CQs are its own. */
	EXPECT_EQ(EBUSY, kq_destroy_cq(self->fd, c.out_send_cq));
	{
		struct kqp_destroy_qp d = { .size = sizeof(d), .qp = c.out_qp };

		ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP, &d));
		EXPECT_EQ(0, d.out_send_cq_events);
	}
	ASSERT_EQ(0, kq_info(self->fd, &info));
	EXPECT_EQ(0, info.out_cqs);
	EXPECT_EQ(0, info.out_qps);
	/* A default PD no QP and no reference keeps: gone. */
	EXPECT_EQ(0, info.out_default_pds);
	close(c.out_send_channel_fd);
	close(c.out_recv_channel_fd);
}

TEST_F(v, default_pd_references)
{
	struct kqp_dealloc_pd d = { .size = sizeof(d) };
	struct kqp_ctx_info info;
	uint32_t a, b;

	ASSERT_EQ(0, kq_pd(self->fd, self->dev, KQP_ALLOC_PD_DEFAULT, &a));
	ASSERT_EQ(0, kq_pd(self->fd, self->dev, KQP_ALLOC_PD_DEFAULT, &b));
	EXPECT_EQ(a, b);
	ASSERT_EQ(0, kq_info(self->fd, &info));
	EXPECT_EQ(1, info.out_default_pds);
	d.pd = a;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DEALLOC_PD, &d));
	ASSERT_EQ(0, kq_info(self->fd, &info));
	EXPECT_EQ(1, info.out_default_pds);
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DEALLOC_PD, &d));
	ASSERT_EQ(0, kq_info(self->fd, &info));
	EXPECT_EQ(0, info.out_pds);
	EXPECT_EQ(ENOENT, kqp_test_ioctl(self->fd, KQP_IOCTL_DEALLOC_PD, &d));
}

TEST_F(v, in_use_ebusy)
{
	struct kqp_dealloc_pd d = { .size = sizeof(d) };
	struct kqp_create_cq cq;
	struct kqp_create_qp c;
	struct kqp_destroy_qp dq = { .size = sizeof(dq) };
	uint32_t pd;

	ASSERT_EQ(0, kq_pd(self->fd, self->dev, 0, &pd));
	ASSERT_EQ(0, kq_cq(self->fd, self->dev, 8, &cq));
	qp_req(&c, 0);
	c.pd = pd;
	c.send_cq = c.recv_cq = cq.out_cq;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
	EXPECT_EQ(-1, c.out_send_channel_fd);
	d.pd = pd;
	EXPECT_EQ(EBUSY, kqp_test_ioctl(self->fd, KQP_IOCTL_DEALLOC_PD, &d));
	EXPECT_EQ(EBUSY, kq_destroy_cq(self->fd, cq.out_cq));
	dq.qp = c.out_qp;
	/* Its reserved word must be zero, and refusing destroys nothing. */
	dq.__reserved = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP,
					     &dq));
	dq.__reserved = 0;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP, &dq));
	EXPECT_EQ(0, dq.out_flags);
	EXPECT_EQ(0, kq_destroy_cq(self->fd, cq.out_cq));
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DEALLOC_PD, &d));
	/* A QP without an id needs everything named. */
	qp_req(&c, 0);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &c));
}

/* mmap of a ring: exactly its offset and length, shared, never exec. */
TEST_F(v, ring_mmap_rules)
{
	struct kqp_create_cq c;
	size_t len;
	void *p, *keep;
	uint32_t pd;

	ASSERT_EQ(0, kq_cq(self->fd, self->dev, 16, &c));
	len = c.out_ring.mmap_size;
	ASSERT_LT(0, len);
	/* A power of two that holds all the device gave (31 on rxe). */
	EXPECT_LE(16, c.out_cqe);
	EXPECT_LE(c.out_cqe, c.out_ring.entries);
	EXPECT_EQ(0, c.out_ring.entries & (c.out_ring.entries - 1));

	p = mmap(NULL, len - 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, c.out_ring.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, c.out_ring.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
		 c.out_ring.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_SHARED, self->fd,
		 c.out_ring.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EPERM, errno);
	/* Another object's handle, and none. */
	ASSERT_EQ(0, kq_pd(self->fd, self->dev, 0, &pd));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)pd * 4096);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 (off_t)0x7fff0 * 4096);
	EXPECT_EQ(MAP_FAILED, p);

	keep = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		    c.out_ring.mmap_offset);
	ASSERT_NE(MAP_FAILED, keep);
	/* Not executable later either. */
	EXPECT_EQ(-1, mprotect(keep, len, PROT_READ | PROT_EXEC));
	ASSERT_EQ(0, kq_destroy_cq(self->fd, c.out_cq));
	/* The CQ is gone: no new mapping... */
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 c.out_ring.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	/* ...but the old one stays readable until unmapped. */
	EXPECT_EQ(0, *(volatile uint32_t *)((char *)keep +
					    c.out_ring.off_tail));
	EXPECT_EQ(0, munmap(keep, len));
}

/*
 * A consumer index userspace corrupted reads as a full ring: nothing is
 * written past what the consumer released, and fixing it resumes.
 */
TEST_F(v, corrupt_head_is_full)
{
	struct kqp_flush_cq f = { .size = sizeof(f) };
	struct kqp_create_cq c;
	struct kqp_create_qp q;
	struct kqp_destroy_qp dq = { .size = sizeof(dq) };
	struct kqp_post post = { .size = sizeof(post) };
	struct {
		struct kqp_recv_wr wr;
	} rwr = { { .wr_id = 9 } };
	volatile uint32_t *head, *tail, *flags;
	uint32_t pd;
	void *ring;
	int i;

	ASSERT_EQ(0, kq_pd(self->fd, self->dev, 0, &pd));
	ASSERT_EQ(0, kq_cq(self->fd, self->dev, 8, &c));
	ring = mmap(NULL, c.out_ring.mmap_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, self->fd, c.out_ring.mmap_offset);
	ASSERT_NE(MAP_FAILED, ring);
	head = (uint32_t *)((char *)ring + c.out_ring.off_head);
	tail = (uint32_t *)((char *)ring + c.out_ring.off_tail);
	flags = (uint32_t *)((char *)ring + c.out_ring.off_flags);
	qp_req(&q, 0);
	q.pd = pd;
	q.send_cq = q.recv_cq = c.out_cq;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_QP, &q));

	/* Receives on a RESET QP fail; make completions by flushing it. */
	{
		struct kqp_modify_qp m = {
			.size = sizeof(m), .qp = q.out_qp,
			.attr_mask = KQP_TEST_RC_INIT,
			.attr = { .qp_state = KQP_QPS_INIT, .port_num = 1 },
		};

		ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_QP, &m));
	}
	post.qp = q.out_qp;
	post.count = 1;
	post.wrs = (uintptr_t)&rwr;
	post.wrs_len = sizeof(rwr);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_POST_RECV,
					    &post));

	*head = 0x80000000;	/* a head no consumer could have written */
	{
		struct kqp_modify_qp m = {
			.size = sizeof(m), .qp = q.out_qp,
			.attr_mask = KQP_QP_ATTR_STATE,
			.attr = { .qp_state = KQP_QPS_ERR },
		};

		ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_MODIFY_QP, &m));
	}
	/* The flushes arrive and find no room: overflow, nothing written. */
	for (i = 0; i < 500 && !(*flags & KQP_CQ_RING_OVERFLOW); i++)
		usleep(10000);
	EXPECT_EQ(KQP_CQ_RING_OVERFLOW, *flags & KQP_CQ_RING_OVERFLOW);
	EXPECT_EQ(0, *tail);

	/* A sane head again, and a flush: all three flushed receives. */
	*head = 0;
	f.cq = c.out_cq;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_FLUSH_CQ, &f));
	for (i = 0; i < 100 && *tail < 3; i++)
		usleep(10000);
	EXPECT_EQ(3, *tail);
	EXPECT_EQ(0, *flags & KQP_CQ_RING_OVERFLOW);
	{
		struct kqp_cqe *cqe = (struct kqp_cqe *)((char *)ring +
							 c.out_ring.off_cqes);

		for (i = 0; i < 3; i++) {
			EXPECT_EQ(9, cqe[i].wr_id);
			EXPECT_EQ(5, cqe[i].status);	/* WR_FLUSH_ERR */
			EXPECT_EQ(128, cqe[i].opcode);	/* RECV */
			EXPECT_EQ(q.out_qp_num, cqe[i].qp_num);
		}
	}
	dq.qp = q.out_qp;
	EXPECT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_DESTROY_QP, &dq));
	munmap(ring, c.out_ring.mmap_size);
	EXPECT_EQ(0, kq_destroy_cq(self->fd, c.out_cq));
}

TEST_F(v, channels_and_attach)
{
	struct kqp_create_comp_channel ch = { .size = sizeof(ch) };
	struct kqp_comp_event ev;
	struct kqp_attach at = { .size = sizeof(at) };
	struct kqp_create_cq c;
	struct kqp_ctx_info info;
	int other, pfd[2];
	char small[4];
	uint32_t pd;

	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_COMP_CHANNEL,
				    &ch));
	fcntl(ch.out_fd, F_SETFL, O_NONBLOCK);
	EXPECT_EQ(-1, read(ch.out_fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(-1, read(ch.out_fd, small, sizeof(small)));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, pipe(pfd));
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.device_index = self->dev;
	c.cqe = 4;
	c.channel_fd = pfd[0];
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_CQ, &c));
	c.channel_fd = 1000;
	EXPECT_EQ(EBADF, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_CQ, &c));
	c.channel_fd = ch.out_fd;
	c.cqe = 0;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_CQ, &c));
	c.cqe = 4;
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_CQ, &c));

	/* Attaching: only a fresh file, only to /dev/kqp. */
	other = kq_open();
	ASSERT_LE(0, other);
	at.fd = pfd[0];
	EXPECT_EQ(EINVAL, kqp_test_ioctl(other, KQP_IOCTL_ATTACH, &at));
	at.fd = other;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(other, KQP_IOCTL_ATTACH, &at));
	at.fd = self->fd;
	ASSERT_EQ(0, kqp_test_ioctl(other, KQP_IOCTL_ATTACH, &at));
	EXPECT_EQ(EBUSY, kqp_test_ioctl(other, KQP_IOCTL_ATTACH, &at));
	/* The same table through either file. */
	ASSERT_EQ(0, kq_info(other, &info));
	EXPECT_EQ(1, info.out_cqs);
	EXPECT_EQ(2, info.out_files);
	EXPECT_EQ(0, kq_destroy_cq(other, c.out_cq));
	ASSERT_EQ(0, kq_pd(self->fd, self->dev, 0, &pd));
	close(other);
	ASSERT_EQ(0, kq_info(self->fd, &info));
	EXPECT_EQ(1, info.out_pds);
	EXPECT_EQ(1, info.out_files);
	{
		int fresh = kq_open();

		ASSERT_LE(0, fresh);
		ASSERT_EQ(0, kq_pd(fresh, self->dev, 0, &pd));
		at.fd = self->fd;
		EXPECT_EQ(EBUSY, kqp_test_ioctl(fresh, KQP_IOCTL_ATTACH, &at));
		close(fresh);
	}
	close(ch.out_fd);
	close(pfd[0]);
	close(pfd[1]);
}

/*
 * Closing everything with live objects: a table with a QP on an id, a QP
 * of its own, posted receives and mapped rings, in a child that exits.
 */
TEST(close_with_live_objects)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = kq_open(), chan = kq_open();
		struct kqp_attach at = { .size = sizeof(at), .fd = fd };
		struct kqp_create_qp q;
		struct kqp_create_cq c;
		uint32_t dev = kqp_test_rxe_index(fd), id, pd;

		if (fd < 0 || chan < 0 || kqp_test_ioctl(chan, KQP_IOCTL_ATTACH,
							 &at))
			_exit(1);
		if (kq_bound_id(chan, port(), &id))
			_exit(2);
		qp_req(&q, id);
		if (kqp_test_ioctl(chan, KQP_IOCTL_CREATE_QP, &q))
			_exit(3);
		if (mmap(NULL, q.out_recv_ring.mmap_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, q.out_recv_ring.mmap_offset) ==
		    MAP_FAILED)
			_exit(4);
		if (kq_pd(fd, dev, 0, &pd) || kq_cq(fd, dev, 8, &c))
			_exit(5);
		qp_req(&q, 0);
		q.pd = pd;
		q.send_cq = q.recv_cq = c.out_cq;
		if (kqp_test_ioctl(fd, KQP_IOCTL_CREATE_QP, &q))
			_exit(6);
		/* The table outlives the file it was made through. */
		close(fd);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
