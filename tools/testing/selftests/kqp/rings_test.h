/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers for the submission ring tests (rings.c, rings_hostile.c,
 * poller.c), defined in rings_lib.c but for the rt_expect_*() checks.
 * Everything at the ioctl level: QPs made with KQP_CREATE_QP_RINGS and
 * moved to RTS by hand (no CM: loopback to the bench's own GID), their
 * rings mapped and written byte by byte, completions read straight from
 * the CQ rings.  libkqp maps the rings of the QPs it makes itself, so it
 * cannot stand between these tests and the kernel.
 */
#ifndef KQP_RINGS_TEST_H
#define KQP_RINGS_TEST_H

#include <arpa/inet.h>
#include <sys/mman.h>
#include <time.h>

#ifndef KQP_TEST_LIB
#include "kselftest_harness.h"
#endif
#include "kqp_test.h"

/* enum ibv_access_flags */
#define RT_ACCESS_ALL		(1 | 2 | 4 | 8)	/* local w, remote w, r, atomic */

/* The bytes one request takes in a ring entry (struct kqp_send_wr ...). */
#define RT_SEND_HDR		sizeof(struct kqp_send_wr)
#define RT_RECV_HDR		sizeof(struct kqp_recv_wr)

long long rt_now_ms(void);

int rt_is_pow2(uint32_t x);

int rt_pd(int fd, uint32_t dev, uint32_t *pd);

int rt_dereg(int fd, uint32_t mr);

/* A CQ with its ring mapped; completions are read from the ring. */
struct rt_cq {
	int fd;
	struct kqp_create_cq c;
	char *map;
};

int rt_cq_make(int fd, uint32_t dev, uint32_t cqe, struct rt_cq *cq);

void rt_cq_free(struct rt_cq *cq);

/*
 * Up to @n completions within @ms, in the order the ring has them
 * (NULL @out: consume and forget); returns how many.
 */
int rt_cq_poll(struct rt_cq *cq, struct kqp_cqe *out, int n, int ms);

/* A QP, its rings mapped, and the producer indices this side keeps. */
struct rt_qp {
	int fd;
	struct kqp_create_qp c;
	char *map;
	uint32_t sq_tail, rq_tail;
};

/* An RC QP with rings on @pd and the CQs; caps a test may change. */
void rt_qp_req(struct kqp_create_qp *c, uint32_t pd,
	       uint32_t scq, uint32_t rcq);

int rt_qp_map(struct rt_qp *q);

int rt_qp_make(int fd, const struct kqp_create_qp *req, struct rt_qp *q);

int rt_qp_destroy(struct rt_qp *q);

struct kqp_wq_ring_hdr *rt_sq_hdr(const struct rt_qp *q);

struct kqp_wq_ring_hdr *rt_rq_hdr(const struct rt_qp *q);

void *rt_sq_slot(const struct rt_qp *q, uint32_t i);

void *rt_rq_slot(const struct rt_qp *q, uint32_t i);

uint32_t rt_head(const struct kqp_wq_ring_hdr *h);

void rt_set_tail(struct kqp_wq_ring_hdr *h, uint32_t tail);

/* Copy @len bytes of a request into the next send slot; its index. */
uint32_t rt_sq_put(struct rt_qp *q, const void *wr, size_t len);

uint32_t rt_rq_put(struct rt_qp *q, const void *wr, size_t len);

void rt_sq_publish(struct rt_qp *q);

void rt_rq_publish(struct rt_qp *q);

/* A request and room for its SGEs or inline bytes. */
struct rt_send {
	struct kqp_send_wr wr;
	struct kqp_sge sge[8];
};

struct rt_recv {
	struct kqp_recv_wr wr;
	struct kqp_sge sge[8];
};

/* One SGE's send, signaled. */
struct rt_send rt_send1(uint64_t wr_id, uint32_t opcode,
			uint64_t addr, uint32_t len,
			uint32_t lkey);

struct rt_recv rt_recv1(uint64_t wr_id, uint64_t addr,
			uint32_t len, uint32_t lkey);

#define RT_SEND1_LEN	(RT_SEND_HDR + sizeof(struct kqp_sge))
#define RT_RECV1_LEN	(RT_RECV_HDR + sizeof(struct kqp_sge))

/* ioctl(DOORBELL) of @n entries: its errno; out_done into @done. */
int rt_doorbell(int fd, struct kqp_doorbell_entry *e,
		uint32_t n, uint32_t *done);

/*
 * Ring one QP's rings (@flags KQP_DB_*): the ioctl's errno if it failed,
 * else the entry's out_errno.
 */
int rt_ring(const struct rt_qp *q, uint32_t flags);

/* The port-1 GID table index of ::ffff:KQP_TEST_ADDR (RoCE v2 first). */
int rt_gid_index(int fd, uint32_t dev, uint8_t gid[16]);

int rt_modify(int fd, uint32_t qp, uint32_t mask, const struct kqp_qp_attr *a);

int rt_to_err(const struct rt_qp *q);

/* A QP's state, its next expected PSN into *@rq_psn: -1 if the query fails. */
int rt_qp_state(const struct rt_qp *q, uint32_t *rq_psn);

/*
 * RESET to INIT to RTR to RTS, connected to the QP numbered @dest on this
 * host through @gid at @sgid, with @rnr_retry (7: for ever): 0, or the
 * errno of the step that failed.
 */

int rt_qp_connect(const struct rt_qp *q, uint32_t dest,
		  const uint8_t gid[16], int sgid, int rnr_retry);

/* The same, from RESET, with the first PSNs it expects and sends. */
int rt_qp_connect_psn(const struct rt_qp *q, uint32_t dest,
		      const uint8_t gid[16], int sgid,
		      int rnr_retry, uint32_t rq_psn,
		      uint32_t sq_psn);

/*
 * Two ring QPs on one file, connected to each other (a sends to b and b
 * to a), each with a send and a receive CQ of its own, and one buffer
 * registered with every access: a's half is the first RT_HALF bytes,
 * b's the rest.
 */
#define RT_BUF		(64 << 10)
#define RT_HALF		(RT_BUF / 2)

struct rt_pair {
	int fd;
	uint32_t dev, pd, pd_dma_lkey;
	bool has_dma_lkey;	/* pd_dma_lkey was read (rdma res show pd) */
	struct rt_cq ascq, arcq, bscq, brcq;
	struct rt_qp a, b;
	char *buf;
	struct kqp_reg_mr mr;
};

/* A test that needs some PD's local_dma_lkey fails without one. */
#define RT_NEED_DMA_LKEY(p)						\
	ASSERT_TRUE((p)->has_dma_lkey)					\
		TH_LOG("no local_dma_lkey from `rdma res show pd`")

/*
 * 0, or the step that failed; @req (NULL: rt_qp_req()'s) is the caps of
 * both QPs, @rnr_retry their RNR retries.  rt_pair_free() cleans up
 * either way.
 */
int rt_pair_build(struct rt_pair *p, const struct kqp_create_qp *req,
		  int rnr_retry);

#ifndef KQP_TEST_LIB
/*
 * rt_pair_build(), then the PD's local_dma_lkey, which is not from kqp:
 * from `rdma res show pd`, newest last.  Looked up here, in the test's
 * own object, whose key reader (kqp_test_keys_reader()) is the one the
 * test started.  Only the tests that use it need it (RT_NEED_DMA_LKEY).
 */
static inline int rt_pair_make(struct rt_pair *p,
			       const struct kqp_create_qp *req, int rnr_retry)
{
	uint32_t keys[KQP_TEST_MAX_KEYS];
	int ret = rt_pair_build(p, req, rnr_retry), n;

	if (ret)
		return ret;
	n = kqp_test_dma_lkeys(keys, KQP_TEST_MAX_KEYS);
	if (n > 0) {
		p->pd_dma_lkey = keys[n - 1];
		p->has_dma_lkey = true;
	}
	return 0;
}
#endif /* KQP_TEST_LIB */

/*
 * a, in ERR with every request completed, connected again: through
 * RESET, at the PSNs where a and b left off, so b takes a's next request
 * as new.  0, or the step that failed.
 */
int rt_a_reconnect(struct rt_pair *p);

void rt_pair_free(struct rt_pair *p);

/* Addresses in the pair's buffer: a's half, b's half. */
uint64_t rt_abuf(const struct rt_pair *p, uint32_t off);

uint64_t rt_bbuf(const struct rt_pair *p, uint32_t off);

/*
 * Receives for @n messages of up to 256 bytes at b, from @first, at
 * offsets i * 256 of b's half.
 */
void rt_b_recvs(struct rt_pair *p, uint64_t first, int n);

/* @n sends of @len bytes from a, from @first, each with its own bytes. */
void rt_a_sends(struct rt_pair *p, uint64_t first, int n, uint32_t len);

#ifndef KQP_TEST_LIB
/* @n completions on @cq, wr_ids from @first in order, @opcode, success. */
static inline void rt_expect_cqes(struct __test_metadata *_metadata,
				  struct rt_cq *cq, uint64_t first, int n,
				  uint32_t opcode, uint32_t byte_len,
				  uint32_t qp_num)
{
	struct kqp_cqe wc[64];
	int i, got;

	ASSERT_GE(64, n);
	got = rt_cq_poll(cq, wc, n, 20000);
	ASSERT_EQ(n, got);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(first + i, wc[i].wr_id);
		EXPECT_EQ(KQP_WC_SUCCESS, wc[i].status);
		EXPECT_EQ(opcode, wc[i].opcode);
		EXPECT_EQ(qp_num, wc[i].qp_num);
		if (opcode & KQP_WC_OP_RECV)
			EXPECT_EQ(byte_len, wc[i].byte_len);
	}
	/* And nothing more. */
	EXPECT_EQ(0, rt_cq_poll(cq, wc, 1, 50));
}

/*
 * @n messages of @len bytes from a to b: a's sends completed, wr_ids from
 * @sfirst, then b's receives, wr_ids from @rfirst.
 */
static inline void rt_expect_a_to_b(struct __test_metadata *_metadata,
				    struct rt_pair *p, uint64_t sfirst,
				    uint64_t rfirst, int n, uint32_t len)
{
	rt_expect_cqes(_metadata, &p->ascq, sfirst, n, KQP_WC_OP_SEND, 0,
		       p->a.c.out_qp_num);
	rt_expect_cqes(_metadata, &p->brcq, rfirst, n, KQP_WC_OP_RECV, len,
		       p->b.c.out_qp_num);
}

/* Message i of b's half holds the bytes a sent. */
static inline void rt_expect_data(struct __test_metadata *_metadata,
				  struct rt_pair *p, uint64_t first, int n,
				  uint32_t len)
{
	int i, bad = 0;
	uint32_t j;

	for (i = 0; i < n; i++)
		for (j = 0; j < len; j++)
			bad += (unsigned char)p->buf[RT_HALF + i * 256 + j] !=
			       (((first + i) & 0x7f) | 1);
	EXPECT_EQ(0, bad);
}
#endif /* KQP_TEST_LIB */

uint32_t rt_flags(const struct kqp_wq_ring_hdr *h);

/*
 * Whether @h's flags masked with @mask are @want, waited for up to @ms
 * (0: looked at once).
 */
bool rt_flags_become(const struct kqp_wq_ring_hdr *h,
		     uint32_t mask, uint32_t want, int ms);

/* An RDMA write of 64 bytes from a's half to b's, put and not published. */
void rt_a_write_put(struct rt_pair *p, uint64_t wr_id, bool signaled);

#endif /* KQP_RINGS_TEST_H */
