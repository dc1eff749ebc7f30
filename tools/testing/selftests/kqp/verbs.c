// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The libibverbs calls device tools make, and libibverbs' pure functions.
 * libibverbs API only: built against libkqp (verbs) and against rdma-core
 * (verbs_rdmacm), and both run in every guest, so each expectation here
 * is what libibverbs itself does.
 */
#include <endian.h>
#include <net/if.h>
#include <infiniband/verbs.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

/* Exported by libibverbs, declared only in its private headers. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

/* The bench's device, from a list the caller frees. */
static struct ibv_device *find_dev(struct ibv_device ***list)
{
	struct ibv_device **l;

	*list = ibv_get_device_list(NULL);
	if (!*list)
		return NULL;
	for (l = *list; *l; l++)
		if (!strcmp(ibv_get_device_name(*l), kqp_test_rdma_dev()))
			return *l;
	return NULL;
}

/* The kernel's index of the device, as `rdma dev show` prints it. */
static int rdma_tool_index(const char *name)
{
	char cmd[128], line[256], dev[64];
	int index = -1, i;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma dev show %s 2>/dev/null", name);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f) &&
	    sscanf(line, "%d: %63[^:]", &i, dev) == 2 && !strcmp(dev, name))
		index = i;
	pclose(f);
	return index;
}

FIXTURE(dev) {
	struct ibv_device **list;
	struct ibv_device *dev;
	struct ibv_context *ctx;
};

FIXTURE_SETUP(dev)
{
	self->dev = find_dev(&self->list);
	ASSERT_NE(NULL, self->dev) TH_LOG("%s not listed",
					  kqp_test_rdma_dev());
	self->ctx = ibv_open_device(self->dev);
	ASSERT_NE(NULL, self->ctx) TH_LOG("ibv_open_device: %s",
					  strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	if (self->ctx)
		EXPECT_EQ(0, ibv_close_device(self->ctx));
	ibv_free_device_list(self->list);
}

TEST_F(dev, open_device)
{
	struct ibv_device_attr da;
	struct ibv_context *ctx2;
	struct ibv_pd *pd;

	EXPECT_EQ(self->dev, self->ctx->device);
	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	EXPECT_EQ(ibv_get_device_guid(self->dev), da.node_guid);
	EXPECT_LE(1, da.phys_port_cnt);
	EXPECT_LE(1, self->ctx->num_comp_vectors);
	/* Each open is a context of its own, which can make objects. */
	ctx2 = ibv_open_device(self->dev);
	ASSERT_NE(NULL, ctx2);
	EXPECT_NE(self->ctx, ctx2);
	pd = ibv_alloc_pd(ctx2);
	ASSERT_NE(NULL, pd);
	EXPECT_EQ(ctx2, pd->context);
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	EXPECT_EQ(0, ibv_close_device(ctx2));
	/* The first one is unaffected. */
	EXPECT_EQ(0, ibv_query_device(self->ctx, &da));
}

/*
 * The optional access bits (IBV_ACCESS_OPTIONAL_RANGE: relaxed ordering
 * and those after it) are hints a device without them ignores, as
 * perftest relies on; an unknown bit outside that range is refused.
 */
TEST_F(dev, reg_mr_optional_access)
{
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	void *buf;

	buf = aligned_alloc(4096, 4096);
	ASSERT_NE(NULL, buf);
	pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd);
	mr = ibv_reg_mr(pd, buf, 4096, rw | IBV_ACCESS_RELAXED_ORDERING);
	ASSERT_NE(NULL, mr) TH_LOG("relaxed ordering: %s", strerror(errno));
	EXPECT_EQ(pd, mr->pd);
	EXPECT_EQ(buf, mr->addr);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	/* Every bit of the range, known to the kernel or not. */
	mr = ibv_reg_mr(pd, buf, 4096, rw | IBV_ACCESS_OPTIONAL_RANGE);
	ASSERT_NE(NULL, mr) TH_LOG("optional range: %s", strerror(errno));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	/* Bits no one defines, below and above the range. */
	EXPECT_EQ(NULL, ibv_reg_mr(pd, buf, 4096, rw | (1 << 14)));
	EXPECT_TRUE(errno == EINVAL || errno == EOPNOTSUPP)
		TH_LOG("bit 14: %s", strerror(errno));
	EXPECT_EQ(NULL, ibv_reg_mr(pd, buf, 4096, rw | (1 << 30)));
	EXPECT_TRUE(errno == EINVAL || errno == EOPNOTSUPP)
		TH_LOG("bit 30: %s", strerror(errno));
	/* An optional bit does not stand in for local write. */
	EXPECT_EQ(NULL, ibv_reg_mr(pd, buf, 4096, IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_RELAXED_ORDERING));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
	free(buf);
}

/*
 * Any depth from 1 to the device's max_cqe, and the depth the device
 * gave in ibv_cq->cqe; past max_cqe, EINVAL.  The depths just above a
 * power of two are the ones a CQ rounded up past max_cqe would refuse.
 */
TEST_F(dev, cq_depths)
{
	struct ibv_device_attr da;
	struct ibv_cq *cq;
	int depth[4], n = 0, pow = 1, i;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	ASSERT_LE(2, da.max_cqe);
	while (pow <= da.max_cqe / 2)
		pow *= 2;
	depth[n++] = 1;
	depth[n++] = pow;
	if (pow < da.max_cqe)
		depth[n++] = pow + 1;
	depth[n++] = da.max_cqe;
	for (i = 0; i < n; i++) {
		cq = ibv_create_cq(self->ctx, depth[i], NULL, NULL, 0);
		ASSERT_NE(NULL, cq) TH_LOG("%d entries (max_cqe %d): %s",
					   depth[i], da.max_cqe,
					   strerror(errno));
		EXPECT_LE(depth[i], cq->cqe) TH_LOG("%d entries", depth[i]);
		EXPECT_EQ(0, ibv_destroy_cq(cq));
	}
	EXPECT_EQ(NULL, ibv_create_cq(self->ctx, da.max_cqe + 1, NULL, NULL,
				      0));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(dev, device_index)
{
	int index = rdma_tool_index(kqp_test_rdma_dev());

	ASSERT_LE(0, index) TH_LOG("rdma dev show failed");
	EXPECT_EQ(index, ibv_get_device_index(self->dev));
}

TEST_F(dev, gid_ex_matches_gid)
{
	struct ibv_port_attr pa;
	struct ibv_gid_entry e;
	union ibv_gid gid;
	unsigned int ifindex = if_nametoindex(kqp_test_netdev());
	int i, used = 0, ret;

	ASSERT_NE(0, ifindex);
	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	ASSERT_LE(1, pa.gid_tbl_len);
	for (i = 0; i < pa.gid_tbl_len; i++) {
		ASSERT_EQ(0, ibv_query_gid(self->ctx, 1, i, &gid));
		memset(&e, 0xa5, sizeof(e));
		ret = ibv_query_gid_ex(self->ctx, 1, i, &e, 0);
		if (!gid.global.subnet_prefix && !gid.global.interface_id) {
			EXPECT_EQ(ENODATA, ret) TH_LOG("unused entry %d", i);
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("entry %d: %s", i, strerror(ret));
		used++;
		EXPECT_EQ(0, memcmp(&gid, &e.gid, sizeof(gid)));
		EXPECT_EQ(i, e.gid_index);
		EXPECT_EQ(1, e.port_num);
		/* RoCE on rxe: v1 and v2 entries, on the bench's netdev. */
		EXPECT_TRUE(e.gid_type == IBV_GID_TYPE_ROCE_V1 ||
			    e.gid_type == IBV_GID_TYPE_ROCE_V2);
		EXPECT_EQ(ifindex, e.ndev_ifindex);
	}
	EXPECT_LE(2, used);
	/* Past the table. */
	EXPECT_EQ(EINVAL, ibv_query_gid_ex(self->ctx, 1, pa.gid_tbl_len, &e,
					   0));
}

/*
 * The port's flags, as libibverbs fills them from the kernel's: a RoCE
 * port (rxe) requires a GRH in every address.
 */
TEST_F(dev, port_flags)
{
	struct ibv_port_attr pa;

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &pa));
	ASSERT_EQ(IBV_LINK_LAYER_ETHERNET, pa.link_layer);
	EXPECT_EQ(IBV_QPF_GRH_REQUIRED, pa.flags);
}

TEST_F(dev, gid_table)
{
	struct ibv_gid_entry t[256], e;
	ssize_t n, i;

	n = ibv_query_gid_table(self->ctx, t, 256, 0);
	ASSERT_LE(2, n) TH_LOG("%zd: %s", n, strerror(n < 0 ? -n : 0));
	for (i = 0; i < n; i++) {
		ASSERT_EQ(0, ibv_query_gid_ex(self->ctx, t[i].port_num,
					      t[i].gid_index, &e, 0));
		EXPECT_EQ(0, memcmp(&e, &t[i], sizeof(e)));
	}
	/* Room for one entry too few: the whole call fails. */
	EXPECT_EQ(-EINVAL, ibv_query_gid_table(self->ctx, t, n - 1, 0));
}

TEST_F(dev, pkey_index)
{
	__be16 pkey;

	ASSERT_EQ(0, ibv_query_pkey(self->ctx, 1, 0, &pkey));
	EXPECT_EQ(htobe16(0xffff), pkey);
	EXPECT_EQ(0, ibv_get_pkey_index(self->ctx, 1, htobe16(0xffff)));
	EXPECT_EQ(-1, ibv_get_pkey_index(self->ctx, 1, htobe16(0x1234)));
}

TEST(sysfs)
{
	char dir[256], buf[64], want[64];
	uint64_t guid = kqp_test_sysfs_guid(kqp_test_rdma_dev());
	const uint8_t *g = (const uint8_t *)&guid;

	EXPECT_STREQ("/sys", ibv_get_sysfs_path());
	snprintf(dir, sizeof(dir), "%s/class/infiniband/%s",
		 ibv_get_sysfs_path(), kqp_test_rdma_dev());
	snprintf(want, sizeof(want), "%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
	/* The length without the newline, and a terminated string. */
	EXPECT_EQ((int)strlen(want),
		  ibv_read_sysfs_file(dir, "node_guid", buf, sizeof(buf)));
	EXPECT_STREQ(want, buf);
	EXPECT_EQ(-1, ibv_read_sysfs_file(dir, "no_such_file", buf,
					  sizeof(buf)));
	/* Too small for the contents and a NUL. */
	EXPECT_EQ(-1, ibv_read_sysfs_file(dir, "node_guid", buf, 8));
}

/* Every rate's two conversions, and their inverses. */
TEST(rates)
{
	static const struct {
		enum ibv_rate rate;
		int mult, mbps;
	} t[] = {
		{ IBV_RATE_MAX, -1, -1 },
		{ IBV_RATE_2_5_GBPS, 1, 2500 },
		{ IBV_RATE_10_GBPS, 4, 10000 },
		{ IBV_RATE_30_GBPS, 12, 30000 },
		{ IBV_RATE_5_GBPS, 2, 5000 },
		{ IBV_RATE_20_GBPS, 8, 20000 },
		{ IBV_RATE_40_GBPS, 16, 40000 },
		{ IBV_RATE_60_GBPS, 24, 60000 },
		{ IBV_RATE_80_GBPS, 32, 80000 },
		{ IBV_RATE_120_GBPS, 48, 120000 },
		{ IBV_RATE_14_GBPS, -1, 14062 },
		{ IBV_RATE_56_GBPS, -1, 56250 },
		{ IBV_RATE_112_GBPS, -1, 112500 },
		{ IBV_RATE_168_GBPS, -1, 168750 },
		{ IBV_RATE_25_GBPS, -1, 25781 },
		{ IBV_RATE_100_GBPS, -1, 103125 },
		{ IBV_RATE_200_GBPS, -1, 206250 },
		{ IBV_RATE_300_GBPS, -1, 309375 },
		{ IBV_RATE_28_GBPS, 11, 28125 },
		{ IBV_RATE_50_GBPS, 20, 53125 },
		{ IBV_RATE_400_GBPS, 160, 425000 },
		{ IBV_RATE_600_GBPS, 240, 637500 },
		{ IBV_RATE_800_GBPS, 320, 850000 },
		{ IBV_RATE_1200_GBPS, 480, 1275000 },
	};
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		EXPECT_EQ(t[i].mult, ibv_rate_to_mult(t[i].rate))
			TH_LOG("rate %d", t[i].rate);
		EXPECT_EQ(t[i].mbps, ibv_rate_to_mbps(t[i].rate))
			TH_LOG("rate %d", t[i].rate);
		if (t[i].mult > 0)
			EXPECT_EQ(t[i].rate, mult_to_ibv_rate(t[i].mult));
		if (t[i].mbps > 0)
			EXPECT_EQ(t[i].rate, mbps_to_ibv_rate(t[i].mbps));
	}
	EXPECT_EQ(-1, ibv_rate_to_mult((enum ibv_rate)99));
	EXPECT_EQ(-1, ibv_rate_to_mbps((enum ibv_rate)99));
	EXPECT_EQ(IBV_RATE_MAX, mult_to_ibv_rate(3));
	EXPECT_EQ(IBV_RATE_MAX, mult_to_ibv_rate(0));
	EXPECT_EQ(IBV_RATE_MAX, mbps_to_ibv_rate(100000));
}

/* Names for printing: never NULL, and distinct where the values are. */
TEST(strings)
{
	const char *a, *b;
	int i;

	a = ibv_node_type_str(IBV_NODE_CA);
	b = ibv_node_type_str(IBV_NODE_RNIC);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	EXPECT_STRNE(a, b);
	EXPECT_NE(NULL, ibv_node_type_str((enum ibv_node_type)99));
	/* Worded differently by each library; the state's name is in it. */
	EXPECT_NE(NULL, strcasestr(ibv_port_state_str(IBV_PORT_ACTIVE),
				   "active"));
	EXPECT_NE(NULL, strcasestr(ibv_port_state_str(IBV_PORT_DOWN), "down"));
	EXPECT_NE(NULL, ibv_port_state_str((enum ibv_port_state)99));
	for (i = IBV_EVENT_CQ_ERR; i <= IBV_EVENT_WQ_FATAL; i++) {
		a = ibv_event_type_str((enum ibv_event_type)i);
		ASSERT_NE(NULL, a);
		EXPECT_NE(0, strlen(a));
		if (i > IBV_EVENT_CQ_ERR)
			EXPECT_STRNE(ibv_event_type_str((enum ibv_event_type)(i - 1)), a);
	}
	EXPECT_NE(NULL, ibv_event_type_str((enum ibv_event_type)999));
}

/* Kernels since 5.13 copy pinned pages at fork: nothing to set up. */
TEST(fork_unneeded)
{
	EXPECT_EQ(0, ibv_fork_init());
	EXPECT_EQ(IBV_FORK_UNNEEDED, ibv_is_fork_initialized());
}

TEST_HARNESS_MAIN
