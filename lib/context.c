// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * One struct ibv_context per RDMA device per process: what an id's
 * ->verbs points at once the id is bound, and what rdma_get_devices()
 * returns.  As in librdmacm, these contexts live as long as the process.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kqp_priv.h"

static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kqp_context *contexts;

/* The process's context for the device with kernel index @index. */
struct kqp_context *kqp_context_for_device(uint32_t index)
{
	struct kqp_context *kctx;
	struct kqp_ibv_device *kdev;

	pthread_mutex_lock(&contexts_lock);
	for (kctx = contexts; kctx; kctx = kctx->next)
		if (kctx->kdev->index == index)
			goto out;

	kdev = kqp_device_get_by_index(index);
	if (!kdev)
		goto out;
	kctx = calloc(1, sizeof(*kctx));
	if (!kctx) {
		kqp_device_put(kdev);
		errno = ENOMEM;
		goto out;
	}
	kctx->kdev = kdev;
	kctx->ibv.device = &kdev->ibv;
	kctx->ibv.cmd_fd = -1;
	kctx->ibv.async_fd = -1;
	kctx->ibv.num_comp_vectors = 1;
	pthread_mutex_init(&kctx->ibv.mutex, NULL);
	kctx->next = contexts;
	contexts = kctx;
out:
	pthread_mutex_unlock(&contexts_lock);
	return kctx;
}

KQP_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct kqp_device_info *infos;
	struct ibv_context **list;
	uint32_t n, i, got = 0;
	int fd, ret;

	if (num_devices)
		*num_devices = 0;
	fd = kqp_dev_open();
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	ret = kqp_query_devices(fd, &infos, &n);
	close(fd);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	list = calloc(n + 1, sizeof(*list));
	if (!list) {
		free(infos);
		errno = ENOMEM;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		struct kqp_context *kctx = kqp_context_for_device(infos[i].index);

		/* A device that left since the query is simply not listed. */
		if (kctx)
			list[got++] = &kctx->ibv;
	}
	free(infos);
	if (num_devices)
		*num_devices = got;
	return list;
}

KQP_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}
