// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Every allocation on every path that makes an object can fail, and kqp
 * must then fail the call cleanly: an errno, and nothing left behind.
 * As the kernel's iommufd_fail_nth.c does it: for N = 1, 2, ... make the
 * Nth allocation of the calling task fail (/proc/thread-self/fail-nth),
 * and stop once the call succeeds with the failure not yet reached, which
 * covers every allocation on the path without knowing how many there
 * are.  After each failure, /sys/kernel/debug/kqp/objects must read as
 * before the call; the debug kernel's KASAN, lockdep and kmemleak judge
 * the rest.  Needs CONFIG_FAULT_INJECTION (the bench's debug kernel);
 * skipped elsewhere.
 */
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "qp_test.h"

#define NTYPES 8

/* Live objects of each type, then contexts: "TYPE LIVE MADE" lines. */
static int objects(long out[NTYPES])
{
	FILE *f = fopen("/sys/kernel/debug/kqp/objects", "r");
	unsigned long long made;
	char name[32];
	long live;
	int n = 0;

	if (!f)
		return -1;
	while (n < NTYPES && fscanf(f, "%31s %ld", name, &live) == 2) {
		out[n++] = live;
		if (strcmp(name, "contexts") && fscanf(f, "%llu", &made) != 1)
			break;
	}
	fclose(f);
	return n == NTYPES ? 0 : -1;
}

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -1;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -1;
	close(fd);
	return ret;
}

/*
 * failslab and fail_page_alloc, set to fail what fail-nth asks for and
 * to say nothing about it (a stack trace per failure would read as a
 * kernel splat to the bench).
 */
static int faults_setup(void)
{
	static const char *const knobs[][2] = {
		{ "/sys/kernel/debug/failslab/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/failslab/verbose", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N" },
		{ "/sys/kernel/debug/fail_page_alloc/min-order", "0" },
		{ "/sys/kernel/debug/fail_page_alloc/verbose", "0" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (write_file(knobs[i][0], knobs[i][1]))
			return -1;
	return 0;
}

struct sweep;

/*
 * A create path: @prep makes what the call needs (outside the failure
 * window), @call makes the object (0 or an errno), @undo destroys what a
 * successful @call made, @done frees what @prep made.
 */
struct path {
	const char *name;
	int (*prep)(struct sweep *s);
	int (*call)(struct sweep *s);
	void (*undo)(struct sweep *s);
	void (*done)(struct sweep *s);
};

struct sweep {
	int fd, fd2, nth_fd;
	uint32_t dev, pd, cq, id, udid, qp, mr, ah, mc, srq, gid_index;
	char *buf;
	int chan;
	struct kqp_create_qp cq_out;
	struct kqp_create_cq cqc;
	void *map;
	uint32_t errnos[140];
	int qpc_ret, qpc_bad;
	bool qpc_taught;
};

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? errno : 0;
}

static int nth_set(struct sweep *s, unsigned int n)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", n);
	return pwrite(s->nth_fd, v, strlen(v), 0) == (ssize_t)strlen(v) ? 0 : -1;
}

/* What is left of the count: 0 once the failure was injected. */
static unsigned int nth_get(struct sweep *s)
{
	char v[16] = { 0 };

	if (pread(s->nth_fd, v, sizeof(v) - 1, 0) <= 0)
		return 0;
	return strtoul(v, NULL, 10);
}

/*
 * Sweep @p; returns how many failures were injected, or -1 when the
 * objects did not come back or the call never succeeded.
 */
static int sweep(struct __test_metadata *_metadata, struct sweep *s,
		 const struct path *p)
{
	long before[NTYPES], after[NTYPES];
	unsigned int n, left;
	int ret, faults = 0, i;

	for (n = 1; n < 1000; n++) {
		if (p->prep)
			ASSERT_EQ(0, p->prep(s)) TH_LOG("%s: prep", p->name);
		ASSERT_EQ(0, objects(before));
		ASSERT_EQ(0, nth_set(s, n));
		ret = p->call(s);
		left = nth_get(s);
		nth_set(s, 0);
		if (!ret && p->undo)
			p->undo(s);
		/* What @call made, undone; not what @prep made. */
		ASSERT_EQ(0, objects(after));
		if (p->done)
			p->done(s);
		for (i = 0; i < NTYPES; i++) {
			long b = before[i], a = after[i];

			EXPECT_EQ(b, a)
				TH_LOG("%s: fail-nth %u, errno %d: type %d %ld -> %ld",
				       p->name, n, ret, i, b, a);
		}
		if (ret)
			s->errnos[ret < 140 ? ret : 0]++;
		/* Done: it succeeded without reaching the failure. */
		if (!ret && left)
			break;
		faults++;
	}
	EXPECT_GT(1000, n) TH_LOG("%s never succeeded", p->name);
	TH_LOG("%s: %d allocations failed in turn", p->name, faults);
	return faults;
}

/* ---- the paths ------------------------------------------------------- */

static int call_open_table(struct sweep *s __attribute__((unused)))
{
	struct kqp_ctx_info info = { .size = sizeof(info) };
	int fd = open(KQP_DEV, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return errno;
	/* The first command that needs one makes the file's table. */
	ret = xioctl(fd, KQP_IOCTL_CTX_INFO, &info);
	close(fd);
	return ret;
}

static int call_attach(struct sweep *s)
{
	struct kqp_attach a = { .size = sizeof(a), .fd = s->fd };
	int fd = open(KQP_DEV, O_RDWR | O_CLOEXEC), ret;

	if (fd < 0)
		return errno;
	ret = xioctl(fd, KQP_IOCTL_ATTACH, &a);
	close(fd);
	return ret;
}

static int call_create_id(struct sweep *s)
{
	struct kqp_create_id c = { .size = sizeof(c),
				   .port_space = KQP_PS_TCP,
				   .qp_type = KQP_QPT_RC };
	int ret = xioctl(s->fd, KQP_IOCTL_CREATE_ID, &c);

	s->id = c.out_id;
	return ret;
}

static void undo_id(struct sweep *s)
{
	struct kqp_destroy_id d = { .size = sizeof(d), .id = s->id };

	xioctl(s->fd, KQP_IOCTL_DESTROY_ID, &d);
}

/* An id bound to the bench's address, made outside the window. */
static int bind_id(struct sweep *s, uint32_t ps, uint32_t qpt,
		   uint32_t *id)
{
	struct kqp_create_id c = { .size = sizeof(c), .port_space = ps,
				   .qp_type = qpt };
	struct kqp_bind_addr b = { .size = sizeof(b) };
	struct sockaddr_in sin = cm_addr(cm_port());
	int ret = xioctl(s->fd, KQP_IOCTL_CREATE_ID, &c);

	if (ret)
		return ret;
	*id = b.id = c.out_id;
	memcpy(&b.addr, &sin, sizeof(sin));
	return xioctl(s->fd, KQP_IOCTL_BIND_ADDR, &b);
}

static void done_id(struct sweep *s)
{
	undo_id(s);
}

static int prep_bound(struct sweep *s)
{
	return bind_id(s, KQP_PS_TCP, KQP_QPT_RC, &s->id);
}

static int call_listen(struct sweep *s)
{
	struct kqp_listen l = { .size = sizeof(l), .id = s->id, .backlog = 4 };

	return xioctl(s->fd, KQP_IOCTL_LISTEN, &l);
}

static int call_resolve(struct sweep *s)
{
	struct kqp_resolve_addr r = { .size = sizeof(r), .id = s->id,
				      .timeout_ms = 1000 };
	struct sockaddr_in sin = cm_addr(cm_port());

	memcpy(&r.dst_addr, &sin, sizeof(sin));
	return xioctl(s->fd, KQP_IOCTL_RESOLVE_ADDR, &r);
}

static int call_alloc_pd(struct sweep *s)
{
	struct kqp_alloc_pd a = { .size = sizeof(a), .device_index = s->dev };
	int ret = xioctl(s->fd, KQP_IOCTL_ALLOC_PD, &a);

	s->pd = a.out_pd;
	return ret;
}

static int call_default_pd(struct sweep *s)
{
	struct kqp_alloc_pd a = { .size = sizeof(a), .device_index = s->dev,
				  .flags = KQP_ALLOC_PD_DEFAULT };
	int ret = xioctl(s->fd, KQP_IOCTL_ALLOC_PD, &a);

	s->pd = a.out_pd;
	return ret;
}

static void undo_pd(struct sweep *s)
{
	struct kqp_dealloc_pd d = { .size = sizeof(d), .pd = s->pd };

	xioctl(s->fd, KQP_IOCTL_DEALLOC_PD, &d);
}

static int prep_pd(struct sweep *s)
{
	return call_alloc_pd(s);
}

static int call_reg_mr(struct sweep *s)
{
	struct kqp_reg_mr r = {
		.size = sizeof(r), .pd = s->pd,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		.addr = (uintptr_t)s->buf, .iova = (uintptr_t)s->buf,
		.length = 8192,
	};
	int ret = xioctl(s->fd, KQP_IOCTL_REG_MR, &r);

	s->mr = r.out_mr;
	return ret;
}

static void undo_mr(struct sweep *s)
{
	struct kqp_dereg_mr d = { .size = sizeof(d), .mr = s->mr };

	xioctl(s->fd, KQP_IOCTL_DEREG_MR, &d);
}

static int call_channel(struct sweep *s)
{
	struct kqp_create_comp_channel c = { .size = sizeof(c) };
	int ret = xioctl(s->fd, KQP_IOCTL_CREATE_COMP_CHANNEL, &c);

	s->chan = c.out_fd;
	return ret;
}

static void undo_channel(struct sweep *s)
{
	close(s->chan);
}

static int prep_channel(struct sweep *s)
{
	return call_channel(s);
}

static int call_create_cq(struct sweep *s)
{
	memset(&s->cqc, 0, sizeof(s->cqc));
	s->cqc.size = sizeof(s->cqc);
	s->cqc.device_index = s->dev;
	s->cqc.cqe = 64;
	s->cqc.channel_fd = s->chan;
	return xioctl(s->fd, KQP_IOCTL_CREATE_CQ, &s->cqc);
}

static void undo_cq(struct sweep *s)
{
	struct kqp_destroy_cq d = { .size = sizeof(d), .cq = s->cqc.out_cq };

	xioctl(s->fd, KQP_IOCTL_DESTROY_CQ, &d);
}

static int prep_cq(struct sweep *s)
{
	int ret = call_channel(s);

	return ret ? ret : call_create_cq(s);
}

static void done_cq(struct sweep *s)
{
	undo_cq(s);
	close(s->chan);
}

/* mmap of a ring: the page tables the mapping needs. */
static int call_mmap(struct sweep *s)
{
	void *p = mmap(NULL, s->cqc.out_ring.mmap_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, s->fd, s->cqc.out_ring.mmap_offset);

	if (p == MAP_FAILED)
		return errno;
	s->map = p;
	return 0;
}

static void undo_mmap(struct sweep *s)
{
	munmap(s->map, s->cqc.out_ring.mmap_size);
}

/* rdma_create_qp(3): a bound id, no PD, no CQs. */
static int call_qp_on_id(struct sweep *s)
{
	struct kqp_create_qp *c = &s->cq_out;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->id = s->id;
	c->qp_type = KQP_QPT_RC;
	c->cap = (struct kqp_qp_cap){ 8, 8, 1, 1, 0, 0 };
	c->out_send_channel_fd = c->out_recv_channel_fd = -1;
	return xioctl(s->fd, KQP_IOCTL_CREATE_QP, c);
}

static void undo_qp(struct sweep *s)
{
	struct kqp_destroy_qp d = { .size = sizeof(d), .qp = s->cq_out.out_qp };

	xioctl(s->fd, KQP_IOCTL_DESTROY_QP, &d);
	if (s->cq_out.out_send_channel_fd >= 0)
		close(s->cq_out.out_send_channel_fd);
	if (s->cq_out.out_recv_channel_fd >= 0)
		close(s->cq_out.out_recv_channel_fd);
}

static int prep_ud(struct sweep *s)
{
	return bind_id(s, KQP_PS_UDP, KQP_QPT_UD, &s->id);
}

/* A UD QP on a UD id: made outside the id, moved to RTS by kqp. */
static int call_ud_qp(struct sweep *s)
{
	struct kqp_create_qp *c = &s->cq_out;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->id = s->id;
	c->qp_type = KQP_QPT_UD;
	c->cap = (struct kqp_qp_cap){ 8, 8, 1, 1, 0, 0 };
	c->out_send_channel_fd = c->out_recv_channel_fd = -1;
	return xioctl(s->fd, KQP_IOCTL_CREATE_QP, c);
}

/* ibv_create_qp(): PD and CQ given, no id. */
static int prep_pd_cq(struct sweep *s)
{
	int ret = call_alloc_pd(s);

	if (ret)
		return ret;
	ret = call_channel(s);
	return ret ? ret : call_create_cq(s);
}

static void done_pd_cq(struct sweep *s)
{
	undo_cq(s);
	close(s->chan);
	undo_pd(s);
}

static int call_plain_qp(struct sweep *s)
{
	struct kqp_create_qp *c = &s->cq_out;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->pd = s->pd;
	c->send_cq = c->recv_cq = s->cqc.out_cq;
	c->qp_type = KQP_QPT_RC;
	c->cap = (struct kqp_qp_cap){ 8, 8, 1, 1, 0, 0 };
	c->out_send_channel_fd = c->out_recv_channel_fd = -1;
	return xioctl(s->fd, KQP_IOCTL_CREATE_QP, c);
}

/* The GID table index of the bench's address, as RoCE v2 uses it. */
static uint32_t bench_gid_index(struct sweep *s)
{
	struct kqp_query_gid q = { .size = sizeof(q), .port_num = 1 };
	uint8_t want[16] = { [10] = 0xff, [11] = 0xff };

	inet_pton(AF_INET, getenv("KQP_TEST_ADDR") ?: "192.0.2.1", want + 12);
	q.device_index = s->dev;
	for (q.index = 0; q.index < 64; q.index++) {
		if (xioctl(s->fd, KQP_IOCTL_QUERY_GID, &q))
			break;
		if (!memcmp(q.out_gid, want, 16))
			return q.index;
	}
	return 0;
}

static int call_create_ah(struct sweep *s)
{
	struct kqp_create_ah c = { .size = sizeof(c), .pd = s->pd };
	int ret;

	c.attr.port_num = 1;
	c.attr.is_global = 1;
	c.attr.hop_limit = 64;
	c.attr.sgid_index = s->gid_index;
	c.attr.dgid[10] = c.attr.dgid[11] = 0xff;
	inet_pton(AF_INET, getenv("KQP_TEST_ADDR") ?: "192.0.2.1",
		  &c.attr.dgid[12]);
	ret = xioctl(s->fd, KQP_IOCTL_CREATE_AH, &c);
	s->ah = c.out_ah;
	return ret;
}

static void undo_ah(struct sweep *s)
{
	struct kqp_destroy_ah d = { .size = sizeof(d), .ah = s->ah };

	xioctl(s->fd, KQP_IOCTL_DESTROY_AH, &d);
}

static int call_join(struct sweep *s)
{
	struct kqp_join_mcast j = { .size = sizeof(j), .id = s->id };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int ret;

	inet_pton(AF_INET, "239.5.5.5", &sin.sin_addr);
	memcpy(&j.addr, &sin, sizeof(sin));
	ret = xioctl(s->fd, KQP_IOCTL_JOIN_MCAST, &j);
	s->mc = j.out_mc_id;
	return ret;
}

static void undo_join(struct sweep *s)
{
	struct kqp_leave_mcast l = { .size = sizeof(l), .id = s->id,
				     .mc_id = s->mc };

	xioctl(s->fd, KQP_IOCTL_LEAVE_MCAST, &l);
}

/* A UD id with its QP, for attaching the QP to a group. */
static int prep_ud_qp(struct sweep *s)
{
	int ret = prep_ud(s);

	return ret ? ret : call_ud_qp(s);
}

static void done_ud_qp(struct sweep *s)
{
	undo_qp(s);
	undo_id(s);
}

static int call_attach_mcast(struct sweep *s)
{
	struct kqp_mcast_attach a = { .size = sizeof(a),
				      .qp = s->cq_out.out_qp };

	a.gid[10] = a.gid[11] = 0xff;
	a.gid[12] = 239;
	a.gid[13] = 5;
	a.gid[15] = 6;
	return xioctl(s->fd, KQP_IOCTL_ATTACH_MCAST, &a);
}

static void undo_attach_mcast(struct sweep *s)
{
	struct kqp_mcast_attach a = { .size = sizeof(a),
				      .qp = s->cq_out.out_qp };

	a.gid[10] = a.gid[11] = 0xff;
	a.gid[12] = 239;
	a.gid[13] = 5;
	a.gid[15] = 6;
	xioctl(s->fd, KQP_IOCTL_DETACH_MCAST, &a);
}

/* Migrating an id into another table: a handle there. */
static int prep_migrate(struct sweep *s)
{
	struct kqp_ctx_info info = { .size = sizeof(info) };
	int ret = call_create_id(s);

	if (ret)
		return ret;
	s->fd2 = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	if (s->fd2 < 0)
		return errno;
	return xioctl(s->fd2, KQP_IOCTL_CTX_INFO, &info);
}

static int call_migrate(struct sweep *s)
{
	struct kqp_migrate_id m = { .size = sizeof(m), .id = s->id,
				    .fd = s->fd2 };

	return xioctl(s->fd, KQP_IOCTL_MIGRATE_ID, &m);
}

static void done_migrate(struct sweep *s)
{
	/* Wherever the id is now, closing both files destroys it. */
	undo_id(s);
	close(s->fd2);
}

/*
 * One receive of 64 bytes posted with @req to @target (a QP or an SRQ),
 * its MR on @pd made in the window too: one more path.
 */
static int post_one_recv(struct sweep *s, unsigned long req, __u32 target,
			 __u32 pd)
{
	struct {
		struct kqp_recv_wr wr;
		struct kqp_sge sge;
	} w = { .wr = { .num_sge = 1 } };
	struct kqp_post p = { .size = sizeof(p), .qp = target, .count = 1,
			      .wrs = (uintptr_t)&w, .wrs_len = sizeof(w) };
	struct kqp_reg_mr r = {
		.size = sizeof(r), .pd = pd,
		.access = IBV_ACCESS_LOCAL_WRITE,
		.addr = (uintptr_t)s->buf, .iova = (uintptr_t)s->buf,
		.length = 4096,
	};
	int ret;

	ret = xioctl(s->fd, KQP_IOCTL_REG_MR, &r);
	if (ret)
		return ret;
	s->mr = r.out_mr;
	w.sge = (struct kqp_sge){ (uintptr_t)s->buf, 64, r.out_lkey };
	ret = xioctl(s->fd, req, &p);
	undo_mr(s);
	return ret;
}

static int call_post(struct sweep *s)
{
	return post_one_recv(s, KQP_IOCTL_POST_RECV, s->cq_out.out_qp,
			     s->cq_out.out_pd);
}

static int call_create_srq(struct sweep *s)
{
	struct kqp_create_srq c = {
		.size = sizeof(c), .pd = s->pd,
		.attr = { .max_wr = 16, .max_sge = 2, .srq_limit = 4 },
	};
	int ret = xioctl(s->fd, KQP_IOCTL_CREATE_SRQ, &c);

	s->srq = c.out_srq;
	return ret;
}

static void undo_srq(struct sweep *s)
{
	struct kqp_destroy_srq d = { .size = sizeof(d), .srq = s->srq };

	xioctl(s->fd, KQP_IOCTL_DESTROY_SRQ, &d);
}

static int prep_pd_srq(struct sweep *s)
{
	int ret = call_alloc_pd(s);

	return ret ? ret : call_create_srq(s);
}

static void done_pd_srq(struct sweep *s)
{
	undo_srq(s);
	undo_pd(s);
}

/* A receive posted to an SRQ, with its MR made in the window too. */
static int call_post_srq(struct sweep *s)
{
	return post_one_recv(s, KQP_IOCTL_POST_SRQ_RECV, s->srq, s->pd);
}

/* ibv_create_qp() with an SRQ: PD, CQ and SRQ given. */
static int prep_pd_cq_srq(struct sweep *s)
{
	int ret = prep_pd_cq(s);

	return ret ? ret : call_create_srq(s);
}

static void done_pd_cq_srq(struct sweep *s)
{
	undo_srq(s);
	done_pd_cq(s);
}

static int call_srq_qp(struct sweep *s)
{
	struct kqp_create_qp *c = &s->cq_out;

	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->pd = s->pd;
	c->send_cq = c->recv_cq = s->cqc.out_cq;
	c->srq = s->srq;
	c->qp_type = KQP_QPT_RC;
	c->cap = (struct kqp_qp_cap){ 8, 0, 1, 0, 0, 0 };
	c->out_send_channel_fd = c->out_recv_channel_fd = -1;
	return xioctl(s->fd, KQP_IOCTL_CREATE_QP, c);
}

/*
 * The QP cache (kqp(7)): a refill, made in this task by writing to its
 * debugfs file, and a QP taken from it, with the default PD adopting a
 * group.  The shape is qp_on_id's, whose misses taught it; qp_cache is 0
 * meanwhile, so the worker only ever trims.
 */
static int qpc_write(struct sweep *s, int n)
{
	char v[32];
	int fd, ret = 0;

	snprintf(v, sizeof(v), "%u %d", s->dev, n);
	fd = open("/sys/kernel/debug/kqp/qp_cache", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	if (write(fd, v, strlen(v)) != (ssize_t)strlen(v))
		ret = errno ? errno : EIO;
	close(fd);
	return ret;
}

static long qpc_idle(void)
{
	struct kqp_test_qpc st;

	return kqp_test_qpc_stat(&st) ? -1 : st.idle;
}

static int prep_qpc_empty(struct sweep *s)
{
	return qpc_write(s, 0);
}

static int call_qpc_refill(struct sweep *s)
{
	s->qpc_ret = qpc_write(s, 4);
	return s->qpc_ret;
}

/*
 * Outside the window (a read there could take the failure): a whole
 * refill left a group of 4, a failed one nothing.
 */
static void undo_qpc(struct sweep *s)
{
	if (qpc_idle() != 4)
		s->qpc_bad++;
	qpc_write(s, 0);
}

static void done_qpc(struct sweep *s)
{
	if (s->qpc_ret && qpc_idle() != 0)
		s->qpc_bad++;
}

/*
 * Once, a QP like qp_on_id's teaches the cache its shape, which it takes
 * up within a second; then each time a group of that shape.
 */
static int prep_cached(struct sweep *s)
{
	struct kqp_test_qpc st;
	int ret, i;

	for (i = 0; !s->qpc_taught && i < 50; i++) {
		if (!i) {
			ret = prep_bound(s);
			if (!ret)
				ret = call_qp_on_id(s);
			if (ret)
				return ret;
			undo_qp(s);
			done_id(s);
		}
		usleep(100 * 1000);
		qpc_write(s, 0);
		s->qpc_taught = !kqp_test_qpc_stat(&st) &&
				!strcmp(st.shape, "shape rc req 8 8 1 1 0");
	}
	if (!s->qpc_taught)
		return ENOENT;
	ret = prep_bound(s);
	return ret ? ret : qpc_write(s, 4);
}

static void done_cached(struct sweep *s)
{
	done_id(s);
	qpc_write(s, 0);
}

static const struct path paths[] = {
	{ "table", NULL, call_open_table, NULL, NULL },
	{ "attach", NULL, call_attach, NULL, NULL },
	{ "create_id", NULL, call_create_id, undo_id, NULL },
	{ "listen", prep_bound, call_listen, NULL, done_id },
	{ "resolve_addr", call_create_id, call_resolve, NULL, done_id },
	{ "migrate_id", prep_migrate, call_migrate, NULL, done_migrate },
	{ "alloc_pd", NULL, call_alloc_pd, undo_pd, NULL },
	{ "default_pd", NULL, call_default_pd, undo_pd, NULL },
	{ "reg_mr", prep_pd, call_reg_mr, undo_mr, undo_pd },
	{ "comp_channel", NULL, call_channel, undo_channel, NULL },
	{ "create_cq", prep_channel, call_create_cq, undo_cq, undo_channel },
	{ "mmap_ring", prep_cq, call_mmap, undo_mmap, done_cq },
	{ "qp_on_id", prep_bound, call_qp_on_id, undo_qp, done_id },
	{ "ud_qp_on_id", prep_ud, call_ud_qp, undo_qp, done_id },
	{ "plain_qp", prep_pd_cq, call_plain_qp, undo_qp, done_pd_cq },
	{ "create_ah", prep_pd, call_create_ah, undo_ah, undo_pd },
	{ "join_mcast", prep_ud, call_join, undo_join, done_id },
	{ "attach_mcast", prep_ud_qp, call_attach_mcast, undo_attach_mcast,
	  done_ud_qp },
	{ "post_recv", prep_ud_qp, call_post, NULL, done_ud_qp },
	{ "create_srq", prep_pd, call_create_srq, undo_srq, undo_pd },
	{ "post_srq_recv", prep_pd_srq, call_post_srq, NULL, done_pd_srq },
	{ "srq_qp", prep_pd_cq_srq, call_srq_qp, undo_qp, done_pd_cq_srq },
	{ "qp_cache_refill", prep_qpc_empty, call_qpc_refill, undo_qpc,
	  done_qpc },
	{ "cached_qp_on_id", prep_cached, call_qp_on_id, undo_qp, done_cached },
};

FIXTURE(fail) {
	struct sweep s;
};

FIXTURE_SETUP(fail)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%ld/fail-nth",
		 (long)syscall(SYS_gettid));
	self->s.nth_fd = open(path, O_RDWR | O_CLOEXEC);
	if (self->s.nth_fd < 0)
		SKIP(return, "no fault injection in this kernel");
	ASSERT_EQ(0, geteuid());
	ASSERT_EQ(0, faults_setup());
	self->s.fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->s.fd);
	self->s.dev = kqp_test_rxe_index(self->s.fd);
	ASSERT_NE(KQP_NO_DEVICE, self->s.dev);
	/* The file's table, before any window: paths count on it. */
	{
		struct kqp_ctx_info info = { .size = sizeof(info) };

		ASSERT_EQ(0, xioctl(self->s.fd, KQP_IOCTL_CTX_INFO, &info));
	}
	self->s.gid_index = bench_gid_index(&self->s);
	self->s.buf = aligned_alloc(4096, 8192);
	ASSERT_NE(NULL, self->s.buf);
	memset(self->s.buf, 0, 8192);
}

FIXTURE_TEARDOWN(fail)
{
	if (self->s.nth_fd >= 0)
		close(self->s.nth_fd);
	if (self->s.fd > 0)
		close(self->s.fd);
	free(self->s.buf);
}

TEST_F_TIMEOUT(fail, every_create_path, 1800)
{
	unsigned int i;
	int total = 0, n;
	char list[512] = "";
	struct kqp_test_qpc before, after;
	int cache;

	/* The worker only trims while the cache paths run (see there). */
	cache = kqp_test_qp_cache_set(0);
	ASSERT_LE(0, cache);
	ASSERT_EQ(0, kqp_test_qpc_stat(&before));
	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		n = sweep(_metadata, &self->s, &paths[i]);
		ASSERT_LE(0, n);
		total += n;
	}
	for (i = 0; i < 140; i++)
		if (self->s.errnos[i])
			snprintf(list + strlen(list), sizeof(list) - strlen(list),
				 " %s:%u", strerrorname_np(i) ?: "?",
				 self->s.errnos[i]);
	TH_LOG("%d fault points on %zu paths; errnos:%s", total,
	       sizeof(paths) / sizeof(paths[0]), list);
	EXPECT_EQ(0, kqp_test_qp_cache_set(cache));
	/* Each failed refill left nothing, each whole one a group. */
	EXPECT_EQ(0, self->s.qpc_bad);
	/* The cached path took QPs from the cache. */
	ASSERT_EQ(0, kqp_test_qpc_stat(&after));
	EXPECT_LT(before.hits, after.hits);
	/* The sweep reached allocations at all. */
	EXPECT_LT(20, total);
}

TEST_HARNESS_MAIN
