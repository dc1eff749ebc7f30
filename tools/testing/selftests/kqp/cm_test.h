/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers for tests written against librdmacm's API only, so that the same
 * source builds against libkqp and against rdma-core's librdmacm: the
 * rdma-core build shows that what a test expects is what librdmacm does.
 */
#ifndef KQP_CM_TEST_H
#define KQP_CM_TEST_H

#include <arpa/inet.h>
#include <poll.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

/* Long enough for TCG; a test that waits this long has failed. */
#define CM_TIMEOUT_MS 30000

/* The bench's address on the Soft-RoCE netdev, with @port. */
static inline struct sockaddr_in cm_addr(uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const char *s = getenv("KQP_TEST_ADDR");

	inet_pton(AF_INET, s ? s : "192.0.2.1", &sin.sin_addr);
	sin.sin_port = htons(port);
	return sin;
}

/*
 * The bench's IPv6 address on the Soft-RoCE netdev (KQP_TEST_ADDR6,
 * which guest.sh sets), with @port; false where there is none.
 */
static inline bool cm_addr6(struct sockaddr_in6 *sin6, uint16_t port)
{
	const char *s = getenv("KQP_TEST_ADDR6");

	memset(sin6, 0, sizeof(*sin6));
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	return s && *s && inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1;
}

/* A port of our own: tests and processes must not collide. */
static inline uint16_t cm_port(void)
{
	static uint16_t next;

	if (!next)
		next = 20000 + (getpid() % 1000) * 20;
	return next++;
}

/*
 * Next event on @ch within @ms, or NULL with errno ETIMEDOUT (or the
 * error of rdma_get_cm_event()).
 */
static inline struct rdma_cm_event *cm_next(struct rdma_event_channel *ch,
					    int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n;

	n = poll(&pfd, 1, ms);
	if (n <= 0) {
		errno = n ? errno : ETIMEDOUT;
		return NULL;
	}
	if (rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/*
 * Wait for an event of type @type on @ch and return it (to be acked by
 * the caller); any other event is a failure, reported on stderr.
 */
static inline struct rdma_cm_event *cm_expect(struct rdma_event_channel *ch,
					      enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = cm_next(ch, CM_TIMEOUT_MS);

	if (!ev) {
		fprintf(stderr, "# waiting for %s: %s\n", rdma_event_str(type),
			strerror(errno));
		return NULL;
	}
	if (ev->event != type) {
		fprintf(stderr, "# expected %s, got %s status %d\n",
			rdma_event_str(type), rdma_event_str(ev->event),
			ev->status);
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

/*
 * Wait for a connection request on @ch, ack it and return the new id;
 * NULL (reported on stderr) for anything else.
 */
static inline struct rdma_cm_id *cm_expect_request(struct rdma_event_channel *ch)
{
	struct rdma_cm_event *ev = cm_expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *id;

	if (!ev)
		return NULL;
	id = ev->id;
	rdma_ack_cm_event(ev);
	return id;
}

/* Wait for @type with status 0 and ack it; 0 on success. */
static inline int cm_expect_ack(struct rdma_event_channel *ch,
				enum rdma_cm_event_type type)
{
	struct rdma_cm_event *ev = cm_expect(ch, type);
	int status;

	if (!ev)
		return -1;
	status = ev->status;
	rdma_ack_cm_event(ev);
	if (status)
		fprintf(stderr, "# %s with status %d\n", rdma_event_str(type),
			status);
	return status ? -1 : 0;
}

/* How many rdma_cm ids `rdma res` shows for process @pid. */
static inline int cm_ids_of(pid_t pid)
{
	char cmd[128], line[512], key[32];
	FILE *f;
	int n = 0;

	snprintf(cmd, sizeof(cmd), "rdma res show cm_id 2>/dev/null");
	snprintf(key, sizeof(key), " pid %d ", (int)pid);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, key))
			n++;
	if (pclose(f))
		return -1;
	return n;
}

static const char req_data[] __attribute__((unused)) =
	"kqp connect request private data";
static const char rep_data[] __attribute__((unused)) =
	"kqp accept reply private data, a little longer";

static inline int pdata_is(const struct rdma_conn_param *p, const char *s)
{
	size_t n = strlen(s) + 1;

	return p->private_data && p->private_data_len >= n &&
	       !memcmp(p->private_data, s, n);
}

FIXTURE(cm) {
	struct rdma_event_channel *sch;	/* server */
	struct rdma_event_channel *cch;	/* client */
	uint16_t port;
};

FIXTURE_SETUP(cm)
{
	self->sch = rdma_create_event_channel();
	ASSERT_NE(NULL, self->sch) TH_LOG("%s", strerror(errno));
	self->cch = rdma_create_event_channel();
	ASSERT_NE(NULL, self->cch);
	self->port = cm_port();
}

FIXTURE_TEARDOWN(cm)
{
	rdma_destroy_event_channel(self->cch);
	rdma_destroy_event_channel(self->sch);
}

/* Listen on the bench address and self->port. */
static inline struct rdma_cm_id *listener(struct rdma_event_channel *ch,
				   uint16_t port, enum rdma_port_space ps,
				   int backlog)
{
	struct sockaddr_in sin = cm_addr(port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, ps))
		return NULL;
	if (rdma_bind_addr(id, (struct sockaddr *)&sin) ||
	    rdma_listen(id, backlog)) {
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

/* An id on @ch with its address and route resolved to the bench port. */
static inline struct rdma_cm_id *resolved(struct rdma_event_channel *ch,
				   uint16_t port, enum rdma_port_space ps)
{
	struct sockaddr_in sin = cm_addr(port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, ps))
		return NULL;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin, 2000) ||
	    cm_expect_ack(ch, RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(id, 2000) ||
	    cm_expect_ack(ch, RDMA_CM_EVENT_ROUTE_RESOLVED)) {
		rdma_destroy_id(id);
		return NULL;
	}
	return id;
}

/*
 * @p as a path record for RDMA_OPTION_IB_PATH, flagged @flags (the test's
 * own packing of <infiniband/sa.h>'s struct ibv_path_record).
 */
static inline void cm_path_data(struct ibv_path_data *d,
				const struct ibv_sa_path_rec *p, uint32_t flags)
{
	memset(d, 0, sizeof(*d));
	d->flags = flags;
	d->path.dgid = p->dgid;
	d->path.sgid = p->sgid;
	d->path.dlid = p->dlid;
	d->path.slid = p->slid;
	d->path.flowlabel_hoplimit = htobe32(be32toh(p->flow_label) << 8 |
					     p->hop_limit);
	d->path.tclass = p->traffic_class;
	d->path.reversible_numpath = 0x81;
	d->path.pkey = p->pkey;
	d->path.qosclass_sl = htobe16(p->sl);
	d->path.mtu = p->mtu | 0x80;
	d->path.rate = p->rate | 0x80;
	d->path.packetlifetime = p->packet_life_time | 0x80;
}

/*
 * The errno a child after fork() gets for its parent's channel: the
 * kernel's rdma_cm file gives EACCES (the child's credentials are not the
 * opener's), kqp EPERM (the session is not the child's).
 */
#ifdef KQP_TEST_REFERENCE
#define CHILD_REFUSED EACCES
#else
#define CHILD_REFUSED EPERM
#endif

#define CM_PATH_FLAGS (IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_PRIMARY | \
		       IBV_PATH_FLAG_BIDIRECTIONAL)

#endif /* KQP_CM_TEST_H */
