// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * dropin ADDR PORT: an RDMA CM program that knows nothing of kqp.  It is
 * built twice from this source, once with `pkg-config --cflags --libs
 * kqp` and once with -lrdmacm -libverbs, and dropin.sh checks that both
 * builds print the same lines.  So everything printed must be
 * deterministic: events in the order the program waits for them, data,
 * lengths, opcodes and statuses as numbers (the libraries word their
 * status strings differently), nothing that depends on timing, addresses
 * or device limits.
 *
 * In one process: a server id listens, a client id connects to it, the
 * client sends "ping N" and the server answers "pong N", the client
 * writes into and reads from the server's buffer with RDMA, then the
 * client disconnects.  The server takes rdma_create_qp()'s defaults (PD,
 * CQs and channels), the client brings its own, and polls through its
 * completion channel.  Exits 0 when every step worked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define TIMEOUT_MS	30000
#define MSGS		4
#define MSG_LEN		32

static int fail(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The next event on @ch, which must be @type; printed, then acked. */
static struct rdma_cm_id *expect(const char *who,
				 struct rdma_event_channel *ch,
				 enum rdma_cm_event_type type)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (poll(&pfd, 1, TIMEOUT_MS) != 1) {
		errno = ETIMEDOUT;
		fail(rdma_event_str(type));
	}
	if (rdma_get_cm_event(ch, &ev))
		fail("rdma_get_cm_event");
	printf("%s: event %s status %d\n", who, rdma_event_str(ev->event),
	       ev->status);
	if (ev->event != type) {
		errno = EPROTO;
		fail(rdma_event_str(type));
	}
	id = ev->id;
	rdma_ack_cm_event(ev);
	return id;
}

/* One completion from @cq, within the timeout, by polling. */
static void poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int i, n;

	for (i = 0; i < TIMEOUT_MS; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			fail("ibv_poll_cq");
		if (n)
			return;
		poll(NULL, 0, 1);
	}
	errno = ETIMEDOUT;
	fail("ibv_poll_cq");
}

/* One completion from @cq, waiting on its channel. */
static void wait_one(struct ibv_comp_channel *ch, struct ibv_cq *cq,
		     struct ibv_wc *wc)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			fail("ibv_poll_cq");
		if (n)
			return;
		if (ibv_req_notify_cq(cq, 0))
			fail("ibv_req_notify_cq");
		/* A completion may have arrived before the arm. */
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return;
		if (poll(&pfd, 1, TIMEOUT_MS) != 1) {
			errno = ETIMEDOUT;
			fail("completion channel");
		}
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			fail("ibv_get_cq_event");
		if (ev_cq != cq) {
			errno = EPROTO;
			fail("ibv_get_cq_event: another CQ");
		}
		ibv_ack_cq_events(cq, 1);
	}
}

static void print_wc(const char *who, const struct ibv_wc *wc)
{
	printf("%s: wc wr_id %llu status %d opcode %d", who,
	       (unsigned long long)wc->wr_id, wc->status, wc->opcode);
	if (wc->opcode & IBV_WC_RECV)
		printf(" byte_len %u", wc->byte_len);
	printf("\n");
	if (wc->status != IBV_WC_SUCCESS) {
		errno = EIO;
		fail("work completion");
	}
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, void *buf,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	errno = ibv_post_recv(qp, &wr, &bad);
	if (errno)
		fail("ibv_post_recv");
}

static void post_send(struct ibv_qp *qp, uint64_t wr_id,
		      enum ibv_wr_opcode op, void *buf, uint32_t len,
		      uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)buf, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	errno = ibv_post_send(qp, &wr, &bad);
	if (errno)
		fail("ibv_post_send");
}

static const char *state_name(struct ibv_qp *qp)
{
	static const char *const names[] = {
		"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR",
	};
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		fail("ibv_query_qp");
	if (attr.qp_state >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[attr.qp_state];
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *lid, *sid, *cid;
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7,
				      .responder_resources = 1,
				      .initiator_depth = 1 };
	static char sbuf[MSGS][MSG_LEN], cbuf[MSGS][MSG_LEN];
	static char window[64], scratch[64];
	struct ibv_mr *smr, *cmr, *wmr, *xmr;
	struct ibv_comp_channel *cchan;
	struct ibv_port_attr port;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct ibv_cq *ccq;
	struct ibv_pd *cpd;
	struct ibv_wc wc;
	int i;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) {
		fprintf(stderr, "usage: %s ADDR PORT\n", argv[0]);
		return 2;
	}
	sin.sin_port = htons(atoi(argv[2]));
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* The server listens. */
	sch = rdma_create_event_channel();
	cch = rdma_create_event_channel();
	if (!sch || !cch)
		fail("rdma_create_event_channel");
	if (rdma_create_id(sch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(cch, &cid, NULL, RDMA_PS_TCP))
		fail("rdma_create_id");
	if (rdma_bind_addr(lid, (struct sockaddr *)&sin))
		fail("rdma_bind_addr");
	if (rdma_listen(lid, 4))
		fail("rdma_listen");
	printf("server: listening, port %u\n", ntohs(rdma_get_src_port(lid)));

	/* The client resolves, and makes its QP from its own objects. */
	if (rdma_resolve_addr(cid, NULL, (struct sockaddr *)&sin, 2000))
		fail("rdma_resolve_addr");
	expect("client", cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(cid, 2000))
		fail("rdma_resolve_route");
	expect("client", cch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	printf("client: dst port %u, device is %s\n",
	       ntohs(rdma_get_dst_port(cid)),
	       cid->verbs ? "bound" : "not bound");
	if (ibv_query_port(cid->verbs, cid->port_num, &port))
		fail("ibv_query_port");
	printf("client: port %u state %d link layer %d\n", cid->port_num,
	       port.state, port.link_layer);
	cpd = ibv_alloc_pd(cid->verbs);
	cchan = ibv_create_comp_channel(cid->verbs);
	if (!cpd || !cchan)
		fail("ibv_alloc_pd/ibv_create_comp_channel");
	ccq = ibv_create_cq(cid->verbs, 16, NULL, cchan, 0);
	if (!ccq)
		fail("ibv_create_cq");
	attr.send_cq = ccq;
	attr.recv_cq = ccq;
	if (rdma_create_qp(cid, cpd, &attr))
		fail("client rdma_create_qp");
	printf("client: qp %s, caps enough %d\n", state_name(cid->qp),
	       attr.cap.max_send_wr >= 8 && attr.cap.max_recv_wr >= 8);
	cmr = ibv_reg_mr(cpd, cbuf, sizeof(cbuf), IBV_ACCESS_LOCAL_WRITE);
	xmr = ibv_reg_mr(cpd, scratch, sizeof(scratch),
			 IBV_ACCESS_LOCAL_WRITE);
	if (!cmr || !xmr)
		fail("client ibv_reg_mr");
	for (i = 0; i < MSGS; i++)
		post_recv(cid->qp, 100 + i, cbuf[i], MSG_LEN, cmr->lkey);
	if (rdma_connect(cid, &cp))
		fail("rdma_connect");

	/* The server takes the request with the library's defaults. */
	sid = expect("server", sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	memset(&attr, 0, sizeof(attr));
	attr.qp_type = IBV_QPT_RC;
	attr.cap = (struct ibv_qp_cap){ .max_send_wr = 8, .max_recv_wr = 8,
					.max_send_sge = 1, .max_recv_sge = 1 };
	if (rdma_create_qp(sid, NULL, &attr))
		fail("server rdma_create_qp");
	printf("server: qp %s, own cqs %d, pd is id's %d\n",
	       state_name(sid->qp), sid->send_cq && sid->recv_cq,
	       sid->qp->pd == sid->pd);
	smr = ibv_reg_mr(sid->pd, sbuf, sizeof(sbuf), IBV_ACCESS_LOCAL_WRITE);
	wmr = ibv_reg_mr(sid->pd, window, sizeof(window),
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ);
	if (!smr || !wmr)
		fail("server ibv_reg_mr");
	strcpy(window + 32, "read back from the server");
	for (i = 0; i < MSGS; i++)
		post_recv(sid->qp, 200 + i, sbuf[i], MSG_LEN, smr->lkey);
	if (rdma_accept(sid, &cp))
		fail("rdma_accept");
	expect("client", cch, RDMA_CM_EVENT_ESTABLISHED);
	expect("server", sch, RDMA_CM_EVENT_ESTABLISHED);
	printf("client: qp %s\n", state_name(cid->qp));
	printf("server: qp %s\n", state_name(sid->qp));

	/* ping N -> pong N. */
	for (i = 0; i < MSGS; i++) {
		char msg[MSG_LEN];

		snprintf(msg, sizeof(msg), "ping %d", i);
		memcpy(scratch, msg, strlen(msg) + 1);
		post_send(cid->qp, 10 + i, IBV_WR_SEND, scratch,
			  strlen(msg) + 1, xmr->lkey, 0, 0);
		wait_one(cchan, ccq, &wc);
		print_wc("client", &wc);
		poll_one(sid->recv_cq, &wc);
		print_wc("server", &wc);
		printf("server: got \"%s\"\n", sbuf[wc.wr_id - 200]);

		snprintf(sbuf[i], MSG_LEN, "pong %d", i);
		post_send(sid->qp, 20 + i, IBV_WR_SEND, sbuf[i],
			  strlen(sbuf[i]) + 1, smr->lkey, 0, 0);
		poll_one(sid->send_cq, &wc);
		print_wc("server", &wc);
		wait_one(cchan, ccq, &wc);
		print_wc("client", &wc);
		printf("client: got \"%s\"\n", cbuf[wc.wr_id - 100]);
	}

	/* RDMA into and out of the server's window. */
	strcpy(scratch, "written by the client");
	post_send(cid->qp, 30, IBV_WR_RDMA_WRITE, scratch,
		  strlen(scratch) + 1, xmr->lkey, (uintptr_t)window,
		  wmr->rkey);
	wait_one(cchan, ccq, &wc);
	print_wc("client", &wc);
	memset(scratch, 0, sizeof(scratch));
	post_send(cid->qp, 31, IBV_WR_RDMA_READ, scratch, 32, xmr->lkey,
		  (uintptr_t)window + 32, wmr->rkey);
	wait_one(cchan, ccq, &wc);
	print_wc("client", &wc);
	printf("server: window holds \"%s\"\n", window);
	printf("client: read \"%s\"\n", scratch);

	/*
	 * The client hangs up; its DISCONNECTED comes when the server
	 * answers with its own rdma_disconnect().
	 */
	if (rdma_disconnect(cid))
		fail("client rdma_disconnect");
	expect("server", sch, RDMA_CM_EVENT_DISCONNECTED);
	if (rdma_disconnect(sid))
		fail("server rdma_disconnect");
	expect("client", cch, RDMA_CM_EVENT_DISCONNECTED);

	rdma_destroy_qp(sid);
	rdma_destroy_qp(cid);
	if (ibv_dereg_mr(smr) || ibv_dereg_mr(wmr) || ibv_dereg_mr(cmr) ||
	    ibv_dereg_mr(xmr))
		fail("ibv_dereg_mr");
	errno = ibv_destroy_cq(ccq);
	if (errno)
		fail("ibv_destroy_cq");
	errno = ibv_destroy_comp_channel(cchan);
	if (errno)
		fail("ibv_destroy_comp_channel");
	errno = ibv_dealloc_pd(cpd);
	if (errno)
		fail("ibv_dealloc_pd");
	if (rdma_destroy_id(sid) || rdma_destroy_id(cid) ||
	    rdma_destroy_id(lid))
		fail("rdma_destroy_id");
	rdma_destroy_event_channel(sch);
	rdma_destroy_event_channel(cch);
	printf("done\n");
	return 0;
}
