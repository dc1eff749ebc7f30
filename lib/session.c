// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The process-wide /dev/kqp session, and access to /dev/kqp: opening it,
 * checking the module's ABI, and the QUERY command.  (device.c is the
 * libibverbs device list.)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kqp_priv.h"

int kqp_ioctl(int fd, unsigned long req, void *arg)
{
	if (ioctl(fd, req, arg))
		return -errno;
	return 0;
}

/*
 * Issue @req, a command that makes a kernel object, with @size zeroed
 * bytes for the library's side of it allocated first (so that nothing
 * is left in the kernel when that fails).  Returns the memory, or NULL
 * with -errno in *@err.
 */
void *kqp_ioctl_new(int fd, unsigned long req, void *cmd, size_t size,
		    int *err)
{
	void *obj;

	obj = calloc(1, size);
	if (!obj) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = kqp_ioctl(fd, req, cmd);
	if (*err) {
		free(obj);
		return NULL;
	}
	return obj;
}

/*
 * The device number of /dev/kqp, as the files the library opened have it
 * (not as a path now names it: the process may since have changed its
 * root or mount namespace).  Set by kqp_dev_open().
 */
static dev_t kqp_rdev;
static bool kqp_rdev_known;

/*
 * Open /dev/kqp and check that the module speaks our ABI.  ENOENT means the
 * module is not loaded (no device node); EPROTO means it is, but it is a
 * kqp.ko whose ABI this library does not know.
 */
int kqp_dev_open(void)
{
	struct kqp_query q = { .size = sizeof(q) };
	struct stat st;
	int fd, ret;

	fd = open(KQP_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = kqp_ioctl(fd, KQP_IOCTL_QUERY, &q);
	if (!ret && q.out_abi_version != KQP_ABI_VERSION)
		ret = -EPROTO;
	if (!ret && !__atomic_load_n(&kqp_rdev_known, __ATOMIC_ACQUIRE)) {
		if (fstat(fd, &st)) {
			ret = -errno;
		} else {
			__atomic_store_n(&kqp_rdev, st.st_rdev,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&kqp_rdev_known, true,
					 __ATOMIC_RELEASE);
		}
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/*
 * The process's session: one file of /dev/kqp whose table holds the
 * process's PDs, CQs, QPs, MRs and AHs.  Every event channel the library
 * opens attaches to it, so the ids on a channel can use them.  Opened on
 * first use and kept for the life of the process, like librdmacm's
 * device contexts.
 *
 * A table belongs to the process that made it: the kernel refuses its
 * commands to a child after fork() (EPERM), as rdma-core says a child
 * may not use its parent's verbs objects.  So the child lets go of the
 * parent's session and opens its own on first use; what it makes goes
 * with it, not with the parent.
 */
static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static int session_fd = -1;
static int session_async_fd = -1;
/* Bumped in each child: mappings made before it are not the child's. */
static unsigned int fork_gen;

unsigned int kqp_fork_gen(void)
{
	return __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
}

/* Lock order: the contexts' lock, then session_lock (context.c). */
static void kqp_session_prepare(void)
{
	kqp_contexts_lock();
	pthread_mutex_lock(&session_lock);
}

static void kqp_session_parent(void)
{
	pthread_mutex_unlock(&session_lock);
	kqp_contexts_unlock();
}

/*
 * The environment variable @name as a decimal number up to @max, in *@val:
 * 1 when it is one, 0 when it is unset or empty (*@val untouched), -1 when
 * it is anything else.
 */
int kqp_env_ulong(const char *name, unsigned long max, unsigned long *val)
{
	const char *env = getenv(name);
	unsigned long v;
	char *end;

	if (!env || !*env)
		return 0;
	v = strtoul(env, &end, 10);
	if (*end || v > max)
		return -1;
	*val = v;
	return 1;
}

/* The session's table has a poller (KQP_POLLER=1): doorbells wake it. */
static bool session_poller;

bool kqp_session_poller(void)
{
	return __atomic_load_n(&session_poller, __ATOMIC_RELAXED);
}

/* A doorbell found the session's poller dead (ESRCH): stop waking it. */
void kqp_session_poller_gone(void)
{
	__atomic_store_n(&session_poller, false, __ATOMIC_RELAXED);
}

/*
 * The parent's session fds become /dev/null rather than being closed, so
 * that what the child still holds of the parent's (a context's cmd_fd)
 * cannot reach a file the child opens later under the same number.
 */
static void kqp_session_child(void)
{
	int null;

	if (session_fd >= 0) {
		null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (null >= 0) {
			dup3(null, session_fd, O_CLOEXEC);
			dup3(null, session_async_fd, O_CLOEXEC);
			close(null);
		}
	}
	session_fd = -1;
	session_async_fd = -1;
	/* The poller is a thread of the parent's, on the parent's table. */
	session_poller = false;
	__atomic_store_n(&fork_gen, fork_gen + 1, __ATOMIC_RELAXED);
	kqp_contexts_forget();
	pthread_mutex_unlock(&session_lock);
	kqp_contexts_unlock();
}

/*
 * Registered when the library is loaded: a pthread_once() that a fork()
 * interrupts runs again in the child, which would register twice, and
 * the child's next fork() would then take the locks twice.
 */
__attribute__((constructor)) static void kqp_session_atfork(void)
{
	pthread_atfork(kqp_session_prepare, kqp_session_parent,
		       kqp_session_child);
}

/*
 * KQP_POLLER=1 asks the kernel for a poller on the session's table, with
 * KQP_POLLER_IDLE_US (0 to 1000000) as its idle time.  A kernel that has
 * none to give (6.1) leaves the library as it was: posts ring as usual.
 */
static void kqp_session_poller_start(int fd)
{
	struct kqp_create_poller p = { .size = sizeof(p) };
	const char *env = getenv("KQP_POLLER");
	unsigned long us = 0;

	if (!env || strcmp(env, "1"))
		return;
	if (kqp_env_ulong("KQP_POLLER_IDLE_US", KQP_POLLER_IDLE_US_MAX,
			  &us) < 0)
		return;
	p.idle_us = us;
	if (!kqp_ioctl(fd, KQP_IOCTL_CREATE_POLLER, &p))
		__atomic_store_n(&session_poller, true, __ATOMIC_RELAXED);
}

int kqp_session_fd(void)
{
	struct kqp_create_async_fd a = { .size = sizeof(a) };
	int fd, ret;

	pthread_mutex_lock(&session_lock);
	if (session_fd >= 0) {
		fd = session_fd;
		goto out;
	}
	fd = kqp_dev_open();
	if (fd < 0)
		goto out;
	ret = kqp_ioctl(fd, KQP_IOCTL_CREATE_ASYNC_FD, &a);
	if (ret) {
		close(fd);
		fd = ret;
		goto out;
	}
	session_async_fd = a.out_fd;
	session_fd = fd;
	kqp_session_poller_start(fd);
out:
	pthread_mutex_unlock(&session_lock);
	return fd;
}

/* The session's async event fd (ibv_context->async_fd), or -errno. */
int kqp_session_async_fd(void)
{
	int fd = kqp_session_fd();

	return fd < 0 ? fd : session_async_fd;
}

/*
 * The event channels the library opened, by fd number, so that a channel's
 * fd is known for a kqp file without a system call on every CM call.
 * Chunks of flags, allocated as fds are used and never freed, so that
 * readers take no lock.  An fd past the last chunk, or a chunk that could
 * not be allocated, is simply not known: kqp_is_kqp_fd() then asks fstat().
 */
#define KQP_FD_CHUNK 1024
#define KQP_FD_CHUNKS 1024

static pthread_mutex_t channel_fds_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *channel_fds[KQP_FD_CHUNKS];

static unsigned char *kqp_channel_fd_flag(int fd, bool alloc)
{
	unsigned char **chunkp, *chunk;

	if (fd < 0 || fd >= KQP_FD_CHUNK * KQP_FD_CHUNKS)
		return NULL;
	chunkp = &channel_fds[fd / KQP_FD_CHUNK];
	chunk = __atomic_load_n(chunkp, __ATOMIC_ACQUIRE);
	if (!chunk && alloc) {
		pthread_mutex_lock(&channel_fds_lock);
		chunk = *chunkp;
		if (!chunk) {
			chunk = calloc(KQP_FD_CHUNK, 1);
			if (chunk)
				__atomic_store_n(chunkp, chunk,
						 __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&channel_fds_lock);
	}
	return chunk ? &chunk[fd % KQP_FD_CHUNK] : NULL;
}

static void kqp_channel_fd_mark(int fd, bool is_channel)
{
	unsigned char *flag = kqp_channel_fd_flag(fd, is_channel);

	if (flag)
		__atomic_store_n(flag, is_channel, __ATOMIC_RELAXED);
}

/* A new event channel: a file of /dev/kqp sharing the session's table. */
int kqp_channel_open(void)
{
	struct kqp_attach a = { .size = sizeof(a) };
	int sfd, fd, ret;

	sfd = kqp_session_fd();
	if (sfd < 0)
		return sfd;
	fd = kqp_dev_open();
	if (fd < 0)
		return fd;
	a.fd = sfd;
	ret = kqp_ioctl(fd, KQP_IOCTL_ATTACH, &a);
	if (ret) {
		close(fd);
		return ret;
	}
	kqp_channel_fd_mark(fd, true);
	return fd;
}

/* Close a channel's fd from kqp_channel_open(); the number is free again. */
void kqp_channel_close(int fd)
{
	kqp_channel_fd_mark(fd, false);
	close(fd);
}

/*
 * 0 if @fd is an open file of /dev/kqp; -EBADF if it is not open at all,
 * -EINVAL if it is something else.  Callers check a channel fd the user
 * hands in before issuing kqp ioctls on it.  The fd of a channel the
 * library opened is known without a system call.  Any other is compared,
 * by its device number, with the files the library opened (opening the
 * session to learn it if need be), never with what the path /dev/kqp
 * names now: that may be another file, or none, after chroot().
 */
int kqp_is_kqp_fd(int fd)
{
	unsigned char *flag = kqp_channel_fd_flag(fd, false);
	struct stat st;
	int ret;

	if (flag && __atomic_load_n(flag, __ATOMIC_RELAXED))
		return 0;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISCHR(st.st_mode))
		return -EINVAL;
	if (!__atomic_load_n(&kqp_rdev_known, __ATOMIC_ACQUIRE)) {
		ret = kqp_session_fd();
		if (ret < 0)
			return -EINVAL;
	}
	if (st.st_rdev != __atomic_load_n(&kqp_rdev, __ATOMIC_RELAXED))
		return -EINVAL;
	return 0;
}

/*
 * Fetch the kernel's device table.  Devices can appear between the sizing
 * call and the filling call, so retry until the array was big enough.
 */
int kqp_query_devices(int fd, struct kqp_device_info **infos, uint32_t *n)
{
	struct kqp_device_info *buf = NULL;
	uint32_t cap = 4;

	for (;;) {
		struct kqp_query q = {
			.size = sizeof(q),
			.num_devices = cap,
			.device_info_size = sizeof(*buf),
		};
		struct kqp_device_info *nbuf;
		int ret;

		nbuf = realloc(buf, cap * sizeof(*buf));
		if (!nbuf) {
			free(buf);
			return -ENOMEM;
		}
		buf = nbuf;
		memset(buf, 0, cap * sizeof(*buf));
		q.devices = (uintptr_t)buf;
		ret = kqp_ioctl(fd, KQP_IOCTL_QUERY, &q);
		if (ret) {
			free(buf);
			return ret;
		}
		if (q.num_devices <= cap) {
			*infos = buf;
			*n = q.num_devices;
			return 0;
		}
		cap = q.num_devices;
	}
}

/*
 * The device table, through a file of /dev/kqp opened for the purpose.
 * 0 or -errno.
 */
int kqp_query_devices_once(struct kqp_device_info **infos, uint32_t *n)
{
	int fd, ret;

	fd = kqp_dev_open();
	if (fd < 0)
		return fd;
	ret = kqp_query_devices(fd, infos, n);
	close(fd);
	return ret;
}

/*
 * The start of a device list (ibv_get_device_list(), rdma_get_devices()):
 * zero the caller's count, fetch the device table into *@infos and *@n,
 * and return a zeroed array of @n + 1 pointers; NULL with -errno in
 * *@err.
 */
void *kqp_device_list_new(int *num_devices, struct kqp_device_info **infos,
			  uint32_t *n, int *err)
{
	void **list;

	if (num_devices)
		*num_devices = 0;
	*err = kqp_query_devices_once(infos, n);
	if (*err)
		return NULL;
	list = calloc(*n + 1, sizeof(*list));
	if (!list) {
		free(*infos);
		*err = -ENOMEM;
	}
	return list;
}
