// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Datagram rsockets (rsocket(SOCK_DGRAM)): two of them exchanging
 * datagrams, checked byte by byte, with the sender's address reported
 * and most of them carried by RDMA (rxe's packet count); rdma-core's wire
 * as a plain UDP socket speaks it (a DATA answered with a CTRL that names
 * the rsocket's QP, its data delivered with the UDP sender's address);
 * hostile UDP datagrams dropped; a datagram too long for the path
 * refused.  rdma-core's datagram rsockets cannot make a QP on RoCE (their
 * loopback address handle has no GRH, which the kernel refuses), so there
 * is no reference build: the wire layout is written out here from
 * rdma-core's rsocket.c, not taken from libkqp.
 */
#include <endian.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/socket.h>
#include <rdma/rsocket.h>

#include "cm_test.h"

#define WIRE_TAG	0x55555555u

struct wire_udp {
	uint32_t tag;
	uint8_t version;
	uint8_t op;
	uint8_t length;
	uint8_t reserved;
	uint32_t qpn;
	uint8_t addr[4];
} __attribute__((packed));

static int dg_bound(struct sockaddr_in *sin)
{
	int s = rsocket(AF_INET, SOCK_DGRAM, 0);

	if (s >= 0 && rbind(s, (struct sockaddr *)sin, sizeof(*sin))) {
		rclose(s);
		return -1;
	}
	return s;
}

/* rxe's sent packets, or -1 where the counter is not there. */
static long long rxe_sent(void)
{
	char path[256];

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/sent_pkts",
		 kqp_test_rdma_dev());
	return kqp_test_read_ll(path);
}

/* A datagram on @s within 5 s, from rrecvfrom(); -1 on timeout. */
static ssize_t dg_recv(int s, void *buf, size_t len, struct sockaddr_in *from)
{
	struct pollfd p = { .fd = s, .events = POLLIN };
	socklen_t fl = sizeof(*from);

	if (rpoll(&p, 1, 5000) != 1)
		return -1;
	return rrecvfrom(s, buf, len, MSG_DONTWAIT, (struct sockaddr *)from,
			 from ? &fl : NULL);
}

/*
 * A connected client and a bound server, 100 round trips of 512 bytes:
 * each datagram whole and in its place, the server told the client's
 * address and answering to it; after the first exchanges over UDP, RDMA
 * carries them: rxe sends at least a packet per datagram.
 */
TEST(round_trips)
{
	uint16_t port = cm_port();
	struct sockaddr_in sin = cm_addr(port), me, from;
	uint8_t out[512], in[600];
	socklen_t len = sizeof(me);
	long long pkts = rxe_sent();
	int s, c, i, j, n;

	s = dg_bound(&sin);
	ASSERT_LE(0, s);
	c = rsocket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, rconnect(c, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(0, rgetsockname(c, (struct sockaddr *)&me, &len));
	for (i = 0; i < 100; i++) {
		for (j = 0; j < (int)sizeof(out); j++)
			out[j] = (uint8_t)(i * 31 + j);
		ASSERT_EQ(sizeof(out), rsend(c, out, sizeof(out), 0));
		n = dg_recv(s, in, sizeof(in), &from);
		ASSERT_EQ(sizeof(out), n) TH_LOG("round %d", i);
		ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
		ASSERT_EQ(me.sin_port, from.sin_port);
		ASSERT_EQ(sin.sin_addr.s_addr, from.sin_addr.s_addr);
		in[0] ^= 0xff;
		ASSERT_EQ(n, rsendto(s, in, n, 0, (struct sockaddr *)&from,
				     sizeof(from)));
		n = dg_recv(c, in, sizeof(in), NULL);
		ASSERT_EQ(sizeof(out), n) TH_LOG("reply %d", i);
		ASSERT_EQ((uint8_t)(out[0] ^ 0xff), in[0]);
		ASSERT_EQ(0, memcmp(in + 1, out + 1, sizeof(out) - 1));
	}
	if (pkts >= 0)
		EXPECT_LE(pkts + 150, rxe_sent());
	rclose(c);
	rclose(s);
}

/* A plain UDP socket on the bench's address, and its address. */
static int udp_peer(struct sockaddr_in *me)
{
	struct sockaddr_in a = cm_addr(0);
	socklen_t len = sizeof(*me);
	int u = socket(AF_INET, SOCK_DGRAM, 0);

	if (u < 0 || bind(u, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(u, (struct sockaddr *)me, &len))
		return -1;
	return u;
}

static void wire_hdr(struct wire_udp *h, uint8_t op, uint32_t qpn)
{
	memset(h, 0, sizeof(*h));
	h->tag = htobe32(WIRE_TAG);
	h->version = 4;
	h->op = op;
	h->length = sizeof(*h);
	h->qpn = htobe32(qpn);
}

/*
 * The CTRL an rsocket answers a DATA with: rdma-core's tag, @version, its
 * operation, @length and a 24-bit QP number, not 0 (the header's first
 * 12 bytes, the same for both versions).
 */
static void expect_ctrl(struct __test_metadata *_metadata, const uint8_t *in,
			uint8_t version, uint8_t length)
{
	struct wire_udp h;

	memcpy(&h, in, offsetof(struct wire_udp, addr));
	EXPECT_EQ(WIRE_TAG, be32toh(h.tag));
	EXPECT_EQ(version, h.version);
	EXPECT_EQ(7, h.op);
	EXPECT_EQ(length, h.length);
	EXPECT_NE(0, be32toh(h.qpn) & 0xffffff);
	EXPECT_EQ(0, be32toh(h.qpn) >> 24);
}

/*
 * rdma-core's first datagram to a peer: DATA over UDP behind a 16-byte
 * header.  The rsocket answers with a CTRL naming its QP, and delivers
 * the data with the UDP sender's address.
 */
TEST(udp_data_answered)
{
	uint16_t port = cm_port();
	struct sockaddr_in sin = cm_addr(port), me, from;
	uint8_t pkt[sizeof(struct wire_udp) + 5], in[64];
	struct pollfd p;
	struct wire_udp h;
	int s, u;

	s = dg_bound(&sin);
	ASSERT_LE(0, s);
	u = udp_peer(&me);
	ASSERT_LE(0, u);
	wire_hdr(&h, 0, 0x123456);
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), "hello", 5);
	ASSERT_EQ(sizeof(pkt), sendto(u, pkt, sizeof(pkt), 0,
				      (struct sockaddr *)&sin, sizeof(sin)));
	p = (struct pollfd){ .fd = u, .events = POLLIN };
	ASSERT_EQ(1, poll(&p, 1, 5000));
	ASSERT_EQ(sizeof(h), recv(u, in, sizeof(in), 0));
	expect_ctrl(_metadata, in, 4, sizeof(h));
	ASSERT_EQ(5, dg_recv(s, in, sizeof(in), &from));
	EXPECT_EQ(0, memcmp(in, "hello", 5));
	EXPECT_EQ(me.sin_port, from.sin_port);
	EXPECT_EQ(me.sin_addr.s_addr, from.sin_addr.s_addr);
	close(u);
	rclose(s);
}

/*
 * UDP datagrams that are not rdma-core's, or lie about their header:
 * each dropped, none delivered, and the one good datagram after them
 * delivered alone.
 */
TEST(udp_hostile)
{
	uint16_t port = cm_port();
	struct sockaddr_in sin = cm_addr(port), me, from;
	uint8_t pkt[64], in[64];
	struct wire_udp h;
	int s, u, i;
	struct {
		int version, op, length, size;
		uint32_t tag;
	} bad[] = {
		{ 4, 0, 16, 3, WIRE_TAG },	/* shorter than a header */
		{ 4, 0, 16, 20, 0x55555554 },	/* another tag */
		{ 6, 0, 28, 40, WIRE_TAG },	/* IPv6 from an IPv4 peer */
		{ 4, 0, 28, 40, WIRE_TAG },	/* IPv6's length */
		{ 4, 0, 8, 20, WIRE_TAG },	/* a length too short */
		{ 4, 5, 16, 20, WIRE_TAG },	/* an operation it has not */
		{ 4, 0, 255, 20, WIRE_TAG },	/* past what arrived */
	};

	s = dg_bound(&sin);
	ASSERT_LE(0, s);
	u = udp_peer(&me);
	ASSERT_LE(0, u);
	for (i = 0; i < (int)(sizeof(bad) / sizeof(bad[0])); i++) {
		wire_hdr(&h, bad[i].op, 0x10);
		h.tag = htobe32(bad[i].tag);
		h.version = bad[i].version;
		h.length = bad[i].length;
		memset(pkt, 'x', sizeof(pkt));
		memcpy(pkt, &h, sizeof(h));
		ASSERT_EQ(bad[i].size,
			  sendto(u, pkt, bad[i].size, 0,
				 (struct sockaddr *)&sin, sizeof(sin)));
	}
	wire_hdr(&h, 0, 0x10);
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), "ok", 2);
	ASSERT_EQ(sizeof(h) + 2, sendto(u, pkt, sizeof(h) + 2, 0,
					 (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(2, dg_recv(s, in, sizeof(in), &from));
	EXPECT_EQ(0, memcmp(in, "ok", 2));
	EXPECT_EQ(-1, rrecv(s, in, sizeof(in), MSG_DONTWAIT));
	EXPECT_EQ(EAGAIN, errno);
	close(u);
	rclose(s);
}

/*
 * A datagram longer than the path carries (rxe drops a longer UD send and
 * reports it sent) or than a receive slot takes is refused; an empty
 * send address or none is an error, not a crash.
 */
TEST(sizes_and_addresses)
{
	uint16_t port = cm_port();
	struct sockaddr_in sin = cm_addr(port);
	static uint8_t big[4096];
	int s, c;

	s = dg_bound(&sin);
	ASSERT_LE(0, s);
	c = rsocket(AF_INET, SOCK_DGRAM, 0);
	ASSERT_LE(0, c);
	EXPECT_EQ(-1, rsend(c, big, 16, 0));
	EXPECT_EQ(EDESTADDRREQ, errno);
	EXPECT_EQ(-1, rsendto(c, big, 16, 0, (struct sockaddr *)&sin, 4));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, rsendto(c, big, sizeof(big), 0,
			      (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(EMSGSIZE, errno);
	EXPECT_EQ(16, rsendto(c, big, 16, 0, (struct sockaddr *)&sin,
			      sizeof(sin)));
	EXPECT_EQ(16, dg_recv(s, big, sizeof(big), NULL));
	EXPECT_EQ(-1, rlisten(c, 1));
	EXPECT_EQ(EOPNOTSUPP, errno);
	rclose(c);
	rclose(s);
}

/* round_trips over IPv6: rdma-core's 24-byte header in each datagram. */
TEST(round_trips_ipv6)
{
	struct sockaddr_in6 sin, me, from;
	uint8_t out[512], in[600];
	socklen_t len = sizeof(me), fl;
	long long pkts = rxe_sent();
	struct pollfd p;
	int s, c, i, j, n;

	if (!cm_addr6(&sin, cm_port()))
		SKIP(return, "no IPv6 address on the RDMA netdev (KQP_TEST_ADDR6)");
	s = rsocket(AF_INET6, SOCK_DGRAM, 0);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, rbind(s, (struct sockaddr *)&sin, sizeof(sin)));
	c = rsocket(AF_INET6, SOCK_DGRAM, IPPROTO_UDP);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, rconnect(c, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(0, rgetsockname(c, (struct sockaddr *)&me, &len));
	ASSERT_EQ(AF_INET6, me.sin6_family);
	for (i = 0; i < 100; i++) {
		for (j = 0; j < (int)sizeof(out); j++)
			out[j] = (uint8_t)(i * 29 + j);
		ASSERT_EQ(sizeof(out), rsend(c, out, sizeof(out), 0));
		p = (struct pollfd){ .fd = s, .events = POLLIN };
		ASSERT_EQ(1, rpoll(&p, 1, 5000)) TH_LOG("round %d", i);
		fl = sizeof(from);
		n = rrecvfrom(s, in, sizeof(in), MSG_DONTWAIT,
			      (struct sockaddr *)&from, &fl);
		ASSERT_EQ(sizeof(out), n) TH_LOG("round %d", i);
		ASSERT_EQ(0, memcmp(in, out, sizeof(out)));
		ASSERT_EQ(sizeof(from), fl);
		ASSERT_EQ(AF_INET6, from.sin6_family);
		ASSERT_EQ(me.sin6_port, from.sin6_port);
		ASSERT_EQ(0, memcmp(&sin.sin6_addr, &from.sin6_addr,
				    sizeof(from.sin6_addr)));
		in[0] ^= 0xff;
		ASSERT_EQ(n, rsendto(s, in, n, 0, (struct sockaddr *)&from,
				     sizeof(from)));
		p = (struct pollfd){ .fd = c, .events = POLLIN };
		ASSERT_EQ(1, rpoll(&p, 1, 5000)) TH_LOG("reply %d", i);
		n = rrecv(c, in, sizeof(in), MSG_DONTWAIT);
		ASSERT_EQ(sizeof(out), n) TH_LOG("reply %d", i);
		ASSERT_EQ((uint8_t)(out[0] ^ 0xff), in[0]);
		ASSERT_EQ(0, memcmp(in + 1, out + 1, sizeof(out) - 1));
	}
	if (pkts >= 0)
		EXPECT_LE(pkts + 150, rxe_sent());
	rclose(c);
	rclose(s);
}

/* rdma-core's UDP header for an IPv6 peer: 28 bytes. */
struct wire_udp6 {
	uint32_t tag;
	uint8_t version;
	uint8_t op;
	uint8_t length;
	uint8_t reserved;
	uint32_t qpn;
	uint8_t addr[16];
} __attribute__((packed));

/*
 * udp_data_answered over IPv6: a version 6 DATA is answered with a
 * version 6 CTRL of 28 bytes naming the rsocket's QP, and its data is
 * delivered with the IPv6 sender's address; a version 4 header from an
 * IPv6 peer is dropped.
 */
TEST(udp_data_answered_ipv6)
{
	struct sockaddr_in6 sin, me, from, a;
	uint8_t pkt[sizeof(struct wire_udp6) + 5], in[64];
	socklen_t len = sizeof(me), fl = sizeof(from);
	struct wire_udp6 h;
	struct pollfd p;
	int s, u;

	if (!cm_addr6(&sin, cm_port()))
		SKIP(return, "no IPv6 address on the RDMA netdev (KQP_TEST_ADDR6)");
	s = rsocket(AF_INET6, SOCK_DGRAM, 0);
	ASSERT_LE(0, s);
	ASSERT_EQ(0, rbind(s, (struct sockaddr *)&sin, sizeof(sin)));
	a = sin;
	a.sin6_port = 0;
	u = socket(AF_INET6, SOCK_DGRAM, 0);
	ASSERT_LE(0, u);
	ASSERT_EQ(0, bind(u, (struct sockaddr *)&a, sizeof(a)));
	ASSERT_EQ(0, getsockname(u, (struct sockaddr *)&me, &len));
	memset(&h, 0, sizeof(h));
	h.tag = htobe32(WIRE_TAG);
	h.version = 4;
	h.length = 16;
	h.qpn = htobe32(0x123456);
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + 16, "nope!", 5);
	ASSERT_EQ(21, sendto(u, pkt, 21, 0, (struct sockaddr *)&sin,
			     sizeof(sin)));
	h.version = 6;
	h.length = sizeof(h);
	memcpy(h.addr, &me.sin6_addr, sizeof(h.addr));
	memcpy(pkt, &h, sizeof(h));
	memcpy(pkt + sizeof(h), "hello", 5);
	ASSERT_EQ(sizeof(pkt), sendto(u, pkt, sizeof(pkt), 0,
				      (struct sockaddr *)&sin, sizeof(sin)));
	p = (struct pollfd){ .fd = u, .events = POLLIN };
	ASSERT_EQ(1, poll(&p, 1, 5000));
	ASSERT_EQ(sizeof(h), recv(u, in, sizeof(in), 0));
	expect_ctrl(_metadata, in, 6, sizeof(h));
	memcpy(&h, in, sizeof(h));
	EXPECT_EQ(0, memcmp(h.addr, &sin.sin6_addr, sizeof(h.addr)));
	p = (struct pollfd){ .fd = s, .events = POLLIN };
	ASSERT_EQ(1, rpoll(&p, 1, 5000));
	ASSERT_EQ(5, rrecvfrom(s, in, sizeof(in), MSG_DONTWAIT,
			       (struct sockaddr *)&from, &fl));
	EXPECT_EQ(0, memcmp(in, "hello", 5));
	EXPECT_EQ(sizeof(from), fl);
	EXPECT_EQ(me.sin6_port, from.sin6_port);
	EXPECT_EQ(0, memcmp(&me.sin6_addr, &from.sin6_addr,
			    sizeof(from.sin6_addr)));
	EXPECT_EQ(-1, rrecv(s, in, sizeof(in), MSG_DONTWAIT));
	EXPECT_EQ(EAGAIN, errno);
	close(u);
	rclose(s);
}

TEST_HARNESS_MAIN
