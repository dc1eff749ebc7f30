// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libkqp-preload.so: an unmodified TCP program over kqp's rsockets, as
 * rdma-core's librspreload.so does it over rdma-core's.
 *
 * socket() of a TCP socket (AF_INET or AF_INET6, SOCK_STREAM) makes an
 * rsocket, and a real socket of the same kind whose number the program
 * gets: the stand-in.  Every socket call on that number goes to the
 * rsocket; what only a file has (F_SETFD, fstat(), the number itself)
 * stays the stand-in's.  The stand-in is never bound, so no TCP port
 * listens or connects for it.  A program then moves its data over RDMA
 * to a peer under this library or under librspreload.so.
 *
 * Fallback to the kernel's TCP, as librspreload's:
 *  - socket() returns a plain socket when no rsocket can be made (no
 *    /dev/kqp, no device);
 *  - connect() connects the stand-in itself, over TCP, when rconnect()
 *    fails at once (no rsocket listens there, no RDMA route).  Options
 *    set before it were given to the stand-in as well, so it has them.
 *
 * Limits (kqp(7), PRELOAD): epoll_ctl() of an rsocket fails with EPERM
 * (an rsocket cannot be waited on by epoll); ppoll(), pselect(),
 * sendfile() and splice() see the stand-in; a fork child's calls on its
 * parent's rsockets fail with EPERM, as libkqp's rsockets do.
 *
 * The table: sockets are found by number in a two-level table whose
 * blocks are never freed, so lookups take no lock; stores and removals
 * take pl_lock.  A number leaves the table before its stand-in is closed,
 * so no other thread's new file can be taken for the rsocket.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#define PL_EXPORT __attribute__((visibility("default")))

/* One rsocket, shared by the numbers dup() made of its stand-in. */
struct pl_sock {
	int rs;
	atomic_int refs;
};

#define PL_BLOCK	1024
#define PL_BLOCKS	1024	/* numbers below 2^20 */

static _Atomic(struct pl_sock *) *_Atomic pl_table[PL_BLOCKS];
static pthread_mutex_t pl_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept)(int, struct sockaddr *, socklen_t *);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*shutdown)(int, int);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *,
			    socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int,
			  const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
} real;

/* rsocket() may make sockets of its own: those are always real. */
static __thread bool pl_inside;

#define PL_REAL(name) \
	(real.name = dlsym(RTLD_NEXT, #name))

__attribute__((constructor)) static void pl_init(void)
{
	PL_REAL(socket);
	PL_REAL(connect);
	PL_REAL(close);
	PL_REAL(dup);
	PL_REAL(dup2);
	PL_REAL(dup3);
	PL_REAL(fcntl);
	PL_REAL(poll);
	PL_REAL(select);
	PL_REAL(epoll_ctl);
	PL_REAL(bind);
	PL_REAL(listen);
	PL_REAL(accept);
	PL_REAL(accept4);
	PL_REAL(shutdown);
	PL_REAL(getsockname);
	PL_REAL(getpeername);
	PL_REAL(setsockopt);
	PL_REAL(getsockopt);
	PL_REAL(read);
	PL_REAL(readv);
	PL_REAL(recv);
	PL_REAL(recvfrom);
	PL_REAL(recvmsg);
	PL_REAL(write);
	PL_REAL(writev);
	PL_REAL(send);
	PL_REAL(sendto);
	PL_REAL(sendmsg);
}

static struct pl_sock *pl_find(int fd)
{
	_Atomic(struct pl_sock *) *b;

	if (fd < 0 || fd >= PL_BLOCK * PL_BLOCKS)
		return NULL;
	b = atomic_load_explicit(&pl_table[fd / PL_BLOCK],
				 memory_order_acquire);
	return b ? atomic_load_explicit(&b[fd % PL_BLOCK],
					memory_order_acquire) : NULL;
}

/* The rsocket behind @fd, or -1 when @fd is a plain file. */
static int pl_rs(int fd)
{
	struct pl_sock *s = pl_find(fd);

	return s ? s->rs : -1;
}

/* Put @s (or NULL) at @fd: 0, or -1 with ENOMEM/EMFILE. */
static int pl_set(int fd, struct pl_sock *s)
{
	_Atomic(struct pl_sock *) *b;
	int ret = 0;

	if (fd < 0 || fd >= PL_BLOCK * PL_BLOCKS) {
		errno = EMFILE;
		return -1;
	}
	pthread_mutex_lock(&pl_lock);
	b = atomic_load_explicit(&pl_table[fd / PL_BLOCK],
				 memory_order_relaxed);
	if (!b && s) {
		b = calloc(PL_BLOCK, sizeof(*b));
		if (!b) {
			errno = ENOMEM;
			ret = -1;
			goto out;
		}
		atomic_store_explicit(&pl_table[fd / PL_BLOCK], b,
				      memory_order_release);
	}
	if (b)
		atomic_store_explicit(&b[fd % PL_BLOCK], s,
				      memory_order_release);
out:
	pthread_mutex_unlock(&pl_lock);
	return ret;
}

/* Take @fd out of the table; its rsocket is closed with its last number. */
static int pl_drop(int fd, struct pl_sock *s)
{
	int ret = 0;

	pl_set(fd, NULL);
	if (atomic_fetch_sub(&s->refs, 1) == 1) {
		ret = rclose(s->rs);
		free(s);
	}
	return ret;
}

static bool pl_is_tcp(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) &&
	       (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_STREAM &&
	       (!protocol || protocol == IPPROTO_TCP);
}

/* Track stand-in @fd for rsocket @rs, O_NONBLOCK if @nonblock. */
static int pl_track(int fd, int rs, bool nonblock)
{
	struct pl_sock *s = malloc(sizeof(*s));

	if (!s)
		return -1;
	s->rs = rs;
	atomic_init(&s->refs, 1);
	if ((nonblock && rfcntl(rs, F_SETFL, O_NONBLOCK) < 0) ||
	    pl_set(fd, s)) {
		free(s);
		return -1;
	}
	return 0;
}

PL_EXPORT int socket(int domain, int type, int protocol)
{
	int fd, rs, err;

	fd = real.socket(domain, type, protocol);
	if (fd < 0 || pl_inside || !pl_is_tcp(domain, type, protocol))
		return fd;
	pl_inside = true;
	rs = rsocket(domain, SOCK_STREAM, protocol);
	pl_inside = false;
	/* No rsocket: a plain socket, as librspreload gives. */
	if (rs < 0)
		return fd;
	if (pl_track(fd, rs, type & SOCK_NONBLOCK)) {
		err = errno;
		rclose(rs);
		real.close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* What rconnect() fails with when TCP could still reach the address. */
static bool pl_no_rdma(int err)
{
	switch (err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ETIMEDOUT:
	case ENETUNREACH:
	case EHOSTUNREACH:
	case EADDRNOTAVAIL:
	case ENODEV:
	case ENXIO:
	case ENOENT:
	case EPROTO:
		return true;
	default:
		return false;
	}
}

PL_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct pl_sock *s = pl_find(fd);

	if (!s)
		return real.connect(fd, addr, len);
	if (!rconnect(s->rs, addr, len))
		return 0;
	/*
	 * No rsocket peer or no RDMA route there: over TCP, on the stand-in.
	 * Only when this is its one number (a dup()ed one keeps its
	 * rsocket), and not for what says the call itself was wrong
	 * (EINPROGRESS, EALREADY, EISCONN, EINVAL, ...).
	 */
	if (!pl_no_rdma(errno) || atomic_load(&s->refs) != 1)
		return -1;
	pl_drop(fd, s);
	return real.connect(fd, addr, len);
}

PL_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.bind(fd, addr, len) : rbind(rs, addr, len);
}

PL_EXPORT int listen(int fd, int backlog)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.listen(fd, backlog) : rlisten(rs, backlog);
}

PL_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len,
		      int flags)
{
	struct sockaddr_storage me;
	socklen_t melen = sizeof(me);
	int rs = pl_rs(fd), nrs, nfd, err;

	if (rs < 0)
		return real.accept4(fd, addr, len, flags);
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
		errno = EINVAL;
		return -1;
	}
	if (rgetsockname(rs, (struct sockaddr *)&me, &melen))
		return -1;
	nrs = raccept(rs, addr, len);
	if (nrs < 0)
		return -1;
	nfd = real.socket(me.ss_family, SOCK_STREAM | (flags & SOCK_CLOEXEC),
			  0);
	if (nfd < 0 || pl_track(nfd, nrs, flags & SOCK_NONBLOCK)) {
		err = errno;
		rclose(nrs);
		if (nfd >= 0)
			real.close(nfd);
		errno = err;
		return -1;
	}
	return nfd;
}

PL_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return pl_rs(fd) < 0 ? real.accept(fd, addr, len) :
			       accept4(fd, addr, len, 0);
}

PL_EXPORT int shutdown(int fd, int how)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.shutdown(fd, how) : rshutdown(rs, how);
}

PL_EXPORT int close(int fd)
{
	struct pl_sock *s = pl_find(fd);
	int ret;

	if (!s)
		return real.close(fd);
	ret = pl_drop(fd, s);
	/* The stand-in goes whatever rclose() said: the number is free. */
	if (real.close(fd))
		ret = -1;
	return ret;
}

PL_EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.getsockname(fd, addr, len) :
			rgetsockname(rs, addr, len);
}

PL_EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.getpeername(fd, addr, len) :
			rgetpeername(rs, addr, len);
}

PL_EXPORT int setsockopt(int fd, int level, int name, const void *val,
			 socklen_t len)
{
	int rs = pl_rs(fd);

	if (rs < 0)
		return real.setsockopt(fd, level, name, val, len);
	/* For a TCP fallback at connect(); what it refuses does not matter. */
	if (level == SOL_SOCKET || level == IPPROTO_TCP)
		real.setsockopt(fd, level, name, val, len);
	return rsetsockopt(rs, level, name, val, len);
}

PL_EXPORT int getsockopt(int fd, int level, int name, void *val,
			 socklen_t *len)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.getsockopt(fd, level, name, val, len) :
			rgetsockopt(rs, level, name, val, len);
}

PL_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.read(fd, buf, n) : rread(rs, buf, n);
}

PL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.readv(fd, iov, iovcnt) : rreadv(rs, iov, iovcnt);
}

PL_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.recv(fd, buf, n, flags) :
			rrecv(rs, buf, n, flags);
}

PL_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
			   struct sockaddr *addr, socklen_t *len)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.recvfrom(fd, buf, n, flags, addr, len) :
			rrecvfrom(rs, buf, n, flags, addr, len);
}

PL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.recvmsg(fd, msg, flags) :
			rrecvmsg(rs, msg, flags);
}

PL_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.write(fd, buf, n) : rwrite(rs, buf, n);
}

PL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.writev(fd, iov, iovcnt) :
			rwritev(rs, iov, iovcnt);
}

PL_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.send(fd, buf, n, flags) :
			rsend(rs, buf, n, flags);
}

PL_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			 const struct sockaddr *addr, socklen_t len)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.sendto(fd, buf, n, flags, addr, len) :
			rsendto(rs, buf, n, flags, addr, len);
}

PL_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	int rs = pl_rs(fd);

	return rs < 0 ? real.sendmsg(fd, msg, flags) :
			rsendmsg(rs, msg, flags);
}

/* A number made by dup() of a stand-in shares its rsocket. */
static int pl_dup_done(int oldfd, int newfd)
{
	struct pl_sock *s = pl_find(oldfd);

	if (newfd < 0 || !s)
		return newfd;
	atomic_fetch_add(&s->refs, 1);
	if (pl_set(newfd, s)) {
		atomic_fetch_sub(&s->refs, 1);
		real.close(newfd);
		return -1;
	}
	return newfd;
}

/* dup2()/dup3() onto a stand-in closes its rsocket first, as close(). */
static void pl_dup_over(int newfd, int oldfd)
{
	struct pl_sock *s = pl_find(newfd);

	if (s && newfd != oldfd)
		pl_drop(newfd, s);
}

PL_EXPORT int dup(int fd)
{
	return pl_dup_done(fd, real.dup(fd));
}

PL_EXPORT int dup2(int oldfd, int newfd)
{
	pl_dup_over(newfd, oldfd);
	return oldfd == newfd ? real.dup2(oldfd, newfd) :
				pl_dup_done(oldfd, real.dup2(oldfd, newfd));
}

PL_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	pl_dup_over(newfd, oldfd);
	return pl_dup_done(oldfd, real.dup3(oldfd, newfd, flags));
}

PL_EXPORT int fcntl(int fd, int cmd, ...)
{
	int rs = pl_rs(fd), ret, fl;
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	if (rs < 0)
		return real.fcntl(fd, cmd, arg);
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		return pl_dup_done(fd, real.fcntl(fd, cmd, arg));
	case F_GETFL:
		ret = real.fcntl(fd, F_GETFL);
		fl = rfcntl(rs, F_GETFL);
		if (ret < 0 || fl < 0)
			return -1;
		return (ret & ~O_NONBLOCK) | (fl & O_NONBLOCK);
	case F_SETFL:
		if (rfcntl(rs, F_SETFL, (int)arg))
			return -1;
		return real.fcntl(fd, F_SETFL, arg);
	default:
		/* F_SETFD and the rest are the number's: the stand-in's. */
		return real.fcntl(fd, cmd, arg);
	}
}

PL_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	return fcntl(fd, cmd, arg);
}

PL_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	struct pollfd *rfds;
	nfds_t i;
	int ret, rs;

	for (i = 0; i < nfds; i++)
		if (pl_find(fds[i].fd))
			break;
	if (i == nfds)
		return real.poll(fds, nfds, timeout);
	rfds = calloc(nfds, sizeof(*rfds));
	if (!rfds) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < nfds; i++) {
		rs = pl_rs(fds[i].fd);
		rfds[i].fd = rs < 0 ? fds[i].fd : rs;
		rfds[i].events = fds[i].events;
	}
	ret = rpoll(rfds, nfds, timeout);
	for (i = 0; i < nfds; i++)
		fds[i].revents = rfds[i].revents;
	free(rfds);
	return ret;
}

PL_EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex,
		     struct timeval *tv)
{
	struct pollfd *pfd;
	int fd, n = 0, i, ret, rs, timeout;
	bool any = false;

	if (nfds < 0 || nfds > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	for (fd = 0; fd < nfds && !any; fd++)
		any = ((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
		       (ex && FD_ISSET(fd, ex))) && pl_find(fd);
	if (!any)
		return real.select(nfds, rd, wr, ex, tv);
	pfd = calloc(nfds, sizeof(*pfd));
	if (!pfd) {
		errno = ENOMEM;
		return -1;
	}
	for (fd = 0; fd < nfds; fd++) {
		short ev = (rd && FD_ISSET(fd, rd) ? POLLIN : 0) |
			   (wr && FD_ISSET(fd, wr) ? POLLOUT : 0);

		if (!ev && !(ex && FD_ISSET(fd, ex)))
			continue;
		rs = pl_rs(fd);
		pfd[n].fd = rs < 0 ? fd : rs;
		pfd[n].events = ev | (ex && FD_ISSET(fd, ex) ? POLLPRI : 0);
		n++;
	}
	timeout = tv ? (int)(tv->tv_sec * 1000 + tv->tv_usec / 1000) : -1;
	ret = rpoll(pfd, n, timeout);
	if (ret >= 0) {
		ret = 0;
		i = 0;
		for (fd = 0; fd < nfds; fd++) {
			bool r = rd && FD_ISSET(fd, rd);
			bool w = wr && FD_ISSET(fd, wr);
			bool e = ex && FD_ISSET(fd, ex);
			short rev;

			if (!r && !w && !e)
				continue;
			rev = pfd[i++].revents;
			if (rev & POLLNVAL) {
				errno = EBADF;
				ret = -1;
				break;
			}
			/* As select(2): an error or hang-up reads. */
			if (r && !(rev & (POLLIN | POLLERR | POLLHUP)))
				FD_CLR(fd, rd);
			if (w && !(rev & (POLLOUT | POLLERR)))
				FD_CLR(fd, wr);
			if (e && !(rev & POLLPRI))
				FD_CLR(fd, ex);
			ret += (r && FD_ISSET(fd, rd)) +
			       (w && FD_ISSET(fd, wr)) +
			       (e && FD_ISSET(fd, ex));
		}
	}
	free(pfd);
	return ret;
}

PL_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	/* An rsocket is not a file epoll can wait on. */
	if (op != EPOLL_CTL_DEL && pl_find(fd)) {
		errno = EPERM;
		return -1;
	}
	return real.epoll_ctl(epfd, op, fd, ev);
}
