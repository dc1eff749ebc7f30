// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma_create_qp(3) where kqp does what librdmacm does not: an unbound id
 * is EINVAL (librdmacm crashes), the default PD is counted and freed with
 * its last user, a failed create leaves nothing behind, rdma_destroy_qp()
 * frees exactly the CQs made for the id, and a full completion ring loses
 * nothing.  What the session holds is read with kqp_query_context().
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <kqp/kqp.h>

#include "qp_test.h"

static int ctx_info(struct kqp_ctx_info *info)
{
	return kqp_query_context(info);
}

/* Open fds of this process: leaked channels would show here. */
static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Mappings of /dev/kqp in this process: CQ rings and QP rings. */
static int kqp_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, " /dev/kqp"))
			n++;
	fclose(f);
	return n;
}

/*
 * libkqp gives every QP submission rings, one mapping for both, made when
 * the QP is first posted to (a QP that is never posted to costs no
 * mapping), which goes with the QP; KQP_RINGS=0 makes QPs without them,
 * that post with the ioctls.  Both kinds pass data (data.c runs on
 * rings).
 */
TEST_F_TIMEOUT(cm, qp_rings_mapped_unless_disabled, 60)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct ibv_recv_wr rwr = { .num_sge = 0 }, *bad;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	int base, off;

	for (off = 0; off < 2; off++) {
		if (off)
			ASSERT_EQ(0, setenv("KQP_RINGS", "0", 1));
		ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
		ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
		cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
		ASSERT_NE(NULL, cq);
		base = kqp_maps();
		ASSERT_GE(base, 1);
		qp_pair_attr(&attr);
		attr.send_cq = cq;
		attr.recv_cq = cq;
		ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
		EXPECT_EQ(base, kqp_maps());
		/* A receive, in INIT: the first post maps the rings. */
		EXPECT_EQ(0, ibv_post_recv(id->qp, &rwr, &bad));
		EXPECT_EQ(base + (off ? 0 : 1), kqp_maps());
		EXPECT_EQ(0, ibv_post_recv(id->qp, &rwr, &bad));
		EXPECT_EQ(base + (off ? 0 : 1), kqp_maps());
		rdma_destroy_qp(id);
		EXPECT_EQ(base, kqp_maps());
		EXPECT_EQ(0, ibv_destroy_cq(cq));
		EXPECT_EQ(0, rdma_destroy_id(id));
	}
	unsetenv("KQP_RINGS");
}

/* A "name value" line of /sys/kernel/debug/kqp/completions, or -1. */
static long long completions_stat(const char *name)
{
	FILE *f = fopen("/sys/kernel/debug/kqp/completions", "r");
	char key[64];
	long long v, found = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %lld", key, &v) == 2)
		if (!strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

/*
 * debugfs's completion path counts a CQ's completions while the CQ
 * lives, not only once it is destroyed, and gives the delay's median
 * and 99th percentile.  Receives flushed by moving the QP to ERR make
 * the completions.
 */
TEST_F_TIMEOUT(cm, completions_counted_while_cq_lives, 60)
{
	enum { N = 8 };
	struct sockaddr_in sin = cm_addr(self->port);
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_recv_wr rwr = { .num_sge = 0 }, *brw;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_wc wc[N];
	long long before, after, p50, p99;
	int i;

	before = completions_stat("completions");
	ASSERT_LE(0, before);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	for (i = 0; i < N; i++) {
		rwr.wr_id = i;
		ASSERT_EQ(0, ibv_post_recv(id->qp, &rwr, &brw));
	}
	ASSERT_EQ(0, ibv_modify_qp(id->qp, &qa, IBV_QP_STATE));
	ASSERT_EQ(N, qp_poll(id->recv_cq, wc, N, 10000));
	EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, wc[0].status);

	/* The CQ is alive still. */
	after = completions_stat("completions");
	EXPECT_LE(before + N, after);
	EXPECT_LE(1, completions_stat("callbacks"));
	p50 = completions_stat("callback_ns_p50");
	p99 = completions_stat("callback_ns_p99");
	EXPECT_LT(0, p50);
	EXPECT_LE(p50, p99);
	/* A bucket's bound is under twice what fell in it. */
	EXPECT_LE(p50 / 2, completions_stat("callback_ns_max"));
	rdma_destroy_qp(id);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

TEST_F(cm, unbound_id_einval)
{
	struct ibv_qp_init_attr attr;
	struct kqp_ctx_info before, after;
	struct rdma_cm_id *id;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, ctx_info(&before));
	qp_pair_attr(&attr);
	EXPECT_EQ(-1, rdma_create_qp(id, NULL, &attr));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(NULL, id->qp);
	ASSERT_EQ(0, ctx_info(&after));
	EXPECT_EQ(before.out_qps, after.out_qps);
	EXPECT_EQ(before.out_cqs, after.out_cqs);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * One default PD per device, shared by the process's ids, freed with its
 * last user.
 */
TEST_F_TIMEOUT(cm, default_pd_shared_and_freed, 60)
{
	struct sockaddr_in a1 = cm_addr(self->port), a2 = cm_addr(self->port + 1);
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id1, *id2;
	struct kqp_ctx_info info;

	ASSERT_EQ(0, ctx_info(&info));
	ASSERT_EQ(0, info.out_default_pds);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id1, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_create_id(self->cch, &id2, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_bind_addr(id1, (struct sockaddr *)&a1));
	ASSERT_EQ(0, rdma_bind_addr(id2, (struct sockaddr *)&a2));
	ASSERT_NE(NULL, id1->pd);
	EXPECT_EQ(id1->pd, id2->pd);
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(1, info.out_default_pds);
	EXPECT_EQ(1, info.out_pds);

	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(id1, NULL, &attr));
	EXPECT_EQ(id1->pd, id1->qp->pd);
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(1, info.out_default_pds);

	EXPECT_EQ(0, rdma_destroy_id(id2));
	rdma_destroy_qp(id1);
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(1, info.out_default_pds);
	EXPECT_EQ(0, rdma_destroy_id(id1));
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(0, info.out_default_pds);
	EXPECT_EQ(0, info.out_pds);
	EXPECT_EQ(0, info.out_qps);
	EXPECT_EQ(0, info.out_cqs);
}

/* A PD of another device: EINVAL.  A second rxe device, for the test. */
TEST_F_TIMEOUT(cm, pd_of_other_device_einval, 90)
{
	const char *netdev = getenv("KQP_TEST_NORDMA_NETDEV") ?: "kqp1";
	struct ibv_context **list, *other = NULL;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	int n, i;

	ASSERT_EQ(0, kqp_test_sh("rdma link add kqptmp type rxe netdev %s",
				 netdev));
	list = rdma_get_devices(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]->device), "kqptmp"))
			other = list[i];
	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	pd = other ? ibv_alloc_pd(other) : NULL;
	if (pd && id) {
		qp_pair_attr(&attr);
		EXPECT_EQ(-1, rdma_create_qp(id, pd, &attr));
		EXPECT_EQ(EINVAL, errno);
		EXPECT_EQ(NULL, id->qp);
	}
	if (pd)
		EXPECT_EQ(0, ibv_dealloc_pd(pd));
	if (id)
		EXPECT_EQ(0, rdma_destroy_id(id));
	rdma_free_devices(list);
	EXPECT_EQ(0, kqp_test_sh("rdma link delete kqptmp"));
	ASSERT_NE(NULL, other);
	ASSERT_NE(NULL, pd);
	ASSERT_NE(NULL, id);
}

TEST_F_TIMEOUT(cm, failed_create_leaves_nothing, 60)
{
	struct kqp_ctx_info before, after;
	struct ibv_qp_init_attr attr;
	struct ibv_device_attr da;
	struct rdma_cm_id *id;
	int fds;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	ASSERT_EQ(0, ibv_query_device(id->verbs, &da));
	ASSERT_EQ(0, ctx_info(&before));
	fds = fd_count();
	qp_pair_attr(&attr);
	attr.cap.max_send_wr = da.max_qp_wr + 1;
	EXPECT_EQ(-1, rdma_create_qp(id, NULL, &attr));
	EXPECT_EQ(EINVAL, errno);
	qp_pair_attr(&attr);
	attr.cap.max_recv_sge = da.max_sge + 1;
	EXPECT_EQ(-1, rdma_create_qp(id, NULL, &attr));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, ctx_info(&after));
	EXPECT_EQ(before.out_qps, after.out_qps);
	EXPECT_EQ(before.out_cqs, after.out_cqs);
	EXPECT_EQ(before.out_pds, after.out_pds);
	EXPECT_EQ(fds, fd_count());
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * rdma_destroy_qp() frees exactly what was made for the id: both made
 * CQs and their channels, never the caller's CQ.
 */
TEST_F_TIMEOUT(cm, destroy_frees_what_was_made, 60)
{
	struct ibv_qp_init_attr attr;
	struct kqp_ctx_info info;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	int fds;

	id = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, id);
	fds = fd_count();
	qp_pair_attr(&attr);
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(2, info.out_cqs);
	EXPECT_EQ(1, info.out_qps);
	EXPECT_EQ(fds + 2, fd_count());
	rdma_destroy_qp(id);
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(0, info.out_cqs);
	EXPECT_EQ(0, info.out_qps);
	EXPECT_EQ(fds, fd_count());

	cq = ibv_create_cq(id->verbs, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	qp_pair_attr(&attr);
	attr.send_cq = cq;
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(2, info.out_cqs);
	rdma_destroy_qp(id);
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(1, info.out_cqs);
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	EXPECT_EQ(0, rdma_destroy_id(id));
	EXPECT_EQ(fds, fd_count());
}

/*
 * rdma_destroy_qp() then rdma_destroy_id(), and the id first.  An id
 * takes its kernel QP with it; the struct ibv_qp stays for the caller's
 * ibv_destroy_qp(), as librdmacm leaves it, and refuses everything else.
 */
TEST_F_TIMEOUT(cm, destroy_orders, 90)
{
	struct ibv_qp_init_attr init;
	struct ibv_recv_wr rwr = { .wr_id = 1 }, *bad = NULL;
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct kqp_ctx_info info;
	struct ibv_qp *sqp;
	struct qp_pair p;
	int step;

	step = qp_pair_connect(&p, self->port);
	ASSERT_EQ(0, step) TH_LOG("step %d", step);
	/* The client: its QP first, then the id. */
	rdma_destroy_qp(p.cid);
	EXPECT_EQ(0, rdma_destroy_id(p.cid));
	p.cid = NULL;
	/* The server: the id with its QP still on it. */
	sqp = p.sid->qp;
	ASSERT_NE(NULL, sqp);
	EXPECT_EQ(0, rdma_destroy_id(p.sid));
	p.sid = NULL;
	qp_pair_close(&p);
	ASSERT_EQ(0, ctx_info(&info));
	EXPECT_EQ(0, info.out_qps);
	EXPECT_EQ(0, info.out_cqs);
	EXPECT_EQ(0, info.out_pds);
	EXPECT_EQ(0, info.out_cm_ids);
	EXPECT_EQ(0, cm_ids_of(getpid()));
	EXPECT_EQ(ENOENT, ibv_query_qp(sqp, &attr, IBV_QP_STATE, &init));
	EXPECT_EQ(ENOENT, ibv_modify_qp(sqp, &attr, IBV_QP_STATE));
	EXPECT_EQ(ENOENT, ibv_post_recv(sqp, &rwr, &bad));
	EXPECT_EQ(&rwr, bad);
	EXPECT_EQ(0, ibv_destroy_qp(sqp));
}

/*
 * A ring that fills: 20 completions for a CQ of 8, which rxe makes 15
 * deep, in a ring of 16 (the power of two that holds the CQ).  The rest
 * wait in the kernel, an IBV_EVENT_CQ_ERR says so, and polling after
 * making room gets every one of them, in order, once.
 */
TEST_F_TIMEOUT(cm, ring_full_loses_nothing, 90)
{
	enum { N = 20 };
	struct sockaddr_in sin = cm_addr(self->port);
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = N, .max_recv_wr = N,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct pollfd pfd = { .events = POLLIN };
	static char buf[N][64];
	struct ibv_recv_wr rwr = { .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .num_sge = 0 }, *bsw;
	struct ibv_async_event aev;
	struct ibv_wc wc[2 * N];
	struct ibv_cq *rcq, *scq;
	struct rdma_cm_id *id;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	int i, got = 0, ring;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_UDP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	rcq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	scq = ibv_create_cq(id->verbs, 2 * N, NULL, NULL, 0);
	ASSERT_NE(NULL, rcq);
	ASSERT_NE(NULL, scq);
	/* More than the ring holds, no more than the kernel CQ takes on. */
	for (ring = 1; ring < rcq->cqe; ring *= 2)
		;
	ASSERT_LT(ring, N) TH_LOG("cqe %d", rcq->cqe);
	ASSERT_GE(rcq->cqe, N - ring) TH_LOG("cqe %d", rcq->cqe);
	attr.recv_cq = rcq;
	attr.send_cq = scq;
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	rwr.sg_list = &sge;
	for (i = 0; i < N; i++) {
		sge = (struct ibv_sge){ (uintptr_t)buf[i], 64, mr->lkey };
		rwr.wr_id = 100 + i;
		ASSERT_EQ(0, ibv_post_recv(id->qp, &rwr, &brw));
	}
	ah = qp_ud_self(id, &swr);
	ASSERT_NE(NULL, ah);
	/*
	 * One send at a time, each completed before the next: rxe's own CQ
	 * is only 15 deep, and a sender that outruns the CQ's poller (a
	 * thread on PREEMPT_RT, on a busy host) overflows it in the device,
	 * which drops what does not fit before kqp ever sees it.
	 */
	for (i = 0; i < N; i++) {
		swr.wr_id = 200 + i;
		ASSERT_EQ(0, ibv_post_send(id->qp, &swr, &bsw));
		ASSERT_EQ(1, qp_poll(scq, wc, 1, 20000));
	}

	/* The ring filled: the context's async fd says so. */
	pfd.fd = id->verbs->async_fd;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(0, ibv_get_async_event(id->verbs, &aev));
	EXPECT_EQ(IBV_EVENT_CQ_ERR, aev.event_type);
	EXPECT_EQ(rcq, aev.element.cq);
	ibv_ack_async_event(&aev);

	got = qp_poll(rcq, wc, 2 * N, 10000);
	ASSERT_LE(N, got);
	for (i = 0; i < got; i++) {
		EXPECT_EQ(IBV_WC_SUCCESS, wc[i].status);
		EXPECT_EQ(100 + i, (int)wc[i].wr_id);
	}
	EXPECT_EQ(N, got);
	/* Nothing more, and the CQ works on. */
	EXPECT_EQ(0, ibv_poll_cq(rcq, 1, wc));

	EXPECT_EQ(0, ibv_destroy_ah(ah));
	rdma_destroy_qp(id);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_destroy_cq(rcq));
	EXPECT_EQ(0, ibv_destroy_cq(scq));
	EXPECT_EQ(0, rdma_destroy_id(id));
}

struct destroy_qp_bg {
	struct rdma_cm_id *id;
	int done;
};

static void *destroy_qp_bg(void *arg)
{
	struct destroy_qp_bg *d = arg;

	rdma_destroy_qp(d->id);
	__atomic_store_n(&d->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * An IBV_EVENT_CQ_ERR for a CQ made for the id's QP (its ring filled):
 * rdma_destroy_qp() frees that CQ only once the event was acked, as
 * ibv_destroy_cq() would, so the ack never touches freed memory.
 */
TEST_F_TIMEOUT(cm, auto_cq_async_event_acked_before_free, 90)
{
	enum { N = 4 };
	struct sockaddr_in sin = cm_addr(self->port);
	/* Room for the sends: only the receive ring fills. */
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 4 * N, .max_recv_wr = N,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct pollfd pfd = { .events = POLLIN };
	static char buf[N][64];
	struct ibv_recv_wr rwr = { .num_sge = 1 }, *brw;
	struct ibv_send_wr swr = { .num_sge = 0 }, *bsw;
	struct destroy_qp_bg d = { 0 };
	struct ibv_async_event aev;
	struct ibv_wc wc[N];
	struct rdma_cm_id *id;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	int i, round, fired = 0;
	pthread_t t;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_UDP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	ASSERT_EQ(0, rdma_create_qp(id, NULL, &attr));
	ASSERT_NE(NULL, id->recv_cq);
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	ah = qp_ud_self(id, &swr);
	ASSERT_NE(NULL, ah);
	rwr.sg_list = &sge;
	pfd.fd = id->verbs->async_fd;

	/* N receives a round, never polled, until the receive ring fills. */
	for (round = 0; round < 4 && !fired; round++) {
		for (i = 0; i < N; i++) {
			sge = (struct ibv_sge){ (uintptr_t)buf[i], 64, mr->lkey };
			rwr.wr_id = i;
			ASSERT_EQ(0, ibv_post_recv(id->qp, &rwr, &brw));
		}
		for (i = 0; i < N; i++)
			ASSERT_EQ(0, ibv_post_send(id->qp, &swr, &bsw));
		ASSERT_EQ(N, qp_poll(id->send_cq, wc, N, 20000));
		fired = poll(&pfd, 1, 2000) == 1;
	}
	ASSERT_TRUE(fired);
	ASSERT_EQ(0, ibv_get_async_event(id->verbs, &aev));
	EXPECT_EQ(IBV_EVENT_CQ_ERR, aev.event_type);
	EXPECT_EQ(id->recv_cq, aev.element.cq);

	/* Not acked: the QP goes, the CQ waits. */
	d.id = id;
	ASSERT_EQ(0, pthread_create(&t, NULL, destroy_qp_bg, &d));
	usleep(500 * 1000);
	EXPECT_EQ(0, __atomic_load_n(&d.done, __ATOMIC_ACQUIRE));
	ibv_ack_async_event(&aev);
	pthread_join(t, NULL);
	EXPECT_EQ(1, d.done);
	EXPECT_EQ(NULL, id->qp);
	EXPECT_EQ(NULL, id->recv_cq);

	EXPECT_EQ(0, ibv_destroy_ah(ah));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, rdma_destroy_id(id));
}

TEST_HARNESS_MAIN
