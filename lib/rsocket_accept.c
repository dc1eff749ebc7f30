// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rlisten() and raccept(): connect requests are accepted in the
 * background, as rdma-core accepts them, so that a peer's rconnect()
 * completes whether or not the listener's owner is in raccept() yet.
 *
 * One thread, started by the first rlisten() or non-blocking rconnect(),
 * polls the event channels of every listener, of every rsocket accepted
 * and of every rsocket a non-blocking rconnect() left opening, and a
 * pipe that wakes it when the set changes.  An opening rsocket's events
 * take its connection's next steps there, as rdma-core's connect thread
 * takes them, so that its connect request goes out while its owner waits
 * elsewhere; a connected one's event there is a disconnect.  For a
 * connect request on a listener it makes the new rsocket (its id moved to a channel
 * of its own, QP and buffers made, the connection accepted with this
 * end's private data); once that connection is established, its index
 * goes into the listener's accept queue, a socketpair, and raccept()
 * reads the next index from there.  A
 * request whose private data is not rsocket version 1 is rejected.
 *
 * It also sends the keep-alives of connected rsockets with SO_KEEPALIVE
 * (krs_svc_keepalive()), checking each second; their fds are not polled
 * for that.
 *
 * The thread holds an rsocket's mutex (through krs_get()) while it works
 * on it, and no other lock; its own list has its own mutex,
 * taken alone.  rclose() of a listener takes it off the list, wakes the
 * thread and closes what was accepted and never taken; rclose() of any
 * rsocket on the list takes it off.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#include "kqp_priv.h"
#include "rsocket.h"

static pthread_mutex_t krs_svc_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t krs_svc_thread;
static bool krs_svc_running;
static int krs_svc_wake[2] = { -1, -1 };
struct krs_svc_entry {
	int index;
	unsigned int what;	/* KRS_SVC_* */
};

static struct krs_svc_entry *krs_svc_list;
static int krs_svc_count;
static int krs_svc_size;

static void krs_backlog_put(struct krs_backlog *b)
{
	bool last;

	pthread_mutex_lock(&b->lock);
	last = !--b->refs;
	pthread_mutex_unlock(&b->lock);
	if (last) {
		pthread_mutex_destroy(&b->lock);
		free(b);
	}
}

/*
 * @rs (being freed, or its mutex held) no longer counts in its listener's
 * backlog; a listener's own reference goes.
 */
void krs_backlog_leave(struct krs *rs)
{
	struct krs_backlog *b = rs->accepted_by;

	if (b) {
		rs->accepted_by = NULL;
		pthread_mutex_lock(&b->lock);
		if (rs->queued)
			b->queued--;
		else
			b->opening--;
		pthread_mutex_unlock(&b->lock);
		krs_backlog_put(b);
	}
	if (rs->backlog) {
		krs_backlog_put(rs->backlog);
		rs->backlog = NULL;
	}
}

/* Room in @b for one more opening rsocket; counted if so. */
static bool krs_backlog_admit(struct krs_backlog *b)
{
	bool ok;

	pthread_mutex_lock(&b->lock);
	ok = !b->gone && b->queued < b->max &&
	     b->opening < KRS_MAX_OPENING(b->max);
	if (ok) {
		b->opening++;
		b->refs++;
	}
	pthread_mutex_unlock(&b->lock);
	return ok;
}

static void krs_backlog_unadmit(struct krs_backlog *b)
{
	pthread_mutex_lock(&b->lock);
	b->opening--;
	pthread_mutex_unlock(&b->lock);
	krs_backlog_put(b);
}

/*
 * A connect request's rsocket; its index, or -1 with errno, the request
 * then rejected (also past the listener's backlog).
 */
static int krs_accept_one(struct krs *ls, struct rdma_cm_id *id,
			  const struct rdma_conn_param *req)
{
	struct rdma_conn_param param = *req;
	struct krs_conn_data c;
	struct krs *rs;
	int err;

	if (!krs_backlog_admit(ls->backlog)) {
		err = ECONNREFUSED;
		goto err_reject;
	}
	rs = krs_alloc(ls, ls->domain);
	if (!rs) {
		err = errno;
		krs_backlog_unadmit(ls->backlog);
		goto err_reject;
	}
	/* Counted until raccept() takes it or it is freed. */
	rs->accepted_by = ls->backlog;
	rs->id = id;
	if (krs_new_channel(rs) || rdma_migrate_id(id, rs->ch))
		goto err_free;
	id->context = rs;
	if (krs_create_ep(rs) ||
	    krs_save_conn_data(rs, req->private_data, req->private_data_len))
		goto err_free;
	krs_format_conn_data(rs, &c);
	param.private_data = &c;
	param.private_data_len = sizeof(c);
	if (rdma_accept(id, &param))
		goto err_free;
	rs->state = KRS_ACCEPTING;
	/* Queued for raccept() once established (krs_svc_cm()). */
	rs->accept_fd = fcntl(ls->accept_queue[1], F_DUPFD_CLOEXEC, 0);
	if (rs->accept_fd < 0 || krs_insert(rs))
		goto err_free;
	/* In the table now: another thread may find it. */
	pthread_mutex_lock(&rs->lock);
	err = krs_svc_add(rs, KRS_SVC_CM);
	pthread_mutex_unlock(&rs->lock);
	if (err) {
		rclose(rs->index);
		return -1;
	}
	return rs->index;

err_free:
	err = errno;
	rdma_reject(id, NULL, 0);
	krs_free(rs);
	return kqp_err(err);

err_reject:
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
	return kqp_err(err);
}

/* The listener's pending events: accept each connect request. */
static void krs_svc_listener(struct krs *ls)
{
	uint8_t pdata[256];
	struct rdma_conn_param req;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	while (!rdma_get_cm_event(ls->ch, &ev)) {
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		id = ev->id;
		req = ev->param.conn;
		memset(pdata, 0, sizeof(pdata));
		if (req.private_data && req.private_data_len)
			memcpy(pdata, req.private_data, req.private_data_len);
		req.private_data = pdata;
		/* Acked before the id moves: rdma_migrate_id() waits for it. */
		rdma_ack_cm_event(ev);
		if (req.private_data_len < sizeof(struct krs_conn_data) ||
		    pdata[0] != KRS_VERSION) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
			continue;
		}
		krs_accept_one(ls, id, &req);
	}
}

/*
 * An accepted rsocket, established: its index into the listener's queue,
 * and it counts as queued; unless the listener was closed, whose queue
 * nobody reads any more (its close reads what is there, under the same
 * lock, after saying so).  0 or an errno: EAGAIN, the queue holds the
 * backlog (or its socket is full), and it is tried again within a second.
 */
static int krs_backlog_queue(struct krs *rs)
{
	struct krs_backlog *b = rs->accepted_by;
	int err = 0;

	if (!b)
		return EPIPE;
	pthread_mutex_lock(&b->lock);
	if (b->gone)
		err = EPIPE;
	else if (b->queued >= b->max)
		err = EAGAIN;	/* it waits, opening, for room */
	else if (send(rs->accept_fd, &rs->index, sizeof(rs->index),
		      MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(rs->index))
		err = errno == EAGAIN ? EAGAIN : EPIPE;
	if (!err) {
		rs->queued = true;
		b->opening--;
		b->queued++;
	}
	pthread_mutex_unlock(&b->lock);
	return err;
}

/*
 * An rsocket whose events the thread takes: the connection's next step.
 * An accepted one goes to its listener's queue once established, as
 * rdma-core's raccept() gives only established ones; a full queue is
 * tried again later (krs_svc_run()).  True when it is to be cut:
 * accepted, and failed or nobody left to take it.
 */
static bool krs_svc_cm(struct krs *rs)
{
	bool gone;
	int fd;

	if (rs->state & KRS_OPENING)
		krs_connect_step(rs, true);
	else
		krs_drain_cm(rs);
	if (rs->accept_fd < 0 || (rs->state & KRS_OPENING))
		return false;
	gone = !(rs->state & KRS_CONNECTED);
	if (!gone && krs_backlog_queue(rs) == EAGAIN)
		return false;
	gone = gone || !rs->queued;
	/* Forgotten before it is closed: a fork child may copy it between. */
	fd = rs->accept_fd;
	rs->accept_fd = -1;
	close(fd);
	return gone;
}

/* An entry whose rsocket is gone: off the list. */
static void krs_svc_drop(int index)
{
	int i;

	pthread_mutex_lock(&krs_svc_lock);
	for (i = 0; i < krs_svc_count; i++) {
		if (krs_svc_list[i].index == index) {
			krs_svc_list[i] = krs_svc_list[--krs_svc_count];
			break;
		}
	}
	pthread_mutex_unlock(&krs_svc_lock);
}

long krs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* A keep-alive when one is due. */
static void krs_svc_keepalive(struct krs *rs, long now)
{
	if (!(rs->so_opts & (1u << SO_KEEPALIVE)) || now < rs->ka_next)
		return;
	krs_send_keepalive(rs);
	rs->ka_next = now + rs->keepalive_time;
}

static void *krs_svc_run(void *arg)
{
	struct krs_svc_entry *ids = NULL;
	struct pollfd *fds = NULL;
	long last = 0, now;
	int n, i;
	char c;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&krs_svc_lock);
		n = krs_svc_count;
		fds = realloc(fds, (n + 1) * sizeof(*fds));
		ids = realloc(ids, (n + 1) * sizeof(*ids));
		if (!fds || !ids) {
			pthread_mutex_unlock(&krs_svc_lock);
			sleep(1);
			continue;
		}
		fds[0] = (struct pollfd){ .fd = krs_svc_wake[0], .events = POLLIN };
		for (i = 0; i < n; i++) {
			/* The index is the rsocket's channel's fd. */
			ids[i] = krs_svc_list[i];
			fds[i + 1] = (struct pollfd){
				.fd = ids[i].what & ~KRS_SVC_KEEPALIVE ?
				      ids[i].index : -1,
				.events = POLLIN,
			};
		}
		pthread_mutex_unlock(&krs_svc_lock);

		/* A second at most: queues that were full are tried again. */
		if (poll(fds, n + 1, 1000) < 0)
			continue;
		if (fds[0].revents)
			while (read(krs_svc_wake[0], &c, 1) == 1)
				;
		now = krs_now();
		for (i = 0; i < n; i++) {
			bool listener = ids[i].what & KRS_SVC_LISTENER;
			bool gone = false, pending;
			struct krs *ls;
			int before;

			if (!fds[i + 1].revents &&
			    (listener || (ids[i].what & KRS_SVC_DGRAM) ||
			     now == last))
				continue;
			ls = krs_get(ids[i].index);
			if (!ls) {
				krs_svc_drop(ids[i].index);
				continue;
			}
			before = ls->state;
			pending = ls->accept_fd >= 0;
			if (ls->closed)
				;
			else if (listener && ls->state == KRS_LISTENING)
				krs_svc_listener(ls);
			else if (ids[i].what & KRS_SVC_DGRAM)
				krs_dg_svc(ls);
			else if (ids[i].what & KRS_SVC_CM)
				gone = krs_svc_cm(ls);
			if (!ls->closed && !gone &&
			    (ids[i].what & KRS_SVC_KEEPALIVE))
				krs_svc_keepalive(ls, now);
			/*
			 * A failed connect step or keep-alive, say; the
			 * listener's accept queue wakes raccept()'s rpoll().
			 */
			if (!pending)
				krs_state_moved(ls, before);
			krs_put(ls);
			if (gone)
				krs_close(ids[i].index, false);
		}
		last = now;
	}
	return NULL;
}

static void krs_svc_kick(void)
{
	char c = 0;

	if (write(krs_svc_wake[1], &c, 1) < 0)
		return;	/* full: it wakes anyway */
}

/*
 * Have the thread do @what for @rs too (its mutex held): 0, or -1 and
 * errno.
 */
int krs_svc_add(struct krs *rs, unsigned int what)
{
	int ret = 0, i;

	if ((rs->svc & what) == what)
		return 0;
	pthread_mutex_lock(&krs_svc_lock);
	if (!krs_svc_running) {
		if (pipe2(krs_svc_wake, O_NONBLOCK | O_CLOEXEC)) {
			ret = -1;
			goto out;
		}
		ret = pthread_create(&krs_svc_thread, NULL, krs_svc_run, NULL);
		if (ret) {
			close(krs_svc_wake[0]);
			close(krs_svc_wake[1]);
			ret = kqp_err(ret);
			goto out;
		}
		pthread_detach(krs_svc_thread);
		krs_svc_running = true;
	}
	for (i = 0; i < krs_svc_count; i++) {
		if (krs_svc_list[i].index == rs->index) {
			krs_svc_list[i].what |= what;
			goto added;
		}
	}
	if (krs_svc_count == krs_svc_size) {
		int n = krs_svc_size ? 2 * krs_svc_size : 8;
		struct krs_svc_entry *l = realloc(krs_svc_list,
						  n * sizeof(*l));

		if (!l) {
			ret = kqp_err(ENOMEM);
			goto out;
		}
		krs_svc_list = l;
		krs_svc_size = n;
	}
	krs_svc_list[krs_svc_count].index = rs->index;
	krs_svc_list[krs_svc_count++].what = what;
added:
	rs->svc |= what;
	krs_svc_kick();
out:
	pthread_mutex_unlock(&krs_svc_lock);
	return ret;
}

/* fork(): the list stays consistent (krs_fork_prepare(), krs_fork_parent()). */
void krs_svc_lock_all(void)
{
	pthread_mutex_lock(&krs_svc_lock);
}

void krs_svc_unlock_all(void)
{
	pthread_mutex_unlock(&krs_svc_lock);
}

/*
 * fork(), in the child: there is no thread, and what was on its list is
 * the parent's.  A thread is started again when the child needs one.
 */
void krs_svc_fork_child(void)
{
	if (krs_svc_running) {
		close(krs_svc_wake[0]);
		close(krs_svc_wake[1]);
		krs_svc_wake[0] = krs_svc_wake[1] = -1;
	}
	krs_svc_running = false;
	krs_svc_count = 0;
	pthread_mutex_unlock(&krs_svc_lock);
}

/*
 * An rsocket being closed (its mutex held): off the thread's list; for a
 * listener, what it accepted that nobody took, closed.
 */
void krs_svc_forget(struct krs *rs)
{
	int i, index;

	pthread_mutex_lock(&krs_svc_lock);
	for (i = 0; i < krs_svc_count; i++) {
		if (krs_svc_list[i].index == rs->index) {
			krs_svc_list[i] = krs_svc_list[--krs_svc_count];
			break;
		}
	}
	if (krs_svc_running)
		krs_svc_kick();
	pthread_mutex_unlock(&krs_svc_lock);
	rs->svc = 0;
	if (rs->state != KRS_LISTENING)
		return;
	/* After this, nothing is queued: what was, is read here. */
	pthread_mutex_lock(&rs->backlog->lock);
	rs->backlog->gone = true;
	pthread_mutex_unlock(&rs->backlog->lock);
	while (read(rs->accept_queue[0], &index, sizeof(index)) ==
	       sizeof(index))
		krs_close(index, false);
}

KQP_EXPORT int rlisten(int s, int backlog)
{
	struct krs *rs = krs_get(s);
	int ret = 0, max;

	if (!rs)
		return -1;
	if (rs->dg) {
		ret = kqp_err(EOPNOTSUPP);
		goto out;
	}
	max = backlog <= 0 || backlog > KRS_MAX_BACKLOG ? KRS_MAX_BACKLOG :
							  backlog;
	/* Again: the new backlog, as listen(2) takes it. */
	if (rs->state == KRS_LISTENING) {
		pthread_mutex_lock(&rs->backlog->lock);
		rs->backlog->max = max;
		pthread_mutex_unlock(&rs->backlog->lock);
		goto out;
	}
	if (rs->state != KRS_INIT && rs->state != KRS_BOUND) {
		ret = kqp_err(EINVAL);
		goto out;
	}
	if (!rs->backlog) {
		rs->backlog = calloc(1, sizeof(*rs->backlog));
		if (!rs->backlog) {
			ret = kqp_err(ENOMEM);
			goto out;
		}
		pthread_mutex_init(&rs->backlog->lock, NULL);
		rs->backlog->refs = 1;
	}
	rs->backlog->max = max;
	ret = rdma_listen(rs->id, backlog);
	if (ret)
		goto out;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
		       rs->accept_queue) ||
	    krs_set_nonblock(rs->accept_queue[0])) {
		ret = -1;
		goto out;
	}
	rs->state = KRS_LISTENING;
	ret = krs_svc_add(rs, KRS_SVC_LISTENER);
	if (ret)
		rs->state = KRS_BOUND;
out:
	krs_put(rs);
	return ret;
}

/*
 * raccept() took @index from listener @ls's queue (its mutex held): it no
 * longer counts there.  Only if it is still what was queued: the program
 * may have closed the number already, and reused it.
 */
static void krs_backlog_taken(struct krs *ls, int index)
{
	struct krs *rs;

	if (index == ls->index)
		return;
	rs = krs_get(index);
	if (!rs)
		return;
	if (rs->accepted_by == ls->backlog && rs->queued)
		krs_backlog_leave(rs);
	krs_put(rs);
}

KQP_EXPORT int raccept(int s, struct sockaddr *addr, socklen_t *addrlen)
{
	struct krs *ls = krs_get(s);
	int index = -1, fd, ret;

	if (!ls)
		return -1;
	if (ls->state != KRS_LISTENING) {
		krs_put(ls);
		return kqp_err(EINVAL);
	}
	for (;;) {
		ret = read(ls->accept_queue[0], &index, sizeof(index));
		if (ret == sizeof(index)) {
			krs_backlog_taken(ls, index);
			break;
		}
		if (ret >= 0 || errno != EAGAIN || (ls->fd_flags & O_NONBLOCK)) {
			index = ret < 0 ? -1 : kqp_err(EAGAIN);
			break;
		}
		/* A while only: an rclose() of the listener wakes nobody. */
		fd = ls->accept_queue[0];
		pthread_mutex_unlock(&ls->lock);
		ret = krs_wait_readable(fd, 1000);
		pthread_mutex_lock(&ls->lock);
		if (ret || ls->closed) {
			index = ret ? -1 : kqp_err(EBADF);
			break;
		}
	}
	krs_put(ls);
	if (index >= 0 && addr && addrlen)
		rgetpeername(index, addr, addrlen);
	return index;
}
