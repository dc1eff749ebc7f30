// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The libibverbs calls device tools make, and libibverbs' pure functions.
 * libibverbs API only: built against libkqp (verbs) and against rdma-core
 * (verbs_rdmacm), and both run in every guest, so each expectation here
 * is what libibverbs itself does.
 */
#include <endian.h>
#include <net/if.h>
#include <poll.h>
#include <time.h>
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
	/* Bits no one defines, below and above the range: EINVAL. */
	EXPECT_EQ(NULL, ibv_reg_mr(pd, buf, 4096, rw | (1 << 14)));
	EXPECT_EQ(EINVAL, errno) TH_LOG("bit 14: %s", strerror(errno));
	EXPECT_EQ(NULL, ibv_reg_mr(pd, buf, 4096, rw | (1 << 30)));
	EXPECT_EQ(EINVAL, errno) TH_LOG("bit 30: %s", strerror(errno));
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

/*
 * What ibv_query_device advertises works: a library must not claim SRQs
 * or memory windows it then refuses (rxe has both, so rdma-core makes
 * them; libkqp has neither, so it must advertise neither).
 */
TEST_F(dev, caps_work)
{
	struct ibv_srq_init_attr si = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_device_attr da;
	struct ibv_srq *srq;
	struct ibv_mw *mw;
	struct ibv_pd *pd;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, pd);

	srq = ibv_create_srq(pd, &si);
	if (da.max_srq) {
		EXPECT_NE(NULL, srq) TH_LOG("max_srq %d, yet %s", da.max_srq,
					    strerror(errno));
	} else {
		EXPECT_EQ(NULL, srq);
		EXPECT_EQ(0, da.max_srq_wr);
		EXPECT_EQ(0, da.max_srq_sge);
		EXPECT_FALSE(da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE);
	}
	if (srq && (da.device_cap_flags & IBV_DEVICE_SRQ_RESIZE)) {
		struct ibv_srq_attr sa = { .max_wr = 8 };

		EXPECT_EQ(0, ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR));
	}
	if (srq)
		EXPECT_EQ(0, ibv_destroy_srq(srq));

	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	if (da.max_mw && (da.device_cap_flags & IBV_DEVICE_MEM_WINDOW)) {
		EXPECT_NE(NULL, mw) TH_LOG("max_mw %d, yet %s", da.max_mw,
					   strerror(errno));
	} else {
		EXPECT_EQ(NULL, mw);
		EXPECT_EQ(0, da.max_mw);
		EXPECT_FALSE(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	}
	if (mw)
		EXPECT_EQ(0, ibv_dealloc_mw(mw));
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	if (da.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A |
				   IBV_DEVICE_MEM_WINDOW_TYPE_2B)) {
		EXPECT_NE(NULL, mw) TH_LOG("type 2 advertised, yet %s",
					   strerror(errno));
	} else {
		EXPECT_EQ(NULL, mw);
	}
	if (mw)
		EXPECT_EQ(0, ibv_dealloc_mw(mw));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
}

/* Milliseconds since some fixed point. */
static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* Set the bench's netdev, the rxe port's, down or up; 0 or -1. */
static int set_link(bool up)
{
	return kqp_test_sh("ip link set dev %s %s", kqp_test_netdev(),
			   up ? "up" : "down") ? -1 : 0;
}

/* Wait up to @ms for port 1 to be in @state; 0 or -1. */
static int wait_port_state(struct ibv_context *ctx, enum ibv_port_state state,
			   int ms)
{
	long end = now_ms() + ms;
	struct ibv_port_attr pa;

	do {
		if (!ibv_query_port(ctx, 1, &pa) && pa.state == state)
			return 0;
		usleep(20000);
	} while (now_ms() < end);
	return -1;
}

/*
 * The first async event of @type within @ms, acked, in *@ev; those before
 * it are acked and passed over (a link change also changes the GID table:
 * IBV_EVENT_GID_CHANGE).  0, or -1 on a timeout.
 */
static int wait_async_event(struct ibv_context *ctx, enum ibv_event_type type,
			    int ms, struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	long end = now_ms() + ms, left;

	while ((left = end - now_ms()) > 0) {
		if (poll(&pfd, 1, left) != 1)
			continue;
		if (ibv_get_async_event(ctx, ev))
			return -1;
		ibv_ack_async_event(ev);
		if (ev->event_type == type)
			return 0;
	}
	return -1;
}

FIXTURE(port) {
	struct ibv_device **list;
	struct ibv_context *ctx;
};

FIXTURE_SETUP(port)
{
	struct ibv_device *dev = find_dev(&self->list);

	ASSERT_NE(NULL, dev);
	self->ctx = ibv_open_device(dev);
	ASSERT_NE(NULL, self->ctx);
	/* Up, whatever a test killed before its teardown left. */
	ASSERT_EQ(0, set_link(true));
	ASSERT_EQ(0, wait_port_state(self->ctx, IBV_PORT_ACTIVE, 10000));
}

/* The link is back, and the port active, for the tests after. */
FIXTURE_TEARDOWN(port)
{
	EXPECT_EQ(0, set_link(true));
	if (self->ctx) {
		EXPECT_EQ(0, wait_port_state(self->ctx, IBV_PORT_ACTIVE,
					     10000));
		EXPECT_EQ(0, ibv_close_device(self->ctx));
	}
	ibv_free_device_list(self->list);
}

/*
 * The device says it reports PORT_ACTIVE; the context gets port events.
 * Its waits add up to 25 s: more than the harness's default 30 s once the
 * ip commands are counted, on the debug kernel on a busy host.
 */
TEST_F_TIMEOUT(port, link_events, 120)
{
	struct ibv_device_attr da;
	struct ibv_async_event ev;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &da));
	EXPECT_TRUE(da.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT);

	ASSERT_EQ(0, set_link(false));
	ASSERT_EQ(0, wait_async_event(self->ctx, IBV_EVENT_PORT_ERR, 5000,
				      &ev)) TH_LOG("no IBV_EVENT_PORT_ERR");
	EXPECT_EQ(1, ev.element.port_num);
	EXPECT_EQ(0, wait_port_state(self->ctx, IBV_PORT_DOWN, 5000));

	ASSERT_EQ(0, set_link(true));
	ASSERT_EQ(0, wait_async_event(self->ctx, IBV_EVENT_PORT_ACTIVE, 5000,
				      &ev)) TH_LOG("no IBV_EVENT_PORT_ACTIVE");
	EXPECT_EQ(1, ev.element.port_num);
	EXPECT_EQ(0, wait_port_state(self->ctx, IBV_PORT_ACTIVE, 10000));
}

/* Every context on the device hears of it, not only the first. */
TEST_F_TIMEOUT(port, link_events_two_contexts, 120)
{
	struct ibv_context *ctx2 = ibv_open_device(self->ctx->device);
	struct ibv_async_event ev;

	ASSERT_NE(NULL, ctx2);
	ASSERT_EQ(0, set_link(false));
	ASSERT_EQ(0, wait_async_event(self->ctx, IBV_EVENT_PORT_ERR, 5000,
				      &ev));
	EXPECT_EQ(1, ev.element.port_num);
	if (ctx2->async_fd != self->ctx->async_fd) {
		/* libibverbs: each context has an fd and a copy of its own. */
		ASSERT_EQ(0, wait_async_event(ctx2, IBV_EVENT_PORT_ERR, 5000,
					      &ev));
		EXPECT_EQ(1, ev.element.port_num);
	}
	EXPECT_EQ(0, ibv_close_device(ctx2));
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

/*
 * Names for printing, word for word libibverbs': logs, scripts and
 * runbooks search for them.  Out-of-range values get "unknown".
 */
TEST(strings)
{
	static const struct { int v; const char *s; } wc[] = {
		{ IBV_WC_SUCCESS, "success" },
		{ IBV_WC_LOC_LEN_ERR, "local length error" },
		{ IBV_WC_LOC_QP_OP_ERR, "local QP operation error" },
		{ IBV_WC_LOC_EEC_OP_ERR, "local EE context operation error" },
		{ IBV_WC_LOC_PROT_ERR, "local protection error" },
		{ IBV_WC_WR_FLUSH_ERR, "Work Request Flushed Error" },
		{ IBV_WC_MW_BIND_ERR, "memory management operation error" },
		{ IBV_WC_BAD_RESP_ERR, "bad response error" },
		{ IBV_WC_LOC_ACCESS_ERR, "local access error" },
		{ IBV_WC_REM_INV_REQ_ERR, "remote invalid request error" },
		{ IBV_WC_REM_ACCESS_ERR, "remote access error" },
		{ IBV_WC_REM_OP_ERR, "remote operation error" },
		{ IBV_WC_RETRY_EXC_ERR, "transport retry counter exceeded" },
		{ IBV_WC_RNR_RETRY_EXC_ERR, "RNR retry counter exceeded" },
		{ IBV_WC_LOC_RDD_VIOL_ERR, "local RDD violation error" },
		{ IBV_WC_REM_INV_RD_REQ_ERR, "remote invalid RD request" },
		{ IBV_WC_REM_ABORT_ERR, "aborted error" },
		{ IBV_WC_INV_EECN_ERR, "invalid EE context number" },
		{ IBV_WC_INV_EEC_STATE_ERR, "invalid EE context state" },
		{ IBV_WC_FATAL_ERR, "fatal error" },
		{ IBV_WC_RESP_TIMEOUT_ERR, "response timeout error" },
		{ IBV_WC_GENERAL_ERR, "general error" },
		{ IBV_WC_TM_ERR, "TM error" },
		{ IBV_WC_TM_RNDV_INCOMPLETE, "TM software rendezvous" },
		{ 24, "unknown" },
		{ 25, "unknown" },
	};
	static const struct { int v; const char *s; } node[] = {
		{ -1, "unknown" },
		{ 0, "unknown" },
		{ IBV_NODE_CA, "InfiniBand channel adapter" },
		{ IBV_NODE_SWITCH, "InfiniBand switch" },
		{ IBV_NODE_ROUTER, "InfiniBand router" },
		{ IBV_NODE_RNIC, "iWARP NIC" },
		{ IBV_NODE_USNIC, "usNIC" },
		{ IBV_NODE_USNIC_UDP, "usNIC UDP" },
		{ IBV_NODE_UNSPECIFIED, "unspecified" },
		{ 8, "unknown" },
	};
	static const struct { int v; const char *s; } port[] = {
		{ IBV_PORT_NOP, "no state change (NOP)" },
		{ IBV_PORT_DOWN, "down" },
		{ IBV_PORT_INIT, "init" },
		{ IBV_PORT_ARMED, "armed" },
		{ IBV_PORT_ACTIVE, "active" },
		{ IBV_PORT_ACTIVE_DEFER, "active defer" },
		{ 6, "unknown" },
	};
	static const struct { int v; const char *s; } ev[] = {
		{ IBV_EVENT_CQ_ERR, "CQ error" },
		{ IBV_EVENT_QP_FATAL, "local work queue catastrophic error" },
		{ IBV_EVENT_QP_REQ_ERR, "invalid request local work queue error" },
		{ IBV_EVENT_QP_ACCESS_ERR, "local access violation work queue error" },
		{ IBV_EVENT_COMM_EST, "communication established" },
		{ IBV_EVENT_SQ_DRAINED, "send queue drained" },
		{ IBV_EVENT_PATH_MIG, "path migrated" },
		{ IBV_EVENT_PATH_MIG_ERR, "path migration request error" },
		{ IBV_EVENT_DEVICE_FATAL, "local catastrophic error" },
		{ IBV_EVENT_PORT_ACTIVE, "port active" },
		{ IBV_EVENT_PORT_ERR, "port error" },
		{ IBV_EVENT_LID_CHANGE, "LID change" },
		{ IBV_EVENT_PKEY_CHANGE, "P_Key change" },
		{ IBV_EVENT_SM_CHANGE, "SM change" },
		{ IBV_EVENT_SRQ_ERR, "SRQ catastrophic error" },
		{ IBV_EVENT_SRQ_LIMIT_REACHED, "SRQ limit reached" },
		{ IBV_EVENT_QP_LAST_WQE_REACHED, "last WQE reached" },
		{ IBV_EVENT_CLIENT_REREGISTER, "client reregistration" },
		{ IBV_EVENT_GID_CHANGE, "GID table change" },
		{ IBV_EVENT_WQ_FATAL, "WQ fatal" },
		{ 20, "unknown" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(wc); i++)
		EXPECT_STREQ(wc[i].s, ibv_wc_status_str(wc[i].v));
	for (i = 0; i < ARRAY_SIZE(node); i++)
		EXPECT_STREQ(node[i].s, ibv_node_type_str(node[i].v));
	for (i = 0; i < ARRAY_SIZE(port); i++)
		EXPECT_STREQ(port[i].s, ibv_port_state_str(port[i].v));
	for (i = 0; i < ARRAY_SIZE(ev); i++)
		EXPECT_STREQ(ev[i].s, ibv_event_type_str(ev[i].v));
	EXPECT_STREQ("unknown", ibv_event_type_str((enum ibv_event_type)999));
	EXPECT_STREQ("unknown", ibv_wc_status_str((enum ibv_wc_status)999));
	EXPECT_STREQ("unknown", ibv_port_state_str((enum ibv_port_state)99));
}

/* Kernels since 5.13 copy pinned pages at fork: nothing to set up. */
TEST(fork_unneeded)
{
	EXPECT_EQ(0, ibv_fork_init());
	EXPECT_EQ(IBV_FORK_UNNEEDED, ibv_is_fork_initialized());
}

TEST_HARNESS_MAIN
