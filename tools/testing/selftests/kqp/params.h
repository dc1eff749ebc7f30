/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * kqp.ko's module parameters, read and set by the tests that bound them
 * (hostile, security, qbudget).  They bind root as well.
 */
#ifndef KQP_PARAMS_H
#define KQP_PARAMS_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline int param_read(const char *name, char *val, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/module/kqp/parameters/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, val, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	val[n] = 0;
	return 0;
}

static inline int param_write(const char *name, const char *val)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/module/kqp/parameters/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

#endif /* KQP_PARAMS_H */
