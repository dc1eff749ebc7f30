// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A hostile caller of the submission rings.  The rings are memory the
 * caller writes while the kernel reads it, so every byte of them is
 * hostile: garbage tails, entries that name memory the caller did not
 * register or break the QP's caps, a head and flags the caller was never
 * to write, entries and tails rewritten by another thread while the
 * kernel drains, and a ring unmapped while another thread rings.  Each
 * must end in an errno of the documented set on the caller's own QP, at
 * the entry that caused it, and harm nothing else: a second process's
 * connection on the same device keeps passing data meanwhile.
 *
 * These tests run as nobody, at the ioctl level (rings_test.h); the
 * second process uses libkqp, so its QPs use rings too.
 */
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "qp_test.h"
#include "rings_test.h"
#include "nobody.h"

#define MSG	64

/* The errnos a drain may give for an entry (kqp-abi.h). */
static bool documented(int e)
{
	return e == 0 || e == EINVAL || e == EACCES || e == EOPNOTSUPP ||
	       e == ENOMEM;
}

/*
 * A second process with a connection of its own on the same device,
 * through libkqp, passing messages until told to stop.
 */
struct peer {
	pid_t pid;
	int stop[2], res[2];
};

static void peer_run(struct peer *pr)
{
	struct qp_pair p;
	struct qp_bufs b = { 0 };
	struct ibv_wc wc;
	struct pollfd pfd = { .fd = pr->stop[0], .events = POLLIN };
	unsigned int rounds = 0;
	char c = 'r';
	int i;

	if (qp_pair_connect(&p, cm_port()))
		_exit(10);
	if (qp_bufs_reg(&b, &p, 4096, IBV_ACCESS_LOCAL_WRITE))
		_exit(11);
	if (write(pr->res[1], &c, 1) != 1)
		_exit(12);
	while (poll(&pfd, 1, 0) == 0) {
		struct ibv_sge rs = { (uintptr_t)b.sbuf, 4096, b.smr->lkey };
		struct ibv_sge ss = { (uintptr_t)b.cbuf, MSG, b.cmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = rounds, .sg_list = &rs,
					   .num_sge = 1 }, *rbad;
		struct ibv_send_wr swr = {
			.wr_id = rounds, .sg_list = &ss, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
		}, *sbad;

		memset(b.cbuf, (int)(rounds & 0x7f) | 1, MSG);
		if (ibv_post_recv(p.sid->qp, &rwr, &rbad))
			_exit(20);
		if (ibv_post_send(p.cid->qp, &swr, &sbad))
			_exit(21);
		if (qp_poll(p.cid->send_cq, &wc, 1, 20000) != 1 ||
		    wc.status != IBV_WC_SUCCESS || wc.wr_id != rounds)
			_exit(22);
		if (qp_poll(p.sid->recv_cq, &wc, 1, 20000) != 1 ||
		    wc.status != IBV_WC_SUCCESS || wc.wr_id != rounds ||
		    wc.byte_len != MSG)
			_exit(23);
		for (i = 0; i < MSG; i++)
			if (b.sbuf[i] != ((int)(rounds & 0x7f) | 1))
				_exit(24);
		rounds++;
	}
	if (write(pr->res[1], &rounds, sizeof(rounds)) != sizeof(rounds))
		_exit(13);
	qp_bufs_free(&b);
	qp_pair_close(&p);
	_exit(0);
}

static void peer_start(struct __test_metadata *_metadata, struct peer *pr)
{
	struct pollfd pfd;
	char c;

	ASSERT_EQ(0, pipe(pr->stop));
	ASSERT_EQ(0, pipe(pr->res));
	pr->pid = fork();
	ASSERT_LE(0, pr->pid);
	if (pr->pid == 0) {
		close(pr->stop[1]);
		close(pr->res[0]);
		peer_run(pr);
	}
	close(pr->stop[0]);
	close(pr->res[1]);
	/* Connected and registered before the hostile part starts. */
	pfd = (struct pollfd){ .fd = pr->res[0], .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 60000));
	ASSERT_EQ(1, read(pr->res[0], &c, 1));
}

/* Stop it: it passed data all along, and at least once. */
static void peer_stop(struct __test_metadata *_metadata, struct peer *pr)
{
	unsigned int rounds = 0;
	int status;

	close(pr->stop[1]);
	EXPECT_EQ(sizeof(rounds), read(pr->res[0], &rounds, sizeof(rounds)));
	close(pr->res[0]);
	ASSERT_EQ(pr->pid, waitpid(pr->pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	TH_LOG("the other process passed %u messages meanwhile", rounds);
	EXPECT_LT(0, rounds);
}

FIXTURE(h) {
	struct rt_pair p;
};

FIXTURE_SETUP(h)
{
	become_nobody(_metadata);
	ASSERT_EQ(0, rt_pair_make(&self->p, NULL, 7));
}

FIXTURE_TEARDOWN(h)
{
	rt_pair_free(&self->p);
}

/*
 * Tails that claim more than the ring holds, ahead or behind head:
 * EINVAL, head stays, nothing is posted; a sane tail works again.
 */
TEST_F(h, garbage_tail)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b), *sh = rt_sq_hdr(&p->a);
	uint32_t n = p->b.c.out_rings.rq.entries, i;
	const uint32_t ahead[] = { n + 1, n + 2, 2 * n, 0x7fffffff,
				   0x80000000, 0xfffffffe, 0xffffffff };
	struct kqp_cqe wc;

	/* Every slot holds a receive that must never be posted. */
	for (i = 0; i < n; i++) {
		struct rt_recv r = rt_recv1(0xbad, rt_bbuf(p, 0), 256,
					    p->mr.out_lkey);

		memcpy(rt_rq_slot(&p->b, i), &r, RT_RECV1_LEN);
	}
	for (i = 0; i < sizeof(ahead) / sizeof(ahead[0]); i++) {
		rt_set_tail(rh, ahead[i]);
		EXPECT_EQ(EINVAL, rt_ring(&p->b, KQP_DB_RECV));
		EXPECT_EQ(0, rt_head(rh));
		rt_set_tail(sh, ahead[i] - n + p->a.c.out_rings.sq.entries);
		EXPECT_EQ(EINVAL, rt_ring(&p->a, KQP_DB_SEND));
		EXPECT_EQ(0, rt_head(sh));
	}

	/* Two real receives taken; then the tail moves back. */
	rt_b_recvs(p, 1, 2);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	ASSERT_EQ(2, rt_head(rh));
	rt_set_tail(rh, 1);
	EXPECT_EQ(EINVAL, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(2, rt_head(rh));
	rt_set_tail(rh, 0);
	EXPECT_EQ(EINVAL, rt_ring(&p->b, KQP_DB_RECV));
	rt_set_tail(rh, 2 + n + 1);
	EXPECT_EQ(EINVAL, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(2, rt_head(rh));

	/* Sane again: a third receive, and three messages arrive. */
	{
		struct rt_recv r = rt_recv1(3, rt_bbuf(p, 2 * 256), 256,
					    p->mr.out_lkey);

		rt_rq_put(&p->b, &r, RT_RECV1_LEN);
		rt_rq_publish(&p->b);
	}
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	EXPECT_EQ(3, rt_head(rh));
	rt_a_sends(p, 1, 3, 16);
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND));
	rt_expect_a_to_b(_metadata, p, 1, 1, 3, 16);
	/* And none of the 0xbad ones was posted: nothing left to flush. */
	EXPECT_EQ(0, rt_to_err(&p->b));
	EXPECT_EQ(0, rt_cq_poll(&p->brcq, &wc, 1, 1000));
}

/* A good RDMA write of a's first bytes to b's, with @wr_id. */
static struct rt_send good_write(const struct rt_pair *p, uint64_t wr_id)
{
	struct rt_send s = rt_send1(wr_id, KQP_WR_OP_RDMA_WRITE,
				    rt_abuf(p, 0), MSG, p->mr.out_lkey);

	s.wr.wr.rdma.remote_addr = rt_bbuf(p, 0);
	s.wr.wr.rdma.rkey = p->mr.out_rkey;
	return s;
}

/*
 * @bad in a's send ring between two good writes, as a device would see
 * it: the doorbell takes all three and returns 0; the first completes,
 * @bad completes with @status (the kernel refused it, once the first had
 * completed) and the last is flushed, with a in ERR; then a is connected
 * again for the next case.
 */
static void send_fails_at(struct __test_metadata *_metadata,
			  struct rt_pair *p, const struct rt_send *bad,
			  uint32_t status, const char *what)
{
	struct kqp_wq_ring_hdr *sh = rt_sq_hdr(&p->a);
	uint32_t start = p->a.sq_tail;
	struct rt_send good = good_write(p, start + 1);
	struct rt_send b = *bad;
	struct kqp_cqe wc[3];

	rt_sq_put(&p->a, &good, RT_SEND1_LEN);
	b.wr.wr_id = start + 2;
	/* All of it, as far as the entry goes: the kernel decides. */
	rt_sq_put(&p->a, &b, p->a.c.out_rings.sq.entry_size < sizeof(b) ?
			     p->a.c.out_rings.sq.entry_size : sizeof(b));
	good.wr.wr_id = start + 3;
	rt_sq_put(&p->a, &good, RT_SEND1_LEN);
	rt_sq_publish(&p->a);
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND)) TH_LOG("%s", what);
	ASSERT_EQ(3, rt_cq_poll(&p->ascq, wc, 3, 20000)) TH_LOG("%s", what);
	EXPECT_EQ(start + 1, wc[0].wr_id) TH_LOG("%s", what);
	EXPECT_EQ(KQP_WC_SUCCESS, wc[0].status) TH_LOG("%s", what);
	EXPECT_EQ(start + 2, wc[1].wr_id) TH_LOG("%s", what);
	EXPECT_EQ(status, wc[1].status) TH_LOG("%s", what);
	EXPECT_EQ(p->a.c.out_qp_num, wc[1].qp_num) TH_LOG("%s", what);
	EXPECT_EQ(start + 3, wc[2].wr_id) TH_LOG("%s", what);
	EXPECT_EQ(KQP_WC_WR_FLUSH_ERR, wc[2].status) TH_LOG("%s", what);
	EXPECT_EQ(0, rt_cq_poll(&p->ascq, wc, 1, 20)) TH_LOG("%s", what);
	EXPECT_EQ(start + 3, rt_head(sh)) TH_LOG("%s", what);
	EXPECT_EQ(KQP_QPS_ERR, rt_qp_state(&p->a, NULL)) TH_LOG("%s", what);
	ASSERT_EQ(0, rt_a_reconnect(p)) TH_LOG("%s", what);
}

/* The same with a receive, and three messages from a to see them. */
static void recv_stops_at(struct __test_metadata *_metadata,
			  struct rt_pair *p, const struct rt_recv *bad,
			  int want, const char *what)
{
	struct kqp_wq_ring_hdr *rh = rt_rq_hdr(&p->b);
	uint32_t start = p->b.rq_tail;
	struct rt_recv good = rt_recv1(start + 1, rt_bbuf(p, 0), 256,
				       p->mr.out_lkey);
	uint32_t rsz = p->b.c.out_rings.rq.entry_size;

	rt_rq_put(&p->b, &good, RT_RECV1_LEN);
	rt_rq_put(&p->b, bad, rsz < sizeof(*bad) ? rsz : sizeof(*bad));
	good.wr.wr_id = start + 3;
	rt_rq_put(&p->b, &good, RT_RECV1_LEN);
	rt_rq_publish(&p->b);
	EXPECT_EQ(want, rt_ring(&p->b, KQP_DB_RECV)) TH_LOG("%s", what);
	EXPECT_EQ(start + 1, rt_head(rh)) TH_LOG("%s", what);
	EXPECT_EQ(want, rt_ring(&p->b, KQP_DB_RECV | KQP_DB_SEND))
		TH_LOG("%s", what);
	EXPECT_EQ(start + 1, rt_head(rh)) TH_LOG("%s", what);

	good.wr.wr_id = start + 2;
	memset(rt_rq_slot(&p->b, start + 1), 0, rsz);
	memcpy(rt_rq_slot(&p->b, start + 1), &good, RT_RECV1_LEN);
	EXPECT_EQ(0, rt_ring(&p->b, KQP_DB_RECV)) TH_LOG("%s", what);
	EXPECT_EQ(start + 3, rt_head(rh)) TH_LOG("%s", what);
	rt_a_sends(p, 100 + start, 3, 8);
	EXPECT_EQ(0, rt_ring(&p->a, KQP_DB_SEND)) TH_LOG("%s", what);
	rt_expect_a_to_b(_metadata, p, 100 + start, start + 1, 3, 8);
}

/* Requests the kernel must refuse, at the entry, with their errno. */
TEST_F_TIMEOUT(h, bad_send_entries, 120)
{
	struct rt_pair *p = &self->p;
	const struct kqp_qp_cap *cap = &p->a.c.cap;
	uint32_t esz = p->a.c.out_rings.sq.entry_size, lkey = p->mr.out_lkey;
	uintptr_t b = (uintptr_t)p->buf;
	char *ro_buf = aligned_alloc(4096, 4096);
	struct kqp_reg_mr ro;
	struct rt_send s;

	ASSERT_NE(NULL, ro_buf);
	ASSERT_EQ(0, kqp_test_reg_mr(p->fd, p->pd, ro_buf, 4096, 0, &ro));

	s = good_write(p, 9);
	s.wr.opcode = 99;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR, "opcode 99");
	s = good_write(p, 9);
	s.wr.opcode = 0x80000002;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "opcode 2^31 + SEND");
	s = good_write(p, 9);
	s.wr.send_flags |= 1U << 12;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "unknown send flag");
	s = good_write(p, 9);
	s.wr.__reserved = 1;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR, "reserved word");
	s = good_write(p, 9);
	s.wr.num_sge = 0xffffffff;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "num_sge 2^32 - 1");
	s = good_write(p, 9);
	s.wr.num_sge = 0x80000001;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "num_sge 2^31 + 1");
	s = good_write(p, 9);
	s.wr.num_sge = cap->max_send_sge + 1;
	for (uint32_t i = 1; i < 8; i++)
		s.sge[i] = s.sge[0];
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "num_sge past the caps");
	s = good_write(p, 9);
	s.wr.num_sge = (esz - RT_SEND_HDR) / sizeof(struct kqp_sge) + 1;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "SGEs past the entry");
	s = good_write(p, 9);
	s.wr.send_flags |= KQP_SEND_FLAG_INLINE;
	s.wr.num_sge = 0;
	s.wr.inline_len = 0xffffffff;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "inline_len 2^32 - 1");
	s.wr.inline_len = 0x80000008;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "inline_len 2^31 + 8");
	s.wr.inline_len = cap->max_inline_data + 1;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "inline_len past the caps");
	s.wr.inline_len = esz;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "inline bytes past the entry");
	s.wr.inline_len = 8;
	s.wr.num_sge = 1;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "inline with an SGE");
	s = good_write(p, 9);
	s.wr.opcode = KQP_WR_OP_ATOMIC_FETCH_AND_ADD;
	s.sge[0].length = 4;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_QP_OP_ERR,
		      "atomic of 4 bytes");

	/* SGEs that name memory the caller did not register. */
	s = good_write(p, 9);
	s.sge[0].lkey = lkey ^ 0x5a5a00;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "an lkey of nothing");
	RT_NEED_DMA_LKEY(p);
	s.sge[0].lkey = p->pd_dma_lkey;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "the PD's local_dma_lkey");
	s.sge[0].lkey = lkey;
	s.sge[0].addr = b + RT_BUF;
	s.sge[0].length = 1;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "one byte past the MR");
	s.sge[0].addr = b - 1;
	s.sge[0].length = 2;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "one byte before the MR");
	s.sge[0].addr = b + RT_BUF - 8;
	s.sge[0].length = 9;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "running off the MR");
	s.sge[0].addr = UINT64_MAX - 7;
	s.sge[0].length = (uint32_t)(b + 16 + 8);
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "wrapping past 2^64");
	s.sge[0].addr = b;
	s.sge[0].length = UINT32_MAX;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR, "length 2^32 - 1");

	/* Where the device would write, the MR needs local write. */
	s = good_write(p, 9);
	s.wr.opcode = KQP_WR_OP_RDMA_READ;
	s.sge[0] = (struct kqp_sge){ (uintptr_t)ro_buf, MSG, ro.out_lkey };
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "read into a read-only MR");
	s.wr.opcode = KQP_WR_OP_ATOMIC_FETCH_AND_ADD;
	s.sge[0].length = 8;
	send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
		      "atomic into a read-only MR");

	EXPECT_EQ(0, rt_dereg(p->fd, ro.out_mr));
	free(ro_buf);
}

TEST_F_TIMEOUT(h, bad_recv_entries, 120)
{
	struct rt_pair *p = &self->p;
	uint32_t esz = p->b.c.out_rings.rq.entry_size, lkey = p->mr.out_lkey;
	uintptr_t b = (uintptr_t)p->buf;
	char *ro_buf = aligned_alloc(4096, 4096);
	struct kqp_reg_mr ro;
	struct rt_recv r;
	uint32_t i;

	ASSERT_NE(NULL, ro_buf);
	ASSERT_EQ(0, kqp_test_reg_mr(p->fd, p->pd, ro_buf, 4096, 0, &ro));

	r = rt_recv1(9, rt_bbuf(p, 0), 256, lkey);
	for (i = 1; i < 8; i++)
		r.sge[i] = r.sge[0];
	r.wr.num_sge = 0xffffffff;
	recv_stops_at(_metadata, p, &r, EINVAL, "num_sge 2^32 - 1");
	r.wr.num_sge = p->b.c.cap.max_recv_sge + 1;
	recv_stops_at(_metadata, p, &r, EINVAL, "num_sge past the caps");
	r.wr.num_sge = (esz - RT_RECV_HDR) / sizeof(struct kqp_sge) + 1;
	recv_stops_at(_metadata, p, &r, EINVAL, "SGEs past the entry");
	r = rt_recv1(9, rt_bbuf(p, 0), 256, lkey);
	r.wr.__reserved = 1;
	recv_stops_at(_metadata, p, &r, EOPNOTSUPP, "reserved word");
	{
		/* The POST_RECV ioctl: the same errno for the same request. */
		struct kqp_post post = {
			.size = sizeof(post), .qp = p->b.c.out_qp, .count = 1,
			.wrs = (uintptr_t)&r, .wrs_len = RT_RECV1_LEN,
		};

		EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(p->fd,
						     KQP_IOCTL_POST_RECV,
						     &post));
		EXPECT_EQ(0, post.out_posted);
	}
	r = rt_recv1(9, rt_bbuf(p, 0), 256, lkey ^ 0x5a5a00);
	recv_stops_at(_metadata, p, &r, EINVAL, "an lkey of nothing");
	RT_NEED_DMA_LKEY(p);
	r.sge[0].lkey = p->pd_dma_lkey;
	recv_stops_at(_metadata, p, &r, EINVAL, "the PD's local_dma_lkey");
	r = rt_recv1(9, b + RT_BUF - 100, 101, lkey);
	recv_stops_at(_metadata, p, &r, EINVAL, "running off the MR");
	r = rt_recv1(9, UINT64_MAX - 7, (uint32_t)(b + 24), lkey);
	recv_stops_at(_metadata, p, &r, EINVAL, "wrapping past 2^64");
	r = rt_recv1(9, (uintptr_t)ro_buf, 64, ro.out_lkey);
	recv_stops_at(_metadata, p, &r, EACCES, "a read-only MR");

	EXPECT_EQ(0, rt_dereg(p->fd, ro.out_mr));
	free(ro_buf);
}

/*
 * lkeys of MRs the caller cannot use: another process's, a deregistered
 * one, one of another PD of its own.  Their memory holds 'X', and not a
 * byte of it reaches b.
 */
TEST_F_TIMEOUT(h, foreign_lkeys, 120)
{
	struct rt_pair *p = &self->p;
	char *mine = aligned_alloc(4096, 8192);
	struct kqp_reg_mr gone, other_pd_mr;
	uint32_t pd2;
	int i, dirty = 0;
	struct kqp_test_other_mr theirs;
	struct {
		const char *what;
		uint64_t addr;
		uint32_t lkey;
	} cases[3];

	ASSERT_NE(NULL, mine);
	memset(mine, 'X', 8192);
	kqp_test_other_mr(_metadata, &theirs, RT_ACCESS_ALL);

	ASSERT_EQ(0, kqp_test_reg_mr(p->fd, p->pd, mine, 4096, RT_ACCESS_ALL,
				     &gone));
	ASSERT_EQ(0, rt_dereg(p->fd, gone.out_mr));
	ASSERT_EQ(0, rt_pd(p->fd, p->dev, &pd2));
	ASSERT_EQ(0, kqp_test_reg_mr(p->fd, pd2, mine + 4096, 4096,
				     RT_ACCESS_ALL, &other_pd_mr));
	cases[0].what = "another process's MR";
	cases[0].addr = theirs.addr;
	cases[0].lkey = theirs.lkey;
	cases[1].what = "a deregistered MR";
	cases[1].addr = (uintptr_t)mine;
	cases[1].lkey = gone.out_lkey;
	cases[2].what = "an MR of another PD";
	cases[2].addr = (uintptr_t)mine + 4096;
	cases[2].lkey = other_pd_mr.out_lkey;

	for (i = 0; i < 3; i++) {
		struct rt_send s = good_write(p, 9);
		struct rt_recv r = rt_recv1(9, cases[i].addr, MSG,
					    cases[i].lkey);

		s.sge[0].addr = cases[i].addr;
		s.sge[0].lkey = cases[i].lkey;
		send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
			      cases[i].what);
		s.wr.opcode = KQP_WR_OP_SEND;
		send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
			      cases[i].what);
		recv_stops_at(_metadata, p, &r, EINVAL, cases[i].what);
		/* Their address with our lkey is outside our MR. */
		s.sge[0].lkey = p->mr.out_lkey;
		send_fails_at(_metadata, p, &s, KQP_WC_LOC_PROT_ERR,
			      cases[i].what);
	}
	for (i = 0; i < RT_BUF; i++)
		dirty += p->buf[i] == 'X';
	EXPECT_EQ(0, dirty);

	kqp_test_other_mr_end(_metadata, &theirs);
	EXPECT_EQ(0, rt_dereg(p->fd, other_pd_mr.out_mr));
	free(mine);
}

/*
 * The kernel never reads head, flags or retired back: whatever the
 * caller writes there, each drain takes exactly what was published since
 * the last, and another process's connection keeps passing data
 * meanwhile.
 */
TEST_F_TIMEOUT(h, head_and_flags_scribbled, 180)
{
	struct rt_pair *p = &self->p;
	struct kqp_wq_ring_hdr *hdrs[4] = {
		rt_sq_hdr(&p->a), rt_rq_hdr(&p->a),
		rt_sq_hdr(&p->b), rt_rq_hdr(&p->b),
	};
	static const uint32_t junk[] = {
		0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0xdeadbeef, 17,
	};
	struct peer pr;
	uint64_t id = 1;
	int round, k, i;

	peer_start(_metadata, &pr);
	for (round = 0; round < 30; round++) {
		for (i = 0; i < 4; i++) {
			uint32_t j = junk[(round + i) % 7];

			hdrs[i]->head = j;
			hdrs[i]->flags = ~j;
			hdrs[i]->retired = j * 7;
			memset(hdrs[i]->__pad0, (int)j, sizeof(hdrs[i]->__pad0));
			memset(hdrs[i]->__pad1, (int)~j,
			       sizeof(hdrs[i]->__pad1));
		}
		k = 1 + round % 5;
		rt_b_recvs(p, 1000 + id, k);
		ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV | KQP_DB_SEND));
		EXPECT_EQ(p->b.rq_tail, rt_head(rt_rq_hdr(&p->b)));
		rt_a_sends(p, id, k, 32);
		ASSERT_EQ(0, rt_ring(&p->a, KQP_DB_SEND | KQP_DB_RECV));
		EXPECT_EQ(p->a.sq_tail, rt_head(rt_sq_hdr(&p->a)));
		rt_expect_a_to_b(_metadata, p, id, 1000 + id, k, 32);
		rt_expect_data(_metadata, p, id, k, 32);
		id += k;
	}
	peer_stop(_metadata, &pr);
}

/*
 * One thread rewrites a's send ring and b's receive ring, entries and
 * tails, good requests and garbage, while this one rings both for a
 * fixed time: every result is an errno of the documented set, on these
 * QPs alone.
 */
struct scribbler {
	struct rt_pair *p;
	uint64_t seed;
	volatile int stop;
	unsigned long writes;
};

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *scribble(void *arg)
{
	struct scribbler *w = arg;
	struct rt_pair *p = w->p;
	uint32_t sn = p->a.c.out_rings.sq.entries;
	uint32_t rn = p->b.c.out_rings.rq.entries;
	uint32_t ssz = p->a.c.out_rings.sq.entry_size;
	uint32_t rsz = p->b.c.out_rings.rq.entry_size;

	while (!w->stop) {
		uint64_t x = xs(&w->seed);
		uint32_t slot = (uint32_t)(x >> 8);
		bool send = x & 1;
		char *e = send ? rt_sq_slot(&p->a, slot) :
				 rt_rq_slot(&p->b, slot);
		struct kqp_wq_ring_hdr *h = send ? rt_sq_hdr(&p->a) :
						   rt_rq_hdr(&p->b);
		uint32_t n = send ? sn : rn, sz = send ? ssz : rsz, i;

		switch ((x >> 1) % 8) {
		case 0:
		case 1:
		case 2:
			/* A good request, written field by field. */
			if (send) {
				struct rt_send s = good_write(p, x);

				s.wr.send_flags = (x >> 40) & 1 ?
					KQP_SEND_FLAG_SIGNALED : 0;
				memcpy(e, &s, RT_SEND1_LEN);
			} else {
				struct rt_recv r = rt_recv1(x, rt_bbuf(p, 0),
							    256,
							    p->mr.out_lkey);

				memcpy(e, &r, RT_RECV1_LEN);
			}
			break;
		case 3:
			/* Garbage, every byte. */
			for (i = 0; i + 8 <= sz; i += 8) {
				uint64_t v = xs(&w->seed);

				memcpy(e + i, &v, 8);
			}
			break;
		case 4: {
			/* One word of a good request. */
			uint32_t v = (uint32_t)xs(&w->seed);
			uint32_t off = (uint32_t)(x >> 32) % (sz / 4) * 4;

			if ((x >> 20) & 1)
				v &= 0xff;
			__atomic_store_n((uint32_t *)(e + off), v,
					 __ATOMIC_RELAXED);
			break;
		}
		default: {
			/* The tail: mostly sane, sometimes not. */
			uint32_t head = h->head, t;

			switch ((x >> 24) % 6) {
			case 0:
				t = (uint32_t)xs(&w->seed);
				break;
			case 1:
				t = head - 1 - (uint32_t)(x >> 40) % 4;
				break;
			case 2:
				t = head + n + 1;
				break;
			default:
				t = head + (uint32_t)(x >> 40) % (n + 1);
				break;
			}
			rt_set_tail(h, t);
			break;
		}
		}
		w->writes++;
	}
	return NULL;
}

TEST_F_TIMEOUT(h, rewritten_while_rung, 180)
{
	struct rt_pair *p = &self->p;
	struct scribbler w = { .p = p, .seed = 0x9e3779b97f4a7c15ULL };
	unsigned long rings = 0, taken = 0, refused = 0, other = 0;
	int by_errno[4] = { 0 };
	struct peer pr;
	pthread_t t;
	long long end;

	peer_start(_metadata, &pr);
	ASSERT_EQ(0, pthread_create(&t, NULL, scribble, &w));
	end = rt_now_ms() + 1500;
	while (rt_now_ms() < end) {
		struct kqp_doorbell_entry e[3] = {
			{ .qp = p->b.c.out_qp, .flags = KQP_DB_RECV },
			{ .qp = p->a.c.out_qp, .flags = KQP_DB_SEND },
			{ .qp = p->a.c.out_qp,
			  .flags = KQP_DB_SEND | KQP_DB_RECV },
		};
		uint32_t before = rt_head(rt_sq_hdr(&p->a)) +
				  rt_head(rt_rq_hdr(&p->b)), done = 0;
		int ret, i;

		ret = rt_doorbell(p->fd, e, 3, &done);
		rings++;
		if (ret || done != 3) {
			TH_LOG("the doorbell itself: errno %d, %u done", ret,
			       done);
			other++;
			break;
		}
		for (i = 0; i < 3; i++) {
			if (!documented(e[i].out_errno)) {
				TH_LOG("entry %d: errno %d", i,
				       e[i].out_errno);
				other++;
			} else if (e[i].out_errno) {
				refused++;
				by_errno[e[i].out_errno == EINVAL ? 0 :
					 e[i].out_errno == EOPNOTSUPP ? 1 :
					 e[i].out_errno == EACCES ? 2 : 3]++;
			}
		}
		if (rt_head(rt_sq_hdr(&p->a)) + rt_head(rt_rq_hdr(&p->b)) !=
		    before)
			taken++;
		/* Keep the CQs from overflowing. */
		rt_cq_poll(&p->ascq, NULL, 1 << 20, 0);
		rt_cq_poll(&p->brcq, NULL, 1 << 20, 0);
	}
	w.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%lu doorbells, %lu took entries, %lu refusals (EINVAL %d, EOPNOTSUPP %d, EACCES %d, ENOMEM %d), %lu writes",
	       rings, taken, refused, by_errno[0], by_errno[1], by_errno[2],
	       by_errno[3], w.writes);
	EXPECT_EQ(0, other);
	/* Both outcomes happened, or the race was not run. */
	EXPECT_LT(0, taken);
	EXPECT_LT(0, refused);
	/* Whatever state these QPs are in, the other process's is fine. */
	peer_stop(_metadata, &pr);
}

/*
 * Published entries are drained from the kernel's pages whether the
 * caller still maps them or not: one thread rings while the other
 * publishes, unmaps at once and maps again, round after round.
 */
struct ringer {
	struct rt_pair *p;
	volatile int stop, destroying;
	unsigned long rings, bad, bad_before;
	int last_bad;
};

static void *ring_loop(void *arg)
{
	struct ringer *r = arg;

	while (!r->stop) {
		struct kqp_doorbell_entry e[2] = {
			{ .qp = r->p->b.c.out_qp, .flags = KQP_DB_RECV },
			{ .qp = r->p->a.c.out_qp, .flags = KQP_DB_SEND },
		};
		int ret = rt_doorbell(r->p->fd, e, 2, NULL);

		r->rings++;
		if (ret || e[0].out_errno || e[1].out_errno) {
			/*
			 * Before the destroy began, nothing may fail.  Read
			 * after the doorbell: one that began before the flag
			 * was set may still meet the destroy (ENOENT), but a
			 * doorbell that met it sees the flag set, as the
			 * flag's store comes before the destroy's ioctl.
			 */
			if (!__atomic_load_n(&r->destroying, __ATOMIC_SEQ_CST))
				r->bad_before++;
			r->bad++;
			r->last_bad = ret ? ret : e[0].out_errno ?
					e[0].out_errno : e[1].out_errno;
		}
	}
	return NULL;
}

TEST_F_TIMEOUT(h, unmapped_while_rung, 180)
{
	struct rt_pair *p = &self->p;
	struct ringer r = { .p = p };
	struct peer pr;
	uint64_t id = 1;
	pthread_t t;
	int round, k;

	peer_start(_metadata, &pr);
	ASSERT_EQ(0, pthread_create(&t, NULL, ring_loop, &r));
	for (round = 0; round < 20; round++) {
		k = 1 + round % 6;
		rt_b_recvs(p, 5000 + id, k);
		rt_a_sends(p, id, k, 24);
		/* Gone from this process, maybe before the next drain. */
		ASSERT_EQ(0, munmap(p->a.map, p->a.c.out_rings.mmap_size));
		ASSERT_EQ(0, munmap(p->b.map, p->b.c.out_rings.mmap_size));
		p->a.map = p->b.map = NULL;
		rt_expect_a_to_b(_metadata, p, id, 5000 + id, k, 24);
		rt_expect_data(_metadata, p, id, k, 24);
		ASSERT_EQ(0, rt_qp_map(&p->a));
		ASSERT_EQ(0, rt_qp_map(&p->b));
		EXPECT_EQ(p->a.sq_tail, rt_head(rt_sq_hdr(&p->a)));
		EXPECT_EQ(p->b.rq_tail, rt_head(rt_rq_hdr(&p->b)));
		id += k;
	}
	/* Unmapped and destroyed while it still rings. */
	r.destroying = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rt_qp_destroy(&p->a);
	usleep(50000);
	r.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%lu doorbells, %lu failed (%lu before the destroy; last errno %d)",
	       r.rings, r.bad, r.bad_before, r.last_bad);
	/* Only the destroyed QP's ENOENT. */
	EXPECT_EQ(0, r.bad_before);
	if (r.bad)
		EXPECT_EQ(ENOENT, r.last_bad);
	EXPECT_GT(r.rings, r.bad);
	peer_stop(_metadata, &pr);
}

/*
 * Another thread rewrites the published entry while the kernel drains
 * it, between the pair's MR and, torn any way, the PD's local_dma_lkey
 * and a page nobody registered.  What is posted is what was checked:
 * each drain either sends the registered bytes or refuses the entry,
 * which then completes with a protection error (a goes to ERR and is
 * connected again), and b never receives a byte of the other page.
 */
TEST_F_TIMEOUT(h, entry_rewritten_during_drain, 300)
{
	struct rt_pair *p = &self->p;
	char *secret = aligned_alloc(4096, 4096);
	struct kqp_test_flipper f = {
		.good_addr = rt_abuf(p, 0), .good_lkey = p->mr.out_lkey,
		.bad_lkey = p->pd_dma_lkey,
	};
	int i, j, sent = 0, refused = 0, wrong = 0, other = 0;
	struct kqp_cqe wc;
	pthread_t t;

	RT_NEED_DMA_LKEY(p);
	ASSERT_NE(NULL, secret);
	memset(secret, 'S', 4096);
	memset(p->buf, 'A', RT_HALF);
	f.bad_addr = (uintptr_t)secret;

	rt_b_recvs(p, 0, 1);
	ASSERT_EQ(0, rt_ring(&p->b, KQP_DB_RECV));
	{
		struct rt_send s = rt_send1(7, KQP_WR_OP_SEND, f.good_addr,
					    MSG, f.good_lkey);
		uint32_t idx = rt_sq_put(&p->a, &s, RT_SEND1_LEN);

		f.sge = (struct kqp_sge *)((char *)rt_sq_slot(&p->a, idx) +
					   RT_SEND_HDR);
		rt_sq_publish(&p->a);
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, kqp_test_flip, &f));
	for (i = 0; i < 3000 && !(sent >= 20 && refused >= 20); i++) {
		int ret;

		/*
		 * Let the flipper run, and be interrupted anywhere, even if
		 * it shares this CPU: else the entry this thread wrote whole
		 * would be drained whole, every time.
		 */
		usleep(i % 50);
		ret = rt_ring(&p->a, KQP_DB_SEND);
		if (ret) {
			TH_LOG("errno %d", ret);
			other++;
			break;
		}
		if (rt_head(rt_sq_hdr(&p->a)) != p->a.sq_tail ||
		    rt_cq_poll(&p->ascq, &wc, 1, 10000) != 1 ||
		    wc.wr_id != 7) {
			other++;
			break;
		}
		if (wc.status == KQP_WC_LOC_PROT_ERR) {
			/* Refused: nothing left a, and a is connected again. */
			refused++;
			if (rt_qp_state(&p->a, NULL) != KQP_QPS_ERR ||
			    rt_cq_poll(&p->brcq, &wc, 1, 20) != 0 ||
			    rt_a_reconnect(p)) {
				other++;
				break;
			}
		} else if (wc.status != KQP_WC_SUCCESS ||
			   rt_cq_poll(&p->brcq, &wc, 1, 10000) != 1 ||
			   wc.status != KQP_WC_SUCCESS || wc.byte_len != MSG) {
			other++;
			break;
		} else {
			sent++;
			for (j = 0; j < MSG; j++)
				wrong += p->buf[RT_HALF + j] != 'A';
			memset(p->buf + RT_HALF, 0, 256);
			/* The next receive. */
			p->b.rq_tail = rt_head(rt_rq_hdr(&p->b));
			rt_b_recvs(p, 0, 1);
			if (rt_ring(&p->b, KQP_DB_RECV)) {
				other++;
				break;
			}
		}
		/* The next send, in the next slot. */
		{
			struct rt_send s = rt_send1(7, KQP_WR_OP_SEND,
						    f.good_addr, MSG,
						    f.good_lkey);
			uint32_t idx = p->a.sq_tail;

			memcpy(rt_sq_slot(&p->a, idx), &s, RT_SEND1_LEN);
			f.sge = (struct kqp_sge *)((char *)rt_sq_slot(&p->a,
								    idx) +
						   RT_SEND_HDR);
			p->a.sq_tail++;
			rt_sq_publish(&p->a);
		}
	}
	f.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%d drains sent, %d refused", sent, refused);
	EXPECT_EQ(0, other);
	EXPECT_EQ(0, wrong);
	EXPECT_LT(0, sent);
	EXPECT_LT(0, refused);
	for (j = 0; j < RT_BUF; j++)
		wrong += p->buf[j] == 'S';
	EXPECT_EQ(0, wrong);
	free(secret);
}

/* ------------------------------------------------------------------ */
/* UD: the AH an entry names                                            */

static int make_ah(const struct rt_pair *p, uint32_t pd, uint32_t *ah)
{
	struct kqp_create_ah c = { .size = sizeof(c), .pd = pd };
	uint8_t gid[16];
	int sgid = rt_gid_index(p->fd, p->dev, gid);

	if (sgid < 0)
		return ENODEV;
	memcpy(c.attr.dgid, gid, 16);
	c.attr.is_global = 1;
	c.attr.sgid_index = (uint8_t)sgid;
	c.attr.hop_limit = 64;
	c.attr.port_num = 1;
	*ah = 0;
	if (kqp_test_ioctl(p->fd, KQP_IOCTL_CREATE_AH, &c))
		return errno;
	*ah = c.out_ah;
	return 0;
}

static int destroy_ah(int fd, uint32_t ah)
{
	struct kqp_destroy_ah d = { .size = sizeof(d), .ah = ah };

	return kqp_test_ioctl(fd, KQP_IOCTL_DESTROY_AH, &d);
}

#define UD_QKEY	0x1111

/* A UD ring QP on the pair's file and PD, in RTS. */
static int make_ud(const struct rt_pair *p, const struct rt_cq *cq,
		   struct rt_qp *q)
{
	struct kqp_create_qp c;
	struct kqp_qp_attr a = { .qp_state = KQP_QPS_INIT, .port_num = 1,
				 .qkey = UD_QKEY };
	int ret;

	rt_qp_req(&c, p->pd, cq->c.out_cq, cq->c.out_cq);
	c.qp_type = KQP_QPT_UD;
	ret = rt_qp_make(p->fd, &c, q);
	if (ret)
		return ret;
	ret = rt_modify(p->fd, q->c.out_qp, KQP_TEST_UD_INIT, &a);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = KQP_QPS_RTR;
	ret = rt_modify(p->fd, q->c.out_qp, KQP_QP_ATTR_STATE, &a);
	if (ret)
		return ret;
	a.qp_state = KQP_QPS_RTS;
	a.sq_psn = 0x100;
	return rt_modify(p->fd, q->c.out_qp,
			 KQP_QP_ATTR_STATE | KQP_QP_ATTR_SQ_PSN, &a);
}

static struct rt_send ud_send(const struct rt_pair *p, uint64_t wr_id,
			      uint32_t ah, uint32_t qpn)
{
	struct rt_send s = rt_send1(wr_id, KQP_WR_OP_SEND, rt_abuf(p, 0), MSG,
				    p->mr.out_lkey);

	s.wr.wr.ud.ah = ah;
	s.wr.wr.ud.remote_qpn = qpn;
	s.wr.wr.ud.remote_qkey = UD_QKEY;
	return s;
}

/*
 * Between two good UD sends, @bad: the drain stops there with @want; fixed,
 * the rest goes, and the three complete on @cq.
 */
static void ud_stops_at(struct __test_metadata *_metadata,
			const struct rt_pair *p, struct rt_qp *q,
			struct rt_cq *cq, const struct rt_send *good,
			const struct rt_send *bad, int want, const char *what)
{
	uint32_t start = q->sq_tail;
	struct rt_send g = *good;
	struct kqp_cqe wc[3];
	int i;

	g.wr.wr_id = start + 1;
	rt_sq_put(q, &g, RT_SEND1_LEN);
	rt_sq_put(q, bad, RT_SEND1_LEN);
	g.wr.wr_id = start + 3;
	rt_sq_put(q, &g, RT_SEND1_LEN);
	rt_sq_publish(q);
	EXPECT_EQ(want, rt_ring(q, KQP_DB_SEND)) TH_LOG("%s", what);
	EXPECT_EQ(start + 1, rt_head(rt_sq_hdr(q))) TH_LOG("%s", what);
	g.wr.wr_id = start + 2;
	memcpy(rt_sq_slot(q, start + 1), &g, RT_SEND1_LEN);
	EXPECT_EQ(0, rt_ring(q, KQP_DB_SEND)) TH_LOG("%s", what);
	EXPECT_EQ(start + 3, rt_head(rt_sq_hdr(q))) TH_LOG("%s", what);
	ASSERT_EQ(3, rt_cq_poll(cq, wc, 3, 20000)) TH_LOG("%s", what);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(start + 1 + i, wc[i].wr_id) TH_LOG("%s", what);
		EXPECT_EQ(KQP_WC_SUCCESS, wc[i].status) TH_LOG("%s", what);
	}
	(void)p;
}

TEST_F_TIMEOUT(h, ud_ahs, 120)
{
	struct rt_pair *p = &self->p;
	struct rt_cq scq, rcq;
	struct rt_qp ua, ub;
	struct rt_send good, bad;
	struct kqp_cqe wc;
	uint32_t ah, ah2, gone, pd2;

	ASSERT_EQ(0, rt_cq_make(p->fd, p->dev, 64, &scq));
	ASSERT_EQ(0, rt_cq_make(p->fd, p->dev, 64, &rcq));
	ASSERT_EQ(0, make_ud(p, &scq, &ua));
	ASSERT_EQ(0, make_ud(p, &rcq, &ub));
	ASSERT_EQ(0, make_ah(p, p->pd, &ah));
	ASSERT_EQ(0, rt_pd(p->fd, p->dev, &pd2));
	ASSERT_EQ(0, make_ah(p, pd2, &ah2));
	ASSERT_EQ(0, make_ah(p, p->pd, &gone));
	ASSERT_EQ(0, destroy_ah(p->fd, gone));

	/* A good one arrives, through both rings. */
	{
		struct rt_recv r = rt_recv1(55, rt_bbuf(p, 0), 40 + MSG,
					    p->mr.out_lkey);

		rt_rq_put(&ub, &r, RT_RECV1_LEN);
		rt_rq_publish(&ub);
		ASSERT_EQ(0, rt_ring(&ub, KQP_DB_RECV));
	}
	memset(p->buf, 'u', MSG);
	good = ud_send(p, 66, ah, ub.c.out_qp_num);
	rt_sq_put(&ua, &good, RT_SEND1_LEN);
	rt_sq_publish(&ua);
	ASSERT_EQ(0, rt_ring(&ua, KQP_DB_SEND));
	ASSERT_EQ(1, rt_cq_poll(&scq, &wc, 1, 20000));
	EXPECT_EQ(66, wc.wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc.status);
	ASSERT_EQ(1, rt_cq_poll(&rcq, &wc, 1, 20000));
	EXPECT_EQ(55, wc.wr_id);
	EXPECT_EQ(KQP_WC_SUCCESS, wc.status);
	EXPECT_EQ(40 + MSG, wc.byte_len);
	EXPECT_EQ(0, memcmp(p->buf + RT_HALF + 40, p->buf, MSG));

	/* AHs the entry may not name; the sends around them go nowhere. */
	good.wr.wr.ud.remote_qpn = 0xffffff & ~1U;
	bad = good;
	bad.wr.wr.ud.ah = p->mr.out_mr;
	ud_stops_at(_metadata, p, &ua, &scq, &good, &bad, EINVAL,
		    "an MR's handle");
	bad.wr.wr.ud.ah = ah2;
	ud_stops_at(_metadata, p, &ua, &scq, &good, &bad, EINVAL,
		    "another PD's AH");
	bad.wr.wr.ud.ah = gone;
	ud_stops_at(_metadata, p, &ua, &scq, &good, &bad, EINVAL,
		    "a destroyed AH");
	bad.wr.wr.ud.ah = 0;
	ud_stops_at(_metadata, p, &ua, &scq, &good, &bad, EINVAL,
		    "no AH");
	bad.wr.wr.ud.ah = ub.c.out_qp;
	ud_stops_at(_metadata, p, &ua, &scq, &good, &bad, EINVAL,
		    "a QP's handle");
	bad = good;
	bad.wr.wr.ud.__reserved = 1;
	ud_stops_at(_metadata, p, &ua, &scq, &good, &bad, EOPNOTSUPP,
		    "the UD reserved word");
	bad = good;
	bad.wr.opcode = KQP_WR_OP_RDMA_WRITE;
	ud_stops_at(_metadata, p, &ua, &scq, &good, &bad, EINVAL,
		    "an RDMA write on UD");

	EXPECT_EQ(0, rt_qp_destroy(&ua));
	EXPECT_EQ(0, rt_qp_destroy(&ub));
	EXPECT_EQ(0, destroy_ah(p->fd, ah));
	EXPECT_EQ(0, destroy_ah(p->fd, ah2));
	rt_cq_free(&scq);
	rt_cq_free(&rcq);
}

/*
 * One thread creates and destroys AHs as fast as it can while this one
 * publishes UD sends naming the latest and rings: each drain takes the
 * AH as the copy names it, alive or not: 0 or EINVAL, nothing else.
 */
struct ah_churn {
	const struct rt_pair *p;
	volatile uint32_t latest;
	volatile int stop;
	unsigned long made;
};

static void *churn_ahs(void *arg)
{
	struct ah_churn *c = arg;

	while (!c->stop) {
		uint32_t ah;

		if (make_ah(c->p, c->p->pd, &ah))
			continue;
		c->latest = ah;
		c->made++;
		usleep(50);
		destroy_ah(c->p->fd, ah);
	}
	return NULL;
}

TEST_F_TIMEOUT(h, ud_ah_destroyed_while_rung, 120)
{
	struct rt_pair *p = &self->p;
	struct ah_churn c = { .p = p };
	unsigned long sent = 0, refused = 0, other = 0;
	struct rt_cq scq;
	struct rt_qp ua;
	pthread_t t;
	long long end;

	ASSERT_EQ(0, rt_cq_make(p->fd, p->dev, 64, &scq));
	ASSERT_EQ(0, make_ud(p, &scq, &ua));
	ASSERT_EQ(0, pthread_create(&t, NULL, churn_ahs, &c));
	while (!c.made)
		usleep(1000);
	end = rt_now_ms() + 1500;
	while (rt_now_ms() < end && !other) {
		struct rt_send s = ud_send(p, ua.sq_tail, c.latest, 0xfffffe);
		long long full = rt_now_ms() + 5000;
		int ret;

		rt_sq_put(&ua, &s, RT_SEND1_LEN);
		rt_sq_publish(&ua);
		/* A full queue waits for completions; the entry stays. */
		while ((ret = rt_ring(&ua, KQP_DB_SEND)) == ENOMEM &&
		       rt_now_ms() < full)
			rt_cq_poll(&scq, NULL, 1 << 20, 1);
		if (!ret) {
			sent++;
		} else if (ret == EINVAL) {
			/* Stopped at it: take it back. */
			refused++;
			ua.sq_tail--;
			rt_sq_publish(&ua);
		} else {
			TH_LOG("errno %d", ret);
			other++;
		}
		if (ua.sq_tail != rt_head(rt_sq_hdr(&ua))) {
			TH_LOG("head %u, tail %u", rt_head(rt_sq_hdr(&ua)),
			       ua.sq_tail);
			other++;
		}
		rt_cq_poll(&scq, NULL, 1 << 20, 0);
	}
	c.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%lu AHs made; %lu sends taken, %lu refused", c.made, sent,
	       refused);
	EXPECT_EQ(0, other);
	EXPECT_LT(0, sent);
	EXPECT_EQ(0, rt_qp_destroy(&ua));
	rt_cq_free(&scq);
}

TEST_HARNESS_MAIN
