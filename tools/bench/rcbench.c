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
	struct ibv_wc wc;
	uint32_t slot;
	uint64_t i;

	for (i = 0; i < rq->count; i++) {
		if (poll_recvs(c, &wc, 1, true, rq->size) < 0 ||
		    check_seq(recv_slot(c, wc.wr_id), rq->size, i))
			return -1;
		put_seq(c->buf, rq->size, i);
		/* The reply first: reposting is off the critical path. */
		if (post_sends(c, 1, IBV_WR_SEND, rq->size, SIG_EVERY, false))
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
		ret = serve_lat(&c, &rq);
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
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *lid;
	int ret = -1, r;

	sin.sin_port = htons(o->port);
	if (inet_pton(AF_INET, o->addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "rcbench: bad address %s\n", o->addr);
		return -1;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rcbench: rdma_create_event_channel");
		return -1;
	}
	if (rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&sin) ||
	    rdma_listen(lid, 4)) {
		perror("rcbench: listen");
		goto out_ch;
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
out_ch:
	rdma_destroy_event_channel(ch);
	return ret;
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
 * Reports half the round trip, as one-way latency.
 */
static int run_lat(struct conn *c, const struct opts *o, uint32_t size)
{
	struct test_req rq = {
		.magic = BENCH_MAGIC,
		.kind = TEST_LAT,
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
		if (post_sends(c, 1, IBV_WR_SEND, size, SIG_EVERY, false) ||
		    poll_recvs(c, &wc, 1, true, size) < 0)
			goto out_close;
		t1 = now_ns();
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
	printf("lat_%u_median_us %.2f\n", size, med / 2000.0);
	printf("lat_%u_p99_us %.2f\n", size, p99 / 2000.0);
	fflush(stdout);
	ret = 0;
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
		if (post_sends(c, k, IBV_WR_SEND, RATE_SIZE, SIG_EVERY,
			       sent + k == n))
			return -1;
		sent += k;
		*credits -= k;
		if (take_credits(c, credits, false) < 0 ||
		    reap_sends(c, false))
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

/* @n RDMA WRITEs, WRITE_DEPTH in flight, and wait until all completed. */
static int write_phase(struct conn *c, uint64_t n)
{
	uint64_t sent = 0, room;
	int k;

	while (sent < n) {
		room = WRITE_DEPTH - (c->posted - c->done);
		if (!room) {
			if (reap_sends(c, true))
				return -1;
			continue;
		}
		k = n - sent < room ? n - sent : room;
		if (k > MAX_LIST)
			k = MAX_LIST;
		if (post_sends(c, k, IBV_WR_RDMA_WRITE, WRITE_SIZE, 1,
			       sent + k == n))
			return -1;
		sent += k;
		if (reap_sends(c, false))
			return -1;
	}
	return drain_sends(c);
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
	uint64_t t0, t1;
	int ret = -1;

	if (client_connect(c, o, &rq))
		return -1;
	if (c->peer.len < WRITE_SIZE) {
		fprintf(stderr, "rcbench: server's buffer is too small\n");
		goto out;
	}
	if (write_phase(c, o->write_warmup))
		goto out;
	t0 = now_ns();
	if (write_phase(c, o->write_msgs))
		goto out;
	t1 = now_ns();
	if (write_verify(c))
		goto out;
	printf("write_%u_mbs %.1f\n", WRITE_SIZE,
	       o->write_msgs * (double)WRITE_SIZE * 1e3 / (double)(t1 - t0));
	fflush(stdout);
	ret = 0;
out:
	client_close(c);
	return ret;
}

/*
 * @n SENDs of WRITE_SIZE bytes, WRITE_DEPTH in flight as long as the
 * server's credits allow, and wait until all completed.
 */
static int sendbw_phase(struct conn *c, uint64_t n, uint64_t *credits)
{
	uint64_t sent = 0, room;
	int k;

	while (sent < n) {
		room = WRITE_DEPTH - (c->posted - c->done);
		if (room > *credits)
			room = *credits;
		if (!room) {
			if (!*credits) {
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
		if (post_sends(c, k, IBV_WR_SEND, WRITE_SIZE, 1,
			       sent + k == n))
			return -1;
		sent += k;
		*credits -= k;
		if (take_credits(c, credits, false) < 0 ||
		    reap_sends(c, false))
			return -1;
	}
	return drain_sends(c);
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
	uint64_t credits, t0, t1;
	int ret = -1;

	if (client_connect(c, o, &rq))
		return -1;
	fill_pattern(c->wbuf, WRITE_SIZE, SENDBW_SEED);
	credits = c->peer.credits;
	if (sendbw_phase(c, o->sendbw_warmup, &credits))
		goto out;
	t0 = now_ns();
	if (sendbw_phase(c, o->sendbw_msgs, &credits))
		goto out;
	t1 = now_ns();
	printf("send_%u_mbs %.1f\n", WRITE_SIZE,
	       o->sendbw_msgs * (double)WRITE_SIZE * 1e3 / (double)(t1 - t0));
	fflush(stdout);
	ret = 0;
out:
	client_close(c);
	return ret;
}

static int client(const struct opts *o)
{
	struct test_req quit = { .magic = BENCH_MAGIC, .kind = TEST_QUIT };
	struct conn c = { 0 };
	uint64_t t = now_ns();
	int ret = -1;

	c.ch = rdma_create_event_channel();
	if (!c.ch) {
		perror("rcbench: rdma_create_event_channel");
		return -1;
	}
	printf("# lat_iters %llu lat_warmup %llu\n",
	       (unsigned long long)o->lat_iters,
	       (unsigned long long)o->lat_warmup);
	printf("# rate_msgs %llu rate_warmup %llu\n",
	       (unsigned long long)o->rate_msgs,
	       (unsigned long long)o->rate_warmup);
	printf("# write_msgs %llu write_warmup %llu\n",
	       (unsigned long long)o->write_msgs,
	       (unsigned long long)o->write_warmup);
	printf("# sendbw_msgs %llu sendbw_warmup %llu\n",
	       (unsigned long long)o->sendbw_msgs,
	       (unsigned long long)o->sendbw_warmup);
	fflush(stdout);
	if (run_lat(&c, o, LAT_SMALL) ||
	    run_lat(&c, o, LAT_LARGE) ||
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
"\n"
"RC SEND ping-pong latency (8 B and 4 KB), 64 B SEND message rate (post\n"
"lists of 1 and 16), and 64 KB RDMA WRITE and SEND bandwidth, between a\n"
"server and a client connected with rdma_cm.  Both sides busy-poll their\n"
"CQs, except the server of the RDMA WRITE test, which sleeps on a\n"
"completion channel.  Each test is a connection of its own; the server\n"
"serves tests until the client's last request, then exits 0.\n"
"\n"
"The client prints what it measured as \"key value\" lines on stdout, and\n"
"its settings as \"# ...\" lines:\n"
"  lat_SIZE_median_us, lat_SIZE_p99_us   one-way latency (half the round trip)\n"
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
"  COUNTS (client; each test runs its warm-up first, unmeasured):\n"
"      --lat-iters N       ping-pongs measured per size (default 3000)\n"
"      --lat-warmup N      (default 300)\n"
"      --rate-msgs N       messages measured per post list size (default 20000)\n"
"      --rate-warmup N     (default 2000)\n"
"      --write-msgs N      64 KB RDMA WRITEs measured (default 300)\n"
"      --write-warmup N    (default 30)\n"
"      --sendbw-msgs N     64 KB SENDs measured (default 300)\n"
"      --sendbw-warmup N   (default 30)\n"
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
	       O_WRITE_MSGS, O_WRITE_WARMUP, O_SENDBW_MSGS, O_SENDBW_WARMUP };
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
		case O_LAT_ITERS:
			bad |= parse_u64(optarg, 1, &o.lat_iters);
			break;
		case O_LAT_WARMUP:
			bad |= parse_u64(optarg, 0, &o.lat_warmup);
			break;
		case O_RATE_MSGS:
			bad |= parse_u64(optarg, 1, &o.rate_msgs);
			break;
		case O_RATE_WARMUP:
			bad |= parse_u64(optarg, 0, &o.rate_warmup);
			break;
		case O_WRITE_MSGS:
			bad |= parse_u64(optarg, 1, &o.write_msgs);
			break;
		case O_WRITE_WARMUP:
			bad |= parse_u64(optarg, 0, &o.write_warmup);
			break;
		case O_SENDBW_MSGS:
			bad |= parse_u64(optarg, 1, &o.sendbw_msgs);
			break;
		case O_SENDBW_WARMUP:
			bad |= parse_u64(optarg, 0, &o.sendbw_warmup);
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
	return (o.server ? server(&o) : client(&o)) ? 1 : 0;
}
