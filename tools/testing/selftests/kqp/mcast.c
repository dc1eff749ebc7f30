// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Multicast on UD ids, as mckey does it: rdma_create_qp(), then
 * rdma_join_multicast(), then data to the group and from it.  librdmacm
 * attaches the id's QP to the group when it reports MULTICAST_JOIN and
 * detaches it when the group is left; ibv_attach_mcast() and
 * ibv_detach_mcast() do the same by hand.  Built against rdma-core too,
 * which is what says these expectations are librdmacm's.
 */
#include "qp_test.h"

#define GRH	40
#define MSG	64
#define NRECV	8

/* A UD id bound to the bench address, with a QP and receives posted. */
struct member {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	char *buf;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint32_t remote_qpn, remote_qkey;
	union ibv_gid mgid;
	uint16_t mlid;
};

static int member_post_recv(struct member *m, int i)
{
	struct ibv_sge sge = { (uintptr_t)m->buf + i * (GRH + MSG), GRH + MSG,
			       m->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(m->id->qp, &wr, &bad);
}

static int member_open(struct member *m, uint16_t port)
{
	struct sockaddr_in sin = cm_addr(port);
	struct ibv_qp_init_attr attr = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = NRECV, .max_recv_wr = NRECV,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i;

	memset(m, 0, sizeof(*m));
	m->ch = rdma_create_event_channel();
	if (!m->ch)
		return 1;
	if (rdma_create_id(m->ch, &m->id, NULL, RDMA_PS_UDP))
		return 2;
	if (rdma_bind_addr(m->id, (struct sockaddr *)&sin))
		return 3;
	if (rdma_create_qp(m->id, NULL, &attr))
		return 4;
	m->buf = aligned_alloc(4096, 8192);
	if (!m->buf)
		return 5;
	memset(m->buf, 0, 8192);
	m->mr = ibv_reg_mr(m->id->qp->pd, m->buf, 8192,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!m->mr)
		return 6;
	for (i = 0; i < NRECV; i++)
		if (member_post_recv(m, i))
			return 7;
	return 0;
}

static struct sockaddr_in group_addr(const char *group, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port) };

	inet_pton(AF_INET, group, &sin.sin_addr);
	return sin;
}

/* Join @group and wait for MULTICAST_JOIN; keep what sending needs. */
static int member_join(struct member *m, const char *group, uint16_t port)
{
	struct sockaddr_in g = group_addr(group, port);
	struct rdma_cm_event *ev;

	if (rdma_join_multicast(m->id, (struct sockaddr *)&g, m))
		return -1;
	ev = cm_expect(m->ch, RDMA_CM_EVENT_MULTICAST_JOIN);
	if (!ev)
		return -1;
	if (ev->param.ud.private_data != m) {
		rdma_ack_cm_event(ev);
		return -1;
	}
	m->remote_qpn = ev->param.ud.qp_num;
	m->remote_qkey = ev->param.ud.qkey;
	m->mgid = ev->param.ud.ah_attr.grh.dgid;
	m->mlid = ev->param.ud.ah_attr.dlid;
	if (!m->ah)
		m->ah = ibv_create_ah(m->id->qp->pd, &ev->param.ud.ah_attr);
	rdma_ack_cm_event(ev);
	return m->ah ? 0 : -1;
}

static int member_send(struct member *m, char fill)
{
	struct ibv_sge sge = { (uintptr_t)m->buf + 4096, MSG, m->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 100, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct ibv_wc wc;

	memset(m->buf + 4096, fill, MSG);
	wr.wr.ud.ah = m->ah;
	wr.wr.ud.remote_qpn = m->remote_qpn;
	wr.wr.ud.remote_qkey = m->remote_qkey;
	if (ibv_post_send(m->id->qp, &wr, &bad))
		return -1;
	if (qp_poll(m->id->send_cq, &wc, 1, 10000) != 1 ||
	    wc.status != IBV_WC_SUCCESS)
		return -1;
	return 0;
}

/*
 * Wait up to @ms for a message filled with @fill; 1 when it came, 0 if
 * it did not, -1 on a bad receive.  A QP in the group also receives what
 * it sent itself (multicast loops back on the host): other fills are
 * skipped.
 */
static int member_recv(struct member *m, char fill, int ms)
{
	long long end = qp_now_ms() + ms;
	struct ibv_wc wc;
	char *p;
	int i, same;

	for (;;) {
		if (qp_poll(m->id->recv_cq, &wc, 1, end - qp_now_ms()) != 1)
			return 0;
		if (wc.status != IBV_WC_SUCCESS ||
		    wc.byte_len != GRH + MSG || wc.wr_id >= NRECV)
			return -1;
		p = m->buf + wc.wr_id * (GRH + MSG) + GRH;
		for (i = 0, same = 0; i < MSG; i++)
			same += p[i] == fill;
		memset(p, 0, MSG);
		if (member_post_recv(m, wc.wr_id))
			return -1;
		if (same == MSG)
			return 1;
		if (same)
			return -1;
		if (qp_now_ms() > end)
			return 0;
	}
}

static void member_close(struct member *m)
{
	if (m->ah)
		ibv_destroy_ah(m->ah);
	if (m->mr)
		ibv_dereg_mr(m->mr);
	if (m->id) {
		rdma_destroy_qp(m->id);
		rdma_destroy_id(m->id);
	}
	if (m->ch)
		rdma_destroy_event_channel(m->ch);
	free(m->buf);
}

FIXTURE(mc) {
	struct member rx, tx;
	uint16_t port;
};

FIXTURE_SETUP(mc)
{
	self->port = cm_port();
	ASSERT_EQ(0, member_open(&self->rx, self->port));
	ASSERT_EQ(0, member_open(&self->tx, self->port + 1));
}

FIXTURE_TEARDOWN(mc)
{
	member_close(&self->tx);
	member_close(&self->rx);
}

/* mckey: both join, one sends to the group, the other receives. */
TEST_F_TIMEOUT(mc, join_send_receive, 120)
{
	int i;

	ASSERT_EQ(0, member_join(&self->rx, "239.2.3.4", self->port));
	ASSERT_EQ(0, member_join(&self->tx, "239.2.3.4", self->port));
	EXPECT_EQ(0xffffff, self->tx.remote_qpn);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, member_send(&self->tx, 'a' + i));
		EXPECT_EQ(1, member_recv(&self->rx, 'a' + i, 10000));
	}
	/* Both ways: the receiver sends, the sender's QP receives. */
	ASSERT_EQ(0, member_send(&self->rx, 'z'));
	EXPECT_EQ(1, member_recv(&self->tx, 'z', 10000));
}

/* Leaving detaches: the group's traffic stops reaching the QP. */
TEST_F_TIMEOUT(mc, leave_stops_traffic, 120)
{
	struct sockaddr_in g = group_addr("239.2.3.5", self->port);

	ASSERT_EQ(0, member_join(&self->rx, "239.2.3.5", self->port));
	ASSERT_EQ(0, member_join(&self->tx, "239.2.3.5", self->port));
	ASSERT_EQ(0, member_send(&self->tx, 'b'));
	ASSERT_EQ(1, member_recv(&self->rx, 'b', 10000));
	ASSERT_EQ(0, rdma_leave_multicast(self->rx.id, (struct sockaddr *)&g));
	ASSERT_EQ(0, member_send(&self->tx, 'c'));
	EXPECT_EQ(0, member_recv(&self->rx, 'c', 1000));
}

/* ibv_detach_mcast() and ibv_attach_mcast() on the id's QP, by hand. */
TEST_F_TIMEOUT(mc, attach_detach_by_hand, 120)
{
	ASSERT_EQ(0, member_join(&self->rx, "239.2.3.6", self->port));
	ASSERT_EQ(0, member_join(&self->tx, "239.2.3.6", self->port));
	ASSERT_EQ(0, ibv_detach_mcast(self->rx.id->qp, &self->rx.mgid,
				      self->rx.mlid));
	ASSERT_EQ(0, member_send(&self->tx, 'd'));
	EXPECT_EQ(0, member_recv(&self->rx, 'd', 1000));
	ASSERT_EQ(0, ibv_attach_mcast(self->rx.id->qp, &self->rx.mgid,
				      self->rx.mlid));
	ASSERT_EQ(0, member_send(&self->tx, 'e'));
	EXPECT_EQ(1, member_recv(&self->rx, 'e', 10000));
}

/* Only multicast GIDs can be attached to. */
TEST_F(mc, attach_unicast_gid)
{
	union ibv_gid gid;

	ASSERT_EQ(0, ibv_query_gid(self->rx.id->verbs, 1, 0, &gid));
	errno = 0;
	EXPECT_NE(0, ibv_attach_mcast(self->rx.id->qp, &gid, 0));
}

TEST_HARNESS_MAIN
