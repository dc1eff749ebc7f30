// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RDMA CM through libkqp where kqp does what librdmacm cannot: these
 * cases crash librdmacm, hang it, or behave differently on purpose, so
 * they are not in cm.c (which also runs against rdma-core).
 */
#include <fcntl.h>
#include <sys/wait.h>

#include "cm_test.h"

/*
 * 32 connection requests against a backlog of 4, none reported until the
 * rest were turned away: exactly 4 reach the listener, 28 are rejected at
 * once (consumer-defined reject, 28), nothing is lost and nothing is left
 * behind.  librdmacm's ucma drops the extras silently instead, and its
 * peers retry until they time out.
 */
TEST_F_TIMEOUT(cm, backlog_bounded, 300)
{
	enum { N = 32, BACKLOG = 4 };
	struct rdma_conn_param cp = { .qp_num = 0x888 };
	struct rdma_cm_id *lid, *cid[N], *sid[N];
	int rejected = 0, responses = 0, requests = 0, other = 0, i;
	struct rdma_cm_event *ev;
	int flags;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, BACKLOG);
	ASSERT_NE(NULL, lid);
	for (i = 0; i < N; i++) {
		cid[i] = resolved(self->cch, self->port, RDMA_PS_TCP);
		ASSERT_NE(NULL, cid[i]) TH_LOG("client %d", i);
	}
	/* ib_cm treats a second request from the same QP as stale. */
	for (i = 0; i < N; i++) {
		cp.qp_num = 0x800 + i;
		ASSERT_EQ(0, rdma_connect(cid[i], &cp)) TH_LOG("client %d", i);
	}

	while (rejected < N - BACKLOG) {
		ev = cm_next(self->cch, CM_TIMEOUT_MS);
		ASSERT_NE(NULL, ev) TH_LOG("%d rejected so far", rejected);
		if (ev->event == RDMA_CM_EVENT_REJECTED && ev->status == 28)
			rejected++;
		else
			other++;
		rdma_ack_cm_event(ev);
	}
	EXPECT_EQ(0, other);

	flags = fcntl(self->sch->fd, F_GETFL);
	ASSERT_EQ(0, fcntl(self->sch->fd, F_SETFL, flags | O_NONBLOCK));
	while ((ev = cm_next(self->sch, 2000))) {
		ASSERT_EQ(RDMA_CM_EVENT_CONNECT_REQUEST, ev->event);
		ASSERT_GT(N, requests);
		sid[requests++] = ev->id;
		rdma_ack_cm_event(ev);
	}
	EXPECT_EQ(BACKLOG, requests);

	for (i = 0; i < requests; i++) {
		cp.qp_num = 0x900 + i;
		EXPECT_EQ(0, rdma_accept(sid[i], &cp));
	}
	while (responses < requests) {
		ev = cm_next(self->cch, CM_TIMEOUT_MS);
		ASSERT_NE(NULL, ev);
		EXPECT_EQ(RDMA_CM_EVENT_CONNECT_RESPONSE, ev->event);
		if (ev->event == RDMA_CM_EVENT_CONNECT_RESPONSE)
			EXPECT_EQ(0, rdma_establish(ev->id));
		responses++;
		rdma_ack_cm_event(ev);
	}

	for (i = 0; i < requests; i++)
		EXPECT_EQ(0, rdma_destroy_id(sid[i]));
	for (i = 0; i < N; i++)
		EXPECT_EQ(0, rdma_destroy_id(cid[i]));
	EXPECT_EQ(0, rdma_destroy_id(lid));
	EXPECT_EQ(0, cm_ids_of(getpid()));
}

/*
 * rdma link delete while an id is bound: DEVICE_REMOVAL arrives, the id
 * refuses further work with ENXIO (as ucma), and it can still be
 * destroyed.  With rdma-core on rxe this cannot be done in one process:
 * rdma link delete waits until every process that has the device open
 * through uverbs exits.  The device is put back for the tests that follow.
 */
TEST_F_TIMEOUT(cm, device_removal, 120)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct rdma_cm_id *id, *cid;
	struct rdma_cm_event *ev;
	int rc;

	ASSERT_EQ(0, rdma_create_id(self->sch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	ASSERT_EQ(0, rdma_listen(id, 4));
	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);

	rc = kqp_test_sh("rdma link delete %s", kqp_test_rdma_dev());
	ev = cm_next(self->sch, CM_TIMEOUT_MS);
	ASSERT_EQ(0, kqp_test_sh("rdma link add %s type rxe netdev %s",
				 kqp_test_rdma_dev(), kqp_test_netdev()));
	ASSERT_EQ(0, rc);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(RDMA_CM_EVENT_DEVICE_REMOVAL, ev->event);
	EXPECT_EQ(id, ev->id);
	rdma_ack_cm_event(ev);
	ev = cm_next(self->cch, CM_TIMEOUT_MS);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(RDMA_CM_EVENT_DEVICE_REMOVAL, ev->event);
	EXPECT_EQ(cid, ev->id);
	rdma_ack_cm_event(ev);

	EXPECT_EQ(-1, rdma_listen(id, 4));
	EXPECT_EQ(ENXIO, errno);
	EXPECT_EQ(0, rdma_destroy_id(id));
	EXPECT_EQ(0, rdma_destroy_id(cid));
}

/* librdmacm dereferences id->verbs in these and crashes. */
TEST_F(cm, unbound_id_einval)
{
	struct rdma_conn_param cp = { .qp_num = 1 };
	struct rdma_cm_id *id;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	EXPECT_EQ(-1, rdma_resolve_route(id, 1000));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_connect(id, &cp));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_connect(id, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_disconnect(id));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_accept(id, &cp));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

TEST_F(cm, route_after_addr_error)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *id;

	inet_pton(AF_INET, getenv("KQP_TEST_NORDMA_PEER") ?: "203.0.113.5",
		  &sin.sin_addr);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
				       2000));
	EXPECT_NE(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_ADDR_ERROR));
	EXPECT_EQ(-1, rdma_resolve_route(id, 1000));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * RDMA_OPTION_IB_PATH reads at most KQP_OPTION_IB_PATH_MAX records, so no
 * length a caller gives sizes anything in the kernel; ucma takes any
 * number.  A record the kernel cannot read is EFAULT, and leaves the id
 * as it was.
 */
TEST_F(cm, ib_path_bounds)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct ibv_path_data d[KQP_OPTION_IB_PATH_MAX + 1];
	struct rdma_cm_id *ref, *id;
	size_t i, n = KQP_OPTION_IB_PATH_MAX;

	ref = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, ref);
	for (i = 0; i <= n; i++)
		cm_path_data(&d[i], ref->route.path_rec, 0);
	d[n].flags = CM_PATH_FLAGS;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000));
	ASSERT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	/* The flagged record is one past the most read: none found. */
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      d, sizeof(d)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      d, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      (void *)8, sizeof(d[0])));
	EXPECT_EQ(EFAULT, errno);
	/*
	 * A packet lifetime past 31 ib_cm would shift by at the connect
	 * (UBSAN), as with ACK_TIMEOUT; an MTU that is none of IB's.
	 */
	d[0].flags = CM_PATH_FLAGS;
	d[0].path.packetlifetime = 0x80 | 63;
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      d, sizeof(d[0])));
	EXPECT_EQ(EINVAL, errno);
	cm_path_data(&d[0], ref->route.path_rec, CM_PATH_FLAGS);
	d[0].path.mtu = 0x80;
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      d, sizeof(d[0])));
	EXPECT_EQ(EINVAL, errno);
	d[0].flags = 0;
	/* The last of the most it reads. */
	d[n - 1].flags = CM_PATH_FLAGS;
	EXPECT_EQ(0, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				     d, n * sizeof(d[0])));
	EXPECT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	EXPECT_EQ(0, rdma_destroy_id(id));
	EXPECT_EQ(0, rdma_destroy_id(ref));
}

/*
 * A channel whose fd is not /dev/kqp's is refused before any ioctl is
 * sent to it; librdmacm would write its command into whatever it is.
 */
TEST(foreign_channel)
{
	struct rdma_event_channel fake, *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int pfd[2];

	ASSERT_EQ(0, pipe(pfd));
	fake.fd = pfd[0];
	EXPECT_EQ(-1, rdma_create_id(&fake, &id, NULL, RDMA_PS_TCP));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_get_cm_event(&fake, &ev));
	EXPECT_EQ(EINVAL, errno);

	ch = rdma_create_event_channel();
	ASSERT_NE(NULL, ch);
	ASSERT_EQ(0, rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	EXPECT_EQ(-1, rdma_migrate_id(id, &fake));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(ch, id->channel);

	close(pfd[0]);
	close(pfd[1]);
	EXPECT_EQ(-1, rdma_create_id(&fake, &id, NULL, RDMA_PS_TCP));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, rdma_create_id(ch, NULL, NULL, RDMA_PS_TCP));
	EXPECT_EQ(EINVAL, errno);
	/* An unknown port space is the kernel's EINVAL. */
	EXPECT_EQ(-1, rdma_create_id(ch, &id, NULL, 0x4242));
	EXPECT_EQ(EINVAL, errno);

	EXPECT_EQ(0, rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
}

TEST_HARNESS_MAIN
