/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Helpers shared by the kqp selftests.  The bench (tools/testing/vm) runs
 * them in a guest with one Soft-RoCE device; it names that device and its
 * netdev in the environment.
 */
#ifndef KQP_TEST_H
#define KQP_TEST_H

#include <errno.h>
#include <fcntl.h>
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

#define KQP_DEV "/dev/kqp"

#define offsetofend(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))

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

/* ioctl() that returns 0 or the errno, so tests can compare errnos. */
static inline int kqp_test_ioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) ? errno : 0;
}

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
