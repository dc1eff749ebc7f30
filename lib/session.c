// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The process-wide /dev/kqp session, and access to /dev/kqp: opening it,
 * checking the module's ABI, and the QUERY command.  (device.c is the
 * libibverbs device list.)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
 * Open /dev/kqp and check that the module speaks our ABI.  ENOENT means the
 * module is not loaded (no device node); EPROTO means it is, but it is a
 * kqp.ko whose ABI this library does not know.
 */
int kqp_dev_open(void)
{
	struct kqp_query q = { .size = sizeof(q) };
	int fd, ret;

	fd = open(KQP_DEV_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = kqp_ioctl(fd, KQP_IOCTL_QUERY, &q);
	if (!ret && q.out_abi_version != KQP_ABI_VERSION)
		ret = -EPROTO;
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
static pthread_once_t session_atfork_once = PTHREAD_ONCE_INIT;
static int session_fd = -1;
static int session_async_fd = -1;

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
	kqp_contexts_forget();
	pthread_mutex_unlock(&session_lock);
	kqp_contexts_unlock();
}

static void kqp_session_atfork(void)
{
	pthread_atfork(kqp_session_prepare, kqp_session_parent,
		       kqp_session_child);
}

int kqp_session_fd(void)
{
	struct kqp_create_async_fd a = { .size = sizeof(a) };
	int fd, ret;

	pthread_once(&session_atfork_once, kqp_session_atfork);
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
	return fd;
}

/*
 * 0 if @fd is an open file of /dev/kqp; -EBADF if it is not open at all,
 * -EINVAL if it is something else.  Callers check a channel fd the user
 * hands in before issuing kqp ioctls on it.
 */
int kqp_is_kqp_fd(int fd)
{
	struct stat fst, dst;

	if (fstat(fd, &fst))
		return -errno;
	if (!S_ISCHR(fst.st_mode) || stat(KQP_DEV_PATH, &dst) ||
	    fst.st_rdev != dst.st_rdev)
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
