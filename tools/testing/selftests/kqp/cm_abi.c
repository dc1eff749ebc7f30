// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The CM id commands at the ioctl level: what the library relies on and
 * what no library call can reach (handles of other files, unreported
 * events, teardown of ids in every state, hostile arguments).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

static int kq_open(void)
{
	return open(KQP_DEV, O_RDWR | O_CLOEXEC | O_NONBLOCK);
}

static int kq_create(int fd, uint32_t ps, uint32_t qpt, uint64_t uid,
		     uint32_t *id)
{
	struct kqp_create_id c = {
		.size = sizeof(c), .uid = uid, .port_space = ps, .qp_type = qpt,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_ID, &c);

	*id = c.out_id;
	return ret;
}

static int kq_destroy(int fd, uint32_t id, uint32_t *reported)
{
	struct kqp_destroy_id d = { .size = sizeof(d), .id = id };
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_DESTROY_ID, &d);

	if (reported)
		*reported = d.out_events_reported;
	return ret;
}

static void sin_of(struct __kernel_sockaddr_storage *ss, const char *ip,
		   uint16_t port)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET, .sin_port = htons(port),
	};

	memset(ss, 0, sizeof(*ss));
	inet_pton(AF_INET, ip, &sin.sin_addr);
	memcpy(ss, &sin, sizeof(sin));
}

static const char *addr(void)
{
	return getenv("KQP_TEST_ADDR") ?: "192.0.2.1";
}

static uint16_t port(void)
{
	static uint16_t next;

	if (!next)
		next = 40000 + (getpid() % 1000) * 20;
	return next++;
}

static int kq_bind(int fd, uint32_t id, uint16_t p)
{
	struct kqp_bind_addr b = { .size = sizeof(b), .id = id };

	sin_of(&b.addr, addr(), p);
	return kqp_test_ioctl(fd, KQP_IOCTL_BIND_ADDR, &b);
}

static int kq_listen(int fd, uint32_t id, uint32_t backlog)
{
	struct kqp_listen l = { .size = sizeof(l), .id = id, .backlog = backlog };

	return kqp_test_ioctl(fd, KQP_IOCTL_LISTEN, &l);
}

static int kq_resolve_addr(int fd, uint32_t id, const char *ip, uint16_t p)
{
	struct kqp_resolve_addr r = {
		.size = sizeof(r), .id = id, .timeout_ms = 2000,
	};

	sin_of(&r.dst_addr, ip, p);
	return kqp_test_ioctl(fd, KQP_IOCTL_RESOLVE_ADDR, &r);
}

static int kq_resolve_route(int fd, uint32_t id)
{
	struct kqp_resolve_route r = {
		.size = sizeof(r), .id = id, .timeout_ms = 2000,
	};

	return kqp_test_ioctl(fd, KQP_IOCTL_RESOLVE_ROUTE, &r);
}

static int kq_connect(int fd, uint32_t id, uint32_t qpn)
{
	struct kqp_connect c = { .size = sizeof(c), .id = id };

	c.param.qp_num = qpn;
	c.param.retry_count = 7;
	c.param.rnr_retry_count = 7;
	return kqp_test_ioctl(fd, KQP_IOCTL_CONNECT, &c);
}

/* The next event within @ms; 0 or the errno. */
static int kq_event(int fd, struct kqp_get_event *ev, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, ms) != 1)
		return ETIMEDOUT;
	memset(ev, 0, sizeof(*ev));
	ev->size = sizeof(*ev);
	return kqp_test_ioctl(fd, KQP_IOCTL_GET_EVENT, ev);
}

/* Wait for @type; 0 when it came with status 0. */
static int kq_expect(int fd, uint32_t type, struct kqp_get_event *ev)
{
	struct kqp_get_event tmp;
	int ret;

	if (!ev)
		ev = &tmp;
	ret = kq_event(fd, ev, 30000);
	if (ret)
		return ret;
	if (ev->out_event != type || ev->out_status) {
		fprintf(stderr, "# expected event %u, got %u status %d\n",
			type, ev->out_event, ev->out_status);
		return -1;
	}
	return 0;
}

/* A resolved client id on @fd towards port @p. */
static int kq_client(int fd, uint16_t p, uint32_t *id)
{
	if (kq_create(fd, KQP_PS_TCP, KQP_QPT_RC, 1, id) ||
	    kq_resolve_addr(fd, *id, addr(), p) ||
	    kq_expect(fd, 0 /* ADDR_RESOLVED */, NULL) ||
	    kq_resolve_route(fd, *id) ||
	    kq_expect(fd, 2 /* ROUTE_RESOLVED */, NULL))
		return -1;
	return 0;
}

/* A listener on @s at port @p, and a client id on @c resolved to it. */
static int kq_listener_and_client(int s, int c, uint16_t p, uint32_t *lid,
				  uint32_t *cid)
{
	if (kq_create(s, KQP_PS_TCP, KQP_QPT_RC, 1, lid) ||
	    kq_bind(s, *lid, p) || kq_listen(s, *lid, 4))
		return -1;
	return kq_client(c, p, cid);
}

static int cm_ids_of(pid_t pid)
{
	char line[512], key[32];
	FILE *f;
	int n = 0;

	snprintf(key, sizeof(key), " pid %d ", (int)pid);
	f = popen("rdma res show cm_id 2>/dev/null", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, key))
			n++;
	return pclose(f) ? -1 : n;
}

enum {
	EV_ADDR_RESOLVED = 0, EV_ROUTE_RESOLVED = 2, EV_CONNECT_REQUEST = 4,
	EV_CONNECT_RESPONSE = 5, EV_REJECTED = 8, EV_ESTABLISHED = 9,
};

TEST(handles_are_per_file)
{
	int a = kq_open(), b = kq_open();
	uint32_t id, other;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, kq_create(a, KQP_PS_TCP, KQP_QPT_RC, 1, &id));
	EXPECT_NE(0, id);
	ASSERT_EQ(0, kq_create(b, KQP_PS_TCP, KQP_QPT_RC, 1, &other));
	/* b's table knows its own id and nothing of a's. */
	if (other != id)
		EXPECT_EQ(ENOENT, kq_destroy(b, id, NULL));
	EXPECT_EQ(ENOENT, kq_bind(b, id + 100, port()));
	EXPECT_EQ(0, kq_destroy(a, id, NULL));
	EXPECT_EQ(ENOENT, kq_destroy(a, id, NULL));
	EXPECT_EQ(0, kq_destroy(b, other, NULL));
	close(a);
	close(b);
}

TEST(create_id_rules)
{
	int fd = kq_open();
	uint32_t id;

	ASSERT_LE(0, fd);
	EXPECT_EQ(EINVAL, kq_create(fd, KQP_PS_TCP, KQP_QPT_UD, 1, &id));
	EXPECT_EQ(EINVAL, kq_create(fd, KQP_PS_UDP, KQP_QPT_RC, 1, &id));
	EXPECT_EQ(EINVAL, kq_create(fd, KQP_PS_IPOIB, KQP_QPT_RC, 1, &id));
	EXPECT_EQ(EINVAL, kq_create(fd, KQP_PS_IB, 3 /* UC */, 1, &id));
	EXPECT_EQ(EINVAL, kq_create(fd, 0, KQP_QPT_RC, 1, &id));
	EXPECT_EQ(0, kq_create(fd, KQP_PS_IB, KQP_QPT_UD, 1, &id));
	EXPECT_EQ(0, kq_destroy(fd, id, NULL));
	close(fd);
}

/*
 * destroy reports how many events were taken for the id, and drops the
 * ones nobody took.
 */
TEST(destroy_counts_and_purges_events)
{
	struct kqp_get_event ev;
	uint32_t id, reported = 99;
	int fd = kq_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kq_create(fd, KQP_PS_TCP, KQP_QPT_RC, 0xfeed, &id));
	ASSERT_EQ(0, kq_resolve_addr(fd, id, addr(), port()));
	ASSERT_EQ(0, kq_expect(fd, EV_ADDR_RESOLVED, &ev));
	EXPECT_EQ(0xfeed, ev.out_uid);
	EXPECT_EQ(id, ev.out_id);
	ASSERT_EQ(0, kq_resolve_route(fd, id));
	/* Wait until the route event is queued, then leave it there. */
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 30000));
	EXPECT_EQ(0, kq_destroy(fd, id, &reported));
	EXPECT_EQ(1, reported);
	memset(&ev, 0, sizeof(ev));
	ev.size = sizeof(ev);
	EXPECT_EQ(EAGAIN, kqp_test_ioctl(fd, KQP_IOCTL_GET_EVENT, &ev));
	close(fd);
}

/* An event whose copy-out faults stays queued. */
TEST(get_event_efault_keeps_event)
{
	long pagesz = sysconf(_SC_PAGESIZE);
	struct kqp_get_event *ro, ev;
	uint32_t id;
	int fd = kq_open();

	ASSERT_LE(0, fd);
	ro = mmap(NULL, pagesz, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	ro->size = sizeof(*ro);
	ASSERT_EQ(0, mprotect(ro, pagesz, PROT_READ));

	ASSERT_EQ(0, kq_create(fd, KQP_PS_TCP, KQP_QPT_RC, 7, &id));
	ASSERT_EQ(0, kq_resolve_addr(fd, id, addr(), port()));
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 30000));
	EXPECT_EQ(EFAULT, kqp_test_ioctl(fd, KQP_IOCTL_GET_EVENT, ro));
	ASSERT_EQ(0, kq_expect(fd, EV_ADDR_RESOLVED, &ev));
	EXPECT_EQ(7, ev.out_uid);
	EXPECT_EQ(0, kq_destroy(fd, id, NULL));
	munmap(ro, pagesz);
	close(fd);
}

TEST(query_id)
{
	struct kqp_query_id q = { .size = sizeof(q) };
	struct kqp_device_info devs[8];
	struct kqp_query dq = {
		.size = sizeof(dq), .num_devices = 8,
		.device_info_size = sizeof(devs[0]),
		.devices = (uintptr_t)devs,
	};
	struct sockaddr_in sin;
	uint32_t id, i, rxe = KQP_NO_DEVICE;
	uint16_t p = port();
	int fd = kq_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kqp_test_ioctl(fd, KQP_IOCTL_QUERY, &dq));
	for (i = 0; i < dq.num_devices && i < 8; i++)
		if (!strcmp(devs[i].name, kqp_test_rdma_dev()))
			rxe = devs[i].index;
	ASSERT_NE(KQP_NO_DEVICE, rxe);

	ASSERT_EQ(0, kq_create(fd, KQP_PS_TCP, KQP_QPT_RC, 1, &id));
	q.id = id;
	ASSERT_EQ(0, kqp_test_ioctl(fd, KQP_IOCTL_QUERY_ID, &q));
	EXPECT_EQ(KQP_NO_DEVICE, q.out_device_index);
	EXPECT_EQ(0, q.out_port_num);

	ASSERT_EQ(0, kq_bind(fd, id, p));
	ASSERT_EQ(0, kqp_test_ioctl(fd, KQP_IOCTL_QUERY_ID, &q));
	EXPECT_EQ(rxe, q.out_device_index);
	EXPECT_EQ(1, q.out_port_num);
	EXPECT_EQ(kqp_test_sysfs_guid(kqp_test_rdma_dev()), q.out_node_guid);
	/* RoCE addresses carry no P_Key; ucma reports 0 as well. */
	EXPECT_EQ(0, q.out_pkey);
	memcpy(&sin, &q.out_src_addr, sizeof(sin));
	EXPECT_EQ(AF_INET, sin.sin_family);
	EXPECT_EQ(htons(p), sin.sin_port);
	/* RoCE: the source GID is the IPv4-mapped address. */
	EXPECT_EQ(0xff, q.out_sgid[10]);
	EXPECT_EQ(0, memcmp(&q.out_sgid[12], &sin.sin_addr, 4));
	EXPECT_EQ(0, kq_destroy(fd, id, NULL));
	close(fd);
}

TEST(hostile_lengths_and_values)
{
	struct kqp_connect c = { .size = sizeof(c) };
	struct kqp_reject r = { .size = sizeof(r) };
	struct kqp_join_mcast j = { .size = sizeof(j) };
	struct kqp_init_qp_attr a = { .size = sizeof(a) };
	struct kqp_bind_addr b = { .size = sizeof(b) };
	uint8_t big[KQP_MAX_PRIVATE_DATA + 1] = { 0 };
	uint32_t id;
	int fd = kq_open();

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, kq_create(fd, KQP_PS_TCP, KQP_QPT_RC, 1, &id));
	c.id = id;
	c.param.private_data = (uintptr_t)big;
	c.param.private_data_len = sizeof(big);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(fd, KQP_IOCTL_CONNECT, &c));
	c.param.private_data_len = 0xffffffff;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(fd, KQP_IOCTL_CONNECT, &c));
	c.param.private_data_len = 0;
	c.param.__reserved[1] = 1;
	EXPECT_EQ(EOPNOTSUPP, kqp_test_ioctl(fd, KQP_IOCTL_CONNECT, &c));
	r.id = id;
	r.private_data = (uintptr_t)big;
	r.private_data_len = sizeof(big);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(fd, KQP_IOCTL_REJECT, &r));
	j.id = id;
	j.join_flags = 2;
	sin_of(&j.addr, "239.1.1.1", 0);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(fd, KQP_IOCTL_JOIN_MCAST, &j));
	a.id = id;
	a.qp_state = KQP_QPS_INIT;
	/* Not bound: no device to compute attributes for. */
	EXPECT_EQ(EINVAL, kqp_test_ioctl(fd, KQP_IOCTL_INIT_QP_ATTR, &a));
	a.qp_state = 99;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(fd, KQP_IOCTL_INIT_QP_ATTR, &a));
	b.id = id;
	b.addr.ss_family = 12345;
	EXPECT_EQ(EINVAL, kqp_test_ioctl(fd, KQP_IOCTL_BIND_ADDR, &b));
	EXPECT_EQ(0, kq_destroy(fd, id, NULL));
	close(fd);
}

TEST(migrate_rules)
{
	struct kqp_migrate_id m = { .size = sizeof(m) };
	struct kqp_get_event ev;
	int a = kq_open(), b = kq_open(), pfd[2];
	uint32_t id, reported;

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, pipe(pfd));
	ASSERT_EQ(0, kq_create(a, KQP_PS_TCP, KQP_QPT_RC, 5, &id));
	m.id = id;
	m.fd = -1;
	EXPECT_EQ(EBADF, kqp_test_ioctl(a, KQP_IOCTL_MIGRATE_ID, &m));
	m.fd = pfd[0];
	EXPECT_EQ(EINVAL, kqp_test_ioctl(a, KQP_IOCTL_MIGRATE_ID, &m));
	m.fd = a;
	EXPECT_EQ(0, kqp_test_ioctl(a, KQP_IOCTL_MIGRATE_ID, &m));
	EXPECT_EQ(id, m.out_id);

	/* An unreported event moves with the id. */
	ASSERT_EQ(0, kq_resolve_addr(a, id, addr(), port()));
	struct pollfd p = { .fd = a, .events = POLLIN };
	ASSERT_EQ(1, poll(&p, 1, 30000));
	m.fd = b;
	ASSERT_EQ(0, kqp_test_ioctl(a, KQP_IOCTL_MIGRATE_ID, &m));
	EXPECT_EQ(0, m.out_events_reported);
	EXPECT_EQ(0, poll(&p, 1, 0));
	EXPECT_EQ(ENOENT, kq_destroy(a, id, NULL));
	ASSERT_EQ(0, kq_expect(b, EV_ADDR_RESOLVED, &ev));
	EXPECT_EQ(m.out_id, ev.out_id);
	EXPECT_EQ(5, ev.out_uid);
	EXPECT_EQ(0, kq_destroy(b, m.out_id, &reported));
	EXPECT_EQ(1, reported);
	close(pfd[0]);
	close(pfd[1]);
	close(a);
	close(b);
}

/* A listener with an unreported request cannot move; its new id is here. */
TEST(migrate_listener_with_request_ebusy)
{
	struct kqp_migrate_id m = { .size = sizeof(m) };
	int s = kq_open(), c = kq_open(), other = kq_open();
	uint32_t lid, cid;
	uint16_t p = port();

	ASSERT_LE(0, s);
	ASSERT_LE(0, c);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, kq_listener_and_client(s, c, p, &lid, &cid));
	ASSERT_EQ(0, kq_connect(c, cid, 0x1234));
	struct pollfd pfd = { .fd = s, .events = POLLIN };
	ASSERT_EQ(1, poll(&pfd, 1, 30000));
	m.id = lid;
	m.fd = other;
	EXPECT_EQ(EBUSY, kqp_test_ioctl(s, KQP_IOCTL_MIGRATE_ID, &m));
	/*
	 * Destroying the listener destroys the unreported new id too, which
	 * rejects the request.
	 */
	EXPECT_EQ(0, kq_destroy(s, lid, NULL));
	struct kqp_get_event ev;
	ASSERT_EQ(0, kq_event(c, &ev, 30000));
	EXPECT_EQ(EV_REJECTED, ev.out_event);
	EXPECT_EQ(28, ev.out_status);
	EXPECT_EQ(0, kq_destroy(c, cid, NULL));
	close(s);
	close(c);
	close(other);
	EXPECT_EQ(0, cm_ids_of(getpid()));
}

/*
 * rdma_cm's private data length is a u8: a length of KQP_MAX_PRIVATE_DATA
 * (256) must be refused, not cut to 0 and the call made without the
 * data.  Each call is made where it would otherwise succeed.
 */
TEST(private_data_past_u8_einval)
{
	struct kqp_connect c = { .size = sizeof(c) };
	struct kqp_accept a = { .size = sizeof(a) };
	struct kqp_reject r = { .size = sizeof(r) };
	uint8_t pdata[KQP_MAX_PRIVATE_DATA] = { 1 };
	int s = kq_open(), cf = kq_open();
	struct kqp_get_event ev;
	uint32_t lid, cid;
	uint16_t p = port();

	ASSERT_LE(0, s);
	ASSERT_LE(0, cf);
	ASSERT_EQ(0, kq_listener_and_client(s, cf, p, &lid, &cid));
	c.id = cid;
	c.param.qp_num = 0x1234;
	c.param.retry_count = 7;
	c.param.rnr_retry_count = 7;
	c.param.private_data = (uintptr_t)pdata;
	c.param.private_data_len = sizeof(pdata);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(cf, KQP_IOCTL_CONNECT, &c));
	c.param.private_data_len = 8;
	ASSERT_EQ(0, kqp_test_ioctl(cf, KQP_IOCTL_CONNECT, &c));
	ASSERT_EQ(0, kq_expect(s, EV_CONNECT_REQUEST, &ev));
	/* The transport pads the data: at least ours arrived. */
	EXPECT_LE(8, ev.out_private_data_len);
	EXPECT_EQ(1, ev.out_private_data[0]);

	a.id = ev.out_id;
	a.param.qp_num = 0x5678;
	a.param.private_data = (uintptr_t)pdata;
	a.param.private_data_len = sizeof(pdata);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(s, KQP_IOCTL_ACCEPT, &a));
	r.id = ev.out_id;
	r.private_data = (uintptr_t)pdata;
	r.private_data_len = sizeof(pdata);
	EXPECT_EQ(EINVAL, kqp_test_ioctl(s, KQP_IOCTL_REJECT, &r));
	r.private_data_len = 8;
	EXPECT_EQ(0, kqp_test_ioctl(s, KQP_IOCTL_REJECT, &r));
	ASSERT_EQ(0, kq_event(cf, &ev, 30000));
	EXPECT_EQ(EV_REJECTED, ev.out_event);
	EXPECT_LE(8, ev.out_private_data_len);
	EXPECT_EQ(1, ev.out_private_data[0]);
	EXPECT_EQ(0, kq_destroy(cf, cid, NULL));
	EXPECT_EQ(0, kq_destroy(s, lid, NULL));
	close(s);
	close(cf);
}

/*
 * Closing a file destroys its ids whatever state they are in: bound,
 * listening with unreported requests, resolving, connecting to nobody,
 * connected, joined to a group.  Done in a child, so the ids' owner is
 * gone when we look.
 */
FIXTURE(close) {
};

FIXTURE_SETUP(close)
{
}

FIXTURE_TEARDOWN(close)
{
}

TEST_F_TIMEOUT(close, ids_in_every_state, 120)
{
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct kqp_join_mcast j = { .size = sizeof(j) };
		struct kqp_accept acc = { .size = sizeof(acc) };
		struct kqp_id_cmd est = { .size = sizeof(est) };
		struct kqp_get_event ev;
		int s = kq_open(), c = kq_open();
		uint32_t id, lid, c1, c2, c3, ud;
		uint16_t p = port(), p2 = port();

		if (s < 0 || c < 0)
			_exit(1);
		/* bound */
		if (kq_create(s, KQP_PS_TCP, KQP_QPT_RC, 1, &id) ||
		    kq_bind(s, id, port()))
			_exit(2);
		/* listening, two requests unreported */
		if (kq_create(s, KQP_PS_TCP, KQP_QPT_RC, 2, &lid) ||
		    kq_bind(s, lid, p) || kq_listen(s, lid, 8))
			_exit(3);
		if (kq_client(c, p, &c1) || kq_client(c, p, &c2) ||
		    kq_connect(c, c1, 0x2001) || kq_connect(c, c2, 0x2002))
			_exit(4);
		/* connected: a second listener whose request is accepted */
		if (kq_create(s, KQP_PS_TCP, KQP_QPT_RC, 3, &id) ||
		    kq_bind(s, id, p2) || kq_listen(s, id, 8) ||
		    kq_client(c, p2, &c3) || kq_connect(c, c3, 0x2003))
			_exit(5);
		do {
			if (kq_event(s, &ev, 30000))
				_exit(6);
		} while (ev.out_listen_id != id);
		acc.id = ev.out_id;
		acc.uid = 4;
		acc.param.qp_num = 0x3003;
		if (kqp_test_ioctl(s, KQP_IOCTL_ACCEPT, &acc))
			_exit(7);
		do {
			if (kq_event(c, &ev, 30000))
				_exit(8);
		} while (ev.out_event != EV_CONNECT_RESPONSE);
		est.id = c3;
		if (kqp_test_ioctl(c, KQP_IOCTL_ESTABLISH, &est))
			_exit(9);
		/* connecting to nobody, and resolving */
		if (kq_create(c, KQP_PS_TCP, KQP_QPT_RC, 5, &id) ||
		    kq_resolve_addr(c, id, "192.0.2.77", port()))
			_exit(10);
		/* a UD id in a multicast group */
		if (kq_create(s, KQP_PS_UDP, KQP_QPT_UD, 6, &ud) ||
		    kq_bind(s, ud, port()))
			_exit(11);
		j.id = ud;
		sin_of(&j.addr, "239.1.1.9", 0);
		if (kqp_test_ioctl(s, KQP_IOCTL_JOIN_MCAST, &j))
			_exit(12);
		/* Both files close with all of it: exit does it. */
		_exit(0);
	}
	ASSERT_TRUE(kqp_test_child_ok(_metadata, pid, "child"));
	EXPECT_EQ(0, cm_ids_of(pid));
}

/*
 * An id that had no QP when the REP came got CONNECT_RESPONSE; a QP made
 * on it then moves to RTR and RTS with the RTU its ESTABLISH sends, as
 * rdma_cm moves a QP it holds.  The server accepts with no QP of its
 * own: the CM exchange needs none.
 */
TEST_F_TIMEOUT(close, establish_moves_qp_made_after_response, 90)
{
	struct kqp_create_qp q = { .size = sizeof(q), .qp_type = KQP_QPT_RC };
	struct kqp_query_qp qq = { .size = sizeof(qq) };
	struct kqp_accept acc = { .size = sizeof(acc) };
	struct kqp_id_cmd est = { .size = sizeof(est) };
	int s = kq_open(), c = kq_open();
	struct kqp_get_event ev;
	uint32_t lid, cid;

	ASSERT_LE(0, s);
	ASSERT_LE(0, c);
	ASSERT_EQ(0, kq_listener_and_client(s, c, port(), &lid, &cid));
	ASSERT_EQ(0, kq_connect(c, cid, 0x2001));
	ASSERT_EQ(0, kq_expect(s, EV_CONNECT_REQUEST, &ev));
	acc.id = ev.out_id;
	acc.param.qp_num = 0x3001;
	ASSERT_EQ(0, kqp_test_ioctl(s, KQP_IOCTL_ACCEPT, &acc));
	ASSERT_EQ(0, kq_expect(c, EV_CONNECT_RESPONSE, NULL));

	q.id = cid;
	q.cap = (struct kqp_qp_cap){ 4, 4, 1, 1, 0, 0 };
	ASSERT_EQ(0, kqp_test_ioctl(c, KQP_IOCTL_CREATE_QP, &q));
	close(q.out_send_channel_fd);
	close(q.out_recv_channel_fd);
	qq.qp = q.out_qp;
	qq.attr_mask = KQP_QP_ATTR_STATE;
	ASSERT_EQ(0, kqp_test_ioctl(c, KQP_IOCTL_QUERY_QP, &qq));
	EXPECT_EQ(KQP_QPS_INIT, qq.out_attr.qp_state);

	est.id = cid;
	ASSERT_EQ(0, kqp_test_ioctl(c, KQP_IOCTL_ESTABLISH, &est));
	ASSERT_EQ(0, kqp_test_ioctl(c, KQP_IOCTL_QUERY_QP, &qq));
	EXPECT_EQ(KQP_QPS_RTS, qq.out_attr.qp_state);
	ASSERT_EQ(0, kq_expect(s, EV_ESTABLISHED, NULL));
	close(c);
	close(s);
}

TEST_HARNESS_MAIN
