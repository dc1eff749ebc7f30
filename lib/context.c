// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * One struct ibv_context per RDMA device per process: what an id's
 * ->verbs points at once the id is bound, and what rdma_get_devices()
 * returns.  As in librdmacm, these contexts live as long as the process.
 * ibv_open_device() makes further contexts, the caller's to close.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kqp_priv.h"

static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kqp_context *contexts;

/*
 * A new context on @kdev, whose reference it takes over, in *@kctxp; 0
 * or -errno.  Every context of the process issues its commands on the
 * session's fd, so objects made through any of them can be used together.
 */
static int kqp_context_alloc(struct kqp_ibv_device *kdev,
			     struct kqp_context **kctxp)
{
	struct kqp_context *kctx;
	int cmd_fd, async_fd;

	cmd_fd = kqp_session_fd();
	async_fd = kqp_session_async_fd();
	if (cmd_fd < 0 || async_fd < 0)
		return cmd_fd < 0 ? cmd_fd : async_fd;
	kctx = calloc(1, sizeof(*kctx));
	if (!kctx)
		return -ENOMEM;
	kctx->vctx.context.cmd_fd = cmd_fd;
	kctx->vctx.context.async_fd = async_fd;
	kctx->kdev = kdev;
	kctx->vctx.context.device = &kdev->ibv;
	kctx->vctx.context.num_comp_vectors = 1;
	/*
	 * What the inline verbs in <infiniband/verbs.h> call.  An extended
	 * context, for the extended ops kqp has; every other op is NULL,
	 * which the inlines take as "not supported", as they do for a
	 * plain context.
	 */
	kctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	kctx->vctx.sz = sizeof(kctx->vctx);
	kctx->vctx.query_port = kqp_query_port_ex;
	kctx->vctx.create_qp_ex = kqp_create_qp_ex;
	kctx->vctx.query_device_ex = kqp_query_device_ex;
	kctx->vctx.create_cq_ex = kqp_create_cq_ex;
	kctx->vctx.context.ops.poll_cq = kqp_poll_cq;
	kctx->vctx.context.ops.req_notify_cq = kqp_req_notify_cq;
	kctx->vctx.context.ops.post_send = kqp_post_send;
	kctx->vctx.context.ops.post_recv = kqp_post_recv;
	kctx->vctx.context.ops.post_srq_recv = kqp_post_srq_recv;
	kctx->vctx.create_srq_ex = kqp_create_srq_ex;
	pthread_mutex_init(&kctx->vctx.context.mutex, NULL);
	pthread_mutex_init(&kctx->pd_lock, NULL);
	*kctxp = kctx;
	return 0;
}

/* A new context on the device with kernel index @index; 0 or -errno. */
static int kqp_context_new(uint32_t index, struct kqp_context **kctxp)
{
	struct kqp_ibv_device *kdev;
	int ret;

	ret = kqp_device_get_by_index(index, &kdev);
	if (ret)
		return ret;
	ret = kqp_context_alloc(kdev, kctxp);
	if (ret)
		kqp_device_put(kdev);
	return ret;
}

/*
 * fork(): the child's contexts are not its parent's.  The lock is held
 * across fork() so that the child finds the list consistent; the child
 * then forgets the parent's contexts (leaving them to whatever the child
 * still holds of them: their commands now fail) and makes its own.
 */
void kqp_contexts_lock(void)
{
	pthread_mutex_lock(&contexts_lock);
}

void kqp_contexts_unlock(void)
{
	pthread_mutex_unlock(&contexts_lock);
}

void kqp_contexts_forget(void)
{
	contexts = NULL;
}

/*
 * The process's context for the device with kernel index @index, in
 * *@kctxp; 0 or -errno.
 */
int kqp_context_for_device(uint32_t index, struct kqp_context **kctxp)
{
	struct kqp_context *kctx;
	int ret = 0;

	pthread_mutex_lock(&contexts_lock);
	for (kctx = contexts; kctx; kctx = kctx->next)
		if (kctx->kdev->index == index)
			goto out;

	ret = kqp_context_new(index, &kctx);
	if (ret)
		goto out;
	kctx->shared = true;
	kctx->next = contexts;
	contexts = kctx;
out:
	pthread_mutex_unlock(&contexts_lock);
	*kctxp = kctx;
	return ret;
}

/*
 * A context of the caller's own, as libibverbs gives one per call.  The
 * device must still be there: the kernel is asked again.
 */
KQP_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct kqp_context *kctx;
	int ret;

	ret = kqp_context_new(to_kdev(device)->index, &kctx);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return &kctx->vctx.context;
}

/*
 * As with libibverbs, objects still made through the context are the
 * caller's to destroy first; kqp's stay in the session until then.  The
 * process-wide contexts that ids and rdma_get_devices() hand out belong
 * to the library: closing one of those does nothing.
 */
KQP_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct kqp_context *kctx = to_kctx(context);

	if (kctx->shared)
		return 0;
	pthread_mutex_destroy(&kctx->pd_lock);
	pthread_mutex_destroy(&kctx->vctx.context.mutex);
	kqp_device_put(kctx->kdev);
	free(kctx);
	return 0;
}

/*
 * The process's default PD on the device, one more id using it, in
 * *@pdp; 0 or -errno.  librdmacm sets id->pd to it when an id is bound.
 * The table's default PD is the same one a QP created on an id without a
 * PD gets.
 */
int kqp_context_get_default_pd(struct kqp_context *kctx, struct ibv_pd **pdp)
{
	struct kqp_alloc_pd cmd = {
		.size = sizeof(cmd),
		.flags = KQP_ALLOC_PD_DEFAULT,
		.device_index = kctx->kdev->index,
	};
	struct kqp_lpd *pd;
	int ret = 0;

	pthread_mutex_lock(&kctx->pd_lock);
	pd = kctx->default_pd;
	if (pd) {
		kctx->default_pd_refs++;
		goto out;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		ret = -ENOMEM;
		goto out;
	}
	ret = kqp_ioctl(kctx->vctx.context.cmd_fd, KQP_IOCTL_ALLOC_PD, &cmd);
	if (ret) {
		free(pd);
		goto out;
	}
	pd->ibv.context = &kctx->vctx.context;
	pd->ibv.handle = cmd.out_pd;
	pd->is_default = true;
	kctx->default_pd = pd;
	kctx->default_pd_refs = 1;
out:
	if (!ret)
		*pdp = &pd->ibv;
	pthread_mutex_unlock(&kctx->pd_lock);
	return ret;
}

/* An id using the default PD is gone; the PD goes with the last one. */
void kqp_context_put_default_pd(struct kqp_context *kctx)
{
	struct kqp_dealloc_pd cmd = { .size = sizeof(cmd) };
	struct kqp_lpd *pd = NULL;

	pthread_mutex_lock(&kctx->pd_lock);
	if (!--kctx->default_pd_refs) {
		pd = kctx->default_pd;
		kctx->default_pd = NULL;
	}
	pthread_mutex_unlock(&kctx->pd_lock);
	if (!pd)
		return;
	/* QPs still using it keep the kernel's PD; ours is just a name. */
	cmd.pd = pd->ibv.handle;
	kqp_ioctl(kctx->vctx.context.cmd_fd, KQP_IOCTL_DEALLOC_PD, &cmd);
	free(pd);
}

KQP_EXPORT int ibv_get_async_event(struct ibv_context *context,
				   struct ibv_async_event *event)
{
	struct kqp_async_event ev;
	ssize_t n;

	n = read(context->async_fd, &ev, sizeof(ev));
	if (n != sizeof(ev))
		return -1;
	event->event_type = ev.event;
	switch (ev.kind) {
	case KQP_ASYNC_CQ:
		event->element.cq = (struct ibv_cq *)(uintptr_t)ev.uid;
		break;
	case KQP_ASYNC_QP:
		event->element.qp = (struct ibv_qp *)(uintptr_t)ev.uid;
		break;
	case KQP_ASYNC_SRQ:
		event->element.srq = (struct ibv_srq *)(uintptr_t)ev.uid;
		break;
	case KQP_ASYNC_DEVICE:
		/* The port the device named, as libibverbs passes it on. */
		event->element.port_num = (int)ev.uid;
		break;
	default:
		event->element.port_num = 0;
		break;
	}
	return 0;
}

/* One event acknowledged: what ibv_destroy_*() waits for. */
static void kqp_ack_one(pthread_mutex_t *mutex, pthread_cond_t *cond,
			uint32_t *completed)
{
	pthread_mutex_lock(mutex);
	(*completed)++;
	pthread_cond_signal(cond);
	pthread_mutex_unlock(mutex);
}

KQP_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = event->element.cq;

		kqp_ack_one(&cq->mutex, &cq->cond, &cq->async_events_completed);
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = event->element.qp;

		kqp_ack_one(&qp->mutex, &qp->cond, &qp->events_completed);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = event->element.srq;

		kqp_ack_one(&srq->mutex, &srq->cond, &srq->events_completed);
		break;
	}
	default:
		break;
	}
}

/* kqp's own: what the process's session table holds (for tests, tools). */
KQP_EXPORT int kqp_query_context(struct kqp_ctx_info *info)
{
	int fd = kqp_session_fd();

	if (fd < 0)
		return kqp_err(-fd);
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return kqp_ret(kqp_ioctl(fd, KQP_IOCTL_CTX_INFO, info));
}

KQP_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct kqp_device_info *infos;
	struct ibv_context **list;
	uint32_t n, i, got = 0;
	int ret;

	list = kqp_device_list_new(num_devices, &infos, &n, &ret);
	if (!list) {
		errno = -ret;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		struct kqp_context *kctx;

		/* A device that left since the query is simply not listed. */
		if (!kqp_context_for_device(infos[i].index, &kctx))
			list[got++] = &kctx->vctx.context;
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
