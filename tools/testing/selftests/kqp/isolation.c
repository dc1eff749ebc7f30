// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What an administrator uses to confine RDMA users binds kqp's users as
 * it binds rdma-core's: the rdma cgroup's rdma.max, and exclusive RDMA
 * network namespaces.  Built against rdma-core too, which says what the
 * limits do there.  Run as root: the tests make cgroups and namespaces.
 */
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "qp_test.h"

static int cgroup2_mount(void)
{
	struct stat st;

	if (!stat("/sys/fs/cgroup/cgroup.controllers", &st))
		return 0;
	return kqp_test_sh("mount -t cgroup2 none /sys/fs/cgroup");
}

static struct ibv_context *open_rxe(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), kqp_test_rdma_dev()))
			ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	return ctx;
}

/* Tests that need more than the harness's default 30 s under TCG. */
FIXTURE(slow) {
	int unused;
};

FIXTURE_SETUP(slow)
{
}

FIXTURE_TEARDOWN(slow)
{
}

/* rdma.max's hca_object bounds the verbs objects a cgroup holds. */
TEST(rdma_cgroup_hca_object)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd[4];
	char cg[128];
	int i;

	ASSERT_EQ(0, geteuid());
	ASSERT_EQ(0, cgroup2_mount());
	ASSERT_EQ(0, kqp_test_sh("echo +rdma > /sys/fs/cgroup/cgroup.subtree_control"));
	snprintf(cg, sizeof(cg), "/sys/fs/cgroup/kqp-rdma-%d", getpid());
	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, kqp_test_sh("echo '%s hca_handle=max hca_object=3' > %s/rdma.max",
				 kqp_test_rdma_dev(), cg));
	ASSERT_EQ(0, kqp_test_sh("echo %d > %s/cgroup.procs", getpid(), cg));

	ctx = open_rxe();
	ASSERT_NE(NULL, ctx);
	for (i = 0; i < 3; i++) {
		pd[i] = ibv_alloc_pd(ctx);
		ASSERT_NE(NULL, pd[i]);
	}
	errno = 0;
	pd[3] = ibv_alloc_pd(ctx);
	EXPECT_EQ(NULL, pd[3]);
	EXPECT_EQ(EAGAIN, errno);
	/* A freed object is uncharged. */
	ASSERT_EQ(0, ibv_dealloc_pd(pd[2]));
	pd[2] = ibv_alloc_pd(ctx);
	EXPECT_NE(NULL, pd[2]);
	for (i = 0; i < 3; i++)
		if (pd[i])
			ibv_dealloc_pd(pd[i]);
	ibv_close_device(ctx);

	kqp_test_sh("echo %d > /sys/fs/cgroup/cgroup.procs", getpid());
	rmdir(cg);
}

/* What `rdma resource show` counts on the bench's device. */
struct res_counts {
	int pd, cq, mr;
};

/* 0 with *@c filled in, or -1. */
static int res_counts(struct res_counts *c)
{
	char line[512], key[64], *tok, *save;
	int found = 0;
	FILE *f;

	f = popen("rdma resource show 2>/dev/null", "r");
	if (!f)
		return -1;
	snprintf(key, sizeof(key), "%s:", kqp_test_rdma_dev());
	while (fgets(line, sizeof(line), f)) {
		/* "0: rxe0: pd 1 cq 0 qp 1 cm_id 0 mr 0 ctx 0 srq 0" */
		tok = strtok_r(line, " \n", &save);
		tok = tok ? strtok_r(NULL, " \n", &save) : NULL;
		if (!tok || strcmp(tok, key))
			continue;
		*c = (struct res_counts){ -1, -1, -1 };
		while ((tok = strtok_r(NULL, " \n", &save))) {
			char *val = strtok_r(NULL, " \n", &save);

			if (!val)
				break;
			if (!strcmp(tok, "pd"))
				c->pd = atoi(val);
			else if (!strcmp(tok, "cq"))
				c->cq = atoi(val);
			else if (!strcmp(tok, "mr"))
				c->mr = atoi(val);
		}
		found = c->pd >= 0 && c->cq >= 0 && c->mr >= 0;
	}
	if (pclose(f) || !found)
		return -1;
	return 0;
}

/*
 * An IBV_EVENT_CQ_ERR on @ctx's async fd: a QP whose receives, flushed
 * when it moves to the error state, overflow its one-entry @cq.  0, or -1.
 */
static int cq_overflow_event(struct ibv_context *ctx, struct ibv_pd *pd,
			     struct ibv_mr *mr, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_sge sge = { .addr = (uintptr_t)mr->addr, .length = 64,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_async_event ev;
	struct ibv_qp *qp;
	int i;

	qp = ibv_create_qp(pd, &ia);
	if (!qp || ibv_modify_qp(qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				 IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	for (i = 0; i < 16; i++)
		if (ibv_post_recv(qp, &wr, &bad))
			return -1;
	qa.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
		return -1;
	if (poll(&pfd, 1, 10000) != 1 || ibv_get_async_event(ctx, &ev))
		return -1;
	i = ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == cq;
	ibv_ack_async_event(&ev);
	return i ? 0 : -1;
}

/*
 * fork_child_objects' child: open the device afresh, make a PD, an MR
 * and a CQ, and an async event of its own; tell the parent (one byte: 0,
 * or the step that failed), and exit without freeing anything when the
 * parent says so.
 */
static int fork_child_work(int ready_fd, int go_fd)
{
	static char buf[1 << 20];
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr = NULL;
	struct ibv_cq *cq = NULL;
	char step = 0, c;

	ctx = open_rxe();
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	if (pd)
		mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (mr)
		cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	if (!cq)
		step = !ctx ? 1 : !pd ? 2 : !mr ? 3 : 4;
	else if (cq_overflow_event(ctx, pd, mr, cq))
		step = 5;
	if (write(ready_fd, &step, 1) != 1)
		return 6;
	if (read(go_fd, &c, 1) < 0)
		return 7;
	return step;
}

/*
 * A child after fork() that opens the device and makes objects owns
 * them: they go when it exits, though the parent, which had the device
 * open before the fork, lives on; and the child's async events are the
 * child's.  rdma-core's child has a uverbs file of its own; kqp's must
 * not put its objects in the parent's session.
 */
TEST_F_TIMEOUT(slow, fork_child_objects, 120)
{
	struct res_counts before, during, after;
	struct pollfd apfd = { .events = POLLIN };
	int ready[2], go[2], status, i, qp_cache;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	char step;
	pid_t pid;

	ASSERT_EQ(0, geteuid());
	/* Counts of the device's objects: kqp's QP cache kept out. */
	qp_cache = kqp_test_qp_cache_off();
	ASSERT_LE(0, qp_cache) TH_LOG("kqp's QP cache did not empty");
	ctx = open_rxe();
	ASSERT_NE(NULL, ctx);
	pd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, pd);
	apfd.fd = ctx->async_fd;
	ASSERT_EQ(0, res_counts(&before)) TH_LOG("no counts from rdma resource");
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(ready[0]);
		close(go[1]);
		_exit(fork_child_work(ready[1], go[0]));
	}
	close(ready[1]);
	close(go[0]);
	ASSERT_EQ(1, read(ready[0], &step, 1));
	EXPECT_EQ(0, step) TH_LOG("child step %d failed", step);
	/* The child's async event went to the child only. */
	EXPECT_EQ(0, poll(&apfd, 1, 0));
	/* The count sees the child's objects while it lives... */
	ASSERT_EQ(0, res_counts(&during));
	EXPECT_LE(before.pd + 1, during.pd);
	EXPECT_LE(before.mr + 1, during.mr);
	EXPECT_LE(before.cq + 1, during.cq);
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	close(ready[0]);
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));

	/* ...and none of them once it is gone (allow the release a moment). */
	for (i = 0; i < 50; i++) {
		ASSERT_EQ(0, res_counts(&after));
		if (after.pd == before.pd && after.mr == before.mr &&
		    after.cq == before.cq)
			break;
		usleep(100000);
	}
	EXPECT_EQ(before.pd, after.pd);
	EXPECT_EQ(before.mr, after.mr);
	EXPECT_EQ(before.cq, after.cq);
	EXPECT_EQ(0, poll(&apfd, 1, 0));

	/* The parent's own objects were never the child's to take. */
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx));
	kqp_test_qp_cache_set(qp_cache);
}

/*
 * With `rdma system set netns exclusive`, a device belongs to one
 * network namespace; a process in another cannot use it.
 */
TEST_F_TIMEOUT(slow, netns_exclusive, 120)
{
	int status, i;
	pid_t pid;

	ASSERT_EQ(0, geteuid());
	ASSERT_EQ(0, kqp_test_sh("rdma system set netns exclusive"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct ibv_context *ctx;
		struct ibv_pd *pd;

		if (unshare(CLONE_NEWNET))
			_exit(1);
		ctx = open_rxe();
		if (!ctx)
			_exit(0);
		pd = ibv_alloc_pd(ctx);
		_exit(pd ? 2 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* Back to shared once the namespace is gone, which takes a moment. */
	for (i = 0; i < 100; i++) {
		if (!kqp_test_sh("rdma system set netns shared 2>/dev/null"))
			break;
		usleep(100000);
	}
	EXPECT_GT(100, i);
	/* In its own namespace the device works as before. */
	{
		struct ibv_context *ctx = open_rxe();
		struct ibv_pd *pd;

		ASSERT_NE(NULL, ctx);
		pd = ibv_alloc_pd(ctx);
		EXPECT_NE(NULL, pd);
		if (pd)
			ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
	}
}

TEST_HARNESS_MAIN
