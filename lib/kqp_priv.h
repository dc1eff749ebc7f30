/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * libkqp internals.  Helpers here return 0 or a negative errno; only the
 * public librdmacm/libibverbs entry points turn that into -1 and errno.
 */
#ifndef KQP_PRIV_H
#define KQP_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/kqp-abi.h>

#define KQP_DEV_PATH "/dev/kqp"

#define KQP_EXPORT __attribute__((visibility("default")))

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* librdmacm's convention: set errno, return -1. */
static inline int kqp_err(int err)
{
	errno = err;
	return -1;
}

/* A helper's -errno as librdmacm's -1/errno. */
static inline int kqp_ret(int ret)
{
	return ret < 0 ? kqp_err(-ret) : ret;
}

/* dev.c */
int kqp_dev_open(void);
int kqp_is_kqp_fd(int fd);
int kqp_ioctl(int fd, unsigned long req, void *arg);
int kqp_query_devices(int fd, struct kqp_device_info **infos, uint32_t *n);

/* device.c */
struct kqp_ibv_device {
	struct ibv_device ibv;
	uint32_t index;
	uint64_t node_guid;	/* network byte order, as the kernel keeps it */
	uint32_t phys_port_cnt;
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	unsigned int refcnt;
	struct kqp_ibv_device *next;
};

static inline struct kqp_ibv_device *to_kdev(struct ibv_device *dev)
{
	return container_of(dev, struct kqp_ibv_device, ibv);
}

struct kqp_ibv_device *kqp_device_get_by_index(uint32_t index);
void kqp_device_put(struct kqp_ibv_device *kdev);

/* context.c */
struct kqp_context {
	struct ibv_context ibv;
	struct kqp_ibv_device *kdev;
	struct kqp_context *next;
};

static inline struct kqp_context *to_kctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct kqp_context, ibv);
}

struct kqp_context *kqp_context_for_device(uint32_t index);

/* cma.c */
struct kqp_mc {
	struct kqp_mc *next;
	struct kqp_id *kid;
	void *context;
	int events_completed;
	pthread_cond_t cond;
	uint32_t handle;
	union ibv_gid mgid;
	uint16_t mlid;
	uint16_t join_flags;
	struct sockaddr_storage addr;
};

struct kqp_id {
	struct rdma_cm_id id;
	struct kqp_context *kctx;
	uint32_t handle;
	bool sync;
	bool connect_error;
	int events_completed;
	pthread_mutex_t mut;
	pthread_cond_t cond;
	struct kqp_mc *mc_list;
	struct ibv_qp_init_attr *qp_init_attr;
	uint8_t initiator_depth;
	uint8_t responder_resources;
	void *connect;
	size_t connect_len;
};

static inline struct kqp_id *to_kid(struct rdma_cm_id *id)
{
	return container_of(id, struct kqp_id, id);
}

#endif /* KQP_PRIV_H */
