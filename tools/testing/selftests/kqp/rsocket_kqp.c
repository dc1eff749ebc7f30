// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A hostile rsocket peer.  The peer here is a plain RC QP driven through
 * librdmacm and libibverbs, which speaks rdma-core's rsocket protocol as
 * far as it likes and then breaks it: a data message longer than the
 * area it was given, more messages than its credits, an operation the
 * protocol does not have, a message with no immediate, connection data
 * that is short, of another version or with an empty target SGL.  The
 * kqp rsocket at the other end must close the connection (EPROTO) or
 * refuse it, and read nothing it was not given.  rdma-core's rsockets
 * check none of this (a long data message makes rrecv() copy past its
 * buffer), so there is no reference build.
 *
 * The wire layout is written out here again, not taken from libkqp: the
 * test checks it.
 */
#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <sys/resource.h>
#include <rdma/rsocket.h>

#include "cm_test.h"

struct wire_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

struct wire_conn {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t iomap_size;
	struct wire_sge target_sgl;
	struct wire_sge data_buf;
};

#define OP(op, data)	htobe32(((uint32_t)(op) << 29) | (uint32_t)(data))
#define OP_DATA		0
#define OP_BOGUS	5
#define RQ		384	/* the rsocket's default receive queue */
#define PEER_CREDITS	64

/* The raw peer: one id, its QP, and memory the rsocket may write. */
struct raw {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct wire_conn got;	/* the rsocket's data, as it came */
};

static int raw_qp(struct raw *r, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
		.cap = { .max_send_wr = 512, .max_recv_wr = PEER_CREDITS,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i;

	if (rdma_create_qp(id, NULL, &attr))
		return -1;
	r->buf = aligned_alloc(4096, 4096);
	if (!r->buf)
		return -1;
	memset(r->buf, 0, 4096);
	r->mr = ibv_reg_mr(id->pd, r->buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE);
	if (!r->mr)
		return -1;
	for (i = 0; i < PEER_CREDITS; i++) {
		struct ibv_recv_wr wr = {}, *bad;

		if (ibv_post_recv(id->qp, &wr, &bad))
			return -1;
	}
	return 0;
}

/* Connection data as a stock rsocket sends it, then spoiled by the caller. */
static void raw_conn(struct raw *r, struct wire_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->version = 1;
	c->flags = 2;	/* iomap, little-endian */
	c->credits = htobe16(PEER_CREDITS);
	c->target_sgl.addr = htobe64((uintptr_t)r->buf);
	c->target_sgl.key = htobe32(r->mr->rkey);
	c->target_sgl.length = htobe32(2);
	c->data_buf.addr = htobe64((uintptr_t)r->buf + 1024);
	c->data_buf.key = htobe32(r->mr->rkey);
	c->data_buf.length = htobe32(1024);
}

/*
 * Connect to the rsocket listening on @port with connection data @c of
 * @len bytes: 0 once established, -1 when refused.
 */
static int raw_connect(struct raw *r, uint16_t port, struct wire_conn *c,
		       int len, bool fill)
{
	struct sockaddr_in sin = cm_addr(port);
	struct rdma_conn_param p = { .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;
	int ret;

	r->ch = rdma_create_event_channel();
	if (!r->ch || rdma_create_id(r->ch, &r->id, r, RDMA_PS_TCP) ||
	    rdma_resolve_addr(r->id, NULL, (struct sockaddr *)&sin, 5000))
		return -1;
	ev = cm_expect(r->ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(r->id, 5000))
		return -1;
	ev = cm_expect(r->ch, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	if (raw_qp(r, r->id))
		return -1;
	if (fill)
		raw_conn(r, c);
	p.private_data = c;
	p.private_data_len = len;
	if (rdma_connect(r->id, &p))
		return -1;
	ev = cm_next(r->ch, CM_TIMEOUT_MS);
	if (!ev)
		return -1;
	ret = ev->event == RDMA_CM_EVENT_ESTABLISHED ? 0 : -1;
	if (!ret && ev->param.conn.private_data_len >= sizeof(r->got))
		memcpy(&r->got, ev->param.conn.private_data, sizeof(r->got));
	rdma_ack_cm_event(ev);
	return ret;
}

static void raw_close(struct raw *r)
{
	if (r->id) {
		rdma_disconnect(r->id);
		if (r->id->qp)
			rdma_destroy_qp(r->id);
		if (r->mr)
			ibv_dereg_mr(r->mr);
		rdma_destroy_id(r->id);
	}
	if (r->ch)
		rdma_destroy_event_channel(r->ch);
	free(r->buf);
}

/* An RDMA WRITE WITH IMM of @len bytes at @off of the rsocket's first area. */
static int raw_write_imm(struct raw *r, uint32_t imm, uint32_t off,
			 uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)r->buf + 2048, len, r->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = len ? &sge : NULL,
		.num_sge = len ? 1 : 0,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = imm,
		.wr.rdma.remote_addr = be64toh(r->got.data_buf.addr) + off,
		.wr.rdma.rkey = be32toh(r->got.data_buf.key),
	}, *bad;

	return ibv_post_send(r->id->qp, &wr, &bad);
}

static int raw_send_noimm(struct raw *r)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND }, *bad;

	return ibv_post_send(r->id->qp, &wr, &bad);
}

/* Read one byte at a time until the rsocket fails; the bytes read. */
static int drain_to_error(int s, int *err)
{
	int n = 0;
	char c;

	for (;;) {
		ssize_t ret = rrecv(s, &c, 1, 0);

		if (ret < 0) {
			*err = errno;
			return n;
		}
		if (ret == 0) {
			*err = 0;
			return n;
		}
		if (++n > 100000) {
			*err = -1;
			return n;
		}
	}
}

FIXTURE(hostile)
{
	int l, a;
	uint16_t port;
	struct raw r;
};

FIXTURE_SETUP(hostile)
{
	struct sockaddr_in sin;

	memset(&self->r, 0, sizeof(self->r));
	self->a = -1;
	self->port = cm_port();
	sin = cm_addr(self->port);
	self->l = rsocket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, self->l);
	ASSERT_EQ(0, rbind(self->l, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(0, rlisten(self->l, 4));
}

FIXTURE_TEARDOWN(hostile)
{
	if (self->a >= 0)
		rclose(self->a);
	raw_close(&self->r);
	if (self->l >= 0)
		rclose(self->l);
}

/* Connect as a well-behaved peer and take the accepted rsocket. */
static int hostile_accept(struct __test_metadata *_metadata,
			  FIXTURE_DATA(hostile) *self)
{
	struct wire_conn c;

	if (raw_connect(&self->r, self->port, &c, sizeof(c), true))
		return -1;
	self->a = raccept(self->l, NULL, NULL);
	EXPECT_EQ(1, self->r.got.version);
	EXPECT_EQ(2, be32toh(self->r.got.target_sgl.length));
	/* Half the default 128 KiB receive buffer. */
	EXPECT_EQ(65536, be32toh(self->r.got.data_buf.length));
	return self->a;
}

/* Data that claims more than the area given: refused, nothing read. */
TEST_F(hostile, data_past_its_area)
{
	int err;

	ASSERT_LE(0, hostile_accept(_metadata, self));
	ASSERT_EQ(0, raw_write_imm(&self->r, OP(OP_DATA, 65537), 0, 0));
	EXPECT_EQ(0, drain_to_error(self->a, &err));
	EXPECT_EQ(EPROTO, err);
}

/* The largest length the immediate can say. */
TEST_F(hostile, data_length_max)
{
	int err;

	ASSERT_LE(0, hostile_accept(_metadata, self));
	ASSERT_EQ(0, raw_write_imm(&self->r, OP(OP_DATA, 0x1fffffff), 0, 0));
	EXPECT_EQ(0, drain_to_error(self->a, &err));
	EXPECT_EQ(EPROTO, err);
}

/* What came before the bad message is still read, then the error. */
TEST_F(hostile, good_then_bad)
{
	char buf[8] = {};
	int err;

	ASSERT_LE(0, hostile_accept(_metadata, self));
	memcpy(self->r.buf + 2048, "abcd", 4);
	ASSERT_EQ(0, raw_write_imm(&self->r, OP(OP_DATA, 4), 0, 4));
	ASSERT_EQ(0, raw_write_imm(&self->r, OP(OP_BOGUS, 1), 0, 0));
	EXPECT_EQ(4, rrecv(self->a, buf, 4, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(buf, "abcd", 4));
	EXPECT_EQ(0, drain_to_error(self->a, &err));
	EXPECT_EQ(EPROTO, err);
}

/* A disconnect after a broken rule does not turn the error into an end. */
TEST_F(hostile, bad_then_disconnect)
{
	int err;

	ASSERT_LE(0, hostile_accept(_metadata, self));
	ASSERT_EQ(0, raw_write_imm(&self->r, OP(OP_BOGUS, 1), 0, 0));
	ASSERT_EQ(0, raw_write_imm(&self->r, OP(7, 0), 0, 0));
	EXPECT_EQ(0, drain_to_error(self->a, &err));
	EXPECT_EQ(EPROTO, err);
}

static void *accept_one(void *arg)
{
	int *s = arg, ret;

	ret = raccept(*s, NULL, NULL);
	*s = ret < 0 ? -errno : ret;
	return NULL;
}

/* rclose() of a listener another thread waits in raccept() on. */
TEST_F_TIMEOUT(hostile, close_while_accepting, 60)
{
	int s = self->l, i;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, accept_one, &s));
	usleep(300000);
	EXPECT_EQ(0, rclose(self->l));
	self->l = -1;
	for (i = 0; i < 100 && s >= 0; i++)
		usleep(100000);
	EXPECT_EQ(-EBADF, s);
	if (s == -EBADF)
		pthread_join(t, NULL);
}

static void *listen_it(void *arg)
{
	rlisten(*(int *)arg, 4);
	return NULL;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * rlisten() racing rclose() of the same rsocket, many times: a listener
 * closed under it must not stay on the background thread's list, which
 * would then poll a closed fd (or another's) for ever, at full speed.
 */
TEST(listen_close_race)
{
	double before;
	pthread_t t;
	int i, s;

	for (i = 0; i < 200; i++) {
		s = rsocket(AF_INET, SOCK_STREAM, 0);
		ASSERT_LE(0, s);
		ASSERT_EQ(0, pthread_create(&t, NULL, listen_it, &s));
		rclose(s);
		pthread_join(t, NULL);
	}
	usleep(500000);
	before = cpu_seconds();
	sleep(2);
	EXPECT_GT(0.5, cpu_seconds() - before);
}

TEST_F(hostile, send_without_immediate)
{
	int err;

	ASSERT_LE(0, hostile_accept(_metadata, self));
	ASSERT_EQ(0, raw_send_noimm(&self->r));
	EXPECT_EQ(0, drain_to_error(self->a, &err));
	EXPECT_EQ(EPROTO, err);
}

/* How many of its sends the peer saw complete; -1 on an error. */
static int raw_sent(struct raw *r, int want)
{
	struct ibv_wc wc;
	int n = 0, i;

	for (i = 0; i < 600 && n < want; i++) {
		int got = ibv_poll_cq(r->id->send_cq, 1, &wc);

		if (got < 0 || (got && wc.status != IBV_WC_SUCCESS))
			return -1;
		n += got;
		if (!got)
			usleep(50000);
	}
	return n;
}

/*
 * More messages than the receive queue's credits, none of them read.
 * The peer fills the receive queue (the credits it was given), the
 * rsocket takes those completions without reading them (rpoll()) and
 * posts its receives again, and the peer sends more: past what the
 * rsocket may hold unread.
 */
TEST_F_TIMEOUT(hostile, past_the_credits, 120)
{
	struct pollfd p = { .events = POLLIN };
	int err, n, i;

	ASSERT_LE(0, hostile_accept(_metadata, self));
	p.fd = self->a;
	for (i = 0; i < RQ; i++)
		ASSERT_EQ(0, raw_write_imm(&self->r, OP(OP_DATA, 1), i, 1));
	ASSERT_EQ(RQ, raw_sent(&self->r, RQ));
	EXPECT_EQ(1, rpoll(&p, 1, 1000));
	EXPECT_FALSE(p.revents & POLLERR);
	for (i = 0; i < 16; i++)
		ASSERT_EQ(0, raw_write_imm(&self->r, OP(OP_DATA, 1), RQ + i, 1));
	/*
	 * rpoll() took the completions and posted the receives again; the
	 * 16 land past what may be unread.  On the 6.12-rt bench kernel the
	 * peer's writes sometimes never complete (the stall the stop's note
	 * describes): that is not what this test is about, and it must not
	 * hang on it.
	 */
	for (i = 0, n = 0; i < 300; i++) {
		struct ibv_wc wc;

		p.revents = 0;
		if (rpoll(&p, 1, 100) == 1 && (p.revents & POLLERR))
			break;
		while (ibv_poll_cq(self->r.id->send_cq, 1, &wc) == 1)
			n += wc.status == IBV_WC_SUCCESS;
	}
	if (!(p.revents & POLLERR) && n < 16)
		SKIP(return, "the peer's last %d writes never completed", 16 - n);
	ASSERT_TRUE(p.revents & POLLERR);
	n = drain_to_error(self->a, &err);
	EXPECT_EQ(EPROTO, err);
	/* What came within the credits is read; nothing past them. */
	EXPECT_EQ(RQ, n);
}

/* Connection data that is not rsocket's: refused, the listener goes on. */
TEST_F(hostile, bad_connection_data)
{
	struct wire_conn c;
	struct raw bad[3] = {};
	int i;

	for (i = 0; i < 3; i++) {
		int len = sizeof(c);

		memset(&c, 0, sizeof(c));
		if (i == 0)
			len = 20;		/* short */
		if (i == 1)
			c.version = 2;		/* another version */
		if (i == 2)
			c.version = 1;		/* no target SGL entries */
		EXPECT_EQ(-1, raw_connect(&bad[i], self->port, &c, len, false));
		raw_close(&bad[i]);
	}
	/* A good one after them is accepted. */
	ASSERT_LE(0, hostile_accept(_metadata, self));
	EXPECT_EQ(0, rfcntl(self->l, F_SETFL, O_NONBLOCK));
	EXPECT_EQ(-1, raccept(self->l, NULL, NULL));
	EXPECT_EQ(EAGAIN, errno);
}

struct bad_server {
	uint16_t port;
	struct raw r;
	int listening;
	int done;
};

static void *bad_server_run(void *arg)
{
	struct bad_server *b = arg;
	struct sockaddr_in sin = cm_addr(b->port);
	struct rdma_cm_id *lid;
	struct rdma_cm_event *ev;
	struct wire_conn c;
	struct rdma_conn_param p = {};

	b->r.ch = rdma_create_event_channel();
	if (!b->r.ch || rdma_create_id(b->r.ch, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&sin) || rdma_listen(lid, 1))
		goto out;
	atomic_store((atomic_int *)&b->listening, 1);
	ev = cm_expect(b->r.ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		goto out;
	b->r.id = ev->id;
	rdma_ack_cm_event(ev);
	if (raw_qp(&b->r, b->r.id))
		goto out;
	raw_conn(&b->r, &c);
	c.version = 9;
	p.private_data = &c;
	p.private_data_len = sizeof(c);
	rdma_accept(b->r.id, &p);
	ev = cm_next(b->r.ch, CM_TIMEOUT_MS);
	if (ev)
		rdma_ack_cm_event(ev);
out:
	atomic_store((atomic_int *)&b->done, 1);
	return NULL;
}

/* A reply of another version: the rsocket's connect fails. */
TEST(bad_reply)
{
	struct bad_server b = { .port = cm_port() };
	struct sockaddr_in sin = cm_addr(b.port);
	pthread_t t;
	int s, i;

	ASSERT_EQ(0, pthread_create(&t, NULL, bad_server_run, &b));
	for (i = 0; i < 300 && !atomic_load((atomic_int *)&b.listening); i++)
		usleep(100000);
	s = rsocket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, s);
	EXPECT_EQ(-1, rconnect(s, (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(EPROTO, errno);
	rclose(s);
	pthread_join(t, NULL);
	raw_close(&b.r);
}

TEST_HARNESS_MAIN
