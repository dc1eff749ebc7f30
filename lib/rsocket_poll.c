// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * rpoll() and rselect(): poll(2) and select(2) over any mix of rsockets
 * and ordinary fds.
 *
 * An rsocket's readiness is its protocol's, not its fd's: data read from
 * its CQ, room to send, a connect request, a finished connect.  So each
 * round first asks every rsocket (taking its completions and CM events
 * without waiting) and every ordinary fd (poll(2) with no wait); with
 * nothing ready, it arms the rsockets' CQs, asks once more, and sleeps
 * in poll(2) on the fds underneath: the CQ's completion channel once
 * connected, the id's event channel before.  A wake-up that was only a
 * credit or an event nobody asked about goes round again.
 *
 * Another thread may take an rsocket's CM events, the background thread
 * above all, while rpoll() sleeps on the channel they came through: the
 * sleep would last until the timeout.  So every sleeper also sleeps on
 * one eventfd, which krs_poll_wake() makes readable when a connect ends
 * or a connection fails (krs_state_moved()).  Each sleeper joins before
 * it looks, so a change after its look wakes it.  The eventfd stays
 * readable until the last sleeper leaves and empties it; newcomers wait
 * for that.  What does not wake it is seen within KRS_POLL_MAX_MS.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <rdma/rsocket.h>

#include "kqp_priv.h"
#include "rsocket.h"

/* The longest rpoll() sleeps before it looks again. */
#define KRS_POLL_MAX_MS	1000

/*
 * rpoll()'s sleepers.  krs_sleep_dev/_ino name the eventfd made: a
 * program that closed the number (closefrom() as it daemonised) and
 * reused it gets a new eventfd, and its own file is never touched.
 * krs_sleep_gen moves on with each new eventfd and in a fork child, so a
 * sleeper from before leaves no trace in the count.  The calls on the
 * eventfd are glibc's eventfd_read()/eventfd_write(), which a preloaded
 * read()/write() does not see.
 */
static pthread_mutex_t krs_sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static int krs_sleep_fd = -1;
static dev_t krs_sleep_dev;
static ino_t krs_sleep_ino;
static unsigned int krs_sleepers, krs_sleep_gen;
static bool krs_woken;

struct krs_sleep {
	int fd;
	unsigned int gen;
};

/* Is krs_sleep_fd still the eventfd this library made? */
static bool krs_sleep_fd_ours(void)
{
	struct stat st;

	return krs_sleep_fd >= 0 && !fstat(krs_sleep_fd, &st) &&
	       st.st_dev == krs_sleep_dev && st.st_ino == krs_sleep_ino;
}

/* A new eventfd, with the lock held; a sleeper of the old one is stale. */
static void krs_sleep_new_fd(void)
{
	struct stat st;

	krs_sleep_gen++;
	krs_sleepers = 0;
	krs_woken = false;
	krs_sleep_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (krs_sleep_fd >= 0 && fstat(krs_sleep_fd, &st)) {
		close(krs_sleep_fd);
		krs_sleep_fd = -1;
	}
	if (krs_sleep_fd >= 0) {
		krs_sleep_dev = st.st_dev;
		krs_sleep_ino = st.st_ino;
	}
}

/*
 * One more sleeper: the eventfd to sleep on too (fd -1 if there is none).
 * While a wake-up is out, newcomers wait for its sleepers to leave, as
 * rdma-core's rs_poll_enter() does: a woken sleeper that came straight
 * back would keep the count above 0 and the eventfd readable, and all of
 * them would spin.
 */
static struct krs_sleep krs_sleep_enter(void)
{
	struct krs_sleep s;
	int err = errno;

	pthread_mutex_lock(&krs_sleep_lock);
	while (krs_woken) {
		pthread_mutex_unlock(&krs_sleep_lock);
		sched_yield();
		pthread_mutex_lock(&krs_sleep_lock);
	}
	if (!krs_sleepers && !krs_sleep_fd_ours())
		krs_sleep_new_fd();
	s.fd = krs_sleep_fd;
	s.gen = krs_sleep_gen;
	if (s.fd >= 0)
		krs_sleepers++;
	pthread_mutex_unlock(&krs_sleep_lock);
	errno = err;
	return s;
}

/* The last sleeper to leave takes the wake-up out of the eventfd. */
static void krs_sleep_exit(struct krs_sleep s)
{
	eventfd_t v;

	pthread_mutex_lock(&krs_sleep_lock);
	if (s.fd >= 0 && s.gen == krs_sleep_gen && krs_sleepers &&
	    !--krs_sleepers && krs_woken) {
		eventfd_read(krs_sleep_fd, &v);
		krs_woken = false;
	}
	pthread_mutex_unlock(&krs_sleep_lock);
}

void krs_poll_wake(void)
{
	int err = errno;

	pthread_mutex_lock(&krs_sleep_lock);
	if (krs_sleepers && !krs_woken)
		krs_woken = !eventfd_write(krs_sleep_fd, 1);
	pthread_mutex_unlock(&krs_sleep_lock);
	errno = err;
}

void krs_poll_lock(void)
{
	pthread_mutex_lock(&krs_sleep_lock);
}

void krs_poll_unlock(void)
{
	pthread_mutex_unlock(&krs_sleep_lock);
}

/*
 * In a fork child: no sleepers, and an eventfd of its own, made when
 * needed; emptying the parent's would lose the parent a wake-up.
 */
void krs_poll_fork_child(void)
{
	if (krs_sleep_fd_ours())
		close(krs_sleep_fd);
	krs_sleep_fd = -1;
	krs_sleep_gen++;
	krs_sleepers = 0;
	krs_woken = false;
	pthread_mutex_unlock(&krs_sleep_lock);
}

static bool krs_test_none(struct krs *rs)
{
	(void)rs;
	return true;
}

/* @rs's revents for @events, its completions and events taken first. */
static short krs_poll_rs(struct krs *rs, short events)
{
	short revents = 0;

	if (rs->dg)
		return krs_dg_poll(rs, events);
	if (rs->state == KRS_LISTENING) {
		struct pollfd p = { .fd = rs->accept_queue[0], .events = POLLIN };

		poll(&p, 1, 0);
		return (events & POLLIN) ? (p.revents & POLLIN) : 0;
	}
	if (rs->state & KRS_OPENING) {
		if (krs_connect_step(rs, true) && errno == EINPROGRESS)
			return 0;
	}
	if (rs->state & (KRS_CONNECTED | KRS_DISCONNECTED | KRS_ERROR)) {
		krs_drain_cm(rs);
		krs_process(rs, true, krs_test_none);
		if ((events & POLLIN) && krs_conn_have_rdata(rs))
			revents |= POLLIN;
		if ((events & POLLOUT) && (rs->state & KRS_WRITABLE) &&
		    krs_can_send(rs))
			revents |= POLLOUT;
		if (rs->state & KRS_DISCONNECTED)
			revents |= POLLHUP;
		else if (rs->state & KRS_ERROR)
			revents |= POLLERR;
		return revents;
	}
	if (rs->state == KRS_CONNECT_ERROR)
		return (events & (POLLIN | POLLOUT)) | POLLERR;
	return 0;
}

/*
 * One look at every fd, waiting for none: the count of those ready.
 * With @rfds, also what to sleep on: each rsocket's fd underneath, its CQ
 * armed before the look; the others as they are.
 */
static int krs_poll_check(struct pollfd *fds, nfds_t nfds,
			  struct pollfd *rfds)
{
	struct krs *rs;
	nfds_t i;
	int cnt = 0;

	for (i = 0; i < nfds; i++) {
		if (rfds) {
			rfds[i] = fds[i];
			rfds[i].revents = 0;
		}
		rs = krs_get(fds[i].fd);
		if (rs) {
			if (rfds && rs->cq && !rs->cq_armed &&
			    !ibv_req_notify_cq(rs->cq, 0))
				rs->cq_armed = true;
			fds[i].revents = krs_poll_rs(rs, fds[i].events);
			if (rfds) {
				rfds[i].fd = krs_wait_fd(rs);
				rfds[i].events = POLLIN;
			}
			krs_put(rs);
		} else if (errno == EPERM) {
			/* A parent's rsocket, in a fork child. */
			fds[i].revents = POLLNVAL;
		} else {
			fds[i].revents = 0;
			poll(&fds[i], 1, 0);
		}
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

static void krs_poll_events(struct pollfd *rfds, struct pollfd *fds,
			    nfds_t nfds)
{
	struct krs *rs;
	nfds_t i;

	for (i = 0; i < nfds; i++) {
		if (!rfds[i].revents)
			continue;
		rs = krs_get(fds[i].fd);
		if (!rs)
			continue;
		krs_drain_cq_events(rs);
		krs_put(rs);
	}
}

/*
 * A sleep of at most @cap ms: what the eventfd does not wake for (a CQ
 * event another thread of the owner took, a keep-alive that failed in the
 * background thread) is seen within that, as rdma-core's
 * wake_up_interval bounds its rpoll()'s sleeps.
 */
static int krs_sleep_ms(int wait, int cap)
{
	return wait < 0 || wait > cap ? cap : wait;
}

static int64_t krs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

KQP_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int64_t end = timeout > 0 ? krs_now_ms() + timeout : 0;
	struct pollfd *rfds;
	int ret, wait;

	if (nfds && !fds)
		return kqp_err(EFAULT);
	ret = krs_poll_check(fds, nfds, NULL);
	if (ret || !timeout)
		return ret;
	/* The last is the sleepers' eventfd. */
	rfds = calloc(nfds + 1, sizeof(*rfds));
	if (!rfds)
		return kqp_err(ENOMEM);
	for (;;) {
		struct krs_sleep s = krs_sleep_enter();
		nfds_t n = nfds + 1;

		ret = krs_poll_check(fds, nfds, rfds);
		wait = -1;
		if (!ret && timeout > 0) {
			int64_t left = end - krs_now_ms();

			wait = left > 0 ? (int)left : 0;
		}
		if (ret || !wait) {
			krs_sleep_exit(s);
			break;
		}
		rfds[nfds] = (struct pollfd){ .fd = s.fd, .events = POLLIN };
		ret = poll(rfds, n, krs_sleep_ms(wait, KRS_POLL_MAX_MS));
		/* nfds at the process's limit: the eventfd is one too many. */
		if (ret < 0 && errno == EINVAL && nfds) {
			n = nfds;
			ret = poll(rfds, n, krs_sleep_ms(wait, 100));
		}
		krs_sleep_exit(s);
		if (ret < 0)
			break;
		krs_poll_events(rfds, fds, nfds);
	}
	free(rfds);
	return ret;
}

KQP_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		       fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *fds;
	int fd, n = 0, ret, i;
	long long ms;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return kqp_err(EINVAL);
	fds = calloc(nfds ? nfds : 1, sizeof(*fds));
	if (!fds)
		return kqp_err(ENOMEM);
	for (fd = 0; fd < nfds; fd++) {
		short ev = 0;
		bool any = false;

		if (readfds && FD_ISSET(fd, readfds)) {
			ev |= POLLIN;
			any = true;
		}
		if (writefds && FD_ISSET(fd, writefds)) {
			ev |= POLLOUT;
			any = true;
		}
		if (exceptfds && FD_ISSET(fd, exceptfds))
			any = true;
		if (any) {
			fds[n].fd = fd;
			fds[n++].events = ev;
		}
	}
	ms = -1;
	if (timeout) {
		ms = timeout->tv_sec > INT_MAX / 1000 - 1 ? INT_MAX :
		     (long long)timeout->tv_sec * 1000 +
		     timeout->tv_usec / 1000;
		if (ms < 0)
			ms = 0;
	}
	ret = rpoll(fds, n, (int)ms);
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	for (i = 0; ret > 0 && i < n; i++) {
		/* A number that is no file, or a fork parent's rsocket. */
		if (fds[i].revents & POLLNVAL) {
			errno = krs_is_parents(fds[i].fd) ? EPERM : EBADF;
			ret = -1;
		}
	}
	if (ret > 0) {
		ret = 0;
		for (i = 0; i < n; i++) {
			if (readfds && (fds[i].revents & (POLLIN | POLLHUP))) {
				FD_SET(fds[i].fd, readfds);
				ret++;
			}
			if (writefds && (fds[i].revents & POLLOUT)) {
				FD_SET(fds[i].fd, writefds);
				ret++;
			}
			if (exceptfds &&
			    (fds[i].revents & ~(POLLIN | POLLOUT))) {
				FD_SET(fds[i].fd, exceptfds);
				ret++;
			}
		}
	}
	free(fds);
	return ret;
}
