/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * libkqp internals.  Helpers here return 0 or a negative errno; only the
 * public librdmacm/libibverbs entry points turn that into -1 and errno.
 */
#ifndef KQP_PRIV_H
#define KQP_PRIV_H

#include <stdint.h>
#include <rdma/kqp-abi.h>

#define KQP_DEV_PATH "/dev/kqp"

#define KQP_EXPORT __attribute__((visibility("default")))

int kqp_dev_open(void);
int kqp_ioctl(int fd, unsigned long req, void *arg);
int kqp_query_devices(int fd, struct kqp_device_info **infos, uint32_t *n);

#endif /* KQP_PRIV_H */
