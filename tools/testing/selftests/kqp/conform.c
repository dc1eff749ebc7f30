// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * conform ADDR PORT: print what an RDMA program can observe of the
 * library under it, one fact per line.  Built twice from this source,
 * against libkqp and against rdma-core (conform_rdmacm); conform.sh runs
 * both in the bench guest and requires the same lines from each, except
 * for the differences doc/features.md lists as deliberate.
 *
 * Observed: the libraries' strings; the device's and the port's
 * attributes; which CQ depths and MR access flags are accepted, and the
 * errno of each refusal; the errnos of CM calls made out of order; the
 * QP's state and caps at each step of a connection on one host; what a
 * fork child leaves behind once it exits.  (Calls that crash librdmacm,
 * such as rdma_create_qp() on an unbound id, cannot be compared: kqp's
 * answers to those are tested in cm_kqp.c.)
 *
 * Everything printed must be deterministic: no addresses, handles,
 * timings or GUIDs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define TIMEOUT_MS	30000

static const char *addr_str;
static int port_base;

static void die(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	exit(1);
}

/* "ok" or the errno's name-free number: both libraries' strerror agree. */
static void result(const char *what, int ret)
{
	if (ret)
		printf("%s: errno %d\n", what, errno);
	else
		printf("%s: ok\n", what);
}

static void strings(void)
{
	int i;

	for (i = IBV_WC_SUCCESS; i <= IBV_WC_TM_RNDV_INCOMPLETE + 1; i++)
		printf("ibv_wc_status_str %d: %s\n", i,
		       ibv_wc_status_str((enum ibv_wc_status)i));
	for (i = IBV_NODE_UNKNOWN; i <= IBV_NODE_UNSPECIFIED + 1; i++)
		printf("ibv_node_type_str %d: %s\n", i,
		       ibv_node_type_str((enum ibv_node_type)i));
	for (i = IBV_PORT_NOP; i <= IBV_PORT_ACTIVE_DEFER + 1; i++)
		printf("ibv_port_state_str %d: %s\n", i,
		       ibv_port_state_str((enum ibv_port_state)i));
	for (i = IBV_EVENT_CQ_ERR; i <= IBV_EVENT_WQ_FATAL + 1; i++)
		printf("ibv_event_type_str %d: %s\n", i,
		       ibv_event_type_str((enum ibv_event_type)i));
	for (i = RDMA_CM_EVENT_ADDR_RESOLVED;
	     i <= RDMA_CM_EVENT_TIMEWAIT_EXIT + 1; i++)
		printf("rdma_event_str %d: %s\n", i,
		       rdma_event_str((enum rdma_cm_event_type)i));
}

#define DEV(f) printf("device %s: %llu\n", #f, (unsigned long long)a.f)
#define PORT(f) printf("port %s: %llu\n", #f, (unsigned long long)p.f)

static void device(struct ibv_context *ctx)
{
	struct ibv_device_attr a;
	struct ibv_port_attr p;
	int i;

	if (ibv_query_device(ctx, &a))
		die("ibv_query_device");
	DEV(max_mr_size);
	DEV(page_size_cap);
	DEV(hw_ver);
	DEV(max_qp_wr);
	for (i = 0; i < 32; i++)
		printf("device device_cap_flags bit %d: %d\n", i,
		       !!(a.device_cap_flags & (1u << i)));
	DEV(max_sge);
	DEV(max_sge_rd);
	DEV(max_cqe);
	DEV(max_pd);
	DEV(max_qp_rd_atom);
	DEV(max_qp_init_rd_atom);
	DEV(atomic_cap);
	DEV(max_mw);
	DEV(max_srq);
	DEV(max_srq_wr);
	DEV(max_srq_sge);
	DEV(max_pkeys);
	DEV(local_ca_ack_delay);
	DEV(phys_port_cnt);
	if (ibv_query_port(ctx, 1, &p))
		die("ibv_query_port");
	PORT(state);
	PORT(max_mtu);
	PORT(active_mtu);
	PORT(gid_tbl_len);
	PORT(port_cap_flags);
	PORT(max_msg_sz);
	PORT(pkey_tbl_len);
	PORT(lid);
	PORT(max_vl_num);
	PORT(active_width);
	PORT(active_speed);
	PORT(phys_state);
	PORT(link_layer);
	PORT(flags);
	PORT(port_cap_flags2);
	printf("ibv_query_port 0: %s\n",
	       ibv_query_port(ctx, 0, &p) ? "refused" : "ok");
	printf("ibv_query_port 2: %s\n",
	       ibv_query_port(ctx, 2, &p) ? "refused" : "ok");
}

static void cqs(struct ibv_context *ctx)
{
	static const char *const names[] = {
		"1", "100", "16385", "max_cqe", "max_cqe+1", "0", "-1",
	};
	struct ibv_device_attr a;
	struct ibv_cq *cq;
	int depths[7], i;

	if (ibv_query_device(ctx, &a))
		die("ibv_query_device");
	depths[0] = 1;
	depths[1] = 100;
	depths[2] = 16385;
	depths[3] = a.max_cqe;
	depths[4] = a.max_cqe + 1;
	depths[5] = 0;
	depths[6] = -1;
	for (i = 0; i < 7; i++) {
		cq = ibv_create_cq(ctx, depths[i], NULL, NULL, 0);
		if (!cq) {
			printf("ibv_create_cq %s: errno %d\n", names[i], errno);
			continue;
		}
		printf("ibv_create_cq %s: ok, cqe >= asked %d\n", names[i],
		       cq->cqe >= depths[i]);
		ibv_destroy_cq(cq);
	}
}

static void mrs(struct ibv_context *ctx)
{
	static const struct {
		const char *name;
		int access;
	} cases[] = {
		{ "none", 0 },
		{ "LOCAL_WRITE", IBV_ACCESS_LOCAL_WRITE },
		{ "LOCAL_WRITE|REMOTE_WRITE|REMOTE_READ",
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ },
		{ "REMOTE_WRITE without LOCAL_WRITE", IBV_ACCESS_REMOTE_WRITE },
		{ "REMOTE_ATOMIC without LOCAL_WRITE",
		  IBV_ACCESS_REMOTE_ATOMIC },
		{ "LOCAL_WRITE|REMOTE_WRITE|RELAXED_ORDERING",
		  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_RELAXED_ORDERING },
		{ "LOCAL_WRITE|optional bit 29",
		  IBV_ACCESS_LOCAL_WRITE | (1 << 29) },
		{ "LOCAL_WRITE|undefined bit 14",
		  IBV_ACCESS_LOCAL_WRITE | (1 << 14) },
		{ "LOCAL_WRITE|undefined bit 31",
		  IBV_ACCESS_LOCAL_WRITE | (1u << 31) },
	};
	static char buf[8192] __attribute__((aligned(4096)));
	struct ibv_mr *mr;
	struct ibv_pd *pd;
	size_t i;

	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mr = ibv_reg_mr(pd, buf, sizeof(buf), cases[i].access);
		if (!mr) {
			printf("ibv_reg_mr %s: errno %d\n", cases[i].name,
			       errno);
			continue;
		}
		printf("ibv_reg_mr %s: ok, length %zu\n", cases[i].name,
		       mr->length);
		ibv_dereg_mr(mr);
	}
	ibv_dealloc_pd(pd);
}

static struct rdma_cm_event *get_event(struct rdma_event_channel *ch,
				       const char *who)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pfd, 1, TIMEOUT_MS) != 1) {
		errno = ETIMEDOUT;
		die(who);
	}
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	printf("%s: event %s status %d\n", who, rdma_event_str(ev->event),
	       ev->status);
	return ev;
}

static void expect(struct rdma_event_channel *ch, const char *who,
		   enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = get_event(ch, who);

	if (ev->event != type) {
		errno = EPROTO;
		die(rdma_event_str(type));
	}
	rdma_ack_cm_event(ev);
}

static void addr_of(struct sockaddr_in *sin, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (inet_pton(AF_INET, addr_str, &sin->sin_addr) != 1) {
		errno = EINVAL;
		die("address");
	}
}

static void cm_order(void)
{
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_event_channel *ch;
	struct sockaddr_in sin;
	struct rdma_cm_id *id;

	ch = rdma_create_event_channel();
	if (!ch)
		die("rdma_create_event_channel");
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	addr_of(&sin, port_base);
	result("rdma_bind_addr", rdma_bind_addr(id, (struct sockaddr *)&sin));
	result("rdma_bind_addr again",
	       rdma_bind_addr(id, (struct sockaddr *)&sin));
	result("rdma_resolve_route before rdma_resolve_addr",
	       rdma_resolve_route(id, 1000));
	result("rdma_create_qp on a bound id",
	       rdma_create_qp(id, NULL, &init));
	if (id->qp)
		printf("id->qp->state after rdma_create_qp: %d\n",
		       id->qp->state);
	result("rdma_create_qp a second time",
	       rdma_create_qp(id, NULL, &init));
	rdma_destroy_qp(id);
	result("rdma_destroy_id", rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

static void print_caps(const char *who, const struct ibv_qp_cap *c)
{
	printf("%s: caps send_wr >= 16 %d recv_wr >= 16 %d send_sge >= 1 %d recv_sge >= 1 %d inline >= 64 %d\n",
	       who, c->max_send_wr >= 16, c->max_recv_wr >= 16,
	       c->max_send_sge >= 1, c->max_recv_sge >= 1,
	       c->max_inline_data >= 64);
}

static void rc_connection(void)
{
	static const struct ibv_qp_init_attr fresh = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp_init_attr init = fresh;
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *listen, *srv, *cli;
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7 };
	struct ibv_qp_init_attr got_init;
	struct ibv_qp_attr got;
	struct rdma_cm_event *ev;
	struct sockaddr_in sin;
	int ret;

	sch = rdma_create_event_channel();
	cch = rdma_create_event_channel();
	if (!sch || !cch)
		die("rdma_create_event_channel");
	if (rdma_create_id(sch, &listen, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(cch, &cli, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	addr_of(&sin, port_base + 1);
	if (rdma_bind_addr(listen, (struct sockaddr *)&sin) ||
	    rdma_listen(listen, 4))
		die("listen");
	if (rdma_resolve_addr(cli, NULL, (struct sockaddr *)&sin, 2000))
		die("rdma_resolve_addr");
	expect(cch, "client", RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(cli, 2000))
		die("rdma_resolve_route");
	expect(cch, "client", RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (rdma_create_qp(cli, NULL, &init))
		die("rdma_create_qp client");
	print_caps("client", &init.cap);
	printf("client: qp state after rdma_create_qp %d\n", cli->qp->state);
	printf("client: send_cq %s recv_cq %s\n",
	       cli->send_cq ? "set" : "NULL", cli->recv_cq ? "set" : "NULL");
	if (ibv_query_qp(cli->qp, &got, IBV_QP_STATE, &got_init))
		die("ibv_query_qp");
	printf("client: ibv_query_qp state %d\n", got.qp_state);
	if (rdma_connect(cli, &cp))
		die("rdma_connect");
	ev = get_event(sch, "server");
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		die("connect request");
	srv = ev->id;
	rdma_ack_cm_event(ev);
	/*
	 * With what rdma_create_qp() wrote back for the client: its caps,
	 * and its automatic CQs.
	 */
	ret = rdma_create_qp(srv, NULL, &init);
	result("server: rdma_create_qp with the client's written-back attributes",
	       ret);
	if (ret) {
		init = fresh;
		if (rdma_create_qp(srv, NULL, &init))
			die("rdma_create_qp server");
	}
	print_caps("server", &init.cap);
	printf("server: qp state after rdma_create_qp %d\n", srv->qp->state);
	if (rdma_accept(srv, &cp))
		die("rdma_accept");
	printf("server: qp state after rdma_accept %d\n", srv->qp->state);
	expect(cch, "client", RDMA_CM_EVENT_ESTABLISHED);
	printf("client: qp state on ESTABLISHED %d\n", cli->qp->state);
	if (ibv_query_qp(cli->qp, &got, IBV_QP_STATE, &got_init))
		die("ibv_query_qp");
	printf("client: ibv_query_qp state %d\n", got.qp_state);
	expect(sch, "server", RDMA_CM_EVENT_ESTABLISHED);
	printf("server: qp state on ESTABLISHED %d\n", srv->qp->state);
	if (rdma_disconnect(cli))
		die("rdma_disconnect");
	printf("client: qp state after rdma_disconnect %d\n", cli->qp->state);
	/* The client's DISCONNECTED waits for the server's reply. */
	expect(sch, "server", RDMA_CM_EVENT_DISCONNECTED);
	printf("server: qp state on DISCONNECTED %d\n", srv->qp->state);
	result("server: rdma_disconnect", rdma_disconnect(srv));
	printf("server: qp state after rdma_disconnect %d\n", srv->qp->state);
	expect(cch, "client", RDMA_CM_EVENT_DISCONNECTED);
	printf("client: qp state on DISCONNECTED %d\n", cli->qp->state);
	result("client: rdma_disconnect again", rdma_disconnect(cli));
	rdma_destroy_qp(srv);
	rdma_destroy_qp(cli);
	rdma_destroy_id(srv);
	rdma_destroy_id(cli);
	rdma_destroy_id(listen);
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
}

/* How many objects of @type rdma_cm's restrack lists, all owners. */
static int restrack_count(const char *type)
{
	char cmd[64], line[512];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "rdma resource show %s 2>/dev/null", type);
	f = popen(cmd, "r");
	if (!f)
		die("popen");
	while (fgets(line, sizeof(line), f))
		n++;
	pclose(f);
	return n;
}

/*
 * A child opens the device, makes a PD, an MR and a CQ, and exits
 * without freeing them: while it lives, they are listed; once it is
 * reaped, none of them may remain.
 */
static void fork_child(void)
{
	static char buf[4096] __attribute__((aligned(4096)));
	static const char *const types[] = { "pd", "cq", "mr" };
	int before[3], status, i, up[2], down[2];
	char c = 0;
	pid_t pid;

	for (i = 0; i < 3; i++)
		before[i] = restrack_count(types[i]);
	if (pipe(up) || pipe(down))
		die("pipe");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		struct ibv_device **list;
		struct ibv_context *ctx;
		struct ibv_pd *pd;

		list = ibv_get_device_list(NULL);
		if (!list || !list[0])
			_exit(2);
		ctx = ibv_open_device(list[0]);
		if (!ctx)
			_exit(3);
		pd = ibv_alloc_pd(ctx);
		if (!pd || !ibv_reg_mr(pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE) ||
		    !ibv_create_cq(ctx, 4, NULL, NULL, 0))
			_exit(4);
		/* Made: let the parent look, then exit when it says. */
		if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(5);
		_exit(0);
	}
	if (read(up[0], &c, 1) != 1)
		die("child");
	for (i = 0; i < 3; i++)
		printf("fork child: %s listed while it lives %d\n", types[i],
		       restrack_count(types[i]) - before[i]);
	if (write(down[1], &c, 1) != 1)
		die("child");
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	printf("fork child: exit %d\n",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	for (i = 0; i < 3; i++)
		printf("fork child: %s left behind %d\n", types[i],
		       restrack_count(types[i]) - before[i]);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	addr_str = argv[1];
	port_base = atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);

	strings();
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("ibv_get_device_list");
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device");
	device(ctx);
	cqs(ctx);
	mrs(ctx);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	cm_order();
	rc_connection();
	fork_child();
	printf("done\n");
	return 0;
}
