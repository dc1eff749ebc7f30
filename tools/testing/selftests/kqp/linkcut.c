// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * linkcut: an RC connection whose link is cut in the middle of a
 * transfer, for the bench's two-guest run (tools/testing/vm/pair.sh).
 * Built twice, like the *_rdmacm tests: linkcut against libkqp and
 * linkcut_rdmacm against rdma-core, which is the reference.
 *
 *   linkcut -s ADDR [-p PORT] [-t SECS]
 *	the server: listens on ADDR:PORT, accepts one connection and hands
 *	the client a 64 KiB buffer to write to (address and rkey in the
 *	accept's private data), then prints every CM event it gets until
 *	DISCONNECTED or SECS.
 *   linkcut -c ADDR [-p PORT] [-t SECS] [-w SECS] [-r FILE]
 *	the client: connects and keeps DEPTH signaled 4 KiB RDMA WRITEs
 *	outstanding; after 100 successful completions it creates FILE (the
 *	harness then cuts the link) and goes on until a completion fails.
 *	If none has failed -w SECS (default 20) after FILE was made, it
 *	calls rdma_disconnect(), which moves the QP to the error state.
 *	Either way it polls until every outstanding WR has completed,
 *	prints every completion status it got and every CM event (until
 *	DISCONNECTED, after an rdma_disconnect() of its own if it made none
 *	yet, or the deadline), and tears everything down.
 *
 * Measured with rdma-core on 6.12's rxe over the bench's QEMU link: a WR
 * whose peer's link went down stays outstanding (for 150 s, the longest
 * wait tried): rxe's retry timer never fails it.  So the WRs complete
 * when rdma_disconnect() flushes them.
 *
 * The client's last line, "summary: ...", is what must not depend on the
 * library: the first error status, whether every later completion was a
 * flush, whether the flush took a disconnect, whether every WR completed,
 * the CM events in order.  Exit 0 when every outstanding WR completed and
 * the first failure came after the link was cut, 1 on any other failure,
 * 2 when WRs were still outstanding at the deadline.  Every wait has a
 * deadline: nothing here hangs.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define DEPTH		16
#define MSG_LEN		4096
#define SRV_LEN		(16 * MSG_LEN)
#define READY_AFTER	100

struct remote {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

static struct rdma_event_channel *ch;
static double deadline;
static char events[1024];
static int disconnected;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fail(const char *what)
{
	printf("linkcut: FAIL %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

/*
 * The next CM event within @ms (and the deadline), printed and recorded;
 * NULL on timeout.  The caller acks it.
 */
static struct rdma_cm_event *next_event(int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	double left = (deadline - now()) * 1000;
	char one[96];

	if (ms < 0 || ms > left)
		ms = left > 0 ? (int)left : 0;
	if (poll(&pfd, 1, ms) <= 0)
		return NULL;
	if (rdma_get_cm_event(ch, &ev))
		fail("rdma_get_cm_event");
	printf("event: %s status %d\n", rdma_event_str(ev->event), ev->status);
	fflush(stdout);
	snprintf(one, sizeof(one), "%s%s", events[0] ? "," : "",
		 rdma_event_str(ev->event));
	strncat(events, one, sizeof(events) - strlen(events) - 1);
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
		disconnected = 1;
	return ev;
}

static struct rdma_cm_event *expect(enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = next_event(-1);

	if (!ev) {
		errno = ETIMEDOUT;
		fail(rdma_event_str(type));
	}
	if (ev->event != type) {
		errno = EPROTO;
		fail(rdma_event_str(type));
	}
	return ev;
}

static void get_addr(const char *host, const char *port,
		     struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(atoi(port));
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1) {
		errno = EINVAL;
		fail("address");
	}
}

static struct ibv_qp_init_attr qp_attr(struct ibv_cq *cq)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = DEPTH,
			.max_recv_wr = 1,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.sq_sig_all = 1,
	};

	return attr;
}

static int server(struct sockaddr_in *sin)
{
	struct rdma_conn_param param = { 0 };
	struct ibv_qp_init_attr attr;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *lid, *id;
	struct remote rem;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	void *buf;

	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP))
		fail("rdma_create_id");
	if (rdma_bind_addr(lid, (struct sockaddr *)sin))
		fail("rdma_bind_addr");
	if (rdma_listen(lid, 1))
		fail("rdma_listen");
	ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	id = ev->id;
	rdma_ack_cm_event(ev);

	pd = ibv_alloc_pd(id->verbs);
	if (!pd)
		fail("ibv_alloc_pd");
	cq = ibv_create_cq(id->verbs, 2 * DEPTH, NULL, NULL, 0);
	if (!cq)
		fail("ibv_create_cq");
	buf = calloc(1, SRV_LEN);
	if (!buf)
		fail("calloc");
	mr = ibv_reg_mr(pd, buf, SRV_LEN,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		fail("ibv_reg_mr");
	attr = qp_attr(cq);
	if (rdma_create_qp(id, pd, &attr))
		fail("rdma_create_qp");
	rem.addr = htobe64((uintptr_t)buf);
	rem.rkey = htobe32(mr->rkey);
	rem.pad = 0;
	param.private_data = &rem;
	param.private_data_len = sizeof(rem);
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	if (rdma_accept(id, &param))
		fail("rdma_accept");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
	printf("linkcut: connected\n");
	fflush(stdout);

	/* Whatever comes now, until DISCONNECTED or the deadline. */
	while (!disconnected && (ev = next_event(-1)))
		rdma_ack_cm_event(ev);
	printf("server events: %s\n", events);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	free(buf);
	return 0;
}

static int client(struct sockaddr_in *sin, const char *ready, int wait)
{
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	int outstanding = 0, ok = 0, ok_after_error = 0, errors = 0;
	int flushed = 0, first = -1, ready_made = 0, rc = 0, disc = 0;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_event *ev;
	struct remote rem;
	struct rdma_cm_id *id;
	struct ibv_wc wc[DEPTH];
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	double cut_wait = 0;
	char *buf;
	int i, n;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		fail("rdma_create_id");
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)sin, 5000))
		fail("rdma_resolve_addr");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		fail("rdma_resolve_route");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));

	pd = ibv_alloc_pd(id->verbs);
	if (!pd)
		fail("ibv_alloc_pd");
	cq = ibv_create_cq(id->verbs, 2 * DEPTH, NULL, NULL, 0);
	if (!cq)
		fail("ibv_create_cq");
	buf = malloc(MSG_LEN);
	if (!buf)
		fail("malloc");
	memset(buf, 0x5a, MSG_LEN);
	mr = ibv_reg_mr(pd, buf, MSG_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		fail("ibv_reg_mr");
	attr = qp_attr(cq);
	if (rdma_create_qp(id, pd, &attr))
		fail("rdma_create_qp");
	if (rdma_connect(id, &param))
		fail("rdma_connect");
	ev = expect(RDMA_CM_EVENT_ESTABLISHED);
	if (!ev->param.conn.private_data ||
	    ev->param.conn.private_data_len < sizeof(rem)) {
		errno = EPROTO;
		fail("private data");
	}
	memcpy(&rem, ev->param.conn.private_data, sizeof(rem));
	rdma_ack_cm_event(ev);
	rem.addr = be64toh(rem.addr);
	rem.rkey = be32toh(rem.rkey);
	printf("linkcut: connected\n");
	fflush(stdout);

	/*
	 * Keep DEPTH WRITEs in flight until one fails; then only reap.  The
	 * CM channel is looked at too, so an event that comes meanwhile is
	 * seen when it comes.
	 */
	while (now() < deadline) {
		while (!errors && outstanding < DEPTH) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)buf,
				.length = MSG_LEN,
				.lkey = mr->lkey,
			};
			struct ibv_send_wr wr = {
				.wr_id = ok + outstanding,
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma.remote_addr = rem.addr +
					(outstanding % (SRV_LEN / MSG_LEN)) * MSG_LEN,
				.wr.rdma.rkey = rem.rkey,
			}, *bad;

			errno = ibv_post_send(id->qp, &wr, &bad);
			if (errno) {
				printf("linkcut: ibv_post_send: %s\n",
				       strerror(errno));
				break;
			}
			outstanding++;
		}
		n = ibv_poll_cq(cq, DEPTH, wc);
		if (n < 0) {
			errno = -n;
			fail("ibv_poll_cq");
		}
		for (i = 0; i < n; i++) {
			outstanding--;
			if (wc[i].status == IBV_WC_SUCCESS) {
				if (errors)
					ok_after_error++;
				else
					ok++;
				continue;
			}
			if (!errors++) {
				first = wc[i].status;
				printf("wc: first error after %d successes: %s (%d)\n",
				       ok, ibv_wc_status_str(wc[i].status),
				       wc[i].status);
			} else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
				flushed++;
			} else {
				printf("wc: later error %s (%d)\n",
				       ibv_wc_status_str(wc[i].status),
				       wc[i].status);
			}
		}
		if (!ready_made && ok >= READY_AFTER) {
			ready_made = 1;
			printf("linkcut: streaming\n");
			fflush(stdout);
			if (ready && close(open(ready, O_CREAT | O_WRONLY, 0644)))
				fail(ready);
			cut_wait = now() + wait;
		}
		if (!errors && !disc && ready_made && now() > cut_wait) {
			printf("linkcut: no completion failed %d s after the cut: rdma_disconnect()\n",
			       wait);
			fflush(stdout);
			if (rdma_disconnect(id))
				printf("linkcut: rdma_disconnect: %s\n",
				       strerror(errno));
			disc = 1;
		}
		if (errors && !outstanding)
			break;
		if (!n) {
			ev = next_event(1);
			if (ev)
				rdma_ack_cm_event(ev);
		}
	}
	printf("wc: %d ok, %d errors (%d flushed), %d ok after the first error, %d outstanding\n",
	       ok, errors, flushed, ok_after_error, outstanding);
	if (outstanding) {
		printf("linkcut: FAIL %d WRs still outstanding at the deadline\n",
		       outstanding);
		rc = 2;
	} else if (!errors || !ready_made) {
		printf("linkcut: FAIL no error completion after the cut\n");
		rc = 1;
	}

	/* What the CM says on its own, then after a disconnect. */
	cut_wait = now() + 5;
	while (!disc && !disconnected && now() < cut_wait &&
	       (ev = next_event((cut_wait - now()) * 1000)))
		rdma_ack_cm_event(ev);
	if (!disc && rdma_disconnect(id))
		printf("linkcut: rdma_disconnect: %s\n", strerror(errno));
	while (!disconnected && (ev = next_event(-1)))
		rdma_ack_cm_event(ev);
	printf("summary: first-error %s, later all flushed %s, flushed by a disconnect %s, all completed %s, events %s\n",
	       first < 0 ? "none" : ibv_wc_status_str(first),
	       errors == flushed + 1 ? "yes" : "no", disc ? "yes" : "no",
	       outstanding ? "no" : "yes", events[0] ? events : "none");
	fflush(stdout);
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	const char *host = NULL, *port = "7471", *ready = NULL;
	struct sockaddr_in sin;
	int c, serve = -1, secs = 150, wait = 20, rc;

	while ((c = getopt(argc, argv, "s:c:p:t:w:r:")) != -1) {
		switch (c) {
		case 's':
		case 'c':
			serve = c == 's';
			host = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 't':
			secs = atoi(optarg);
			break;
		case 'r':
			ready = optarg;
			break;
		case 'w':
			wait = atoi(optarg);
			break;
		default:
			serve = -1;
			host = NULL;
			optind = argc;
			break;
		}
	}
	if (!host || serve < 0) {
		fprintf(stderr, "usage: %s -s|-c ADDR [-p PORT] [-t SECS] [-w SECS] [-r FILE]\n",
			argv[0]);
		return 1;
	}
	deadline = now() + secs;
	get_addr(host, port, &sin);
	ch = rdma_create_event_channel();
	if (!ch)
		fail("rdma_create_event_channel");
	rc = serve ? server(&sin) : client(&sin, ready, wait);
	rdma_destroy_event_channel(ch);
	return rc;
}
