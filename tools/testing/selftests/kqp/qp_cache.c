// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rdma_create_qp(3) with no PD and no CQs, as a process sees it, when the
 * QP may have been made ahead by kqp's QP cache (kqp(7)): a QP taken after
 * another process used and released one carries nothing of it, and a
 * peer of the old QP reaches nothing.  Built against rdma-core too
 * (qp_cache_rdmacm), where every QP is made on the call: the same
 * assertions hold there, and say what right is.  Against libkqp the tests
 * also read /sys/kernel/debug/kqp/qp_cache, to show the cache served the
 * QPs they assert on, and set the qp_cache parameters (restored after).
 */
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "qp_test.h"

/* What qp_pair_attr() asks for, as the cache rounds it. */
#define QPC_SHAPE "shape rc req 16 16 2 2 64"
#define QPC_IDLE 8

/*
 * Wait up to 30 s for the cache to hold @idle slots (of QPC_SHAPE when
 * @idle is not 0); 0 once it does.
 */
static int qpc_settle(long idle)
{
	struct kqp_test_qpc st;
	int i, stable = 0;

	/* Three reads in a row, past the worker's tenth of a second. */
	for (i = 0; i < 200; i++) {
		if (kqp_test_qpc_stat(&st))
			return -1;
		if (st.idle == idle &&
		    (!idle || !strcmp(st.shape, QPC_SHAPE))) {
			if (++stable == 3)
				return 0;
		} else {
			stable = 0;
		}
		usleep(150 * 1000);
	}
	return -1;
}

/* kqp's kernel objects (qp, pd) on the rxe device, as `rdma res` lists them. */
static __attribute__((unused)) int qpc_kernel_res(const char *what)
{
	char cmd[64];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "rdma res show %s 2>/dev/null", what);
	f = popen(cmd, "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "rxe") && strstr(line, "[kqp]"))
			n++;
	return pclose(f) ? -1 : n;
}

FIXTURE(qpc) {
	uint16_t port;
	bool kqp;
	char cache[16], batch[16];
};

FIXTURE_SETUP(qpc)
{
	self->port = cm_port();
#ifndef KQP_TEST_REFERENCE
	struct kqp_test_qpc st;

	self->kqp = true;
	ASSERT_EQ(0, geteuid());
	ASSERT_EQ(0, kqp_test_qpc_stat(&st)) TH_LOG("no /sys/kernel/debug/kqp/qp_cache");
	ASSERT_EQ(0, param_read("qp_cache", self->cache,
				    sizeof(self->cache)));
	ASSERT_EQ(0, param_read("qp_cache_batch", self->batch,
				    sizeof(self->batch)));
	ASSERT_EQ(0, param_write("qp_cache_batch", "4"));
	ASSERT_EQ(0, param_write("qp_cache", "8"));
#endif
}

FIXTURE_TEARDOWN(qpc)
{
	if (self->kqp) {
		param_write("qp_cache", self->cache);
		param_write("qp_cache_batch", self->batch);
	}
}

static int child_status(pid_t pid);

/*
 * Teach the cache qp_pair_attr()'s shape, and wait for it to fill.  In a
 * child: the test's own process makes its default PD only after, from a
 * cache of that shape.
 */
static int qpc_teach(struct __test_metadata *_metadata, uint16_t port,
		     bool kqp)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		struct qp_pair p;
		int r = qp_pair_connect(&p, port);

		qp_pair_close(&p);
		_exit(r);
	}
	ASSERT_EQ(0, child_status(pid));
	if (kqp)
		ASSERT_EQ(0, qpc_settle(QPC_IDLE)) TH_LOG("the cache did not fill");
	return 0;
}

/* A pipe's end: write or read one value, or fail the child. */
static void put_u32(int fd, uint32_t v)
{
	if (write(fd, &v, sizeof(v)) != sizeof(v))
		_exit(90);
}

static uint32_t get_u32(int fd)
{
	uint32_t v;

	return read(fd, &v, sizeof(v)) == sizeof(v) ? v : UINT32_MAX;
}

/*
 * Process A: connect to the parent's listener on @port, receive the
 * parent's message, leave receives posted, and say its QP number on @out;
 * then exit, which releases everything, once @in says so.
 */
static void qpc_old_user(uint16_t port, int in, int out)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .retry_count = 1, .rnr_retry_count = 1 };
	struct ibv_qp_init_attr attr;
	struct ibv_recv_wr rwr = { 0 }, *bad;
	struct ibv_sge sge;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	static char buf[4096];
	int i;

	if (!ch)
		_exit(10);
	id = resolved(ch, port, RDMA_PS_TCP);
	if (!id)
		_exit(11);
	qp_pair_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr))
		_exit(12);
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		_exit(13);
	sge = (struct ibv_sge){ (uintptr_t)buf, 64, mr->lkey };
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	for (i = 0; i < 4; i++) {
		rwr.wr_id = i;
		if (ibv_post_recv(id->qp, &rwr, &bad))
			_exit(14);
	}
	if (rdma_connect(id, &cp) ||
	    cm_expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED))
		_exit(15);
	/* The parent's message, in the first receive. */
	if (qp_poll(id->recv_cq, &wc, 1, 10000) != 1 ||
	    wc.status != IBV_WC_SUCCESS || strcmp(buf, "secret of A"))
		_exit(16);
	put_u32(out, id->qp->qp_num);
	get_u32(in);
	/* Three receives still posted, an MR, a connection: all left. */
	_exit(0);
}

/*
 * Process B: a new id and a QP like A's, and what it finds: its QP number
 * on @out, then, after @in says the old peer sent, how many completions
 * and received bytes it saw (0 and 0 are right).
 */
static void qpc_new_user(uint16_t port, int in, int out, bool kqp)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct ibv_recv_wr rwr = { 0 }, *bad;
	struct ibv_qp_init_attr attr;
	struct kqp_test_qpc before, after;
	struct rdma_cm_id *id;
	struct ibv_wc wc[4];
	struct ibv_sge sge;
	struct ibv_mr *mr;
	static char buf[4096];
	uint32_t seen = 0;
	size_t i;

	if (!ch)
		_exit(20);
	if (kqp && kqp_test_qpc_stat(&before))
		_exit(21);
	/* Not connected: bound to the device, so it can have a QP. */
	id = resolved(ch, port, RDMA_PS_TCP);
	if (!id)
		_exit(22);
	qp_pair_attr(&attr);
	if (rdma_create_qp(id, NULL, &attr))
		_exit(23);
	/* Against libkqp, the cache made it. */
	if (kqp && (kqp_test_qpc_stat(&after) || after.hits != before.hits + 1))
		_exit(24);
	/* Caps at least those asked, as rdma_create_qp(3) writes them. */
	if (attr.cap.max_send_wr < 16 || attr.cap.max_recv_wr < 16 ||
	    attr.cap.max_send_sge < 2 || attr.cap.max_recv_sge < 2 ||
	    attr.cap.max_inline_data < 64)
		_exit(25);
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		_exit(26);
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(buf), mr->lkey };
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	if (ibv_post_recv(id->qp, &rwr, &bad))
		_exit(27);
	put_u32(out, id->qp->qp_num);
	get_u32(in);
	/* A second for anything to come in, on either CQ. */
	seen += qp_poll(id->recv_cq, wc, 4, 1000);
	seen += qp_poll(id->send_cq, wc, 4, 10);
	for (i = 0; i < sizeof(buf); i++)
		if (buf[i])
			seen += 1000;
	put_u32(out, seen);
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	_exit(0);
}

static int child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Process P, the peer: listen on @port, say so, accept A and send it a
 * message; then, when told, send again on the same connection and say
 * the completion's status.
 */
static void qpc_peer(uint16_t port, int in, int out)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .retry_count = 1, .rnr_retry_count = 1 };
	struct ibv_send_wr swr = { 0 }, *bad;
	struct ibv_qp_init_attr attr;
	struct rdma_cm_id *lid, *sid;
	struct rdma_cm_event *ev;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	static char buf[64] = "secret of A";

	lid = ch ? listener(ch, port, RDMA_PS_TCP, 4) : NULL;
	if (!lid)
		_exit(30);
	put_u32(out, 1);
	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		_exit(31);
	sid = ev->id;
	rdma_ack_cm_event(ev);
	qp_pair_attr(&attr);
	if (rdma_create_qp(sid, NULL, &attr) || rdma_accept(sid, &cp) ||
	    cm_expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED))
		_exit(32);
	mr = ibv_reg_mr(sid->pd, buf, sizeof(buf), 0);
	if (!mr)
		_exit(33);
	sge = (struct ibv_sge){ (uintptr_t)buf, sizeof(buf), mr->lkey };
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	swr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(sid->qp, &swr, &bad) ||
	    qp_poll(sid->send_cq, &wc, 1, 10000) != 1 ||
	    wc.status != IBV_WC_SUCCESS)
		_exit(34);
	get_u32(in);
	strcpy(buf, "for A only");
	if (ibv_post_send(sid->qp, &swr, &bad) ||
	    qp_poll(sid->send_cq, &wc, 1, 30000) != 1)
		_exit(35);
	put_u32(out, wc.status);
	get_u32(in);
	_exit(0);
}

/*
 * A connects to its peer P and gets a message; A exits with receives
 * posted; B takes a QP.  B's QP is not A's (a new number), has nothing in
 * its CQs and receives nothing, and P, sending again to its old
 * connection, reaches nobody: the send fails.  Each is a process of its
 * own, forked before any of them opened a device, so that rdma-core's
 * A, too, takes its QP with it when it exits.
 */
TEST_F_TIMEOUT(qpc, reused_carries_nothing, 120)
{
	int p_in[2], p_out[2], a_in[2], a_out[2], b_in[2], b_out[2];
	uint32_t a_qpn, b_qpn, seen, status;
	pid_t p, a, b;

	ASSERT_EQ(0, qpc_teach(_metadata, self->port, self->kqp));
	ASSERT_EQ(0, pipe(p_in));
	ASSERT_EQ(0, pipe(p_out));
	ASSERT_EQ(0, pipe(a_in));
	ASSERT_EQ(0, pipe(a_out));
	ASSERT_EQ(0, pipe(b_in));
	ASSERT_EQ(0, pipe(b_out));

	p = fork();
	ASSERT_LE(0, p);
	if (!p)
		qpc_peer(self->port + 1, p_in[0], p_out[1]);
	ASSERT_EQ(1, get_u32(p_out[0])) TH_LOG("P failed at step %d",
					       child_status(p));
	a = fork();
	ASSERT_LE(0, a);
	if (!a)
		qpc_old_user(self->port + 1, a_in[0], a_out[1]);
	a_qpn = get_u32(a_out[0]);
	ASSERT_NE(UINT32_MAX, a_qpn) TH_LOG("A failed at step %d",
					    child_status(a));

	/* A goes, with everything it had; its QP with it. */
	put_u32(a_in[1], 1);
	ASSERT_EQ(0, child_status(a));
	if (self->kqp)
		ASSERT_EQ(0, qpc_settle(QPC_IDLE));

	b = fork();
	ASSERT_LE(0, b);
	if (!b)
		qpc_new_user(self->port + 2, b_in[0], b_out[1], self->kqp);
	b_qpn = get_u32(b_out[0]);
	ASSERT_NE(UINT32_MAX, b_qpn) TH_LOG("B failed at step %d",
					    child_status(b));
	EXPECT_NE(a_qpn, b_qpn);

	/* The old peer sends again: nobody may get it. */
	put_u32(p_in[1], 1);
	status = get_u32(p_out[0]);
	ASSERT_NE(UINT32_MAX, status) TH_LOG("P failed at step %d",
					     child_status(p));
	EXPECT_NE(IBV_WC_SUCCESS, status);
	put_u32(b_in[1], 1);
	seen = get_u32(b_out[0]);
	EXPECT_EQ(0, seen);
	EXPECT_EQ(0, child_status(b));
	put_u32(p_in[1], 1);
	EXPECT_EQ(0, child_status(p));
}

/*
 * Many QPs from one process, one after another, more than a group holds:
 * the first come from the cache, the rest are made on the call, and every
 * one connects.
 */
TEST_F_TIMEOUT(qpc, emptied_falls_back, 120)
{
	struct kqp_test_qpc before, after;
	struct qp_pair p[6];
	unsigned int i;

	ASSERT_EQ(0, qpc_teach(_metadata, self->port, self->kqp));
	if (self->kqp)
		ASSERT_EQ(0, kqp_test_qpc_stat(&before));
	for (i = 0; i < 6; i++)
		ASSERT_EQ(0, qp_pair_connect(&p[i], self->port + 1 + i))
			TH_LOG("pair %u", i);
	for (i = 0; i < 6; i++)
		qp_pair_close(&p[i]);
	if (self->kqp) {
		ASSERT_EQ(0, kqp_test_qpc_stat(&after));
		/*
		 * 12 QPs on one default PD, whose group held 4 at most: the
		 * rest were made on the call.
		 */
		EXPECT_LT(before.hits, after.hits);
		EXPECT_GE(before.hits + 4, after.hits);
		EXPECT_EQ(before.hits + before.misses + 12,
			  after.hits + after.misses);
	}
}

#ifndef KQP_TEST_REFERENCE
/*
 * The idle cache's QPs are kernel QPs on the device; a process that
 * adopted a group and exits without a QP gives the group back, and
 * qp_cache=0 leaves none.
 */
TEST_F_TIMEOUT(qpc, spares_freed, 120)
{
	struct kqp_test_qpc before, after;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int base, n;
	pid_t pid;

	ASSERT_EQ(0, qpc_teach(_metadata, self->port, self->kqp));
	ASSERT_EQ(0, param_write("qp_cache", "0"));
	ASSERT_EQ(0, qpc_settle(0));
	base = qpc_kernel_res("qp");
	ASSERT_LE(0, base) TH_LOG("no rdma res");
	ASSERT_EQ(0, param_write("qp_cache", "8"));
	ASSERT_EQ(0, qpc_settle(QPC_IDLE));
	EXPECT_EQ(base + QPC_IDLE, qpc_kernel_res("qp"));

	ASSERT_EQ(0, kqp_test_qpc_stat(&before));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Bound: the default PD adopts a group of 4. */
		ch = rdma_create_event_channel();
		id = ch ? resolved(ch, self->port, RDMA_PS_TCP) : NULL;
		_exit(id && id->pd ? 0 : 1);
	}
	ASSERT_EQ(0, child_status(pid));
	ASSERT_EQ(0, qpc_settle(QPC_IDLE));
	EXPECT_EQ(base + QPC_IDLE, qpc_kernel_res("qp"));
	/* The group came back, with its PD. */
	ASSERT_EQ(0, kqp_test_qpc_stat(&after));
	EXPECT_EQ(before.adopted + 1, after.adopted);
	EXPECT_EQ(before.returned + 1, after.returned);
	ASSERT_EQ(0, param_write("qp_cache", "0"));
	ASSERT_EQ(0, qpc_settle(0));
	n = qpc_kernel_res("qp");
	EXPECT_EQ(base, n);
}

/*
 * A process that took every QP of its group and exits leaves nothing in
 * the cache: the empty group's PD goes too, not back to the idle list,
 * where nothing would ever drop it.
 */
TEST_F_TIMEOUT(qpc, exhausted_group_not_kept, 120)
{
	int base, i;
	pid_t pid;

	ASSERT_EQ(0, qpc_teach(_metadata, self->port, self->kqp));
	ASSERT_EQ(0, qpc_settle(QPC_IDLE));
	base = qpc_kernel_res("pd");
	ASSERT_LE(0, base) TH_LOG("no rdma res");
	for (i = 0; i < 3; i++) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			struct qp_pair p[2];
			int r;

			/* Four QPs: the whole group. */
			r = qp_pair_connect(&p[0], self->port + 1 + 2 * i) ||
			    qp_pair_connect(&p[1], self->port + 2 + 2 * i);
			_exit(r);
		}
		ASSERT_EQ(0, child_status(pid));
		ASSERT_EQ(0, qpc_settle(QPC_IDLE));
	}
	EXPECT_EQ(base, qpc_kernel_res("pd"));
}

/* Threads creating and destroying QPs while the parameters change. */
struct qpc_churn {
	uint16_t port;
	int fails;
};

static void *qpc_churn_thread(void *arg)
{
	struct qpc_churn *c = arg;
	struct qp_pair p;
	int i;

	for (i = 0; i < 8; i++) {
		if (qp_pair_connect(&p, c->port + i))
			c->fails++;
		qp_pair_close(&p);
	}
	return NULL;
}

TEST_F_TIMEOUT(qpc, churn_while_resized, 240)
{
	struct qpc_churn c[3];
	pthread_t t[3];
	int i;

	ASSERT_EQ(0, qpc_teach(_metadata, self->port, self->kqp));
	for (i = 0; i < 3; i++) {
		c[i] = (struct qpc_churn){ .port = self->port + 10 + 10 * i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, qpc_churn_thread,
					    &c[i]));
	}
	for (i = 0; i < 40; i++) {
		ASSERT_EQ(0, param_write("qp_cache", i % 2 ? "0" : "8"));
		ASSERT_EQ(0, param_write("qp_cache_batch", i % 3 ? "4" : "1"));
		usleep(20 * 1000);
	}
	for (i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, c[i].fails);
	}
}
#endif

TEST_HARNESS_MAIN
