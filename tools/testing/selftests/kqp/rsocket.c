// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Stream rsockets through <rdma/rsocket.h> only, so that the same source
 * builds against libkqp (rsocket) and rdma-core's librdmacm
 * (rsocket_rdmacm), which says what right is: a connection made with a
 * non-blocking rconnect() and rpoll(), rpoll() racing such a connect,
 * data both ways and checked, a peek, rselect() over an rsocket and a
 * pipe, a half close, the close of a peer, the options rdma-core's
 * rstream sets, riomap()/riowrite(), a connection over IPv6, and the
 * machine's defaults in /etc/rdma/rsocket/.
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <rdma/rsocket.h>

#include "cm_test.h"
#include "rsocket_test.h"

#define BIG	(1 << 20)
#define IOMAP	8	/* iomap entries each end gives its peer */

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 11));
}

/* A listener on the bench's address; -1 on failure. */
static int rs_listen(uint16_t port)
{
	struct sockaddr_in sin = cm_addr(port);
	int s = rsocket(AF_INET, SOCK_STREAM, 0), n = IOMAP;

	if (s < 0)
		return -1;
	/* Its accepted rsockets take it; riostream sets it too. */
	if (rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &n, sizeof(n)) ||
	    rbind(s, (struct sockaddr *)&sin, sizeof(sin)) || rlisten(s, 8)) {
		rclose(s);
		return -1;
	}
	return s;
}

/* rpoll() one rsocket for @events: its revents, 0 on timeout. */
static short rs_wait(int s, short events)
{
	struct pollfd p = { .fd = s, .events = events };

	return rpoll(&p, 1, CM_TIMEOUT_MS) == 1 ? p.revents : 0;
}

FIXTURE(conn)
{
	int l, c, a;
};

/* Client non-blocking, as rstream's default; the accepted end blocking. */
FIXTURE_SETUP(conn)
{
	uint16_t port = cm_port();
	struct sockaddr_in sin = cm_addr(port);
	int on = 1, err = -1, ret, n = IOMAP;
	socklen_t len = sizeof(err);

	self->l = rs_listen(port);
	ASSERT_LE(0, self->l);
	self->c = rsocket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, self->c);
	ASSERT_EQ(0, rsetsockopt(self->c, SOL_RDMA, RDMA_IOMAPSIZE, &n,
				 sizeof(n)));
	ASSERT_EQ(0, rsetsockopt(self->c, IPPROTO_TCP, TCP_NODELAY, &on,
				 sizeof(on)));
	ASSERT_EQ(0, rfcntl(self->c, F_SETFL, O_NONBLOCK));
	ret = rconnect(self->c, (struct sockaddr *)&sin, sizeof(sin));
	if (ret)
		ASSERT_EQ(EINPROGRESS, errno);
	self->a = raccept(self->l, NULL, NULL);
	ASSERT_LE(0, self->a);
	ASSERT_TRUE(rs_wait(self->c, POLLOUT) & POLLOUT);
	ASSERT_EQ(0, rgetsockopt(self->c, SOL_SOCKET, SO_ERROR, &err, &len));
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, rfcntl(self->c, F_SETFL, 0));
}

FIXTURE_TEARDOWN(conn)
{
	if (self->c >= 0)
		rclose(self->c);
	if (self->a >= 0)
		rclose(self->a);
	if (self->l >= 0)
		rclose(self->l);
}

struct xfer {
	int s;
	size_t len;
	ssize_t done;
	int err;
};

static void *recv_all(void *arg)
{
	struct xfer *x = arg;
	uint8_t *buf = malloc(x->len);
	size_t i;

	x->done = buf ? rrecv(x->s, buf, x->len, MSG_WAITALL) : -1;
	x->err = errno;
	for (i = 0; x->done > 0 && i < (size_t)x->done; i++) {
		if (buf[i] != pattern(i)) {
			x->err = EILSEQ;
			x->done = -2;
			break;
		}
	}
	free(buf);
	return NULL;
}

/* A megabyte each way, each byte checked, while the other end reads. */
TEST_F(conn, data_both_ways)
{
	uint8_t *buf = malloc(BIG);
	struct xfer x;
	pthread_t t;
	size_t i;
	int dir;

	ASSERT_NE(NULL, buf);
	for (i = 0; i < BIG; i++)
		buf[i] = pattern(i);
	for (dir = 0; dir < 2; dir++) {
		x = (struct xfer){ .s = dir ? self->c : self->a, .len = BIG };
		ASSERT_EQ(0, pthread_create(&t, NULL, recv_all, &x));
		EXPECT_EQ(BIG, rsend(dir ? self->a : self->c, buf, BIG, 0));
		pthread_join(t, NULL);
		EXPECT_EQ(BIG, x.done) TH_LOG("errno %d", x.err);
	}
	free(buf);
}

/* A peek leaves the bytes; vectors gather on send. */
TEST_F(conn, peek_and_vectors)
{
	char a[] = "hello, ", b[] = "rsocket", got[32] = {};
	struct iovec iov[2] = { { a, 7 }, { b, 7 } };

	ASSERT_EQ(14, rwritev(self->c, iov, 2));
	ASSERT_TRUE(rs_wait(self->a, POLLIN) & POLLIN);
	EXPECT_EQ(5, rrecv(self->a, got, 5, MSG_PEEK));
	EXPECT_EQ(0, memcmp(got, "hello", 5));
	EXPECT_EQ(14, rrecv(self->a, got, 14, MSG_WAITALL));
	EXPECT_EQ(0, memcmp(got, "hello, rsocket", 14));
}

/* rselect() over a pipe and an rsocket: each when it is ready. */
TEST_F(conn, rselect_mixed)
{
	struct timeval tv = { .tv_sec = 30 };
	int p[2], n;
	fd_set r;
	char c;

	ASSERT_EQ(0, pipe(p));
	ASSERT_EQ(1, write(p[1], "x", 1));
	n = (p[0] > self->a ? p[0] : self->a) + 1;
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	FD_SET(self->a, &r);
	ASSERT_EQ(1, rselect(n, &r, NULL, NULL, &tv));
	EXPECT_TRUE(FD_ISSET(p[0], &r));
	EXPECT_FALSE(FD_ISSET(self->a, &r));
	ASSERT_EQ(1, read(p[0], &c, 1));

	ASSERT_EQ(1, rsend(self->c, "y", 1, 0));
	FD_ZERO(&r);
	FD_SET(p[0], &r);
	FD_SET(self->a, &r);
	tv.tv_sec = 30;
	ASSERT_EQ(1, rselect(n, &r, NULL, NULL, &tv));
	EXPECT_FALSE(FD_ISSET(p[0], &r));
	EXPECT_TRUE(FD_ISSET(self->a, &r));
	EXPECT_EQ(1, rrecv(self->a, &c, 1, 0));
	EXPECT_EQ('y', c);
	close(p[0]);
	close(p[1]);
}

/* After SHUT_WR the peer reads what came, then end of stream. */
TEST_F(conn, half_close)
{
	char buf[16];

	ASSERT_EQ(4, rsend(self->c, "last", 4, 0));
	ASSERT_EQ(0, rshutdown(self->c, SHUT_WR));
	EXPECT_EQ(4, rrecv(self->a, buf, sizeof(buf), MSG_WAITALL));
	EXPECT_EQ(0, rrecv(self->a, buf, sizeof(buf), 0));
	/* The other direction still works. */
	EXPECT_EQ(2, rsend(self->a, "ok", 2, 0));
	EXPECT_EQ(2, rrecv(self->c, buf, 2, MSG_WAITALL));
}

/*
 * A megabyte in non-blocking sends of 100 bytes, waiting in rpoll() for
 * POLLOUT whenever the rsocket has no room, while the peer reads and
 * checks every byte: the room always comes back, however few of the
 * sends the library asked a completion for.
 */
TEST_F(conn, small_sends_nonblocking)
{
	uint8_t msg[100];
	size_t sent = 0, i, n;
	struct xfer x = { .s = self->a, .len = BIG };
	unsigned int full = 0;
	pthread_t t;
	ssize_t ret;

	ASSERT_EQ(0, rfcntl(self->c, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(0, pthread_create(&t, NULL, recv_all, &x));
	while (sent < BIG) {
		n = BIG - sent < sizeof(msg) ? BIG - sent : sizeof(msg);
		for (i = 0; i < n; i++)
			msg[i] = pattern(sent + i);
		ret = rsend(self->c, msg, n, 0);
		if (ret > 0) {
			sent += ret;
			continue;
		}
		ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
		full++;
		ASSERT_TRUE(rs_wait(self->c, POLLOUT) & POLLOUT)
			TH_LOG("no room again after %zu bytes", sent);
	}
	pthread_join(t, NULL);
	EXPECT_EQ(BIG, x.done) TH_LOG("errno %d", x.err);
	TH_LOG("%u times without room", full);
}

/* A closed peer: end of stream, and a hang-up for rpoll(). */
TEST_F(conn, peer_closed)
{
	char buf[8];

	ASSERT_EQ(0, rclose(self->a));
	self->a = -1;
	EXPECT_EQ(0, rrecv(self->c, buf, sizeof(buf), 0));
	EXPECT_TRUE(rs_wait(self->c, POLLIN) & POLLHUP);
}

/*
 * riomap() on one end, riowrite() from the other: the bytes land in the
 * mapped buffer and nowhere else.  The map reaches the peer ahead of the
 * next message its end sends, and a message after the write says it has
 * landed (one RC QP keeps them in order).
 */
TEST_F(conn, iomap_write)
{
	uint8_t *dst = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t src[4096];
	size_t i;
	char b;

	ASSERT_NE(MAP_FAILED, dst);
	for (i = 0; i < sizeof(src); i++)
		src[i] = pattern(i);
	/* Nothing is mapped yet: nowhere to write. */
	EXPECT_EQ(0, riowrite(self->c, src, 16, 0, 0));
	EXPECT_EQ(-1, riomap(self->a, dst + 4096, 4096, PROT_READ, 0, 0));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(8192, riomap(self->a, dst + 4096, 4096, PROT_WRITE, 0,
			       8192));
	ASSERT_EQ(1, rsend(self->a, "m", 1, 0));
	ASSERT_EQ(1, rrecv(self->c, &b, 1, 0));
	EXPECT_EQ(4096, riowrite(self->c, src, 4096, 8192, 0));
	/* Below the mapping: nothing. */
	EXPECT_EQ(0, riowrite(self->c, src, 16, 4096, 0));
	ASSERT_EQ(1, rsend(self->c, "d", 1, 0));
	ASSERT_EQ(1, rrecv(self->a, &b, 1, 0));
	EXPECT_EQ(0, memcmp(dst + 4096, src, 4096));
	for (i = 0; i < 4096; i++) {
		if (dst[i] || dst[8192 + i])
			break;
	}
	EXPECT_EQ(4096, i) TH_LOG("a byte outside the mapping was written");
	EXPECT_EQ(0, riounmap(self->a, dst + 4096, 4096));
	EXPECT_EQ(-1, riounmap(self->a, dst + 4096, 4096));
	EXPECT_EQ(EINVAL, errno);
	munmap(dst, 3 * 4096);
}

/* riomap() before a connection has nothing to register with. */
/*
 * RDMA_ROUTE: a connected rsocket gives its route as path records; a new
 * one given that path (flagged primary and bidirectional: rdma-core
 * gives each path's preference as its flags) connects on it and carries
 * data; one given a path flagged otherwise fails to connect.
 */
TEST_F(conn, route)
{
	struct ibv_path_data d[2];
	struct sockaddr_in sin;
	socklen_t len = sizeof(d);
	int c, a, ret, err = -1;
	char b = 0;

	ASSERT_EQ(0, rgetsockopt(self->c, SOL_RDMA, RDMA_ROUTE, d, &len));
	ASSERT_LE(sizeof(d[0]), len);
	EXPECT_EQ(0, len % sizeof(d[0]));
	len = 8;
	EXPECT_EQ(-1, rgetsockopt(self->c, SOL_RDMA, RDMA_ROUTE, d, &len));
	EXPECT_EQ(EINVAL, errno);
	/* Too late once connected. */
	EXPECT_EQ(-1, rsetsockopt(self->c, SOL_RDMA, RDMA_ROUTE, d,
				  sizeof(d[0])));
	EXPECT_EQ(EINVAL, errno);
	len = sizeof(sin);
	ASSERT_EQ(0, rgetpeername(self->c, (struct sockaddr *)&sin, &len));

	d[0].flags = CM_PATH_FLAGS;
	c = rsocket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, rsetsockopt(c, SOL_RDMA, RDMA_ROUTE, d, sizeof(d[0])));
	ASSERT_EQ(0, rfcntl(c, F_SETFL, O_NONBLOCK));
	ret = rconnect(c, (struct sockaddr *)&sin, sizeof(sin));
	if (ret)
		ASSERT_EQ(EINPROGRESS, errno) TH_LOG("%s", strerror(errno));
	a = raccept(self->l, NULL, NULL);
	ASSERT_LE(0, a);
	ASSERT_TRUE(rs_wait(c, POLLOUT) & POLLOUT);
	len = sizeof(err);
	ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, rfcntl(c, F_SETFL, 0));
	EXPECT_EQ(1, rsend(c, "r", 1, 0));
	EXPECT_EQ(1, rrecv(a, &b, 1, 0));
	EXPECT_EQ('r', b);
	rclose(a);
	rclose(c);

	d[0].flags = IBV_PATH_FLAG_GMP;
	c = rsocket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, rsetsockopt(c, SOL_RDMA, RDMA_ROUTE, d, sizeof(d[0])));
	EXPECT_EQ(-1, rconnect(c, (struct sockaddr *)&sin, sizeof(sin)));
	EXPECT_EQ(EINVAL, errno);
	rclose(c);
}

/*
 * A child after fork() that sends on its parent's connected rsocket is
 * refused: by the kernel with rdma-core (EACCES, see cm.c's
 * fork_child_channels), by the library with kqp (EPERM).  What rdma-core
 * then does with the refused byte is in rsocket_kqp.c's fork_child.
 */
TEST_F(conn, fork_child_send)
{
	int p[2], res[2] = { 0, 0 };
	pid_t pid;

	ASSERT_EQ(0, pipe(p));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		res[0] = rsend(self->c, "z", 1, MSG_DONTWAIT);
		res[1] = errno;
		_exit(write(p[1], res, sizeof(res)) == sizeof(res) ? 0 : 1);
	}
	ASSERT_EQ(sizeof(res), read(p[0], res, sizeof(res)));
	EXPECT_TRUE(kqp_test_child_ok(_metadata, pid, "child"));
	close(p[0]);
	close(p[1]);
	EXPECT_EQ(-1, res[0]);
	EXPECT_EQ(CHILD_REFUSED, res[1]);
}

/*
 * nc's connect: non-blocking, then at once rpoll() for POLLOUT while the
 * peer accepts.  The library's background thread may take the connect's
 * events while rpoll() sleeps on the channel they came through; rpoll()
 * must still see the connection made (rdma-core's wakes it through its
 * poll signal).  Each round is a race, so many rounds; a lost wake-up
 * shows as a timeout.
 */
TEST(nonblocking_connect_rpoll)
{
	uint16_t port = cm_port();
	struct sockaddr_in sin = cm_addr(port);
	int l = rs_listen(port), i, c, a, err, ret;
	socklen_t len;
	short rev;

	ASSERT_LE(0, l);
	for (i = 0; i < 20; i++) {
		ret = rs_connect_polled(l, &sin, 5000, &c, &a, &rev);
		ASSERT_EQ(1, ret) TH_LOG("round %d: %s", i,
					 ret ? strerror(errno) : "no POLLOUT in 5 s");
		ASSERT_TRUE(rev & POLLOUT);
		err = -1;
		len = sizeof(err);
		ASSERT_EQ(0, rgetsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
		ASSERT_EQ(0, err);
		ASSERT_LE(0, a);
		rclose(a);
		rclose(c);
	}
	rclose(l);
}

/*
 * Over IPv6: a listener and a blocking connect on the bench's IPv6
 * address, each end naming the other's address, and 256 KiB each way,
 * every byte checked.
 */
TEST(stream_ipv6)
{
	struct sockaddr_in6 sin, name, peer;
	struct xfer x = { .len = 1 << 18 };
	socklen_t len;
	uint8_t *buf;
	pthread_t t;
	int l, c, a;
	size_t i;

	if (!cm_addr6(&sin, cm_port()))
		SKIP(return, "no IPv6 address on the RDMA netdev (KQP_TEST_ADDR6)");
	buf = malloc(x.len);
	ASSERT_NE(NULL, buf);
	for (i = 0; i < x.len; i++)
		buf[i] = pattern(i);
	l = rsocket(AF_INET6, SOCK_STREAM, 0);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, rbind(l, (struct sockaddr *)&sin, sizeof(sin)));
	ASSERT_EQ(0, rlisten(l, 1));
	c = rsocket(AF_INET6, SOCK_STREAM, 0);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, rconnect(c, (struct sockaddr *)&sin, sizeof(sin)));
	len = sizeof(peer);
	a = raccept(l, (struct sockaddr *)&peer, &len);
	ASSERT_LE(0, a);
	EXPECT_EQ(AF_INET6, peer.sin6_family);
	EXPECT_EQ(0, memcmp(&sin.sin6_addr, &peer.sin6_addr,
			    sizeof(peer.sin6_addr)));
	len = sizeof(name);
	ASSERT_EQ(0, rgetsockname(c, (struct sockaddr *)&name, &len));
	EXPECT_EQ(AF_INET6, name.sin6_family);
	EXPECT_EQ(name.sin6_port, peer.sin6_port);
	len = sizeof(peer);
	ASSERT_EQ(0, rgetpeername(c, (struct sockaddr *)&peer, &len));
	EXPECT_EQ(AF_INET6, peer.sin6_family);
	EXPECT_EQ(sin.sin6_port, peer.sin6_port);
	EXPECT_EQ(0, memcmp(&sin.sin6_addr, &peer.sin6_addr,
			    sizeof(peer.sin6_addr)));
	/* Each way in turn, the reader a thread. */
	x.s = a;
	ASSERT_EQ(0, pthread_create(&t, NULL, recv_all, &x));
	EXPECT_EQ((ssize_t)x.len, rsend(c, buf, x.len, 0));
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)x.len, x.done) TH_LOG("%s", strerror(x.err));
	x.s = c;
	x.done = 0;
	ASSERT_EQ(0, pthread_create(&t, NULL, recv_all, &x));
	EXPECT_EQ((ssize_t)x.len, rsend(a, buf, x.len, 0));
	pthread_join(t, NULL);
	EXPECT_EQ((ssize_t)x.len, x.done) TH_LOG("%s", strerror(x.err));
	free(buf);
	rclose(a);
	rclose(c);
	rclose(l);
}

TEST(iomap_unconnected)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0);
	char buf[64];

	ASSERT_LE(0, s);
	EXPECT_EQ(-1, riomap(s, buf, sizeof(buf), PROT_WRITE, 0, -1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, rclose(s));
}

/* The options rstream sets, read back as rdma-core reports them. */
TEST(options)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), v;
	socklen_t len = sizeof(v);

	ASSERT_LE(0, s);
	ASSERT_EQ(0, rgetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, &len));
	EXPECT_EQ(384, v);
	ASSERT_EQ(0, rgetsockopt(s, SOL_RDMA, RDMA_INLINE, &v, &len));
	EXPECT_EQ(64, v);
	ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len));
	EXPECT_EQ(1 << 17, v);
	v = 65536;
	ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len));
	EXPECT_EQ(131072, v);
	v = 1;
	ASSERT_EQ(0, rsetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)));
	v = 0;
	ASSERT_EQ(0, rgetsockopt(s, IPPROTO_TCP, TCP_NODELAY, &v, &len));
	EXPECT_EQ(1, v);
	v = 32;
	ASSERT_EQ(0, rsetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)));
	ASSERT_EQ(0, rgetsockopt(s, SOL_RDMA, RDMA_SQSIZE, &v, &len));
	EXPECT_EQ(32, v);
	/* Rounded to what the connection data's 8 bits can say. */
	v = 300;
	ASSERT_EQ(0, rsetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, sizeof(v)));
	ASSERT_EQ(0, rgetsockopt(s, SOL_RDMA, RDMA_IOMAPSIZE, &v, &len));
	EXPECT_EQ(256, v);
	EXPECT_EQ(0, rfcntl(s, F_GETFL) & O_NONBLOCK);
	EXPECT_EQ(0, rclose(s));
}

/* Keep-alive: on, and its idle time the kernel's TCP default until set. */
TEST(keepalive_options)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), v, def = 7200;
	socklen_t len = sizeof(v);
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "r");

	if (f) {
		ASSERT_EQ(1, fscanf(f, "%d", &def));
		fclose(f);
	}
	ASSERT_LE(0, s);
	v = 1;
	ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)));
	v = 0;
	ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len));
	EXPECT_EQ(1, v);
	ASSERT_EQ(0, rgetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len));
	EXPECT_EQ(def, v);
	v = 5;
	ASSERT_EQ(0, rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)));
	ASSERT_EQ(0, rgetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len));
	EXPECT_EQ(5, v);
	v = 0;
	EXPECT_EQ(-1, rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)));
	ASSERT_EQ(0, rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len));
	EXPECT_EQ(0, v);
	EXPECT_EQ(0, rclose(s));
}

/* Write @val into tunable @name; 0 or -1. */
static int put_conf(const char *name, const char *val)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/etc/rdma/rsocket/%s", name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(val, f);
	return fclose(f);
}

static int get_opt(int s, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	return rgetsockopt(s, level, name, &v, &len) ? -1 : v;
}

/*
 * rdma-core's tunables: each file in /etc/rdma/rsocket/ is a default for
 * the process's new rsockets.  The test's own mount namespace gets a
 * directory of them, so it needs root, and is skipped without it.  A
 * connection made with them carries data.
 */
TEST(tunables)
{
	uint16_t port = cm_port();
	struct sockaddr_in sin = cm_addr(port);
	char buf[4096];
	int l, c, a, ret;

	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/etc/rdma", "tmpfs", 0, "size=64k"))
		SKIP(return, "no mount namespace of its own: %s",
		     strerror(errno));
	ASSERT_EQ(0, mkdir("/etc/rdma/rsocket", 0755));
	ASSERT_EQ(0, put_conf("sqsize_default", "100\n"));
	ASSERT_EQ(0, put_conf("rqsize_default", "50\n"));
	ASSERT_EQ(0, put_conf("inline_default", "32\n"));
	ASSERT_EQ(0, put_conf("mem_default", "65536\n"));
	ASSERT_EQ(0, put_conf("wmem_default", "32768\n"));
	ASSERT_EQ(0, put_conf("iomap_size", "8\n"));
	c = rsocket(AF_INET, SOCK_STREAM, 0);
	ASSERT_LE(0, c);
	EXPECT_EQ(100, get_opt(c, SOL_RDMA, RDMA_SQSIZE));
	EXPECT_EQ(50, get_opt(c, SOL_RDMA, RDMA_RQSIZE));
	EXPECT_EQ(32, get_opt(c, SOL_RDMA, RDMA_INLINE));
	EXPECT_EQ(8, get_opt(c, SOL_RDMA, RDMA_IOMAPSIZE));
	EXPECT_EQ(65536, get_opt(c, SOL_SOCKET, SO_RCVBUF));
	EXPECT_EQ(32768, get_opt(c, SOL_SOCKET, SO_SNDBUF));

	l = rs_listen(port);
	ASSERT_LE(0, l);
	ASSERT_EQ(0, rfcntl(c, F_SETFL, O_NONBLOCK));
	ret = rconnect(c, (struct sockaddr *)&sin, sizeof(sin));
	if (ret)
		ASSERT_EQ(EINPROGRESS, errno);
	a = raccept(l, NULL, NULL);
	ASSERT_LE(0, a);
	ASSERT_TRUE(rs_wait(c, POLLOUT) & POLLOUT);
	ASSERT_EQ(0, rfcntl(c, F_SETFL, 0));
	memset(buf, 0x3c, sizeof(buf));
	EXPECT_EQ(sizeof(buf), rsend(c, buf, sizeof(buf), 0));
	memset(buf, 0, sizeof(buf));
	EXPECT_EQ(sizeof(buf), rrecv(a, buf, sizeof(buf), MSG_WAITALL));
	EXPECT_EQ(0x3c, buf[sizeof(buf) - 1]);
	rclose(c);
	rclose(a);
	rclose(l);
}

/*
 * A number that is no rsocket.  One rsocket is made first: rdma-core
 * reads its table unchecked where no rsocket ever was.
 */
TEST(not_an_rsocket)
{
	int s = rsocket(AF_INET, SOCK_STREAM, 0), p[2];
	char c;

	ASSERT_LE(0, s);
	ASSERT_EQ(0, pipe(p));
	EXPECT_EQ(-1, rsend(p[1], "x", 1, 0));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, rrecv(p[0], &c, 1, 0));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, rlisten(p[0], 1));
	EXPECT_EQ(EBADF, errno);
	close(p[0]);
	close(p[1]);
	rclose(s);
}

TEST_HARNESS_MAIN
