// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * kqp's ioctl fuzzer.  /dev/kqp is mode 0666, so this is what any local
 * user can throw at kqp.ko; the bench runs it on every kernel, and the
 * debug kernel's KASAN, lockdep, UBSAN and kmemleak judge the result.
 *
 * It knows every command's argument from kqp-abi.h, and builds sequences
 * rather than lone calls: a handle a call returns (an id, PD, CQ, QP, MR,
 * AH, membership, channel fd, ring mapping) goes into a pool that later
 * calls draw from, because random handles never get past the lookup.
 * QPs are made with submission rings now and then, some with receive
 * rings the kernel drains after completions; their rings are mapped, filled with requests built as for POST_SEND/RECV, with random
 * bytes and with random tails, and rung (KQP_IOCTL_DOORBELL).
 * Every field mixes valid values with boundary ones (0, 1, max, max + 1,
 * 2^31, 2^32 - 1, 2^64 - 1) and random ones; sizes are the struct's, or
 * one short, or longer with a zero or non-zero tail; pointers are good,
 * NULL, unmapped, kernel addresses or run into a PROT_NONE page.  Several
 * threads share the files; others close, dup and attach them, fork
 * children, map and unmap rings and scribble on their head and arm words.
 *
 * Oracles, besides the kernel's own checkers:
 *  - the errno contract of the dispatcher, where a call broke it on
 *    purpose (a size too short: EINVAL; an unknown flag: EOPNOTSUPP; a
 *    non-zero tail: E2BIG; an unknown command: ENOTTY);
 *  - a child after fork() can use no table of its parent's (EPERM);
 *  - a poller killed while its process rings KQP_DOORBELL_WAKE_POLLER is
 *    never woken again: a CLONE_VM survivor that keeps the table gets
 *    ESRCH, and EPERM from CREATE_POLLER (do_poller_death());
 *  - the kernel's log gains no splat (read from /dev/kmsg as it runs);
 *  - once every file is closed, /sys/kernel/debug/kqp/objects shows as
 *    many live objects as before the run.
 *
 * Where the kernel has KCOV (the bench's debug kernel builds kqp.ko with
 * it and nothing else), each thread records the kqp code each call ran,
 * and calls that reached new code are kept and mutated again.
 *
 * Deterministic per seed: thread N draws from a generator seeded with the
 * seed and N.  With --threads 1 a seed replays the same calls; with more,
 * the calls of each thread are the same and their interleaving is the
 * kernel's.  A failure prints the seed and every thread's last calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <rdma/kqp-abi.h>

#define offsetofend(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* Options and global state                                            */

static uint64_t opt_seed;
static unsigned long long opt_calls = 200000;
static unsigned int opt_seconds;
static unsigned int opt_threads = 4;
static bool opt_tap;
static bool opt_verbose;
static const char *opt_addr = "192.0.2.1";
/* --trace: every call, as it returns */
static FILE *opt_trace;
/* --skip: commands never generated (by index from KQP_CMD_BASE) */
static bool opt_skip[KQP_CMD_MAX - KQP_CMD_BASE];

static volatile int stop;
static unsigned long long calls_done;	/* atomic */
static unsigned long long calls_ok;	/* atomic */
static int failed;			/* first failure wins */
static char failure[4096];
static unsigned long long contract_checks, fork_checks, poller_deaths;
/* What the rings saw: mappings made, entries published, drains' results */
static unsigned long long ring_maps, ring_publishes, db_drained, db_refused;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(&failed, 1, __ATOMIC_SEQ_CST))
		return;
	va_start(ap, fmt);
	vsnprintf(failure, sizeof(failure), fmt, ap);
	va_end(ap);
	stop = 1;
}

/* ------------------------------------------------------------------ */
/* Randomness                                                          */

struct rng {
	uint64_t s;
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rnd(struct rng *r)
{
	return splitmix(&r->s);
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rnd(r) % n) : 0;
}

static bool chance(struct rng *r, unsigned int pct)
{
	return below(r, 100) < pct;
}

static const uint64_t interesting[] = {
	0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256, 511,
	4095, 4096, 4097, 0x7fff, 0x8000, 0xffff, 0x10000, 0xffffff, 0x1000000,
	0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff,
	0x100000000ULL, 0x7fffffffffffffffULL, 0x8000000000000000ULL,
	0xfffffffffffffffeULL, 0xffffffffffffffffULL,
};

static uint64_t boundary(struct rng *r)
{
	return interesting[below(r, ARRAY_SIZE(interesting))];
}

/* Mostly small, sometimes a boundary, sometimes anything. */
static uint32_t num32(struct rng *r, uint32_t usual)
{
	switch (below(r, 10)) {
	case 0:
		return (uint32_t)boundary(r);
	case 1:
		return (uint32_t)rnd(r);
	default:
		return below(r, usual + 1);
	}
}

/* ------------------------------------------------------------------ */
/* Memory the calls point at: arenas that live as long as the run      */

#define ARENA_PER_THREAD	(256 << 10)
#define MR_BUFS			4
#define MR_BUF_LEN		(64 << 10)

static char *arena;		/* ARENA_PER_THREAD per thread */
static char *mr_buf[MR_BUFS];
static char *guard;		/* a page, then a PROT_NONE page */
static char *unmapped;		/* a range nobody maps */
static long pagesz;

static uint64_t bad_ptr(struct rng *r, size_t len)
{
	switch (below(r, 6)) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return (uintptr_t)unmapped;
	case 3:
		return 0xffff888000000000ULL;	/* the kernel's direct map */
	case 4:
		/* Runs off its page into PROT_NONE. */
		return (uintptr_t)guard + pagesz - (len > 1 ? below(r, len) : 0);
	default:
		return boundary(r);
	}
}

/* ------------------------------------------------------------------ */
/* Resource pools                                                       */

enum res {
	R_FD,		/* a /dev/kqp fd; a = has a table (a command worked) */
	R_ID,		/* h, fd; a = qp type */
	R_PD,		/* h, fd */
	R_CQ,		/* h, fd; a = mmap offset, b = size */
	R_QP,		/* h, fd; a = type, b = qp_num */
	R_MR,		/* h, fd; a = addr, b = length, c = lkey | rkey << 32 */
	R_AH,		/* h, fd */
	R_MC,		/* h, fd; a = id */
	R_CHAN,		/* fd of a completion channel or async fd */
	R_MAP,		/* a = address, b = length */
	R_SRQ,		/* h, fd */
	R_RQP,		/* a QP with rings: h, fd; a = type; ri */
	R_MAX,
};

static const char *const res_names[R_MAX] = {
	"fd", "id", "pd", "cq", "qp", "mr", "ah", "mc", "chan", "map", "srq",
	"rqp",
};

struct resv {
	uint32_t h;
	int fd;
	uint64_t a, b, c;
	/* R_RQP, and R_MAP of a QP's rings (c = 1): where the rings are */
	struct kqp_qp_ring_info ri;
};

#define POOL_MAX 48

struct pool {
	struct resv v[POOL_MAX];
	int n;
};

static struct pool pools[R_MAX];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static void pool_add(enum res t, struct resv v)
{
	struct pool *p = &pools[t];
	struct resv old = { .fd = -1 };
	bool evicted = false;

	pthread_mutex_lock(&pool_lock);
	if (p->n < POOL_MAX) {
		p->v[p->n++] = v;
	} else {
		int i = (int)(v.h % POOL_MAX);

		old = p->v[i];
		evicted = true;
		p->v[i] = v;
	}
	/* What no pool names any more is unmapped (see do_poke()) or closed. */
	if (evicted && t == R_MAP)
		munmap((void *)(uintptr_t)old.a, old.b);
	pthread_mutex_unlock(&pool_lock);
	if (evicted && (t == R_CHAN || t == R_FD))
		close(old.fd);
}

/* A random member of pool @t, or false if it is empty. */
static bool pool_pick(struct rng *r, enum res t, struct resv *out)
{
	struct pool *p = &pools[t];
	bool ok = false;

	pthread_mutex_lock(&pool_lock);
	if (p->n) {
		*out = p->v[below(r, p->n)];
		ok = true;
	}
	pthread_mutex_unlock(&pool_lock);
	return ok;
}

static bool pool_take(struct rng *r, enum res t, struct resv *out)
{
	struct pool *p = &pools[t];
	bool ok = false;
	int i;

	pthread_mutex_lock(&pool_lock);
	if (p->n) {
		i = below(r, p->n);
		*out = p->v[i];
		p->v[i] = p->v[--p->n];
		ok = true;
	}
	pthread_mutex_unlock(&pool_lock);
	return ok;
}

static void pool_mark_table(int fd)
{
	struct pool *p = &pools[R_FD];
	int i;

	pthread_mutex_lock(&pool_lock);
	for (i = 0; i < p->n; i++)
		if (p->v[i].fd == fd)
			p->v[i].a = 1;
	pthread_mutex_unlock(&pool_lock);
}

/*
 * A handle for a field that wants one of type @t: mostly a live one,
 * sometimes one of another type, sometimes a boundary value.
 */
static uint32_t handle(struct rng *r, enum res t, int *fd)
{
	struct resv v;

	if (chance(r, 80) && pool_pick(r, t, &v)) {
		if (fd)
			*fd = v.fd;
		return v.h;
	}
	if (chance(r, 50) && pool_pick(r, below(r, R_MAX), &v))
		return v.h;
	return (uint32_t)boundary(r);
}

/* A kqp fd: mostly one with objects, sometimes any at all. */
static int some_fd(struct rng *r)
{
	struct resv v;

	if (pool_pick(r, R_FD, &v))
		return v.fd;
	return -1;
}

/* ------------------------------------------------------------------ */
/* The last calls of each thread, for the report                       */

#define LOG_LEN 32

struct call_log {
	const char *op;
	int ret;
	uint32_t w[4];
};

struct thread {
	int idx;
	struct rng rng;
	pthread_t tid;
	char *arena;
	struct call_log log[LOG_LEN];
	unsigned int log_pos;
	/* when the call under way started (0: none), for the watchdog */
	volatile time_t busy_since;
	volatile const char *busy_op;
	/* KCOV */
	int kcov_fd;
	unsigned long *cover;
	unsigned long long calls;
};

static struct thread *threads;

static void trace(struct thread *t, const char *op, int fd, int ret,
		  const void *arg)
{
	uint32_t w[8] = { 0 };
	unsigned int i;

	if (!opt_trace)
		return;
	if (arg)
		memcpy(w, arg, sizeof(w));
	flockfile(opt_trace);
	fprintf(opt_trace, "%d %s fd %d -> %d", t ? t->idx : -1, op, fd, ret);
	for (i = 0; i < 8; i++)
		fprintf(opt_trace, " %08x", w[i]);
	fputc('\n', opt_trace);
	funlockfile(opt_trace);
}

static void log_call(struct thread *t, const char *op, int ret,
		     const void *arg)
{
	struct call_log *l = &t->log[t->log_pos++ % LOG_LEN];

	l->op = op;
	l->ret = ret;
	memset(l->w, 0, sizeof(l->w));
	if (arg)
		memcpy(l->w, arg, sizeof(l->w));
}

static void print_logs(FILE *f)
{
	unsigned int i, j;

	for (i = 0; i < opt_threads; i++) {
		struct thread *t = &threads[i];

		fprintf(f, "# thread %u, %llu calls; its last ones, oldest first:\n",
			i, t->calls);
		for (j = 0; j < LOG_LEN; j++) {
			struct call_log *l =
				&t->log[(t->log_pos + j) % LOG_LEN];

			if (!l->op)
				continue;
			fprintf(f, "#   %-14s -> %-4d  %08x %08x %08x %08x\n",
				l->op, l->ret, l->w[0], l->w[1], l->w[2],
				l->w[3]);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Coverage (KCOV)                                                      */

#define KCOV_INIT_TRACE	_IOR('c', 1, unsigned long)
#define KCOV_ENABLE	_IO('c', 100)
#define KCOV_TRACE_PC	0
#define COVER_WORDS	(64 << 10)
#define EDGE_BITS	(1 << 20)

static uint8_t edge_map[EDGE_BITS / 8];
static unsigned long long edges_seen;	/* atomic */
static bool kcov_on;

static void kcov_start(struct thread *t)
{
	t->kcov_fd = open("/sys/kernel/debug/kcov", O_RDWR | O_CLOEXEC);
	if (t->kcov_fd < 0)
		return;
	if (ioctl(t->kcov_fd, KCOV_INIT_TRACE, COVER_WORDS))
		goto err;
	t->cover = mmap(NULL, COVER_WORDS * sizeof(unsigned long),
			PROT_READ | PROT_WRITE, MAP_SHARED, t->kcov_fd, 0);
	if (t->cover == MAP_FAILED)
		goto err;
	if (ioctl(t->kcov_fd, KCOV_ENABLE, KCOV_TRACE_PC)) {
		munmap(t->cover, COVER_WORDS * sizeof(unsigned long));
		goto err;
	}
	kcov_on = true;
	return;
err:
	close(t->kcov_fd);
	t->kcov_fd = -1;
	t->cover = NULL;
}

static void cover_reset(struct thread *t)
{
	if (t->cover)
		__atomic_store_n(&t->cover[0], 0, __ATOMIC_RELAXED);
}

/* How many edges (pairs of PCs) the last call reached for the first time. */
static unsigned int cover_collect(struct thread *t)
{
	unsigned long n, i, prev = 0;
	unsigned int fresh = 0;

	if (!t->cover)
		return 0;
	n = __atomic_load_n(&t->cover[0], __ATOMIC_RELAXED);
	if (n >= COVER_WORDS)
		n = COVER_WORDS - 1;
	for (i = 1; i <= n; i++) {
		unsigned long pc = t->cover[i];
		uint64_t e = (pc ^ (prev << 1)) * 0x9e3779b97f4a7c15ULL;
		uint32_t bit = (uint32_t)(e >> 40) & (EDGE_BITS - 1);
		uint8_t mask = 1u << (bit & 7);

		prev = pc;
		if (__atomic_load_n(&edge_map[bit >> 3], __ATOMIC_RELAXED) & mask)
			continue;
		if (!(__atomic_fetch_or(&edge_map[bit >> 3], mask,
					__ATOMIC_RELAXED) & mask)) {
			fresh++;
			__atomic_add_fetch(&edges_seen, 1, __ATOMIC_RELAXED);
		}
	}
	return fresh;
}

/* Calls that reached new code, kept to be mutated again. */
#define CORPUS_MAX	2048
#define ARG_MAX		512

struct seed_call {
	int op;
	uint32_t len;
	uint8_t arg[ARG_MAX];
};

static struct seed_call *corpus;
static unsigned int corpus_n;
static pthread_mutex_t corpus_lock = PTHREAD_MUTEX_INITIALIZER;

static void corpus_add(struct rng *r, int op, const void *arg, uint32_t len)
{
	struct seed_call *c;

	if (len > ARG_MAX)
		return;
	pthread_mutex_lock(&corpus_lock);
	c = &corpus[corpus_n < CORPUS_MAX ? corpus_n++ : below(r, CORPUS_MAX)];
	c->op = op;
	c->len = len;
	memcpy(c->arg, arg, len);
	pthread_mutex_unlock(&corpus_lock);
}

static bool corpus_pick(struct rng *r, struct seed_call *out)
{
	bool ok = false;

	pthread_mutex_lock(&corpus_lock);
	if (corpus_n) {
		*out = corpus[below(r, corpus_n)];
		ok = true;
	}
	pthread_mutex_unlock(&corpus_lock);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Building arguments                                                   */

struct cmd_info {
	const char *name;
	unsigned long num;
	uint32_t size;
	uint32_t min_size;
	uint32_t valid_flags;
	bool no_table;
};

/* Whether a command uses the caller's table, by kind (kqp/cmds.h). */
#define NT_TABLE	false
#define NT_REFAULT	false
#define NT_NO_TABLE	true

static const struct cmd_info cmds[KQP_CMD_MAX - KQP_CMD_BASE] = {
#define KQP_CMD(_name, _fn, _struct, _last, _flags, _kind, _rsv)	\
	[KQP_CMD_##_name - KQP_CMD_BASE] = {				\
		#_name, KQP_IOCTL_##_name, sizeof(_struct),		\
		offsetofend(_struct, _last), _flags, NT_##_kind		\
	},
#include <kqp/cmds.h>
};

static uint32_t dev_index(struct rng *r)
{
	static uint32_t rxe = KQP_NO_DEVICE;
	struct kqp_device_info devs[4];
	struct kqp_query q = {
		.size = sizeof(q), .num_devices = 4,
		.device_info_size = sizeof(devs[0]), .devices = (uintptr_t)devs,
	};
	int fd;

	if (rxe == KQP_NO_DEVICE) {
		fd = open("/dev/kqp", O_RDWR | O_CLOEXEC);
		if (fd >= 0 && !ioctl(fd, KQP_IOCTL_QUERY, &q) && q.num_devices)
			__atomic_store_n(&rxe, devs[0].index, __ATOMIC_RELAXED);
		if (fd >= 0)
			close(fd);
	}
	return chance(r, 90) ? rxe : num32(r, 4);
}

/* A sockaddr for a CM call: the bench's address, others, garbage. */
static void sockaddr_gen(struct rng *r, struct __kernel_sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	static const char *const v4[] = {
		NULL, "203.0.113.1", "0.0.0.0", "127.0.0.1", "239.3.3.3",
		"255.255.255.255", "198.51.100.7",
	};
	unsigned int i;

	memset(ss, 0, sizeof(*ss));
	switch (below(r, 8)) {
	case 0:
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(40000 + below(r, 64));
		inet_pton(AF_INET6, chance(r, 50) ? "::1" : "ff0e::1",
			  &sin6->sin6_addr);
		return;
	case 1:
		for (i = 0; i < sizeof(*ss); i++)
			((uint8_t *)ss)[i] = (uint8_t)rnd(r);
		if (chance(r, 50))
			ss->ss_family = (uint16_t)below(r, 50);
		return;
	default:
		break;
	}
	sin->sin_family = AF_INET;
	sin->sin_port = htons(chance(r, 90) ? 40000 + below(r, 64) :
				(uint16_t)rnd(r));
	i = chance(r, 60) ? 0 : below(r, ARRAY_SIZE(v4));
	inet_pton(AF_INET, v4[i] ? v4[i] : opt_addr, &sin->sin_addr);
}

static void conn_param_gen(struct rng *r, struct thread *t,
			   struct kqp_conn_param *p)
{
	memset(p, 0, sizeof(*p));
	p->private_data_len = chance(r, 70) ? below(r, 64) : num32(r, 300);
	p->private_data = chance(r, 90) ? (uintptr_t)t->arena :
					  bad_ptr(r, p->private_data_len);
	p->responder_resources = (uint8_t)num32(r, 8);
	p->initiator_depth = (uint8_t)num32(r, 8);
	p->retry_count = (uint8_t)num32(r, 7);
	p->rnr_retry_count = (uint8_t)num32(r, 7);
	p->qp_num = num32(r, 0xffffff);
	p->qkey = (uint32_t)rnd(r);
	if (chance(r, 5))
		p->__reserved[0] = 1;
}

static void ah_attr_gen(struct rng *r, struct kqp_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->port_num = chance(r, 85) ? 1 : (uint8_t)num32(r, 3);
	a->is_global = chance(r, 85);
	a->sgid_index = (uint8_t)num32(r, 2);
	a->hop_limit = 64;
	a->dlid = (uint16_t)num32(r, 4);
	a->sl = (uint8_t)num32(r, 2);
	a->static_rate = (uint8_t)num32(r, 2);
	if (chance(r, 50)) {
		/* ::ffff:192.0.2.1, the bench's own GID */
		a->dgid[10] = a->dgid[11] = 0xff;
		inet_pton(AF_INET, opt_addr, &a->dgid[12]);
	} else {
		for (unsigned int i = 0; i < 16; i++)
			a->dgid[i] = (uint8_t)rnd(r);
	}
	if (chance(r, 3))
		a->__reserved[1] = 1;
}

static void qp_attr_gen(struct rng *r, struct kqp_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = num32(r, 6);
	a->cur_qp_state = num32(r, 6);
	a->path_mtu = num32(r, 5);
	a->qkey = chance(r, 80) ? 0x1234 : (uint32_t)rnd(r);
	a->rq_psn = (uint32_t)rnd(r);
	a->sq_psn = (uint32_t)rnd(r);
	a->dest_qp_num = num32(r, 0xffffff);
	a->qp_access_flags = num32(r, 15);
	a->pkey_index = (uint16_t)num32(r, 2);
	a->alt_pkey_index = (uint16_t)num32(r, 2);
	a->max_rd_atomic = (uint8_t)num32(r, 16);
	a->max_dest_rd_atomic = (uint8_t)num32(r, 16);
	a->min_rnr_timer = (uint8_t)num32(r, 31);
	a->port_num = chance(r, 80) ? 1 : (uint8_t)num32(r, 3);
	a->timeout = (uint8_t)num32(r, 31);
	a->retry_cnt = (uint8_t)num32(r, 7);
	a->rnr_retry = (uint8_t)num32(r, 7);
	a->alt_port_num = (uint8_t)num32(r, 3);
	a->alt_timeout = (uint8_t)num32(r, 31);
	ah_attr_gen(r, &a->ah_attr);
	ah_attr_gen(r, &a->alt_ah_attr);
	if (chance(r, 3))
		a->__reserved = 1;
}

/* An ibv_qp_attr_mask: mostly sensible sets, sometimes anything. */
static uint32_t qp_mask_gen(struct rng *r)
{
	static const uint32_t masks[] = {
		1 | 8 | 16 | 32,		/* RESET->INIT */
		1 | 128 | 256 | 4096 | 0x80000 | 0x100000 | 0x20, /* ..RTR */
		1 | 512 | 1024 | 2048 | 8192 | 0x10000, /* RTR->RTS */
		1, 1 | 2, 64, 0x4000, 0x4000 | 1, 128, 0x200000,
	};

	return chance(r, 85) ? masks[below(r, ARRAY_SIZE(masks))] :
			       (uint32_t)rnd(r);
}

/*
 * A list of work requests in @t's arena for QP @qp (its type in @qptype):
 * SGEs over the MRs the pools know, with their keys, mostly in range.
 */
static uint32_t wr_list_gen(struct rng *r, struct thread *t, bool recv,
			    uint32_t qptype, uint32_t *count)
{
	char *p = t->arena + 4096, *end = t->arena + ARENA_PER_THREAD;
	uint32_t n = chance(r, 80) ? 1 + below(r, 8) : num32(r, 64), i, j;

	for (i = 0; i < n && p + 256 < end; i++) {
		uint32_t nsge = chance(r, 85) ? below(r, 3) : num32(r, 40);
		struct kqp_sge *sge;
		struct resv mr;

		if (recv) {
			struct kqp_recv_wr *w = (void *)p;

			memset(w, 0, sizeof(*w));
			w->wr_id = rnd(r);
			w->num_sge = nsge;
			w->__reserved = chance(r, 2);
			p += sizeof(*w);
		} else {
			struct kqp_send_wr *w = (void *)p;

			memset(w, 0, sizeof(*w));
			w->wr_id = rnd(r);
			w->opcode = chance(r, 90) ?
				    (qptype == KQP_QPT_UD ? 2 + below(r, 2) :
							    below(r, 7)) :
				    num32(r, 12);
			w->send_flags = chance(r, 90) ? below(r, 16) :
							(uint32_t)rnd(r);
			w->num_sge = nsge;
			if (w->send_flags & 8) {
				w->num_sge = chance(r, 90) ? 0 : nsge;
				w->inline_len = chance(r, 80) ? below(r, 64) :
								num32(r, 512);
			}
			w->imm_data = (uint32_t)rnd(r);
			if (pool_pick(r, R_MR, &mr)) {
				w->wr.rdma.remote_addr = mr.a + below(r, 64);
				w->wr.rdma.rkey = (uint32_t)(mr.c >> 32);
			}
			if (qptype == KQP_QPT_UD || chance(r, 10)) {
				w->wr.ud.ah = handle(r, R_AH, NULL);
				w->wr.ud.remote_qpn = num32(r, 0xffffff);
				w->wr.ud.remote_qkey = 0x1234;
			}
			if (chance(r, 2))
				w->__reserved = 1;
			p += sizeof(*w);
			if (w->inline_len && !w->num_sge) {
				uint32_t len = w->inline_len > 512 ? 512 :
					       w->inline_len;

				p += (len + 7) & ~7u;
				continue;
			}
		}
		sge = (void *)p;
		for (j = 0; j < nsge && (char *)(sge + 1) < end - 256; j++) {
			if (pool_pick(r, R_MR, &mr) && chance(r, 90)) {
				sge->addr = mr.a + below(r, (uint32_t)mr.b);
				sge->length = below(r, (uint32_t)mr.b + 8);
				sge->lkey = chance(r, 95) ? (uint32_t)mr.c :
							    (uint32_t)rnd(r);
			} else {
				sge->addr = chance(r, 50) ? bad_ptr(r, 8) :
							    rnd(r);
				sge->length = num32(r, 4096);
				sge->lkey = (uint32_t)rnd(r);
			}
			sge++;
		}
		p = (char *)sge;
	}
	*count = chance(r, 90) ? i : num32(r, 16);
	return (uint32_t)(p - (t->arena + 4096));
}

/* ------------------------------------------------------------------ */
/* One call                                                             */

/* Fill @arg (zeroed, cmds[op].size bytes) for command @op. */
static int gen_cmd(struct rng *r, struct thread *t, int op, void *arg,
		   int *fd)
{
	const struct cmd_info *ci = &cmds[op];
	int hfd = -1;

	*fd = some_fd(r);
	switch (op + KQP_CMD_BASE) {
	case KQP_CMD_QUERY: {
		struct kqp_query *c = arg;

		c->num_devices = num32(r, 4);
		c->device_info_size = chance(r, 80) ?
				      sizeof(struct kqp_device_info) :
				      num32(r, 200);
		c->devices = chance(r, 85) ? (uintptr_t)t->arena :
					     bad_ptr(r, 160);
		break;
	}
	case KQP_CMD_CREATE_ID: {
		struct kqp_create_id *c = arg;
		static const uint32_t ps[] = {
			KQP_PS_TCP, KQP_PS_UDP, KQP_PS_IB, KQP_PS_IPOIB,
		};

		c->uid = rnd(r);
		c->port_space = chance(r, 90) ? ps[below(r, 4)] : num32(r, 0x200);
		c->qp_type = c->port_space == KQP_PS_TCP ? KQP_QPT_RC :
			     c->port_space == KQP_PS_IB && chance(r, 50) ?
			     KQP_QPT_RC : KQP_QPT_UD;
		if (chance(r, 5))
			c->qp_type = num32(r, 8);
		break;
	}
	case KQP_CMD_DESTROY_ID:
	case KQP_CMD_RESOLVE_ROUTE:
	case KQP_CMD_QUERY_ID:
	case KQP_CMD_DISCONNECT:
	case KQP_CMD_ESTABLISH:
	case KQP_CMD_NOTIFY:
	case KQP_CMD_LISTEN:
		/* All start with size, flags, id. */
		((uint32_t *)arg)[2] = handle(r, R_ID, &hfd);
		if (op + KQP_CMD_BASE == KQP_CMD_RESOLVE_ROUTE)
			((struct kqp_resolve_route *)arg)->timeout_ms =
				num32(r, 2000);
		if (op + KQP_CMD_BASE == KQP_CMD_LISTEN)
			((struct kqp_listen *)arg)->backlog = num32(r, 8);
		if (op + KQP_CMD_BASE == KQP_CMD_NOTIFY)
			((struct kqp_notify *)arg)->event = num32(r, 20);
		break;
	case KQP_CMD_BIND_ADDR: {
		struct kqp_bind_addr *c = arg;

		c->id = handle(r, R_ID, &hfd);
		sockaddr_gen(r, &c->addr);
		break;
	}
	case KQP_CMD_RESOLVE_ADDR: {
		struct kqp_resolve_addr *c = arg;

		c->id = handle(r, R_ID, &hfd);
		if (chance(r, 30))
			sockaddr_gen(r, &c->src_addr);
		sockaddr_gen(r, &c->dst_addr);
		c->timeout_ms = num32(r, 2000);
		break;
	}
	case KQP_CMD_CONNECT: {
		struct kqp_connect *c = arg;

		c->id = handle(r, R_ID, &hfd);
		conn_param_gen(r, t, &c->param);
		break;
	}
	case KQP_CMD_ACCEPT: {
		struct kqp_accept *c = arg;

		c->id = handle(r, R_ID, &hfd);
		c->uid = rnd(r);
		conn_param_gen(r, t, &c->param);
		break;
	}
	case KQP_CMD_REJECT: {
		struct kqp_reject *c = arg;

		c->id = handle(r, R_ID, &hfd);
		c->private_data_len = chance(r, 70) ? below(r, 64) :
						      num32(r, 300);
		c->private_data = chance(r, 90) ? (uintptr_t)t->arena :
						  bad_ptr(r, 64);
		break;
	}
	case KQP_CMD_SET_OPTION: {
		struct kqp_set_option *c = arg;

		c->id = handle(r, R_ID, &hfd);
		c->level = chance(r, 80) ? KQP_OPTION_ID :
			   chance(r, 60) ? KQP_OPTION_IB : num32(r, 4);
		c->optname = num32(r, 4);
		c->optlen = chance(r, 80) ? (c->optname == 1 ||
					     c->optname == 2 ? 4 : 1) :
					    num32(r, 16);
		c->optval = chance(r, 90) ? (uintptr_t)t->arena : bad_ptr(r, 4);
		*(uint32_t *)t->arena = num32(r, 255);
		/* Path records: some of them a primary, bidirectional one. */
		if (c->level == KQP_OPTION_IB && chance(r, 70)) {
			c->optname = KQP_OPTION_IB_PATH;
			c->optlen = 72 * below(r, KQP_OPTION_IB_PATH_MAX + 2);
			for (unsigned int i = 0; i < c->optlen && i < 72 * 4;
			     i += 72)
				*(uint32_t *)(t->arena + i) = chance(r, 50) ?
					0x2b : num32(r, 64);
		}
		break;
	}
	case KQP_CMD_INIT_QP_ATTR: {
		struct kqp_init_qp_attr *c = arg;

		c->id = handle(r, R_ID, &hfd);
		c->qp_state = num32(r, 6);
		break;
	}
	case KQP_CMD_JOIN_MCAST: {
		struct kqp_join_mcast *c = arg;
		struct sockaddr_in *sin = (struct sockaddr_in *)&c->addr;

		c->id = handle(r, R_ID, &hfd);
		c->join_flags = num32(r, 1);
		c->uid = rnd(r);
		sockaddr_gen(r, &c->addr);
		if (chance(r, 60) && sin->sin_family == AF_INET)
			sin->sin_addr.s_addr = htonl(0xef030000 + below(r, 8));
		break;
	}
	case KQP_CMD_LEAVE_MCAST: {
		struct kqp_leave_mcast *c = arg;
		struct resv mc;

		if (pool_pick(r, R_MC, &mc) && chance(r, 80)) {
			c->id = (uint32_t)mc.a;
			c->mc_id = mc.h;
			hfd = mc.fd;
		} else {
			c->id = handle(r, R_ID, &hfd);
			c->mc_id = num32(r, 4);
		}
		break;
	}
	case KQP_CMD_MIGRATE_ID: {
		struct kqp_migrate_id *c = arg;

		c->id = handle(r, R_ID, &hfd);
		c->fd = chance(r, 85) ? some_fd(r) : (int32_t)num32(r, 64);
		break;
	}
	case KQP_CMD_GET_EVENT:
		break;
	case KQP_CMD_ATTACH: {
		struct kqp_attach *c = arg;

		c->fd = chance(r, 85) ? some_fd(r) : (int32_t)num32(r, 64);
		break;
	}
	case KQP_CMD_CTX_INFO:
		break;
	case KQP_CMD_QUERY_DEVICE:
		((struct kqp_query_device *)arg)->device_index = dev_index(r);
		break;
	case KQP_CMD_QUERY_PORT:
	case KQP_CMD_QUERY_GID:
	case KQP_CMD_QUERY_PKEY: {
		struct kqp_query_gid *c = arg;	/* the same first fields */

		c->device_index = dev_index(r);
		c->port_num = chance(r, 80) ? 1 : num32(r, 3);
		if (op + KQP_CMD_BASE != KQP_CMD_QUERY_PORT)
			c->index = num32(r, 4);
		break;
	}
	case KQP_CMD_ALLOC_PD:
		((struct kqp_alloc_pd *)arg)->device_index = dev_index(r);
		((struct kqp_alloc_pd *)arg)->flags =
			chance(r, 30) ? KQP_ALLOC_PD_DEFAULT : 0;
		break;
	case KQP_CMD_DEALLOC_PD:
		((struct kqp_dealloc_pd *)arg)->pd = handle(r, R_PD, &hfd);
		break;
	case KQP_CMD_CREATE_COMP_CHANNEL:
		break;
	case KQP_CMD_CREATE_CQ: {
		struct kqp_create_cq *c = arg;
		struct resv ch;

		c->device_index = dev_index(r);
		c->cqe = chance(r, 90) ? 1 + below(r, 64) : num32(r, 40000);
		c->comp_vector = num32(r, 1) > 0 && chance(r, 10);
		c->channel_fd = chance(r, 40) && pool_pick(r, R_CHAN, &ch) ?
				ch.fd : chance(r, 90) ? -1 :
				(int32_t)num32(r, 64);
		c->uid = rnd(r);
		break;
	}
	case KQP_CMD_DESTROY_CQ:
	case KQP_CMD_FLUSH_CQ:
		((uint32_t *)arg)[2] = handle(r, R_CQ, &hfd);
		break;
	case KQP_CMD_CREATE_QP: {
		struct kqp_create_qp *c = arg;

		c->flags = chance(r, 20) ? KQP_CREATE_QP_SQ_SIG_ALL : 0;
		if (chance(r, 40))
			c->flags |= KQP_CREATE_QP_RINGS;
		if (chance(r, 50))
			c->flags |= KQP_CREATE_QP_RECV_ASYNC;
		c->qp_type = chance(r, 50) ? KQP_QPT_RC : KQP_QPT_UD;
		if (chance(r, 5))
			c->qp_type = num32(r, 8);
		if (chance(r, 60)) {
			c->id = handle(r, R_ID, &hfd);
			c->pd = chance(r, 60) ? 0 : handle(r, R_PD, NULL);
			c->send_cq = chance(r, 60) ? 0 : handle(r, R_CQ, NULL);
			c->recv_cq = chance(r, 60) ? 0 : handle(r, R_CQ, NULL);
		} else {
			c->pd = handle(r, R_PD, &hfd);
			c->send_cq = handle(r, R_CQ, NULL);
			c->recv_cq = chance(r, 50) ? c->send_cq :
						     handle(r, R_CQ, NULL);
		}
		if (chance(r, 25))
			c->srq = handle(r, R_SRQ, NULL);
		c->send_cq_uid = rnd(r);
		c->recv_cq_uid = rnd(r);
		c->uid = rnd(r);
		c->cap.max_send_wr = chance(r, 90) ? below(r, 32) :
						     num32(r, 100000);
		c->cap.max_recv_wr = chance(r, 90) ? below(r, 32) :
						     num32(r, 100000);
		c->cap.max_send_sge = num32(r, 4);
		c->cap.max_recv_sge = num32(r, 4);
		c->cap.max_inline_data = chance(r, 80) ? below(r, 128) :
							 num32(r, 4096);
		break;
	}
	case KQP_CMD_DESTROY_QP:
		((struct kqp_destroy_qp *)arg)->qp = handle(r, R_QP, &hfd);
		break;
	case KQP_CMD_MODIFY_QP: {
		struct kqp_modify_qp *c = arg;

		c->qp = handle(r, R_QP, &hfd);
		c->attr_mask = qp_mask_gen(r);
		qp_attr_gen(r, &c->attr);
		break;
	}
	case KQP_CMD_QUERY_QP: {
		struct kqp_query_qp *c = arg;

		c->qp = handle(r, R_QP, &hfd);
		c->attr_mask = chance(r, 80) ? (uint32_t)rnd(r) & 0x3fffff :
					       (uint32_t)rnd(r);
		break;
	}
	case KQP_CMD_POST_SEND:
	case KQP_CMD_POST_RECV:
	case KQP_CMD_POST_SRQ_RECV: {
		struct kqp_post *c = arg;
		struct resv qp;
		uint32_t qptype = KQP_QPT_RC;

		if (op + KQP_CMD_BASE == KQP_CMD_POST_SRQ_RECV) {
			c->qp = handle(r, R_SRQ, &hfd);
		} else if (pool_pick(r, R_QP, &qp) && chance(r, 90)) {
			c->qp = qp.h;
			hfd = qp.fd;
			qptype = (uint32_t)qp.a;
		} else {
			c->qp = handle(r, R_QP, &hfd);
		}
		c->wrs_len = wr_list_gen(r, t, op + KQP_CMD_BASE !=
					 KQP_CMD_POST_SEND, qptype,
					 &c->count);
		c->wrs = (uintptr_t)t->arena + 4096;
		if (chance(r, 10))
			c->wrs_len = chance(r, 50) ? below(r, c->wrs_len + 1) :
						     num32(r, 1 << 21);
		if (chance(r, 3))
			c->wrs = bad_ptr(r, c->wrs_len);
		break;
	}
	case KQP_CMD_CREATE_ASYNC_FD:
		break;
	case KQP_CMD_CREATE_POLLER: {
		struct kqp_create_poller *c = arg;

		/* Mostly a poller that spins a while: it drains beside us. */
		c->idle_us = chance(r, 80) ? below(r, 5000) :
					     num32(r, KQP_POLLER_IDLE_US_MAX + 8);
		break;
	}
	case KQP_CMD_DOORBELL: {
		struct kqp_doorbell *c = arg;
		struct resv qp;
		uint32_t i, esz, room;

		c->count = chance(r, 90) ? 1 + below(r, 4) :
					   num32(r, KQP_DOORBELL_MAX + 8);
		c->entry_size = chance(r, 90) ? sizeof(struct kqp_doorbell_entry) :
						num32(r, 64);
		c->entries = chance(r, 95) ? (uintptr_t)t->arena :
					     bad_ptr(r, 16);
		esz = c->entry_size < 16 ? 16 : c->entry_size;
		room = ARENA_PER_THREAD / esz;
		memset(t->arena, 0, c->count < room ? c->count * esz :
						      ARENA_PER_THREAD);
		for (i = 0; i < c->count && i < room; i++) {
			struct kqp_doorbell_entry *e =
				(void *)(t->arena + (size_t)i * esz);

			if (chance(r, 85) && pool_pick(r, R_RQP, &qp)) {
				e->qp = qp.h;
				hfd = qp.fd;
			} else {
				e->qp = handle(r, R_QP, &hfd);
			}
			e->flags = chance(r, 90) ? 1 + below(r, 3) :
						   num32(r, 8);
			e->out_errno = (int32_t)rnd(r);
			if (chance(r, 2))
				e->__reserved = 1;
			/* A longer entry's tail: zero, mostly. */
			if (esz > 16 && chance(r, 5))
				t->arena[(size_t)i * esz + 16 +
					 below(r, esz - 16)] = 1;
		}
		break;
	}
	case KQP_CMD_REG_MR: {
		struct kqp_reg_mr *c = arg;
		char *buf = mr_buf[below(r, MR_BUFS)];
		uint32_t off = chance(r, 70) ? 0 : below(r, MR_BUF_LEN);

		c->pd = handle(r, R_PD, &hfd);
		c->access = chance(r, 85) ? below(r, 16) : (uint32_t)rnd(r);
		if (chance(r, 88)) {
			c->addr = (uintptr_t)buf + off;
			c->length = 1 + below(r, MR_BUF_LEN - off);
		} else {
			c->addr = chance(r, 50) ? bad_ptr(r, 4096) : rnd(r);
			c->length = boundary(r);
		}
		c->iova = chance(r, 80) ? c->addr : boundary(r);
		break;
	}
	case KQP_CMD_DEREG_MR:
		((struct kqp_dereg_mr *)arg)->mr = handle(r, R_MR, &hfd);
		break;
	case KQP_CMD_CREATE_AH: {
		struct kqp_create_ah *c = arg;

		c->pd = handle(r, R_PD, &hfd);
		ah_attr_gen(r, &c->attr);
		break;
	}
	case KQP_CMD_DESTROY_AH:
		((struct kqp_destroy_ah *)arg)->ah = handle(r, R_AH, &hfd);
		break;
	case KQP_CMD_CREATE_SRQ: {
		struct kqp_create_srq *c = arg;

		c->pd = handle(r, R_PD, &hfd);
		c->uid = rnd(r);
		/*
		 * Depths as for QPs: rxe takes up to 1 << 20 receives of 27
		 * SGEs, half a gigabyte of vmalloc per SRQ; a few of those
		 * OOMed the 2 GiB guest before max_queue_bytes, which now
		 * refuses them, so calls are better spent on depths that
		 * pass.  The random and boundary values of num32() still
		 * reach past every limit.
		 */
		c->attr.max_wr = chance(r, 90) ? below(r, 64) : num32(r, 100000);
		c->attr.max_sge = chance(r, 90) ? below(r, 4) : num32(r, 32);
		c->attr.srq_limit = chance(r, 70) ? 0 : num32(r, 64);
		break;
	}
	case KQP_CMD_DESTROY_SRQ:
	case KQP_CMD_QUERY_SRQ:
		((uint32_t *)arg)[2] = handle(r, R_SRQ, &hfd);
		break;
	case KQP_CMD_MODIFY_SRQ: {
		struct kqp_modify_srq *c = arg;

		c->srq = handle(r, R_SRQ, &hfd);
		c->attr_mask = chance(r, 90) ? below(r, 4) : (uint32_t)rnd(r);
		c->attr.max_wr = chance(r, 90) ? below(r, 128) : num32(r, 100000);
		c->attr.srq_limit = chance(r, 80) ? below(r, 64) : num32(r, 1 << 21);
		break;
	}
	case KQP_CMD_ATTACH_MCAST:
	case KQP_CMD_DETACH_MCAST: {
		struct kqp_mcast_attach *c = arg;

		c->qp = handle(r, R_QP, &hfd);
		c->lid = (uint16_t)num32(r, 2);
		if (chance(r, 80)) {
			/* ::ffff:239.3.0.N */
			c->gid[10] = c->gid[11] = 0xff;
			c->gid[12] = 239;
			c->gid[13] = 3;
			c->gid[15] = (uint8_t)below(r, 8);
		} else {
			for (unsigned int i = 0; i < 16; i++)
				c->gid[i] = (uint8_t)rnd(r);
		}
		break;
	}
	default:
		break;
	}
	/* A handle's own file is where it means something, mostly. */
	if (hfd >= 0 && chance(r, 85))
		*fd = hfd;
	(void)ci;
	return 0;
}

/* Remember what a successful call made. */
static void learn(int op, int fd, const void *arg)
{
	struct resv v = { .fd = fd };

	switch (op + KQP_CMD_BASE) {
	case KQP_CMD_CREATE_ID: {
		const struct kqp_create_id *c = arg;

		v.h = c->out_id;
		v.a = c->qp_type;
		pool_add(R_ID, v);
		break;
	}
	case KQP_CMD_GET_EVENT: {
		const struct kqp_get_event *c = arg;

		if (c->out_event == 4 /* CONNECT_REQUEST */) {
			v.h = c->out_id;
			pool_add(R_ID, v);
		}
		break;
	}
	case KQP_CMD_MIGRATE_ID: {
		const struct kqp_migrate_id *c = arg;

		v.h = c->out_id;
		v.fd = c->fd;
		pool_add(R_ID, v);
		break;
	}
	case KQP_CMD_JOIN_MCAST: {
		const struct kqp_join_mcast *c = arg;

		v.h = c->out_mc_id;
		v.a = c->id;
		pool_add(R_MC, v);
		break;
	}
	case KQP_CMD_ALLOC_PD:
		v.h = ((const struct kqp_alloc_pd *)arg)->out_pd;
		pool_add(R_PD, v);
		break;
	case KQP_CMD_CREATE_COMP_CHANNEL:
		v.fd = ((const struct kqp_create_comp_channel *)arg)->out_fd;
		fcntl(v.fd, F_SETFL, O_NONBLOCK);
		pool_add(R_CHAN, v);
		break;
	case KQP_CMD_CREATE_ASYNC_FD:
		v.fd = ((const struct kqp_create_async_fd *)arg)->out_fd;
		fcntl(v.fd, F_SETFL, O_NONBLOCK);
		pool_add(R_CHAN, v);
		break;
	case KQP_CMD_CREATE_CQ: {
		const struct kqp_create_cq *c = arg;

		v.h = c->out_cq;
		v.a = c->out_ring.mmap_offset;
		v.b = c->out_ring.mmap_size;
		pool_add(R_CQ, v);
		break;
	}
	case KQP_CMD_CREATE_QP: {
		const struct kqp_create_qp *c = arg;
		struct resv cq = { .fd = fd };

		v.h = c->out_qp;
		v.a = c->qp_type;
		v.b = c->out_qp_num;
		pool_add(R_QP, v);
		if ((c->flags & KQP_CREATE_QP_RINGS) && c->size >= sizeof(*c) &&
		    c->out_rings.mmap_size) {
			v.ri = c->out_rings;
			pool_add(R_RQP, v);
		}
		if (c->out_send_channel_fd >= 0) {
			cq.h = c->out_send_cq;
			cq.a = c->out_send_ring.mmap_offset;
			cq.b = c->out_send_ring.mmap_size;
			pool_add(R_CQ, cq);
			cq.fd = c->out_send_channel_fd;
			fcntl(cq.fd, F_SETFL, O_NONBLOCK);
			pool_add(R_CHAN, cq);
		}
		if (c->out_recv_channel_fd >= 0) {
			cq.fd = fd;
			cq.h = c->out_recv_cq;
			cq.a = c->out_recv_ring.mmap_offset;
			cq.b = c->out_recv_ring.mmap_size;
			pool_add(R_CQ, cq);
			cq.fd = c->out_recv_channel_fd;
			fcntl(cq.fd, F_SETFL, O_NONBLOCK);
			pool_add(R_CHAN, cq);
		}
		break;
	}
	case KQP_CMD_REG_MR: {
		const struct kqp_reg_mr *c = arg;

		v.h = c->out_mr;
		v.a = c->iova;
		v.b = c->length;
		v.c = c->out_lkey | (uint64_t)c->out_rkey << 32;
		pool_add(R_MR, v);
		break;
	}
	case KQP_CMD_CREATE_AH:
		v.h = ((const struct kqp_create_ah *)arg)->out_ah;
		pool_add(R_AH, v);
		break;
	case KQP_CMD_CREATE_SRQ:
		v.h = ((const struct kqp_create_srq *)arg)->out_srq;
		pool_add(R_SRQ, v);
		break;
	default:
		break;
	}
}

/*
 * Break the argument on purpose: a size too short, a longer one with a
 * tail, an unknown flag, a reserved field.  Returns the errno the
 * dispatcher must give, 0 if anything goes, -1 if it was not broken.
 */
static int break_arg(struct rng *r, int op, uint8_t *arg, uint32_t *len)
{
	const struct cmd_info *ci = &cmds[op];
	uint32_t bit;

	switch (below(r, 6)) {
	case 0:
		if (ci->min_size <= 8)
			return -1;
		*len = ci->min_size - 1 - below(r, ci->min_size - 8);
		((uint32_t *)arg)[0] = *len;
		return EINVAL;
	case 1:
		/* A newer caller's zero tail is fine. */
		*len = ci->size + 8 * (1 + below(r, 4));
		((uint32_t *)arg)[0] = *len;
		return 0;
	case 2:
		*len = ci->size + 8 * (1 + below(r, 4));
		((uint32_t *)arg)[0] = *len;
		arg[ci->size + below(r, *len - ci->size)] = 1 + below(r, 255);
		return E2BIG;
	case 3:
		bit = 1u << below(r, 32);
		if (ci->valid_flags & bit)
			return -1;
		((uint32_t *)arg)[1] |= bit;
		return EOPNOTSUPP;
	case 4:
		/* Any size at all: the errno depends on too much. */
		*len = num32(r, ARG_MAX);
		((uint32_t *)arg)[0] = *len;
		return 0;
	default:
		return -1;
	}
}

static int xioctl(int fd, unsigned long num, void *arg)
{
	return ioctl(fd, num, arg) ? errno : 0;
}

static dev_t kqp_rdev;

/*
 * Is @fd a file of /dev/kqp still?  Other threads close fds, and the
 * number can come back as a file of another kind.
 */
static bool is_kqp(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISCHR(st.st_mode) && st.st_rdev == kqp_rdev;
}

/* One command, built fresh or from the corpus; returns its errno. */
static int do_cmd(struct thread *t)
{
	struct rng *r = &t->rng;
	uint8_t arg[ARG_MAX + 64] __attribute__((aligned(8)));
	struct seed_call sc;
	int op, fd, ret, want = -1;
	uint32_t len;
	bool replay = kcov_on && chance(r, 30) && corpus_pick(r, &sc);

	memset(arg, 0, sizeof(arg));
	if (replay) {
		unsigned int i, n = 1 + below(r, 4);

		op = sc.op;
		len = sc.len;
		memcpy(arg, sc.arg, len);
		fd = some_fd(r);
		/* Mutate: fields from the pools or boundaries, or bytes. */
		for (i = 0; i < n && len > 8; i++) {
			uint32_t off = 8 + (below(r, len - 8) & ~3u);

			if (off + 4 > len)
				continue;
			if (chance(r, 50)) {
				uint32_t h = handle(r, below(r, R_MAX), &fd);

				memcpy(arg + off, &h, 4);
			} else if (chance(r, 50)) {
				uint32_t b = (uint32_t)boundary(r);

				memcpy(arg + off, &b, 4);
			} else {
				arg[off + below(r, 4)] ^= 1u << below(r, 8);
			}
		}
	} else {
		do
			op = below(r, KQP_CMD_MAX - KQP_CMD_BASE);
		while (opt_skip[op]);
		len = cmds[op].size;
		((uint32_t *)arg)[0] = len;
		gen_cmd(r, t, op, arg, &fd);
		if (chance(r, 8))
			want = break_arg(r, op, arg, &len);
	}
	if (fd < 0 || opt_skip[op])
		return 0;

	cover_reset(t);
	t->busy_op = cmds[op].name;
	t->busy_since = time(NULL);
	ret = xioctl(fd, cmds[op].num, arg);
	t->busy_since = 0;
	if (cover_collect(t) && !replay && want < 0)
		corpus_add(r, op, arg, len > ARG_MAX ? ARG_MAX : len);
	log_call(t, cmds[op].name, ret, arg);
	trace(t, cmds[op].name, fd, ret, arg);
	t->calls++;

	/*
	 * is_kqp() looks after the call, and another thread may have closed
	 * the fd and opened /dev/kqp on its number meanwhile.  ENOTTY tells
	 * the call met no kqp file: the number is one of kqp's commands, for
	 * which the uapi gives ENOTTY on nothing else.
	 */
	if (want > 0 && ret != want && ret != EFAULT && ret != EPERM &&
	    ret != EBADF && ret != ENOTTY && is_kqp(fd)) {
		fail("%s: broken argument (size %u) gave errno %d, the ABI says %d",
		     cmds[op].name, len, ret, want);
	}
	if (want >= 0)
		__atomic_add_fetch(&contract_checks, 1, __ATOMIC_RELAXED);
	if (!ret) {
		if (!cmds[op].no_table)
			pool_mark_table(fd);
		learn(op, fd, arg);
	}
	if (!ret && op + KQP_CMD_BASE == KQP_CMD_DOORBELL) {
		const struct kqp_doorbell *c = (const void *)arg;
		uint32_t i;

		for (i = 0; c->entries == (uintptr_t)t->arena &&
			    c->entry_size >= 16 && c->entry_size <= 64 &&
			    i < c->count && i < 64; i++) {
			const struct kqp_doorbell_entry *e =
				(const void *)(t->arena + (size_t)i * c->entry_size);

			__atomic_add_fetch(e->out_errno ? &db_refused :
					   &db_drained, 1, __ATOMIC_RELAXED);
		}
	}
	return ret;
}

/* ------------------------------------------------------------------ */
/* Things that are not ioctls                                           */

static void do_open(struct rng *r)
{
	struct resv v = { 0 };
	int flags = O_RDWR | O_CLOEXEC | (chance(r, 95) ? O_NONBLOCK : 0);

	/* A blocking file would let GET_EVENT wait for ever. */
	flags |= O_NONBLOCK;
	v.fd = open("/dev/kqp", flags);
	trace(NULL, "open", v.fd, 0, NULL);
	if (v.fd >= 0)
		pool_add(R_FD, v);
}

static void do_close(struct rng *r)
{
	struct resv v;

	if (pool_take(r, chance(r, 70) ? R_FD : R_CHAN, &v)) {
		trace(NULL, "close", v.fd, 0, NULL);
		close(v.fd);
	}
}

static void do_dup(struct rng *r)
{
	struct resv v;
	int fd;

	if (!pool_pick(r, R_FD, &v))
		return;
	fd = fcntl(v.fd, F_DUPFD_CLOEXEC, 3);
	trace(NULL, "dup", v.fd, fd, NULL);
	if (fd >= 0) {
		v.fd = fd;
		pool_add(R_FD, v);
	}
}

static void do_mmap(struct rng *r)
{
	struct resv cq, m = { 0 };
	int fd = some_fd(r);
	size_t len;
	void *p;

	/* A QP's rings: pooled with where they are, for do_poke(). */
	if (fd >= 0 && chance(r, 50) && pool_pick(r, R_RQP, &cq)) {
		m.c = 1;
		m.ri = cq.ri;
		cq.a = cq.ri.mmap_offset;
		cq.b = cq.ri.mmap_size;
	} else if (fd < 0 || !pool_pick(r, R_CQ, &cq)) {
		return;
	}
	if (chance(r, 85))
		fd = cq.fd;
	len = chance(r, 85) ? cq.b : (size_t)num32(r, 1 << 22);
	p = mmap(NULL, len ? len : 1,
		 chance(r, 90) ? PROT_READ | PROT_WRITE :
				 PROT_READ | PROT_EXEC,
		 chance(r, 95) ? MAP_SHARED : MAP_PRIVATE, fd,
		 chance(r, 90) ? (off_t)cq.a : (off_t)boundary(r) * pagesz);
	if (p == MAP_FAILED)
		return;
	m.a = (uintptr_t)p;
	m.b = len ? len : 1;
	if (m.c == 1)
		__atomic_add_fetch(&ring_maps, 1, __ATOMIC_RELAXED);
	pool_add(R_MAP, m);
}

/*
 * Write into a QP's mapped rings as a hostile producer could: requests
 * built as for POST_SEND/RECV (@wr, @wr_len bytes, made before the lock
 * was taken, for the receive ring if @recv), random bytes, tails near the head and far from it, and the
 * head and flags the kernel owns.
 */
static void poke_wq(struct rng *r, const struct resv *m, bool recv,
		    const char *wr, uint32_t wr_len)
{
	bool send = !recv || !m->ri.rq.entries;
	const struct kqp_wq_ring_info *wi = send ? &m->ri.sq : &m->ri.rq;
	char *base = (char *)(uintptr_t)m->a;
	struct kqp_wq_ring_hdr *h;
	uint64_t n = wi->entries, end;
	uint32_t head, slot, i;
	char *e;

	if (!n || !wi->entry_size ||
	    wi->off_hdr + sizeof(*h) > m->b)
		return;
	end = wi->off_entries + n * wi->entry_size;
	if (end > m->b)
		return;
	h = (struct kqp_wq_ring_hdr *)(base + wi->off_hdr);
	head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	slot = chance(r, 70) ? head + below(r, (uint32_t)n) : (uint32_t)rnd(r);
	e = base + wi->off_entries + (slot & (n - 1)) * (uint64_t)wi->entry_size;

	switch (below(r, 10)) {
	case 0 ... 3:
		/* A request as POST would take it, then publish up to it. */
		memcpy(e, wr, wr_len < wi->entry_size ? wr_len : wi->entry_size);
		__atomic_store_n(&h->tail, slot + 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&ring_publishes, 1, __ATOMIC_RELAXED);
		break;
	case 4:
		for (i = 0; i < wi->entry_size; i++)
			e[i] = (char)rnd(r);
		break;
	case 5:
		((uint32_t *)e)[below(r, wi->entry_size / 4)] =
			(uint32_t)boundary(r);
		break;
	case 6 ... 7:
		__atomic_store_n(&h->tail, chance(r, 60) ?
				 head + below(r, (uint32_t)n + 2) :
				 chance(r, 50) ? head - 1 - below(r, 4) :
				 (uint32_t)rnd(r), __ATOMIC_RELEASE);
		break;
	case 8:
		h->head = chance(r, 50) ? head + below(r, 4) : (uint32_t)rnd(r);
		break;
	default:
		h->flags = (uint32_t)rnd(r);
		break;
	}
}

/*
 * Scribble on a mapped ring: a CQ ring's head and arm words, as a
 * consumer could, or a QP's rings (poke_wq()).  Under the pools' lock,
 * which every munmap() of a pooled mapping waits for: another thread
 * must not unmap it under us.
 */
static void do_poke(struct rng *r, struct thread *t)
{
	struct pool *p = &pools[R_MAP];
	volatile uint32_t *w;
	struct resv m;
	uint32_t wr_len, count;
	bool recv = chance(r, 40);

	/* Built first: it draws MRs and AHs from the pools, under the lock. */
	wr_len = wr_list_gen(r, t, recv, KQP_QPT_RC, &count);
	pthread_mutex_lock(&pool_lock);
	if (!p->n)
		goto out;
	m = p->v[below(r, p->n)];
	if (m.c == 1) {
		poke_wq(r, &m, recv, t->arena + 4096, wr_len);
		goto out;
	}
	if (m.b < 256)
		goto out;
	w = (volatile uint32_t *)(uintptr_t)m.a;
	/* head at 0, arm at 4: struct kqp_cq_ring_hdr */
	if (chance(r, 50))
		w[0] = chance(r, 50) ? w[32] - below(r, 4) : (uint32_t)rnd(r);
	else
		w[1] = chance(r, 70) ? w[1] + 2 : (uint32_t)rnd(r);
out:
	pthread_mutex_unlock(&pool_lock);
}

static void do_munmap(struct rng *r)
{
	struct pool *p = &pools[R_MAP];
	int i;

	pthread_mutex_lock(&pool_lock);
	if (p->n) {
		i = below(r, p->n);
		munmap((void *)(uintptr_t)p->v[i].a, p->v[i].b);
		p->v[i] = p->v[--p->n];
	}
	pthread_mutex_unlock(&pool_lock);
}

static void do_read_chan(struct rng *r, struct thread *t)
{
	struct resv c;
	struct pollfd pfd;

	if (!pool_pick(r, R_CHAN, &c))
		return;
	pfd.fd = c.fd;
	pfd.events = POLLIN;
	poll(&pfd, 1, 0);
	if (read(c.fd, t->arena, chance(r, 90) ? 32 : num32(r, 64)) < 0)
		return;
}

/*
 * A child after fork() may use no table of its parent's: every command
 * that needs one must be EPERM, mmap() of a ring too, and the parent's
 * ring mapping must not be in the child at all.  The oracle uses a file
 * of this thread's own, which no other thread can close and reopen under
 * the same number; the child also throws a few commands at the shared
 * files, which may have been closed and reopened meanwhile, without an
 * oracle.
 */
static void do_fork(struct rng *r, struct thread *t)
{
	struct kqp_create_cq cq = { .size = sizeof(cq), .cqe = 4,
				    .channel_fd = -1 };
	struct kqp_ctx_info info = { .size = sizeof(info) };
	int own, status, shared[4], n = 0, i;
	void *ring = MAP_FAILED;
	struct resv v;
	pid_t pid;

	own = open("/dev/kqp", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (own < 0)
		return;
	cq.device_index = dev_index(r);
	if (xioctl(own, KQP_IOCTL_CTX_INFO, &info) ||
	    xioctl(own, KQP_IOCTL_CREATE_CQ, &cq))
		goto out;
	ring = mmap(NULL, cq.out_ring.mmap_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, own, cq.out_ring.mmap_offset);
	if (ring == MAP_FAILED)
		goto out;
	while (n < 4 && pool_pick(r, R_FD, &v))
		shared[n++] = v.fd;

	pid = fork();
	if (pid < 0)
		goto out;
	if (pid == 0) {
		struct kqp_create_id cid = { .size = sizeof(cid),
					     .port_space = KQP_PS_TCP,
					     .qp_type = KQP_QPT_RC };

		if (ioctl(own, KQP_IOCTL_CTX_INFO, &info) == 0 ||
		    errno != EPERM)
			_exit(10);
		if (ioctl(own, KQP_IOCTL_CREATE_ID, &cid) == 0 ||
		    errno != EPERM)
			_exit(11);
		if (mmap(NULL, cq.out_ring.mmap_size, PROT_READ, MAP_SHARED,
			 own, cq.out_ring.mmap_offset) != MAP_FAILED ||
		    errno != EPERM)
			_exit(12);
		{
			struct kqp_doorbell_entry e = {
				.qp = cq.out_cq, .flags = KQP_DB_SEND,
			};
			struct kqp_doorbell db = {
				.size = sizeof(db), .count = 1,
				.entry_size = sizeof(e),
				.entries = (uintptr_t)&e,
			};

			if (ioctl(own, KQP_IOCTL_DOORBELL, &db) == 0 ||
			    errno != EPERM)
				_exit(14);
		}
		for (i = 0; i < n; i++) {
			ioctl(shared[i], KQP_IOCTL_CTX_INFO, &info);
			ioctl(shared[i], KQP_IOCTL_CREATE_ID, &cid);
		}
		/* Not inherited: this faults. */
		*(volatile uint32_t *)ring;
		_exit(13);
	}
	if (waitpid(pid, &status, 0) == pid) {
		if (WIFEXITED(status))
			fail("a child after fork() used a table of its parent's (step %d)",
			     WEXITSTATUS(status));
		else if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
			fail("a child after fork() ended with status %#x",
			     status);
	}
	__atomic_add_fetch(&fork_checks, 1, __ATOMIC_RELAXED);
	log_call(t, "fork", 0, NULL);
	trace(t, "fork", own, 0, NULL);
out:
	if (ring != MAP_FAILED)
		munmap(ring, cq.out_ring.mmap_size);
	close(own);
}

/* One DOORBELL with KQP_DOORBELL_WAKE_POLLER naming @qp; 0 or the errno. */
static int wake_poller(int fd, uint32_t qp)
{
	struct kqp_doorbell_entry e = { .qp = qp, .flags = KQP_DB_SEND };
	struct kqp_doorbell db = {
		.size = sizeof(db), .flags = KQP_DOORBELL_WAKE_POLLER,
		.count = 1, .entry_size = sizeof(e), .entries = (uintptr_t)&e,
	};

	return ioctl(fd, KQP_IOCTL_DOORBELL, &db) ? errno : 0;
}

/* The survivor of do_poller_death(): what it reports on @res. */
struct survivor {
	int fd, res;
	pid_t maker;
	uint32_t qp;
};

static int survivor_fn(void *arg)
{
	struct survivor *s = arg;
	struct kqp_create_poller cp = { .size = sizeof(cp) };
	struct kqp_ctx_info info;
	char code = 0;
	int i, ret;

	/* Ringing while the maker is killed: woken, or found dead. */
	for (i = 0; i < 200000 && getppid() == s->maker; i++) {
		ret = wake_poller(s->fd, s->qp);
		if (ret && ret != ESRCH) {
			code = 30;
			goto out;
		}
	}
	/* Dead: CTX_INFO says so, the wake is ESRCH, no other poller. */
	for (i = 0; i < 5000; i++) {
		memset(&info, 0, sizeof(info));
		info.size = sizeof(info);
		if (ioctl(s->fd, KQP_IOCTL_CTX_INFO, &info)) {
			code = 31;
			goto out;
		}
		if (!info.out_poller)
			break;
		usleep(1000);
	}
	if (info.out_poller)
		code = 32;
	else if (wake_poller(s->fd, s->qp) != ESRCH)
		code = 33;
	else if (!ioctl(s->fd, KQP_IOCTL_CREATE_POLLER, &cp) || errno != EPERM)
		code = 34;
out:
	if (write(s->res, &code, 1) != 1)
		code = 35;
	_exit(code);
}

/*
 * A poller killed while it is being woken.  A child makes a table and
 * its poller, and a process that shares its mm without being one of its
 * threads (clone(CLONE_VM)); the child rings with KQP_DOORBELL_WAKE_POLLER
 * until it is SIGKILLed, after a random moment, the survivor all along.
 * The survivor's wakes are 0 or ESRCH while the poller dies, and once it
 * is dead (CTX_INFO): ESRCH, with CREATE_POLLER EPERM.  The poller's
 * thread is never woken once it is gone: before 6.17 and its stable
 * backports that wake is wake_up_process() on a freed task, which the
 * debug kernel's KASAN catches.
 */
static void do_poller_death(struct rng *r, struct thread *t)
{
	int res[2], status;
	uint32_t idle = below(r, 20), delay = below(r, 3000);
	uint32_t qp = chance(r, 50) ? 0x7fffffff : below(r, 64);
	struct pollfd pfd;
	char code = 0;
	pid_t pid;

	if (pipe2(res, O_CLOEXEC))
		return;
	pid = fork();
	if (pid < 0)
		goto out;
	if (pid == 0) {
		struct kqp_create_poller cp = { .size = sizeof(cp),
						.idle_us = idle };
		static char stack[64 * 1024] __attribute__((aligned(16)));
		struct survivor sv = { .res = res[1], .maker = getpid(),
				       .qp = qp };

		int fd;

		/* None of the fuzzer's files: they would outlive the run. */
		for (fd = 3; fd < 4096; fd++)
			if (fd != res[1])
				close(fd);
		sv.fd = open("/dev/kqp", O_RDWR | O_CLOEXEC);
		if (sv.fd < 0)
			_exit(0);
		/* No vhost_task (6.1), or no thread to be had: no test. */
		if (ioctl(sv.fd, KQP_IOCTL_CREATE_POLLER, &cp))
			_exit(errno == EOPNOTSUPP || errno == EAGAIN ||
			      errno == ENOMEM || errno == EINTR ? 0 : 20);
		if (clone(survivor_fn, stack + sizeof(stack), CLONE_VM, &sv) < 0)
			_exit(21);
		close(res[1]);
		for (;;)
			wake_poller(sv.fd, qp);
	}
	close(res[1]);
	res[1] = -1;
	usleep(delay);
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		goto out;
	if (WIFEXITED(status)) {
		/* No poller on this kernel, or it could not be made. */
		if (WEXITSTATUS(status))
			fail("a poller's maker ended with %d", WEXITSTATUS(status));
		goto out;
	}
	/* The survivor's verdict; none if it never ran (EOF). */
	pfd.fd = res[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 20000) != 1) {
		fail("the survivor of a killed poller never answered");
	} else if (read(res[0], &code, 1) == 1) {
		if (code)
			fail("the survivor of a killed poller saw step %d fail",
			     code);
		__atomic_add_fetch(&poller_deaths, 1, __ATOMIC_RELAXED);
	}
	log_call(t, "poller_death", code, NULL);
out:
	close(res[0]);
	if (res[1] >= 0)
		close(res[1]);
}

/* The GID table index of ::ffff:opt_addr on port 1, or -1. */
static int own_gid(int fd, uint32_t dev, uint8_t gid[16])
{
	static int cached = -2;
	int i, found = -1;

	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	inet_pton(AF_INET, opt_addr, gid + 12);
	if (__atomic_load_n(&cached, __ATOMIC_RELAXED) != -2)
		return cached;
	for (i = 0; i < 64 && found < 0; i++) {
		struct kqp_query_gid q = {
			.size = sizeof(q), .device_index = dev, .port_num = 1,
			.index = i,
		};

		if (xioctl(fd, KQP_IOCTL_QUERY_GID, &q))
			break;
		if (!memcmp(q.out_gid, gid, 16))
			found = i;
	}
	__atomic_store_n(&cached, found, __ATOMIC_RELAXED);
	return found;
}

/*
 * A QP with rings made right, where random creates make few QPs and
 * fewer with rings: a PD, a CQ and the QP on one file, moved to INIT so
 * that receives drain, and half the time on to RTS connected to itself,
 * so that sends reach the device too; its rings mapped at once.  At most
 * 16 live: past that, one of them is destroyed instead (its mappings
 * stay pooled, and poked).
 */
static void do_ring_qp(struct rng *r, struct thread *t)
{
	struct kqp_create_cq cq = { .size = sizeof(cq), .cqe = 64,
				    .channel_fd = -1 };
	struct kqp_create_qp c = { .size = sizeof(c), .qp_type = KQP_QPT_RC,
				   .flags = KQP_CREATE_QP_RINGS };
	struct kqp_alloc_pd pd = { .size = sizeof(pd) };
	struct kqp_modify_qp m = { .size = sizeof(m) };
	struct resv v = { 0 };
	uint8_t gid[16];
	int fd, sgid;
	void *p;

	if (pools[R_RQP].n >= 16) {
		struct kqp_destroy_qp d = { .size = sizeof(d) };

		if (pool_take(r, R_RQP, &v)) {
			d.qp = v.h;
			log_call(t, "ring qp gone", xioctl(v.fd, KQP_IOCTL_DESTROY_QP,
							  &d), &d);
		}
		return;
	}
	fd = some_fd(r);
	if (fd < 0)
		return;
	pd.device_index = cq.device_index = dev_index(r);
	if (xioctl(fd, KQP_IOCTL_ALLOC_PD, &pd))
		return;
	pool_mark_table(fd);
	learn(KQP_CMD_ALLOC_PD - KQP_CMD_BASE, fd, &pd);
	if (xioctl(fd, KQP_IOCTL_CREATE_CQ, &cq))
		return;
	learn(KQP_CMD_CREATE_CQ - KQP_CMD_BASE, fd, &cq);
	c.pd = pd.out_pd;
	c.send_cq = c.recv_cq = cq.out_cq;
	c.cap.max_send_wr = 1 + below(r, 32);
	c.cap.max_recv_wr = 1 + below(r, 32);
	c.cap.max_send_sge = 1 + below(r, 3);
	c.cap.max_recv_sge = 1 + below(r, 3);
	c.cap.max_inline_data = below(r, 128);
	if (chance(r, 20))
		c.flags |= KQP_CREATE_QP_SQ_SIG_ALL;
	/* Receive rings drained after completions, as libkqp makes them. */
	if (chance(r, 60))
		c.flags |= KQP_CREATE_QP_RECV_ASYNC;
	if (xioctl(fd, KQP_IOCTL_CREATE_QP, &c))
		return;
	learn(KQP_CMD_CREATE_QP - KQP_CMD_BASE, fd, &c);
	log_call(t, "ring qp", 0, &c.out_qp);

	m.qp = c.out_qp;
	m.attr_mask = KQP_QP_ATTR_STATE | KQP_QP_ATTR_ACCESS_FLAGS |
		      KQP_QP_ATTR_PKEY_INDEX | KQP_QP_ATTR_PORT;
	m.attr.qp_state = KQP_QPS_INIT;
	m.attr.port_num = 1;
	m.attr.qp_access_flags = 15;
	if (!xioctl(fd, KQP_IOCTL_MODIFY_QP, &m) && chance(r, 50) &&
	    (sgid = own_gid(fd, pd.device_index, gid)) >= 0) {
		memset(&m.attr, 0, sizeof(m.attr));
		m.attr_mask = KQP_QP_ATTR_STATE | KQP_QP_ATTR_AV |
			      KQP_QP_ATTR_PATH_MTU | KQP_QP_ATTR_RQ_PSN |
			      KQP_QP_ATTR_MIN_RNR_TIMER |
			      KQP_QP_ATTR_MAX_DEST_RD_ATOMIC |
			      KQP_QP_ATTR_DEST_QPN;
		m.attr.qp_state = KQP_QPS_RTR;
		m.attr.path_mtu = 3;
		m.attr.dest_qp_num = c.out_qp_num;
		m.attr.max_dest_rd_atomic = 1;
		m.attr.min_rnr_timer = 1;
		memcpy(m.attr.ah_attr.dgid, gid, 16);
		m.attr.ah_attr.is_global = 1;
		m.attr.ah_attr.sgid_index = (uint8_t)sgid;
		m.attr.ah_attr.hop_limit = 64;
		m.attr.ah_attr.port_num = 1;
		if (!xioctl(fd, KQP_IOCTL_MODIFY_QP, &m)) {
			memset(&m.attr, 0, sizeof(m.attr));
			m.attr_mask = KQP_QP_ATTR_STATE | KQP_QP_ATTR_TIMEOUT |
				      KQP_QP_ATTR_RETRY_CNT |
				      KQP_QP_ATTR_RNR_RETRY |
				      KQP_QP_ATTR_MAX_QP_RD_ATOMIC |
				      KQP_QP_ATTR_SQ_PSN;
			m.attr.qp_state = KQP_QPS_RTS;
			m.attr.timeout = 8;
			m.attr.retry_cnt = 2;
			m.attr.rnr_retry = 2;
			m.attr.max_rd_atomic = 1;
			xioctl(fd, KQP_IOCTL_MODIFY_QP, &m);
		}
	}

	p = mmap(NULL, c.out_rings.mmap_size, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, c.out_rings.mmap_offset);
	if (p == MAP_FAILED)
		return;
	memset(&v, 0, sizeof(v));
	v.a = (uintptr_t)p;
	v.b = c.out_rings.mmap_size;
	v.c = 1;
	v.ri = c.out_rings;
	__atomic_add_fetch(&ring_maps, 1, __ATOMIC_RELAXED);
	pool_add(R_MAP, v);
}

/* An ioctl number around kqp's, with garbage behind it. */
static void do_raw(struct rng *r, struct thread *t)
{
	unsigned long nr = KQP_CMD_BASE - 4 + below(r, KQP_CMD_MAX - KQP_CMD_BASE + 8);
	unsigned long num = chance(r, 50) ? _IO(KQP_IOCTL_TYPE, nr) :
					    (unsigned long)rnd(r);
	int fd = some_fd(r), ret;
	uint32_t i;

	if (fd < 0)
		return;
	for (i = 0; i < 64; i++)
		t->arena[i] = (char)rnd(r);
	ret = xioctl(fd, num, chance(r, 80) ? (void *)t->arena :
					     (void *)(uintptr_t)bad_ptr(r, 64));
	log_call(t, "raw", ret, t->arena);
	trace(t, "raw", -1, ret, t->arena);
	/* Numbers that are no command of kqp's: ENOTTY, and nothing else. */
	if (_IOC_TYPE(num) == KQP_IOCTL_TYPE && ret != EBADF && is_kqp(fd) &&
	    (nr < KQP_CMD_BASE || nr >= KQP_CMD_MAX) && num == _IO(KQP_IOCTL_TYPE, nr)) {
		__atomic_add_fetch(&contract_checks, 1, __ATOMIC_RELAXED);
		if (ret != ENOTTY)
			fail("ioctl nr %#lx: errno %d, the ABI says ENOTTY", nr,
			     ret);
	}
}

/* ------------------------------------------------------------------ */
/* Threads                                                              */

static void *fuzz_thread(void *arg)
{
	struct thread *t = arg;
	struct rng *r = &t->rng;
	unsigned long long n;

	kcov_start(t);
	while (!stop) {
		n = __atomic_add_fetch(&calls_done, 1, __ATOMIC_RELAXED);
		if (opt_calls && n > opt_calls)
			break;
		switch (below(r, 100)) {
		case 0 ... 1:
			do_open(r);
			break;
		case 2:
			if (chance(r, 30))
				do_close(r);
			break;
		case 3:
			do_dup(r);
			break;
		case 4 ... 5:
			do_mmap(r);
			break;
		case 6 ... 7:
			do_poke(r, t);
			break;
		case 8:
			do_munmap(r);
			break;
		case 9 ... 10:
			do_read_chan(r, t);
			break;
		case 11:
			if (chance(r, 5))
				do_fork(r, t);
			else if (chance(r, 3))
				do_poller_death(r, t);
			break;
		case 12:
			do_raw(r, t);
			break;
		case 13:
			if (chance(r, 50))
				do_ring_qp(r, t);
			break;
		default:
			if (!do_cmd(t))
				__atomic_add_fetch(&calls_ok, 1,
						   __ATOMIC_RELAXED);
			break;
		}
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* The kernel's log, and the clock                                      */

static const char *const splats[] = {
	"BUG:", "WARNING:", "KASAN:", "UBSAN:", "KFENCE:", "Oops",
	"general protection", "possible circular locking",
	"possible recursive locking", "inconsistent lock state",
	"suspicious RCU usage", "refcount_t", "list_add corruption",
	"list_del corruption", "blocked for more than", "Kernel panic",
	"cm_destroy_id_wait_timeout", "kqp: the device refused",
};

static int kmsg_fd = -1;

/* The kernel's view of the blocked tasks, into its log. */
static void show_blocked(void)
{
	int fd = open("/proc/sysrq-trigger", O_WRONLY);

	if (fd >= 0) {
		(void)!write(fd, "w", 1);
		close(fd);
	}
}

static void *monitor(void *arg)
{
	char buf[2048];
	unsigned long long last = 0, now;
	time_t idle_since = time(NULL), start = time(NULL);
	ssize_t n;
	unsigned int i;

	(void)arg;
	while (!stop) {
		struct pollfd pfd = { .fd = kmsg_fd, .events = POLLIN };

		if (kmsg_fd >= 0 && poll(&pfd, 1, 1000) == 1) {
			n = read(kmsg_fd, buf, sizeof(buf) - 1);
			if (n > 0) {
				buf[n] = 0;
				for (i = 0; i < ARRAY_SIZE(splats); i++) {
					if (!strstr(buf, splats[i]))
						continue;
					if (strstr(buf, "wait_timeout") ||
					    strstr(buf, "blocked for"))
						show_blocked();
					fail("the kernel said: %s", buf);
				}
			}
		} else if (kmsg_fd < 0) {
			sleep(1);
		}
		now = __atomic_load_n(&calls_done, __ATOMIC_RELAXED);
		if (now != last) {
			last = now;
			idle_since = time(NULL);
		} else if (time(NULL) - idle_since > 120) {
			fail("no call finished for 120 s: a thread hangs");
		}
		/* One thread stuck while the others go on is a hang too. */
		for (i = 0; i < opt_threads && threads; i++) {
			time_t since = threads[i].busy_since;

			if (since && time(NULL) - since > 90) {
				show_blocked();
				fail("thread %u has been in %s for 90 s", i,
				     threads[i].busy_op);
				break;
			}
		}
		if (opt_seconds && time(NULL) - start >= opt_seconds)
			stop = 1;
	}
	return NULL;
}

/* /sys/kernel/debug/kqp/objects: the live objects of every type, summed. */
static long objects_live(void)
{
	FILE *f = fopen("/sys/kernel/debug/kqp/objects", "r");
	char name[32];
	unsigned long long made;
	long live, sum = 0;

	if (!f)
		return -1;
	while (fscanf(f, "%31s %ld", name, &live) == 2) {
		sum += live;
		if (strcmp(name, "contexts") && fscanf(f, "%llu", &made) != 1)
			break;
	}
	fclose(f);
	return sum;
}

static void close_all(void)
{
	int t, i;

	for (t = 0; t < R_MAX; t++) {
		for (i = 0; i < pools[t].n; i++) {
			struct resv *v = &pools[t].v[i];

			if (t == R_MAP)
				munmap((void *)(uintptr_t)v->a, v->b);
			else if (t == R_FD || t == R_CHAN)
				close(v->fd);
		}
		pools[t].n = 0;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* "A,B,...": mark each named command in opt_skip. */
static int parse_skip(char *list)
{
	char *name, *save = NULL;
	unsigned int i;

	for (name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < ARRAY_SIZE(cmds); i++)
			if (cmds[i].name && !strcmp(cmds[i].name, name))
				break;
		if (i == ARRAY_SIZE(cmds))
			return -1;
		opt_skip[i] = true;
	}
	/* Something must be left to make. */
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!opt_skip[i])
			return 0;
	return -1;
}

static void usage(const char *argv0)
{
	printf("usage: %s [options]\n"
	       "  --calls N     stop after N calls in all (default 200000; 0: no limit)\n"
	       "  --seconds S   stop after S seconds (default: no limit)\n"
	       "  --seed S      the run's seed (default: from the clock; printed)\n"
	       "  --threads N   threads on the shared files (default 4)\n"
	       "  --addr A      the address of the RDMA device (default 192.0.2.1)\n"
	       "  --tap         print TAP, as the bench's tests do\n"
	       "  --verbose     print every thread's last calls at the end\n"
	       "  --trace FILE  write every call to FILE (buffered until exit)\n"
	       "  --skip A,B    never make these commands (names as in the call\n"
	       "                logs), to find which ones a failure needs\n"
	       "Exits 0 when nothing went wrong, 1 otherwise.  Needs kqp.ko loaded;\n"
	       "as root it also reads /dev/kmsg and, on a kernel with KCOV,\n"
	       "/sys/kernel/debug/kcov.\n", argv0);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "calls", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "threads", required_argument, NULL, 't' },
		{ "addr", required_argument, NULL, 'a' },
		{ "tap", no_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "skip", required_argument, NULL, 'x' },
		{ "trace", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long before, after = -1;
	pthread_t mon;
	double t0, dt;
	unsigned int i;
	int c, fd;

	opt_seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	while ((c = getopt_long(argc, argv, "c:s:S:t:a:Tvx:r:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			opt_calls = strtoull(optarg, NULL, 0);
			break;
		case 's':
			opt_seconds = strtoul(optarg, NULL, 0);
			break;
		case 'S':
			opt_seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			opt_threads = strtoul(optarg, NULL, 0);
			if (!opt_threads || opt_threads > 64)
				opt_threads = 4;
			break;
		case 'a':
			opt_addr = optarg;
			break;
		case 'T':
			opt_tap = true;
			break;
		case 'v':
			opt_verbose = true;
			break;
		case 'r': {
			/*
			 * Far above the fds the run makes: the run's fds, and
			 * so its calls, are the same with and without it.
			 */
			int tfd = open(optarg, O_WRONLY | O_CREAT | O_TRUNC |
				       O_CLOEXEC, 0644);
			int hfd = tfd < 0 ? -1 :
				  fcntl(tfd, F_DUPFD_CLOEXEC, 1000);

			if (tfd >= 0)
				close(tfd);
			opt_trace = hfd < 0 ? NULL : fdopen(hfd, "w");
			if (!opt_trace) {
				perror(optarg);
				return 1;
			}
			/*
			 * Held in memory until exit, so that tracing changes
			 * the timing little; a guest crash loses it.
			 */
			setvbuf(opt_trace, NULL, _IOFBF, 64 << 20);
			break;
		}
		case 'x':
			if (parse_skip(optarg)) {
				fprintf(stderr, "--skip: no command %s\n", optarg);
				return 1;
			}
			break;
		case 'h':
			usage(argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 1;
		}
	}
	if (!opt_calls && !opt_seconds)
		opt_calls = 200000;

	/* Without the bench's setup, a skip, as kqp_test.h's programs. */
	if (!getenv("KQP_TEST_RDMA_DEV")) {
		printf("1..0 # SKIP no Soft-RoCE setup: KQP_TEST_RDMA_DEV unset\n");
		return 4;
	}
	fd = open("/dev/kqp", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (opt_tap)
			printf("1..0 # SKIP /dev/kqp: %s\n", strerror(errno));
		else
			fprintf(stderr, "/dev/kqp: %s\n", strerror(errno));
		return opt_tap ? 4 : 1;
	}
	{
		struct stat st;

		if (!stat("/dev/kqp", &st))
			kqp_rdev = st.st_rdev;
	}
	close(fd);
	signal(SIGPIPE, SIG_IGN);
	pagesz = sysconf(_SC_PAGESIZE);
	arena = mmap(NULL, (size_t)ARENA_PER_THREAD * opt_threads,
		     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (i = 0; i < MR_BUFS; i++)
		mr_buf[i] = mmap(NULL, MR_BUF_LEN, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
				 -1, 0);
	guard = mmap(NULL, 2 * pagesz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unmapped = mmap(NULL, pagesz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	corpus = calloc(CORPUS_MAX, sizeof(*corpus));
	threads = calloc(opt_threads, sizeof(*threads));
	if (arena == MAP_FAILED || guard == MAP_FAILED ||
	    unmapped == MAP_FAILED || !corpus || !threads) {
		perror("fuzz: setting up");
		return 1;
	}
	mprotect(guard + pagesz, pagesz, PROT_NONE);
	munmap(unmapped, pagesz);

	/* Only what the kernel says from now on. */
	kmsg_fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (kmsg_fd >= 0)
		lseek(kmsg_fd, 0, SEEK_END);
	before = objects_live();

	if (opt_tap)
		printf("TAP version 13\n1..3\n");
	printf("# kqp fuzz: seed %#llx, %u threads, %s%llu calls%s\n",
	       (unsigned long long)opt_seed, opt_threads,
	       opt_calls ? "" : "no limit of ", opt_calls,
	       opt_seconds ? " or until the time is up" : "");
	fflush(stdout);

	t0 = now_s();
	pthread_create(&mon, NULL, monitor, NULL);
	for (i = 0; i < opt_threads; i++) {
		uint64_t x = opt_seed + i;

		threads[i].idx = i;
		threads[i].rng.s = splitmix(&x);
		threads[i].arena = arena + (size_t)i * ARENA_PER_THREAD;
		threads[i].kcov_fd = -1;
		pthread_create(&threads[i].tid, NULL, fuzz_thread, &threads[i]);
	}
	for (i = 0; i < opt_threads; i++)
		pthread_join(threads[i].tid, NULL);
	dt = now_s() - t0;
	if (!failed)
		stop = 1;
	pthread_join(mon, NULL);

	printf("# live in the pools at the end:");
	for (i = 0; i < R_MAX; i++)
		printf(" %s %d", res_names[i], pools[i].n);
	printf("\n");
	/* Everything closed, the kernel's counts come back. */
	close_all();
	for (i = 0; i < 300 && before >= 0; i++) {
		after = objects_live();
		if (after == before)
			break;
		usleep(100000);
	}

	{
		unsigned long long n = __atomic_load_n(&calls_done,
						       __ATOMIC_RELAXED);

		if (opt_calls && n > opt_calls)
			n = opt_calls;
		printf("# %llu calls in %.1f s: %.0f calls/s, %llu succeeded; "
		       "%llu errno-contract checks, %llu fork checks; "
		       "kcov %s, %llu edges, %u corpus calls; seed %#llx\n",
		       n, dt, n / (dt > 0 ? dt : 1),
		       __atomic_load_n(&calls_ok, __ATOMIC_RELAXED),
		       contract_checks, fork_checks,
		       kcov_on ? "on" : "off", edges_seen, corpus_n,
		       (unsigned long long)opt_seed);
		printf("# rings: %llu mapped, %llu requests published; doorbell entries: %llu drained, %llu with an errno\n",
		       ring_maps, ring_publishes, db_drained, db_refused);
		printf("# pollers killed while rung, their table kept by a CLONE_VM survivor: %llu\n",
		       poller_deaths);
		if (failed) {
			printf("# FAILED: %s\n", failure);
			print_logs(stdout);
			printf("# replay: fuzz --seed %#llx --threads %u\n",
			       (unsigned long long)opt_seed, opt_threads);
		} else if (opt_verbose) {
			print_logs(stdout);
		}
		if (opt_tap) {
			printf("%sok 1 %llu calls with seed %#llx: no kernel splat, no hang, the errno contract kept\n",
			       failed ? "not " : "", n,
			       (unsigned long long)opt_seed);
			printf("%sok 2 children after fork() could use no table of their parent's (%llu tried)\n",
			       failed && strstr(failure, "fork") ? "not " : "",
			       fork_checks);
			printf("%sok 3 live objects back to %ld once every file is closed (now %ld)\n",
			       before >= 0 && after != before ? "not " : "",
			       before, after);
		}
	}
	return failed || (before >= 0 && after != before);
}
