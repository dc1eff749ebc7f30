// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RDMA CM through librdmacm's API, over the bench's rxe device.
 *
 * This file uses librdmacm's API only.  It is built twice: against libkqp
 * (cm) and against rdma-core's librdmacm (cm_rdmacm), and both run in the
 * guest, so every expectation here is checked against librdmacm itself.
 */
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/wait.h>

#include "cm_test.h"

TEST_F_TIMEOUT(cm, connect_accept_disconnect, 120)
{
	struct rdma_conn_param cp = { .qp_num = 0x111 }, sp = { .qp_num = 0x222 };
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, 8);
	ASSERT_NE(NULL, lid) TH_LOG("listen: %s", strerror(errno));
	EXPECT_NE(NULL, lid->verbs);
	EXPECT_EQ(htons(self->port), rdma_get_src_port(lid));

	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);
	ASSERT_NE(NULL, cid->verbs);
	EXPECT_STREQ(kqp_test_rdma_dev(), ibv_get_device_name(cid->verbs->device));
	EXPECT_EQ(1, cid->port_num);
	EXPECT_EQ(1, cid->route.num_paths);
	EXPECT_EQ(0, cid->route.addr.addr.ibaddr.pkey);
	EXPECT_EQ(AF_INET, cid->route.addr.src_addr.sa_family);
	EXPECT_EQ(0xff, cid->route.addr.addr.ibaddr.sgid.raw[10]);
	EXPECT_EQ(0, memcmp(&cid->route.addr.addr.ibaddr.dgid.raw[12],
			    &cid->route.addr.dst_sin.sin_addr, 4));
	/* One context per device per process. */
	EXPECT_EQ(lid->verbs, cid->verbs);

	cp.private_data = req_data;
	cp.private_data_len = sizeof(req_data);
	ASSERT_EQ(0, rdma_connect(cid, &cp)) TH_LOG("%s", strerror(errno));

	ev = cm_expect(self->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(0, ev->status);
	EXPECT_EQ(lid, ev->listen_id);
	sid = ev->id;
	ASSERT_NE(NULL, sid);
	EXPECT_NE(lid, sid);
	EXPECT_EQ(self->sch, sid->channel);
	EXPECT_EQ(lid->verbs, sid->verbs);
	EXPECT_TRUE(pdata_is(&ev->param.conn, req_data));
	EXPECT_EQ(0x111, ev->param.conn.qp_num);
	EXPECT_EQ(htons(self->port), rdma_get_src_port(sid));
	EXPECT_EQ(rdma_get_src_port(cid), rdma_get_dst_port(sid));
	rdma_ack_cm_event(ev);

	/* What a caller that moves its own QP would be told. */
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_INIT };
	int mask = 0;

	ASSERT_EQ(0, rdma_init_qp_attr(sid, &qa, &mask));
	EXPECT_EQ(IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |
		  IBV_QP_PORT, mask);
	EXPECT_EQ(1, qa.port_num);
	qa.qp_state = IBV_QPS_RTR;
	ASSERT_EQ(0, rdma_init_qp_attr(sid, &qa, &mask));
	EXPECT_EQ(0x111, qa.dest_qp_num);
	EXPECT_TRUE(mask & IBV_QP_DEST_QPN);
	EXPECT_TRUE(mask & IBV_QP_AV);
	EXPECT_TRUE(mask & IBV_QP_RQ_PSN);
	EXPECT_EQ(1, qa.ah_attr.is_global);
	EXPECT_EQ(1, qa.ah_attr.port_num);
	EXPECT_EQ(0, memcmp(qa.ah_attr.grh.dgid.raw,
			    cid->route.addr.addr.ibaddr.sgid.raw, 16));

	sp.private_data = rep_data;
	sp.private_data_len = sizeof(rep_data);
	ASSERT_EQ(0, rdma_accept(sid, &sp)) TH_LOG("%s", strerror(errno));

	/* No QP on the id: the caller completes the handshake itself. */
	ev = cm_expect(self->cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(0, ev->status);
	EXPECT_EQ(cid, ev->id);
	EXPECT_TRUE(pdata_is(&ev->param.conn, rep_data));
	EXPECT_EQ(0x222, ev->param.conn.qp_num);
	rdma_ack_cm_event(ev);
	ASSERT_EQ(0, rdma_establish(cid));

	ev = cm_expect(self->sch, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(sid, ev->id);
	EXPECT_EQ(0, ev->status);
	rdma_ack_cm_event(ev);

	/* Each side disconnects; the passive side's answers the DREQ. */
	ASSERT_EQ(0, rdma_disconnect(cid));
	ev = cm_expect(self->sch, RDMA_CM_EVENT_DISCONNECTED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(sid, ev->id);
	rdma_ack_cm_event(ev);
	ASSERT_EQ(0, rdma_disconnect(sid));
	EXPECT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_DISCONNECTED));

	EXPECT_EQ(0, rdma_destroy_id(sid));
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
	EXPECT_EQ(0, cm_ids_of(getpid()));
}

/*
 * The passive side learns that the connection is up from its first
 * receive completion before the RTU arrives: rdma_notify() with
 * IBV_EVENT_COMM_EST establishes it early.
 */
TEST_F_TIMEOUT(cm, notify_comm_est, 120)
{
	struct rdma_conn_param cp = { .qp_num = 0x121 }, sp = { .qp_num = 0x122 };
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, 1);
	ASSERT_NE(NULL, lid);
	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);
	ASSERT_EQ(0, rdma_connect(cid, &cp));
	ev = cm_expect(self->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_NE(NULL, ev);
	sid = ev->id;
	rdma_ack_cm_event(ev);
	ASSERT_EQ(0, rdma_accept(sid, &sp));
	ASSERT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_CONNECT_RESPONSE));

	/* Before the RTU is sent. */
	EXPECT_EQ(0, rdma_notify(sid, IBV_EVENT_COMM_EST));
	ev = cm_expect(self->sch, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(sid, ev->id);
	rdma_ack_cm_event(ev);
	EXPECT_EQ(0, rdma_establish(cid));

	EXPECT_EQ(0, rdma_destroy_id(sid));
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

/* The server half of two_processes, in a child: 0 when all went well. */
static int serve_one(uint16_t port, int ready_fd)
{
	struct rdma_conn_param sp = { .qp_num = 0x333 };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *sid;
	struct rdma_cm_event *ev;
	int ok;

	ch = rdma_create_event_channel();
	if (!ch)
		return 1;
	lid = listener(ch, port, RDMA_PS_TCP, 1);
	if (!lid)
		return 2;
	if (write(ready_fd, "r", 1) != 1)
		return 3;
	ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (!ev)
		return 4;
	ok = pdata_is(&ev->param.conn, req_data);
	sid = ev->id;
	rdma_ack_cm_event(ev);
	if (!ok)
		return 5;
	sp.private_data = rep_data;
	sp.private_data_len = sizeof(rep_data);
	if (rdma_accept(sid, &sp))
		return 6;
	if (cm_expect_ack(ch, RDMA_CM_EVENT_ESTABLISHED))
		return 7;
	if (cm_expect_ack(ch, RDMA_CM_EVENT_DISCONNECTED))
		return 8;
	if (rdma_disconnect(sid))
		return 9;
	if (rdma_destroy_id(sid) || rdma_destroy_id(lid))
		return 10;
	rdma_destroy_event_channel(ch);
	return 0;
}

TEST_F_TIMEOUT(cm, two_processes, 120)
{
	struct rdma_conn_param cp = { .qp_num = 0x444 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *cid;
	int pfd[2];
	char c;
	pid_t pid;

	ASSERT_EQ(0, pipe(pfd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(pfd[0]);
		_exit(serve_one(self->port, pfd[1]));
	}
	close(pfd[1]);
	ASSERT_EQ(1, read(pfd[0], &c, 1)) TH_LOG("server did not come up");
	close(pfd[0]);

	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);
	cp.private_data = req_data;
	cp.private_data_len = sizeof(req_data);
	ASSERT_EQ(0, rdma_connect(cid, &cp));
	ev = cm_expect(self->cch, RDMA_CM_EVENT_CONNECT_RESPONSE);
	ASSERT_NE(NULL, ev);
	EXPECT_TRUE(pdata_is(&ev->param.conn, rep_data));
	EXPECT_EQ(0x333, ev->param.conn.qp_num);
	rdma_ack_cm_event(ev);
	ASSERT_EQ(0, rdma_establish(cid));
	ASSERT_EQ(0, rdma_disconnect(cid));
	EXPECT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_DISCONNECTED));
	EXPECT_EQ(0, rdma_destroy_id(cid));

	EXPECT_TRUE(kqp_test_child_ok(_metadata, pid, "server"));
}

/*
 * What a child after fork() may do with its parent's event channel:
 * nothing.  The kernel's rdma_cm file refuses every command from a
 * process whose credentials are not the opener's (ib_safe_file_access():
 * a fork child's are a copy), with EACCES; kqp refuses every command on
 * a session from a process other than its maker, with EPERM.  Either
 * way the child opens a channel of its own, and that works.
 */

/* The child's half of fork_child_channels: the step that failed, or 0. */
static int child_channels(struct rdma_event_channel *inherited, uint16_t port)
{
	struct sockaddr_in sin = cm_addr(port);
	struct rdma_conn_param cp = {
		.qp_num = 0x555, .private_data = req_data,
		.private_data_len = sizeof(req_data),
	};
	struct rdma_event_channel *ch;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	if (!rdma_create_id(inherited, &id, NULL, RDMA_PS_TCP) ||
	    errno != CHILD_REFUSED)
		return 1;
	if (!rdma_get_cm_event(inherited, &ev) || errno != CHILD_REFUSED)
		return 2;
	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return 3;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) ||
	    cm_expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED))
		return 4;
	if (rdma_resolve_route(id, 2000) ||
	    cm_expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return 5;
	if (rdma_connect(id, &cp))
		return 6;
	ev = cm_expect(ch, RDMA_CM_EVENT_REJECTED);
	if (!ev)
		return 7;
	rdma_ack_cm_event(ev);
	if (rdma_destroy_id(id))
		return 8;
	rdma_destroy_event_channel(ch);
	return 0;
}

TEST_F_TIMEOUT(cm, fork_child_channels, 120)
{
	struct rdma_cm_id *lid, *sid;
	struct rdma_cm_event *ev;
	pid_t pid;

	lid = listener(self->sch, self->port, RDMA_PS_TCP, 8);
	ASSERT_NE(NULL, lid);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(child_channels(self->cch, self->port));

	ev = cm_expect(self->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_NE(NULL, ev);
	EXPECT_TRUE(pdata_is(&ev->param.conn, req_data));
	EXPECT_EQ(0x555, ev->param.conn.qp_num);
	sid = ev->id;
	rdma_ack_cm_event(ev);
	EXPECT_EQ(0, rdma_reject(sid, NULL, 0));
	EXPECT_TRUE(kqp_test_child_ok(_metadata, pid, "child"));
	EXPECT_EQ(0, rdma_destroy_id(sid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

TEST_F_TIMEOUT(cm, no_listener_rejected, 60)
{
	struct rdma_conn_param cp = { .qp_num = 0x555 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *cid;

	cid = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, cid);
	ASSERT_EQ(0, rdma_connect(cid, &cp));
	ev = cm_expect(self->cch, RDMA_CM_EVENT_REJECTED);
	ASSERT_NE(NULL, ev);
	/* IB_CM_REJ_INVALID_SERVICE_ID: nobody listens on that port. */
	EXPECT_EQ(8, ev->status);
	rdma_ack_cm_event(ev);
	EXPECT_EQ(0, rdma_destroy_id(cid));
}

/* TEST-NET-2: the guest has no route there at all. */
TEST_F(cm, resolve_no_route)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_id *id;

	inet_pton(AF_INET, "198.51.100.1", &sin.sin_addr);
	sin.sin_port = htons(self->port);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	EXPECT_EQ(-1, rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
					2000));
	EXPECT_EQ(ENETUNREACH, errno);
	EXPECT_EQ(NULL, id->verbs);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/* Routed through a netdev that has no RDMA device. */
TEST_F(cm, resolve_no_rdma_device)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	inet_pton(AF_INET, getenv("KQP_TEST_NORDMA_PEER") ?: "203.0.113.5",
		  &sin.sin_addr);
	sin.sin_port = htons(self->port);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
				       2000));
	ev = cm_expect(self->cch, RDMA_CM_EVENT_ADDR_ERROR);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(-ENODEV, ev->status);
	EXPECT_EQ(id, ev->id);
	rdma_ack_cm_event(ev);
	EXPECT_EQ(NULL, id->verbs);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * On the rxe device's subnet, but nobody there: the address resolves
 * (the netdev needs no neighbour discovery), and the connection request
 * goes unanswered until rdma_cm gives up, in about 80 seconds.  Those 80
 * seconds are rdma_cm's retries (fixed in cma.c), the same with either
 * library and on every kernel, so each build waits for them on one
 * kernel only, where the bench asks for it: the reference build
 * (rdma-core) with KQP_TEST_SLOW_REFERENCE, which guest.sh sets on
 * 6.12-rt (make check boots it, CI does not: the reference says what
 * rdma_cm does, not what kqp does); kqp's with KQP_TEST_SLOW, which it
 * sets on the debug kernel, where KASAN and kmemleak watch the id's end.
 */
TEST_F_TIMEOUT(cm, connect_nobody_unreachable, 240)
{
	struct rdma_conn_param cp = { .qp_num = 0x101 };
	struct sockaddr_in sin = cm_addr(self->port);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

#ifdef KQP_TEST_REFERENCE
	if (!getenv("KQP_TEST_SLOW_REFERENCE"))
		SKIP(return, "rdma_cm's own 80 s timeout; the reference waits for it on 6.12-rt only");
#else
	if (!getenv("KQP_TEST_SLOW"))
		SKIP(return, "rdma_cm's own 80 s timeout; kqp's build waits for it on the debug kernel only");
#endif

	inet_pton(AF_INET, "192.0.2.77", &sin.sin_addr);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
				       2000));
	ASSERT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	ASSERT_EQ(0, rdma_resolve_route(id, 2000));
	ASSERT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	ASSERT_EQ(0, rdma_connect(id, &cp));
	ev = cm_next(self->cch, 200000);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(RDMA_CM_EVENT_UNREACHABLE, ev->event);
	EXPECT_EQ(-ETIMEDOUT, ev->status);
	rdma_ack_cm_event(ev);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

TEST_F(cm, wrong_state)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct rdma_cm_id *id, *lid;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	EXPECT_EQ(-1, rdma_bind_addr(id, (struct sockaddr *)&sin));
	EXPECT_EQ(EINVAL, errno);
	/* No address family at all. */
	sin.sin_family = AF_UNIX;
	EXPECT_EQ(-1, rdma_bind_addr(id, (struct sockaddr *)&sin));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, rdma_destroy_id(id));

	/* Accepting on a listener is not accepting a request. */
	lid = listener(self->sch, self->port + 1000, RDMA_PS_TCP, 1);
	ASSERT_NE(NULL, lid);
	struct rdma_conn_param p = { .qp_num = 1 };
	EXPECT_EQ(-1, rdma_accept(lid, &p));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

TEST_F(cm, set_option)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct rdma_cm_id *id;
	uint8_t tos = 32, timeout = 14;
	int one = 1;

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	EXPECT_EQ(0, rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
				     &tos, sizeof(tos)));
	EXPECT_EQ(0, rdma_set_option(id, RDMA_OPTION_ID,
				     RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	EXPECT_EQ(0, rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY,
				     &one, sizeof(one)));
	EXPECT_EQ(0, rdma_set_option(id, RDMA_OPTION_ID,
				     RDMA_OPTION_ID_ACK_TIMEOUT, &timeout,
				     sizeof(timeout)));
	/* Wrong size, unknown option, unknown level. */
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS,
				      &one, sizeof(one)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_ID, 99, &one,
				      sizeof(one)));
	EXPECT_EQ(ENOSYS, errno);
	EXPECT_EQ(-1, rdma_set_option(id, 77, 0, &one, sizeof(one)));
	EXPECT_EQ(ENOSYS, errno);
	/* REUSEADDR may still be turned on when bound, not once listening. */
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	EXPECT_EQ(0, rdma_set_option(id, RDMA_OPTION_ID,
				     RDMA_OPTION_ID_REUSEADDR, &one, sizeof(one)));
	ASSERT_EQ(0, rdma_listen(id, 1));
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_ID,
				      RDMA_OPTION_ID_REUSEADDR, &one,
				      sizeof(one)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * A route the caller resolved itself (RDMA_OPTION_IB_PATH, what rsockets'
 * RDMA_ROUTE and ibacm use): ROUTE_RESOLVED follows, and a connection
 * request goes out on it.
 */
TEST_F_TIMEOUT(cm, ib_path, 120)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct rdma_conn_param cp = { .qp_num = 0x111 };
	struct ibv_path_data d[2];
	struct rdma_cm_id *ref, *id, *lid, *sid;
	struct rdma_cm_event *ev;

	ref = resolved(self->cch, self->port, RDMA_PS_TCP);
	ASSERT_NE(NULL, ref);
	ASSERT_EQ(1, ref->route.num_paths);
	cm_path_data(&d[0], ref->route.path_rec, 0);
	cm_path_data(&d[1], ref->route.path_rec, CM_PATH_FLAGS);

	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_TCP));
	/* No address resolved yet. */
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      &d[1], sizeof(d[1])));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000));
	ASSERT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_ADDR_RESOLVED));
	/* A part of a record; no primary bidirectional one; no such option. */
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      &d[1], sizeof(d[1]) - 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      &d[0], sizeof(d[0])));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, 99, &d[1],
				      sizeof(d[1])));
	EXPECT_EQ(ENOSYS, errno);
	/* The flagged one of the two is taken. */
	ASSERT_EQ(0, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				     d, sizeof(d))) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	ASSERT_EQ(1, id->route.num_paths);
	EXPECT_EQ(0, memcmp(&id->route.path_rec->dgid, &ref->route.path_rec->dgid,
			    sizeof(union ibv_gid)));
	EXPECT_EQ(ref->route.path_rec->mtu, id->route.path_rec->mtu);
	/* The route is resolved now: neither way again. */
	EXPECT_EQ(-1, rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
				      &d[1], sizeof(d[1])));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_resolve_route(id, 2000));
	EXPECT_EQ(EINVAL, errno);

	/* A connection request goes out on the given path. */
	lid = listener(self->sch, self->port, RDMA_PS_TCP, 8);
	ASSERT_NE(NULL, lid);
	cp.private_data = req_data;
	cp.private_data_len = sizeof(req_data);
	ASSERT_EQ(0, rdma_connect(id, &cp)) TH_LOG("%s", strerror(errno));
	ev = cm_expect(self->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_NE(NULL, ev);
	EXPECT_TRUE(pdata_is(&ev->param.conn, req_data));
	sid = ev->id;
	rdma_ack_cm_event(ev);
	EXPECT_EQ(0, rdma_reject(sid, NULL, 0));
	ev = cm_expect(self->cch, RDMA_CM_EVENT_REJECTED);
	EXPECT_NE(NULL, ev);
	if (ev)
		rdma_ack_cm_event(ev);
	EXPECT_EQ(0, rdma_destroy_id(sid));
	EXPECT_EQ(0, rdma_destroy_id(id));
	EXPECT_EQ(0, rdma_destroy_id(lid));
	EXPECT_EQ(0, rdma_destroy_id(ref));
}

TEST_F(cm, nonblocking_channel)
{
	struct rdma_cm_event *ev = NULL;
	struct pollfd pfd = { .fd = self->cch->fd, .events = POLLIN };
	int flags = fcntl(self->cch->fd, F_GETFL);

	ASSERT_EQ(0, fcntl(self->cch->fd, F_SETFL, flags | O_NONBLOCK));
	EXPECT_EQ(-1, rdma_get_cm_event(self->cch, &ev));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	EXPECT_EQ(-1, rdma_get_cm_event(self->cch, NULL));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rdma_ack_cm_event(NULL));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F_TIMEOUT(cm, migrate, 60)
{
	struct sockaddr_in sin = cm_addr(self->port);
	struct pollfd pfd = { .fd = self->sch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	ASSERT_EQ(0, rdma_create_id(self->sch, &id, NULL, RDMA_PS_TCP));
	ASSERT_EQ(0, rdma_migrate_id(id, self->cch));
	EXPECT_EQ(self->cch, id->channel);
	ASSERT_EQ(0, rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000));
	ev = cm_expect(self->cch, RDMA_CM_EVENT_ADDR_RESOLVED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(id, ev->id);
	rdma_ack_cm_event(ev);
	EXPECT_EQ(0, poll(&pfd, 1, 0));

	/* To a channel of its own, and a synchronous id cannot lose it. */
	ASSERT_EQ(0, rdma_migrate_id(id, NULL));
	EXPECT_NE(self->cch, id->channel);
	EXPECT_EQ(-1, rdma_migrate_id(id, NULL));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, rdma_migrate_id(id, self->sch));
	EXPECT_EQ(self->sch, id->channel);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/*
 * chrooted_channels' child: channels and devices opened, then chroot() to
 * @dir, where no /dev is.  Returns the step that failed, or 0.
 */
static int chrooted_work(const char *dir, uint16_t port)
{
	struct sockaddr_in sin = cm_addr(port);
	struct rdma_event_channel *ch, *ch2;
	struct ibv_context **devs;
	struct rdma_cm_id *id;

	ch = rdma_create_event_channel();
	ch2 = rdma_create_event_channel();
	/* librdmacm opens each device's verbs context here, by its path. */
	devs = rdma_get_devices(NULL);
	if (!ch || !ch2 || !devs)
		return 1;
	if (chroot(dir) || chdir("/"))
		return 2;
	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		return 3;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000))
		return 4;
	if (cm_expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED))
		return 5;
	if (rdma_migrate_id(id, ch2))
		return 6;
	if (rdma_resolve_route(id, 2000))
		return 7;
	if (cm_expect_ack(ch2, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return 8;
	if (rdma_destroy_id(id))
		return 9;
	rdma_free_devices(devs);
	rdma_destroy_event_channel(ch2);
	rdma_destroy_event_channel(ch);
	return 0;
}

/*
 * A channel is its fd, not a path: after chroot() (or a change of mount
 * namespace) the channels a process opened before still create ids,
 * migrate them and report their events.
 */
TEST_F_TIMEOUT(cm, chrooted_channels, 60)
{
	char dir[] = "/tmp/kqp-chroot-XXXXXX";
	bool ok;
	pid_t pid;

	if (geteuid())
		SKIP(return, "chroot() needs root");
	ASSERT_NE(NULL, mkdtemp(dir));
	/* In a child of its own: the harness's process keeps its root. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(chrooted_work(dir, self->port));
	ok = kqp_test_child_ok(_metadata, pid, "child");
	rmdir(dir);
	EXPECT_TRUE(ok);
}

/* Server of sync_endpoints, in a thread: rdma_get_request() and friends. */
struct sync_server {
	uint16_t port;
	struct rdma_cm_id *lid;
	int ready;
	int result;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *sync_serve(void *arg)
{
	struct sync_server *s = arg;
	struct rdma_addrinfo hints = {
		.ai_flags = RAI_PASSIVE,
		.ai_port_space = RDMA_PS_TCP,
	}, *res;
	struct rdma_conn_param sp = {
		.qp_num = 0x666,
		.private_data = rep_data,
		.private_data_len = sizeof(rep_data),
	};
	struct rdma_cm_event *ev;
	struct rdma_cm_id *sid;
	char port[16];

	s->result = 1;
	snprintf(port, sizeof(port), "%u", s->port);
	if (rdma_getaddrinfo(getenv("KQP_TEST_ADDR") ?: "192.0.2.1", port,
			     &hints, &res))
		goto out;
	if (rdma_create_ep(&s->lid, res, NULL, NULL))
		goto out_free;
	s->result = 2;
	if (rdma_listen(s->lid, 1))
		goto out_free;
	pthread_mutex_lock(&s->lock);
	s->ready = 1;
	pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);

	s->result = 3;
	if (rdma_get_request(s->lid, &sid))
		goto out_free;
	s->result = 4;
	if (!sid->event || sid->event->event != RDMA_CM_EVENT_CONNECT_REQUEST ||
	    !pdata_is(&sid->event->param.conn, req_data))
		goto out_free;
	/* A synchronous listener gives each request a channel of its own. */
	if (sid->channel == s->lid->channel)
		goto out_free;
	s->result = 5;
	if (rdma_accept(sid, &sp))	/* returns once ESTABLISHED */
		goto out_free;
	s->result = 6;
	if (rdma_get_cm_event(sid->channel, &ev))
		goto out_free;
	if (ev->event != RDMA_CM_EVENT_DISCONNECTED) {
		rdma_ack_cm_event(ev);
		goto out_free;
	}
	rdma_ack_cm_event(ev);
	rdma_destroy_ep(sid);
	s->result = 0;
out_free:
	rdma_freeaddrinfo(res);
out:
	if (s->result) {
		pthread_mutex_lock(&s->lock);
		s->ready = -1;
		pthread_cond_signal(&s->cond);
		pthread_mutex_unlock(&s->lock);
	}
	return NULL;
}

TEST_F_TIMEOUT(cm, sync_endpoints, 120)
{
	struct sync_server s = { .port = self->port };
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct rdma_conn_param cp = { .qp_num = 0x777 };
	struct rdma_cm_id *cid;
	pthread_t t;
	char port[16];

	pthread_mutex_init(&s.lock, NULL);
	pthread_cond_init(&s.cond, NULL);
	ASSERT_EQ(0, pthread_create(&t, NULL, sync_serve, &s));
	pthread_mutex_lock(&s.lock);
	while (!s.ready)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	ASSERT_EQ(1, s.ready) TH_LOG("server failed at step %d", s.result);

	snprintf(port, sizeof(port), "%u", self->port);
	ASSERT_EQ(0, rdma_getaddrinfo(getenv("KQP_TEST_ADDR") ?: "192.0.2.1",
				      port, &hints, &res));
	EXPECT_EQ(RDMA_PS_TCP, res->ai_port_space);
	EXPECT_EQ(AF_INET, res->ai_family);
	EXPECT_EQ(sizeof(struct sockaddr_in), res->ai_dst_len);
	/* Resolves address and route before it returns. */
	ASSERT_EQ(0, rdma_create_ep(&cid, res, NULL, NULL));
	rdma_freeaddrinfo(res);
	ASSERT_NE(NULL, cid->verbs);
	cp.private_data = req_data;
	cp.private_data_len = sizeof(req_data);
	/* Returns with CONNECT_RESPONSE: the id has no QP. */
	ASSERT_EQ(0, rdma_connect(cid, &cp)) TH_LOG("%s", strerror(errno));
	ASSERT_NE(NULL, cid->event);
	EXPECT_EQ(RDMA_CM_EVENT_CONNECT_RESPONSE, cid->event->event);
	EXPECT_TRUE(pdata_is(&cid->event->param.conn, rep_data));
	EXPECT_EQ(0x666, cid->event->param.conn.qp_num);
	ASSERT_EQ(0, rdma_establish(cid));
	ASSERT_EQ(0, rdma_disconnect(cid));
	EXPECT_EQ(RDMA_CM_EVENT_DISCONNECTED, cid->event->event);
	rdma_destroy_ep(cid);

	pthread_join(t, NULL);
	EXPECT_EQ(0, s.result) TH_LOG("server failed at step %d", s.result);
	rdma_destroy_ep(s.lid);
	EXPECT_EQ(0, cm_ids_of(getpid()));
}

TEST_F_TIMEOUT(cm, udp_sidr, 60)
{
	struct rdma_conn_param cp = { 0 }, sp = { .qp_num = 0x999 };
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;

	lid = listener(self->sch, self->port, RDMA_PS_UDP, 4);
	ASSERT_NE(NULL, lid);
	EXPECT_EQ(IBV_QPT_UD, lid->qp_type);
	cid = resolved(self->cch, self->port, RDMA_PS_UDP);
	ASSERT_NE(NULL, cid);
	cp.private_data = req_data;
	cp.private_data_len = sizeof(req_data);
	ASSERT_EQ(0, rdma_connect(cid, &cp));

	ev = cm_expect(self->sch, RDMA_CM_EVENT_CONNECT_REQUEST);
	ASSERT_NE(NULL, ev);
	sid = ev->id;
	EXPECT_EQ(IBV_QPT_UD, sid->qp_type);
	EXPECT_TRUE(ev->param.ud.private_data_len >= sizeof(req_data) &&
		    !memcmp(ev->param.ud.private_data, req_data,
			    sizeof(req_data)));
	rdma_ack_cm_event(ev);
	ASSERT_EQ(0, rdma_accept(sid, &sp));

	ev = cm_expect(self->cch, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(0x999, ev->param.ud.qp_num);
	EXPECT_EQ(RDMA_UDP_QKEY, ev->param.ud.qkey);
	EXPECT_EQ(1, ev->param.ud.ah_attr.is_global);
	EXPECT_EQ(1, ev->param.ud.ah_attr.port_num);
	rdma_ack_cm_event(ev);

	EXPECT_EQ(0, rdma_destroy_id(sid));
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

/*
 * A synchronous UD listener: rdma_accept() answers the request and leaves
 * its event in sid->event, as librdmacm does, so the server can still
 * read param.ud; rdma_destroy_id() acks it.
 */
TEST_F_TIMEOUT(cm, udp_sidr_sync_accept_keeps_event, 60)
{
	struct rdma_conn_param cp = { 0 }, sp = { .qp_num = 0x998 };
	struct sockaddr_in sin = cm_addr(self->port);
	struct rdma_cm_id *lid, *cid, *sid;
	struct rdma_cm_event *ev;

	ASSERT_EQ(0, rdma_create_id(NULL, &lid, NULL, RDMA_PS_UDP));
	ASSERT_EQ(0, rdma_bind_addr(lid, (struct sockaddr *)&sin));
	ASSERT_EQ(0, rdma_listen(lid, 4));
	cid = resolved(self->cch, self->port, RDMA_PS_UDP);
	ASSERT_NE(NULL, cid);
	cp.private_data = req_data;
	cp.private_data_len = sizeof(req_data);
	ASSERT_EQ(0, rdma_connect(cid, &cp));

	ASSERT_EQ(0, rdma_get_request(lid, &sid)) TH_LOG("%s", strerror(errno));
	ev = sid->event;
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(RDMA_CM_EVENT_CONNECT_REQUEST, ev->event);
	ASSERT_EQ(0, rdma_accept(sid, &sp));
	ASSERT_EQ(ev, sid->event);
	EXPECT_EQ(RDMA_CM_EVENT_CONNECT_REQUEST, sid->event->event);
	EXPECT_TRUE(sid->event->param.ud.private_data_len >= sizeof(req_data) &&
		    !memcmp(sid->event->param.ud.private_data, req_data,
			    sizeof(req_data)));

	ev = cm_expect(self->cch, RDMA_CM_EVENT_ESTABLISHED);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(0x998, ev->param.ud.qp_num);
	rdma_ack_cm_event(ev);

	EXPECT_EQ(0, rdma_destroy_id(sid));
	EXPECT_EQ(0, rdma_destroy_id(cid));
	EXPECT_EQ(0, rdma_destroy_id(lid));
}

TEST_F_TIMEOUT(cm, multicast, 60)
{
	struct sockaddr_in sin = cm_addr(self->port), grp = cm_addr(0);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	int ctx;

	inet_pton(AF_INET, "239.1.2.3", &grp.sin_addr);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_UDP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	ASSERT_EQ(0, rdma_join_multicast(id, (struct sockaddr *)&grp, &ctx));
	ev = cm_expect(self->cch, RDMA_CM_EVENT_MULTICAST_JOIN);
	ASSERT_NE(NULL, ev);
	EXPECT_EQ(0, ev->status);
	EXPECT_EQ(id, ev->id);
	EXPECT_EQ(&ctx, ev->param.ud.private_data);
	EXPECT_EQ(0xffffff, ev->param.ud.qp_num);
	EXPECT_EQ(1, ev->param.ud.ah_attr.is_global);
	rdma_ack_cm_event(ev);

	EXPECT_EQ(0, rdma_leave_multicast(id, (struct sockaddr *)&grp));
	EXPECT_EQ(-1, rdma_leave_multicast(id, (struct sockaddr *)&grp));
	EXPECT_EQ(EADDRNOTAVAIL, errno);
	EXPECT_EQ(0, rdma_destroy_id(id));
}

/* Joined and never left: destroying the id leaves for it. */
TEST_F_TIMEOUT(cm, multicast_destroy_joined, 60)
{
	struct sockaddr_in sin = cm_addr(self->port), grp = cm_addr(0);
	struct rdma_cm_id *id;

	inet_pton(AF_INET, "239.1.2.4", &grp.sin_addr);
	ASSERT_EQ(0, rdma_create_id(self->cch, &id, NULL, RDMA_PS_UDP));
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	ASSERT_EQ(0, rdma_join_multicast(id, (struct sockaddr *)&grp, NULL));
	EXPECT_EQ(0, cm_expect_ack(self->cch, RDMA_CM_EVENT_MULTICAST_JOIN));
	EXPECT_EQ(0, rdma_destroy_id(id));
	EXPECT_EQ(0, cm_ids_of(getpid()));
}

TEST(rdma_getaddrinfo_rules)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE }, *res;
	const struct sockaddr_in *sin;

	hints.ai_port_space = RDMA_PS_TCP;
	ASSERT_EQ(0, rdma_getaddrinfo("192.0.2.1", "7471", &hints, &res));
	EXPECT_EQ(RAI_PASSIVE, res->ai_flags & RAI_PASSIVE);
	EXPECT_EQ(AF_INET, res->ai_family);
	EXPECT_EQ(RDMA_PS_TCP, res->ai_port_space);
	ASSERT_EQ(sizeof(*sin), res->ai_src_len);
	sin = (const struct sockaddr_in *)res->ai_src_addr;
	EXPECT_EQ(htons(7471), sin->sin_port);
	EXPECT_EQ(0, res->ai_dst_len);
	rdma_freeaddrinfo(res);

	hints.ai_flags = RAI_NUMERICHOST;
	EXPECT_EQ(EAI_NONAME, rdma_getaddrinfo("not-a-number", "7471", &hints,
					       &res));
	EXPECT_EQ(-1, rdma_getaddrinfo(NULL, NULL, NULL, &res));
	EXPECT_EQ(EINVAL, errno);
}

TEST(get_devices)
{
	struct rdma_event_channel *ch;
	struct sockaddr_in sin = cm_addr(cm_port());
	struct ibv_context **list, *mine = NULL;
	struct rdma_cm_id *id;
	int n = -1, i;

	list = rdma_get_devices(&n);
	ASSERT_NE(NULL, list);
	ASSERT_LE(1, n);
	EXPECT_EQ(NULL, list[n]);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]->device),
			    kqp_test_rdma_dev()))
			mine = list[i];
	ASSERT_NE(NULL, mine);

	ch = rdma_create_event_channel();
	ASSERT_NE(NULL, ch);
	ASSERT_EQ(0, rdma_create_id(ch, &id, NULL, RDMA_PS_TCP));
	EXPECT_EQ(NULL, id->verbs);
	ASSERT_EQ(0, rdma_bind_addr(id, (struct sockaddr *)&sin));
	EXPECT_EQ(mine, id->verbs);
	EXPECT_EQ(0, rdma_destroy_id(id));
	rdma_destroy_event_channel(ch);
	rdma_free_devices(list);
}

TEST_HARNESS_MAIN
