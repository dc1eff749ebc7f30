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
