// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rcbench: RC SEND ping-pong latency, 64 B SEND message rate, and 64 KB
 * RDMA WRITE and SEND bandwidth between a server and a client process,
 * connected with rdma_cm.  It uses the librdmacm and libibverbs API only, so the
 * same source is built against libkqp (rcbench) and against rdma-core
 * (rcbench_rdmacm), and `make bench` compares the two.
 *
 * Every test is a connection of its own.  The client's connect private
 * data says which test it is and how many messages the server will see,
 * so the server needs no options beyond its address; the accept private
 * data gives the client the server's receive depth (its send credits)
 * and, for RDMA WRITE, the target buffer.  A connection whose request
 * says "quit" is rejected and ends the server.
 *
 * The client prints its results as "key value" lines on stdout, and
 * what it did as "# ..." lines; tools/bench/table.sh reads them.
 *
 * Nothing is measured blind: every completion's status, opcode and length
 * is checked, ping-pong messages carry sequence numbers both sides check,
 * the server takes exactly the announced number of messages, the RDMA
 * WRITE test ends with a data check of the whole target buffer, and the
 * server of the SEND bandwidth test checks every message's whole payload.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define BENCH_MAGIC	0x6b717062	/* "kqpb" */

/* Sizes the tests use: SEND latency, message rate, RDMA WRITE and SEND bandwidth. */
#define LAT_SMALL	8
#define LAT_LARGE	4096
#define RATE_SIZE	64
#define WRITE_SIZE	65536

/* Every receive buffer holds the largest SEND. */
#define SLOT_SIZE	LAT_LARGE
#define SQ_DEPTH	128
#define RQ_DEPTH	256
/* One signaled send in this many, in the latency and rate tests. */
#define SIG_EVERY	16
/* The server hands back credits, and reposts receives, this many at once. */
#define CREDIT_BATCH	32
/* RDMA WRITEs, and bandwidth SENDs, in flight. */
#define WRITE_DEPTH	16
/*
 * The SEND bandwidth server's receives: this many of WRITE_SIZE bytes,
 * all posted before it accepts, reposted and handed back as credits
 * SENDBW_CREDIT_BATCH at a time.
 */
#define SENDBW_RQ_DEPTH	64
#define SENDBW_CREDIT_BATCH 16
/* Every bandwidth SEND carries the pattern of this seed. */
#define SENDBW_SEED	0x73656e64	/* "send" */
#define MAX_INLINE	64
#define MAX_LIST	64

/* A connection or CM step that takes this long has failed. */
#define CM_WAIT_MS	30000
/* A data path that makes no progress for this long has failed. */
#define STALL_NS	(30 * 1000000000ULL)
/* The RDMA WRITE server sleeps through the whole test, then checks. */
#define WRITE_WAIT_MS	180000

enum test_kind {
	TEST_LAT = 1,
	TEST_RATE,
	TEST_WRITE,
	TEST_QUIT,
	TEST_SENDBW,
	/* TEST_LAT, each side waiting for its send's completion (ib_send_lat) */
	TEST_LAT_SIG,
};

/* Connect private data: at most 56 bytes for RC over IB/RoCE CM. */
struct test_req {
	uint32_t magic;
	uint32_t kind;
	uint32_t size;
	uint32_t list;
	uint64_t count;		/* messages the server receives, warm-up included */
};

/* Accept (and reject) private data. */
struct test_rep {
	uint32_t magic;
	int32_t status;		/* 0, or the server's errno when it rejects */
	uint32_t credits;	/* receives posted at accept time */
	uint32_t rkey;
	uint64_t addr;
	uint32_t len;
	uint32_t __pad;
};

struct opts {
	const char *addr;
	uint16_t port;
	bool server;
	const char *ready;
	unsigned int connect_timeout;	/* seconds */
	uint64_t lat_iters, lat_warmup;
	uint64_t rate_msgs, rate_warmup;
	uint64_t write_msgs, write_warmup;
	uint64_t sendbw_msgs, sendbw_warmup;
	const char *scale;		/* --scale N,... */
	const char *ids;		/* --ids N,... */
	const char *stamps;		/* --stamps FILE */
	unsigned int budget;		/* --budget SEC, or 0 */
};

/* The client's last message of the RDMA WRITE test. */
struct write_check {
	uint32_t seed;		/* of the pattern the last WRITE carried */
	uint32_t __pad;
};

struct conn {
	struct rdma_event_channel *ch;	/* the client's own; the listener's on the server */
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;	/* the receive CQ's, when it sleeps */
	struct ibv_cq *scq, *rcq;
	struct ibv_mr *mr;
	char *buf;			/* send slot, then rq_depth receive slots */
	size_t buf_len;
	uint32_t slot_size;		/* of each slot in buf */
	uint32_t rq_depth;		/* receives posted at setup */
	char *wbuf;			/* RDMA WRITE source or target */
	struct ibv_mr *wmr;
	uint32_t max_inline;
	uint32_t sq_depth;
	/* Sends: posted so far, and known complete (the wr_id of a signaled one). */
	uint64_t posted, done;
	struct test_rep peer;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * --stamps FILE: when each 8 B ping-pong message was posted and when the
 * poll that returned it came back, on this side, for make
 * bench-breakdown (tools/bench/bench-breakdown.sh), which sets them beside
 * the kernel's trace (trace_clock mono: the same clock as CLOCK_MONOTONIC).
 * Kept in memory while the test runs and written at its end, so that
 * taking them costs a clock read.
 */
#define STAMPS_MAX	(1U << 20)

enum stamp_kind { STAMP_POST, STAMP_POLL };

static struct {
	const char *path;
	uint64_t *ns;		/* kind in the low bit */
	uint32_t n;
} stamps;

static void stamp(uint32_t size, enum stamp_kind kind, uint64_t ns)
{
	if (!stamps.path || size != LAT_SMALL)
		return;
	if (!stamps.ns) {
		stamps.ns = malloc(STAMPS_MAX * sizeof(*stamps.ns));
		if (!stamps.ns) {
			stamps.path = NULL;
			return;
		}
	}
	if (stamps.n < STAMPS_MAX)
		stamps.ns[stamps.n++] = (ns & ~1ULL) | kind;
}

/* "NS post|poll client|server PID" lines; 0 or -1. */
static int stamps_write(bool server)
{
	FILE *f;
	uint32_t i;

	if (!stamps.path)
		return 0;
	f = fopen(stamps.path, "w");
	if (!f) {
		fprintf(stderr, "rcbench: %s: %s\n", stamps.path, strerror(errno));
		return -1;
	}
	for (i = 0; i < stamps.n; i++)
		fprintf(f, "%llu %s %s %d\n",
			(unsigned long long)(stamps.ns[i] & ~1ULL),
			stamps.ns[i] & 1 ? "poll" : "post",
			server ? "server" : "client", (int)getpid());
	return fclose(f) ? -1 : 0;
}

static void report_wc(const char *what, const struct ibv_wc *wc)
{
	fprintf(stderr, "rcbench: %s: completion status %d, %s (opcode %d, wr_id %llu)\n",
		what, wc->status, ibv_wc_status_str(wc->status), wc->opcode,
		(unsigned long long)wc->wr_id);
}

/* Next CM event within @ms, or NULL. */
static struct rdma_cm_event *cm_next(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n;

	n = poll(&pfd, 1, ms);
	if (n <= 0) {
		if (!n)
			errno = ETIMEDOUT;
		return NULL;
	}
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* Wait for @type (status 0) and ack it; 0 on success. */
static int cm_wait(struct rdma_event_channel *ch, enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = cm_next(ch, CM_WAIT_MS);
	int ret = 0;

	if (!ev) {
		fprintf(stderr, "rcbench: waiting for %s: %s\n",
			rdma_event_str(type), strerror(errno));
		return -1;
	}
	if (ev->event != type || ev->status) {
		fprintf(stderr, "rcbench: expected %s, got %s (status %d)\n",
			rdma_event_str(type), rdma_event_str(ev->event),
			ev->status);
		ret = -1;
	}
	rdma_ack_cm_event(ev);
	return ret;
}

/* @addr and @port in @sin: 0, or -1 when @addr is no IPv4 address. */
static int get_addr(struct sockaddr_in *sin, const char *addr, uint16_t port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin->sin_addr) != 1) {
		fprintf(stderr, "rcbench: bad address %s\n", addr);
		return -1;
	}
	return 0;
}

/* A new event channel, or NULL (said on stderr). */
static struct rdma_event_channel *new_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		perror("rcbench: rdma_create_event_channel");
	return ch;
}

/*
 * A new event channel in @ch and an id on it, bound to @addr and @port,
 * in @id: 0, or -1 with neither left (@what says which failed).
 */
static int bound_id(const char *addr, uint16_t port, const char *what,
		    struct rdma_event_channel **ch, struct rdma_cm_id **id)
{
	struct sockaddr_in sin;

	*id = NULL;
	if (get_addr(&sin, addr, port))
		return -1;
	*ch = new_channel();
	if (!*ch)
		return -1;
	if (rdma_create_id(*ch, id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(*id, (struct sockaddr *)&sin)) {
		perror(what);
		if (*id)
			rdma_destroy_id(*id);
		rdma_destroy_event_channel(*ch);
		return -1;
	}
	return 0;
}

static char *recv_slot(struct conn *c, uint64_t i)
{
	return c->buf + (size_t)c->slot_size * (1 + i);
}

/*
 * A ping-pong message carries its sequence number in its first and last
 * eight bytes, so a lost, repeated or truncated one shows.
 */
static void put_seq(char *p, uint32_t size, uint64_t seq)
{
	memcpy(p, &seq, sizeof(seq));
	memcpy(p + size - sizeof(seq), &seq, sizeof(seq));
}

static int check_seq(const char *p, uint32_t size, uint64_t seq)
{
	uint64_t a, b;

	memcpy(&a, p, sizeof(a));
	memcpy(&b, p + size - sizeof(b), sizeof(b));
	if (a == seq && b == seq)
		return 0;
	fprintf(stderr, "rcbench: message %llu of %u bytes carries %llu/%llu\n",
		(unsigned long long)seq, size, (unsigned long long)a,
		(unsigned long long)b);
	return -1;
}

/* The RDMA WRITE test's final contents: a pattern no earlier WRITE had. */
static uint32_t pattern_word(uint32_t seed, size_t i)
{
	uint32_t x = seed ^ (uint32_t)(i * 2654435761u);

	x ^= x >> 15;
	x *= 0x2c1b3c6dU;
	return x ^ (x >> 12);
}

static void fill_pattern(char *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len / 4; i++) {
		uint32_t w = pattern_word(seed, i);

		memcpy(p + 4 * i, &w, 4);
	}
}

/* The offset plus one of the first word that differs, or 0. */
static size_t check_pattern(const char *p, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len / 4; i++) {
		uint32_t w = pattern_word(seed, i);

		if (memcmp(p + 4 * i, &w, 4))
			return 4 * i + 1;
	}
	return 0;
}

/* Post receives for slots @slots[0..n-1], as one list. */
static int post_recvs(struct conn *c, const uint32_t *slots, int n)
{
	struct ibv_recv_wr wr[MAX_LIST], *bad;
	struct ibv_sge sge[MAX_LIST];
	int i, ret;

	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)recv_slot(c, slots[i]);
		sge[i].length = c->slot_size;
		sge[i].lkey = c->mr->lkey;
		wr[i].wr_id = slots[i];
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_recv(c->id->qp, wr, &bad);
	if (ret)
		fprintf(stderr, "rcbench: ibv_post_recv of %d: %s\n", n,
			strerror(ret));
	return ret ? -1 : 0;
}

static int post_all_recvs(struct conn *c, int depth)
{
	uint32_t slots[MAX_LIST];
	int i, n;

	for (i = 0; i < depth; i += n) {
		n = depth - i < MAX_LIST ? depth - i : MAX_LIST;
		for (int j = 0; j < n; j++)
			slots[j] = i + j;
		if (post_recvs(c, slots, n))
			return -1;
	}
	return 0;
}

/*
 * Reap send completions; with @wait, until at least one arrived.  Only
 * signaled sends complete, and each one's wr_id is the number of sends
 * posted up to and including it: RC completes in order, so every send
 * before it is done too.
 */
static int reap_sends(struct conn *c, bool wait)
{
	struct ibv_wc wc[16];
	uint64_t start = 0;
	unsigned int spins = 0;
	int n, i;

	for (;;) {
		n = ibv_poll_cq(c->scq, 16, wc);
		if (n < 0) {
			fprintf(stderr, "rcbench: ibv_poll_cq (send): %d\n", n);
			return -1;
		}
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				report_wc("send", &wc[i]);
				return -1;
			}
			c->done = wc[i].wr_id;
		}
		if (n || !wait)
			return 0;
		if (++spins % 4096 == 0) {
			if (!start)
				start = now_ns();
			else if (now_ns() - start > STALL_NS) {
				fprintf(stderr, "rcbench: no send completion for %llu s\n",
					STALL_NS / 1000000000ULL);
				return -1;
			}
		}
	}
}

/*
 * Post @n sends of @size bytes as one list (one ibv_post_send() call),
 * signaling one in @sig_every and, with @last, the final one.  Waits for
 * room in the send queue first.
 */
static int post_sends(struct conn *c, int n, enum ibv_wr_opcode op,
		      uint32_t size, unsigned int sig_every, bool last)
{
	struct ibv_send_wr wr[MAX_LIST], *bad;
	struct ibv_sge sge;
	int i, ret;

	while (c->posted - c->done + n > c->sq_depth) {
		/* Nothing signaled in flight would mean waiting forever. */
		if (c->posted / sig_every * sig_every <= c->done) {
			fprintf(stderr, "rcbench: send queue full, none signaled\n");
			return -1;
		}
		if (reap_sends(c, true))
			return -1;
	}
	/* RDMA WRITEs and bandwidth SENDs come from the WRITE buffer. */
	if (op == IBV_WR_RDMA_WRITE || size > c->slot_size) {
		sge.addr = (uintptr_t)c->wbuf;
		sge.lkey = c->wmr->lkey;
	} else {
		sge.addr = (uintptr_t)c->buf;
		sge.lkey = c->mr->lkey;
	}
	sge.length = size;
	for (i = 0; i < n; i++) {
		uint64_t seq = c->posted + i + 1;

		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = seq;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = op;
		if (seq % sig_every == 0 || (last && i == n - 1))
			wr[i].send_flags |= IBV_SEND_SIGNALED;
		if (size <= c->max_inline && op == IBV_WR_SEND)
			wr[i].send_flags |= IBV_SEND_INLINE;
		if (op == IBV_WR_RDMA_WRITE) {
			wr[i].wr.rdma.remote_addr = c->peer.addr;
			wr[i].wr.rdma.rkey = c->peer.rkey;
		}
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_send(c->id->qp, wr, &bad);
	if (ret) {
		fprintf(stderr, "rcbench: ibv_post_send of %d: %s\n", n,
			strerror(ret));
		return -1;
	}
	c->posted += n;
	return 0;
}

/* Wait until every send posted so far completed (the last was signaled). */
static int drain_sends(struct conn *c)
{
	while (c->done < c->posted)
		if (reap_sends(c, true))
			return -1;
	return 0;
}

/*
 * Busy-poll the receive CQ for up to @max completions; with @wait, until
 * at least one.  Each must be a successful receive of @size bytes
 * (any size if @size is 0).  Returns how many, or -1.
 */
static int poll_recvs(struct conn *c, struct ibv_wc *wc, int max, bool wait,
		      uint32_t size)
{
	uint64_t start = 0;
	unsigned int spins = 0;
	int n, i;

	for (;;) {
		n = ibv_poll_cq(c->rcq, max, wc);
		if (n < 0) {
			fprintf(stderr, "rcbench: ibv_poll_cq (recv): %d\n", n);
			return -1;
		}
		if (n || !wait)
			break;
		if (++spins % 4096 == 0) {
			if (!start)
				start = now_ns();
			else if (now_ns() - start > STALL_NS) {
				fprintf(stderr, "rcbench: no receive for %llu s\n",
					STALL_NS / 1000000000ULL);
				return -1;
			}
		}
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			report_wc("recv", &wc[i]);
			return -1;
		}
		if (wc[i].opcode != IBV_WC_RECV ||
		    (size && wc[i].byte_len != size)) {
			fprintf(stderr, "rcbench: receive of %u bytes (opcode %d), expected %u\n",
				wc[i].byte_len, wc[i].opcode, size);
			return -1;
		}
	}
	return n;
}

/*
 * Sleep on the receive CQ's channel until a receive of @size bytes
 * completes, for at most @ms.  Returns 1, or -1.
 */
static int wait_recv(struct conn *c, struct ibv_wc *wc, uint32_t size, int ms)
{
	struct pollfd pfd = { .fd = c->cch->fd, .events = POLLIN };
	uint64_t end = now_ns() + ms * 1000000ULL, t;
	struct ibv_cq *cq;
	void *ctx;
	int n;

	for (;;) {
		if (ibv_req_notify_cq(c->rcq, 0)) {
			fprintf(stderr, "rcbench: ibv_req_notify_cq failed\n");
			return -1;
		}
		/* Polled after arming: a completion from before is not missed. */
		n = poll_recvs(c, wc, 1, false, size);
		if (n)
			return n;
		t = now_ns();
		if (t >= end) {
			fprintf(stderr, "rcbench: no receive in %d s\n", ms / 1000);
			return -1;
		}
		n = poll(&pfd, 1, (end - t) / 1000000 + 1);
		if (n < 0) {
			perror("rcbench: poll");
			return -1;
		}
		if (n == 0)
			continue;
		if (ibv_get_cq_event(c->cch, &cq, &ctx)) {
			perror("rcbench: ibv_get_cq_event");
			return -1;
		}
		ibv_ack_cq_events(cq, 1);
	}
}

/*
 * PD, CQs, QP and memory on @id, and @rq_depth receives of @slot_size
 * bytes posted.  With @sleep, the receive CQ gets a completion channel.
 */
static int conn_setup(struct conn *c, struct rdma_cm_id *id, bool sleep,
		      uint32_t slot_size, uint32_t rq_depth)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = {
			.max_send_wr = SQ_DEPTH,
			.max_recv_wr = RQ_DEPTH,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = MAX_INLINE,
		},
	};
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	c->id = id;
	/* A client's conn is reused: sends are counted per connection. */
	c->posted = 0;
	c->done = 0;
	c->pd = ibv_alloc_pd(id->verbs);
	if (!c->pd) {
		perror("rcbench: ibv_alloc_pd");
		return -1;
	}
	if (sleep) {
		c->cch = ibv_create_comp_channel(id->verbs);
		if (!c->cch) {
			perror("rcbench: ibv_create_comp_channel");
			return -1;
		}
	}
	c->scq = ibv_create_cq(id->verbs, SQ_DEPTH, NULL, NULL, 0);
	c->rcq = ibv_create_cq(id->verbs, RQ_DEPTH, NULL, c->cch, 0);
	if (!c->scq || !c->rcq) {
		perror("rcbench: ibv_create_cq");
		return -1;
	}
	attr.send_cq = c->scq;
	attr.recv_cq = c->rcq;
	if (rdma_create_qp(id, c->pd, &attr)) {
		perror("rcbench: rdma_create_qp");
		return -1;
	}
	c->max_inline = attr.cap.max_inline_data;
	c->sq_depth = attr.cap.max_send_wr < SQ_DEPTH ? attr.cap.max_send_wr :
							SQ_DEPTH;

	c->slot_size = slot_size;
	c->rq_depth = rq_depth;
	c->buf_len = (size_t)slot_size * (1 + rq_depth);
	if (posix_memalign((void **)&c->buf, 4096, c->buf_len) ||
	    posix_memalign((void **)&c->wbuf, 4096, WRITE_SIZE)) {
		fprintf(stderr, "rcbench: out of memory\n");
		return -1;
	}
	memset(c->buf, 0x5a, c->buf_len);
	memset(c->wbuf, 0xa5, WRITE_SIZE);
	c->mr = ibv_reg_mr(c->pd, c->buf, c->buf_len, access);
	c->wmr = ibv_reg_mr(c->pd, c->wbuf, WRITE_SIZE, access);
	if (!c->mr || !c->wmr) {
		perror("rcbench: ibv_reg_mr");
		return -1;
	}
	return post_all_recvs(c, rq_depth);
}

static void conn_teardown(struct conn *c)
{
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->wmr)
		ibv_dereg_mr(c->wmr);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->scq)
		ibv_destroy_cq(c->scq);
	if (c->rcq)
		ibv_destroy_cq(c->rcq);
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	free(c->buf);
	free(c->wbuf);
	c->id = NULL;
	c->pd = NULL;
	c->cch = NULL;
	c->scq = c->rcq = NULL;
	c->mr = c->wmr = NULL;
	c->buf = c->wbuf = NULL;
}

/* ---- the server ---- */

/*
 * Answer @count ping-pong messages of @size bytes, each with its
 * sequence number echoed.
 */
static int serve_lat(struct conn *c, const struct test_req *rq)
{
	bool sig = rq->kind == TEST_LAT_SIG;
	struct ibv_wc wc;
	uint32_t slot;
	uint64_t i;

	for (i = 0; i < rq->count; i++) {
		if (poll_recvs(c, &wc, 1, true, rq->size) < 0)
			return -1;
		stamp(rq->size, STAMP_POLL, now_ns());
		if (check_seq(recv_slot(c, wc.wr_id), rq->size, i))
			return -1;
		put_seq(c->buf, rq->size, i);
		stamp(rq->size, STAMP_POST, now_ns());
		/* The reply first: reposting is off the critical path. */
		if (post_sends(c, 1, IBV_WR_SEND, rq->size,
			       sig ? 1 : SIG_EVERY, false) ||
		    (sig && reap_sends(c, true)))
			return -1;
		slot = wc.wr_id;
		if (post_recvs(c, &slot, 1) || reap_sends(c, false))
			return -1;
	}
	return 0;
}

/*
 * Take @count messages, reposting receives and handing back that many
 * credits, CREDIT_BATCH at a time.
 */
static int serve_rate(struct conn *c, const struct test_req *rq)
{
	struct ibv_wc wc[CREDIT_BATCH];
	uint32_t slots[CREDIT_BATCH];
	uint64_t got = 0;
	int n, i, pending = 0;

	/* Every credit message says the same, so sends may share the slot. */
	*(uint32_t *)c->buf = CREDIT_BATCH;
	while (got < rq->count) {
		n = poll_recvs(c, wc, CREDIT_BATCH - pending, true, rq->size);
		if (n < 0)
			return -1;
		for (i = 0; i < n; i++)
			slots[pending++] = wc[i].wr_id;
		got += n;
		if (pending < CREDIT_BATCH)
			continue;
		if (post_recvs(c, slots, pending))
			return -1;
		if (post_sends(c, 1, IBV_WR_SEND, sizeof(uint32_t), SIG_EVERY,
			       false) ||
		    reap_sends(c, false))
			return -1;
		pending = 0;
	}
	return 0;
}

/*
 * Take @count SENDs of WRITE_SIZE bytes, each checked whole against the
 * pattern the client sends, reposting receives and handing back that
 * many credits SENDBW_CREDIT_BATCH at a time.
 */
static int serve_sendbw(struct conn *c, const struct test_req *rq)
{
	struct ibv_wc wc[SENDBW_CREDIT_BATCH];
	uint32_t slots[SENDBW_CREDIT_BATCH];
	uint64_t got = 0;
	int n, i, pending = 0;
	char *want;

	want = malloc(WRITE_SIZE);
	if (!want) {
		fprintf(stderr, "rcbench: out of memory\n");
		return -1;
	}
	fill_pattern(want, WRITE_SIZE, SENDBW_SEED);
	*(uint32_t *)c->buf = SENDBW_CREDIT_BATCH;
	while (got < rq->count) {
		n = poll_recvs(c, wc, SENDBW_CREDIT_BATCH - pending, true,
			       rq->size);
		if (n < 0)
			goto fail;
		for (i = 0; i < n; i++) {
			if (memcmp(recv_slot(c, wc[i].wr_id), want, WRITE_SIZE)) {
				fprintf(stderr, "rcbench: SEND %llu carries the wrong data\n",
					(unsigned long long)(got + i));
				goto fail;
			}
			slots[pending++] = wc[i].wr_id;
		}
		got += n;
		if (pending < SENDBW_CREDIT_BATCH)
			continue;
		if (post_recvs(c, slots, pending))
			goto fail;
		if (post_sends(c, 1, IBV_WR_SEND, sizeof(uint32_t), SIG_EVERY,
			       false) ||
		    reap_sends(c, false))
			goto fail;
		pending = 0;
	}
	free(want);
	return 0;
fail:
	free(want);
	return -1;
}

/*
 * The client's RDMA WRITEs need nothing from us.  Its last message says
 * which pattern the last WRITE left in our buffer: check it and answer
 * with the offset plus one of the first bad word, or 0.
 */
static int serve_write(struct conn *c)
{
	struct write_check chk;
	struct ibv_wc wc;
	uint32_t bad;

	if (wait_recv(c, &wc, sizeof(chk), WRITE_WAIT_MS) < 0)
		return -1;
	memcpy(&chk, recv_slot(c, wc.wr_id), sizeof(chk));
	bad = check_pattern(c->wbuf, WRITE_SIZE, chk.seed);
	if (bad)
		fprintf(stderr, "rcbench: RDMA WRITE target differs at byte %u\n",
			bad - 1);
	memcpy(c->buf, &bad, sizeof(bad));
	if (post_sends(c, 1, IBV_WR_SEND, sizeof(bad), 1, true) ||
	    drain_sends(c))
		return -1;
	return bad ? -1 : 0;
}

/* Successful receives left after a test: messages nobody announced. */
static int check_no_more(struct conn *c)
{
	struct ibv_wc wc[16];
	int n, i, extra = 0;

	while ((n = ibv_poll_cq(c->rcq, 16, wc)) > 0)
		for (i = 0; i < n; i++)
			extra += wc[i].status == IBV_WC_SUCCESS;
	if (!extra)
		return 0;
	fprintf(stderr, "rcbench: %d messages more than the client announced\n",
		extra);
	return -1;
}

/* Is @rq a test this server can run? */
static bool req_valid(const struct test_req *rq)
{
	switch (rq->kind) {
	case TEST_LAT:
	case TEST_LAT_SIG:
		return rq->size >= sizeof(uint64_t) &&
		       rq->size <= SLOT_SIZE && rq->count;
	case TEST_RATE:
		return rq->size && rq->size <= SLOT_SIZE && rq->list &&
		       rq->list <= MAX_LIST && rq->count;
	case TEST_WRITE:
		return rq->size == WRITE_SIZE;
	case TEST_SENDBW:
		return rq->size == WRITE_SIZE && rq->count;
	default:
		return false;
	}
}

/* Handle one connection request; 1 when it says quit. */
static int serve_one(struct rdma_event_channel *ch, struct rdma_cm_event *ev)
{
	struct test_rep rep = { .magic = BENCH_MAGIC };
	struct rdma_conn_param cp = {
		.retry_count = 7,
		.rnr_retry_count = 7,
		.private_data = &rep,
		.private_data_len = sizeof(rep),
	};
	struct rdma_cm_id *id = ev->id;
	struct conn c = { .ch = ch };
	struct test_req rq;
	int ret = -1;

	memset(&rq, 0, sizeof(rq));
	if (ev->param.conn.private_data &&
	    ev->param.conn.private_data_len >= sizeof(rq))
		memcpy(&rq, ev->param.conn.private_data, sizeof(rq));
	rdma_ack_cm_event(ev);
	if (rq.magic != BENCH_MAGIC || !req_valid(&rq)) {
		bool quit = rq.magic == BENCH_MAGIC && rq.kind == TEST_QUIT;

		/* A request we cannot run ends the server: a bug, not noise. */
		if (!quit)
			fprintf(stderr, "rcbench: bad request (kind %u size %u list %u)\n",
				rq.kind, rq.size, rq.list);
		rep.status = quit ? 0 : EPROTO;
		rdma_reject(id, &rep, sizeof(rep));
		rdma_destroy_id(id);
		return quit ? 1 : -1;
	}
	/* The SEND bandwidth test's receives take a whole message each. */
	if (rq.kind == TEST_SENDBW)
		ret = conn_setup(&c, id, false, WRITE_SIZE, SENDBW_RQ_DEPTH);
	else
		ret = conn_setup(&c, id, rq.kind == TEST_WRITE, SLOT_SIZE,
				 RQ_DEPTH);
	if (ret) {
		ret = -1;
		rep.status = EIO;
		rdma_reject(id, &rep, sizeof(rep));
		goto out;
	}
	ret = -1;
	rep.credits = c.rq_depth;
	rep.addr = (uintptr_t)c.wbuf;
	rep.rkey = c.wmr->rkey;
	rep.len = WRITE_SIZE;
	if (rdma_accept(id, &cp)) {
		perror("rcbench: rdma_accept");
		goto out;
	}
	if (cm_wait(ch, RDMA_CM_EVENT_ESTABLISHED))
		goto out;
	switch (rq.kind) {
	case TEST_LAT:
	case TEST_LAT_SIG:
		ret = serve_lat(&c, &rq);
		if (!ret && rq.kind == TEST_LAT && rq.size == LAT_SMALL)
			ret = stamps_write(true);
		break;
	case TEST_RATE:
		ret = serve_rate(&c, &rq);
		break;
	case TEST_SENDBW:
		ret = serve_sendbw(&c, &rq);
		break;
	default:
		ret = serve_write(&c);
		break;
	}
	if (cm_wait(ch, RDMA_CM_EVENT_DISCONNECTED) ||
	    (!ret && check_no_more(&c)))
		ret = -1;
out:
	conn_teardown(&c);
	return ret;
}

static int server(const struct opts *o)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *lid;
	int ret = -1, r;

	if (bound_id(o->addr, o->port, "rcbench: listen", &ch, &lid))
		return -1;
	if (rdma_listen(lid, 4)) {
		perror("rcbench: listen");
		goto out_id;
	}
	if (o->ready) {
		FILE *f = fopen(o->ready, "w");

		if (!f || fclose(f)) {
			perror(o->ready);
			goto out_id;
		}
	}
	fprintf(stderr, "rcbench: server listening on %s port %u\n", o->addr,
		o->port);
	for (;;) {
		if (rdma_get_cm_event(ch, &ev)) {
			perror("rcbench: rdma_get_cm_event");
			break;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* Leftovers of a finished connection (TIMEWAIT_EXIT...). */
			rdma_ack_cm_event(ev);
			continue;
		}
		r = serve_one(ch, ev);
		if (r < 0)
			break;
		if (r > 0) {
			ret = 0;
			break;
		}
	}
out_id:
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	return ret;
}


/* ---- scale: N connections, and N ids, in one process ---- */

/*
 * rcbench --scale N,...: for each N, one listener and N client ids in
 * this process, on two event channels, all on the same device, sharing
 * one PD, one MR and four CQs (send and receive, client and server).
 * Measured, each divided by N: creating the client QPs; connecting them,
 * SCALE_WINDOW connections in flight at a time, the server side creating
 * its QP, posting one receive and accepting each request as it comes;
 * one SEND posted on each client QP and its completion, and the
 * receive's on the server, one QP after the other; destroying the client
 * QPs and ids, once disconnected.  Address and route resolution, the
 * disconnection and the server side's teardown are not measured.  An N
 * below SCALE_MIN_CONNS runs again, with the same listener, PD and CQs,
 * until SCALE_MIN_CONNS connections were measured: one scheduling delay
 * in ten connections would say little about the cost of one.  An
 * unmeasured run of SCALE_WARMUP connections comes first, so the first N
 * does not pay for the process's first connection.
 *
 * Memory: the kernel's (Slab and VmallocUsed in /proc/meminfo) and the
 * process's pinned and locked memory (VmPin and VmLck in
 * /proc/self/status), read before and after creating the N client QPs,
 * and before and after creating SCALE_CQS CQs of SCALE_CQE entries:
 * their growth per QP and per CQ.  Whatever else the machine does meanwhile
 * counts too, so only large N mean much.
 *
 * --ids N,...: for each N, N ids created on one channel, then destroyed,
 * as many times as it takes to measure SCALE_MIN_IDS: microseconds per
 * id for both, and the kernel's memory per id while they exist.
 *
 * --budget SEC: an N whose predicted run time, from the N before it,
 * does not fit in what is left of SEC is skipped, and one that runs past
 * it is stopped; either is reported as a "#" line, and is not a failure.
 */

/* Connections being set up at once, whatever N: the same at every N. */
#define SCALE_WINDOW	10
#define SCALE_WARMUP	2
/* Measured at least this many connections, and ids, at every N. */
#define SCALE_MIN_CONNS	100
#define SCALE_MIN_IDS	1000
#define SCALE_MSG	8
#define SCALE_SLOT	64
#define SCALE_CQS	100
#define SCALE_CQE	256
/* Most N in one --scale or --ids list. */
#define SCALE_MAX_N	8

/* Bytes in use: the kernel's, and pinned or locked by this process. */
struct mem_use {
	long long kernel;
	long long pinned;
};

/* The sum of @keys' values (kB) in @file, in bytes; -1 if one is missing. */
static long long proc_bytes(const char *file, const char *const *keys,
			    int nkeys)
{
	long long v, sum = 0;
	char line[256], name[64];
	int found = 0, i;
	FILE *f;

	f = fopen(file, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63[^:]: %lld", name, &v) != 2)
			continue;
		for (i = 0; i < nkeys; i++) {
			if (!strcmp(name, keys[i])) {
				sum += v;
				found++;
			}
		}
	}
	fclose(f);
	return found == nkeys ? sum * 1024 : -1;
}

static void mem_read(struct mem_use *m)
{
	static const char *const kernel[] = { "Slab", "VmallocUsed" };
	static const char *const pinned[] = { "VmPin", "VmLck" };

	m->kernel = proc_bytes("/proc/meminfo", kernel, 2);
	m->pinned = proc_bytes("/proc/self/status", pinned, 2);
}

/*
 * Add to @sum what grew from @a to @b; a reading that failed makes its
 * part of @sum -1 for good.
 */
static void mem_add(struct mem_use *sum, const struct mem_use *a,
		    const struct mem_use *b)
{
	if (sum->kernel >= 0)
		sum->kernel = a->kernel >= 0 && b->kernel >= 0 ?
			      sum->kernel + b->kernel - a->kernel : -1;
	if (sum->pinned >= 0)
		sum->pinned = a->pinned >= 0 && b->pinned >= 0 ?
			      sum->pinned + b->pinned - a->pinned : -1;
}

/* Print "KEY_kernel_bytes" and "KEY_pinned_bytes": @sum per @n. */
static void mem_print(const char *key, const struct mem_use *sum,
		      unsigned int n)
{
	if (sum->kernel >= 0)
		printf("%s_kernel_bytes %.0f\n", key, (double)sum->kernel / n);
	else
		printf("# %s: no Slab or VmallocUsed in /proc/meminfo\n", key);
	if (sum->pinned >= 0)
		printf("%s_pinned_bytes %.0f\n", key, (double)sum->pinned / n);
	else
		printf("# %s: no VmPin or VmLck in /proc/self/status\n", key);
}

struct scale {
	unsigned int n;
	struct sockaddr_in sin;		/* the listener's address */
	struct rdma_event_channel *cch, *sch;	/* client ids, listener */
	struct rdma_cm_id *lid;
	struct rdma_cm_id **cid, **sid;
	unsigned int nsid;
	struct ibv_pd *pd;
	struct ibv_cq *c_scq, *c_rcq, *s_scq, *s_rcq;
	struct ibv_mr *mr;
	char *buf;		/* N client send slots, N server receive slots */
	const char *phase;	/* what a stall message names */
	uint64_t deadline;	/* of the budget, or 0 */
	bool over;		/* past it */
};

/* What scale_one() measured at one N, summed over its runs. */
struct scale_res {
	uint64_t ns[4];		/* create QP, connect, post, destroy */
	struct mem_use mem;	/* grown while creating the client QPs */
	double secs;		/* all of it, but the setup */
};

static int scale_qp(struct scale *s, struct rdma_cm_id *id, bool server)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.send_cq = server ? s->s_scq : s->c_scq,
		.recv_cq = server ? s->s_rcq : s->c_rcq,
		.cap = {
			.max_send_wr = 4,
			.max_recv_wr = 4,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = MAX_INLINE,
		},
	};

	if (rdma_create_qp(id, s->pd, &attr)) {
		perror("rcbench: scale: rdma_create_qp");
		return -1;
	}
	return 0;
}

/*
 * Handle one event of the server's channel: a connection request gets
 * its QP, one receive and an accept; ESTABLISHED and DISCONNECTED are
 * counted in @est and @disc.  Anything else is a failure, but
 * TIMEWAIT_EXIT.
 */
static int scale_server_event(struct scale *s, unsigned int *est,
			      unsigned int *disc)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	struct ibv_sge sge;
	int ret = 0;

	if (rdma_get_cm_event(s->sch, &ev)) {
		perror("rcbench: scale: rdma_get_cm_event");
		return -1;
	}
	id = ev->id;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		if (s->nsid == s->n) {
			fprintf(stderr, "rcbench: scale: more than %u requests\n",
				s->n);
			/* Not destroyed: its event is not acked yet. */
			rdma_reject(id, NULL, 0);
			ret = -1;
			break;
		}
		s->sid[s->nsid++] = id;
		if (scale_qp(s, id, true)) {
			rdma_reject(id, NULL, 0);
			ret = -1;
			break;
		}
		sge.addr = (uintptr_t)s->buf +
			   (size_t)SCALE_SLOT * (s->n + s->nsid - 1);
		sge.length = SCALE_SLOT;
		sge.lkey = s->mr->lkey;
		wr.wr_id = s->nsid - 1;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		ret = ibv_post_recv(id->qp, &wr, &bad);
		if (ret) {
			fprintf(stderr, "rcbench: scale: ibv_post_recv: %s\n",
				strerror(ret));
			ret = -1;
			break;
		}
		if (rdma_accept(id, &cp)) {
			perror("rcbench: scale: rdma_accept");
			ret = -1;
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		(*est)++;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/*
		 * The client's DREQ: answer it, or the client sees its
		 * DISCONNECTED only when the DREQ times out, after a minute.
		 */
		rdma_disconnect(id);
		(*disc)++;
		break;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		break;
	default:
		fprintf(stderr, "rcbench: scale: server: %s (status %d) while %s\n",
			rdma_event_str(ev->event), ev->status, s->phase);
		ret = -1;
		break;
	}
	rdma_ack_cm_event(ev);
	return ret;
}

/*
 * Wait for events on both channels, at most CM_WAIT_MS for the next one,
 * and hand each to @client (the client channel's) or to
 * scale_server_event().  Returns 1 when an event of the client's came,
 * 0 for one of the server's, -1 on failure or past the budget (@s->over).
 */
typedef int scale_event_fn(struct scale *s, struct rdma_cm_event *ev,
			   void *arg);

static int scale_wait(struct scale *s, unsigned int *sest, unsigned int *sdisc,
		      scale_event_fn *client, void *arg)
{
	struct pollfd pfd[2] = {
		{ .fd = s->cch->fd, .events = POLLIN },
		{ .fd = s->sch->fd, .events = POLLIN },
	};
	struct rdma_cm_event *ev;
	int n, ret;

	if (s->deadline && now_ns() > s->deadline) {
		s->over = true;
		return -1;
	}
	n = poll(pfd, 2, CM_WAIT_MS);
	if (n <= 0) {
		fprintf(stderr, "rcbench: scale: %u connections: no CM event in %d s while %s\n",
			s->n, CM_WAIT_MS / 1000, s->phase);
		return -1;
	}
	if (pfd[1].revents) {
		if (scale_server_event(s, sest, sdisc))
			return -1;
		if (!pfd[0].revents)
			return 0;
	}
	if (rdma_get_cm_event(s->cch, &ev)) {
		perror("rcbench: scale: rdma_get_cm_event");
		return -1;
	}
	ret = client(s, ev, arg);
	rdma_ack_cm_event(ev);
	return ret < 0 ? -1 : 1;
}

struct scale_count {
	enum rdma_cm_event_type want;	/* ADDR_RESOLVED: ROUTE_RESOLVED too */
	unsigned int done;
	unsigned int sest, sdisc;	/* the server's, in the whole run */
};

/* Client events while resolving, connecting or disconnecting. */
static int scale_client_event(struct scale *s, struct rdma_cm_event *ev,
			      void *arg)
{
	struct scale_count *cnt = arg;

	if (ev->event == RDMA_CM_EVENT_TIMEWAIT_EXIT)
		return 0;
	if (cnt->want == RDMA_CM_EVENT_ADDR_RESOLVED && !ev->status &&
	    ev->event == RDMA_CM_EVENT_ROUTE_RESOLVED) {
		cnt->done++;
		return 0;
	}
	/* A DREQ that timed out still disconnected: its status is ETIMEDOUT. */
	if (ev->event != cnt->want ||
	    (ev->status && ev->event != RDMA_CM_EVENT_DISCONNECTED)) {
		fprintf(stderr, "rcbench: scale: expected %s, got %s (status %d) while %s\n",
			rdma_event_str(cnt->want), rdma_event_str(ev->event),
			ev->status, s->phase);
		return -1;
	}
	if (ev->event == RDMA_CM_EVENT_ADDR_RESOLVED &&
	    rdma_resolve_route(ev->id, 2000)) {
		perror("rcbench: scale: rdma_resolve_route");
		return -1;
	}
	cnt->done++;
	return 0;
}

/* Busy-poll @cq for one successful completion of @op. */
static int scale_poll(struct ibv_cq *cq, enum ibv_wc_opcode op)
{
	uint64_t start = now_ns();
	struct ibv_wc wc;
	int n;

	for (;;) {
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0) {
			fprintf(stderr, "rcbench: scale: ibv_poll_cq: %d\n", n);
			return -1;
		}
		if (n)
			break;
		if (now_ns() - start > STALL_NS) {
			fprintf(stderr, "rcbench: scale: no completion for %llu s\n",
				STALL_NS / 1000000000ULL);
			return -1;
		}
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != op ||
	    (op == IBV_WC_RECV && wc.byte_len != SCALE_MSG)) {
		report_wc("scale", &wc);
		return -1;
	}
	return 0;
}

static void scale_free(struct scale *s)
{
	unsigned int i;

	for (i = 0; s->cid && i < s->n; i++) {
		if (!s->cid[i])
			continue;
		if (s->cid[i]->qp)
			rdma_destroy_qp(s->cid[i]);
		rdma_destroy_id(s->cid[i]);
	}
	for (i = 0; s->sid && i < s->nsid; i++) {
		if (s->sid[i]->qp)
			rdma_destroy_qp(s->sid[i]);
		rdma_destroy_id(s->sid[i]);
	}
	if (s->lid)
		rdma_destroy_id(s->lid);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	if (s->c_scq)
		ibv_destroy_cq(s->c_scq);
	if (s->c_rcq)
		ibv_destroy_cq(s->c_rcq);
	if (s->s_scq)
		ibv_destroy_cq(s->s_scq);
	if (s->s_rcq)
		ibv_destroy_cq(s->s_rcq);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->cch)
		rdma_destroy_event_channel(s->cch);
	if (s->sch)
		rdma_destroy_event_channel(s->sch);
	free(s->cid);
	free(s->sid);
	free(s->buf);
}

/* One SEND on each client QP, and its completions: measured. */
static int scale_post(struct scale *s)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	unsigned int i, got;
	int r;

	for (i = 0; i < s->n; i++) {
		char *p = s->buf + (size_t)SCALE_SLOT * i;

		/* 1 to n: a receive slot nobody wrote holds 0. */
		got = i + 1;
		memcpy(p, &got, sizeof(got));
		sge.addr = (uintptr_t)p;
		sge.length = SCALE_MSG;
		sge.lkey = s->mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		r = ibv_post_send(s->cid[i]->qp, &wr, &bad);
		if (r) {
			fprintf(stderr, "rcbench: scale: ibv_post_send: %s\n",
				strerror(r));
			return -1;
		}
		if (scale_poll(s->c_scq, IBV_WC_SEND) ||
		    scale_poll(s->s_rcq, IBV_WC_RECV))
			return -1;
	}
	return 0;
}

/* Each server QP got one client's message, and each client's arrived. */
static int scale_check(struct scale *s)
{
	unsigned int i, got;
	char *seen;

	seen = calloc(s->n, 1);
	if (!seen) {
		fprintf(stderr, "rcbench: out of memory\n");
		return -1;
	}
	for (i = 0; i < s->n; i++) {
		memcpy(&got, s->buf + (size_t)SCALE_SLOT * (s->n + i),
		       sizeof(got));
		if (!got || got > s->n || seen[got - 1]) {
			fprintf(stderr, "rcbench: scale: server QP %u got message %u\n",
				i, got);
			free(seen);
			return -1;
		}
		seen[got - 1] = 1;
	}
	free(seen);
	return 0;
}

/* Destroy the server's QPs and ids, once they are disconnected. */
static void scale_server_free(struct scale *s)
{
	unsigned int i;

	for (i = 0; i < s->nsid; i++) {
		if (s->sid[i]->qp)
			rdma_destroy_qp(s->sid[i]);
		rdma_destroy_id(s->sid[i]);
		s->sid[i] = NULL;
	}
	s->nsid = 0;
}

/* Start client id @i's part of a phase of scale_run(); 0 or -1. */
typedef int scale_start_fn(struct scale *s, unsigned int i);

static int scale_resolve(struct scale *s, unsigned int i)
{
	if (rdma_create_id(s->cch, &s->cid[i], NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(s->cid[i], NULL, (struct sockaddr *)&s->sin,
			      2000)) {
		perror("rcbench: scale: resolve");
		return -1;
	}
	return 0;
}

static int scale_connect(struct scale *s, unsigned int i)
{
	struct rdma_conn_param cp = {
		.retry_count = 7,
		.rnr_retry_count = 7,
	};

	if (rdma_connect(s->cid[i], &cp)) {
		perror("rcbench: scale: rdma_connect");
		return -1;
	}
	return 0;
}

static int scale_disconnect(struct scale *s, unsigned int i)
{
	if (rdma_disconnect(s->cid[i])) {
		perror("rcbench: scale: rdma_disconnect");
		return -1;
	}
	return 0;
}

/*
 * One phase of scale_run(), named @phase: @start for each of the @s->n
 * client ids, SCALE_WINDOW of them in flight, until the client side saw
 * @want for each (ADDR_RESOLVED: ROUTE_RESOLVED too, each id counts
 * twice) and, with @srv, the server's count there reached @s->n too.
 */
static int scale_window(struct scale *s, struct scale_count *cnt,
			enum rdma_cm_event_type want, const char *phase,
			const unsigned int *srv, scale_start_fn *start)
{
	unsigned int n = s->n, started = 0;
	unsigned int per = want == RDMA_CM_EVENT_ADDR_RESOLVED ? 2 : 1;

	cnt->want = want;
	cnt->done = 0;
	s->phase = phase;
	while (started < n || cnt->done < per * n || (srv && *srv < n)) {
		if (started < n &&
		    started * per - cnt->done < per * SCALE_WINDOW) {
			if (start(s, started))
				return -1;
			started++;
			continue;
		}
		if (scale_wait(s, &cnt->sest, &cnt->sdisc, scale_client_event,
			       cnt) < 0)
			return -1;
	}
	return 0;
}

/*
 * One run of @s->n connections to @s->sin, its measurements added to @r;
 * ends with none left.  0, or -1 on failure or past the budget
 * (@s->over).
 */
static int scale_run(struct scale *s, struct scale_res *r)
{
	struct scale_count cnt = { .sest = 0, .sdisc = 0 };
	struct mem_use before, after;
	unsigned int i, n = s->n;
	uint64_t t0;

	/* Every receive slot holds 0 until a message arrives. */
	memset(s->buf + (size_t)SCALE_SLOT * n, 0, (size_t)SCALE_SLOT * n);

	/* Ids, addresses and routes, SCALE_WINDOW at a time: not measured. */
	if (scale_window(s, &cnt, RDMA_CM_EVENT_ADDR_RESOLVED, "resolving",
			 NULL, scale_resolve))
		return -1;

	/* Create QP, measured. */
	mem_read(&before);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (scale_qp(s, s->cid[i], false))
			return -1;
	r->ns[0] += now_ns() - t0;
	mem_read(&after);
	mem_add(&r->mem, &before, &after);

	/* Connect, measured: SCALE_WINDOW in flight. */
	t0 = now_ns();
	if (scale_window(s, &cnt, RDMA_CM_EVENT_ESTABLISHED, "connecting",
			 &cnt.sest, scale_connect))
		return -1;
	r->ns[1] += now_ns() - t0;

	/* One SEND on each QP and its completions, measured. */
	t0 = now_ns();
	if (scale_post(s))
		return -1;
	r->ns[2] += now_ns() - t0;
	if (scale_check(s))
		return -1;

	/*
	 * Disconnect everything, SCALE_WINDOW at a time, not measured: a
	 * thousand DREQs at once would overrun the receive queue of the
	 * port's GSI QP, and each one lost costs a CM timeout.
	 */
	if (scale_window(s, &cnt, RDMA_CM_EVENT_DISCONNECTED, "disconnecting",
			 &cnt.sdisc, scale_disconnect))
		return -1;

	/* Destroy the client QPs and ids, measured. */
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		rdma_destroy_qp(s->cid[i]);
		rdma_destroy_id(s->cid[i]);
		s->cid[i] = NULL;
	}
	r->ns[3] += now_ns() - t0;

	/* The server's side, not measured. */
	scale_server_free(s);
	return 0;
}

/*
 * @n connections to a listener on @port, @runs times over; what each
 * operation took in @r.  Returns 0, 1 when past the budget, or -1.
 */
static int scale_one(const struct opts *o, uint16_t port, unsigned int n,
		     unsigned int runs, uint64_t deadline, struct scale_res *r)
{
	struct scale s = { .n = n, .deadline = deadline };
	struct ibv_context *verbs;
	uint64_t start = now_ns();
	unsigned int i;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	if (get_addr(&s.sin, o->addr, port))
		return -1;
	s.cid = calloc(n, sizeof(*s.cid));
	s.sid = calloc(n, sizeof(*s.sid));
	if (!s.cid || !s.sid ||
	    posix_memalign((void **)&s.buf, 4096, (size_t)SCALE_SLOT * 2 * n)) {
		fprintf(stderr, "rcbench: out of memory\n");
		goto out;
	}
	memset(s.buf, 0, (size_t)SCALE_SLOT * 2 * n);
	s.cch = rdma_create_event_channel();
	s.sch = rdma_create_event_channel();
	if (!s.cch || !s.sch) {
		perror("rcbench: rdma_create_event_channel");
		goto out;
	}
	if (rdma_create_id(s.sch, &s.lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(s.lid, (struct sockaddr *)&s.sin) ||
	    rdma_listen(s.lid, SCALE_WINDOW * 4)) {
		perror("rcbench: scale: listen");
		goto out;
	}
	verbs = s.lid->verbs;
	if (!verbs) {
		fprintf(stderr, "rcbench: scale: the listener has no device\n");
		goto out;
	}
	s.pd = ibv_alloc_pd(verbs);
	s.c_scq = ibv_create_cq(verbs, n + 16, NULL, NULL, 0);
	s.c_rcq = ibv_create_cq(verbs, 16, NULL, NULL, 0);
	s.s_scq = ibv_create_cq(verbs, 16, NULL, NULL, 0);
	s.s_rcq = ibv_create_cq(verbs, n + 16, NULL, NULL, 0);
	if (!s.pd || !s.c_scq || !s.c_rcq || !s.s_scq || !s.s_rcq) {
		perror("rcbench: scale: PD or CQ");
		goto out;
	}
	s.mr = ibv_reg_mr(s.pd, s.buf, (size_t)SCALE_SLOT * 2 * n,
			  IBV_ACCESS_LOCAL_WRITE);
	if (!s.mr) {
		perror("rcbench: scale: ibv_reg_mr");
		goto out;
	}
	/* Setup done: the time the budget judges by starts here. */
	start = now_ns();
	for (i = 0; i < runs; i++)
		if (scale_run(&s, r))
			goto out;
	ret = 0;
out:
	if (s.over) {
		fprintf(stderr, "rcbench: scale: %u connections: past the budget while %s\n",
			n, s.phase);
		ret = 1;
	}
	scale_free(&s);
	r->secs = (now_ns() - start) / 1e9;
	return ret;
}

/* Kernel and pinned memory per CQ of SCALE_CQE entries, in @a and @b. */
static int scale_cqs(const struct opts *o, struct mem_use *a,
		     struct mem_use *b)
{
	struct ibv_cq *cq[SCALE_CQS] = { NULL };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int i, ret = -1;

	/* An id bound to the address: its device's context. */
	if (bound_id(o->addr, 0, "rcbench: scale: CQs: bind", &ch, &id))
		return -1;
	if (!id->verbs) {
		perror("rcbench: scale: CQs: bind");
		goto out;
	}
	mem_read(a);
	for (i = 0; i < SCALE_CQS; i++) {
		cq[i] = ibv_create_cq(id->verbs, SCALE_CQE, NULL, NULL, 0);
		if (!cq[i]) {
			perror("rcbench: scale: ibv_create_cq");
			goto out;
		}
	}
	mem_read(b);
	ret = 0;
out:
	for (i = 0; i < SCALE_CQS; i++)
		if (cq[i])
			ibv_destroy_cq(cq[i]);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return ret;
}

/*
 * @n ids created on one channel, then destroyed, @runs times over: the
 * time both took in @ns, the memory that grew while creating them in
 * @mem, the time all of it took in @secs.
 */
static int scale_ids(unsigned int n, unsigned int runs, uint64_t *ns,
		     struct mem_use *mem, double *secs)
{
	struct rdma_event_channel *ch;
	uint64_t start = now_ns(), t0;
	struct mem_use a, b;
	struct rdma_cm_id **id;
	unsigned int i, run;
	int ret = -1;

	*ns = 0;
	mem->kernel = 0;
	mem->pinned = 0;
	id = calloc(n, sizeof(*id));
	ch = rdma_create_event_channel();
	if (!id || !ch) {
		perror("rcbench: ids");
		goto out;
	}
	for (run = 0; run < runs; run++) {
		mem_read(&a);
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			if (rdma_create_id(ch, &id[i], NULL, RDMA_PS_TCP)) {
				perror("rcbench: ids: rdma_create_id");
				goto out;
			}
		}
		*ns += now_ns() - t0;
		mem_read(&b);
		mem_add(mem, &a, &b);
		t0 = now_ns();
		for (i = 0; i < n; i++) {
			rdma_destroy_id(id[i]);
			id[i] = NULL;
		}
		*ns += now_ns() - t0;
	}
	ret = 0;
out:
	for (i = 0; id && i < n; i++)
		if (id[i])
			rdma_destroy_id(id[i]);
	if (ch)
		rdma_destroy_event_channel(ch);
	free(id);
	*secs = (now_ns() - start) / 1e9;
	return ret;
}

/* "N,N,...": at most SCALE_MAX_N of them, each 1 to @max; 0 when good. */
static int parse_list(const char *s, unsigned int max, unsigned int *ns,
		      unsigned int *cnt)
{
	const char *p = s;
	unsigned long v;
	char *end;

	*cnt = 0;
	while (*p) {
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || end == p || !v || v > max ||
		    *cnt == SCALE_MAX_N || (*end && *end != ',')) {
			fprintf(stderr, "rcbench: bad list '%s'\n", s);
			return -1;
		}
		ns[(*cnt)++] = v;
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* Runs of @n that measure at least @min. */
static unsigned int scale_runs(unsigned int n, unsigned int min)
{
	return n >= min ? 1 : (min + n - 1) / n;
}

/*
 * Would @n more, at @per seconds each, end past @deadline?  Then say so
 * as a "#" line.
 */
static bool scale_skip(const char *what, unsigned int n, double per,
		       uint64_t deadline, unsigned int budget)
{
	double left, need = per * n;

	if (!deadline)
		return false;
	left = ((double)deadline - (double)now_ns()) / 1e9;
	if (need <= left)
		return false;
	printf("# %s %u skipped: would take about %.0f s, %.0f s of the %u s budget left\n",
	       what, n, need, left > 0 ? left : 0, budget);
	return true;
}

/*
 * --scale and --ids: scale_one() for each N of --scale, the CQs, then
 * scale_ids() for each N of --ids; the last N's over the first N's of
 * each.
 */
static int scale_main(const struct opts *o)
{
	static const char *const op[4] = { "create_qp", "connect", "post",
					   "destroy" };
	unsigned int ns[SCALE_MAX_N], is[SCALE_MAX_N], nn = 0, ni = 0, i, j;
	unsigned int runs, count;
	double us[SCALE_MAX_N][4], ius[SCALE_MAX_N], per = 0, secs;
	bool ok[SCALE_MAX_N] = { false }, iok[SCALE_MAX_N] = { false };
	struct scale_res res;
	uint64_t deadline = 0, t;
	struct mem_use a, b, mem;
	char key[64];
	int r;

	if ((o->scale && parse_list(o->scale, 10000, ns, &nn)) ||
	    (o->ids && parse_list(o->ids, 100000, is, &ni)))
		return -1;
	if (o->budget)
		deadline = now_ns() + o->budget * 1000000000ULL;
	printf("# scale %s ids %s window %d budget %u\n",
	       o->scale ? o->scale : "-", o->ids ? o->ids : "-", SCALE_WINDOW,
	       o->budget);
	fflush(stdout);

	if (nn) {
		/* Port: the warm-up's, then one per N; nothing lingers. */
		r = scale_one(o, o->port, SCALE_WARMUP, 1, deadline, &res);
		if (r < 0)
			return -1;
		per = res.secs / SCALE_WARMUP;
	}
	for (i = 0; i < nn; i++) {
		runs = scale_runs(ns[i], SCALE_MIN_CONNS);
		count = ns[i] * runs;
		if (scale_skip("scale", ns[i], per * runs, deadline, o->budget))
			continue;
		r = scale_one(o, o->port + 1 + i, ns[i], runs, deadline, &res);
		if (r < 0)
			return -1;
		printf("# scale %u: %u run%s, %.1f s\n", ns[i], runs,
		       runs > 1 ? "s" : "", res.secs);
		if (r > 0) {
			printf("# scale %u stopped: past the %u s budget\n",
			       ns[i], o->budget);
			fflush(stdout);
			continue;
		}
		ok[i] = true;
		per = res.secs / count;
		for (j = 0; j < 4; j++) {
			us[i][j] = res.ns[j] / 1e3 / count;
			printf("scale_%u_%s_us %.1f\n", ns[i], op[j], us[i][j]);
		}
		snprintf(key, sizeof(key), "scale_%u_qp", ns[i]);
		mem_print(key, &res.mem, count);
		fflush(stdout);
	}
	if (nn > 1 && ok[0] && ok[nn - 1])
		for (j = 0; j < 4; j++)
			printf("scale_%s_%u_over_%u %.2f\n", op[j], ns[nn - 1],
			       ns[0], us[0][j] > 0 ?
			       us[nn - 1][j] / us[0][j] : 0);

	if (nn || ni) {
		if (scale_cqs(o, &a, &b))
			return -1;
		mem.kernel = 0;
		mem.pinned = 0;
		mem_add(&mem, &a, &b);
		snprintf(key, sizeof(key), "cq_%u", SCALE_CQE);
		mem_print(key, &mem, SCALE_CQS);
		fflush(stdout);
	}

	/* The first id of a process may open devices: a warm-up. */
	if (ni) {
		if (scale_ids(1, 1, &t, &mem, &secs))
			return -1;
		per = secs;
	}
	for (i = 0; i < ni; i++) {
		runs = scale_runs(is[i], SCALE_MIN_IDS);
		count = is[i] * runs;
		if (scale_skip("ids", is[i], per * runs, deadline, o->budget))
			continue;
		if (scale_ids(is[i], runs, &t, &mem, &secs))
			return -1;
		iok[i] = true;
		per = secs / count;
		ius[i] = t / 1e3 / count;
		printf("# ids %u: %u run%s, %.1f s\n", is[i], runs,
		       runs > 1 ? "s" : "", secs);
		printf("ids_%u_us %.2f\n", is[i], ius[i]);
		if (mem.kernel >= 0)
			printf("ids_%u_kernel_bytes %.0f\n", is[i],
			       (double)mem.kernel / count);
		fflush(stdout);
	}
	if (ni > 1 && iok[0] && iok[ni - 1])
		printf("ids_%u_over_%u %.2f\n", is[ni - 1], is[0],
		       ius[0] > 0 ? ius[ni - 1] / ius[0] : 0);
	fflush(stdout);
	return 0;
}

/* ---- the client ---- */

/*
 * Wait for @want on the client's channel.  Returns 0 when it came (and
 * hands it over in @evp, or acks it), 1 for a failure worth retrying
 * (no listener yet), 2 when our server rejected a quit request as it
 * should, -1 otherwise.
 */
static int client_wait(struct conn *c, enum rdma_cm_event_type want,
		       const struct test_req *rq, struct rdma_cm_event **evp)
{
	struct rdma_cm_event *ev = cm_next(c->ch, CM_WAIT_MS);
	struct test_rep rep;
	int ret;

	if (!ev) {
		fprintf(stderr, "rcbench: waiting for %s: %s\n",
			rdma_event_str(want), strerror(errno));
		return -1;
	}
	if (ev->event == want && !ev->status) {
		if (evp)
			*evp = ev;
		else
			rdma_ack_cm_event(ev);
		return 0;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		ret = 1;
		break;
	default:
		ret = -1;
		break;
	}
	/* A reject carrying our magic comes from the server, not from no one. */
	if (ev->event == RDMA_CM_EVENT_REJECTED &&
	    ev->param.conn.private_data &&
	    ev->param.conn.private_data_len >= sizeof(rep)) {
		memcpy(&rep, ev->param.conn.private_data, sizeof(rep));
		if (rep.magic == BENCH_MAGIC) {
			ret = rq->kind == TEST_QUIT && !rep.status ? 2 : -1;
			if (ret < 0)
				fprintf(stderr, "rcbench: the server rejected the test: %s\n",
					strerror(rep.status));
		}
	}
	if (ret < 0 && ev->event != RDMA_CM_EVENT_REJECTED)
		fprintf(stderr, "rcbench: expected %s, got %s (status %d)\n",
			rdma_event_str(want), rdma_event_str(ev->event),
			ev->status);
	rdma_ack_cm_event(ev);
	return ret;
}

/* One attempt to connect for @rq: what client_wait() says. */
static int try_connect(struct conn *c, const struct opts *o,
		       const struct test_req *rq)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_conn_param cp = {
		.retry_count = 7,
		.rnr_retry_count = 7,
		.private_data = rq,
		.private_data_len = sizeof(*rq),
	};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int ret;

	sin.sin_port = htons(o->port);
	inet_pton(AF_INET, o->addr, &sin.sin_addr);
	if (rdma_create_id(c->ch, &id, NULL, RDMA_PS_TCP)) {
		perror("rcbench: rdma_create_id");
		return -1;
	}
	c->id = id;
	ret = -1;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000)) {
		perror("rcbench: rdma_resolve_addr");
		goto fail;
	}
	ret = client_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED, rq, NULL);
	if (ret)
		goto fail;
	ret = -1;
	if (rdma_resolve_route(id, 2000)) {
		perror("rcbench: rdma_resolve_route");
		goto fail;
	}
	ret = client_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED, rq, NULL);
	if (ret)
		goto fail;
	ret = -1;
	if (conn_setup(c, id, false, SLOT_SIZE, RQ_DEPTH))
		goto fail;
	if (rdma_connect(id, &cp)) {
		perror("rcbench: rdma_connect");
		goto fail;
	}
	ret = client_wait(c, RDMA_CM_EVENT_ESTABLISHED, rq, &ev);
	if (ret)
		goto fail;
	memset(&c->peer, 0, sizeof(c->peer));
	if (ev->param.conn.private_data &&
	    ev->param.conn.private_data_len >= sizeof(c->peer))
		memcpy(&c->peer, ev->param.conn.private_data, sizeof(c->peer));
	rdma_ack_cm_event(ev);
	if (c->peer.magic != BENCH_MAGIC) {
		fprintf(stderr, "rcbench: no test parameters in the accept\n");
		rdma_disconnect(id);
		ret = -1;
		goto fail;
	}
	return 0;

fail:
	conn_teardown(c);
	return ret;
}

/*
 * Connect for @rq, retrying while nobody listens yet: a server under
 * TCG takes seconds to start.  0 when connected or quit; -1 otherwise.
 */
static int client_connect(struct conn *c, const struct opts *o,
			  const struct test_req *rq)
{
	uint64_t end = now_ns() + o->connect_timeout * 1000000000ULL;
	int ret, tries = 0;

	for (;;) {
		ret = try_connect(c, o, rq);
		tries++;
		if (ret == 0 || ret == 2)
			return 0;
		if (ret < 0)
			return -1;
		if (now_ns() > end) {
			fprintf(stderr, "rcbench: no server at %s port %u after %u s (%d tries)\n",
				o->addr, o->port, o->connect_timeout, tries);
			return -1;
		}
		usleep(100000);
	}
}

static void client_close(struct conn *c)
{
	if (!rdma_disconnect(c->id))
		cm_wait(c->ch, RDMA_CM_EVENT_DISCONNECTED);
	conn_teardown(c);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Ping-pong: send @size bytes, wait for the server's @size-byte reply.
 * Reports half the round trip, as one-way latency.  With @sig, every send
 * is signaled and each side waits for its completion before it polls for
 * the reply, as perftest's ib_send_lat does: a round trip then carries
 * four completions, not two.
 */
static int run_lat(struct conn *c, const struct opts *o, uint32_t size,
		   bool sig)
{
	const char *key = sig ? "lat_sig" : "lat";
	struct test_req rq = {
		.magic = BENCH_MAGIC,
		.kind = sig ? TEST_LAT_SIG : TEST_LAT,
		.size = size,
		.list = 1,
		.count = o->lat_warmup + o->lat_iters,
	};
	uint64_t *samples, t0, t1, i, med, p99;
	struct ibv_wc wc;
	uint32_t slot;
	int ret = -1;

	samples = calloc(o->lat_iters, sizeof(*samples));
	if (!samples || client_connect(c, o, &rq))
		goto out;
	for (i = 0; i < rq.count; i++) {
		put_seq(c->buf, size, i);
		t0 = now_ns();
		stamp(size, STAMP_POST, t0);
		if (post_sends(c, 1, IBV_WR_SEND, size, sig ? 1 : SIG_EVERY,
			       false) ||
		    (sig && reap_sends(c, true)) ||
		    poll_recvs(c, &wc, 1, true, size) < 0)
			goto out_close;
		t1 = now_ns();
		stamp(size, STAMP_POLL, t1);
		if (check_seq(recv_slot(c, wc.wr_id), size, i))
			goto out_close;
		slot = wc.wr_id;
		if (post_recvs(c, &slot, 1) || reap_sends(c, false))
			goto out_close;
		if (i >= o->lat_warmup)
			samples[i - o->lat_warmup] = t1 - t0;
	}
	qsort(samples, o->lat_iters, sizeof(*samples), cmp_u64);
	med = samples[o->lat_iters / 2];
	p99 = samples[(o->lat_iters * 99 + 99) / 100 - 1];
	printf("%s_%u_median_us %.2f\n", key, size, med / 2000.0);
	printf("%s_%u_p99_us %.2f\n", key, size, p99 / 2000.0);
	fflush(stdout);
	ret = size == LAT_SMALL && !sig ? stamps_write(false) : 0;
out_close:
	client_close(c);
out:
	free(samples);
	return ret;
}

/* Credits the server sent back: add them up and repost their receives. */
static int take_credits(struct conn *c, uint64_t *credits, bool wait)
{
	struct ibv_wc wc[16];
	uint32_t slots[16];
	int n, i;

	n = poll_recvs(c, wc, 16, wait, sizeof(uint32_t));
	if (n <= 0)
		return n;
	for (i = 0; i < n; i++) {
		slots[i] = wc[i].wr_id;
		*credits += *(uint32_t *)recv_slot(c, slots[i]);
	}
	return post_recvs(c, slots, n);
}

/*
 * Post @k more of the @n messages of a phase, @sent of them so far, and
 * count them; then, with @credits, take the credits that came back, and
 * reap the sends that completed, neither waiting.
 */
static int phase_post(struct conn *c, uint64_t n, uint64_t *sent, int k,
		      enum ibv_wr_opcode op, uint32_t size,
		      unsigned int sig_every, uint64_t *credits)
{
	if (post_sends(c, k, op, size, sig_every, *sent + k == n))
		return -1;
	*sent += k;
	if (credits) {
		*credits -= k;
		if (take_credits(c, credits, false) < 0)
			return -1;
	}
	return reap_sends(c, false);
}

/* Send @n messages, @list per ibv_post_send(), and wait until all completed. */
static int rate_phase(struct conn *c, uint64_t n, uint32_t list,
		      uint64_t *credits)
{
	uint64_t sent = 0;
	int k;

	while (sent < n) {
		k = n - sent < list ? n - sent : list;
		while (*credits < (uint64_t)k)
			if (take_credits(c, credits, true) < 0)
				return -1;
		if (phase_post(c, n, &sent, k, IBV_WR_SEND, RATE_SIZE,
			       SIG_EVERY, credits))
			return -1;
	}
	return drain_sends(c);
}

static int run_rate(struct conn *c, const struct opts *o, uint32_t list)
{
	struct test_req rq = {
		.magic = BENCH_MAGIC,
		.kind = TEST_RATE,
		.size = RATE_SIZE,
		.list = list,
		.count = o->rate_warmup + o->rate_msgs,
	};
	uint64_t credits, t0, t1;
	int ret = -1;

	if (client_connect(c, o, &rq))
		return -1;
	credits = c->peer.credits;
	if (rate_phase(c, o->rate_warmup, list, &credits))
		goto out;
	t0 = now_ns();
	if (rate_phase(c, o->rate_msgs, list, &credits))
		goto out;
	t1 = now_ns();
	printf("rate_%u_list%u_kmsgs %.1f\n", RATE_SIZE, list,
	       o->rate_msgs * 1e6 / (double)(t1 - t0));
	fflush(stdout);
	ret = 0;
out:
	client_close(c);
	return ret;
}

/*
 * @n signaled @op of WRITE_SIZE bytes, WRITE_DEPTH in flight and, with
 * @credits (SENDs), as many as the server's credits allow; then wait
 * until all completed.
 */
static int bw_phase(struct conn *c, uint64_t n, enum ibv_wr_opcode op,
		    uint64_t *credits)
{
	uint64_t sent = 0, room;
	int k;

	while (sent < n) {
		room = WRITE_DEPTH - (c->posted - c->done);
		if (credits && room > *credits)
			room = *credits;
		if (!room) {
			if (credits && !*credits) {
				if (take_credits(c, credits, true) < 0)
					return -1;
			} else if (reap_sends(c, true)) {
				return -1;
			}
			continue;
		}
		k = n - sent < room ? n - sent : room;
		if (k > MAX_LIST)
			k = MAX_LIST;
		if (phase_post(c, n, &sent, k, op, WRITE_SIZE, 1, credits))
			return -1;
	}
	return drain_sends(c);
}

/* bw_phase() of @warmup, then of @msgs, timed: that time in @ns. */
static int bw_timed(struct conn *c, uint64_t warmup, uint64_t msgs,
		    enum ibv_wr_opcode op, uint64_t *credits, uint64_t *ns)
{
	uint64_t t0;

	if (bw_phase(c, warmup, op, credits))
		return -1;
	t0 = now_ns();
	if (bw_phase(c, msgs, op, credits))
		return -1;
	*ns = now_ns() - t0;
	return 0;
}

/* A "@what_WRITE_SIZE_mbs MB/s" line: @msgs of WRITE_SIZE bytes in @ns. */
static void print_mbs(const char *what, uint64_t msgs, uint64_t ns)
{
	printf("%s_%u_mbs %.1f\n", what, WRITE_SIZE,
	       msgs * (double)WRITE_SIZE * 1e3 / (double)ns);
	fflush(stdout);
}

/*
 * One more RDMA WRITE, of a pattern none of the measured ones carried,
 * then a SEND that tells the server which: RC places the WRITE before
 * the SEND arrives.  The server checks its whole buffer and answers.
 */
static int write_verify(struct conn *c)
{
	struct write_check chk = { .seed = (uint32_t)now_ns() | 1 };
	struct ibv_wc wc;
	uint32_t bad;

	fill_pattern(c->wbuf, WRITE_SIZE, chk.seed);
	if (post_sends(c, 1, IBV_WR_RDMA_WRITE, WRITE_SIZE, 1, true) ||
	    drain_sends(c))
		return -1;
	memcpy(c->buf, &chk, sizeof(chk));
	if (post_sends(c, 1, IBV_WR_SEND, sizeof(chk), 1, true) ||
	    drain_sends(c) ||
	    poll_recvs(c, &wc, 1, true, sizeof(bad)) < 0)
		return -1;
	memcpy(&bad, recv_slot(c, wc.wr_id), sizeof(bad));
	if (bad) {
		fprintf(stderr, "rcbench: the server found the last RDMA WRITE's data wrong at byte %u\n",
			bad - 1);
		return -1;
	}
	return 0;
}

static int run_write(struct conn *c, const struct opts *o)
{
	struct test_req rq = {
		.magic = BENCH_MAGIC,
		.kind = TEST_WRITE,
		.size = WRITE_SIZE,
		.list = 1,
		.count = o->write_warmup + o->write_msgs,
	};
	uint64_t ns;
	int ret = -1;

	if (client_connect(c, o, &rq))
		return -1;
	if (c->peer.len < WRITE_SIZE) {
		fprintf(stderr, "rcbench: server's buffer is too small\n");
		goto out;
	}
	if (bw_timed(c, o->write_warmup, o->write_msgs, IBV_WR_RDMA_WRITE,
		     NULL, &ns) ||
	    write_verify(c))
		goto out;
	print_mbs("write", o->write_msgs, ns);
	ret = 0;
out:
	client_close(c);
	return ret;
}

/*
 * SEND bandwidth, measured as RDMA WRITE bandwidth is: every SEND
 * signaled, WRITE_DEPTH in flight, until the last one completed.  The
 * server posted its receives ahead and hands them back as credits, so
 * the sender never meets an empty receive queue; it checks every
 * message's payload against the pattern.
 */
static int run_sendbw(struct conn *c, const struct opts *o)
{
	struct test_req rq = {
		.magic = BENCH_MAGIC,
		.kind = TEST_SENDBW,
		.size = WRITE_SIZE,
		.list = 1,
		.count = o->sendbw_warmup + o->sendbw_msgs,
	};
	uint64_t credits, ns;
	int ret = -1;

	if (client_connect(c, o, &rq))
		return -1;
	fill_pattern(c->wbuf, WRITE_SIZE, SENDBW_SEED);
	credits = c->peer.credits;
	if (bw_timed(c, o->sendbw_warmup, o->sendbw_msgs, IBV_WR_SEND,
		     &credits, &ns))
		goto out;
	print_mbs("send", o->sendbw_msgs, ns);
	ret = 0;
out:
	client_close(c);
	return ret;
}

/* A "# @a A @b B" line: two of the counts a run used. */
static void print_counts(const char *a, uint64_t va, const char *b,
			 uint64_t vb)
{
	printf("# %s %llu %s %llu\n", a, (unsigned long long)va, b,
	       (unsigned long long)vb);
}

static int client(const struct opts *o)
{
	struct test_req quit = { .magic = BENCH_MAGIC, .kind = TEST_QUIT };
	struct conn c = { 0 };
	uint64_t t = now_ns();
	int ret = -1;

	c.ch = new_channel();
	if (!c.ch)
		return -1;
	print_counts("lat_iters", o->lat_iters, "lat_warmup", o->lat_warmup);
	print_counts("rate_msgs", o->rate_msgs, "rate_warmup", o->rate_warmup);
	print_counts("write_msgs", o->write_msgs,
		     "write_warmup", o->write_warmup);
	print_counts("sendbw_msgs", o->sendbw_msgs,
		     "sendbw_warmup", o->sendbw_warmup);
	fflush(stdout);
	if (run_lat(&c, o, LAT_SMALL, false) ||
	    run_lat(&c, o, LAT_LARGE, false) ||
	    run_lat(&c, o, LAT_SMALL, true) ||
	    run_rate(&c, o, 1) ||
	    run_rate(&c, o, 16) ||
	    run_write(&c, o) ||
	    run_sendbw(&c, o))
		goto out;
	ret = client_connect(&c, o, &quit);
	printf("# seconds %.1f\n", (now_ns() - t) / 1e9);
out:
	rdma_destroy_event_channel(c.ch);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: rcbench --server [-a ADDR] [-p PORT] [-r FILE]\n"
"       rcbench [-a ADDR] [-p PORT] [-t SEC] [COUNTS]\n"
"       rcbench --scale N[,N...] [--ids N[,N...]] [--budget SEC]\n"
"               [-a ADDR] [-p PORT]\n"
"\n"
"RC SEND ping-pong latency (8 B and 4 KB, and 8 B with each side waiting\n"
"for its own send's completion, as ib_send_lat does), 64 B SEND message\n"
"rate (post lists of 1 and 16), and 64 KB RDMA WRITE and SEND bandwidth,\n"
"between a server and a client connected with rdma_cm.  Both sides\n"
"busy-poll their CQs, except the server of the RDMA WRITE test, which\n"
"sleeps on a completion channel.  Each test is a connection of its own;\n"
"the server serves tests until the client's last request, then exits 0.\n"
"\n"
"The client prints what it measured as \"key value\" lines on stdout, and\n"
"its settings as \"# ...\" lines:\n"
"  lat_SIZE_median_us, lat_SIZE_p99_us   one-way latency (half the round trip)\n"
"  lat_sig_8_median_us, lat_sig_8_p99_us the same, each send signaled and\n"
"                                        awaited before the reply is polled\n"
"  rate_64_listN_kmsgs                   thousands of messages per second\n"
"  write_65536_mbs, send_65536_mbs       MB/s (10^6 bytes per second)\n"
"\n"
"What is checked, on both sides: every completion's status, opcode and\n"
"length; the sequence number each ping-pong message and its echo carry;\n"
"that the server received exactly as many messages as the client\n"
"announced; after the RDMA WRITE test, the whole target buffer against\n"
"the pattern the last WRITE carried; and every 64 KB SEND's payload.  A\n"
"failed check, a bad completion, or no progress for 30 s is reported on\n"
"stderr and makes the program that saw it exit 1.\n"
"\n"
"  -s, --server            be the server\n"
"  -a, --addr ADDR         IPv4 address of the server (default 192.0.2.1)\n"
"  -p, --port PORT         its port (default 18515)\n"
"  -r, --ready FILE        server: create FILE once listening\n"
"  -t, --timeout SEC       client: keep retrying a connection that finds\n"
"                          no listener for SEC seconds (default 60)\n"
"      --stamps FILE       write to FILE, once the 8 B ping-pong ended, when\n"
"                          this side posted each of its messages and when\n"
"                          its poll returned each it received:\n"
"                          \"NS post|poll client|server PID\" lines, NS on\n"
"                          CLOCK_MONOTONIC (make bench-breakdown)\n"
"  COUNTS (client; each test runs its warm-up first, unmeasured):\n"
"      --lat-iters N       ping-pongs measured per size (default 3000)\n"
"      --lat-warmup N      (default 300)\n"
"      --rate-msgs N       messages measured per post list size (default 20000)\n"
"      --rate-warmup N     (default 2000)\n"
"      --write-msgs N      64 KB RDMA WRITEs measured (default 300)\n"
"      --write-warmup N    (default 30)\n"
"      --sendbw-msgs N     64 KB SENDs measured (default 300)\n"
"      --sendbw-warmup N   (default 30)\n"
"\n"
"  rcbench --scale N[,N...] [--ids N[,N...]] [--budget SEC]\n"
"          [-a ADDR] [-p PORT]\n"
"  runs none of the above, but, alone in this process:\n"
"      --scale N[,N...]    for each N, a listener on ADDR and N connections\n"
"                          to it, 10 set up at a time, sharing one PD and\n"
"                          four CQs, after an unmeasured run of 2; ports\n"
"                          PORT (the warm-up), PORT+1, PORT+2...  An N\n"
"                          below 100 runs again, until 100 were measured.\n"
"                          Prints scale_N_OP_us, microseconds per connection\n"
"                          for\n"
"                          OP create_qp (the client's QPs), connect (until\n"
"                          both sides are established; includes the server's\n"
"                          QP and accept), post (one SEND and its send and\n"
"                          receive completions, QP after QP) and destroy (the\n"
"                          client's QPs and ids, once disconnected);\n"
"                          scale_N_qp_kernel_bytes and scale_N_qp_pinned_bytes,\n"
"                          the growth per client QP of Slab + VmallocUsed\n"
"                          (/proc/meminfo) and of VmPin + VmLck\n"
"                          (/proc/self/status); scale_OP_LAST_over_FIRST, the\n"
"                          last N's over the first N's; then cq_256_kernel_bytes\n"
"                          and cq_256_pinned_bytes, the same per CQ of 256\n"
"                          entries, 100 of them\n"
"      --ids N[,N...]      for each N, N ids created, then destroyed, until\n"
"                          1000 were measured: ids_N_us, microseconds per id\n"
"                          for both; ids_N_kernel_bytes, the kernel's memory\n"
"                          per id; ids_LAST_over_FIRST\n"
"      --budget SEC        skip an N that would not end within SEC seconds of\n"
"                          the start, judged by the N before it, and stop one\n"
"                          that runs past them; a \"#\" line says so, and the\n"
"                          exit status is still 0 (default 0: no budget)\n"
"  -h, --help              this text\n");
}

static int parse_u64(const char *s, uint64_t min, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (errno || !*s || *end || *v < min) {
		fprintf(stderr, "rcbench: bad number '%s'\n", s);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_LAT_ITERS = 256, O_LAT_WARMUP, O_RATE_MSGS, O_RATE_WARMUP,
	       O_WRITE_MSGS, O_WRITE_WARMUP, O_SENDBW_MSGS, O_SENDBW_WARMUP,
	       O_SCALE, O_IDS, O_BUDGET, O_STAMPS };
	static const struct option lo[] = {
		{ "server", no_argument, NULL, 's' },
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "ready", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "lat-iters", required_argument, NULL, O_LAT_ITERS },
		{ "lat-warmup", required_argument, NULL, O_LAT_WARMUP },
		{ "rate-msgs", required_argument, NULL, O_RATE_MSGS },
		{ "rate-warmup", required_argument, NULL, O_RATE_WARMUP },
		{ "write-msgs", required_argument, NULL, O_WRITE_MSGS },
		{ "write-warmup", required_argument, NULL, O_WRITE_WARMUP },
		{ "sendbw-msgs", required_argument, NULL, O_SENDBW_MSGS },
		{ "sendbw-warmup", required_argument, NULL, O_SENDBW_WARMUP },
		{ "scale", required_argument, NULL, O_SCALE },
		{ "ids", required_argument, NULL, O_IDS },
		{ "budget", required_argument, NULL, O_BUDGET },
		{ "stamps", required_argument, NULL, O_STAMPS },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = {
		.addr = "192.0.2.1",
		.port = 18515,
		.connect_timeout = 60,
		.lat_iters = 3000, .lat_warmup = 300,
		.rate_msgs = 20000, .rate_warmup = 2000,
		.write_msgs = 300, .write_warmup = 30,
		.sendbw_msgs = 300, .sendbw_warmup = 30,
	};
	/* The counts, O_LAT_ITERS to O_SENDBW_WARMUP: where, and the least. */
	const struct {
		uint64_t *v;
		uint64_t min;
	} cnt[] = {
		{ &o.lat_iters, 1 }, { &o.lat_warmup, 0 },
		{ &o.rate_msgs, 1 }, { &o.rate_warmup, 0 },
		{ &o.write_msgs, 1 }, { &o.write_warmup, 0 },
		{ &o.sendbw_msgs, 1 }, { &o.sendbw_warmup, 0 },
	};
	uint64_t v;
	int opt, bad = 0;

	while ((opt = getopt_long(argc, argv, "sa:p:r:t:h", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.server = true;
			break;
		case 'a':
			o.addr = optarg;
			break;
		case 'p':
			bad |= parse_u64(optarg, 1, &v) || v > 65535;
			o.port = v;
			break;
		case 'r':
			o.ready = optarg;
			break;
		case 't':
			bad |= parse_u64(optarg, 1, &v) || v > 3600;
			o.connect_timeout = v;
			break;
		case O_LAT_ITERS ... O_SENDBW_WARMUP:
			bad |= parse_u64(optarg, cnt[opt - O_LAT_ITERS].min,
					 cnt[opt - O_LAT_ITERS].v);
			break;
		case O_SCALE:
			o.scale = optarg;
			break;
		case O_IDS:
			o.ids = optarg;
			break;
		case O_BUDGET:
			bad |= parse_u64(optarg, 0, &v) || v > 86400;
			o.budget = v;
			break;
		case O_STAMPS:
			o.stamps = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			bad = 1;
			break;
		}
	}
	if (bad || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (o.scale || o.ids)
		return scale_main(&o) ? 1 : 0;
	stamps.path = o.stamps;
	return (o.server ? server(&o) : client(&o)) ? 1 : 0;
}
