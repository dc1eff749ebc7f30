// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma_create_qp(3), sentence by sentence, and the verbs CM programs use
 * around it.  librdmacm and libibverbs API only: built against libkqp
 * (qp) and against rdma-core (qp_rdmacm), and both run in every guest.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "qp_test.h"

/*
 * The caller's struct ibv_qp_init_attr is all that rdma_create_qp() may
 * read: whatever its padding holds (here, what a struct copied from
 * another with garbage in its tail carries) changes nothing.
 */
TEST_F_TIMEOUT(cm, init_attr_padding_ignored, 60)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	memset(&attr, 0xa5, sizeof(attr));
	attr.qp_context = NULL;
	attr.send_cq = NULL;
	attr.recv_cq = NULL;
	attr.srq = NULL;
	attr.cap.max_send_wr = 4;
	attr.cap.max_recv_wr = 4;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = 0;
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 0;
	ASSERT_LT(offsetofend(struct ibv_qp_init_attr, sq_sig_all),
		  sizeof(attr));
	EXPECT_EQ(0, rdma_create_qp(id, NULL, &attr)) TH_LOG("%s",
							     strerror(errno));
	EXPECT_NE(NULL, id->qp);
	rdma_destroy_qp(id);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/* "pd NULL, send_cq and recv_cq NULL: the library supplies them" */
TEST_F_TIMEOUT(cm, defaults_on_id, 60)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	ASSERT_NE(NULL, id->pd);
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr)) TH_LOG("%s",
							     strerror(errno));
	ASSERT_NE(NULL, id->qp);
	EXPECT_EQ(id->pd, id->qp->pd);
	EXPECT_EQ(IBV_QPT_RC, id->qp->qp_type);
	EXPECT_NE(0, id->qp->qp_num);
	/* Each missing CQ, with a completion channel of its own. */
	ASSERT_NE(NULL, id->send_cq);
	ASSERT_NE(NULL, id->recv_cq);
	EXPECT_NE(id->send_cq, id->recv_cq);
	ASSERT_NE(NULL, id->send_cq_channel);
	ASSERT_NE(NULL, id->recv_cq_channel);
	EXPECT_NE(id->send_cq_channel, id->recv_cq_channel);
	EXPECT_EQ(id->send_cq_channel, id->send_cq->channel);
	EXPECT_EQ(id->recv_cq_channel, id->recv_cq->channel);
	/* cq_context is the id, which rdma_get_send_comp() relies on. */
	EXPECT_EQ(id, id->send_cq->cq_context);
	EXPECT_EQ(id, id->recv_cq->cq_context);
	EXPECT_EQ(id->send_cq, id->qp->send_cq);
	EXPECT_EQ(id->recv_cq, id->qp->recv_cq);
	EXPECT_LE(16, id->send_cq->cqe);
	EXPECT_LE(16, id->recv_cq->cqe);
	/* The actual caps and CQs are written back. */
	EXPECT_EQ(id->send_cq, attr.send_cq);
	EXPECT_EQ(id->recv_cq, attr.recv_cq);
	EXPECT_LE(16, attr.cap.max_send_wr);
	EXPECT_LE(16, attr.cap.max_recv_wr);
	EXPECT_LE(2, attr.cap.max_send_sge);
	EXPECT_LE(2, attr.cap.max_recv_sge);
	EXPECT_LE(64, attr.cap.max_inline_data);
	/* Connected: ready for receives, not yet for sends. */
	EXPECT_EQ(IBV_QPS_INIT, qp_state(id->qp));

	rdma_destroy_qp(id);
	EXPECT_EQ(NULL, id->qp);
	EXPECT_EQ(NULL, id->send_cq);
	EXPECT_EQ(NULL, id->recv_cq);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/* "An id has at most one QP." */
TEST_F_TIMEOUT(cm, second_qp_einval, 60)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	qp = id->qp;
	qp_pair_attr(&attr);
	EXPECT_EQ(-1, rdma_create_qp(id, NULL, &attr));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(qp, id->qp);
	EXPECT_EQ(IBV_QPS_INIT, qp_state(id->qp));
	rdma_destroy_qp(id);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * "An unconnected (UD) QP is ready to post sends": straight after
 * rdma_create_qp(), a send to itself goes out and comes back.
 */
TEST_F_TIMEOUT(cm, ud_sends_after_create, 60)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	char buf[64 + 40], msg[16] = "hello, ud self";
	struct ibv_recv_wr rwr = { .wr_id = 0x71, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 0x72, .num_sge = 1 }, *bsw;
	struct ibv_sge rsge, ssge;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_UDP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(id->qp));

	memset(buf, 0, sizeof(buf));
	memcpy(buf + 64, msg, sizeof(msg));
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	rsge = (struct ibv_sge){ (uintptr_t)buf, 40 + sizeof(msg), mr->lkey };
	rwr.sg_list = &rsge;
	ASSERT_EQ(0, ibv_post_recv(id->qp, &rwr, &brw));

	ASSERT_LE(0, qp_gid_index(id->verbs, 1,
				  &id->route.addr.addr.ibaddr.sgid));
	ah = qp_ud_self(id, &swr);
	ASSERT_NE(NULL, ah);
	ssge = (struct ibv_sge){ (uintptr_t)buf + 64, sizeof(msg), mr->lkey };
	swr.sg_list = &ssge;
	/* The receive lands in the same buffer; send from its tail. */
	ASSERT_EQ(0, ibv_post_send(id->qp, &swr, &bsw));

	ASSERT_EQ(1, qp_poll(id->send_cq, &wc, 1, 10000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x72, wc.wr_id);
	EXPECT_EQ(IBV_WC_SEND, wc.opcode);
	ASSERT_EQ(1, qp_poll(id->recv_cq, &wc, 1, 10000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x71, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(40 + sizeof(msg), wc.byte_len);
	EXPECT_EQ(id->qp->qp_num, wc.src_qp);
	EXPECT_EQ(id->qp->qp_num, wc.qp_num);
	EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
	EXPECT_EQ(0, memcmp(buf + 40, msg, sizeof(msg)));

	EXPECT_EQ(0, ibv_destroy_ah(ah));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	rdma_destroy_qp(id);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * A CQ holds as many completions as it was made for: one-entry CQs whose
 * every completion is polled before the next arrives (ib_send_lat's send
 * CQ) never overflow, so nothing is reported on the async fd.
 */
TEST_F_TIMEOUT(cm, one_entry_cqs_never_overflow, 60)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_recv_wr rwr = { .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .num_sge = 1 }, *bsw;
	struct pollfd pfd = { .events = POLLIN };
	char buf[64 + 40];
	struct ibv_sge rsge, ssge;
	struct ibv_cq *scq, *rcq;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	int i;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_UDP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	scq = ibv_create_cq(id->verbs, 1, NULL, NULL, 0);
	rcq = ibv_create_cq(id->verbs, 1, NULL, NULL, 0);
	ASSERT_NE(NULL, scq);
	ASSERT_NE(NULL, rcq);
	attr.send_cq = scq;
	attr.recv_cq = rcq;
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));

	memset(buf, 0, sizeof(buf));
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	rsge = (struct ibv_sge){ (uintptr_t)buf, 40 + 16, mr->lkey };
	rwr.sg_list = &rsge;
	ah = qp_ud_self(id, &swr);
	ASSERT_NE(NULL, ah);
	ssge = (struct ibv_sge){ (uintptr_t)buf + 64, 16, mr->lkey };
	swr.sg_list = &ssge;

	for (i = 0; i < 16; i++) {
		rwr.wr_id = 100 + i;
		swr.wr_id = 200 + i;
		ASSERT_EQ(0, ibv_post_recv(id->qp, &rwr, &brw));
		ASSERT_EQ(0, ibv_post_send(id->qp, &swr, &bsw));
		ASSERT_EQ(1, qp_poll(scq, &wc, 1, 10000));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(200 + i, (int)wc.wr_id);
		ASSERT_EQ(1, qp_poll(rcq, &wc, 1, 10000));
		EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
		EXPECT_EQ(100 + i, (int)wc.wr_id);
	}
	/* An overflow would have been reported by now: it is queued first. */
	pfd.fd = id->verbs->async_fd;
	EXPECT_EQ(0, poll(&pfd, 1, 200));

	EXPECT_EQ(0, ibv_destroy_ah(ah));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	rdma_destroy_qp(id);
	EXPECT_EQ(0, ibv_destroy_cq(scq));
	EXPECT_EQ(0, ibv_destroy_cq(rcq));
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * "RC reaches RTR/RTS on connect/accept without the caller touching
 * states": both sides are RTS once established, data flows, and the side
 * that disconnects sees its QP in ERR.
 */
TEST_F_TIMEOUT(cm, rc_connect_moves_states, 90)
{
	char sbuf[4096], rbuf[4096];
	struct ibv_sge ssge, rsge;
	struct ibv_recv_wr rwr = { .wr_id = 0xa1, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 0xa2, .num_sge = 1 }, *bsw;
	struct ibv_mr *smr, *rmr;
	struct qp_pair p;
	struct ibv_wc wc;
	int step, i;

	step = qp_pair_connect(&p, self->port);
	ASSERT_EQ(0, step) TH_LOG("step %d: %s", step, strerror(errno));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(p.cid->qp));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(p.sid->qp));

	for (i = 0; i < (int)sizeof(sbuf); i++)
		sbuf[i] = (char)(i * 7 + 3);
	memset(rbuf, 0, sizeof(rbuf));
	rmr = ibv_reg_mr(p.sid->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	smr = ibv_reg_mr(p.cid->pd, sbuf, sizeof(sbuf), 0);
	ASSERT_NE(NULL, rmr);
	ASSERT_NE(NULL, smr);
	rsge = (struct ibv_sge){ (uintptr_t)rbuf, sizeof(rbuf), rmr->lkey };
	rwr.sg_list = &rsge;
	ASSERT_EQ(0, ibv_post_recv(p.sid->qp, &rwr, &brw));
	ssge = (struct ibv_sge){ (uintptr_t)sbuf, sizeof(sbuf), smr->lkey };
	swr.sg_list = &ssge;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(p.cid->qp, &swr, &bsw));

	ASSERT_EQ(1, qp_poll(p.cid->send_cq, &wc, 1, 10000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0xa2, wc.wr_id);
	ASSERT_EQ(1, qp_poll(p.sid->recv_cq, &wc, 1, 10000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0xa1, wc.wr_id);
	EXPECT_EQ(sizeof(sbuf), wc.byte_len);
	EXPECT_EQ(0, memcmp(sbuf, rbuf, sizeof(sbuf)));

	ASSERT_EQ(0, rdma_disconnect(p.cid));
	EXPECT_EQ(IBV_QPS_ERR, qp_state(p.cid->qp));
	EXPECT_EQ(0, cm_expect_ack(p.sch, RDMA_CM_EVENT_DISCONNECTED));
	EXPECT_EQ(0, rdma_disconnect(p.sid));
	EXPECT_EQ(0, cm_expect_ack(p.cch, RDMA_CM_EVENT_DISCONNECTED));
	EXPECT_EQ(0, ibv_dereg_mr(smr));
	EXPECT_EQ(0, ibv_dereg_mr(rmr));
	qp_pair_close(&p);
}

/*
 * id->qp->state as librdmacm keeps it, read without ibv_query_qp():
 * INIT once made, RTS once accepted (passive side) or established
 * (active side), ERR after rdma_disconnect(); a DISCONNECTED event leaves
 * it alone.  Programs test it (state > INIT) before disconnecting.
 */
TEST_F_TIMEOUT(cm, rc_qp_state_field, 90)
{
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, 4);
	ASSERT_NE(NULL, lid);
	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(cid, NULL, &attr));
	EXPECT_EQ(IBV_QPS_INIT, cid->qp->state);
	ASSERT_EQ(0, rdma_connect(cid, &param));
	EXPECT_EQ(IBV_QPS_INIT, cid->qp->state);

	sid = cm_expect_request(self->sch);
	ASSERT_NE(NULL, sid);
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(sid, NULL, &attr));
	EXPECT_EQ(IBV_QPS_INIT, sid->qp->state);
	ASSERT_EQ(0, rdma_accept(sid, &param));
	EXPECT_EQ(IBV_QPS_RTS, sid->qp->state);

	ev = cm_expect(self->cch, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(IBV_QPS_RTS, cid->qp->state);
	rdma_ack_cm_event(ev);
	ASSERT_EQ(0, cm_expect_ack(self->sch, RDMA_CM_EVENT_ESTABLISHED));
	EXPECT_EQ(IBV_QPS_RTS, sid->qp->state);

	ASSERT_EQ(0, rdma_disconnect(cid));
	EXPECT_EQ(IBV_QPS_ERR, cid->qp->state);
	ASSERT_EQ(0, cm_expect_ack(self->sch, RDMA_CM_EVENT_DISCONNECTED));
	EXPECT_EQ(IBV_QPS_RTS, sid->qp->state);
	ASSERT_EQ(0, rdma_disconnect(sid));
	EXPECT_EQ(IBV_QPS_ERR, sid->qp->state);
	EXPECT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_DISCONNECTED));

	rdma_destroy_qp(sid);
	EXPECT_EQ(0, rdma_destroy_id(sid));
	rdma_destroy_qp(cid);
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

/* A rejected connection: the active side's QP is in ERR. */
TEST_F_TIMEOUT(cm, rc_qp_state_rejected, 90)
{
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, 4);
	ASSERT_NE(NULL, lid);
	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(cid, NULL, &attr));
	ASSERT_EQ(0, rdma_connect(cid, &param));
	sid = cm_expect_request(self->sch);
	ASSERT_NE(NULL, sid);
	ASSERT_EQ(0, rdma_reject(sid, NULL, 0));
	ev = cm_expect(self->cch, RDMA_CM_EVENT_REJECTED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(IBV_QPS_ERR, cid->qp->state);
	rdma_ack_cm_event(ev);

	EXPECT_EQ(0, rdma_destroy_id(sid));
	rdma_destroy_qp(cid);
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

struct accept_one {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *sid;
	int step;
};

/* The passive side of rc_qp_state_sync_connect, in a thread. */
static void *accept_one(void *arg)
{
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct accept_one *a = arg;
	struct ibv_qp_init_attr attr;

	a->step = 1;
	a->sid = cm_expect_request(a->ch);
	if (!a->sid)
		return NULL;
	a->step = 2;
	qp_pair_attr(&attr);
	if (rdma_create_qp(a->sid, NULL, &attr))
		return NULL;
	a->step = 3;
	if (rdma_accept(a->sid, &param))
		return NULL;
	a->step = 4;
	if (cm_expect_ack(a->ch, RDMA_CM_EVENT_ESTABLISHED))
		return NULL;
	a->step = 0;
	return NULL;
}

/* A synchronous rdma_connect() returns with the QP in RTS. */
TEST_F_TIMEOUT(cm, rc_qp_state_sync_connect, 90)
{
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct accept_one a = { .ch = self->sch };
	struct sockaddr_in sin = cm_addr(self->port);
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *lid, *cid;
	pthread_t t;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, 4);
	ASSERT_NE(NULL, lid);
	ASSERT_EQ(0, rdma_create_id(NULL, &cid, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_resolve_addr(cid, NULL, (struct sockaddr *)&sin,
				       2000));
	ASSERT_EQ(0, rdma_resolve_route(cid, 2000));
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(cid, NULL, &attr));
	ASSERT_EQ(0, pthread_create(&t, NULL, accept_one, &a));
	ASSERT_EQ(0, rdma_connect(cid, &param)) TH_LOG("%s", strerror(errno));
	ASSERT_NE(NULL, cid->event);
	EXPECT_EQ(RDMA_CM_EVENT_ESTABLISHED, cid->event->event);
	EXPECT_EQ(IBV_QPS_RTS, cid->qp->state);
	pthread_join(t, NULL);
	EXPECT_EQ(0, a.step) TH_LOG("passive side failed at step %d", a.step);

	if (a.sid) {
		rdma_destroy_qp(a.sid);
		EXPECT_EQ(0, rdma_destroy_id(a.sid));
	}
	rdma_destroy_qp(cid);
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

/* A caller's send CQ and a made recv CQ; the caller's is never freed. */
TEST_F_TIMEOUT(cm, user_send_cq_auto_recv, 60)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	cq = ibv_create_cq(id->verbs, 32, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	qp_pair_attr(&attr);
	attr.send_cq = cq;
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	EXPECT_EQ(cq, id->qp->send_cq);
	EXPECT_EQ(NULL, id->send_cq);
	EXPECT_EQ(NULL, id->send_cq_channel);
	ASSERT_NE(NULL, id->recv_cq);
	EXPECT_NE(cq, id->recv_cq);
	EXPECT_EQ(id->recv_cq, attr.recv_cq);
	/* A CQ in use cannot go. */
	EXPECT_EQ(EBUSY, ibv_destroy_cq(cq));
	rdma_destroy_qp(id);
	EXPECT_EQ(NULL, id->recv_cq);
	/* Still ours, still alive. */
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * rdma_create_qp() writes the CQs it made back into the caller's
 * attributes, and a program that creates its next QP with the same
 * attributes (cmtime's server does, for every connection) shares them.
 * They outlive the QP they were made for while the other QP uses them:
 * librdmacm's ibv_destroy_cq() of them fails (EBUSY) and leaves them.
 */
TEST_F_TIMEOUT(cm, auto_cqs_shared_by_next_qp, 60)
{
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *a, *b;
	struct ibv_recv_wr wr = { .wr_id = 7 }, *bad;
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_cq *scq, *rcq;
	struct ibv_wc wc;

	a = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, a);
	b = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, b);
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(a, NULL, &attr));
	scq = attr.send_cq;
	rcq = attr.recv_cq;
	ASSERT_EQ(a->send_cq, scq);
	ASSERT_EQ(a->recv_cq, rcq);
	ASSERT_EQ(0, rdma_create_qp(b, NULL, &attr)) TH_LOG("%s",
							  strerror(errno));
	EXPECT_EQ(scq, b->qp->send_cq);
	EXPECT_EQ(rcq, b->qp->recv_cq);
	EXPECT_EQ(NULL, b->send_cq);
	EXPECT_EQ(NULL, b->recv_cq);

	/* a's QP goes; its CQs stay for b's, and a lets go of them. */
	rdma_destroy_qp(a);
	EXPECT_EQ(NULL, a->send_cq);
	EXPECT_EQ(NULL, a->recv_cq);
	EXPECT_EQ(0, rdma_destroy_id(a));

	/* They still work: a receive b flushes lands in the shared CQ. */
	ASSERT_EQ(0, ibv_post_recv(b->qp, &wr, &bad));
	ASSERT_EQ(0, ibv_modify_qp(b->qp, &err, IBV_QP_STATE));
	ASSERT_EQ(1, qp_poll(rcq, &wc, 1, 5000));
	EXPECT_EQ(7, wc.wr_id);
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc.status);
	EXPECT_EQ(b->qp->qp_num, wc.qp_num);
	EXPECT_EQ(EBUSY, ibv_destroy_cq(rcq));

	/* Once b's QP is gone, they are the caller's to destroy. */
	rdma_destroy_qp(b);
	EXPECT_EQ(0, ibv_destroy_cq(scq));
	EXPECT_EQ(0, ibv_destroy_cq(rcq));
	EXPECT_EQ(0, rdma_destroy_id(b));
}

/*
 * A completion channel: an armed CQ that receives a completion wakes it
 * once; without re-arming, the next completion does not; re-armed, it
 * does again.  Acked events let the CQ go.
 */
TEST_F_TIMEOUT(cm, channel_armed_fired_acked, 90)
{
	static char buf[2][64];
	struct ibv_recv_wr rwr = { .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .num_sge = 1 }, *bsw;
	struct ibv_sge rsge, ssge;
	struct ibv_mr *rmr, *smr;
	struct pollfd pfd = { .events = POLLIN };
	struct ibv_cq *cq;
	struct qp_pair p;
	struct ibv_wc wc;
	void *ctx;
	int i, step;

	step = qp_pair_connect(&p, self->port);
	ASSERT_EQ(0, step) TH_LOG("step %d", step);
	rmr = ibv_reg_mr(p.cid->pd, buf[0], sizeof(buf[0]), IBV_ACCESS_LOCAL_WRITE);
	smr = ibv_reg_mr(p.sid->pd, buf[1], sizeof(buf[1]), 0);
	ASSERT_NE(NULL, rmr);
	ASSERT_NE(NULL, smr);
	rsge = (struct ibv_sge){ (uintptr_t)buf[0], sizeof(buf[0]), rmr->lkey };
	ssge = (struct ibv_sge){ (uintptr_t)buf[1], sizeof(buf[1]), smr->lkey };
	rwr.sg_list = &rsge;
	swr.sg_list = &ssge;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	for (i = 0; i < 3; i++) {
		rwr.wr_id = i;
		ASSERT_EQ(0, ibv_post_recv(p.cid->qp, &rwr, &brw));
	}
	pfd.fd = p.cid->recv_cq_channel->fd;

	ASSERT_EQ(0, ibv_req_notify_cq(p.cid->recv_cq, 0));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, ibv_post_send(p.sid->qp, &swr, &bsw));
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(0, ibv_get_cq_event(p.cid->recv_cq_channel, &cq, &ctx));
	EXPECT_EQ(p.cid->recv_cq, cq);
	EXPECT_EQ(p.cid, ctx);
	ibv_ack_cq_events(cq, 1);
	ASSERT_EQ(1, qp_poll(cq, &wc, 1, 5000));
	EXPECT_EQ(0, wc.wr_id);

	/* Not re-armed: the second completion wakes nobody. */
	ASSERT_EQ(0, ibv_post_send(p.sid->qp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(cq, &wc, 1, 10000));
	EXPECT_EQ(1, wc.wr_id);
	EXPECT_EQ(0, poll(&pfd, 1, 500));

	/* Re-armed: the third does, once. */
	ASSERT_EQ(0, ibv_req_notify_cq(cq, 0));
	ASSERT_EQ(0, ibv_post_send(p.sid->qp, &swr, &bsw));
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(0, ibv_get_cq_event(p.cid->recv_cq_channel, &cq, &ctx));
	ibv_ack_cq_events(cq, 1);
	EXPECT_EQ(0, poll(&pfd, 1, 200));
	ASSERT_EQ(1, qp_poll(cq, &wc, 1, 5000));
	EXPECT_EQ(2, wc.wr_id);
	ASSERT_EQ(3, qp_poll(p.sid->send_cq, &wc, 3, 10000));

	EXPECT_EQ(0, ibv_dereg_mr(rmr));
	EXPECT_EQ(0, ibv_dereg_mr(smr));
	qp_pair_close(&p);
}

/* Capabilities the device cannot give: -1/EINVAL and no QP. */
TEST_F_TIMEOUT(cm, caps_too_large_einval, 60)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	ASSERT_EQ(0, ibv_query_device(id->verbs, &da));
	qp_pair_attr(&attr);
	attr.cap.max_send_sge = da.max_sge + 1;
	EXPECT_EQ(-1, rdma_create_qp(id, NULL, &attr));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, id->qp);
	EXPECT_EQ(NULL, id->send_cq);
	EXPECT_EQ(NULL, id->recv_cq);
	/* The id is unharmed: a sane QP still works. */
	qp_pair_attr(&attr);
	EXPECT_EQ(0, rdma_create_qp(id, NULL, &attr));
	rdma_destroy_qp(id);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * A queue deeper than the largest power of two under max_cqe gets its
 * automatic CQ, as deep as the queue (librdmacm asks for max_send_wr
 * entries).
 */
TEST_F_TIMEOUT(cm, deep_queue_auto_cq, 60)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	uint32_t wr = 20000;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	ASSERT_EQ(0, ibv_query_device(id->verbs, &da));
	if ((int)wr > da.max_cqe)
		wr = da.max_cqe;
	if ((int)wr > da.max_qp_wr)
		wr = da.max_qp_wr;
	qp_pair_attr(&attr);
	attr.cap.max_send_wr = wr;
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr))
		TH_LOG("max_send_wr %u (max_cqe %d, max_qp_wr %d): %s", wr,
		       da.max_cqe, da.max_qp_wr, strerror(errno));
	EXPECT_LE(wr, attr.cap.max_send_wr);
	ASSERT_NE(NULL, id->send_cq);
	EXPECT_LE((int)wr, id->send_cq->cqe);
	rdma_destroy_qp(id);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * rdma_create_ep() whose QP cannot be made: -1 with the errno of that
 * failure, which undoing the endpoint leaves alone.
 */
TEST_F_TIMEOUT(cm, create_ep_qp_fails_keeps_errno, 60)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id = NULL;
	char port[16];
	int ret;

	snprintf(port, sizeof(port), "%u", self->port);
	ASSERT_EQ(0, rdma_getaddrinfo(getenv("KQP_TEST_ADDR") ?: "192.0.2.1",
				      port, &hints, &res));
	qp_pair_attr(&attr);
	attr.cap.max_send_sge = 1 << 20;	/* more than any device has */
	errno = 0;
	ret = rdma_create_ep(&id, res, NULL, &attr);
	EXPECT_EQ(-1, ret);
	EXPECT_EQ(EINVAL, errno);
	rdma_freeaddrinfo(res);
}

/*
 * close() as libc's, counting the calls that find no such fd while
 * close_watch is set: a library that closes an fd twice would, in a
 * threaded program, close one another thread just opened.
 */
static int close_watch, close_ebadf;

int close(int fd)
{
	long ret = syscall(SYS_close, fd);

	if (ret < 0 && errno == EBADF && close_watch)
		close_ebadf++;
	return ret < 0 ? -1 : 0;
}

/* This process's address space in bytes, as RLIMIT_AS counts it. */
static long long vm_size(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSize: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/*
 * Completion queues made for the QP that cannot be mapped (RLIMIT_AS
 * leaves no room for a large one): the call fails, and closes each
 * completion channel it made once, whether the send CQ or the receive
 * CQ was the one that failed.
 */
TEST_F_TIMEOUT(cm, auto_cq_fails_closes_once, 60)
{
	struct ibv_device_attr da;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct rlimit old, lim;
	long long vm;
	int big, recv, ret, err;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	ASSERT_EQ(0, ibv_query_device(id->verbs, &da));
	big = 4096;
	if (big > da.max_qp_wr)
		big = da.max_qp_wr;
	if (big > da.max_cqe)
		big = da.max_cqe;
	ASSERT_EQ(0, getrlimit(RLIMIT_AS, &old));
	for (recv = 0; recv < 2; recv++) {
		qp_pair_attr(&attr);
		if (recv)
			attr.cap.max_recv_wr = big;
		else
			attr.cap.max_send_wr = big;
		/* Room on the heap for small allocations, none for a ring. */
		free(malloc(1 << 16));
		vm = vm_size();
		ASSERT_LT(0, vm);
		lim = old;
		lim.rlim_cur = vm + (64 << 10);
		close_ebadf = 0;
		close_watch = 1;
		ASSERT_EQ(0, setrlimit(RLIMIT_AS, &lim));
		ret = rdma_create_qp(id, NULL, &attr);
		err = errno;
		setrlimit(RLIMIT_AS, &old);
		close_watch = 0;
		EXPECT_EQ(-1, ret) TH_LOG("recv %d", recv);
		EXPECT_EQ(ENOMEM, err) TH_LOG("recv %d", recv);
		EXPECT_EQ(0, close_ebadf) TH_LOG("recv %d: closed twice", recv);
		EXPECT_EQ(NULL, id->qp);
		EXPECT_EQ(NULL, id->send_cq);
		EXPECT_EQ(NULL, id->recv_cq);
		EXPECT_EQ(NULL, id->send_cq_channel);
		EXPECT_EQ(NULL, id->recv_cq_channel);
		if (!ret)
			rdma_destroy_qp(id);
	}
	/* The id is unharmed. */
	qp_pair_attr(&attr);
	EXPECT_EQ(0, rdma_create_qp(id, NULL, &attr));
	rdma_destroy_qp(id);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * rdma_destroy_id() leaves the QP to its caller: rping's server destroys
 * the child id first, then the QP, its CQ, channel and PD.
 */
TEST_F_TIMEOUT(cm, qp_outlives_id, 60)
{
	struct ibv_comp_channel *ch;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct ibv_pd *pd;
	struct ibv_cq *cq;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	pd = ibv_alloc_pd(id->verbs);
	ASSERT_NE(NULL, pd);
	ch = ibv_create_comp_channel(id->verbs);
	ASSERT_NE(NULL, ch);
	cq = ibv_create_cq(id->verbs, 32, NULL, ch, 0);
	ASSERT_NE(NULL, cq);
	qp_pair_attr(&attr);
	attr.send_cq = cq;
	attr.recv_cq = cq;
	ASSERT_EQ(0, rdma_create_qp(id, pd, &attr)) TH_LOG("%s",
							   strerror(errno));
	qp = id->qp;
	ASSERT_NE(NULL, qp);
	EXPECT_EQ(0, rdma_destroy_id(id));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, ibv_destroy_comp_channel(ch));
	EXPECT_EQ(0, ibv_dealloc_pd(pd));
}

/*
 * The path rping -q and cmtime take: a QP made with ibv_create_qp(),
 * moved through its states with rdma_init_qp_attr() + ibv_modify_qp(),
 * the CM told its number, the handshake finished with rdma_establish().
 */
static int to_state(struct rdma_cm_id *id, struct ibv_qp *qp,
		    enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask;

	if (rdma_init_qp_attr(id, &attr, &mask))
		return -1;
	return ibv_modify_qp(qp, &attr, mask);
}

TEST_F_TIMEOUT(cm, own_qp_init_attr_modify, 90)
{
	struct rdma_conn_param cp = { .retry_count = 7, .rnr_retry_count = 7 };
	struct ibv_qp_init_attr a = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *cqp, *sqp;
	struct ibv_cq *ccq, *scq;
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;
	static char sbuf[128], rbuf[128];
	struct ibv_sge ssge, rsge;
	struct ibv_recv_wr rwr = { .wr_id = 5, .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .wr_id = 6, .num_sge = 1 }, *bsw;
	struct ibv_mr *smr, *rmr;
	struct ibv_wc wc;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, 1);
	ASSERT_NE(NULL, lid);
	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);
	ccq = ibv_create_cq(cid->verbs, 8, NULL, NULL, 0);
	ASSERT_NE(NULL, ccq);
	a.send_cq = a.recv_cq = ccq;
	cqp = ibv_create_qp(cid->pd, &a);
	ASSERT_NE(NULL, cqp);
	EXPECT_EQ(IBV_QPS_RESET, qp_state(cqp));
	ASSERT_EQ(0, to_state(cid, cqp, IBV_QPS_INIT));
	EXPECT_EQ(IBV_QPS_INIT, qp_state(cqp));
	cp.qp_num = cqp->qp_num;
	ASSERT_EQ(0, rdma_connect(cid, &cp));

	sid = cm_expect_request(self->sch);
	ASSERT_NE(NULL, sid);
	scq = ibv_create_cq(sid->verbs, 8, NULL, NULL, 0);
	ASSERT_NE(NULL, scq);
	a.send_cq = a.recv_cq = scq;
	sqp = ibv_create_qp(sid->pd, &a);
	ASSERT_NE(NULL, sqp);
	ASSERT_EQ(0, to_state(sid, sqp, IBV_QPS_INIT));
	ASSERT_EQ(0, to_state(sid, sqp, IBV_QPS_RTR));
	ASSERT_EQ(0, to_state(sid, sqp, IBV_QPS_RTS));
	rmr = ibv_reg_mr(sid->pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, rmr);
	rsge = (struct ibv_sge){ (uintptr_t)rbuf, sizeof(rbuf), rmr->lkey };
	rwr.sg_list = &rsge;
	ASSERT_EQ(0, ibv_post_recv(sqp, &rwr, &brw));
	cp.qp_num = sqp->qp_num;
	ASSERT_EQ(0, rdma_accept(sid, &cp));

	ev = cm_expect(self->cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ASSERT_NE(NULL, ev);
	rdma_ack_cm_event(ev);
	ASSERT_EQ(0, to_state(cid, cqp, IBV_QPS_RTR));
	ASSERT_EQ(0, to_state(cid, cqp, IBV_QPS_RTS));
	EXPECT_EQ(IBV_QPS_RTS, qp_state(cqp));
	ASSERT_EQ(0, rdma_establish(cid));
	EXPECT_EQ(0, cm_expect_ack(self->sch, RDMA_CM_EVENT_ESTABLISHED));

	strcpy(sbuf, "own QP, moved by hand");
	smr = ibv_reg_mr(cid->pd, sbuf, sizeof(sbuf), 0);
	ASSERT_NE(NULL, smr);
	ssge = (struct ibv_sge){ (uintptr_t)sbuf, sizeof(sbuf), smr->lkey };
	swr.sg_list = &ssge;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	ASSERT_EQ(0, ibv_post_send(cqp, &swr, &bsw));
	ASSERT_EQ(1, qp_poll(ccq, &wc, 1, 10000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(6, wc.wr_id);
	ASSERT_EQ(1, qp_poll(scq, &wc, 1, 10000));
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(5, wc.wr_id);
	EXPECT_EQ(0, strcmp(sbuf, rbuf));

	EXPECT_EQ(0, ibv_destroy_qp(cqp));
	EXPECT_EQ(0, ibv_destroy_qp(sqp));
	EXPECT_EQ(0, ibv_dereg_mr(smr));
	EXPECT_EQ(0, ibv_dereg_mr(rmr));
	EXPECT_EQ(0, ibv_destroy_cq(ccq));
	EXPECT_EQ(0, ibv_destroy_cq(scq));
	EXPECT_EQ(0, rdma_destroy_id(sid));
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

TEST(device_queries)
{
	struct ibv_context **list, *ctx = NULL;
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	__be16 pkey;
	int n, i, len;

	list = rdma_get_devices(&n);
	ASSERT_NE(NULL, list);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]->device),
			    kqp_test_rdma_dev()))
			ctx = list[i];
	ASSERT_NE(NULL, ctx);
	ASSERT_EQ(0, ibv_query_device(ctx, &da));
	EXPECT_EQ(1, da.phys_port_cnt);
	EXPECT_LT(0, da.max_qp_wr);
	EXPECT_LT(0, da.max_cqe);
	EXPECT_LT(0, da.max_sge);
	EXPECT_EQ(kqp_test_sysfs_guid(kqp_test_rdma_dev()), da.node_guid);
	ASSERT_EQ(0, ibv_query_port(ctx, 1, &pa));
	EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);
	EXPECT_EQ(IBV_LINK_LAYER_ETHERNET, pa.link_layer);
	EXPECT_LT(0, pa.gid_tbl_len);
	len = pa.gid_tbl_len;
	EXPECT_NE(0, ibv_query_port(ctx, 2, &pa));
	ASSERT_EQ(0, ibv_query_gid(ctx, 1, 0, &gid));
	/* RoCE's first GID is the link-local one. */
	EXPECT_EQ(0xfe, gid.raw[0]);
	EXPECT_EQ(0x80, gid.raw[1]);
	/* An unused entry reads as zeros; past the table is an error. */
	memset(&gid, 0xa5, sizeof(gid));
	EXPECT_EQ(0, ibv_query_gid(ctx, 1, len - 1, &gid));
	EXPECT_EQ(0, gid.global.subnet_prefix);
	EXPECT_EQ(0, gid.global.interface_id);
	EXPECT_EQ(-1, ibv_query_gid(ctx, 1, len, &gid));
	ASSERT_EQ(0, ibv_query_pkey(ctx, 1, 0, &pkey));
	EXPECT_EQ(htons(0xffff), pkey);
	rdma_free_devices(list);
}

TEST_HARNESS_MAIN
