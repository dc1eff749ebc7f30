/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers for QP tests written against librdmacm and libibverbs only, so
 * that they build against libkqp and against rdma-core alike.
 */
#ifndef KQP_QP_TEST_H
#define KQP_QP_TEST_H

#include <time.h>
#include <infiniband/verbs.h>

#include "cm_test.h"

static inline long long qp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * Poll @cq until @n completions arrived or @ms passed; returns how many
 * arrived (a failed ibv_poll_cq() counts as -1).
 */
static inline int qp_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int ms)
{
	long long end = qp_now_ms() + ms;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(cq, n - got, wc + got);
		if (r < 0)
			return -1;
		got += r;
		if (got < n && qp_now_ms() > end)
			break;
		if (!r)
			usleep(200);
	}
	return got;
}

/* The port's GID table index of @gid, or -1. */
static inline int qp_gid_index(struct ibv_context *ctx, uint8_t port,
			       const union ibv_gid *gid)
{
	struct ibv_port_attr pa;
	union ibv_gid g;
	int i;

	if (ibv_query_port(ctx, port, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(ctx, port, i, &g) &&
		    !memcmp(&g, gid, sizeof(g)))
			return i;
	return -1;
}

/*
 * A UD self-send on @id, a bound RDMA_PS_UDP id with a QP: an AH to the
 * id's own GID on port 1, and @swr a signaled SEND through it to the
 * id's QP.  Returns the AH, or NULL (the GID not found, or no AH).
 */
static inline struct ibv_ah *qp_ud_self(struct rdma_cm_id *id,
					struct ibv_send_wr *swr)
{
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;
	int gid;

	gid = qp_gid_index(id->verbs, 1, &id->route.addr.addr.ibaddr.sgid);
	if (gid < 0)
		return NULL;
	ah_attr.grh.dgid = id->route.addr.addr.ibaddr.sgid;
	ah_attr.grh.sgid_index = gid;
	ah_attr.grh.hop_limit = 64;
	ah = ibv_create_ah(id->pd, &ah_attr);
	if (!ah)
		return NULL;
	swr->opcode = IBV_WR_SEND;
	swr->send_flags = IBV_SEND_SIGNALED;
	swr->wr.ud.ah = ah;
	swr->wr.ud.remote_qpn = id->qp->qp_num;
	swr->wr.ud.remote_qkey = RDMA_UDP_QKEY;
	return ah;
}

/* The state ibv_query_qp() reports. */
static inline int qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;

	if (ibv_query_qp(qp, &attr, IBV_QP_STATE, &init))
		return -1;
	return attr.qp_state;
}

/*
 * Wait up to @ms for ibv_query_qp() to report @state, which a device may
 * reach a little after it reported the completion that caused it; returns
 * the last state seen.
 */
static inline int qp_wait_state(struct ibv_qp *qp, enum ibv_qp_state state,
				int ms)
{
	long long end = qp_now_ms() + ms;
	int s;

	while ((s = qp_state(qp)) != (int)state && qp_now_ms() < end)
		usleep(1000);
	return s;
}

/*
 * An RC connection in one process, both QPs made by rdma_create_qp() with
 * no PD and no CQs: the library's defaults all the way.
 */
struct qp_pair {
	struct rdma_event_channel *sch, *cch;
	struct rdma_cm_id *lid, *sid, *cid;
	struct ibv_qp_init_attr sattr, cattr;
};

static inline void qp_pair_attr(struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_type = IBV_QPT_RC;
	a->cap.max_send_wr = 16;
	a->cap.max_recv_wr = 16;
	a->cap.max_send_sge = 2;
	a->cap.max_recv_sge = 2;
	a->cap.max_inline_data = 64;
}

/*
 * qp_pair_connect() with the caller's QP attributes for both sides (@attr,
 * or NULL for qp_pair_attr()'s) and connection parameters for both
 * rdma_connect() and rdma_accept() (@cp, or NULL for 7 retries of each
 * kind and no RDMA reads or atomics).  The caps each QP got are in
 * p->cattr and p->sattr.  0 on success; the step that failed otherwise.
 */
static inline int qp_pair_connect_with(struct qp_pair *p, uint16_t port,
				       const struct ibv_qp_init_attr *attr,
				       const struct rdma_conn_param *cp)
{
	struct rdma_conn_param param = { .retry_count = 7,
					 .rnr_retry_count = 7 };
	struct rdma_cm_event *ev;

	memset(p, 0, sizeof(*p));
	if (cp)
		param = *cp;
	p->sch = rdma_create_event_channel();
	p->cch = rdma_create_event_channel();
	if (!p->sch || !p->cch)
		return 1;
	p->lid = listener(p->sch, port, RDMA_PS_TCP, 4);
	if (!p->lid)
		return 2;
	p->cid = resolved(p->cch, port, RDMA_PS_TCP);
	if (!p->cid)
		return 3;
	if (attr)
		p->cattr = *attr;
	else
		qp_pair_attr(&p->cattr);
	if (rdma_create_qp(p->cid, NULL, &p->cattr))
		return 4;
	if (rdma_connect(p->cid, &param))
		return 5;
	ev = cm_expect(p->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		return 6;
	p->sid = ev->id;
	rdma_ack_cm_event(ev);
	if (attr)
		p->sattr = *attr;
	else
		qp_pair_attr(&p->sattr);
	if (rdma_create_qp(p->sid, NULL, &p->sattr))
		return 7;
	if (rdma_accept(p->sid, &param))
		return 8;
	if (cm_expect_ack(p->cch, RDMA_CM_EVENT_ESTABLISHED))
		return 9;
	if (cm_expect_ack(p->sch, RDMA_CM_EVENT_ESTABLISHED))
		return 10;
	return 0;
}

/* 0 on success; the step that failed otherwise. */
static inline int qp_pair_connect(struct qp_pair *p, uint16_t port)
{
	return qp_pair_connect_with(p, port, NULL, NULL);
}

/*
 * A buffer on each side of a qp_pair (c: the client's, s: the server's),
 * zeroed, and registered on its side's PD with @access.
 */
struct qp_bufs {
	char *cbuf, *sbuf;
	struct ibv_mr *cmr, *smr;
};

/* 0 on success; -1 with errno otherwise (qp_bufs_free() still cleans up). */
static inline int qp_bufs_reg(struct qp_bufs *b, const struct qp_pair *p,
			      size_t len, int access)
{
	b->cbuf = calloc(1, len);
	b->sbuf = calloc(1, len);
	if (!b->cbuf || !b->sbuf)
		return -1;
	b->cmr = ibv_reg_mr(p->cid->pd, b->cbuf, len, access);
	b->smr = ibv_reg_mr(p->sid->pd, b->sbuf, len, access);
	return b->cmr && b->smr ? 0 : -1;
}

static inline void qp_bufs_free(struct qp_bufs *b)
{
	if (b->cmr)
		ibv_dereg_mr(b->cmr);
	if (b->smr)
		ibv_dereg_mr(b->smr);
	free(b->cbuf);
	free(b->sbuf);
	memset(b, 0, sizeof(*b));
}

static inline void qp_pair_close(struct qp_pair *p)
{
	if (p->cid) {
		rdma_destroy_qp(p->cid);
		rdma_destroy_id(p->cid);
	}
	if (p->sid) {
		rdma_destroy_qp(p->sid);
		rdma_destroy_id(p->sid);
	}
	if (p->lid)
		rdma_destroy_id(p->lid);
	if (p->cch)
		rdma_destroy_event_channel(p->cch);
	if (p->sch)
		rdma_destroy_event_channel(p->sch);
	memset(p, 0, sizeof(*p));
}

#endif /* KQP_QP_TEST_H */
