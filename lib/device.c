// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * libibverbs device enumeration over KQP_IOCTL_QUERY.
 *
 * As in libibverbs, a struct ibv_device outlives the list that returned it
 * for as long as someone holds a reference: each list holds one per entry,
 * and (later) each open context holds one.  Devices live in a process-wide
 * table keyed by the kernel's device index.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "kqp_priv.h"

static pthread_mutex_t devices_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kqp_ibv_device *devices;

static enum ibv_transport_type transport_of(enum ibv_node_type type)
{
	switch (type) {
	case IBV_NODE_CA:
	case IBV_NODE_SWITCH:
	case IBV_NODE_ROUTER:
		return IBV_TRANSPORT_IB;
	case IBV_NODE_RNIC:
		return IBV_TRANSPORT_IWARP;
	case IBV_NODE_USNIC:
		return IBV_TRANSPORT_USNIC;
	case IBV_NODE_USNIC_UDP:
		return IBV_TRANSPORT_USNIC_UDP;
	case IBV_NODE_UNSPECIFIED:
		return IBV_TRANSPORT_UNSPECIFIED;
	default:
		return IBV_TRANSPORT_UNKNOWN;
	}
}

static void kdev_fill(struct kqp_ibv_device *kdev,
		      const struct kqp_device_info *info)
{
	struct ibv_device *ibv = &kdev->ibv;

	kdev->index = info->index;
	kdev->node_guid = info->node_guid;
	kdev->phys_port_cnt = info->phys_port_cnt;
	kdev->max_qp_rd_atom = info->max_qp_rd_atom;
	kdev->max_qp_init_rd_atom = info->max_qp_init_rd_atom;
	ibv->node_type = (enum ibv_node_type)info->node_type;
	ibv->transport_type = transport_of(ibv->node_type);
	snprintf(ibv->name, sizeof(ibv->name), "%.*s",
		 (int)sizeof(info->name), info->name);
	snprintf(ibv->dev_name, sizeof(ibv->dev_name), "kqp");
	snprintf(ibv->dev_path, sizeof(ibv->dev_path), "/sys/class/misc/kqp");
	snprintf(ibv->ibdev_path, sizeof(ibv->ibdev_path),
		 "/sys/class/infiniband/%s", ibv->name);
}

/* Called with devices_lock held. */
static struct kqp_ibv_device *kdev_get(const struct kqp_device_info *info)
{
	struct kqp_ibv_device *kdev;

	for (kdev = devices; kdev; kdev = kdev->next)
		if (kdev->index == info->index)
			break;
	if (!kdev) {
		kdev = calloc(1, sizeof(*kdev));
		if (!kdev)
			return NULL;
		kdev->next = devices;
		devices = kdev;
	}
	/* A device can be renamed; refresh what the kernel says now. */
	kdev_fill(kdev, info);
	kdev->refcnt++;
	return kdev;
}

/* Called with devices_lock held. */
static void kdev_put(struct kqp_ibv_device *kdev)
{
	struct kqp_ibv_device **p;

	if (--kdev->refcnt)
		return;
	for (p = &devices; *p; p = &(*p)->next) {
		if (*p == kdev) {
			*p = kdev->next;
			break;
		}
	}
	free(kdev);
}

/*
 * The device with kernel index @index, referenced, in *@kdevp.  0, or
 * -ENODEV when the kernel does not list it (it went away), or another
 * -errno.
 */
int kqp_device_get_by_index(uint32_t index, struct kqp_ibv_device **kdevp)
{
	struct kqp_device_info *infos;
	struct kqp_ibv_device *kdev = NULL;
	uint32_t n, i;
	int ret;

	ret = kqp_query_devices_once(&infos, &n);
	if (ret)
		return ret;
	pthread_mutex_lock(&devices_lock);
	for (i = 0; i < n; i++) {
		if (infos[i].index == index) {
			kdev = kdev_get(&infos[i]);
			break;
		}
	}
	pthread_mutex_unlock(&devices_lock);
	free(infos);
	if (!kdev)
		return i == n ? -ENODEV : -ENOMEM;
	*kdevp = kdev;
	return 0;
}

void kqp_device_put(struct kqp_ibv_device *kdev)
{
	pthread_mutex_lock(&devices_lock);
	kdev_put(kdev);
	pthread_mutex_unlock(&devices_lock);
}

KQP_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct kqp_device_info *infos;
	struct ibv_device **list;
	uint32_t n, i;
	int ret;

	list = kqp_device_list_new(num_devices, &infos, &n, &ret);
	if (!list) {
		errno = -ret;
		return NULL;
	}
	pthread_mutex_lock(&devices_lock);
	for (i = 0; i < n; i++) {
		struct kqp_ibv_device *kdev = kdev_get(&infos[i]);

		if (!kdev) {
			while (i--)
				kdev_put(to_kdev(list[i]));
			pthread_mutex_unlock(&devices_lock);
			free(list);
			free(infos);
			return kqp_err_ptr(ENOMEM);
		}
		list[i] = &kdev->ibv;
	}
	pthread_mutex_unlock(&devices_lock);
	free(infos);

	/* Like libibverbs: no devices is an empty list, not a failure. */
	if (!n)
		errno = ENODEV;
	if (num_devices)
		*num_devices = n;
	return list;
}

KQP_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	struct ibv_device **p;

	if (!list)
		return;
	pthread_mutex_lock(&devices_lock);
	for (p = list; *p; p++)
		kdev_put(to_kdev(*p));
	pthread_mutex_unlock(&devices_lock);
	free(list);
}

KQP_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

KQP_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return (__be64)to_kdev(device)->node_guid;
}

/* The kernel's index of the device, as rdma tool and netlink show it. */
KQP_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return (int)to_kdev(device)->index;
}

static char kqp_sysfs_path[256] = "/sys";

static void kqp_sysfs_path_init(void)
{
	const char *env = NULL;
	size_t len;

	if (getuid() == geteuid())
		env = getenv("SYSFS_PATH");
	if (!env || !*env)
		return;
	snprintf(kqp_sysfs_path, sizeof(kqp_sysfs_path), "%s", env);
	len = strlen(kqp_sysfs_path);
	while (len > 1 && kqp_sysfs_path[len - 1] == '/')
		kqp_sysfs_path[--len] = '\0';
}

/*
 * Where sysfs is.  libibverbs lets the environment move it, unless the
 * process runs set-user-ID; so do we, without a trailing slash.
 */
KQP_EXPORT const char *ibv_get_sysfs_path(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, kqp_sysfs_path_init);
	return kqp_sysfs_path;
}

/*
 * Read @dir/@file into @buf as a string without its final newline.
 * Returns the length, or -1: the file cannot be read, or its contents do
 * not fit with a terminating NUL.
 */
KQP_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
				   char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t len;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len <= 0)
		return len;
	if (buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if ((size_t)len < size)
		buf[len] = '\0';
	else
		return kqp_err(EOVERFLOW);
	return len;
}
