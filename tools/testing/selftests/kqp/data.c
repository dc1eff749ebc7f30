// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The data path: every RC opcode at the sizes where things break, UD with
 * its GRH and a reply addressed from the completion, gather/scatter,
 * inline data, a long post list, RNR, flushes and the rdma_verbs.h
 * helpers.  Every byte moved is checked against a pattern, and every
 * completion's status, wr_id, opcode and length.  librdmacm and
 * libibverbs API only: built against libkqp (data) and against rdma-core
 * (data_rdmacm), and both run in every guest.
 */
#include <pthread.h>
#include <unistd.h>
#include <netinet/in.h>
#include <rdma/rdma_verbs.h>

#include "qp_test.h"

/* data.c's own ports, below cm_port()'s (20000 and up). */
enum {
	PORT_RC_SEND = 7500,
	PORT_RC_SEND_IMM,
	PORT_RC_WRITE,
	PORT_RC_WRITE_IMM,
	PORT_RC_READ,
	PORT_ATOMICS,
	PORT_UD,
	PORT_SGE,
	PORT_INLINE,
	PORT_POST_LIST,
	PORT_RNR_RETRY,
	PORT_RNR_EXCEEDED,
	PORT_FLUSH_RECV,
	PORT_FLUSH_SEND,
	PORT_FLUSH_RETRY,
	PORT_VERBS_RC,
	PORT_VERBS_UD,
	PORT_RECV_THEN_TELL,
	PORT_RECV_HALF_FULL,
	PORT_RECV_BURST,
	PORT_SQ_FULL,
};

/* The largest message. */
#define BIG		(1U << 20)
/* Bytes past a message that must keep CANARY_BYTE. */
#define CANARY		64
#define CANARY_BYTE	0xa5
/* In front of every UD receive. */
#define GRH_LEN		40
/* A completion that takes this long is lost. */
#define POLL_MS		10000

#define ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/*
 * Byte @i of pattern @seed: a hash, so that a byte landing at the wrong
 * offset, a page out of place or another message's data all show.
 */
static uint8_t pat(unsigned int seed, size_t i)
{
	uint32_t x = seed * 2654435761u ^ (uint32_t)i * 0x9e3779b9u;

	x ^= x >> 15;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	return (uint8_t)x;
}

static void fill(void *buf, size_t len, unsigned int seed)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(seed, i);
}

/* The offset of the first byte of @buf that is not pattern @seed, or -1. */
static long mismatch(const void *buf, size_t len, unsigned int seed)
{
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != pat(seed, i))
			return i;
	return -1;
}

/* Are all @len bytes at @buf @v? */
static bool all_bytes(const void *buf, size_t len, uint8_t v)
{
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* The GID RoCE v2 gives an IPv4 address: ::ffff:a.b.c.d. */
static bool gid_is_ipv4(const union ibv_gid *gid, const struct sockaddr_in *sin)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid->raw, v4mapped, sizeof(v4mapped)) &&
	       !memcmp(gid->raw + 12, &sin->sin_addr, 4);
}

/*
 * Do the 40 bytes in front of a UD payload say it went from @from to @to?
 * On RoCE v2 over IPv4 they hold the packet's IPv4 header in their last
 * 20 bytes; otherwise they are a GRH naming the two GIDs.
 */
static bool grh_names(const void *buf, const struct sockaddr_in *from,
		      const struct sockaddr_in *to)
{
	const struct ibv_grh *grh = buf;
	const uint8_t *ip = (const uint8_t *)buf + 20;

	if (ip[0] == 0x45)
		return ip[9] == IPPROTO_UDP &&
		       !memcmp(ip + 12, &from->sin_addr, 4) &&
		       !memcmp(ip + 16, &to->sin_addr, 4);
	return (ntohl(grh->version_tclass_flow) >> 28) == 6 &&
	       gid_is_ipv4(&grh->sgid, from) && gid_is_ipv4(&grh->dgid, to);
}

/* Reads and atomics need responder resources and an initiator depth. */
static const struct rdma_conn_param rdma_param = {
	.responder_resources = 4,
	.initiator_depth = 4,
	.retry_count = 7,
	.rnr_retry_count = 7,
};

/*
 * A connected pair, and buffers registered for a test; the teardown
 * deregisters and frees them, and closes the pair.
 */
#define DATA_BUFS 8

FIXTURE(data) {
	struct qp_pair p;
	void *buf[DATA_BUFS];
	struct ibv_mr *mr[DATA_BUFS];
};

FIXTURE_SETUP(data)
{
}

FIXTURE_TEARDOWN(data)
{
	int i;

	for (i = 0; i < DATA_BUFS; i++) {
		if (self->mr[i])
			ibv_dereg_mr(self->mr[i]);
		free(self->buf[i]);
	}
	qp_pair_close(&self->p);
}

/* Buffer @i: @len bytes of CANARY_BYTE, registered on @pd. */
static void *data_buf(FIXTURE_DATA(data) *self, int i, struct ibv_pd *pd,
		      size_t len, int access)
{
	self->buf[i] = malloc(len);
	if (!self->buf[i])
		return NULL;
	memset(self->buf[i], CANARY_BYTE, len);
	self->mr[i] = ibv_reg_mr(pd, self->buf[i], len, access);
	return self->mr[i] ? self->buf[i] : NULL;
}

/* The completion opcode of a send queue's work request. */
static enum ibv_wc_opcode wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * 1. Each RC opcode that moves data, at 0, 1, 4095, 4096 bytes and 1 MiB:
 * the client is the requester, the server's buffer the target (or, for
 * RDMA READ, the source).
 */
FIXTURE(rc) {
	struct qp_pair p;
	uint32_t max_msg_sz;
	struct qp_bufs b;
};

FIXTURE_VARIANT(rc) {
	enum ibv_wr_opcode opcode;
	uint16_t port;
};

FIXTURE_VARIANT_ADD(rc, send) {
	.opcode = IBV_WR_SEND,
	.port = PORT_RC_SEND,
};

FIXTURE_VARIANT_ADD(rc, send_with_imm) {
	.opcode = IBV_WR_SEND_WITH_IMM,
	.port = PORT_RC_SEND_IMM,
};

FIXTURE_VARIANT_ADD(rc, rdma_write) {
	.opcode = IBV_WR_RDMA_WRITE,
	.port = PORT_RC_WRITE,
};

FIXTURE_VARIANT_ADD(rc, rdma_write_with_imm) {
	.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
	.port = PORT_RC_WRITE_IMM,
};

FIXTURE_VARIANT_ADD(rc, rdma_read) {
	.opcode = IBV_WR_RDMA_READ,
	.port = PORT_RC_READ,
};

FIXTURE_SETUP(rc)
{
	struct ibv_port_attr pa;
	int step;

	step = qp_pair_connect_with(&self->p, variant->port, NULL, &rdma_param);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	ASSERT_EQ(0, ibv_query_port(self->p.cid->verbs, self->p.cid->port_num,
				    &pa));
	self->max_msg_sz = pa.max_msg_sz;
	ASSERT_EQ(0, qp_bufs_reg(&self->b, &self->p, BIG + CANARY, ACCESS_ALL))
		TH_LOG("%s", strerror(errno));
}

FIXTURE_TEARDOWN(rc)
{
	qp_bufs_free(&self->b);
	qp_pair_close(&self->p);
}

static void rc_one(struct __test_metadata *_metadata, FIXTURE_DATA(rc) *self,
		   enum ibv_wr_opcode op, size_t size, unsigned int seq)
{
	struct qp_pair *p = &self->p;
	bool imm = op == IBV_WR_SEND_WITH_IMM ||
		   op == IBV_WR_RDMA_WRITE_WITH_IMM;
	bool send = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
	bool read = op == IBV_WR_RDMA_READ;
	struct ibv_sge ssge = {
		(uintptr_t)self->b.cbuf, (uint32_t)size, self->b.cmr->lkey
	};
	struct ibv_sge rsge = {
		(uintptr_t)self->b.sbuf, BIG + CANARY, self->b.smr->lkey
	};
	struct ibv_send_wr swr = {
		.wr_id = 0x5000 + seq,
		.sg_list = &ssge,
		.num_sge = size ? 1 : 0,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bsw;
	/* A write's data lands in the MR; its receive only reports it. */
	struct ibv_recv_wr rwr = {
		.wr_id = 0x6000 + seq,
		.sg_list = &rsge,
		.num_sge = send ? 1 : 0,
	}, *brw;
	char *src = read ? self->b.sbuf : self->b.cbuf;
	char *dst = read ? self->b.cbuf : self->b.sbuf;
	struct ibv_wc wc;
	long bad;

	fill(src, size, seq);
	memset(dst, CANARY_BYTE, size + CANARY);
	if (imm)
		swr.imm_data = htonl(0xc0de0000 + seq);
	if (!send) {
		swr.wr.rdma.remote_addr = (uintptr_t)self->b.sbuf;
		swr.wr.rdma.rkey = self->b.smr->rkey;
	}
	if (send || imm)
		ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr, &brw));
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));

	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS))
		TH_LOG("%zu bytes: no send completion", size);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%zu bytes: %s", size, ibv_wc_status_str(wc.status));
	EXPECT_EQ(swr.wr_id, wc.wr_id);
	EXPECT_EQ(wc_opcode_of(op), wc.opcode);
	EXPECT_EQ(p->cid->qp->qp_num, wc.qp_num);
	/* The length is defined for reads (and atomics) on the send side. */
	if (read)
		EXPECT_EQ(size, wc.byte_len);

	if (send || imm) {
		ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS))
			TH_LOG("%zu bytes: no receive completion", size);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("%zu bytes: %s", size,
			       ibv_wc_status_str(wc.status));
		EXPECT_EQ(rwr.wr_id, wc.wr_id);
		EXPECT_EQ(send ? IBV_WC_RECV : IBV_WC_RECV_RDMA_WITH_IMM,
			  wc.opcode);
		EXPECT_EQ(size, wc.byte_len);
		EXPECT_EQ(p->sid->qp->qp_num, wc.qp_num);
		EXPECT_EQ(imm, !!(wc.wc_flags & IBV_WC_WITH_IMM));
		if (imm)
			EXPECT_EQ(swr.imm_data, wc.imm_data);
	}

	bad = mismatch(dst, size, seq);
	EXPECT_EQ(-1, bad) TH_LOG("%zu bytes: wrong from offset %ld", size,
				  bad);
	EXPECT_TRUE(all_bytes(dst + size, CANARY, CANARY_BYTE))
		TH_LOG("%zu bytes: written past the end", size);
}

TEST_F_TIMEOUT(rc, sizes, 120)
{
	static const size_t sizes[] = { 0, 1, 4095, 4096, BIG };
	struct ibv_wc wc;
	unsigned int i;

	ASSERT_LE(BIG, self->max_msg_sz);
	for (i = 0; i < ARRAY_SIZE(sizes); i++)
		rc_one(_metadata, self, variant->opcode, sizes[i], i + 1);
	/* Nothing else completed, on either side. */
	EXPECT_EQ(0, ibv_poll_cq(self->p.cid->send_cq, 1, &wc));
	EXPECT_EQ(0, ibv_poll_cq(self->p.cid->recv_cq, 1, &wc));
	EXPECT_EQ(0, ibv_poll_cq(self->p.sid->send_cq, 1, &wc));
	EXPECT_EQ(0, ibv_poll_cq(self->p.sid->recv_cq, 1, &wc));
}

/* One atomic on the server's *@remote; the old value lands in *@result. */
static void atomic_one(struct __test_metadata *_metadata, struct qp_pair *p,
		       enum ibv_wr_opcode op, uint64_t *remote, uint32_t rkey,
		       uint64_t *result, uint32_t lkey, uint64_t compare_add,
		       uint64_t swap, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)result, 8, lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = {
			.remote_addr = (uintptr_t)remote,
			.compare_add = compare_add,
			.swap = swap,
			.rkey = rkey,
		},
	}, *bad;
	struct ibv_wc wc;

	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &wr, &bad));
	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(wr_id, wc.wr_id);
	EXPECT_EQ(wc_opcode_of(op), wc.opcode);
	EXPECT_EQ(8, wc.byte_len);
}

/* 1. Atomics, where the device has them. */
TEST_F_TIMEOUT(data, atomics, 60)
{
	struct qp_pair *p = &self->p;
	struct ibv_device_attr da;
	uint64_t *remote, *result;
	int step;

	step = qp_pair_connect_with(p, PORT_ATOMICS, NULL, &rdma_param);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	ASSERT_EQ(0, ibv_query_device(p->cid->verbs, &da));
	if (da.atomic_cap == IBV_ATOMIC_NONE)
		SKIP(return, "the device has no atomics");
	remote = data_buf(self, 0, p->sid->pd, 4 * 8, ACCESS_ALL);
	result = data_buf(self, 1, p->cid->pd, 4 * 8, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, remote);
	ASSERT_NE(NULL, result);
	/* The target is remote[1]; its neighbours must not change. */
	remote[1] = 0x0123456789abcdefULL;

	/* Compare matches: swapped, the old value returned. */
	atomic_one(_metadata, p, IBV_WR_ATOMIC_CMP_AND_SWP, &remote[1],
		   self->mr[0]->rkey, &result[0], self->mr[1]->lkey,
		   0x0123456789abcdefULL, 0xfedcba9876543210ULL, 0xa1);
	EXPECT_EQ(0x0123456789abcdefULL, result[0]);
	EXPECT_EQ(0xfedcba9876543210ULL, remote[1]);
	/* Compare differs: nothing swapped, the current value returned. */
	atomic_one(_metadata, p, IBV_WR_ATOMIC_CMP_AND_SWP, &remote[1],
		   self->mr[0]->rkey, &result[1], self->mr[1]->lkey,
		   0x0123456789abcdefULL, 0x1111111111111111ULL, 0xa2);
	EXPECT_EQ(0xfedcba9876543210ULL, result[1]);
	EXPECT_EQ(0xfedcba9876543210ULL, remote[1]);
	/* Add, with a carry out of the low 32 bits. */
	remote[1] = 0x00000000ffffffffULL;
	atomic_one(_metadata, p, IBV_WR_ATOMIC_FETCH_AND_ADD, &remote[1],
		   self->mr[0]->rkey, &result[2], self->mr[1]->lkey,
		   0x100000001ULL, 0, 0xa3);
	EXPECT_EQ(0x00000000ffffffffULL, result[2]);
	EXPECT_EQ(0x0000000200000000ULL, remote[1]);

	EXPECT_TRUE(all_bytes(&remote[0], 8, CANARY_BYTE));
	EXPECT_TRUE(all_bytes(&remote[2], 16, CANARY_BYTE));
	EXPECT_TRUE(all_bytes(&result[3], 8, CANARY_BYTE));
}

/*
 * 2. UD through the CM: the client learns the server's QP from
 * ESTABLISHED, sends with an AH made from the event, and the server
 * answers with an AH made from the completion and the GRH.
 */
TEST_F_TIMEOUT(data, ud_grh_and_reply, 90)
{
	struct sockaddr_in sin = cm_addr(PORT_UD);
	struct ibv_qp_init_attr cattr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	}, sattr = cattr;
	struct rdma_conn_param cp = { 0 }, sp = { 0 };
	struct ibv_recv_wr rwr = { .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = {
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bsw;
	struct qp_pair *p = &self->p;
	char *crecv, *csend, *srecv, *ssend;
	struct ibv_ah *cah, *sah;
	struct ibv_ah_attr ah_attr;
	struct rdma_cm_event *ev;
	struct rdma_ud_param ud;
	struct ibv_port_attr pa;
	struct ibv_sge rsge, ssge;
	struct ibv_wc wc;
	union ibv_gid gid;
	uint32_t mtu;

	p->sch = rdma_create_event_channel();
	p->cch = rdma_create_event_channel();
	ASSERT_NE(NULL, p->sch);
	ASSERT_NE(NULL, p->cch);
	p->lid = listener(p->sch, PORT_UD, RDMA_PS_UDP, 4);
	ASSERT_NE(NULL, p->lid);
	p->cid = resolved(p->cch, PORT_UD, RDMA_PS_UDP);
	ASSERT_NE(NULL, p->cid);
	ASSERT_EQ(0, rdma_create_qp(p->cid, NULL, &cattr));
	/* A UD message is one packet: send exactly the path MTU. */
	ASSERT_EQ(0, ibv_query_port(p->cid->verbs, p->cid->port_num, &pa));
	mtu = 128u << pa.active_mtu;
	crecv = data_buf(self, 0, p->cid->pd, GRH_LEN + mtu,
			 IBV_ACCESS_LOCAL_WRITE);
	csend = data_buf(self, 1, p->cid->pd, mtu, 0);
	ASSERT_NE(NULL, crecv);
	ASSERT_NE(NULL, csend);
	rsge = (struct ibv_sge){ (uintptr_t)crecv, GRH_LEN + mtu,
				 self->mr[0]->lkey };
	rwr.sg_list = &rsge;
	rwr.wr_id = 0xc1;
	ASSERT_EQ(0, ibv_post_recv(p->cid->qp, &rwr, &brw));
	ASSERT_EQ(0, rdma_connect(p->cid, &cp));

	p->sid = cm_expect_request(p->sch);
	ASSERT_NE(NULL, p->sid);
	ASSERT_EQ(0, rdma_create_qp(p->sid, NULL, &sattr));
	srecv = data_buf(self, 2, p->sid->pd, GRH_LEN + mtu,
			 IBV_ACCESS_LOCAL_WRITE);
	ssend = data_buf(self, 3, p->sid->pd, mtu, 0);
	ASSERT_NE(NULL, srecv);
	ASSERT_NE(NULL, ssend);
	rsge = (struct ibv_sge){ (uintptr_t)srecv, GRH_LEN + mtu,
				 self->mr[2]->lkey };
	rwr.wr_id = 0x51;
	ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr, &brw));
	ASSERT_EQ(0, rdma_accept(p->sid, &sp));

	ev = cm_expect(p->cch, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_NE(NULL, ev);
	ud = ev->param.ud;
	EXPECT_EQ(p->sid->qp->qp_num, ud.qp_num);
	EXPECT_EQ(RDMA_UDP_QKEY, ud.qkey);
	EXPECT_EQ(1, ud.ah_attr.is_global);
	EXPECT_EQ(p->cid->port_num, ud.ah_attr.port_num);
	EXPECT_TRUE(gid_is_ipv4(&ud.ah_attr.grh.dgid, &sin));
	cah = ibv_create_ah(p->cid->pd, &ud.ah_attr);
	rdma_ack_cm_event(ev);
	ASSERT_NE(NULL, cah) TH_LOG("%s", strerror(errno));

	/* Client to server, addressed from the event. */
	fill(csend, mtu, 0x21);
	ssge = (struct ibv_sge){ (uintptr_t)csend, mtu, self->mr[1]->lkey };
	swr.sg_list = &ssge;
	swr.wr_id = 0xc2;
	swr.wr.ud.ah = cah;
	swr.wr.ud.remote_qpn = ud.qp_num;
	swr.wr.ud.remote_qkey = ud.qkey;
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0xc2, wc.wr_id);
	EXPECT_EQ(IBV_WC_SEND, wc.opcode);

	ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(0x51, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(GRH_LEN + mtu, wc.byte_len);
	EXPECT_EQ(p->cid->qp->qp_num, wc.src_qp);
	EXPECT_EQ(p->sid->qp->qp_num, wc.qp_num);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
	EXPECT_TRUE(grh_names(srecv, &sin, &sin));
	EXPECT_EQ(-1, mismatch(srecv + GRH_LEN, mtu, 0x21));

	/* Server to client, addressed from the completion and the GRH. */
	ASSERT_EQ(0, ibv_init_ah_from_wc(p->sid->verbs, p->sid->port_num, &wc,
					 (struct ibv_grh *)srecv, &ah_attr));
	EXPECT_EQ(1, ah_attr.is_global);
	EXPECT_EQ(p->sid->port_num, ah_attr.port_num);
	EXPECT_TRUE(gid_is_ipv4(&ah_attr.grh.dgid, &sin));
	ASSERT_EQ(0, ibv_query_gid(p->sid->verbs, p->sid->port_num,
				   ah_attr.grh.sgid_index, &gid));
	EXPECT_TRUE(gid_is_ipv4(&gid, &sin));
	sah = ibv_create_ah_from_wc(p->sid->pd, &wc, (struct ibv_grh *)srecv,
				    p->sid->port_num);
	ASSERT_NE(NULL, sah) TH_LOG("%s", strerror(errno));
	fill(ssend, mtu, 0x22);
	ssge = (struct ibv_sge){ (uintptr_t)ssend, mtu, self->mr[3]->lkey };
	swr.wr_id = 0x52;
	swr.wr.ud.ah = sah;
	swr.wr.ud.remote_qpn = wc.src_qp;
	swr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	ASSERT_EQ(0, ibv_post_send(p->sid->qp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(p->sid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x52, wc.wr_id);

	ASSERT_EQ(1, qp_poll(p->cid->recv_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(0xc1, wc.wr_id);
	EXPECT_EQ(GRH_LEN + mtu, wc.byte_len);
	EXPECT_EQ(p->sid->qp->qp_num, wc.src_qp);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
	EXPECT_TRUE(grh_names(crecv, &sin, &sin));
	EXPECT_EQ(-1, mismatch(crecv + GRH_LEN, mtu, 0x22));

	EXPECT_EQ(0, ibv_destroy_ah(sah));
	EXPECT_EQ(0, ibv_destroy_ah(cah));
}

/*
 * 3. Gather three SGEs into two: the bytes arrive in order, split where
 * the first receive SGE ends.  The send SGE cap written back is the one
 * that holds: a request with that many SGEs goes, one more is refused.
 */
TEST_F_TIMEOUT(data, sge_gather_scatter, 60)
{
	static const uint32_t slen[3] = { 100, 3000, 37 };
	const uint32_t rlen[2] = { 1000, 4096 };
	struct qp_pair *p = &self->p;
	struct ibv_qp_init_attr attr;
	struct ibv_sge ssge[33], rsge[33];
	struct ibv_send_wr swr = {
		.sg_list = ssge,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bsw;
	struct ibv_recv_wr rwr = { .sg_list = rsge, .num_sge = 2 }, *brw;
	uint32_t total = 0, off, nsge, i;
	char *r[2], *sb, expect[4096];
	struct ibv_wc wc;
	int step;

	qp_pair_attr(&attr);
	attr.cap.max_send_sge = 3;
	attr.cap.max_recv_sge = 2;
	attr.cap.max_inline_data = 0;
	step = qp_pair_connect_with(p, PORT_SGE, &attr, NULL);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	EXPECT_LE(3, p->cattr.cap.max_send_sge);
	EXPECT_LE(2, p->sattr.cap.max_recv_sge);
	nsge = p->cattr.cap.max_send_sge;
	ASSERT_GT(ARRAY_SIZE(ssge), nsge);
	ASSERT_GT(ARRAY_SIZE(rsge), p->sattr.cap.max_recv_sge);

	/* Three sources in three MRs, two targets in two more. */
	for (i = 0; i < 3; i++) {
		char *b = data_buf(self, i, p->cid->pd, slen[i], 0);

		ASSERT_NE(NULL, b);
		fill(b, slen[i], 0x30 + i);
		memcpy(expect + total, b, slen[i]);
		ssge[i] = (struct ibv_sge){ (uintptr_t)b, slen[i],
					    self->mr[i]->lkey };
		total += slen[i];
	}
	for (i = 0; i < 2; i++) {
		r[i] = data_buf(self, 3 + i, p->sid->pd, rlen[i] + CANARY,
				IBV_ACCESS_LOCAL_WRITE);
		ASSERT_NE(NULL, r[i]);
		rsge[i] = (struct ibv_sge){ (uintptr_t)r[i], rlen[i],
					    self->mr[3 + i]->lkey };
	}
	rwr.wr_id = 0x31;
	ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr, &brw));
	swr.wr_id = 0x32;
	swr.num_sge = 3;
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x32, wc.wr_id);
	ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x31, wc.wr_id);
	EXPECT_EQ(total, wc.byte_len);
	EXPECT_EQ(0, memcmp(r[0], expect, rlen[0]));
	EXPECT_EQ(0, memcmp(r[1], expect + rlen[0], total - rlen[0]));
	EXPECT_TRUE(all_bytes(r[0] + rlen[0], CANARY, CANARY_BYTE));
	EXPECT_TRUE(all_bytes(r[1] + total - rlen[0],
			      rlen[1] + CANARY - (total - rlen[0]),
			      CANARY_BYTE));

	/* As many SGEs as the cap says: 16 bytes from each of them. */
	sb = data_buf(self, 5, p->cid->pd, 16 * (nsge + 1), 0);
	ASSERT_NE(NULL, sb);
	fill(sb, 16 * (nsge + 1), 0x33);
	for (i = 0; i <= nsge; i++)
		ssge[i] = (struct ibv_sge){ (uintptr_t)sb + 16 * i, 16,
					    self->mr[5]->lkey };
	memset(r[0], CANARY_BYTE, rlen[0] + CANARY);
	memset(r[1], CANARY_BYTE, rlen[1] + CANARY);
	rwr.wr_id = 0x34;
	ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr, &brw));
	/* One SGE too many: refused, and nothing is posted. */
	swr.wr_id = 0x35;
	swr.num_sge = nsge + 1;
	bsw = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(p->cid->qp, &swr, &bsw));
	EXPECT_EQ(&swr, bsw);
	swr.wr_id = 0x36;
	swr.num_sge = nsge;
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x36, wc.wr_id);
	ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x34, wc.wr_id);
	EXPECT_EQ(16 * nsge, wc.byte_len);
	off = 16 * nsge < rlen[0] ? 16 * nsge : rlen[0];
	EXPECT_EQ(-1, mismatch(r[0], off, 0x33));
	EXPECT_EQ(0, memcmp(r[1], sb + off, 16 * nsge - off));
	EXPECT_TRUE(all_bytes(r[0] + off, rlen[0] + CANARY - off, CANARY_BYTE));

	/* The receive side's cap holds too. */
	rwr.num_sge = p->sattr.cap.max_recv_sge + 1;
	for (i = 2; i < (uint32_t)rwr.num_sge; i++)
		rsge[i] = rsge[1];
	brw = NULL;
	EXPECT_EQ(EINVAL, ibv_post_recv(p->sid->qp, &rwr, &brw));
	EXPECT_EQ(&rwr, brw);
	EXPECT_EQ(0, ibv_poll_cq(p->cid->send_cq, 1, &wc));
	EXPECT_EQ(0, ibv_poll_cq(p->sid->recv_cq, 1, &wc));
}

/*
 * 4. Inline sends are copied when posted: the buffer, which is not even
 * registered, is overwritten as soon as ibv_post_send() returns, and the
 * receiver still gets what it held.  Up to the cap written back, not one
 * byte more.
 */
static void inline_one(struct __test_metadata *_metadata, struct qp_pair *p,
		       char *rbuf, uint32_t rlkey, uint32_t rlen,
		       char *a, uint32_t alen, char *b, uint32_t blen,
		       unsigned int seed)
{
	struct ibv_sge ssge[2] = {
		{ (uintptr_t)a, alen, 0 },
		{ (uintptr_t)b, blen, 0 },
	};
	struct ibv_sge rsge = { (uintptr_t)rbuf, rlen, rlkey };
	struct ibv_send_wr swr = {
		.wr_id = 0x4000 + seed,
		.sg_list = ssge,
		.num_sge = b ? 2 : 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	}, *bsw;
	struct ibv_recv_wr rwr = {
		.wr_id = 0x4100 + seed,
		.sg_list = &rsge,
		.num_sge = 1,
	}, *brw;
	uint32_t len = alen + (b ? blen : 0);
	char *msg = malloc(len + 1);
	struct ibv_wc wc;

	ASSERT_NE(NULL, msg);
	fill(msg, len, seed);
	memcpy(a, msg, alen);
	if (b)
		memcpy(b, msg + alen, blen);
	memset(rbuf, CANARY_BYTE, rlen);
	ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr, &brw));
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
	memset(a, 0, alen);
	if (b)
		memset(b, 0, blen);

	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%u inline bytes: %s", len,
		       ibv_wc_status_str(wc.status));
	EXPECT_EQ(swr.wr_id, wc.wr_id);
	EXPECT_EQ(IBV_WC_SEND, wc.opcode);
	ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(rwr.wr_id, wc.wr_id);
	EXPECT_EQ(len, wc.byte_len);
	EXPECT_EQ(0, memcmp(rbuf, msg, len)) TH_LOG("%u inline bytes", len);
	EXPECT_TRUE(all_bytes(rbuf + len, rlen - len, CANARY_BYTE));
	free(msg);
}

TEST_F_TIMEOUT(data, inline_copied_at_post, 60)
{
	struct qp_pair *p = &self->p;
	struct ibv_qp_init_attr attr;
	char *rbuf, *a, *b;
	uint32_t max, rlen;
	struct ibv_sge sge;
	struct ibv_send_wr swr = {
		.wr_id = 0x4200,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE,
	}, *bsw;
	struct ibv_wc wc;
	int step;

	qp_pair_attr(&attr);
	attr.cap.max_inline_data = 128;
	step = qp_pair_connect_with(p, PORT_INLINE, &attr, NULL);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	max = p->cattr.cap.max_inline_data;
	ASSERT_LE(128, max);
	rlen = max + 1 + CANARY;
	rbuf = data_buf(self, 0, p->sid->pd, rlen, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, rbuf);
	/* Plain heap memory: inline data needs no MR. */
	a = malloc(max + 1);
	b = malloc(max + 1);
	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);

	inline_one(_metadata, p, rbuf, self->mr[0]->lkey, rlen, a, 1, NULL,
		   0, 1);
	inline_one(_metadata, p, rbuf, self->mr[0]->lkey, rlen, a, max, NULL,
		   0, 2);
	inline_one(_metadata, p, rbuf, self->mr[0]->lkey, rlen, a, max / 3, b,
		   max - max / 3, 3);

	/* One byte past the cap: refused, and nothing is posted. */
	sge = (struct ibv_sge){ (uintptr_t)a, max + 1, 0 };
	bsw = NULL;
	EXPECT_EQ(EINVAL, ibv_post_send(p->cid->qp, &swr, &bsw));
	EXPECT_EQ(&swr, bsw);
	EXPECT_EQ(0, qp_poll(p->cid->send_cq, &wc, 1, 200));
	EXPECT_EQ(0, ibv_poll_cq(p->sid->recv_cq, 1, &wc));
	free(a);
	free(b);
}

/*
 * 5. A list of 1000 sends in one ibv_post_send(), only the last one
 * signaled, twice: every message arrives, in order and intact, and each
 * list gives exactly one send completion.
 */
#define LIST_LEN	1000
#define LIST_MSG	64
#define RECV_BATCH	100

TEST_F_TIMEOUT(data, post_list_unsignaled, 180)
{
	struct qp_pair *p = &self->p;
	struct ibv_qp_init_attr attr;
	struct ibv_send_wr *swr, *bsw;
	struct ibv_recv_wr *rwr, *brw;
	struct ibv_sge *ssge, *rsge;
	struct ibv_wc *wc;
	char *sbuf, *rbuf;
	int step, round, i, bad_wc, bad_data, first_bad;

	qp_pair_attr(&attr);
	attr.cap.max_send_wr = 1024;
	attr.cap.max_recv_wr = 1024;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	step = qp_pair_connect_with(p, PORT_POST_LIST, &attr, NULL);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	EXPECT_LE(1024, p->cattr.cap.max_send_wr);
	EXPECT_LE(1024, p->sattr.cap.max_recv_wr);
	sbuf = data_buf(self, 0, p->cid->pd, LIST_LEN * LIST_MSG, 0);
	rbuf = data_buf(self, 1, p->sid->pd, LIST_LEN * LIST_MSG,
			IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, sbuf);
	ASSERT_NE(NULL, rbuf);
	swr = calloc(LIST_LEN, sizeof(*swr));
	rwr = calloc(LIST_LEN, sizeof(*rwr));
	ssge = calloc(LIST_LEN, sizeof(*ssge));
	rsge = calloc(LIST_LEN, sizeof(*rsge));
	wc = calloc(LIST_LEN, sizeof(*wc));
	ASSERT_TRUE(swr && rwr && ssge && rsge && wc);

	for (round = 0; round < 2; round++) {
		uint64_t base = round * LIST_LEN;

		memset(rbuf, CANARY_BYTE, LIST_LEN * LIST_MSG);
		for (i = 0; i < LIST_LEN; i++) {
			char *s = sbuf + i * LIST_MSG;

			fill(s, LIST_MSG, base + i + 1);
			ssge[i] = (struct ibv_sge){ (uintptr_t)s, LIST_MSG,
						    self->mr[0]->lkey };
			swr[i] = (struct ibv_send_wr){
				.wr_id = base + i,
				.next = i + 1 < LIST_LEN ? &swr[i + 1] : NULL,
				.sg_list = &ssge[i],
				.num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = i + 1 < LIST_LEN ?
					0 : IBV_SEND_SIGNALED,
			};
			rsge[i] = (struct ibv_sge){
				(uintptr_t)rbuf + i * LIST_MSG, LIST_MSG,
				self->mr[1]->lkey
			};
			rwr[i] = (struct ibv_recv_wr){
				.wr_id = base + i,
				.next = (i + 1) % RECV_BATCH ? &rwr[i + 1] :
							       NULL,
				.sg_list = &rsge[i],
				.num_sge = 1,
			};
		}
		/* Receives in lists of RECV_BATCH, all before the sends. */
		for (i = 0; i < LIST_LEN; i += RECV_BATCH)
			ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr[i], &brw));
		ASSERT_EQ(0, ibv_post_send(p->cid->qp, swr, &bsw));

		ASSERT_EQ(LIST_LEN, qp_poll(p->sid->recv_cq, wc, LIST_LEN,
					    60000));
		bad_wc = bad_data = 0;
		first_bad = -1;
		for (i = 0; i < LIST_LEN; i++) {
			if (wc[i].status != IBV_WC_SUCCESS ||
			    wc[i].wr_id != base + i ||
			    wc[i].opcode != IBV_WC_RECV ||
			    wc[i].byte_len != LIST_MSG) {
				bad_wc++;
				if (first_bad < 0)
					first_bad = i;
			}
			if (mismatch(rbuf + i * LIST_MSG, LIST_MSG,
				     base + i + 1) >= 0)
				bad_data++;
		}
		EXPECT_EQ(0, bad_wc)
			TH_LOG("round %d: completion %d: wr_id %llu status %d",
			       round, first_bad, first_bad < 0 ? 0ULL :
			       (unsigned long long)wc[first_bad].wr_id,
			       first_bad < 0 ? 0 : wc[first_bad].status);
		EXPECT_EQ(0, bad_data) TH_LOG("round %d", round);

		/* The one signaled request; none of the others reports. */
		ASSERT_EQ(1, qp_poll(p->cid->send_cq, wc, 1, POLL_MS));
		EXPECT_EQ(IBV_WC_SUCCESS, wc[0].status);
		EXPECT_EQ(base + LIST_LEN - 1, wc[0].wr_id);
		EXPECT_EQ(IBV_WC_SEND, wc[0].opcode);
		EXPECT_EQ(0, ibv_poll_cq(p->cid->send_cq, 4, wc));
	}
	EXPECT_EQ(0, ibv_poll_cq(p->sid->recv_cq, 4, wc));
	free(swr);
	free(rwr);
	free(ssge);
	free(rsge);
	free(wc);
}

/*
 * 6. Receiver not ready: with rnr_retry_count 7 the requester retries
 * until a receive shows up; with 0 the send fails at the first RNR NAK
 * and the QP goes to ERR.
 */
TEST_F_TIMEOUT(data, rnr_retry_waits_for_receive, 60)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct qp_pair *p = &self->p;
	struct ibv_sge ssge, rsge;
	struct ibv_send_wr swr = {
		.wr_id = 0x61,
		.sg_list = &ssge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bsw;
	struct ibv_recv_wr rwr = { .wr_id = 0x62, .sg_list = &rsge,
				   .num_sge = 1 }, *brw;
	char *sbuf, *rbuf;
	struct ibv_wc wc;
	int step;

	step = qp_pair_connect_with(p, PORT_RNR_RETRY, NULL, &cp);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	sbuf = data_buf(self, 0, p->cid->pd, 256, 0);
	rbuf = data_buf(self, 1, p->sid->pd, 256, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, sbuf);
	ASSERT_NE(NULL, rbuf);
	fill(sbuf, 256, 0x61);
	ssge = (struct ibv_sge){ (uintptr_t)sbuf, 256, self->mr[0]->lkey };
	rsge = (struct ibv_sge){ (uintptr_t)rbuf, 256, self->mr[1]->lkey };

	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
	/* No receive yet: the send cannot complete, in either way. */
	EXPECT_EQ(0, qp_poll(p->cid->send_cq, &wc, 1, 100));
	ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr, &brw));
	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(0x61, wc.wr_id);
	ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x62, wc.wr_id);
	EXPECT_EQ(256, wc.byte_len);
	EXPECT_EQ(-1, mismatch(rbuf, 256, 0x61));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(p->cid->qp));
}

/*
 * A full send queue: as many signaled sends as max_send_wr says are taken
 * while none can complete (the peer has no receive, and RNR is retried
 * for ever), and the next one is ENOMEM with bad_wr at it, never taken
 * and never sent.  Once receives arrive, exactly those complete.
 */
TEST_F_TIMEOUT(data, send_queue_full_is_enomem, 60)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct qp_pair *p = &self->p;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_sge ssge, rsge;
	struct ibv_send_wr swr = {
		.sg_list = &ssge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bsw;
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *brw;
	struct ibv_wc wc;
	uint32_t depth, i, got;
	char *sbuf, *rbuf;
	int step;

	step = qp_pair_connect_with(p, PORT_SQ_FULL, NULL, &cp);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	ASSERT_EQ(0, ibv_query_qp(p->cid->qp, &attr, IBV_QP_CAP, &init));
	depth = attr.cap.max_send_wr;
	ASSERT_LT(0, depth);
	ASSERT_GE(1024, depth);
	sbuf = data_buf(self, 0, p->cid->pd, 64, 0);
	rbuf = data_buf(self, 1, p->sid->pd, 64, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, sbuf);
	ASSERT_NE(NULL, rbuf);
	ssge = (struct ibv_sge){ (uintptr_t)sbuf, 64, self->mr[0]->lkey };
	rsge = (struct ibv_sge){ (uintptr_t)rbuf, 64, self->mr[1]->lkey };

	for (i = 0; i < depth; i++) {
		swr.wr_id = i;
		ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw))
			TH_LOG("send %u of %u", i, depth);
	}
	swr.wr_id = depth;
	bsw = NULL;
	EXPECT_EQ(ENOMEM, ibv_post_send(p->cid->qp, &swr, &bsw));
	EXPECT_EQ(&swr, bsw);
	EXPECT_EQ(0, qp_poll(p->cid->send_cq, &wc, 1, 100));

	/* Receives for them all, as the receive queue makes room. */
	for (i = 0, got = 0; i < depth;) {
		int ret;

		rwr.wr_id = 0x1000 + i;
		ret = ibv_post_recv(p->sid->qp, &rwr, &brw);
		if (ret == ENOMEM) {
			ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
			EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
			got++;
			continue;
		}
		ASSERT_EQ(0, ret);
		i++;
	}
	for (; got < depth; got++) {
		ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	}
	EXPECT_EQ(0, qp_poll(p->sid->recv_cq, &wc, 1, 200));
	for (i = 0; i < depth; i++) {
		ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS))
			TH_LOG("completion %u of %u", i, depth);
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(i, wc.wr_id);
	}
	EXPECT_EQ(0, qp_poll(p->cid->send_cq, &wc, 1, 200));
}

TEST_F_TIMEOUT(data, rnr_retry_exceeded, 60)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 0 };
	struct qp_pair *p = &self->p;
	struct ibv_sge ssge;
	struct ibv_send_wr swr = {
		.wr_id = 0x63,
		.sg_list = &ssge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bsw;
	struct ibv_wc wc;
	char *sbuf;
	int step;

	step = qp_pair_connect_with(p, PORT_RNR_EXCEEDED, NULL, &cp);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	sbuf = data_buf(self, 0, p->cid->pd, 64, 0);
	ASSERT_NE(NULL, sbuf);
	ssge = (struct ibv_sge){ (uintptr_t)sbuf, 64, self->mr[0]->lkey };

	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_RNR_RETRY_EXC_ERR, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(0x63, wc.wr_id);
	EXPECT_EQ(IBV_QPS_ERR, qp_wait_state(p->cid->qp, IBV_QPS_ERR, 5000));

	/* What is posted to it now is flushed. */
	swr.wr_id = 0x64;
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(0x64, wc.wr_id);
	EXPECT_EQ(0, ibv_poll_cq(p->sid->recv_cq, 1, &wc));
}

/*
 * 6b. A receive that ibv_post_recv() returned from is in the device's
 * queue: a message the peer sends because it was told afterwards (here by
 * another thread, through a pipe, as a TCP socket would; and through a
 * message the other way on the same connection) meets it.  With
 * rnr_retry_count 0, one message that found no receive fails the sender
 * with IBV_WC_RNR_RETRY_EXC_ERR.  Every round must succeed.
 */
#define TELL_ROUNDS 400

struct tell_peer {
	struct qp_pair *p;
	struct ibv_send_wr *swr;
	int go[2];
	int fails;
	int rounds;
};

/* The client side: sends one message per byte read from the pipe. */
static void *tell_peer_sender(void *arg)
{
	struct tell_peer *t = arg;
	struct ibv_send_wr *bsw;
	struct ibv_wc wc;
	char c;

	while (read(t->go[0], &c, 1) == 1 && c) {
		if (ibv_post_send(t->p->cid->qp, t->swr, &bsw) ||
		    qp_poll(t->p->cid->send_cq, &wc, 1, POLL_MS) != 1 ||
		    wc.status != IBV_WC_SUCCESS) {
			t->fails++;
			break;
		}
		t->rounds++;
	}
	return NULL;
}

/*
 * The pair, connected with @cp on @port, and a 64-byte buffer on each
 * side: *@csge on the client's, *@ssge on the server's.  0, or the step
 * that failed.
 */
static int tell_pair(FIXTURE_DATA(data) *self, uint16_t port,
		     const struct rdma_conn_param *cp, struct ibv_sge *csge,
		     struct ibv_sge *ssge)
{
	int step = qp_pair_connect_with(&self->p, port, NULL, cp);

	if (step)
		return step;
	if (!data_buf(self, 0, self->p.cid->pd, 64, IBV_ACCESS_LOCAL_WRITE) ||
	    !data_buf(self, 1, self->p.sid->pd, 64, IBV_ACCESS_LOCAL_WRITE))
		return 100;
	*csge = (struct ibv_sge){ (uintptr_t)self->buf[0], 64,
				  self->mr[0]->lkey };
	*ssge = (struct ibv_sge){ (uintptr_t)self->buf[1], 64,
				  self->mr[1]->lkey };
	return 0;
}

/*
 * TELL_ROUNDS rounds of: the server posts @srwr as receive @first + i,
 * tells @t's sender thread, which sends one message, and reaps the
 * completion, which must be receive @first - @held + i: the oldest of
 * the @held posted before.  Then the thread is stopped.
 */
static void tell_rounds(struct __test_metadata *_metadata,
			struct tell_peer *t, struct ibv_recv_wr *srwr,
			uint64_t first, uint64_t held)
{
	struct ibv_recv_wr *brw;
	struct ibv_wc wc;
	pthread_t th;
	char c = 1;
	int i;

	ASSERT_EQ(0, pipe(t->go));
	ASSERT_EQ(0, pthread_create(&th, NULL, tell_peer_sender, t));
	for (i = 0; i < TELL_ROUNDS && !t->fails; i++) {
		srwr->wr_id = first + i;
		ASSERT_EQ(0, ibv_post_recv(t->p->sid->qp, srwr, &brw));
		ASSERT_EQ(1, write(t->go[1], &c, 1));
		ASSERT_EQ(1, qp_poll(t->p->sid->recv_cq, &wc, 1, POLL_MS))
			TH_LOG("round %d: sender failed %d", i, t->fails);
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("round %d: %s", i, ibv_wc_status_str(wc.status));
		ASSERT_EQ(first - held + i, wc.wr_id);
	}
	c = 0;
	ASSERT_EQ(1, write(t->go[1], &c, 1));
	pthread_join(th, NULL);
	close(t->go[0]);
	close(t->go[1]);
	EXPECT_EQ(0, t->fails);
	EXPECT_EQ(TELL_ROUNDS, t->rounds);
}

TEST_F_TIMEOUT(data, receive_there_before_peer_is_told, 120)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 0 };
	struct qp_pair *p = &self->p;
	struct ibv_sge csge, ssge;
	struct ibv_send_wr swr = {
		.sg_list = &csge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, rev = {
		.sg_list = &ssge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bsw;
	struct ibv_recv_wr srwr = { .sg_list = &ssge, .num_sge = 1 };
	struct ibv_recv_wr crwr = { .sg_list = &csge, .num_sge = 1 }, *brw;
	struct tell_peer t = { .p = p, .swr = &swr };
	struct ibv_wc wc;
	int i, step;

	step = tell_pair(self, PORT_RECV_THEN_TELL, &cp, &csge, &ssge);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));

	/* Told by another thread. */
	tell_rounds(_metadata, &t, &srwr, 0, 0);

	/*
	 * Told by a message on the connection: the server posts its receive,
	 * then tells the client, which answers once it has the message.
	 */
	for (i = 0; i < TELL_ROUNDS; i++) {
		crwr.wr_id = 1000 + i;
		ASSERT_EQ(0, ibv_post_recv(p->cid->qp, &crwr, &brw));
		srwr.wr_id = 2000 + i;
		ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &srwr, &brw));
		ASSERT_EQ(0, ibv_post_send(p->sid->qp, &rev, &bsw));
		ASSERT_EQ(1, qp_poll(p->cid->recv_cq, &wc, 1, POLL_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("round %d: %s", i, ibv_wc_status_str(wc.status));
		ASSERT_EQ(0, ibv_post_send(p->cid->qp, &swr, &bsw));
		ASSERT_EQ(1, qp_poll(p->cid->send_cq, &wc, 1, POLL_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("round %d: %s", i, ibv_wc_status_str(wc.status));
		ASSERT_EQ(1, qp_poll(p->sid->send_cq, &wc, 1, POLL_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status);
		ASSERT_EQ(1, qp_poll(p->sid->recv_cq, &wc, 1, POLL_MS));
		ASSERT_EQ(IBV_WC_SUCCESS, wc.status)
			TH_LOG("round %d: %s", i, ibv_wc_status_str(wc.status));
		ASSERT_EQ((uint64_t)(2000 + i), wc.wr_id);
	}
}

/* RNR NAKs the requesters of @qp's device received, or -1. */
static long long rnr_naks(struct ibv_qp *qp)
{
	char path[256];

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/rcvd_rnr_err",
		 ibv_get_device_name(qp->context->device));
	return kqp_test_read_ll(path);
}

/*
 * 6c. The same with the receive queue half full or more, and a peer that
 * retries RNR NAKs for ever (rnr_retry_count 7 on both sides), where
 * libkqp may leave a receive for the kernel to post after
 * ibv_post_recv() returns (kqp(7): the next doorbell posts it, or the
 * kernel once the device is down to less than half).  A message still
 * meets a receive, the oldest, and the receives posted since reach the
 * device before the ones it held run out: not one RNR NAK, as with
 * rdma-core, which posts each receive at once.
 */
TEST_F_TIMEOUT(data, receives_keep_up_with_queue_half_full, 120)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct qp_pair *p = &self->p;
	struct ibv_sge csge, ssge;
	struct ibv_send_wr swr = {
		.sg_list = &csge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_recv_wr srwr = { .sg_list = &ssge, .num_sge = 1 }, *brw;
	struct tell_peer t = { .p = p, .swr = &swr };
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	long long rnr_before, rnr_after;
	uint32_t i, held;
	int step;

	step = tell_pair(self, PORT_RECV_HALF_FULL, &cp, &csge, &ssge);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	ASSERT_EQ(0, ibv_query_qp(p->sid->qp, &attr, IBV_QP_CAP, &init));
	/* One more than half the queue: one receive short of full. */
	held = attr.cap.max_recv_wr / 2 + 1;
	ASSERT_LT(held, attr.cap.max_recv_wr);
	rnr_before = rnr_naks(p->sid->qp);
	ASSERT_LE(0, rnr_before) TH_LOG("no rcvd_rnr_err counter");
	for (i = 0; i < held; i++) {
		srwr.wr_id = i;
		ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &srwr, &brw));
	}

	tell_rounds(_metadata, &t, &srwr, held, held);
	rnr_after = rnr_naks(p->sid->qp);
	EXPECT_EQ(rnr_before, rnr_after);
}

/*
 * 6d. A peer that does not retry RNR NAKs (rnr_retry_count 0, as
 * cmatose's) sends as many messages as the receiver posted receives, all
 * at once, once told.  Each must meet one: every receive that
 * ibv_post_recv() returned from is in the device, however full the
 * queue.
 */
TEST_F_TIMEOUT(data, burst_meets_every_receive, 60)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 0 };
	struct qp_pair *p = &self->p;
	struct ibv_sge csge, ssge;
	struct ibv_send_wr swr[16], *bsw;
	struct ibv_recv_wr srwr = { .sg_list = &ssge, .num_sge = 1 }, *brw;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_wc wc[16];
	uint32_t i, n;
	int step, got;

	step = tell_pair(self, PORT_RECV_BURST, &cp, &csge, &ssge);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	ASSERT_EQ(0, ibv_query_qp(p->sid->qp, &attr, IBV_QP_CAP, &init));
	n = attr.cap.max_recv_wr < 16 ? attr.cap.max_recv_wr : 16;
	ASSERT_LE(4, n);
	ASSERT_EQ(0, ibv_query_qp(p->cid->qp, &attr, IBV_QP_CAP, &init));
	ASSERT_LE(n, attr.cap.max_send_wr);

	/* One receive per call, as cmatose posts them. */
	for (i = 0; i < n; i++) {
		srwr.wr_id = i;
		ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &srwr, &brw));
	}
	for (i = 0; i < n; i++)
		swr[i] = (struct ibv_send_wr){
			.wr_id = 100 + i, .sg_list = &csge, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < n ? &swr[i + 1] : NULL,
		};
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, swr, &bsw));
	for (got = 0; got < (int)n;) {
		int k = qp_poll(p->cid->send_cq, wc + got, (int)n - got,
				POLL_MS);

		ASSERT_LT(0, k);
		got += k;
	}
	for (i = 0; i < n; i++)
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status)
			TH_LOG("send %llu: %s", (unsigned long long)wc[i].wr_id,
			       ibv_wc_status_str(wc[i].status));
	for (got = 0; got < (int)n;) {
		int k = qp_poll(p->sid->recv_cq, wc + got, (int)n - got,
				POLL_MS);

		ASSERT_LT(0, k);
		got += k;
	}
	for (i = 0; i < n; i++) {
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
		EXPECT_EQ((uint64_t)i, wc[i].wr_id);
	}
}

/*
 * 7. Flushes.  Receives outstanding when the QP goes to ERR each complete
 * with IBV_WC_WR_FLUSH_ERR, once, in order.
 */
#define FLUSH_N 8

TEST_F_TIMEOUT(data, flush_receives, 60)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct qp_pair *p = &self->p;
	struct ibv_recv_wr rwr[FLUSH_N], *brw;
	struct ibv_sge rsge[FLUSH_N];
	struct ibv_wc wc[FLUSH_N + 1];
	char *rbuf;
	int step, i;

	step = qp_pair_connect(p, PORT_FLUSH_RECV);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	rbuf = data_buf(self, 0, p->sid->pd, FLUSH_N * 64,
			IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, rbuf);
	for (i = 0; i < FLUSH_N; i++) {
		rsge[i] = (struct ibv_sge){ (uintptr_t)rbuf + 64 * i, 64,
					    self->mr[0]->lkey };
		rwr[i] = (struct ibv_recv_wr){
			.wr_id = 0x700 + i,
			.next = i + 1 < FLUSH_N ? &rwr[i + 1] : NULL,
			.sg_list = &rsge[i],
			.num_sge = 1,
		};
	}
	ASSERT_EQ(0, ibv_post_recv(p->sid->qp, rwr, &brw));
	EXPECT_EQ(0, qp_poll(p->sid->recv_cq, wc, 1, 0));

	ASSERT_EQ(0, ibv_modify_qp(p->sid->qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(FLUSH_N, qp_poll(p->sid->recv_cq, wc, FLUSH_N, POLL_MS));
	for (i = 0; i < FLUSH_N; i++) {
		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[i].status)
			TH_LOG("%d: %s", i, ibv_wc_status_str(wc[i].status));
		EXPECT_EQ(0x700 + i, wc[i].wr_id);
		EXPECT_EQ(p->sid->qp->qp_num, wc[i].qp_num);
	}
	/* Once each: nothing follows. */
	EXPECT_EQ(0, qp_poll(p->sid->recv_cq, wc, 1, 300));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(p->sid->qp));
	EXPECT_TRUE(all_bytes(rbuf, FLUSH_N * 64, CANARY_BYTE));
}

/*
 * Check a batch of flushed sends posted as wr_id @base + i, every odd one
 * unsignaled: a wr_id completes at most once, and every signaled one
 * does.  Soft-RoCE flushes unsignaled requests too (the verbs allow it
 * either way), and both libraries must report the same: all of them, in
 * order.  @first is the status of the first, which may be the error that
 * broke the QP.
 */
static void check_flushed_sends(struct __test_metadata *_metadata,
				struct ibv_cq *cq, uint64_t base,
				enum ibv_wc_status first)
{
	struct ibv_wc wc[FLUSH_N + 1];
	int seen[FLUSH_N] = { 0 };
	int got, i;

	got = qp_poll(cq, wc, FLUSH_N, POLL_MS);
	ASSERT_LE(0, got);
	for (i = 0; i < got; i++) {
		uint64_t k = wc[i].wr_id - base;

		ASSERT_GT(FLUSH_N, k) TH_LOG("unknown wr_id %llu",
					     (unsigned long long)wc[i].wr_id);
		seen[k]++;
		EXPECT_EQ(i ? IBV_WC_WR_FLUSH_ERR : first, wc[i].status)
			TH_LOG("%d: %s", i, ibv_wc_status_str(wc[i].status));
		EXPECT_EQ(base + i, wc[i].wr_id);
	}
	for (i = 0; i < FLUSH_N; i++) {
		EXPECT_GE(1, seen[i]) TH_LOG("wr_id %d completed %d times",
					     i, seen[i]);
		if (!(i & 1))
			EXPECT_EQ(1, seen[i]) TH_LOG("signaled %d lost", i);
	}
	EXPECT_EQ(FLUSH_N, got);
	EXPECT_EQ(0, qp_poll(cq, wc, 1, 300));
}

/* Mixed signaled and unsignaled sends posted to a QP in ERR. */
TEST_F_TIMEOUT(data, flush_sends, 60)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct qp_pair *p = &self->p;
	struct ibv_send_wr swr[FLUSH_N], *bsw;
	struct ibv_recv_wr rwr = { .num_sge = 1 }, *brw;
	struct ibv_sge ssge, rsge;
	struct ibv_wc wc;
	char *sbuf, *rbuf;
	int step, i;

	step = qp_pair_connect(p, PORT_FLUSH_SEND);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	sbuf = data_buf(self, 0, p->cid->pd, 64, 0);
	rbuf = data_buf(self, 1, p->sid->pd, 64, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, sbuf);
	ASSERT_NE(NULL, rbuf);
	ssge = (struct ibv_sge){ (uintptr_t)sbuf, 64, self->mr[0]->lkey };
	rsge = (struct ibv_sge){ (uintptr_t)rbuf, 64, self->mr[1]->lkey };
	rwr.sg_list = &rsge;
	/* The peer is ready, so nothing but the flush stops these. */
	for (i = 0; i < FLUSH_N; i++) {
		rwr.wr_id = 0x780 + i;
		ASSERT_EQ(0, ibv_post_recv(p->sid->qp, &rwr, &brw));
	}
	for (i = 0; i < FLUSH_N; i++)
		swr[i] = (struct ibv_send_wr){
			.wr_id = 0x800 + i,
			.next = i + 1 < FLUSH_N ? &swr[i + 1] : NULL,
			.sg_list = &ssge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = i & 1 ? 0 : IBV_SEND_SIGNALED,
		};

	ASSERT_EQ(0, ibv_modify_qp(p->cid->qp, &qa, IBV_QP_STATE));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(p->cid->qp));
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, swr, &bsw));
	check_flushed_sends(_metadata, p->cid->send_cq, 0x800,
			    IBV_WC_WR_FLUSH_ERR);
	/* None of it reached the peer. */
	EXPECT_EQ(0, ibv_poll_cq(p->sid->recv_cq, 1, &wc));
	EXPECT_TRUE(all_bytes(rbuf, 64, CANARY_BYTE));
}

/*
 * Mixed sends to a peer that went to ERR and answers nothing: the first
 * exhausts its (zero) retries, the QP breaks and the rest are flushed.
 */
TEST_F_TIMEOUT(data, flush_after_retry_exceeded, 60)
{
	struct rdma_conn_param cp = { .retry_count = 0, .rnr_retry_count = 7 };
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct qp_pair *p = &self->p;
	struct ibv_send_wr swr[FLUSH_N], *bsw;
	struct ibv_sge ssge;
	char *sbuf;
	int step, i;

	step = qp_pair_connect_with(p, PORT_FLUSH_RETRY, NULL, &cp);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	sbuf = data_buf(self, 0, p->cid->pd, 64, 0);
	ASSERT_NE(NULL, sbuf);
	ssge = (struct ibv_sge){ (uintptr_t)sbuf, 64, self->mr[0]->lkey };
	for (i = 0; i < FLUSH_N; i++)
		swr[i] = (struct ibv_send_wr){
			.wr_id = 0x900 + i,
			.next = i + 1 < FLUSH_N ? &swr[i + 1] : NULL,
			.sg_list = &ssge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = i & 1 ? 0 : IBV_SEND_SIGNALED,
		};

	ASSERT_EQ(0, ibv_modify_qp(p->sid->qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(0, ibv_post_send(p->cid->qp, swr, &bsw));
	check_flushed_sends(_metadata, p->cid->send_cq, 0x900,
			    IBV_WC_RETRY_EXC_ERR);
	EXPECT_EQ(IBV_QPS_ERR, qp_wait_state(p->cid->qp, IBV_QPS_ERR, 5000));
}

/*
 * 8. The rdma_verbs.h helpers end to end, with synchronous ids from
 * rdma_create_ep(): the server runs in a thread of its own, since each
 * side blocks until the other answers.
 */
#define EP_LEN 8192

struct ep_server {
	uint16_t port;
	struct rdma_cm_id *lid;
	int ready;		/* 1 listening, -1 failed before it could */
	int step;		/* 0 once everything checked out */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char msg[64], reply[64];
	char wbuf[EP_LEN + CANARY], rbuf[EP_LEN];
};

/* What the server's accept tells the client: where to write and read. */
struct ep_remote {
	uint64_t write_addr;
	uint64_t read_addr;
	uint32_t write_rkey;
	uint32_t read_rkey;
};

static const char ep_hello[] = "hello through rdma_post_send";
static const char ep_reply[] = "and back, through rdma_post_send";
static const char ep_done[] = "written and read";

static void ep_ready(struct ep_server *s, int ready)
{
	pthread_mutex_lock(&s->lock);
	s->ready = ready;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static int ep_wait_ready(struct ep_server *s)
{
	pthread_mutex_lock(&s->lock);
	while (!s->ready)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	return s->ready;
}

static struct rdma_addrinfo *ep_info(uint16_t port, int flags,
				     enum rdma_port_space ps)
{
	struct rdma_addrinfo hints = {
		.ai_flags = flags,
		.ai_port_space = ps,
	}, *res;
	char serv[8];

	snprintf(serv, sizeof(serv), "%u", port);
	if (rdma_getaddrinfo(getenv("KQP_TEST_ADDR") ?: "192.0.2.1", serv,
			     &hints, &res))
		return NULL;
	return res;
}

/* A completion as the helpers' callers see it: one, successful, ours. */
static bool ep_wc_ok(int n, const struct ibv_wc *wc, uintptr_t ctx,
		     enum ibv_wc_opcode opcode)
{
	return n == 1 && wc->status == IBV_WC_SUCCESS && wc->wr_id == ctx &&
	       wc->opcode == opcode;
}

static void *ep_rc_serve(void *arg)
{
	struct ep_server *s = arg;
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ep_remote rb;
	struct rdma_conn_param cp = {
		.private_data = &rb,
		.private_data_len = sizeof(rb),
		.responder_resources = RDMA_MAX_RESP_RES,
		.initiator_depth = RDMA_MAX_INIT_DEPTH,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	struct ibv_mr *mmr = NULL, *pmr = NULL, *wmr = NULL, *rmr = NULL;
	struct rdma_addrinfo *res;
	struct rdma_cm_id *sid = NULL;
	struct rdma_cm_event *ev;
	struct ibv_wc wc;

	s->step = 1;
	res = ep_info(s->port, RAI_PASSIVE, RDMA_PS_TCP);
	if (!res)
		goto fail;
	if (rdma_create_ep(&s->lid, res, NULL, &attr)) {
		rdma_freeaddrinfo(res);
		goto fail;
	}
	rdma_freeaddrinfo(res);
	if (rdma_listen(s->lid, 1))
		goto fail;
	ep_ready(s, 1);

	s->step = 2;
	if (rdma_get_request(s->lid, &sid))
		goto out;
	s->step = 3;	/* the QP is made from the listener's attributes */
	if (!sid->qp || sid->qp->qp_type != IBV_QPT_RC || !sid->send_cq ||
	    !sid->recv_cq)
		goto out;
	s->step = 4;
	mmr = rdma_reg_msgs(sid, s->msg, sizeof(s->msg));
	pmr = rdma_reg_msgs(sid, s->reply, sizeof(s->reply));
	wmr = rdma_reg_write(sid, s->wbuf, sizeof(s->wbuf));
	rmr = rdma_reg_read(sid, s->rbuf, sizeof(s->rbuf));
	if (!mmr || !pmr || !wmr || !rmr)
		goto out;
	memset(s->wbuf, CANARY_BYTE, sizeof(s->wbuf));
	fill(s->rbuf, EP_LEN, 0x81);
	rb = (struct ep_remote){
		.write_addr = (uintptr_t)s->wbuf,
		.read_addr = (uintptr_t)s->rbuf,
		.write_rkey = wmr->rkey,
		.read_rkey = rmr->rkey,
	};
	s->step = 5;
	if (rdma_post_recv(sid, (void *)1, s->msg, sizeof(s->msg), mmr))
		goto out;
	s->step = 6;	/* returns once ESTABLISHED */
	if (rdma_accept(sid, &cp))
		goto out;

	s->step = 7;
	if (!ep_wc_ok(rdma_get_recv_comp(sid, &wc), &wc, 1, IBV_WC_RECV) ||
	    wc.byte_len != sizeof(ep_hello) || strcmp(s->msg, ep_hello))
		goto out;
	s->step = 8;
	if (rdma_post_recv(sid, (void *)2, s->msg, sizeof(s->msg), mmr))
		goto out;
	strcpy(s->reply, ep_reply);
	if (rdma_post_send(sid, (void *)3, s->reply, sizeof(ep_reply), pmr,
			   IBV_SEND_SIGNALED))
		goto out;
	s->step = 9;
	if (!ep_wc_ok(rdma_get_send_comp(sid, &wc), &wc, 3, IBV_WC_SEND))
		goto out;
	/* The client wrote and read, then says so. */
	s->step = 10;
	if (!ep_wc_ok(rdma_get_recv_comp(sid, &wc), &wc, 2, IBV_WC_RECV) ||
	    strcmp(s->msg, ep_done))
		goto out;
	s->step = 11;
	if (mismatch(s->wbuf, EP_LEN, 0x82) >= 0 ||
	    !all_bytes(s->wbuf + EP_LEN, CANARY, CANARY_BYTE))
		goto out;
	s->step = 12;
	if (rdma_get_cm_event(sid->channel, &ev))
		goto out;
	if (ev->event != RDMA_CM_EVENT_DISCONNECTED) {
		rdma_ack_cm_event(ev);
		goto out;
	}
	rdma_ack_cm_event(ev);
	s->step = 0;
out:
	if (s->step)
		fprintf(stderr, "# RC server failed at step %d\n", s->step);
	if (mmr)
		rdma_dereg_mr(mmr);
	if (pmr)
		rdma_dereg_mr(pmr);
	if (wmr)
		rdma_dereg_mr(wmr);
	if (rmr)
		rdma_dereg_mr(rmr);
	if (sid)
		rdma_destroy_ep(sid);
	return NULL;
fail:
	ep_ready(s, -1);
	return NULL;
}

TEST_F_TIMEOUT(data, verbs_helpers_rc, 90)
{
	struct ep_server *s = calloc(1, sizeof(*s));
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_mr *hmr, *pmr, *wmr, *rmr;
	struct rdma_addrinfo *res;
	struct rdma_cm_id *cid;
	struct ep_remote rb;
	char *wsrc, *rdst, *hello, *reply;
	struct ibv_wc wc;
	pthread_t t;
	int i;

	ASSERT_NE(NULL, s);
	s->port = PORT_VERBS_RC;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	ASSERT_EQ(0, pthread_create(&t, NULL, ep_rc_serve, s));
	ASSERT_EQ(1, ep_wait_ready(s)) TH_LOG("server step %d", s->step);

	res = ep_info(PORT_VERBS_RC, 0, RDMA_PS_TCP);
	ASSERT_NE(NULL, res);
	ASSERT_EQ(0, rdma_create_ep(&cid, res, NULL, &attr))
		TH_LOG("%s", strerror(errno));
	rdma_freeaddrinfo(res);
	ASSERT_NE(NULL, cid->qp);
	/* Registered by the helpers, on the id's PD; the teardown frees. */
	wsrc = self->buf[0] = malloc(EP_LEN);
	rdst = self->buf[1] = malloc(EP_LEN + CANARY);
	hello = self->buf[2] = malloc(64);
	reply = self->buf[3] = malloc(64);
	ASSERT_TRUE(wsrc && rdst && hello && reply);
	self->mr[0] = wmr = rdma_reg_msgs(cid, wsrc, EP_LEN);
	self->mr[1] = rmr = rdma_reg_msgs(cid, rdst, EP_LEN + CANARY);
	self->mr[2] = hmr = rdma_reg_msgs(cid, hello, 64);
	self->mr[3] = pmr = rdma_reg_msgs(cid, reply, 64);
	ASSERT_TRUE(hmr && pmr && wmr && rmr);

	ASSERT_EQ(0, rdma_post_recv(cid, (void *)11, reply, 64, pmr));
	/* Returns once ESTABLISHED, with the accept's private data. */
	ASSERT_EQ(0, rdma_connect(cid, NULL)) TH_LOG("%s", strerror(errno));
	ASSERT_NE(NULL, cid->event);
	EXPECT_EQ(RDMA_CM_EVENT_ESTABLISHED, cid->event->event);
	ASSERT_LE(sizeof(rb), cid->event->param.conn.private_data_len);
	memcpy(&rb, cid->event->param.conn.private_data, sizeof(rb));

	strcpy(hello, ep_hello);
	ASSERT_EQ(0, rdma_post_send(cid, (void *)12, hello, sizeof(ep_hello),
				    hmr, IBV_SEND_SIGNALED));
	EXPECT_EQ(1, rdma_get_send_comp(cid, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(12, wc.wr_id);
	EXPECT_EQ(IBV_WC_SEND, wc.opcode);
	EXPECT_EQ(1, rdma_get_recv_comp(cid, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(11, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(sizeof(ep_reply), wc.byte_len);
	EXPECT_STREQ(ep_reply, reply);

	fill(wsrc, EP_LEN, 0x82);
	ASSERT_EQ(0, rdma_post_write(cid, (void *)13, wsrc, EP_LEN, wmr,
				     IBV_SEND_SIGNALED, rb.write_addr,
				     rb.write_rkey));
	EXPECT_EQ(1, rdma_get_send_comp(cid, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(13, wc.wr_id);
	EXPECT_EQ(IBV_WC_RDMA_WRITE, wc.opcode);

	memset(rdst, CANARY_BYTE, EP_LEN + CANARY);
	ASSERT_EQ(0, rdma_post_read(cid, (void *)14, rdst, EP_LEN, rmr,
				    IBV_SEND_SIGNALED, rb.read_addr,
				    rb.read_rkey));
	EXPECT_EQ(1, rdma_get_send_comp(cid, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status)
		TH_LOG("%s", ibv_wc_status_str(wc.status));
	EXPECT_EQ(14, wc.wr_id);
	EXPECT_EQ(IBV_WC_RDMA_READ, wc.opcode);
	EXPECT_EQ(EP_LEN, wc.byte_len);
	EXPECT_EQ(-1, mismatch(rdst, EP_LEN, 0x81));
	EXPECT_TRUE(all_bytes(rdst + EP_LEN, CANARY, CANARY_BYTE));

	strcpy(hello, ep_done);
	ASSERT_EQ(0, rdma_post_send(cid, (void *)15, hello, sizeof(ep_done),
				    hmr, IBV_SEND_SIGNALED));
	EXPECT_EQ(1, rdma_get_send_comp(cid, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(15, wc.wr_id);

	EXPECT_EQ(0, rdma_disconnect(cid));
	pthread_join(t, NULL);
	EXPECT_EQ(0, s->step) TH_LOG("server failed at step %d", s->step);
	for (i = 0; i < 4; i++) {
		EXPECT_EQ(0, rdma_dereg_mr(self->mr[i]));
		self->mr[i] = NULL;
	}
	rdma_destroy_ep(cid);
	rdma_destroy_ep(s->lid);
	free(s);
}

/* UD endpoints: rdma_post_ud_send() both ways, the reply from the wc. */
#define EP_UD_LEN 512

static void *ep_ud_serve(void *arg)
{
	struct ep_server *s = arg;
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_mr *mmr = NULL, *pmr = NULL;
	struct rdma_addrinfo *res;
	struct rdma_cm_id *sid = NULL;
	struct ibv_ah *ah = NULL;
	struct ibv_wc wc;

	s->step = 1;
	res = ep_info(s->port, RAI_PASSIVE, RDMA_PS_UDP);
	if (!res)
		goto fail;
	if (rdma_create_ep(&s->lid, res, NULL, &attr)) {
		rdma_freeaddrinfo(res);
		goto fail;
	}
	rdma_freeaddrinfo(res);
	if (rdma_listen(s->lid, 1))
		goto fail;
	ep_ready(s, 1);

	s->step = 2;
	if (rdma_get_request(s->lid, &sid))
		goto out;
	s->step = 3;
	if (!sid->qp || sid->qp->qp_type != IBV_QPT_UD)
		goto out;
	s->step = 4;
	mmr = rdma_reg_msgs(sid, s->wbuf, GRH_LEN + EP_UD_LEN);
	pmr = rdma_reg_msgs(sid, s->rbuf, EP_UD_LEN);
	if (!mmr || !pmr)
		goto out;
	if (rdma_post_recv(sid, (void *)21, s->wbuf, GRH_LEN + EP_UD_LEN,
			   mmr))
		goto out;
	s->step = 5;
	if (rdma_accept(sid, NULL))
		goto out;
	s->step = 6;
	if (!ep_wc_ok(rdma_get_recv_comp(sid, &wc), &wc, 21, IBV_WC_RECV) ||
	    wc.byte_len != GRH_LEN + EP_UD_LEN ||
	    !(wc.wc_flags & IBV_WC_GRH) ||
	    mismatch(s->wbuf + GRH_LEN, EP_UD_LEN, 0x91) >= 0)
		goto out;
	s->step = 7;
	ah = ibv_create_ah_from_wc(sid->pd, &wc, (struct ibv_grh *)s->wbuf,
				   sid->port_num);
	if (!ah)
		goto out;
	fill(s->rbuf, EP_UD_LEN, 0x92);
	s->step = 8;
	if (rdma_post_ud_send(sid, (void *)22, s->rbuf, EP_UD_LEN, pmr,
			      IBV_SEND_SIGNALED, ah, wc.src_qp))
		goto out;
	if (!ep_wc_ok(rdma_get_send_comp(sid, &wc), &wc, 22, IBV_WC_SEND))
		goto out;
	s->step = 0;
out:
	if (s->step)
		fprintf(stderr, "# UD server failed at step %d\n", s->step);
	if (ah)
		ibv_destroy_ah(ah);
	if (mmr)
		rdma_dereg_mr(mmr);
	if (pmr)
		rdma_dereg_mr(pmr);
	if (sid)
		rdma_destroy_ep(sid);
	return NULL;
fail:
	ep_ready(s, -1);
	return NULL;
}

TEST_F_TIMEOUT(data, verbs_helpers_ud, 90)
{
	struct ep_server *s = calloc(1, sizeof(*s));
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rdma_addrinfo *res;
	struct rdma_ud_param ud;
	struct rdma_cm_id *cid;
	struct ibv_mr *smr, *rmr;
	struct ibv_ah *ah;
	char *sbuf, *rbuf;
	struct ibv_wc wc;
	pthread_t t;

	ASSERT_NE(NULL, s);
	s->port = PORT_VERBS_UD;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	ASSERT_EQ(0, pthread_create(&t, NULL, ep_ud_serve, s));
	ASSERT_EQ(1, ep_wait_ready(s)) TH_LOG("server step %d", s->step);

	res = ep_info(PORT_VERBS_UD, 0, RDMA_PS_UDP);
	ASSERT_NE(NULL, res);
	EXPECT_EQ(IBV_QPT_UD, res->ai_qp_type);
	ASSERT_EQ(0, rdma_create_ep(&cid, res, NULL, &attr))
		TH_LOG("%s", strerror(errno));
	rdma_freeaddrinfo(res);
	ASSERT_NE(NULL, cid->qp);
	sbuf = malloc(EP_UD_LEN);
	rbuf = malloc(GRH_LEN + EP_UD_LEN);
	ASSERT_TRUE(sbuf && rbuf);
	self->buf[0] = sbuf;
	self->buf[1] = rbuf;
	self->mr[0] = smr = rdma_reg_msgs(cid, sbuf, EP_UD_LEN);
	self->mr[1] = rmr = rdma_reg_msgs(cid, rbuf, GRH_LEN + EP_UD_LEN);
	ASSERT_TRUE(smr && rmr);

	ASSERT_EQ(0, rdma_post_recv(cid, (void *)31, rbuf, GRH_LEN + EP_UD_LEN,
				    rmr));
	/* Returns with ESTABLISHED: the server's QP, Q_Key and address. */
	ASSERT_EQ(0, rdma_connect(cid, NULL)) TH_LOG("%s", strerror(errno));
	ASSERT_NE(NULL, cid->event);
	EXPECT_EQ(RDMA_CM_EVENT_ESTABLISHED, cid->event->event);
	ud = cid->event->param.ud;
	EXPECT_EQ(RDMA_UDP_QKEY, ud.qkey);
	ah = ibv_create_ah(cid->pd, &ud.ah_attr);
	ASSERT_NE(NULL, ah) TH_LOG("%s", strerror(errno));

	fill(sbuf, EP_UD_LEN, 0x91);
	ASSERT_EQ(0, rdma_post_ud_send(cid, (void *)32, sbuf, EP_UD_LEN, smr,
				       IBV_SEND_SIGNALED, ah, ud.qp_num));
	EXPECT_EQ(1, rdma_get_send_comp(cid, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(32, wc.wr_id);
	EXPECT_EQ(IBV_WC_SEND, wc.opcode);
	EXPECT_EQ(1, rdma_get_recv_comp(cid, &wc));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(31, wc.wr_id);
	EXPECT_EQ(GRH_LEN + EP_UD_LEN, wc.byte_len);
	EXPECT_EQ(ud.qp_num, wc.src_qp);
	EXPECT_EQ(-1, mismatch(rbuf + GRH_LEN, EP_UD_LEN, 0x92));

	pthread_join(t, NULL);
	EXPECT_EQ(0, s->step) TH_LOG("server failed at step %d", s->step);
	EXPECT_EQ(0, ibv_destroy_ah(ah));
	EXPECT_EQ(0, rdma_dereg_mr(smr));
	EXPECT_EQ(0, rdma_dereg_mr(rmr));
	self->mr[0] = self->mr[1] = NULL;
	rdma_destroy_ep(cid);
	rdma_destroy_ep(s->lid);
	free(s);
}

#ifndef KQP_TEST_REFERENCE
/*
 * libkqp asks for the table's poller exactly when KQP_POLLER=1 says so
 * (data_poller.sh runs these tests that way, on kernels that have one):
 * once the process has a context, it has the thread, or none.
 */
TEST(poller_exactly_when_asked)
{
	const char *env = getenv("KQP_POLLER");
	struct ibv_device **devs;
	struct ibv_context *ctx;
	int n;

	devs = ibv_get_device_list(&n);
	ASSERT_NE(NULL, devs);
	ASSERT_LT(0, n);
	ctx = ibv_open_device(devs[0]);
	ASSERT_NE(NULL, ctx);
	EXPECT_EQ(env && !strcmp(env, "1") ? 1 : 0,
		  kqp_test_threads_named("kqp-poller"));
	ibv_close_device(ctx);
	ibv_free_device_list(devs);
}
#endif

TEST_HARNESS_MAIN
