// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libkqp's libibverbs device enumeration.
 */
#include <sys/stat.h>
#include <infiniband/verbs.h>

/* module_not_loaded runs on a bare host; the rest need the bench. */
#define KQP_TEST_HOST
#include "kselftest_harness.h"
#include "kqp_test.h"

static struct ibv_device *find(struct ibv_device **list, const char *name)
{
	for (; *list; list++)
		if (!strcmp(ibv_get_device_name(*list), name))
			return *list;
	return NULL;
}

TEST(lists_rxe_by_name)
{
	const char *name = kqp_test_rdma_dev();
	struct ibv_device **list, *dev;
	int n = -1;

	KQP_TEST_NEED_BENCH();
	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list) TH_LOG("ibv_get_device_list: %s", strerror(errno));
	ASSERT_LE(1, n);
	EXPECT_EQ(NULL, list[n]);
	dev = find(list, name);
	ASSERT_NE(NULL, dev) TH_LOG("%s not listed", name);
	EXPECT_EQ(IBV_NODE_CA, dev->node_type);
	EXPECT_EQ(IBV_TRANSPORT_IB, dev->transport_type);
	EXPECT_STREQ(name, dev->name);
	EXPECT_EQ(kqp_test_sysfs_guid(name), ibv_get_device_guid(dev));
	ibv_free_device_list(list);
}

TEST(null_count_allowed)
{
	struct ibv_device **list;

	KQP_TEST_NEED_BENCH();
	list = ibv_get_device_list(NULL);
	ASSERT_NE(NULL, list);
	EXPECT_NE(NULL, find(list, kqp_test_rdma_dev()));
	ibv_free_device_list(list);
	ibv_free_device_list(NULL);
}

/* Devices are shared between lists and outlive each list's free. */
TEST(lists_share_devices)
{
	struct ibv_device **a, **b, *da, *db;

	KQP_TEST_NEED_BENCH();
	a = ibv_get_device_list(NULL);
	ASSERT_NE(NULL, a);
	b = ibv_get_device_list(NULL);
	ASSERT_NE(NULL, b);
	da = find(a, kqp_test_rdma_dev());
	db = find(b, kqp_test_rdma_dev());
	ASSERT_NE(NULL, da);
	EXPECT_EQ(da, db);
	ibv_free_device_list(a);
	EXPECT_STREQ(kqp_test_rdma_dev(), ibv_get_device_name(db));
	ibv_free_device_list(b);
}

/*
 * Run by the bench after rmmod kqp (-t module_not_loaded): no /dev/kqp
 * means NULL with errno ENOENT.  With the module loaded it is skipped.
 */
TEST(module_not_loaded)
{
	struct ibv_device **list;
	struct stat st;
	int n = -1;

	if (!stat(KQP_DEV, &st))
		SKIP(return, "kqp is loaded; the bench runs this after rmmod");
	errno = 0;
	list = ibv_get_device_list(&n);
	EXPECT_EQ(NULL, list);
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(0, n);
}

TEST_HARNESS_MAIN
