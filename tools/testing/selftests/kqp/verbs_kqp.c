// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What libkqp does not implement fails cleanly, the way rdma-core fails
 * for a device without the feature; rxe has most of these, so rdma-core
 * on the bench would succeed, and this test is libkqp's alone.  And the
 * process-wide contexts survive a caller's ibv_close_device().  And a
 * context that never reads its async events holds a bounded number.
 */
#include <net/if.h>
#include <sys/prctl.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>
#include <infiniband/verbs.h>

#include "cm_test.h"

FIXTURE(id) {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[64];
};

FIXTURE_SETUP(id)
{
	struct sockaddr_in sin = cm_addr(cm_port());
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	self->ch = rdma_create_event_channel();
	ASSERT_NE(NULL, self->ch);
	ASSERT_EQ(0, rdma_create_id(self->ch, &self->id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_bind_addr(self->id, (struct sockaddr *)&sin));
	ASSERT_NE(NULL, self->id->verbs);
	self->cq = ibv_create_cq(self->id->verbs, 8, NULL, NULL, 0);
	ASSERT_NE(NULL, self->cq);
	attr.send_cq = self->cq;
	attr.recv_cq = self->cq;
	ASSERT_EQ(0, rdma_create_qp(self->id, NULL, &attr));
	self->mr = ibv_reg_mr(self->id->pd, self->buf, sizeof(self->buf),
			      IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, self->mr);
}

FIXTURE_TEARDOWN(id)
{
	if (self->mr)
		EXPECT_EQ(0, ibv_dereg_mr(self->mr));
	if (self->id) {
		rdma_destroy_qp(self->id);
		EXPECT_EQ(0, rdma_destroy_id(self->id));
	}
	if (self->cq)
		EXPECT_EQ(0, ibv_destroy_cq(self->cq));
	rdma_destroy_event_channel(self->ch);
}

TEST_F(id, verbs_eopnotsupp)
{
	struct ibv_context *ctx = self->id->verbs;
	struct ibv_qp *qp = self->id->qp;
	struct ibv_ece ece = { .vendor_id = 1 };
	uint8_t mac[6];
	int cqe;

	cqe = self->cq->cqe;
	EXPECT_EQ(EOPNOTSUPP, ibv_resize_cq(self->cq, 2 * cqe));
	EXPECT_EQ(cqe, self->cq->cqe);
	errno = 0;
	EXPECT_EQ(IBV_REREG_MR_ERR_CMD,
		  ibv_rereg_mr(self->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
			       NULL, 0, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(EOPNOTSUPP, ibv_set_ece(qp, &ece));
	EXPECT_EQ(EOPNOTSUPP, ibv_query_ece(qp, &ece));
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->id->pd, 0, 4096, 0, 0,
					  IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EOPNOTSUPP, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_device(ctx->cmd_fd));
	EXPECT_EQ(EOPNOTSUPP, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_pd(ctx, self->id->pd->handle));
	EXPECT_EQ(EOPNOTSUPP, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_import_mr(self->id->pd, self->mr->handle));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* A QP rdma_create_qp() made is a basic one (exverbs.c has more). */
	EXPECT_EQ(NULL, ibv_qp_to_qp_ex(qp));
	EXPECT_EQ(0, ibv_query_qp_data_in_order(qp, IBV_WR_SEND, 0));
	EXPECT_EQ(-EOPNOTSUPP,
		  ibv_resolve_eth_l2_from_gid(ctx, &(struct ibv_ah_attr){
			  .port_num = 1 }, mac, NULL));
	/* The objects those calls were handed still work. */
	EXPECT_EQ(IBV_QPS_INIT, qp->state);
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
}

TEST_F(id, rdmacm_enosys)
{
	struct ibv_ece ece = { .vendor_id = 1 };

	errno = 0;
	EXPECT_EQ(-1, rdma_set_local_ece(self->id, &ece));
	EXPECT_EQ(ENOSYS, errno);
	errno = 0;
	EXPECT_EQ(-1, rdma_get_remote_ece(self->id, &ece));
	EXPECT_EQ(ENOSYS, errno);
	errno = 0;
	EXPECT_EQ(-1, rdma_reject_ece(self->id, NULL, 0));
	EXPECT_EQ(ENOSYS, errno);
}

/*
 * The objects of /sys/kernel/debug/kqp/resources matching @type (e.g.
 * "qp lqpn") and owned by @pid with command @comm; their ids in @ids.
 */
static int res_owned(const char *type, pid_t pid, const char *comm,
		     unsigned int *ids, int max)
{
	FILE *f = fopen("/sys/kernel/debug/kqp/resources", "r");
	char line[256], want[128], name[64];
	unsigned int id;
	int n = 0, p;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%s %%u pid %%d comm %%63s", type);
	while (fgets(line, sizeof(line), f)) {
		const char *rest = strchr(line + 4, ' ');

		/* "dev DEV " first. */
		if (strncmp(line, "dev ", 4) || !rest)
			continue;
		if (sscanf(rest + 1, want, &id, &p, name) == 3 && p == pid &&
		    !strcmp(name, comm) && n < max)
			ids[n++] = id;
	}
	fclose(f);
	return n;
}

/*
 * ib_core lists kqp's objects as the kernel's ("[kqp]", "[rdma_cm]");
 * debugfs says whose they are, with the ids `rdma res show` prints.
 */
TEST_F_TIMEOUT(id, resources_name_owner, 180)
{
	static const struct {
		const char *type, *res, *key;
	} types[] = {
		{ "pd pdn", "pd", "pdn" }, { "cq cqn", "cq", "cqn" },
		{ "mr mrn", "mr", "mrn" }, { "qp lqpn", "qp", "lqpn" },
	};
	const char *comm = "kqp-res-owner";
	unsigned int ids[4];
	unsigned int i;

	ASSERT_EQ(0, prctl(PR_SET_NAME, comm));
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		ASSERT_EQ(1, res_owned(types[i].type, getpid(), comm, ids, 4))
			TH_LOG("%s", types[i].type);
		/* The id names the object ib_core lists. */
		EXPECT_EQ(0, kqp_test_sh("rdma res show %s %s %u | grep -q ' %s %u '",
					 types[i].res, types[i].key, ids[0],
					 types[i].key, ids[0]))
			TH_LOG("%s %u", types[i].type, ids[0]);
		if (!strcmp(types[i].type, "qp lqpn"))
			EXPECT_EQ(self->id->qp->qp_num, ids[0]);
	}
	/* Gone with the object. */
	ASSERT_EQ(0, ibv_dereg_mr(self->mr));
	self->mr = NULL;
	EXPECT_EQ(0, res_owned("mr mrn", getpid(), comm, ids, 4));
	EXPECT_EQ(1, res_owned("cq cqn", getpid(), comm, ids, 4));
	/* Another process's objects are its own. */
	EXPECT_EQ(0, res_owned("pd pdn", getppid(), comm, ids, 4));
}

/*
 * Stream rsockets are rsocket.c's, datagram ones dgram_kqp.c's; a number
 * that is no rsocket gets EBADF, from the iomap calls too.
 */
TEST(rsockets_not_yet)
{
	char c;

	/* Not an rsocket. */
	errno = 0;
	EXPECT_EQ(-1, rsend(3, &c, 1, 0));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ((off_t)-1, riomap(3, &c, 1, PROT_WRITE, 0, 0));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ(-1, riounmap(3, &c, 1));
	EXPECT_EQ(EBADF, errno);
	errno = 0;
	EXPECT_EQ((size_t)-1, riowrite(3, &c, 1, 0, 0));
	EXPECT_EQ(EBADF, errno);
}

/*
 * An id's context is the library's: closing it is a no-op, and the id
 * and its QP go on working.
 */
TEST_F(id, close_shared_context)
{
	struct ibv_device_attr da;
	int n = 0;
	struct ibv_context **list = rdma_get_devices(&n);

	ASSERT_NE(NULL, list);
	ASSERT_LE(1, n);
	EXPECT_EQ(0, ibv_close_device(self->id->verbs));
	EXPECT_EQ(0, ibv_close_device(list[0]));
	rdma_free_devices(list);
	EXPECT_EQ(0, ibv_query_device(self->id->verbs, &da));
	EXPECT_EQ(0, ibv_req_notify_cq(self->cq, 0));
	EXPECT_EQ(IBV_QPS_INIT, self->id->qp->state);
}

/* As kernel/async.c's KQP_ASYNC_MAX: events a table's async fd holds. */
#define ASYNC_MAX 1024

/* Set the bench's netdev down or up, without a shell: many times over. */
static int set_link_flags(int sock, bool up)
{
	struct ifreq ifr = {};

	strncpy(ifr.ifr_name, kqp_test_netdev(), IFNAMSIZ - 1);
	if (ioctl(sock, SIOCGIFFLAGS, &ifr))
		return -1;
	if (up)
		ifr.ifr_flags |= IFF_UP;
	else
		ifr.ifr_flags &= ~IFF_UP;
	return ioctl(sock, SIOCSIFFLAGS, &ifr);
}

/* Wait up to 10 s for port 1 of @ctx to be active again; 0 or -1. */
static int wait_port_active(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;
	int i;

	for (i = 0; i < 500; i++) {
		if (!ibv_query_port(ctx, 1, &pa) && pa.state == IBV_PORT_ACTIVE)
			return 0;
		usleep(20000);
	}
	return -1;
}

FIXTURE(unread) {
	int sock;
	struct ibv_device **list;
	struct ibv_context *ctx;
};

FIXTURE_SETUP(unread)
{
	struct ibv_device **l;

	self->sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_LE(0, self->sock);
	self->list = ibv_get_device_list(NULL);
	ASSERT_NE(NULL, self->list);
	for (l = self->list; *l; l++)
		if (!strcmp(ibv_get_device_name(*l), kqp_test_rdma_dev()))
			break;
	ASSERT_NE(NULL, *l);
	self->ctx = ibv_open_device(*l);
	ASSERT_NE(NULL, self->ctx);
}

/* The link is back, and the port active, for the tests after. */
FIXTURE_TEARDOWN(unread)
{
	EXPECT_EQ(0, set_link_flags(self->sock, true));
	if (self->ctx) {
		EXPECT_EQ(0, wait_port_active(self->ctx));
		EXPECT_EQ(0, ibv_close_device(self->ctx));
	}
	if (self->list)
		ibv_free_device_list(self->list);
	close(self->sock);
}

/*
 * Hundreds of link flaps, two port events each, into an async fd nobody
 * reads: the kernel keeps the first ASYNC_MAX and drops the rest, rather
 * than growing its queue for as long as the flapping goes on.
 */
TEST_F_TIMEOUT(unread, async_queue_bounded, 300)
{
	struct ibv_async_event ev;
	int i, n = 0, ports = 0;

	for (i = 0; i < ASYNC_MAX * 3 / 5; i++) {
		ASSERT_EQ(0, set_link_flags(self->sock, false));
		ASSERT_EQ(0, set_link_flags(self->sock, true));
	}
	ASSERT_EQ(0, wait_port_active(self->ctx));
	/* ib_core dispatches from a workqueue: let it finish. */
	sleep(2);
	ASSERT_EQ(0, fcntl(self->ctx->async_fd, F_SETFL, O_NONBLOCK));
	while (!ibv_get_async_event(self->ctx, &ev)) {
		n++;
		if (ev.event_type == IBV_EVENT_PORT_ERR ||
		    ev.event_type == IBV_EVENT_PORT_ACTIVE) {
			ports++;
			EXPECT_EQ(1, ev.element.port_num);
		}
		ibv_ack_async_event(&ev);
	}
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(ASYNC_MAX, n) TH_LOG("%d port events", ports);
	EXPECT_LE(ASYNC_MAX / 2, ports);
}

TEST_HARNESS_MAIN
