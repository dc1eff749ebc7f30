// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KQP_IOCTL_QUERY: the device node, the ABI version and the device table,
 * including RDMA devices coming and going.
 */
#include <stddef.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <infiniband/verbs.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

#define POISON 0xa5

/* Query into @devs (room for @cap entries of @stride bytes). */
static int query(int fd, struct kqp_query *q, void *devs, uint32_t cap,
		 uint32_t stride)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->num_devices = cap;
	q->device_info_size = stride;
	q->devices = (uintptr_t)devs;
	return kqp_test_ioctl(fd, KQP_IOCTL_QUERY, q);
}

/* Index of the entry named @name in @devs, or -1. */
static int find(const struct kqp_device_info *devs, uint32_t n,
		const char *name)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!strncmp(devs[i].name, name, sizeof(devs[i].name)))
			return i;
	return -1;
}

static int is_listed(int fd, const char *name)
{
	struct kqp_device_info devs[16];
	struct kqp_query q;

	if (query(fd, &q, devs, 16, sizeof(devs[0])))
		return -1;
	return find(devs, q.num_devices < 16 ? q.num_devices : 16, name) >= 0;
}

FIXTURE(query) {
	int fd;
};

FIXTURE_SETUP(query)
{
	self->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", KQP_DEV, strerror(errno));
}

FIXTURE_TEARDOWN(query)
{
	close(self->fd);
}

TEST(device_node)
{
	struct stat st;

	ASSERT_EQ(0, stat(KQP_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 07777);
	/* A misc device: major 10. */
	EXPECT_EQ(10, major(st.st_rdev));
}

TEST_F(query, abi_version)
{
	struct kqp_query q;

	ASSERT_EQ(0, query(self->fd, &q, NULL, 0, 0));
	EXPECT_EQ(KQP_ABI_VERSION, q.out_abi_version);
	EXPECT_EQ(0, q.out_features);
	EXPECT_LE(1, q.num_devices);
	EXPECT_EQ(sizeof(q), q.size);
	EXPECT_EQ(0, q.flags);
}

TEST_F(query, lists_rxe)
{
	const char *name = kqp_test_rdma_dev();
	struct kqp_device_info devs[16];
	struct kqp_query q;
	uint32_t n, i;
	int at;

	memset(devs, 0, sizeof(devs));
	ASSERT_EQ(0, query(self->fd, &q, devs, 16, sizeof(devs[0])));
	n = q.num_devices;
	ASSERT_LE(1, n);
	ASSERT_GE(16, n);
	at = find(devs, n, name);
	ASSERT_LE(0, at) TH_LOG("%s not listed", name);
	EXPECT_EQ(1, devs[at].node_type);	/* RDMA_NODE_IB_CA */
	EXPECT_EQ(1, devs[at].phys_port_cnt);
	EXPECT_EQ(0, devs[at].__reserved);
	EXPECT_NE(0, devs[at].node_guid);
	EXPECT_EQ(kqp_test_sysfs_guid(name), devs[at].node_guid);
	/* Increasing index order, no duplicates. */
	for (i = 1; i < n; i++)
		EXPECT_LT(devs[i - 1].index, devs[i].index);
}

TEST_F(query, capacity_respected)
{
	uint8_t buf[4 * sizeof(struct kqp_device_info)];
	struct kqp_query q;
	uint32_t total;
	size_t i;

	ASSERT_EQ(0, query(self->fd, &q, NULL, 0, 0));
	total = q.num_devices;
	ASSERT_LE(1, total);

	/* Room for none: nothing written, the total still reported. */
	memset(buf, POISON, sizeof(buf));
	ASSERT_EQ(0, query(self->fd, &q, buf, 0, sizeof(struct kqp_device_info)));
	EXPECT_EQ(total, q.num_devices);
	for (i = 0; i < sizeof(buf); i++)
		ASSERT_EQ(POISON, buf[i]);

	/* Room for one: exactly one entry written. */
	memset(buf, POISON, sizeof(buf));
	ASSERT_EQ(0, query(self->fd, &q, buf, 1, sizeof(struct kqp_device_info)));
	EXPECT_EQ(total, q.num_devices);
	EXPECT_NE(POISON, buf[offsetof(struct kqp_device_info, __reserved)]);
	for (i = sizeof(struct kqp_device_info); i < sizeof(buf); i++)
		ASSERT_EQ(POISON, buf[i]);
}

TEST_F(query, entry_size)
{
	const size_t min = offsetofend(struct kqp_device_info, name);
	const size_t full = sizeof(struct kqp_device_info);
	uint8_t buf[2 * (sizeof(struct kqp_device_info) + 16)];
	struct kqp_device_info info;
	struct kqp_query q;
	size_t i;

	/* Smaller than the first version's entry, with entries asked for. */
	EXPECT_EQ(EINVAL, query(self->fd, &q, buf, 1, min - 1));
	EXPECT_EQ(EINVAL, query(self->fd, &q, buf, 1, 0));
	/* ... but not when none are asked for. */
	EXPECT_EQ(0, query(self->fd, &q, NULL, 0, 0));

	/* A newer caller's larger entries: the stride is honoured and the
	 * bytes the kernel does not know are left alone. */
	memset(buf, POISON, sizeof(buf));
	ASSERT_EQ(0, query(self->fd, &q, buf, 1, full + 16));
	memcpy(&info, buf, sizeof(info));
	EXPECT_NE(0, info.node_guid);
	for (i = full; i < sizeof(buf); i++)
		ASSERT_EQ(POISON, buf[i]);
}

/*
 * rdma link delete / add of the bench's rxe device: the table follows, and
 * so does the library's list (an empty list with errno ENODEV, not NULL).
 */
TEST_F_TIMEOUT(query, hotplug, 120)
{
	const char *name = kqp_test_rdma_dev();
	const char *netdev = kqp_test_netdev();
	struct ibv_device **list;
	int n = -1, rc;

	ASSERT_EQ(1, is_listed(self->fd, name));

	ASSERT_EQ(0, kqp_test_sh("rdma link delete %s", name));
	rc = is_listed(self->fd, name);
	errno = 0;
	list = ibv_get_device_list(&n);
	/* Put the device back before judging, so later tests still have it. */
	ASSERT_EQ(0, kqp_test_sh("rdma link add %s type rxe netdev %s",
				 name, netdev));

	EXPECT_EQ(0, rc);
	ASSERT_NE(NULL, list);
	EXPECT_EQ(0, n);
	EXPECT_EQ(NULL, list[0]);
	EXPECT_EQ(ENODEV, errno);
	ibv_free_device_list(list);

	EXPECT_EQ(1, is_listed(self->fd, name));
}

TEST_HARNESS_MAIN
