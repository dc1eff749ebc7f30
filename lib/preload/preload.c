// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libkqp-preload.so: an unmodified TCP program over kqp's rsockets, as
 * rdma-core's librspreload.so does it over rdma-core's.
 *
 * socket() of a TCP socket (AF_INET or AF_INET6, SOCK_STREAM) makes an
 * rsocket, and a real socket of the same kind whose number the program
 * gets: the stand-in.  Every socket call on that number goes to the
 * rsocket; what only a file has (F_SETFD, fstat(), the number itself,
 * SO_TYPE) stays the stand-in's.  The stand-in is never bound, so no TCP
 * port listens or connects for it.
 *
 * Fallback to the kernel's TCP, as librspreload's:
 *  - socket() returns a plain socket when no rsocket can be made (no
 *    /dev/kqp, no device);
 *  - connect() connects the stand-in itself, over TCP, when rconnect()
 *    fails at once (no rsocket listens there, no RDMA route).  Options
 *    set before it were given to the stand-in as well; its bind() was
 *    not.
 *
 * Limits (kqp(7), PRELOAD): epoll_ctl() of an rsocket fails with EPERM
 * (an rsocket cannot be waited on by epoll); ppoll(), pselect(),
 * sendfile(), splice(), stdio and the fortified __*_chk calls see the
 * stand-in; a fork child's calls on its parent's rsockets fail with
 * EPERM, as libkqp's rsockets do.  Fork mode (RDMAV_FORK_SAFE=1, see
 * pl_fork_finish()) lets a child make its connections after the fork.
 *
 * The table maps a number to its struct pl_sock (and, in fork mode, to
 * its state there: pl_fork_finish()).  Its blocks are never freed, so
 * whether a number is there at all is read without a lock, and
 * a plain file's read() costs one load.  Everything else is under
 * pl_lock: a call takes a reference on the pl_sock (pl_get()) and drops
 * it when done (pl_put()); a number holds one too, dropped when the
 * number leaves the table (pl_take(), pl_install()).  The rsocket is
 * closed with the last reference, so no call runs on an rsocket number
 * that rclose() has freed for another.  A number leaves the table before
 * its stand-in is closed, so no other thread's new file can be taken for
 * an rsocket; one closed behind this library's back (fclose(),
 * close_range()) is taken out there, and a stale entry is replaced when
 * socket() or accept() hands out its number again.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <rdma/rsocket.h>

#define PL_EXPORT __attribute__((visibility("default")))

/*
 * libkqp's rsockets, always.  A program linked with librdmacm (rstream
 * -T s) has rdma-core's rsocket() ahead of libkqp's in the global scope,
 * where a plain call from here would find it; pl_init() takes each of
 * these from libkqp.so.1 itself, and every r*() call below goes through
 * them.  Without them (no libkqp), sockets stay plain.
 */
#define PL_RS_API(X)							\
	X(rsocket) X(rbind) X(rlisten) X(raccept) X(rconnect)		\
	X(rshutdown) X(rclose) X(rrecv) X(rrecvfrom) X(rrecvmsg)	\
	X(rsend) X(rsendto) X(rsendmsg) X(rread) X(rreadv) X(rwrite)	\
	X(rwritev) X(rpoll) X(rgetpeername) X(rgetsockname)		\
	X(rsetsockopt) X(rgetsockopt) X(rfcntl)
#define PL_RS_PTR(name) __typeof__(name) *name;
static struct {
	PL_RS_API(PL_RS_PTR)
} kqp_rs;
static bool pl_rs_ok;

#define rsocket(...)		kqp_rs.rsocket(__VA_ARGS__)
#define rbind(...)		kqp_rs.rbind(__VA_ARGS__)
#define rlisten(...)		kqp_rs.rlisten(__VA_ARGS__)
#define raccept(...)		kqp_rs.raccept(__VA_ARGS__)
#define rconnect(...)		kqp_rs.rconnect(__VA_ARGS__)
#define rshutdown(...)		kqp_rs.rshutdown(__VA_ARGS__)
#define rclose(...)		kqp_rs.rclose(__VA_ARGS__)
#define rrecv(...)		kqp_rs.rrecv(__VA_ARGS__)
#define rrecvfrom(...)		kqp_rs.rrecvfrom(__VA_ARGS__)
#define rrecvmsg(...)		kqp_rs.rrecvmsg(__VA_ARGS__)
#define rsend(...)		kqp_rs.rsend(__VA_ARGS__)
#define rsendto(...)		kqp_rs.rsendto(__VA_ARGS__)
#define rsendmsg(...)		kqp_rs.rsendmsg(__VA_ARGS__)
#define rread(...)		kqp_rs.rread(__VA_ARGS__)
#define rreadv(...)		kqp_rs.rreadv(__VA_ARGS__)
#define rwrite(...)		kqp_rs.rwrite(__VA_ARGS__)
#define rwritev(...)		kqp_rs.rwritev(__VA_ARGS__)
#define rpoll(...)		kqp_rs.rpoll(__VA_ARGS__)
#define rgetpeername(...)	kqp_rs.rgetpeername(__VA_ARGS__)
#define rgetsockname(...)	kqp_rs.rgetsockname(__VA_ARGS__)
#define rsetsockopt(...)	kqp_rs.rsetsockopt(__VA_ARGS__)
#define rgetsockopt(...)	kqp_rs.rgetsockopt(__VA_ARGS__)
#define rfcntl(...)		kqp_rs.rfcntl(__VA_ARGS__)

/* One rsocket, and the numbers dup() made of its stand-in. */
struct pl_sock {
	int rs;
	int nums;		/* numbers in the table naming it; pl_lock */
	atomic_int refs;	/* those numbers, and calls in progress */
};

#define PL_BLOCK	1024
#define PL_BLOCKS	1024	/* numbers below 2^20 */

/* A block of numbers: each one's rsocket, and its fork mode state. */
struct pl_block {
	_Atomic(struct pl_sock *) sock[PL_BLOCK];
	_Atomic(unsigned char) fork[PL_BLOCK];
};

static _Atomic(struct pl_block *) pl_table[PL_BLOCKS];
static pthread_mutex_t pl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t pl_once = PTHREAD_ONCE_INIT;

static struct {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*close)(int);
	int (*close_range)(unsigned int, unsigned int, int);
	void (*closefrom)(int);
	int (*fclose)(FILE *);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
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

/* RDMAV_FORK_SAFE: fork mode (see pl_fork_finish()); set once, at load. */
static bool pl_fork_on;

/* A fork child gets the table's lock free, whoever held it. */
static void pl_fork_prepare(void)
{
	pthread_mutex_lock(&pl_lock);
}

static void pl_fork_done(void)
{
	pthread_mutex_unlock(&pl_lock);
}

static void pl_fork_child(void);

#define PL_REAL(name) \
	(real.name = dlsym(RTLD_NEXT, #name))
#define PL_RS_SYM(name) \
	pl_rs_ok = pl_rs_ok && (kqp_rs.name = dlsym(kqp, #name));

static void pl_init(void)
{
	void *kqp = dlopen("libkqp.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!kqp)
		kqp = dlopen("libkqp.so.1", RTLD_NOW);
	pl_rs_ok = kqp;
	PL_RS_API(PL_RS_SYM)
	PL_REAL(socket);
	PL_REAL(connect);
	PL_REAL(close);
	PL_REAL(close_range);
	PL_REAL(closefrom);
	PL_REAL(fclose);
	PL_REAL(dup);
	PL_REAL(dup2);
	PL_REAL(dup3);
	PL_REAL(fcntl);
	PL_REAL(ioctl);
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
	pthread_atfork(pl_fork_prepare, pl_fork_done, pl_fork_child);
	pl_fork_on = pl_rs_ok && getenv("RDMAV_FORK_SAFE") &&
		     atoi(getenv("RDMAV_FORK_SAFE"));
}

/*
 * Every entry point first: a constructor of another library, run before
 * this one's, may already call read() or close().
 */
static inline void pl_ready(void)
{
	pthread_once(&pl_once, pl_init);
}

__attribute__((constructor)) static void pl_load(void)
{
	pl_ready();
}

/* @fd's block, made (under pl_lock) if @make; never freed. */
static struct pl_block *pl_block(int fd, bool make)
{
	struct pl_block *b;

	if (fd < 0 || fd >= PL_BLOCK * PL_BLOCKS)
		return NULL;
	b = atomic_load_explicit(&pl_table[fd / PL_BLOCK],
				 memory_order_acquire);
	if (!b && make) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		atomic_store_explicit(&pl_table[fd / PL_BLOCK], b,
				      memory_order_release);
	}
	return b;
}

static _Atomic(struct pl_sock *) *pl_slot(int fd, bool make)
{
	struct pl_block *b = pl_block(fd, make);

	return b ? &b->sock[fd % PL_BLOCK] : NULL;
}

/* Whether @fd may be a stand-in; the answer is not to be dereferenced. */
static bool pl_maybe(int fd)
{
	_Atomic(struct pl_sock *) *slot = pl_slot(fd, false);

	return slot && atomic_load_explicit(slot, memory_order_relaxed);
}

/* The rsocket behind @fd, with a reference, or NULL for a plain file. */
static struct pl_sock *pl_get(int fd)
{
	_Atomic(struct pl_sock *) *slot;
	struct pl_sock *s = NULL;

	pl_ready();
	if (!pl_maybe(fd))
		return NULL;
	pthread_mutex_lock(&pl_lock);
	slot = pl_slot(fd, false);
	if (slot)
		s = atomic_load_explicit(slot, memory_order_relaxed);
	if (s)
		atomic_fetch_add(&s->refs, 1);
	pthread_mutex_unlock(&pl_lock);
	return s;
}

/* Drop a reference; the last closes the rsocket.  errno is kept. */
static int pl_put(struct pl_sock *s)
{
	int err = errno, ret = 0;

	if (atomic_fetch_sub(&s->refs, 1) == 1) {
		ret = rclose(s->rs);
		free(s);
	}
	if (!ret)
		errno = err;
	return ret;
}

/*
 * pl_install() under pl_lock: what was at @fd goes to *@old, for the
 * caller to pl_put() once the lock is dropped.
 */
static int pl_install_locked(int fd, struct pl_sock *s, struct pl_sock **old)
{
	_Atomic(struct pl_sock *) *slot = pl_slot(fd, s);

	*old = NULL;
	if (!slot) {
		if (!s)
			return 0;
		errno = fd < 0 || fd >= PL_BLOCK * PL_BLOCKS ? EMFILE : ENOMEM;
		return -1;
	}
	*old = atomic_load_explicit(slot, memory_order_relaxed);
	atomic_store_explicit(slot, s, memory_order_relaxed);
	if (s)
		s->nums++;
	if (*old)
		(*old)->nums--;
	return 0;
}

/*
 * Put @s (with a reference the table now owns; or NULL) at @fd, and drop
 * what was there.  -1 with ENOMEM or EMFILE, @s untouched.
 */
static int pl_install(int fd, struct pl_sock *s)
{
	struct pl_sock *old;
	int ret;

	pthread_mutex_lock(&pl_lock);
	ret = pl_install_locked(fd, s, &old);
	pthread_mutex_unlock(&pl_lock);
	if (old)
		pl_put(old);
	return ret;
}

/* Take @fd out of the table; the rsocket goes with its last reference. */
static int pl_take(int fd)
{
	if (!pl_maybe(fd))
		return 0;
	return pl_install(fd, NULL);
}

static bool pl_is_tcp(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) &&
	       (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) == SOCK_STREAM &&
	       (!protocol || protocol == IPPROTO_TCP);
}

/* Make stand-in @fd name rsocket @rs (O_NONBLOCK if @nonblock). */
static int pl_track(int fd, int rs, bool nonblock)
{
	struct pl_sock *s = malloc(sizeof(*s));

	if (!s)
		return -1;
	s->rs = rs;
	s->nums = 0;
	atomic_init(&s->refs, 1);
	if ((nonblock && rfcntl(rs, F_SETFL, O_NONBLOCK) < 0) ||
	    pl_install(fd, s)) {
		free(s);
		return -1;
	}
	return 0;
}

/* A stand-in @fd and its rsocket @rs, both new; -1 when either failed. */
static int pl_new(int fd, int rs, bool nonblock)
{
	int err;

	if (fd < 0 || rs < 0 || pl_track(fd, rs, nonblock)) {
		err = errno;
		if (rs >= 0)
			rclose(rs);
		if (fd >= 0)
			real.close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/*
 * Fork mode (RDMAV_FORK_SAFE=1), as librspreload's: a TCP socket stays a
 * real one until its first data call (pl_fork_finish()), so that a
 * server may accept and fork, and its child make the RDMA connection.
 * At that call the accepted end listens with an rsocket on its own port
 * (any address), says so with four zero bytes over TCP and accepts; the
 * connecting end peeks those bytes and connects an rsocket to its TCP
 * peer.  The TCP connection is then shut down, and its socket stays as
 * the stand-in.
 *
 * Where librspreload's servers take turns at that listen through a
 * named semaphore, which any local user can hold, these retry a bind
 * that finds the port taken.  Before the four bytes, a step that fails
 * leaves the connection on TCP, as librspreload does; after them, TCP
 * would carry them into the program's stream, so the connection is shut
 * down instead.  The accepted end also gives up when its TCP peer hangs
 * up, and takes only a connection from its TCP peer's address.
 *
 * A number's state is a byte of its pl_block, read without a lock (a
 * signal handler's write() must not take pl_lock) and changed under
 * pl_lock.  The connection is made on a private dup() of the number,
 * with the number PL_F_BUSY; other data calls on it wait on
 * pl_fork_cond, and a close() marks it PL_F_GONE, so that the rsocket
 * is given to the number only if it still names the same file.
 */
enum {
	PL_F_NONE,
	PL_F_SOCKET,	/* socket(): neither connected nor listening */
	PL_F_LISTEN,	/* its accept()s give PL_F_PASSIVE */
	PL_F_ACTIVE,	/* connect()ed: to connect an rsocket */
	PL_F_PASSIVE,	/* accepted: to accept an rsocket */
	PL_F_BUSY,	/* one of the last two, being made */
	PL_F_GONE,	/* closed while PL_F_BUSY */
};

static pthread_cond_t pl_fork_cond = PTHREAD_COND_INITIALIZER;

/*
 * A child forked while another thread made a connection has no such
 * thread: the socket stays on TCP there.
 */
static void pl_fork_child(void)
{
	struct pl_block *blk;
	int b, i;

	pthread_cond_init(&pl_fork_cond, NULL);
	for (b = 0; pl_fork_on && b < PL_BLOCKS; b++) {
		blk = atomic_load(&pl_table[b]);
		for (i = 0; blk && i < PL_BLOCK; i++)
			if (atomic_load(&blk->fork[i]) == PL_F_BUSY)
				atomic_store(&blk->fork[i], PL_F_NONE);
	}
	pthread_mutex_unlock(&pl_lock);
}

/* @fd's state byte; made (under pl_lock) if @make. */
static _Atomic(unsigned char) *pl_fslot(int fd, bool make)
{
	struct pl_block *b = pl_block(fd, make);

	return b ? &b->fork[fd % PL_BLOCK] : NULL;
}

static unsigned char pl_fget(int fd)
{
	_Atomic(unsigned char) *f = pl_fork_on ? pl_fslot(fd, false) : NULL;

	return f ? atomic_load(f) : PL_F_NONE;
}

/*
 * Set @fd's state; false (errno set) when it could not be stored.  A
 * number whose connection is being made is marked gone instead.
 */
static bool pl_fset(int fd, unsigned char state)
{
	_Atomic(unsigned char) *f;

	if (!pl_fork_on || (state == PL_F_NONE && !pl_fget(fd)))
		return true;
	pthread_mutex_lock(&pl_lock);
	f = pl_fslot(fd, state != PL_F_NONE);
	if (f)
		atomic_store(f, atomic_load(f) == PL_F_BUSY ? PL_F_GONE :
							   state);
	pthread_mutex_unlock(&pl_lock);
	if (!f && state != PL_F_NONE) {
		errno = fd >= PL_BLOCK * PL_BLOCKS ? EMFILE : ENOMEM;
		return false;
	}
	return true;
}

/*
 * The options librspreload carries over: SO_REUSEADDR and TCP_NODELAY
 * (and O_NONBLOCK, which the caller gives).
 */
static void pl_fork_opts(int rs, int fd)
{
	socklen_t len;
	int v;

	len = sizeof(v);
	if (!real.getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &v, &len) && v)
		rsetsockopt(rs, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v));
	len = sizeof(v);
	if (!real.getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) && v)
		rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v));
}

/* A new blocking rsocket of @family, made as this library's own. */
static int pl_rsocket(int family)
{
	int rs;

	pl_inside = true;
	rs = rsocket(family, SOCK_STREAM, 0);
	pl_inside = false;
	return rs;
}

/*
 * The connecting end, on @fd: the rsocket, connected, or -1; *@reset
 * when the peer's four bytes were there, so that TCP cannot go on.  The
 * wait for them is as long as librspreload's: until they, other bytes
 * or the end come.
 */
static int pl_fork_active(int fd, bool *reset)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct sockaddr_storage addr;
	socklen_t len = sizeof(addr);
	uint8_t msg[4];
	ssize_t n;
	int rs;

	for (;;) {
		if (real.poll(&p, 1, -1) < 0 && errno != EINTR)
			return -1;
		n = real.recv(fd, msg, sizeof(msg), MSG_PEEK | MSG_DONTWAIT);
		if (n == sizeof(msg))
			break;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ||
		    (n > 0 && memcmp(msg, "\0\0\0", n)))
			return -1;
		/* Part of them: the rest is on its way. */
		if (n > 0)
			usleep(1000);
	}
	if (memcmp(msg, "\0\0\0\0", sizeof(msg)))
		return -1;
	*reset = true;
	if (real.getpeername(fd, (struct sockaddr *)&addr, &len))
		return -1;
	rs = pl_rsocket(addr.ss_family);
	if (rs < 0)
		return -1;
	if (rconnect(rs, (struct sockaddr *)&addr, len)) {
		rclose(rs);
		return -1;
	}
	return rs;
}

/* @a's host as an IPv6 address, an IPv4 one mapped. */
static struct in6_addr pl_host6(const struct sockaddr_storage *a)
{
	struct in6_addr h = IN6ADDR_ANY_INIT;

	if (a->ss_family == AF_INET6)
		return ((const struct sockaddr_in6 *)a)->sin6_addr;
	if (a->ss_family == AF_INET) {
		h.s6_addr[10] = h.s6_addr[11] = 0xff;
		memcpy(&h.s6_addr[12],
		       &((const struct sockaddr_in *)a)->sin_addr, 4);
	}
	return h;
}

/* Whether @a and @b are the same host (the ports aside). */
static bool pl_same_host(const struct sockaddr_storage *a,
			 const struct sockaddr_storage *b)
{
	struct in6_addr ha = pl_host6(a), hb = pl_host6(b);

	return a->ss_family && b->ss_family && !memcmp(&ha, &hb, sizeof(ha));
}

/* Seconds the accepted end waits for the connection after a hang-up. */
#define PL_FORK_HUP_WAIT	15

/*
 * The accepted end, on @fd: the rsocket, accepted, or -1; *@reset once
 * the four bytes went out.
 */
static int pl_fork_passive(int fd, bool *reset)
{
	struct sockaddr_storage me, peer, from;
	socklen_t len = sizeof(me), plen = sizeof(peer), flen;
	struct pollfd p[2];
	int lrs, rs = -1, one = 1, hup = 0;
	uint32_t msg = 0;

	if (real.getsockname(fd, (struct sockaddr *)&me, &len) ||
	    real.getpeername(fd, (struct sockaddr *)&peer, &plen))
		return -1;
	/* Any address, the same port. */
	if (me.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&me;

		a->sin6_addr = in6addr_any;
		a->sin6_flowinfo = 0;
		a->sin6_scope_id = 0;
	} else if (me.ss_family == AF_INET) {
		((struct sockaddr_in *)&me)->sin_addr.s_addr = htonl(INADDR_ANY);
	} else {
		return -1;
	}
	lrs = pl_rsocket(me.ss_family);
	if (lrs < 0)
		return -1;
	rsetsockopt(lrs, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* A sibling's connection holds the port until it is made. */
	while (rbind(lrs, (struct sockaddr *)&me, len)) {
		if (errno != EADDRINUSE)
			goto out;
		p[0] = (struct pollfd){ .fd = fd, .events = POLLRDHUP };
		if (real.poll(p, 1, 10) > 0)
			goto out;
	}
	if (rlisten(lrs, 1) || rfcntl(lrs, F_SETFL, O_NONBLOCK))
		goto out;
	if (real.send(fd, &msg, sizeof(msg), MSG_NOSIGNAL) != sizeof(msg))
		goto out;
	*reset = true;
	/*
	 * Until a connection, or PL_FORK_HUP_WAIT seconds after the TCP
	 * peer's hang-up with none made: the peer shuts TCP down as soon as
	 * its rconnect() returns, which can be before this end's raccept().
	 */
	while (rs < 0) {
		p[0] = (struct pollfd){ .fd = lrs, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = fd, .events = POLLRDHUP };
		/*
		 * After the hang-up, the listener alone, for a while: the
		 * peer's rconnect() returns when its end is established,
		 * which can be before this end's is, and so before the
		 * connection is there to take.
		 */
		if (rpoll(p, hup ? 1 : 2, hup ? 1000 : -1) < 0 &&
		    errno != EINTR)
			break;
		if (hup && !p[0].revents && ++hup > PL_FORK_HUP_WAIT)
			break;
		if (!p[0].revents && (hup || !p[1].revents))
			continue;
		flen = sizeof(from);
		rs = raccept(lrs, (struct sockaddr *)&from, &flen);
		if (rs < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			break;
		if (rs < 0 && !hup && p[1].revents)
			hup = 1;
		/* Another host's connection is not this one's. */
		if (rs >= 0 && !pl_same_host(&from, &peer)) {
			rclose(rs);
			rs = -1;
		}
	}
out:
	rclose(lrs);
	if (rs >= 0 && rfcntl(rs, F_SETFL, 0)) {
		rclose(rs);
		rs = -1;
	}
	return rs;
}

/* Whether @a and @b are one open file. */
static bool pl_same_file(int a, int b)
{
	struct stat sa, sb;

	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/*
 * Before a data call on @fd: make its RDMA connection if it is a fork
 * mode socket that has none yet.
 */
static void pl_fork_finish(int fd)
{
	_Atomic(unsigned char) *f;
	struct pl_sock *s = NULL, *old = NULL;
	unsigned char state;
	bool reset = false, installed = false;
	int dfd, rs = -1, fl;

	state = pl_fget(fd);
	if (state != PL_F_ACTIVE && state != PL_F_PASSIVE &&
	    state != PL_F_BUSY)
		return;
	pthread_mutex_lock(&pl_lock);
	f = pl_fslot(fd, false);
	while ((state = atomic_load(f)) == PL_F_BUSY)
		pthread_cond_wait(&pl_fork_cond, &pl_lock);
	if (state != PL_F_ACTIVE && state != PL_F_PASSIVE) {
		pthread_mutex_unlock(&pl_lock);
		return;
	}
	atomic_store(f, PL_F_BUSY);
	dfd = real.fcntl(fd, F_DUPFD_CLOEXEC, 0);
	pthread_mutex_unlock(&pl_lock);

	fl = dfd < 0 ? -1 : real.fcntl(dfd, F_GETFL);
	if (fl >= 0)
		rs = state == PL_F_ACTIVE ? pl_fork_active(dfd, &reset) :
					    pl_fork_passive(dfd, &reset);
	if (rs >= 0) {
		pl_fork_opts(rs, dfd);
		s = malloc(sizeof(*s));
		if (s) {
			s->rs = rs;
			s->nums = 0;
			atomic_init(&s->refs, 1);
		}
		if (!s || ((fl & O_NONBLOCK) &&
			   rfcntl(rs, F_SETFL, O_NONBLOCK) < 0)) {
			free(s);
			s = NULL;
		}
	}

	pthread_mutex_lock(&pl_lock);
	/* Given only to the number that still names this socket. */
	if (s && atomic_load(f) == PL_F_BUSY && pl_same_file(fd, dfd) &&
	    !pl_install_locked(fd, s, &old))
		installed = true;
	if (atomic_load(f) == PL_F_BUSY || atomic_load(f) == PL_F_GONE)
		atomic_store(f, PL_F_NONE);
	pthread_cond_broadcast(&pl_fork_cond);
	pthread_mutex_unlock(&pl_lock);

	if (old)
		pl_put(old);
	if (!installed) {
		free(s);
		if (rs >= 0)
			rclose(rs);
	}
	if (dfd >= 0) {
		if (installed || reset)
			real.shutdown(dfd, SHUT_RDWR);
		real.close(dfd);
	}
}

PL_EXPORT int socket(int domain, int type, int protocol)
{
	int fd, rs;

	pl_ready();
	fd = real.socket(domain, type, protocol);
	if (fd < 0 || pl_inside || !pl_rs_ok ||
	    !pl_is_tcp(domain, type, protocol)) {
		pl_fset(fd, PL_F_NONE);
		return pl_take(fd) ? -1 : fd;
	}
	if (pl_fork_on) {
		if (pl_take(fd) || !pl_fset(fd, PL_F_SOCKET)) {
			real.close(fd);
			return -1;
		}
		return fd;
	}
	pl_inside = true;
	rs = rsocket(domain, SOCK_STREAM, protocol);
	pl_inside = false;
	/* No rsocket: a plain socket, as librspreload gives. */
	if (rs < 0)
		return pl_take(fd) ? -1 : fd;
	return pl_new(fd, rs, type & SOCK_NONBLOCK);
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
	struct pl_sock *s = pl_get(fd);
	bool alone;
	int ret;

	if (!s) {
		/* As librspreload: the RDMA connection comes at the first data call. */
		if (pl_fget(fd) == PL_F_SOCKET)
			pl_fset(fd, PL_F_ACTIVE);
		return real.connect(fd, addr, len);
	}
	ret = rconnect(s->rs, addr, len);
	/*
	 * No rsocket peer or no RDMA route there: over TCP, on the stand-in.
	 * Only when this is its one number (a dup()ed one keeps its
	 * rsocket), and not for what says the call itself was wrong
	 * (EINPROGRESS, EALREADY, EISCONN, EINVAL, ...).
	 */
	if (ret && pl_no_rdma(errno)) {
		pthread_mutex_lock(&pl_lock);
		alone = s->nums == 1;
		pthread_mutex_unlock(&pl_lock);
		if (alone) {
			pl_put(s);
			if (pl_take(fd))
				return -1;
			return real.connect(fd, addr, len);
		}
	}
	pl_put(s);
	return ret;
}

/*
 * The calls that name one socket: @rcall, in which rs is the rsocket,
 * when @fd is a stand-in, with a reference held across it; @realcall
 * otherwise.
 */
#define PL_CALL(fd, rcall, realcall)					\
	do {								\
		struct pl_sock *s_ = pl_get(fd);			\
		__typeof__(realcall) ret_;				\
									\
		if (!s_)						\
			return realcall;				\
		{							\
			int rs = s_->rs;				\
									\
			ret_ = rcall;					\
		}							\
		pl_put(s_);						\
		return ret_;						\
	} while (0)

/* A data call: a fork mode socket makes its RDMA connection first. */
#define PL_DCALL(fd, rcall, realcall)					\
	do {								\
		pl_fork_finish(fd);					\
		PL_CALL(fd, rcall, realcall);				\
	} while (0)

PL_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	PL_CALL(fd, rbind(rs, addr, len), real.bind(fd, addr, len));
}

/* A fork mode socket listens over TCP; what it accepts is PL_F_PASSIVE. */
static int pl_listen(int fd, int backlog)
{
	int ret = real.listen(fd, backlog);

	if (!ret && pl_fget(fd) == PL_F_SOCKET)
		pl_fset(fd, PL_F_LISTEN);
	return ret;
}

PL_EXPORT int listen(int fd, int backlog)
{
	PL_CALL(fd, rlisten(rs, backlog), pl_listen(fd, backlog));
}

PL_EXPORT int shutdown(int fd, int how)
{
	PL_CALL(fd, rshutdown(rs, how), real.shutdown(fd, how));
}

PL_EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	PL_CALL(fd, rgetsockname(rs, addr, len),
		real.getsockname(fd, addr, len));
}

PL_EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	PL_CALL(fd, rgetpeername(rs, addr, len),
		real.getpeername(fd, addr, len));
}

PL_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	PL_DCALL(fd, rread(rs, buf, n), real.read(fd, buf, n));
}

PL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	PL_DCALL(fd, rreadv(rs, iov, iovcnt), real.readv(fd, iov, iovcnt));
}

PL_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	PL_DCALL(fd, rrecv(rs, buf, n, flags), real.recv(fd, buf, n, flags));
}

PL_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
			   struct sockaddr *addr, socklen_t *len)
{
	PL_DCALL(fd, rrecvfrom(rs, buf, n, flags, addr, len),
		real.recvfrom(fd, buf, n, flags, addr, len));
}

PL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	PL_DCALL(fd, rrecvmsg(rs, msg, flags), real.recvmsg(fd, msg, flags));
}

PL_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	PL_DCALL(fd, rwrite(rs, buf, n), real.write(fd, buf, n));
}

PL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	PL_DCALL(fd, rwritev(rs, iov, iovcnt), real.writev(fd, iov, iovcnt));
}

PL_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	PL_DCALL(fd, rsend(rs, buf, n, flags), real.send(fd, buf, n, flags));
}

PL_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags,
			 const struct sockaddr *addr, socklen_t len)
{
	PL_DCALL(fd, rsendto(rs, buf, n, flags, addr, len),
		real.sendto(fd, buf, n, flags, addr, len));
}

PL_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	PL_DCALL(fd, rsendmsg(rs, msg, flags), real.sendmsg(fd, msg, flags));
}

/* The socket's kind is the stand-in's; the rest is the rsocket's. */
PL_EXPORT int getsockopt(int fd, int level, int name, void *val,
			 socklen_t *len)
{
	if (level == SOL_SOCKET &&
	    (name == SO_TYPE || name == SO_DOMAIN || name == SO_PROTOCOL))
		return real.getsockopt(fd, level, name, val, len);
	PL_CALL(fd, rgetsockopt(rs, level, name, val, len),
		real.getsockopt(fd, level, name, val, len));
}

/* Given to the stand-in too, for a TCP fallback at connect(). */
static int pl_setsockopt(int fd, int rs, int level, int name,
			 const void *val, socklen_t len)
{
	if (level == SOL_SOCKET || level == IPPROTO_TCP)
		real.setsockopt(fd, level, name, val, len);
	return rsetsockopt(rs, level, name, val, len);
}

PL_EXPORT int setsockopt(int fd, int level, int name, const void *val,
			 socklen_t len)
{
	PL_CALL(fd, pl_setsockopt(fd, rs, level, name, val, len),
		real.setsockopt(fd, level, name, val, len));
}

PL_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len,
		      int flags)
{
	struct sockaddr_storage me;
	socklen_t melen = sizeof(me);
	struct pl_sock *s = pl_get(fd);
	int nrs, nfd;

	if (!s) {
		bool fork = pl_fget(fd) == PL_F_LISTEN;

		nfd = real.accept4(fd, addr, len, flags);
		if (nfd < 0)
			return -1;
		if (pl_take(nfd) ||
		    !pl_fset(nfd, fork ? PL_F_PASSIVE : PL_F_NONE)) {
			real.close(nfd);
			return -1;
		}
		return nfd;
	}
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) {
		pl_put(s);
		errno = EINVAL;
		return -1;
	}
	nrs = rgetsockname(s->rs, (struct sockaddr *)&me, &melen) ? -1 :
	      raccept(s->rs, addr, len);
	pl_put(s);
	if (nrs < 0)
		return -1;
	nfd = real.socket(me.ss_family, SOCK_STREAM | (flags & SOCK_CLOEXEC),
			  0);
	return pl_new(nfd, nrs, flags & SOCK_NONBLOCK);
}

PL_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return accept4(fd, addr, len, 0);
}

PL_EXPORT int close(int fd)
{
	int ret;

	pl_ready();
	pl_fset(fd, PL_F_NONE);
	if (!pl_maybe(fd))
		return real.close(fd);
	ret = pl_take(fd);
	/* The stand-in goes whatever rclose() said: the number is free. */
	if (real.close(fd))
		ret = -1;
	return ret;
}

/* Take out the stand-ins among [@first, @last]. */
static void pl_take_range(unsigned int first, unsigned int last)
{
	unsigned int fd;

	for (fd = first; fd <= last && fd < PL_BLOCK * PL_BLOCKS; fd++) {
		/* A block not made holds neither. */
		if (!atomic_load(&pl_table[fd / PL_BLOCK])) {
			fd |= PL_BLOCK - 1;
			continue;
		}
		pl_fset(fd, PL_F_NONE);
		pl_take(fd);
	}
}

PL_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	pl_ready();
	if (!real.close_range) {
		errno = ENOSYS;
		return -1;
	}
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last)
		pl_take_range(first, last);
	return real.close_range(first, last, flags);
}

PL_EXPORT void closefrom(int lowfd)
{
	pl_ready();
	if (lowfd >= 0)
		pl_take_range(lowfd, UINT_MAX);
	if (real.closefrom)
		real.closefrom(lowfd);
}

/* stdio closes its file inside libc, where close() is not seen. */
PL_EXPORT int fclose(FILE *f)
{
	pl_ready();
	pl_fset(fileno(f), PL_F_NONE);
	pl_take(fileno(f));
	return real.fclose(f);
}

/* A number made by dup() of a stand-in names its rsocket too. */
static int pl_dup_done(struct pl_sock *s, int newfd)
{
	int err;

	if (newfd < 0) {
		if (s)
			pl_put(s);
		return -1;
	}
	pl_fset(newfd, PL_F_NONE);
	/* The reference taken for the call is now the number's. */
	if (pl_install(newfd, s)) {
		err = errno;
		pl_put(s);
		real.close(newfd);
		errno = err;
		return -1;
	}
	return newfd;
}

PL_EXPORT int dup(int fd)
{
	struct pl_sock *s = pl_get(fd);

	return pl_dup_done(s, real.dup(fd));
}

PL_EXPORT int dup2(int oldfd, int newfd)
{
	struct pl_sock *s;

	if (oldfd == newfd) {
		pl_ready();
		return real.dup2(oldfd, newfd);
	}
	s = pl_get(oldfd);
	return pl_dup_done(s, real.dup2(oldfd, newfd));
}

PL_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	struct pl_sock *s = pl_get(oldfd);

	return pl_dup_done(s, real.dup3(oldfd, newfd, flags));
}

PL_EXPORT int fcntl(int fd, int cmd, ...)
{
	struct pl_sock *s;
	int ret, fl;
	va_list ap;
	long arg;

	va_start(ap, cmd);
	arg = va_arg(ap, long);
	va_end(ap);
	s = pl_get(fd);
	if (!s)
		return real.fcntl(fd, cmd, arg);
	switch (cmd) {
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		return pl_dup_done(s, real.fcntl(fd, cmd, arg));
	case F_GETFL:
		ret = real.fcntl(fd, F_GETFL);
		fl = rfcntl(s->rs, F_GETFL);
		if (ret >= 0 && fl >= 0)
			ret = (ret & ~O_NONBLOCK) | (fl & O_NONBLOCK);
		else
			ret = -1;
		break;
	case F_SETFL:
		ret = rfcntl(s->rs, F_SETFL, (int)arg);
		if (!ret)
			ret = real.fcntl(fd, F_SETFL, arg);
		break;
	default:
		/* F_SETFD and the rest are the number's: the stand-in's. */
		ret = real.fcntl(fd, cmd, arg);
		break;
	}
	pl_put(s);
	return ret;
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

/* FIONBIO is O_NONBLOCK (Python's setblocking() uses it). */
PL_EXPORT int ioctl(int fd, unsigned long req, ...)
{
	struct pl_sock *s;
	va_list ap;
	void *arg;
	int ret;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	s = pl_get(fd);
	if (!s)
		return real.ioctl(fd, req, arg);
	ret = 0;
	if (req == FIONBIO) {
		int fl = rfcntl(s->rs, F_GETFL);

		ret = fl < 0 ? -1 :
		      rfcntl(s->rs, F_SETFL, *(int *)arg ? fl | O_NONBLOCK :
							   fl & ~O_NONBLOCK);
	}
	if (!ret)
		ret = real.ioctl(fd, req, arg);
	pl_put(s);
	return ret;
}

/*
 * rpoll() over @pfd, each stand-in replaced by its rsocket for the call,
 * with a reference held across it, and given back after.
 */
static int pl_rpoll(struct pollfd *pfd, nfds_t n, int timeout)
{
	struct pl_held {
		struct pl_sock *s;
		int fd;
	} *held = calloc(n ? n : 1, sizeof(*held));
	nfds_t i;
	int ret;

	if (!held) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0; i < n; i++) {
		held[i].fd = pfd[i].fd;
		held[i].s = pl_get(pfd[i].fd);
		if (held[i].s)
			pfd[i].fd = held[i].s->rs;
	}
	ret = rpoll(pfd, n, timeout);
	for (i = 0; i < n; i++) {
		pfd[i].fd = held[i].fd;
		if (held[i].s)
			pl_put(held[i].s);
	}
	free(held);
	return ret;
}

PL_EXPORT int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	nfds_t i;

	pl_ready();
	for (i = 0; i < nfds; i++)
		if (pl_maybe(fds[i].fd))
			return pl_rpoll(fds, nfds, timeout);
	return real.poll(fds, nfds, timeout);
}

/* select()'s timeout in poll()'s milliseconds, rounded up; -2 if bad. */
static int pl_select_ms(const struct timeval *tv)
{
	long long ms;

	if (!tv)
		return -1;
	if (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000)
		return -2;
	ms = (long long)tv->tv_sec * 1000 + (tv->tv_usec + 999) / 1000;
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static bool pl_in(fd_set *set, int fd)
{
	return set && FD_ISSET(fd, set);
}

PL_EXPORT int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex,
		     struct timeval *tv)
{
	struct pollfd *pfd;
	int fd, n = 0, i, ret, timeout;
	bool any = false;

	pl_ready();
	for (fd = 0; fd < nfds && fd < FD_SETSIZE && !any; fd++)
		any = (pl_in(rd, fd) || pl_in(wr, fd) || pl_in(ex, fd)) &&
		      pl_maybe(fd);
	if (!any)
		return real.select(nfds, rd, wr, ex, tv);
	timeout = pl_select_ms(tv);
	if (nfds > FD_SETSIZE || timeout == -2) {
		errno = EINVAL;
		return -1;
	}
	pfd = calloc(nfds, sizeof(*pfd));
	if (!pfd) {
		errno = ENOMEM;
		return -1;
	}
	for (fd = 0; fd < nfds; fd++) {
		short ev = (pl_in(rd, fd) ? POLLIN : 0) |
			   (pl_in(wr, fd) ? POLLOUT : 0) |
			   (pl_in(ex, fd) ? POLLPRI : 0);

		if (!ev)
			continue;
		pfd[n].fd = fd;
		pfd[n++].events = ev;
	}
	ret = pl_rpoll(pfd, n, timeout);
	for (i = 0; ret > 0 && i < n; i++)
		if (pfd[i].revents & POLLNVAL) {
			errno = EBADF;
			ret = -1;
		}
	if (ret >= 0) {
		ret = 0;
		for (i = 0; i < n; i++) {
			short rev = pfd[i].revents;

			fd = pfd[i].fd;
			/* As select(2): an error or a hang-up reads. */
			if (pl_in(rd, fd) && !(rev & (POLLIN | POLLERR | POLLHUP)))
				FD_CLR(fd, rd);
			if (pl_in(wr, fd) && !(rev & (POLLOUT | POLLERR)))
				FD_CLR(fd, wr);
			if (pl_in(ex, fd) && !(rev & POLLPRI))
				FD_CLR(fd, ex);
			ret += pl_in(rd, fd) + pl_in(wr, fd) + pl_in(ex, fd);
		}
		if (!ret && tv)
			*tv = (struct timeval){ 0, 0 };
	}
	free(pfd);
	return ret;
}

PL_EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct pl_sock *s = op == EPOLL_CTL_DEL ? NULL : pl_get(fd);

	/* An rsocket is not a file epoll can wait on. */
	if (s) {
		pl_put(s);
		errno = EPERM;
		return -1;
	}
	return real.epoll_ctl(epfd, op, fd, ev);
}
