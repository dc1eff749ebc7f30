// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Stream rsockets (rsocket.h): the table of rsockets, and the calls that
 * make, connect, accept, configure and close them.
 *
 * An rsocket is an id with its own event channel, non-blocking; the
 * caller's handle is that channel's fd, as with rdma-core, so it is a
 * real fd nothing else holds.  Connecting and accepting are rdma-core's
 * steps and messages: resolve the address and the route, make the QP
 * and its buffers, connect with the private data.  A listener's connect
 * requests are accepted in the background, as rdma-core's are
 * (rsocket_accept.c), and raccept() takes the next one accepted.  A
 * call that would block on a non-blocking rsocket returns EINPROGRESS
 * (connect) or EAGAIN, and the next call on it, or rpoll(), takes the
 * next step.
 *
 * New rsockets take rdma-core's defaults, or the machine's tunables in
 * /etc/rdma/rsocket/ as rdma-core reads them.
 *
 * Datagram rsockets are rsocket_dgram.c's; the calls here hand them on.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "kqp_priv.h"
#include "rsocket.h"

#define KRS_RESOLVE_MS	2000
#define KRS_CONF_DIR	"/etc/rdma/rsocket"

/*
 * New rsockets' defaults: rdma-core's, or what the machine's tunables in
 * KRS_CONF_DIR say, read once, as rdma-core reads them (rsocket(7)).
 */
static struct {
	uint32_t sq_size, rq_size, sq_inline, mem, wmem, iomap_size;
} krs_def = {
	KRS_DEF_SQSIZE, KRS_DEF_RQSIZE, KRS_DEF_INLINE, KRS_DEF_MEM,
	KRS_DEF_WMEM, 0,
};
static pthread_once_t krs_conf_once = PTHREAD_ONCE_INIT;

/* The number file @path holds, saturated; false when there is none. */
static bool krs_read_num(const char *path, uint32_t *v)
{
	unsigned long n;
	FILE *f;
	bool ok;

	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fscanf(f, "%lu", &n) == 1;
	fclose(f);
	if (ok)
		*v = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
	return ok;
}

/* The number in tunable @name; false when there is none. */
static bool krs_conf(const char *name, uint32_t *v)
{
	char path[64];

	snprintf(path, sizeof(path), KRS_CONF_DIR "/%s", name);
	return krs_read_num(path, v);
}

static uint32_t krs_min(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * Each bounded as its option is; polling_time and wake_up_interval tune
 * rdma-core's busy polling, which kqp's rsockets do not do.
 */
static void krs_configure(void)
{
	uint32_t v;

	if (krs_conf("sqsize_default", &v))
		krs_def.sq_size = krs_min(v, KRS_QP_MAX_SIZE);
	if (krs_conf("rqsize_default", &v))
		krs_def.rq_size = krs_min(v, KRS_QP_MAX_SIZE);
	if (krs_conf("inline_default", &v))
		krs_def.sq_inline = krs_min(v, KRS_QP_MAX_SIZE);
	if (krs_conf("mem_default", &v))
		krs_def.mem = v < KRS_SNDLOWAT ? KRS_SNDLOWAT :
			      krs_min(v, KRS_MAX_BUF) & ~1u;
	if (krs_conf("wmem_default", &v))
		krs_def.wmem = v < KRS_SNDLOWAT ? KRS_SNDLOWAT << 1 :
			       krs_min(v, KRS_MAX_BUF);
	if (krs_conf("iomap_size", &v))
		krs_def.iomap_size = krs_iomap_unscale(krs_iomap_scale(v));
}

/* The table: index (an fd) -> rsocket. */
static pthread_mutex_t krs_table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct krs **krs_table;
static int krs_table_size;

/*
 * fork(): the table and the thread's list are consistent in the child;
 * the child has no background thread, and its parent's rsockets are not
 * its own (krs_forget_parents()).  The table's lock, then the thread's.
 * Registered when the library is loaded: the table's lock is taken
 * before any rsocket is made (rpoll() of plain fds), and a pthread_once()
 * that a fork() interrupts runs again in the child, registering twice.
 */
static void krs_fork_prepare(void)
{
	pthread_mutex_lock(&krs_table_lock);
	krs_svc_lock_all();
	krs_poll_lock();
}

static void krs_fork_parent(void)
{
	krs_poll_unlock();
	krs_svc_unlock_all();
	pthread_mutex_unlock(&krs_table_lock);
}

static void krs_fork_child(void)
{
	krs_poll_fork_child();
	krs_svc_fork_child();
	pthread_mutex_unlock(&krs_table_lock);
}

__attribute__((constructor)) static void krs_fork_init(void)
{
	pthread_atfork(krs_fork_prepare, krs_fork_parent, krs_fork_child);
}

/* The table's entry @index, with krs_table_lock held; NULL if none. */
static struct krs *krs_at(int index)
{
	return index >= 0 && index < krs_table_size ? krs_table[index] : NULL;
}

int krs_insert(struct krs *rs)
{
	int ret = 0;

	pthread_mutex_lock(&krs_table_lock);
	if (rs->index >= krs_table_size) {
		int n = rs->index + 64;
		struct krs **t = realloc(krs_table, n * sizeof(*t));

		if (!t) {
			ret = kqp_err(ENOMEM);
			goto out;
		}
		memset(t + krs_table_size, 0,
		       (n - krs_table_size) * sizeof(*t));
		krs_table = t;
		krs_table_size = n;
	}
	rs->ref = 1;
	krs_table[rs->index] = rs;
out:
	pthread_mutex_unlock(&krs_table_lock);
	return ret;
}

/*
 * The rsocket @index names, with its mutex held; NULL if none.  The
 * table's lock is held while the rsocket's is taken, and rclose() takes
 * the rsocket out of the table under both, so an rsocket found here is
 * not freed under its caller.
 */
struct krs *krs_get(int index)
{
	struct krs *rs;
	int err = EBADF;

	pthread_mutex_lock(&krs_table_lock);
	rs = krs_at(index);
	/* Its parent's, in a fork child: see krs_forget_parents(). */
	if (rs && rs->gen != kqp_fork_gen()) {
		rs = NULL;
		err = EPERM;
	}
	if (rs)
		rs->ref++;
	pthread_mutex_unlock(&krs_table_lock);
	if (!rs) {
		errno = err;
		return NULL;
	}
	pthread_mutex_lock(&rs->lock);
	/* Closed while we waited for it: it is no rsocket any more. */
	if (rs->closed) {
		krs_put(rs);
		errno = EBADF;
		return NULL;
	}
	return rs;
}

/* Is @index a fork parent's rsocket, in this child? */
bool krs_is_parents(int index)
{
	struct krs *rs;
	bool ret;

	pthread_mutex_lock(&krs_table_lock);
	rs = krs_at(index);
	ret = rs && rs->gen != kqp_fork_gen();
	pthread_mutex_unlock(&krs_table_lock);
	return ret;
}

/* Drop a reference; the last, after rclose(), frees the rsocket. */
static void krs_release(struct krs *rs)
{
	bool last;

	pthread_mutex_lock(&krs_table_lock);
	last = !--rs->ref;
	pthread_mutex_unlock(&krs_table_lock);
	if (last)
		krs_free(rs);
}

void krs_put(struct krs *rs)
{
	pthread_mutex_unlock(&rs->lock);
	krs_release(rs);
}

int krs_set_nonblock(int fd)
{
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK))
		return -1;
	return 0;
}

struct krs *krs_alloc(const struct krs *parent, int domain)
{
	struct krs *rs = calloc(1, sizeof(*rs));

	pthread_once(&krs_conf_once, krs_configure);
	if (!rs)
		return kqp_err_ptr(ENOMEM);
	pthread_mutex_init(&rs->lock, NULL);
	rs->gen = kqp_fork_gen();
	rs->index = -1;
	rs->accept_queue[0] = rs->accept_queue[1] = -1;
	rs->accept_fd = -1;
	rs->domain = domain;
	if (parent) {
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->sq_inline = parent->sq_inline;
		rs->iomap_size = parent->iomap_size;
		rs->fd_flags = parent->fd_flags;
		/* Keep-alive is each rsocket's own, as in rdma-core. */
		rs->so_opts = parent->so_opts & ~(1u << SO_KEEPALIVE);
		rs->tcp_opts = parent->tcp_opts;
	} else {
		rs->sbuf_size = krs_def.wmem;
		rs->rbuf_size = krs_def.mem;
		rs->sq_size = krs_def.sq_size;
		rs->rq_size = krs_def.rq_size;
		rs->sq_inline = krs_def.sq_inline;
		rs->iomap_size = krs_def.iomap_size;
	}
	return rs;
}

/* Everything the rsocket holds; it is out of the table, or never was in. */
void krs_free(struct krs *rs)
{
	int *fds[] = { &rs->accept_queue[0], &rs->accept_queue[1],
		       &rs->accept_fd };
	unsigned int i;

	krs_backlog_leave(rs);
	if (rs->dg)
		krs_dg_free(rs);
	krs_free_ep(rs);
	free(rs->route);
	if (rs->id)
		rdma_destroy_id(rs->id);
	if (rs->ch)
		rdma_destroy_event_channel(rs->ch);
	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}

/* An id with a channel of its own, non-blocking, and the index it gives. */
int krs_new_channel(struct krs *rs)
{
	rs->ch = rdma_create_event_channel();
	if (!rs->ch)
		return -1;
	if (krs_set_nonblock(rs->ch->fd))
		return -1;
	rs->index = rs->ch->fd;
	return 0;
}

/* Clamp the queues to the device, as rdma-core does. */
static void krs_set_qp_size(struct krs *rs)
{
	struct ibv_device_attr attr;
	uint32_t max = KRS_QP_MAX_SIZE;

	if (!ibv_query_device(rs->id->verbs, &attr) &&
	    (uint32_t)attr.max_qp_wr < max)
		max = attr.max_qp_wr;
	if (rs->sq_size > max)
		rs->sq_size = max;
	if (rs->sq_size < KRS_QP_MIN_SIZE)
		rs->sq_size = KRS_QP_MIN_SIZE;
	if (rs->rq_size > max)
		rs->rq_size = max;
	if (rs->rq_size < KRS_QP_MIN_SIZE)
		rs->rq_size = KRS_QP_MIN_SIZE;
}

/* The connection's QP, CQ and buffers, on the id's device. */
/*
 * The completion channel, one CQ for both queues and a QP of @type on
 * rs->id, every send signalled, with the queues' sizes and the rest of
 * @attr's caps; @attr gets the caps written back.
 */
int krs_create_qp(struct krs *rs, enum ibv_qp_type type,
		  struct ibv_qp_init_attr *attr)
{
	rs->cch = ibv_create_comp_channel(rs->id->verbs);
	if (!rs->cch || krs_set_nonblock(rs->cch->fd))
		return -1;
	rs->cq = ibv_create_cq(rs->id->verbs, rs->sq_size + rs->rq_size, rs,
			       rs->cch, 0);
	if (!rs->cq)
		return -1;
	attr->qp_context = rs;
	attr->send_cq = rs->cq;
	attr->recv_cq = rs->cq;
	attr->qp_type = type;
	attr->sq_sig_all = 1;
	attr->cap.max_send_wr = rs->sq_size;
	attr->cap.max_recv_wr = rs->rq_size;
	return rdma_create_qp(rs->id, NULL, attr);
}

int krs_create_ep(struct krs *rs)
{
	struct ibv_qp_init_attr attr = {};

	krs_set_qp_size(rs);
	if (rs->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP)
		return kqp_err(ENOTSUP);
	attr.cap.max_send_sge = 2;
	attr.cap.max_recv_sge = 1;
	attr.cap.max_inline_data = rs->sq_inline;
	if (krs_create_qp(rs, IBV_QPT_RC, &attr))
		return -1;
	rs->sq_inline = attr.cap.max_inline_data;
	return krs_init_bufs(rs);
}

static int krs_event_errno(const struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return ECONNREFUSED;
	if (ev->status < 0)
		return -ev->status;
	if (ev->status > 0 && ev->status < 4096)
		return ev->status;
	return ECONNREFUSED;
}

static int krs_connect_fail(struct krs *rs, int err)
{
	rs->state = KRS_CONNECT_ERROR;
	rs->err = err;
	return kqp_err(err);
}

/*
 * The route: the one RDMA_ROUTE gave, used once as rdma-core's is (the
 * kernel then reports ROUTE_RESOLVED), or else rdma_cm's.
 */
static int krs_resolve_route(struct krs *rs)
{
	int ret;

	if (!rs->route)
		return rdma_resolve_route(rs->id, KRS_RESOLVE_MS);
	ret = rdma_set_option(rs->id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH,
			      rs->route, rs->route_len);
	free(rs->route);
	rs->route = NULL;
	return ret;
}

/* One CM event on a connecting, accepting or connected rsocket. */
static int krs_cm_event_state(struct krs *rs, struct rdma_cm_event *ev)
{
	struct rdma_conn_param param = {};
	struct krs_conn_data c;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != KRS_RESOLVING_ADDR)
			return 0;
		if (krs_resolve_route(rs))
			return krs_connect_fail(rs, errno);
		rs->state = KRS_RESOLVING_ROUTE;
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state != KRS_RESOLVING_ROUTE)
			return 0;
		if (krs_create_ep(rs))
			return krs_connect_fail(rs, errno);
		krs_format_conn_data(rs, &c);
		param.private_data = &c;
		param.private_data_len = sizeof(c);
		param.flow_control = 1;
		param.retry_count = 7;
		param.rnr_retry_count = 7;
		if (rdma_connect(rs->id, &param))
			return krs_connect_fail(rs, errno);
		rs->state = KRS_CONNECTING;
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->state == KRS_CONNECTING) {
			if (krs_save_conn_data(rs, ev->param.conn.private_data,
					       ev->param.conn.private_data_len)) {
				rdma_disconnect(rs->id);
				return krs_connect_fail(rs, EPROTO);
			}
			rs->state = KRS_CONNECT_RDWR;
		} else if (rs->state == KRS_ACCEPTING) {
			rs->state = KRS_CONNECT_RDWR;
		}
		return 0;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		if (rs->state & KRS_OPENING)
			return krs_connect_fail(rs, krs_event_errno(ev));
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (rs->state & KRS_OPENING)
			return krs_connect_fail(rs, ECONNRESET);
		/* What was received stays readable. */
		if (rs->state & KRS_CONNECTED)
			rs->state = KRS_DISCONNECTED;
		return 0;
	default:
		return 0;
	}
}

/*
 * Whoever moved @rs on from @before (the owner, another of its threads,
 * the background thread) may have taken the event from under an rpoll()
 * sleeping on the channel: wake rpoll()'s sleepers when a connect ended
 * or the connection failed.  An accepted rsocket not yet handed to
 * raccept() (accept_fd) has no sleeper.
 */
void krs_state_moved(const struct krs *rs, int before)
{
	int after = rs->state;

	if (after == before || rs->accept_fd >= 0)
		return;
	if (((before & KRS_OPENING) && !(after & KRS_OPENING)) ||
	    (after & ~before &
	     (KRS_CONNECT_ERROR | KRS_DISCONNECTED | KRS_ERROR)))
		krs_poll_wake();
}

static int krs_cm_event(struct krs *rs, struct rdma_cm_event *ev)
{
	int before = rs->state, ret;

	ret = krs_cm_event_state(rs, ev);
	krs_state_moved(rs, before);
	return ret;
}

/* The events the rsocket's channel holds, taken without waiting. */
int krs_drain_cm(struct krs *rs)
{
	struct rdma_cm_event *ev;
	int ret = 0;

	if (rs->state == KRS_LISTENING)
		return 0;
	while (!rdma_get_cm_event(rs->ch, &ev)) {
		ret = krs_cm_event(rs, ev);
		rdma_ack_cm_event(ev);
		if (ret)
			break;
	}
	return ret;
}

int krs_wait_readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) < 0 ? -1 : 0;
}

/*
 * Take the connection's next steps: all of them, or with @nonblock those
 * whose events are there (-1 and EINPROGRESS when more are to come).
 * 0 once connected; -1 and the connection's error once it failed.
 */
int krs_connect_step(struct krs *rs, bool nonblock)
{
	struct rdma_cm_event *ev;
	int ret;

	for (;;) {
		if (rs->state & KRS_CONNECTED)
			return 0;
		if (rs->state == KRS_CONNECT_ERROR)
			return kqp_err(rs->err);
		if (!(rs->state & KRS_OPENING))
			return kqp_err(ENOTCONN);
		if (!rdma_get_cm_event(rs->ch, &ev)) {
			ret = krs_cm_event(rs, ev);
			rdma_ack_cm_event(ev);
			if (ret)
				return ret;
			continue;
		}
		if (errno != EAGAIN)
			return krs_connect_fail(rs, errno);
		if (nonblock)
			return kqp_err(EINPROGRESS);
		/*
		 * The background thread may take the event first: wait a
		 * while only, then look at the state again.
		 */
		pthread_mutex_unlock(&rs->lock);
		ret = krs_wait_readable(rs->ch->fd, 100);
		pthread_mutex_lock(&rs->lock);
		if (ret)
			return ret;
		if (rs->closed)
			return kqp_err(EBADF);
	}
}

/*
 * What rpoll() waits on for @rs: the CQ's channel once connected (a
 * datagram rsocket's once it has a QP; what comes over UDP wakes rpoll()
 * through krs_poll_wake()).
 */
int krs_wait_fd(const struct krs *rs)
{
	if (rs->dg)
		return rs->cch ? rs->cch->fd : -1;
	if (rs->state == KRS_LISTENING)
		return rs->accept_queue[0];
	if ((rs->state & (KRS_CONNECTED | KRS_DISCONNECTED | KRS_ERROR)) &&
	    rs->cch)
		return rs->cch->fd;
	return rs->ch->fd;
}

KQP_EXPORT int rsocket(int domain, int type, int protocol)
{
	struct krs *rs;

	if (domain != AF_INET && domain != AF_INET6)
		return kqp_err(EAFNOSUPPORT);
	if (type == SOCK_DGRAM) {
		if (protocol && protocol != IPPROTO_UDP)
			return kqp_err(ENOTSUP);
		return krs_dg_socket(domain);
	}
	if (type != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP))
		return kqp_err(ENOTSUP);
	rs = krs_alloc(NULL, domain);
	if (!rs)
		return -1;
	if (krs_new_channel(rs) ||
	    rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP) ||
	    krs_insert(rs)) {
		int err = errno;

		krs_free(rs);
		return kqp_err(err);
	}
	rs->id->route.addr.src_addr.sa_family = domain;
	return rs->index;
}

/* An address rbind() or rconnect() may hand on: a whole sockaddr_in(6). */
static bool krs_addr_ok(const struct sockaddr *addr, socklen_t addrlen)
{
	return addr && addrlen >= sizeof(struct sockaddr_in) &&
	       (addr->sa_family != AF_INET6 ||
		addrlen >= sizeof(struct sockaddr_in6));
}

KQP_EXPORT int rbind(int s, const struct sockaddr *addr, socklen_t addrlen)
{
	struct krs *rs;
	int ret;

	if (!krs_addr_ok(addr, addrlen))
		return kqp_err(EINVAL);
	rs = krs_get(s);
	if (!rs)
		return -1;
	if (rs->dg) {
		ret = krs_dg_bind(rs, addr, addrlen);
	} else if (rs->state != KRS_INIT) {
		ret = kqp_err(EINVAL);
	} else {
		ret = rdma_bind_addr(rs->id, (struct sockaddr *)addr);
		if (!ret)
			rs->state = KRS_BOUND;
	}
	krs_put(rs);
	return ret;
}

KQP_EXPORT int rconnect(int s, const struct sockaddr *addr, socklen_t addrlen)
{
	struct krs *rs;
	int ret;

	if (!krs_addr_ok(addr, addrlen) || addrlen > sizeof(rs->dst))
		return kqp_err(EINVAL);
	rs = krs_get(s);
	if (!rs)
		return -1;
	if (rs->dg) {
		ret = krs_dg_connect(rs, addr, addrlen);
		goto out;
	}
	if (rs->state == KRS_INIT || rs->state == KRS_BOUND) {
		memcpy(&rs->dst, addr, addrlen);
		if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)&rs->dst,
				      KRS_RESOLVE_MS)) {
			ret = krs_connect_fail(rs, errno);
			goto out;
		}
		rs->state = KRS_RESOLVING_ADDR;
	} else if (rs->state & KRS_CONNECTED) {
		ret = kqp_err(EISCONN);
		goto out;
	} else if (!(rs->state & KRS_OPENING)) {
		ret = kqp_err(rs->state == KRS_LISTENING ? EINVAL : ENOTCONN);
		goto out;
	}
	ret = krs_connect_step(rs, rs->fd_flags & O_NONBLOCK);
	/* The rest in the background, and in the owner's next calls. */
	if (ret && errno == EINPROGRESS && !krs_svc_add(rs, KRS_SVC_CM))
		errno = EINPROGRESS;
out:
	krs_put(rs);
	return ret;
}

KQP_EXPORT int rshutdown(int s, int how)
{
	struct krs *rs;
	int ret;

	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return kqp_err(EINVAL);
	rs = krs_get(s);
	if (!rs)
		return -1;
	ret = rs->dg ? krs_dg_shutdown(rs, how) : krs_shutdown(rs, how);
	krs_put(rs);
	return ret;
}

/*
 * A fork child's copy of an rsocket its parent made: the connection, its
 * QP and its buffers are the parent's session's, which the child may not
 * use (kqp(7)), as the kernel's rdma_cm file refuses a fork child.  Each
 * call on it fails with EPERM; rclose() closes the child's copies of its
 * fds and nothing else, so the parent's connection goes on.  Its mutex is
 * never taken: another thread of the parent may have held it at fork().
 */
static void krs_forget_parents(struct krs *rs)
{
	int fds[] = { rs->ch ? rs->ch->fd : -1, rs->cch ? rs->cch->fd : -1,
		      rs->accept_queue[0], rs->accept_queue[1], rs->accept_fd,
		      rs->dg ? rs->index : -1 };
	unsigned int i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0 && fds[i] != fds[0])
			close(fds[i]);
	/* The number is no channel of the library's any more. */
	if (fds[0] >= 0)
		kqp_channel_close(fds[0]);
}

/*
 * The rsocket leaves the table at once; it is freed when the last call
 * still using it returns.  A call waiting in it finds it closed and
 * fails with EBADF.  @graceful: rclose()'s shutdown, which waits for the
 * peer to take what was sent; without, the connection is just cut, as
 * the background thread does to what nobody took (it must not wait on a
 * peer).
 */
int krs_close(int s, bool graceful)
{
	struct krs *rs;

	pthread_mutex_lock(&krs_table_lock);
	rs = krs_at(s);
	if (rs)
		krs_table[s] = NULL;
	pthread_mutex_unlock(&krs_table_lock);
	if (!rs)
		return kqp_err(EBADF);
	if (rs->gen != kqp_fork_gen()) {
		krs_forget_parents(rs);
		return 0;
	}
	pthread_mutex_lock(&rs->lock);
	if (rs->svc)
		krs_svc_forget(rs);
	if (rs->dg)
		krs_dg_close(rs);
	else if (graceful && (rs->state & KRS_CONNECTED))
		krs_shutdown(rs, SHUT_RDWR);
	else if (rs->id && rs->id->qp)
		rdma_disconnect(rs->id);
	rs->closed = true;
	pthread_mutex_unlock(&rs->lock);
	/* The table's reference. */
	krs_release(rs);
	return 0;
}

KQP_EXPORT int rclose(int s)
{
	return krs_close(s, true);
}

static int krs_copy_addr(struct sockaddr *dst, socklen_t *len,
			 const struct sockaddr *src)
{
	socklen_t size = src->sa_family == AF_INET6 ?
			 sizeof(struct sockaddr_in6) :
			 sizeof(struct sockaddr_in);

	if (!dst || !len)
		return kqp_err(EFAULT);
	memcpy(dst, src, *len < size ? *len : size);
	*len = size;
	return 0;
}

KQP_EXPORT int rgetpeername(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	struct krs *rs = krs_get(s);
	int ret;

	if (!rs)
		return -1;
	if (rs->dg)
		ret = getpeername(rs->index, addr, addrlen);
	else
		ret = rs->state &
		      (KRS_OPENING | KRS_CONNECTED | KRS_DISCONNECTED) ?
		      krs_copy_addr(addr, addrlen, rdma_get_peer_addr(rs->id)) :
		      kqp_err(ENOTCONN);
	krs_put(rs);
	return ret;
}

KQP_EXPORT int rgetsockname(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	return KRS_CALL(s, rs, rs->dg ? getsockname(rs->index, addr, addrlen) :
			       krs_copy_addr(addr, addrlen, rdma_get_local_addr(rs->id)));
}

/* An option's bit in its level's set, when it is a yes-or-no one. */
static void krs_opt_bit(uint32_t *set, int optname, bool on)
{
	if (optname < 0 || optname >= 32)
		return;
	if (on)
		*set |= 1u << optname;
	else
		*set &= ~(1u << optname);
}

/* The field behind an option of SOL_RDMA; NULL for one there is not. */
static uint16_t *krs_rdma_opt(struct krs *rs, int optname)
{
	switch (optname) {
	case RDMA_SQSIZE:
		return &rs->sq_size;
	case RDMA_RQSIZE:
		return &rs->rq_size;
	case RDMA_INLINE:
		return &rs->sq_inline;
	case RDMA_IOMAPSIZE:
		return &rs->iomap_size;
	default:
		return NULL;
	}
}

/*
 * SO_KEEPALIVE: the background thread sends a keep-alive each
 * keepalive_time seconds (TCP_KEEPIDLE; the kernel's TCP default until
 * set) while the rsocket is connected, as rdma-core's does.
 */
static int krs_set_keepalive(struct krs *rs, int on)
{
	uint32_t t;

	if (on && !rs->keepalive_time) {
		if (!krs_read_num("/proc/sys/net/ipv4/tcp_keepalive_time",
				  &t) || !t || t > INT_MAX)
			t = 7200;
		rs->keepalive_time = (int)t;
	}
	if (on) {
		rs->ka_next = krs_now() + rs->keepalive_time;
		if (krs_svc_add(rs, KRS_SVC_KEEPALIVE))
			return -1;
	}
	krs_opt_bit(&rs->so_opts, SO_KEEPALIVE, on);
	return 0;
}

/*
 * RDMA_ROUTE: whole path records, as many as the kernel takes; one of
 * them flagged GMP, PRIMARY and BIDIRECTIONAL, or the connect fails with
 * EINVAL.  rdma-core takes any length and fails at the connect.
 */
static int krs_set_route(struct krs *rs, const void *optval, socklen_t optlen)
{
	void *p;

	if (rs->state >= KRS_OPENING || !optlen ||
	    optlen % sizeof(*rs->route) ||
	    optlen / sizeof(*rs->route) > KQP_OPTION_IB_PATH_MAX)
		return kqp_err(EINVAL);
	p = malloc(optlen);
	if (!p)
		return kqp_err(ENOMEM);
	memcpy(p, optval, optlen);
	free(rs->route);
	rs->route = p;
	rs->route_len = optlen;
	return 0;
}

/* A path of the id's route as a path record, in *@d. */
static void krs_path_data(struct ibv_path_data *d,
			  const struct ibv_sa_path_rec *p, bool primary)
{
	struct ibv_path_record *r = &d->path;

	memset(d, 0, sizeof(*d));
	d->flags = IBV_PATH_FLAG_GMP | IBV_PATH_FLAG_BIDIRECTIONAL |
		   (primary ? IBV_PATH_FLAG_PRIMARY : IBV_PATH_FLAG_ALTERNATE);
	r->dgid = p->dgid;
	r->sgid = p->sgid;
	r->dlid = p->dlid;
	r->slid = p->slid;
	r->flowlabel_hoplimit = htobe32((be32toh(p->flow_label) & 0xfffff) << 8 |
					p->hop_limit);
	r->tclass = p->traffic_class;
	r->reversible_numpath = (p->reversible ? 0x80 : 0) | 1;
	r->pkey = p->pkey;
	r->qosclass_sl = htobe16(p->sl & 0xf);
	/* Each selector "exactly" (2), as the values are. */
	r->mtu = (p->mtu & 0x3f) | 2 << 6;
	r->rate = (p->rate & 0x3f) | 2 << 6;
	r->packetlifetime = (p->packet_life_time & 0x3f) | 2 << 6;
	r->preference = p->preference;
}

/*
 * The route RDMA_ROUTE gave, until a connect used it; then the id's, one
 * record per path that fits.  rdma-core copies the other way in the first
 * case (the caller's buffer over the route it keeps), and gives each
 * path's preference as its flags in the second.
 */
static int krs_get_route(struct krs *rs, void *optval, socklen_t *optlen)
{
	struct ibv_path_data *d = optval;
	socklen_t len = 0;
	int i;

	if (rs->route) {
		if (*optlen < rs->route_len)
			return kqp_err(EINVAL);
		memcpy(optval, rs->route, rs->route_len);
		*optlen = rs->route_len;
		return 0;
	}
	if (*optlen < sizeof(*d))
		return kqp_err(EINVAL);
	for (i = 0; i < rs->id->route.num_paths &&
		    len + sizeof(*d) <= *optlen; i++, len += sizeof(*d))
		krs_path_data(d++, &rs->id->route.path_rec[i], !i);
	*optlen = len;
	return 0;
}

static int krs_setsockopt(struct krs *rs, int level, int optname,
			  const void *optval, socklen_t optlen)
{
	uint16_t *f;
	int val;

	if (!optval)
		return kqp_err(EFAULT);
	if (optname == RDMA_ROUTE && level == SOL_RDMA)
		return krs_set_route(rs, optval, optlen);
	if (optname == SO_LINGER && level == SOL_SOCKET) {
		if (optlen < sizeof(struct linger))
			return kqp_err(EINVAL);
		/* Inverted, as rdma-core keeps it: the default is on. */
		krs_opt_bit(&rs->so_opts, SO_LINGER,
			    !((const struct linger *)optval)->l_onoff);
		return 0;
	}
	if (optlen < sizeof(int))
		return kqp_err(EINVAL);
	memcpy(&val, optval, sizeof(val));

	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			/* A port rdma_cm cannot reuse is still refused at bind. */
			rdma_set_option(rs->id, RDMA_OPTION_ID,
					RDMA_OPTION_ID_REUSEADDR, &val,
					sizeof(val));
			krs_opt_bit(&rs->so_opts, optname, val);
			return 0;
		case SO_RCVBUF:
			if (!rs->rbuf && val > 0)
				rs->rbuf_size = ((uint32_t)val > KRS_MAX_BUF / 2 ?
						 KRS_MAX_BUF : (uint32_t)val << 1) &
						~1u;
			if (rs->rbuf_size < KRS_SNDLOWAT)
				rs->rbuf_size = KRS_SNDLOWAT;
			return 0;
		case SO_SNDBUF:
			if (!rs->sbuf && val > 0)
				rs->sbuf_size = (uint32_t)val > KRS_MAX_BUF / 2 ?
						KRS_MAX_BUF : (uint32_t)val << 1;
			if (rs->sbuf_size < KRS_SNDLOWAT)
				rs->sbuf_size = KRS_SNDLOWAT << 1;
			return 0;
		case SO_KEEPALIVE:
			return krs_set_keepalive(rs, val);
		case SO_OOBINLINE:
			krs_opt_bit(&rs->so_opts, optname, val);
			return 0;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
			return 0;
		case TCP_KEEPIDLE:
			if (val <= 0)
				return kqp_err(EINVAL);
			rs->keepalive_time = val;
			rs->ka_next = krs_now() + val;
			return 0;
		case TCP_NODELAY:
			krs_opt_bit(&rs->tcp_opts, optname, val);
			return 0;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY) {
			if (rdma_set_option(rs->id, RDMA_OPTION_ID,
					    RDMA_OPTION_ID_AFONLY, &val,
					    sizeof(val)))
				return -1;
			krs_opt_bit(&rs->ipv6_opts, optname, val);
			return 0;
		}
		break;
	case SOL_RDMA:
		f = krs_rdma_opt(rs, optname);
		if (!f)
			break;
		if (rs->state >= KRS_OPENING)
			return kqp_err(EINVAL);
		/* What the wire's 8 bits hold: rounded down, as rdma-core's. */
		if (optname == RDMA_IOMAPSIZE)
			*f = krs_iomap_unscale(krs_iomap_scale(val < 0 ? 0 : val));
		else
			*f = (uint32_t)val > KRS_QP_MAX_SIZE ? KRS_QP_MAX_SIZE :
							       (uint32_t)val;
		return 0;
	}
	return kqp_err(ENOTSUP);
}

KQP_EXPORT int rsetsockopt(int s, int level, int optname, const void *optval,
			   socklen_t optlen)
{
	return KRS_CALL(s, rs, rs->dg ?
			krs_dg_setsockopt(rs, level, optname, optval, optlen) :
			krs_setsockopt(rs, level, optname, optval, optlen));
}

static int krs_getsockopt(struct krs *rs, int level, int optname,
			  void *optval, socklen_t *optlen)
{
	uint16_t *f;
	int val;

	if (!optval || !optlen)
		return kqp_err(EFAULT);
	if (optname == RDMA_ROUTE && level == SOL_RDMA)
		return krs_get_route(rs, optval, optlen);
	if (level == SOL_SOCKET && optname == SO_LINGER) {
		struct linger l = {
			.l_onoff = !(rs->so_opts & (1u << SO_LINGER)),
		};

		if (*optlen < sizeof(l))
			return kqp_err(EINVAL);
		memcpy(optval, &l, sizeof(l));
		*optlen = sizeof(l);
		return 0;
	}
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			val = !!(rs->so_opts & (1u << optname));
			break;
		case SO_RCVBUF:
			val = rs->rbuf_size;
			break;
		case SO_SNDBUF:
			val = rs->sbuf_size;
			break;
		case SO_ERROR:
			val = rs->err;
			rs->err = 0;
			break;
		default:
			return kqp_err(ENOTSUP);
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
			val = 1;
			break;
		case TCP_KEEPIDLE:
			val = rs->keepalive_time;
			break;
		case TCP_NODELAY:
			val = !!(rs->tcp_opts & (1u << optname));
			break;
		case TCP_MAXSEG:
			val = 2048;
			break;
		default:
			return kqp_err(ENOTSUP);
		}
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			return kqp_err(ENOTSUP);
		val = !!(rs->ipv6_opts & (1u << optname));
		break;
	case SOL_RDMA:
		f = krs_rdma_opt(rs, optname);
		if (!f)
			return kqp_err(ENOTSUP);
		val = *f;
		break;
	default:
		return kqp_err(ENOTSUP);
	}
	if (*optlen < sizeof(int))
		return kqp_err(EINVAL);
	memcpy(optval, &val, sizeof(val));
	*optlen = sizeof(val);
	return 0;
}

KQP_EXPORT int rgetsockopt(int s, int level, int optname, void *optval,
			   socklen_t *optlen)
{
	return KRS_CALL(s, rs, rs->dg ?
			krs_dg_getsockopt(rs, level, optname, optval, optlen) :
			krs_getsockopt(rs, level, optname, optval, optlen));
}

KQP_EXPORT int rfcntl(int s, int cmd, ...)
{
	struct krs *rs = krs_get(s);
	va_list args;
	int ret = 0;

	if (!rs)
		return -1;
	va_start(args, cmd);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags;
		break;
	case F_SETFL:
		/* The fds underneath are always non-blocking. */
		rs->fd_flags = va_arg(args, int) & O_NONBLOCK;
		break;
	default:
		ret = kqp_err(ENOTSUP);
		break;
	}
	va_end(args);
	krs_put(rs);
	return ret;
}
