/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by the kqp selftests.  The bench (tools/testing/vm) runs
 * them in a guest with one Soft-RoCE device; it names that device and its
 * netdev in the environment.
 */
#ifndef KQP_TEST_H
#define KQP_TEST_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/kqp-abi.h>

/*
 * A helper source built into tests (rings_lib.c) defines KQP_TEST_LIB: the
 * harness may be in one object of a program only, so such a source sees
 * none of it, nor the helpers that report through it.
 */
#ifndef KQP_TEST_LIB
#include "kselftest_harness.h"
#endif
#include "params.h"

#define KQP_DEV "/dev/kqp"

/*
 * The bench (tools/testing/vm/guest.sh) names its Soft-RoCE device in
 * KQP_TEST_RDMA_DEV, and always does.  Without it, run by hand or by
 * kselftest's run_tests on a machine without that setup, a test that
 * needs it skips, as kselftests do when what they test is absent; in the
 * bench nothing skips this way.  A program whose tests all need it (all
 * but lib_device, which defines KQP_TEST_HOST) skips as a whole.
 */
#define KQP_TEST_NO_BENCH "no Soft-RoCE setup: KQP_TEST_RDMA_DEV unset"
#define KQP_TEST_NEED_BENCH() do {					\
	if (!getenv("KQP_TEST_RDMA_DEV"))				\
		SKIP(return, KQP_TEST_NO_BENCH);			\
} while (0)

#if !defined(KQP_TEST_LIB) && !defined(KQP_TEST_HOST)
static void __attribute__((constructor)) kqp_test_need_bench(void)
{
	if (getenv("KQP_TEST_RDMA_DEV"))
		return;
	printf("TAP version 13\n1..0 # SKIP %s\n", KQP_TEST_NO_BENCH);
	exit(KSFT_SKIP);
}
#endif

#define offsetofend(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))

/* The attributes of each transition, as ib_core's table of them asks. */
#define KQP_TEST_RC_INIT	(KQP_QP_ATTR_STATE | KQP_QP_ATTR_PKEY_INDEX | \
				 KQP_QP_ATTR_PORT | KQP_QP_ATTR_ACCESS_FLAGS)
#define KQP_TEST_UD_INIT	(KQP_QP_ATTR_STATE | KQP_QP_ATTR_PKEY_INDEX | \
				 KQP_QP_ATTR_PORT | KQP_QP_ATTR_QKEY)
#define KQP_TEST_RC_RTR	(KQP_QP_ATTR_STATE | KQP_QP_ATTR_AV | \
				 KQP_QP_ATTR_PATH_MTU | KQP_QP_ATTR_DEST_QPN | \
				 KQP_QP_ATTR_RQ_PSN | \
				 KQP_QP_ATTR_MAX_DEST_RD_ATOMIC | \
				 KQP_QP_ATTR_MIN_RNR_TIMER)
#define KQP_TEST_RC_RTS	(KQP_QP_ATTR_STATE | KQP_QP_ATTR_TIMEOUT | \
				 KQP_QP_ATTR_RETRY_CNT | \
				 KQP_QP_ATTR_RNR_RETRY | KQP_QP_ATTR_SQ_PSN | \
				 KQP_QP_ATTR_MAX_QP_RD_ATOMIC)

/* Name of the rxe device the bench created, e.g. "rxe0". */
static inline const char *kqp_test_rdma_dev(void)
{
	const char *s = getenv("KQP_TEST_RDMA_DEV");

	return s ? s : "rxe0";
}

/* Name of the netdev under it, e.g. "kqp0". */
static inline const char *kqp_test_netdev(void)
{
	const char *s = getenv("KQP_TEST_NETDEV");

	return s ? s : "kqp0";
}

/* The number a sysfs or cgroup file holds, or -1 when there is none. */
static inline long long kqp_test_read_ll(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* ioctl() that returns 0 or the errno, so tests can compare errnos. */
static inline int kqp_test_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? errno : 0;
}

/* Threads of this process whose name starts with @prefix; -1 on error. */
static inline int kqp_test_threads_named(const char *prefix)
{
	char path[300], comm[32];
	struct dirent *d;
	int n = 0;
	DIR *dir = opendir("/proc/self/task");

	if (!dir)
		return -1;
	while ((d = readdir(dir))) {
		FILE *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, prefix, strlen(prefix)))
			n++;
		fclose(f);
	}
	closedir(dir);
	return n;
}

/*
 * /sys/kernel/debug/kqp/objects, summed: the live objects of every type
 * and the live tables ("TYPE LIVE MADE" lines, then "contexts LIVE");
 * -1 if it cannot be read.
 */
static inline long kqp_test_objects_live(void)
{
	FILE *f = fopen("/sys/kernel/debug/kqp/objects", "r");
	unsigned long long made;
	long live, sum = 0;
	char name[32];

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

/* kqp_test_objects_live() once it reads @want, or after @ms; its last value. */
static inline long kqp_test_objects_become(long want, int ms)
{
	long got;

	while ((got = kqp_test_objects_live()) != want && ms > 0) {
		usleep(10000);
		ms -= 10;
	}
	return got;
}

#ifndef KQP_TEST_LIB
/*
 * The pipes to a process that stayed root (kqp_test_keys_reader()), for
 * the keys a test that dropped root must still learn; -1 without one.
 * State of the program: a helper source (KQP_TEST_LIB) would get a copy
 * of its own that no test started, so it sees none of this.
 */
static int kqp_test_keys_req = -1, kqp_test_keys_resp = -1;

/* `rdma res show pd`'s local_dma_lkeys of the test device; see below. */
static inline int kqp_test_dma_lkeys_root(uint32_t *keys, int max)
{
	char line[512], dev[64];
	unsigned int key;
	const char *k;
	int n = 0;
	FILE *f;

	/* "dev rxe0 pdn 3 local_dma_lkey 0x1fd users 1 comm [kqp]" */
	f = popen("rdma res show pd 2>/dev/null", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "dev %63s", dev) == 1 &&
		    !strcmp(dev, kqp_test_rdma_dev()) &&
		    (k = strstr(line, " local_dma_lkey ")) &&
		    sscanf(k, " local_dma_lkey %x", &key) == 1 && n < max)
			keys[n++] = key;
	if (pclose(f))
		return -1;
	return n;
}

#define KQP_TEST_MAX_KEYS	64

/*
 * Before a test drops root (become_nobody()): fork a process that keeps
 * it, holding nothing of the test's but two pipes, to read the keys for
 * it; it exits when the test does.
 */
static inline void kqp_test_keys_reader(void)
{
	int req[2], resp[2], fd;
	uint32_t keys[KQP_TEST_MAX_KEYS];
	char c;
	int n;

	if (kqp_test_keys_req >= 0 || pipe(req))
		return;
	if (pipe(resp)) {
		close(req[0]);
		close(req[1]);
		return;
	}
	switch (fork()) {
	case -1:
		close(req[0]);
		close(req[1]);
		close(resp[0]);
		close(resp[1]);
		return;
	case 0:
		/* No file of the test's, a table's least of all. */
		for (fd = 3; fd < 1024; fd++)
			if (fd != req[0] && fd != resp[1])
				close(fd);
		while (read(req[0], &c, 1) == 1) {
			n = kqp_test_dma_lkeys_root(keys, KQP_TEST_MAX_KEYS);
			if (write(resp[1], &n, sizeof(n)) != sizeof(n) ||
			    (n > 0 && write(resp[1], keys, n * sizeof(*keys)) !=
				      (ssize_t)(n * sizeof(*keys))))
				break;
		}
		_exit(0);
	}
	close(req[0]);
	close(resp[1]);
	kqp_test_keys_req = req[1];
	kqp_test_keys_resp = resp[0];
}

/*
 * The local_dma_lkey of every PD on the test's RDMA device, as
 * `rdma res show pd` prints them to root: kqp hands none to userspace,
 * so a test that must show one refused learns them this way (through
 * kqp_test_keys_reader() once it is no longer root).  Up to @max
 * (at most KQP_TEST_MAX_KEYS) into @keys, in pdn order; how many, or -1.
 */
static inline int kqp_test_dma_lkeys(uint32_t *keys, int max)
{
	uint32_t all[KQP_TEST_MAX_KEYS];
	char c = 1;
	int n;

	if (!geteuid())
		return kqp_test_dma_lkeys_root(keys, max);
	if (kqp_test_keys_req < 0 || write(kqp_test_keys_req, &c, 1) != 1 ||
	    read(kqp_test_keys_resp, &n, sizeof(n)) != sizeof(n) ||
	    n > KQP_TEST_MAX_KEYS)
		return -1;
	if (n > 0 && read(kqp_test_keys_resp, all, n * sizeof(*all)) !=
		     (ssize_t)(n * sizeof(*all)))
		return -1;
	if (n > max)
		n = max;
	if (n > 0)
		memcpy(keys, all, n * sizeof(*keys));
	return n;
}
#endif /* KQP_TEST_LIB */

/* The index kqp gives the RDMA device called @name, or KQP_NO_DEVICE. */
static inline uint32_t kqp_test_dev_index(int fd, const char *name)
{
	struct kqp_device_info devs[8];
	struct kqp_query q = {
		.size = sizeof(q), .num_devices = 8,
		.device_info_size = sizeof(devs[0]), .devices = (uintptr_t)devs,
	};
	uint32_t i;

	if (kqp_test_ioctl(fd, KQP_IOCTL_QUERY, &q))
		return KQP_NO_DEVICE;
	for (i = 0; i < q.num_devices && i < 8; i++)
		if (!strcmp(devs[i].name, name))
			return devs[i].index;
	return KQP_NO_DEVICE;
}

/*
 * The rxe device's line of /sys/kernel/debug/kqp/qp_cache (kqp(7)): its
 * counters, and its shape ("shape rc req ..."), "" before it has one.
 */
struct kqp_test_qpc {
	long idle, hits, misses, made, adopted, returned;
	char shape[64];
};

/* 0 with *@st filled in, or -1 without the file or the line. */
static inline int kqp_test_qpc_stat(struct kqp_test_qpc *st)
{
	FILE *f = fopen("/sys/kernel/debug/kqp/qp_cache", "r");
	char line[256], *sh;
	int ret = -1;

	memset(st, 0, sizeof(*st));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "rxe", 3))
			continue;
		if (sscanf(line, "%*s idle %ld hits %ld misses %ld made %ld adopted %ld returned %ld",
			   &st->idle, &st->hits, &st->misses, &st->made,
			   &st->adopted, &st->returned) != 6)
			break;
		sh = strstr(line, "shape");
		if (sh)
			snprintf(st->shape, sizeof(st->shape), "%.*s",
				 (int)strcspn(sh, "\n"), sh);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * Set kqp's qp_cache parameter to @val; returns the value it had, or -1
 * (no kqp, or the write failed).
 */
static inline int kqp_test_qp_cache_set(int val)
{
	char old[16], v[16];

	snprintf(v, sizeof(v), "%d", val);
	if (param_read("qp_cache", old, sizeof(old)) ||
	    param_write("qp_cache", v))
		return -1;
	return atoi(old);
}

/*
 * Turn kqp's QP cache off and wait (10 s at most) until it holds nothing,
 * so that counts of the device's kernel objects (`rdma resource`) are the
 * test's alone: its idle QPs are kernel objects, and a refill changes
 * them.  Returns the value it had, for kqp_test_qp_cache_set(); -1 if it
 * did not empty (or there is no kqp).
 */
static inline int kqp_test_qp_cache_off(void)
{
	int old = kqp_test_qp_cache_set(0), i;
	struct kqp_test_qpc st;

	for (i = 0; old >= 0 && i < 100; i++) {
		if (kqp_test_qpc_stat(&st))
			return -1;
		if (!st.idle)
			return old;
		usleep(100 * 1000);
	}
	return -1;
}

/* The index kqp gives the bench's rxe device, or KQP_NO_DEVICE. */
static inline uint32_t kqp_test_rxe_index(int fd)
{
	return kqp_test_dev_index(fd, kqp_test_rdma_dev());
}

/* KQP_IOCTL_CTX_INFO on @fd's table into @info; 0 or an errno. */
static inline int kqp_test_ctx_info(int fd, struct kqp_ctx_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return kqp_test_ioctl(fd, KQP_IOCTL_CTX_INFO, info);
}

/* KQP_IOCTL_REG_MR of @len bytes at @buf, iova the same, into @r. */
static inline int kqp_test_reg_mr(int fd, uint32_t pd, void *buf, size_t len,
				  uint32_t access, struct kqp_reg_mr *r)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->pd = pd;
	r->access = access;
	r->addr = r->iova = (uintptr_t)buf;
	r->length = len;
	return kqp_test_ioctl(fd, KQP_IOCTL_REG_MR, r);
}

/* An RC QP's request: @wr requests of @sge SGEs each way, nothing else. */
static inline void kqp_test_rc_req(struct kqp_create_qp *c, uint32_t wr,
				   uint32_t sge)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->qp_type = KQP_QPT_RC;
	c->cap.max_send_wr = wr;
	c->cap.max_recv_wr = wr;
	c->cap.max_send_sge = sge;
	c->cap.max_recv_sge = sge;
}

/*
 * Another process's MR: a child with a table of its own registers 4096
 * bytes of 'X' with @access and keeps them registered until
 * kqp_test_other_mr_end(); @addr and @lkey are what it got.
 */
struct kqp_test_other_mr {
	uint64_t addr;
	uint32_t lkey;
	pid_t pid;
	int up[2], down[2];
};

#ifndef KQP_TEST_LIB
static inline void kqp_test_other_mr(struct __test_metadata *_metadata,
				     struct kqp_test_other_mr *o,
				     uint32_t access)
{
	struct {
		uint64_t addr;
		uint32_t lkey;
	} m;

	ASSERT_EQ(0, pipe(o->up));
	ASSERT_EQ(0, pipe(o->down));
	o->pid = fork();
	ASSERT_LE(0, o->pid);
	if (o->pid == 0) {
		/* A table of its own, not the one inherited from the test. */
		int fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
		char *mem = aligned_alloc(4096, 4096);
		struct kqp_alloc_pd a = {
			.size = sizeof(a),
			.device_index = kqp_test_rxe_index(fd),
		};
		struct kqp_reg_mr r;
		char c;

		if (fd < 0 || !mem ||
		    kqp_test_ioctl(fd, KQP_IOCTL_ALLOC_PD, &a))
			_exit(1);
		memset(mem, 'X', 4096);
		if (kqp_test_reg_mr(fd, a.out_pd, mem, 4096, access, &r))
			_exit(2);
		m.addr = (uintptr_t)mem;
		m.lkey = r.out_lkey;
		if (write(o->up[1], &m, sizeof(m)) != sizeof(m))
			_exit(3);
		/* Keep the MR registered until the test is done. */
		if (read(o->down[0], &c, 1) != 1)
			_exit(4);
		_exit(0);
	}
	ASSERT_EQ(sizeof(m), read(o->up[0], &m, sizeof(m)));
	o->addr = m.addr;
	o->lkey = m.lkey;
}

/* Let the child go: it exits 0. */
static inline void kqp_test_other_mr_end(struct __test_metadata *_metadata,
					 struct kqp_test_other_mr *o)
{
	char c = 0;
	int status;

	ASSERT_EQ(1, write(o->down[1], &c, 1));
	ASSERT_EQ(o->pid, waitpid(o->pid, &status, 0));
	EXPECT_EQ(0, status);
}

/*
 * Wait for the child @pid, which was to exit 0; what @who exited with
 * otherwise is the step that failed.  True when it did exit 0.
 */
static inline bool kqp_test_child_ok(struct __test_metadata *_metadata,
				     pid_t pid, const char *who)
{
	int status;

	if (waitpid(pid, &status, 0) != pid) {
		TH_LOG("waiting for the %s: %s", who, strerror(errno));
		return false;
	}
	if (!WIFEXITED(status)) {
		TH_LOG("the %s did not exit: status %#x", who, status);
		return false;
	}
	if (WEXITSTATUS(status))
		TH_LOG("%s step %d failed", who, WEXITSTATUS(status));
	return !WEXITSTATUS(status);
}

/*
 * Wait for the child @pid, which was to die of SIGSEGV; an exit code, if
 * it exited instead, says how far it got.
 */
static inline void kqp_test_expect_segv(struct __test_metadata *_metadata,
					pid_t pid)
{
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	if (WIFEXITED(status))
		TH_LOG("child exited %d", WEXITSTATUS(status));
	EXPECT_TRUE(WIFSIGNALED(status));
	if (WIFSIGNALED(status))
		EXPECT_EQ(SIGSEGV, WTERMSIG(status));
}
#endif /* KQP_TEST_LIB */

/*
 * A thread that tears @sge between a good address and lkey and a bad
 * one, each word stored on its own, until @stop: a reader may see any
 * mix of the four.  @sge is read again each round, so a test may move it.
 */
struct kqp_test_flipper {
	struct kqp_sge *volatile sge;
	uint64_t good_addr, bad_addr;
	uint32_t good_lkey, bad_lkey;
	volatile int stop;
};

static inline void *kqp_test_flip(void *arg)
{
	struct kqp_test_flipper *f = arg;

	while (!f->stop) {
		struct kqp_sge *sge = f->sge;

		__atomic_store_n(&sge->lkey, f->bad_lkey, __ATOMIC_RELAXED);
		__atomic_store_n(&sge->addr, f->bad_addr, __ATOMIC_RELAXED);
		__atomic_store_n(&sge->lkey, f->good_lkey, __ATOMIC_RELAXED);
		__atomic_store_n(&sge->addr, f->good_addr, __ATOMIC_RELAXED);
	}
	return NULL;
}

/*
 * The node GUID sysfs shows for an RDMA device, in network byte order as
 * the kernel and libibverbs keep it; 0 if it cannot be read.
 */
static inline uint64_t kqp_test_sysfs_guid(const char *ibdev)
{
	unsigned int w[4];
	uint8_t b[8];
	uint64_t guid;
	char path[256];
	FILE *f;
	int i, n;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_guid",
		 ibdev);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fscanf(f, "%4x:%4x:%4x:%4x", &w[0], &w[1], &w[2], &w[3]);
	fclose(f);
	if (n != 4)
		return 0;
	for (i = 0; i < 4; i++) {
		b[2 * i] = w[i] >> 8;
		b[2 * i + 1] = w[i] & 0xff;
	}
	memcpy(&guid, b, sizeof(guid));
	return guid;
}

/* Run a shell command; returns its exit status, or -1. */
static inline int kqp_test_sh(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static inline int kqp_test_sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

#endif /* KQP_TEST_H */
