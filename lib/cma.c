// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * librdmacm's connection manager API over /dev/kqp.
 *
 * An event channel is an open file of /dev/kqp; an id is a handle in it
 * whose uid is the struct kqp_id, so an event leads straight back to its
 * id.  The behaviour callers see is librdmacm's: an id created without a
 * channel is synchronous (each call waits for its own event), a
 * connection request creates the new id before the event is returned,
 * destroying an id waits until every event reported for it was acked, and
 * errors are -1 with errno.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <infiniband/ib.h>

#include "kqp_priv.h"

struct kqp_cm_event {
	struct rdma_cm_event event;
	uint8_t private_data[KQP_MAX_PRIVATE_DATA];
	struct kqp_id *kid;
	struct kqp_mc *mc;
};

static socklen_t kqp_addrlen(const struct sockaddr *addr)
{
	if (!addr)
		return 0;
	switch (addr->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	case AF_IB:
		return sizeof(struct sockaddr_ib);
	default:
		return 0;
	}
}

static void kqp_copy_addr(struct __kernel_sockaddr_storage *dst,
			  const struct sockaddr *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, src, kqp_addrlen(src));
}

/* A new event channel in *@channelp; 0 or -errno. */
static int kqp_event_channel_new(struct rdma_event_channel **channelp)
{
	struct rdma_event_channel *channel;
	int fd;

	fd = kqp_channel_open();
	if (fd < 0)
		return fd;
	channel = malloc(sizeof(*channel));
	if (!channel) {
		kqp_channel_close(fd);
		return -ENOMEM;
	}
	channel->fd = fd;
	*channelp = channel;
	return 0;
}

KQP_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct rdma_event_channel *channel;
	int ret;

	ret = kqp_event_channel_new(&channel);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	return channel;
}

KQP_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	if (!channel)
		return;
	kqp_channel_close(channel->fd);
	free(channel);
}

static void kqp_id_free(struct kqp_id *kid)
{
	struct kqp_mc *mc;

	if (kid->holds_default_pd)
		kqp_context_put_default_pd(kid->kctx);

	while ((mc = kid->mc_list)) {
		kid->mc_list = mc->next;
		pthread_cond_destroy(&mc->cond);
		free(mc);
	}
	pthread_cond_destroy(&kid->cond);
	pthread_mutex_destroy(&kid->mut);
	free(kid->id.route.path_rec);
	if (kid->sync)
		rdma_destroy_event_channel(kid->id.channel);
	free(kid->connect);
	free(kid->qp_init_attr);
	free(kid);
}

/*
 * A new id (no kernel id yet) on @channel, or on a channel of its own
 * for a synchronous one, in *@kidp; 0 or -errno.
 */
static int kqp_id_alloc(struct rdma_event_channel *channel, void *context,
			enum rdma_port_space ps, enum ibv_qp_type qp_type,
			struct kqp_id **kidp)
{
	struct kqp_id *kid;
	int ret;

	kid = calloc(1, sizeof(*kid));
	if (!kid)
		return -ENOMEM;
	kid->id.context = context;
	kid->id.ps = ps;
	kid->id.qp_type = qp_type;
	kid->handle = UINT32_MAX;
	pthread_mutex_init(&kid->mut, NULL);
	pthread_cond_init(&kid->cond, NULL);
	if (!channel) {
		ret = kqp_event_channel_new(&channel);
		if (ret) {
			kqp_id_free(kid);
			return ret;
		}
		kid->sync = true;
	}
	kid->id.channel = channel;
	*kidp = kid;
	return 0;
}

/*
 * rdma_create_id() with the QP type given; rdma_create_ep() uses it too.
 * 0 or -errno.
 */
int kqp_create_id_qpt(struct rdma_event_channel *channel,
		      struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qp_type)
{
	struct kqp_create_id cmd = {
		.size = sizeof(cmd),
		.port_space = ps,
		.qp_type = qp_type,
	};
	struct kqp_id *kid;
	int ret;

	if (!id)
		return -EINVAL;
	if (channel) {
		ret = kqp_is_kqp_fd(channel->fd);
		if (ret)
			return ret;
	}
	ret = kqp_id_alloc(channel, context, ps, qp_type, &kid);
	if (ret)
		return ret;
	cmd.uid = (uintptr_t)kid;
	ret = kqp_ioctl(kid->id.channel->fd, KQP_IOCTL_CREATE_ID, &cmd);
	if (ret) {
		kqp_id_free(kid);
		return ret;
	}
	kid->handle = cmd.out_id;
	*id = &kid->id;
	return 0;
}

KQP_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			      struct rdma_cm_id **id, void *context,
			      enum rdma_port_space ps)
{
	enum ibv_qp_type qp_type;

	qp_type = (ps == RDMA_PS_IPOIB || ps == RDMA_PS_UDP) ?
		  IBV_QPT_UD : IBV_QPT_RC;
	return kqp_ret(kqp_create_id_qpt(channel, id, context, ps, qp_type));
}

static int kqp_destroy_kern_id(int fd, uint32_t handle)
{
	struct kqp_destroy_id cmd = { .size = sizeof(cmd), .id = handle };
	int ret;

	ret = kqp_ioctl(fd, KQP_IOCTL_DESTROY_ID, &cmd);
	return ret ? ret : (int)cmd.out_events_reported;
}

static void kqp_complete_event(struct kqp_id *kid)
{
	pthread_mutex_lock(&kid->mut);
	kid->events_completed++;
	pthread_cond_signal(&kid->cond);
	pthread_mutex_unlock(&kid->mut);
}

static void kqp_complete_mc_event(struct kqp_mc *mc)
{
	pthread_mutex_lock(&mc->kid->mut);
	mc->events_completed++;
	pthread_cond_signal(&mc->cond);
	mc->kid->events_completed++;
	pthread_cond_signal(&mc->kid->cond);
	pthread_mutex_unlock(&mc->kid->mut);
}

KQP_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct kqp_cm_event *evt;

	if (!event)
		return kqp_err(EINVAL);
	evt = container_of(event, struct kqp_cm_event, event);
	if (evt->mc)
		kqp_complete_mc_event(evt->mc);
	else
		kqp_complete_event(evt->kid);
	free(evt);
	return 0;
}

/* rdma_destroy_id(); 0 or -errno. */
static int kqp_destroy_id(struct rdma_cm_id *id)
{
	struct kqp_id *kid;
	int reported;

	if (!id)
		return -EINVAL;
	kid = to_kid(id);
	/*
	 * A QP left on the id: librdmacm leaves it working, for the caller
	 * to ibv_destroy_qp() later (rping's server does so).  kqp's kernel
	 * QP goes with its id, so destroy it now, with the CQs made for it,
	 * but keep the struct for that call.
	 */
	if (id->qp) {
		struct kqp_lqp *qp = to_lqp(id->qp);
		int ret = kqp_qp_destroy_kern(qp);

		if (ret)
			return ret;
		qp->gone = true;
	}
	reported = kqp_destroy_kern_id(id->channel->fd, kid->handle);
	if (reported < 0)
		return reported;

	if (id->event)
		rdma_ack_cm_event(id->event);
	/* Events already handed out still point at the id. */
	pthread_mutex_lock(&kid->mut);
	while (kid->events_completed < reported)
		pthread_cond_wait(&kid->cond, &kid->mut);
	pthread_mutex_unlock(&kid->mut);

	kqp_id_free(kid);
	return 0;
}

KQP_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	return kqp_ret(kqp_destroy_id(id));
}

/*
 * Refresh what librdmacm keeps in the id from the kernel: addresses, GIDs,
 * P_Key, and the first time the id is bound, its device and port.  With
 * @paths, the route's path records too.  0 or -errno.
 */
static int kqp_query(struct kqp_id *kid, bool paths)
{
	struct kqp_query_id q = { .size = sizeof(q), .id = kid->handle };
	struct rdma_cm_id *id = &kid->id;
	struct rdma_addr *addr = &id->route.addr;
	struct ibv_sa_path_rec *recs;
	int ret, i;

	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_QUERY_ID, &q);
	if (ret)
		return ret;

	memcpy(&addr->src_storage, &q.out_src_addr, sizeof(addr->src_storage));
	memcpy(&addr->dst_storage, &q.out_dst_addr, sizeof(addr->dst_storage));
	if (q.out_device_index == KQP_NO_DEVICE)
		return 0;

	memcpy(addr->addr.ibaddr.sgid.raw, q.out_sgid, sizeof(q.out_sgid));
	memcpy(addr->addr.ibaddr.dgid.raw, q.out_dgid, sizeof(q.out_dgid));
	addr->addr.ibaddr.pkey = htobe16(q.out_pkey);
	if (!kid->kctx) {
		struct kqp_context *kctx;
		struct ibv_pd *pd = NULL;

		ret = kqp_context_for_device(q.out_device_index, &kctx);
		if (ret)
			return ret;
		/* As librdmacm: a bound id comes with the device's PD. */
		ret = kqp_context_get_default_pd(kctx, &pd);
		id->pd = pd;
		if (ret)
			return ret;
		kid->holds_default_pd = true;
		kid->kctx = kctx;
		id->verbs = &kctx->vctx.context;
		id->port_num = q.out_port_num;
	}

	if (!paths || !q.out_num_paths)
		return 0;
	recs = calloc(q.out_num_paths, sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	for (i = 0; i < q.out_num_paths; i++)
		kqp_path_rec_from_kern(&recs[i], &q.out_paths[i]);
	free(id->route.path_rec);
	id->route.path_rec = recs;
	id->route.num_paths = q.out_num_paths;
	return 0;
}

static int kqp_get_cm_event(struct rdma_event_channel *channel,
			    struct rdma_cm_event **event);

/*
 * A synchronous id waits for the event its call started and turns a
 * failed event into an error, as librdmacm's ucma_complete(): 0 or
 * -errno.
 */
static int kqp_complete(struct kqp_id *kid)
{
	struct rdma_cm_id *id = &kid->id;
	int ret;

	if (!kid->sync)
		return 0;
	if (id->event) {
		rdma_ack_cm_event(id->event);
		id->event = NULL;
	}
	ret = kqp_get_cm_event(id->channel, &id->event);
	if (ret)
		return ret;
	if (id->event->status) {
		if (id->event->event == RDMA_CM_EVENT_REJECTED)
			return -ECONNREFUSED;
		if (id->event->status < 0)
			return id->event->status;
		return -id->event->status;
	}
	return 0;
}

KQP_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct kqp_bind_addr cmd = { .size = sizeof(cmd) };
	struct kqp_id *kid = to_kid(id);
	int ret;

	if (!kqp_addrlen(addr))
		return kqp_err(EINVAL);
	cmd.id = kid->handle;
	kqp_copy_addr(&cmd.addr, addr);
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_BIND_ADDR, &cmd);
	if (ret)
		return kqp_err(-ret);
	return kqp_ret(kqp_query(kid, false));
}

KQP_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr,
				 struct sockaddr *dst_addr, int timeout_ms)
{
	struct kqp_resolve_addr cmd = { .size = sizeof(cmd) };
	struct kqp_id *kid = to_kid(id);
	socklen_t dst_len = kqp_addrlen(dst_addr);
	int ret;

	if (!dst_len || (src_addr && !kqp_addrlen(src_addr)))
		return kqp_err(EINVAL);
	cmd.id = kid->handle;
	cmd.timeout_ms = timeout_ms;
	if (src_addr)
		kqp_copy_addr(&cmd.src_addr, src_addr);
	kqp_copy_addr(&cmd.dst_addr, dst_addr);
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_RESOLVE_ADDR, &cmd);
	if (ret)
		return kqp_err(-ret);
	memcpy(&id->route.addr.dst_storage, dst_addr, dst_len);
	return kqp_ret(kqp_complete(kid));
}

KQP_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct kqp_resolve_route cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
		.timeout_ms = timeout_ms,
	};
	int ret;

	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_RESOLVE_ROUTE, &cmd);
	if (ret)
		return kqp_err(-ret);
	return kqp_ret(kqp_complete(to_kid(id)));
}

KQP_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct kqp_listen cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
		.backlog = backlog > 0 ? backlog : 0,
	};
	int ret;

	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_LISTEN, &cmd);
	if (ret)
		return kqp_err(-ret);
	return kqp_ret(kqp_query(to_kid(id), false));
}

/*
 * The state librdmacm leaves an id's QP in: it moves the QP itself where
 * kqp's kernel (rdma_cm) moves it, and a caller reads id->qp->state
 * without ibv_query_qp().
 */
static void kqp_id_qp_state(struct rdma_cm_id *id, enum ibv_qp_state state)
{
	if (id->qp)
		id->qp->state = state;
}

/*
 * librdmacm's checks: a TCP id needs a QP or a QP number, depths in
 * range.  0 or -EINVAL.
 */
static int kqp_valid_param(struct kqp_id *kid, struct rdma_conn_param *param)
{
	if (kid->id.ps != RDMA_PS_TCP)
		return 0;
	if (!kid->id.qp && !param)
		return -EINVAL;
	if (!param)
		return 0;
	if (!kid->kctx)
		return -EINVAL;
	if (param->responder_resources != RDMA_MAX_RESP_RES &&
	    param->responder_resources > kid->kctx->kdev->max_qp_rd_atom)
		return -EINVAL;
	if (param->initiator_depth != RDMA_MAX_INIT_DEPTH &&
	    param->initiator_depth > kid->kctx->kdev->max_qp_init_rd_atom)
		return -EINVAL;
	return 0;
}

/*
 * The kernel's connection parameters; private data from rdma_create_ep's
 * ai_connect comes first, then the caller's, as librdmacm sends them.
 * 0 or -EINVAL.
 */
static int kqp_conn_param(struct kqp_id *kid, struct kqp_conn_param *dst,
			  struct rdma_conn_param *src, uint8_t *buf,
			  uint32_t qp_num, uint8_t srq)
{
	size_t len = kid->connect_len;

	memset(dst, 0, sizeof(*dst));
	if (src && src->private_data && src->private_data_len)
		len += src->private_data_len;
	if (len > KQP_MAX_PRIVATE_DATA)
		return -EINVAL;
	if (kid->connect_len)
		memcpy(buf, kid->connect, kid->connect_len);
	if (len > kid->connect_len)
		memcpy(buf + kid->connect_len, src->private_data,
		       len - kid->connect_len);
	dst->private_data = (uintptr_t)buf;
	dst->private_data_len = len;
	dst->qp_num = qp_num;
	dst->srq = srq;
	dst->responder_resources = kid->responder_resources;
	dst->initiator_depth = kid->initiator_depth;
	if (src) {
		dst->flow_control = src->flow_control;
		dst->retry_count = src->retry_count;
		dst->rnr_retry_count = src->rnr_retry_count;
	} else {
		dst->retry_count = 7;
		dst->rnr_retry_count = 7;
	}
	return 0;
}

KQP_EXPORT int rdma_connect(struct rdma_cm_id *id,
			    struct rdma_conn_param *conn_param)
{
	struct kqp_connect cmd = { .size = sizeof(cmd) };
	uint8_t pdata[KQP_MAX_PRIVATE_DATA];
	struct kqp_id *kid = to_kid(id);
	uint32_t qp_num = conn_param ? conn_param->qp_num : 0;
	uint8_t srq = conn_param ? conn_param->srq : 0;
	int ret;

	ret = kqp_valid_param(kid, conn_param);
	if (ret)
		return kqp_err(-ret);
	if (!kid->kctx)
		return kqp_err(EINVAL);
	if (conn_param && conn_param->initiator_depth != RDMA_MAX_INIT_DEPTH)
		kid->initiator_depth = conn_param->initiator_depth;
	else
		kid->initiator_depth = kid->kctx->kdev->max_qp_init_rd_atom;
	if (conn_param && conn_param->responder_resources != RDMA_MAX_RESP_RES)
		kid->responder_resources = conn_param->responder_resources;
	else
		kid->responder_resources = kid->kctx->kdev->max_qp_rd_atom;
	if (id->qp) {
		qp_num = id->qp->qp_num;
		srq = !!id->qp->srq;
	}

	cmd.id = kid->handle;
	ret = kqp_conn_param(kid, &cmd.param, conn_param, pdata, qp_num, srq);
	if (ret)
		return kqp_err(-ret);
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_CONNECT, &cmd);
	if (ret)
		return kqp_err(-ret);
	kid->active = true;
	free(kid->connect);
	kid->connect = NULL;
	kid->connect_len = 0;
	return kqp_ret(kqp_complete(kid));
}

KQP_EXPORT int rdma_accept(struct rdma_cm_id *id,
			   struct rdma_conn_param *conn_param)
{
	struct kqp_accept cmd = { .size = sizeof(cmd) };
	uint8_t pdata[KQP_MAX_PRIVATE_DATA];
	struct kqp_id *kid = to_kid(id);
	uint32_t qp_num;
	uint8_t srq;
	int ret;

	if (!id->qp && !conn_param)
		return kqp_err(EINVAL);
	qp_num = id->qp ? id->qp->qp_num : conn_param->qp_num;
	srq = id->qp ? !!id->qp->srq : conn_param->srq;
	ret = kqp_valid_param(kid, conn_param);
	if (ret)
		return kqp_err(-ret);
	if (!kid->kctx)
		return kqp_err(EINVAL);
	if (!conn_param || conn_param->initiator_depth == RDMA_MAX_INIT_DEPTH) {
		if (kid->initiator_depth > kid->kctx->kdev->max_qp_init_rd_atom)
			kid->initiator_depth = kid->kctx->kdev->max_qp_init_rd_atom;
	} else {
		kid->initiator_depth = conn_param->initiator_depth;
	}
	if (!conn_param || conn_param->responder_resources == RDMA_MAX_RESP_RES) {
		if (kid->responder_resources > kid->kctx->kdev->max_qp_rd_atom)
			kid->responder_resources = kid->kctx->kdev->max_qp_rd_atom;
	} else {
		kid->responder_resources = conn_param->responder_resources;
	}

	cmd.id = kid->handle;
	cmd.uid = (uintptr_t)kid;
	ret = kqp_conn_param(kid, &cmd.param, conn_param, pdata, qp_num, srq);
	if (ret)
		return kqp_err(-ret);
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_ACCEPT, &cmd);
	if (ret) {
		if (id->qp_type != IBV_QPT_UD)
			kqp_id_qp_state(id, IBV_QPS_ERR);
		return kqp_err(-ret);
	}

	/* As librdmacm: a UD id keeps the request's event, even a sync one. */
	if (id->qp_type == IBV_QPT_UD)
		return 0;
	kqp_id_qp_state(id, IBV_QPS_RTS);
	return kqp_ret(kqp_complete(kid));
}

KQP_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			   uint8_t private_data_len)
{
	struct kqp_reject cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
	};

	if (private_data && private_data_len) {
		cmd.private_data = (uintptr_t)private_data;
		cmd.private_data_len = private_data_len;
	}
	return kqp_ret(kqp_ioctl(id->channel->fd, KQP_IOCTL_REJECT, &cmd));
}

KQP_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct kqp_notify cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
		.event = event,
	};

	return kqp_ret(kqp_ioctl(id->channel->fd, KQP_IOCTL_NOTIFY, &cmd));
}

KQP_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct kqp_id_cmd cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
	};
	int ret;

	/* librdmacm refuses an id that is not bound to a device. */
	if (!id->verbs)
		return kqp_err(EINVAL);
	/* librdmacm moves the QP first, whatever the kernel then says. */
	kqp_id_qp_state(id, id->verbs->device->transport_type ==
			    IBV_TRANSPORT_IWARP ? IBV_QPS_SQD : IBV_QPS_ERR);
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_DISCONNECT, &cmd);
	if (ret)
		return kqp_err(-ret);
	return kqp_ret(kqp_complete(to_kid(id)));
}

KQP_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct kqp_id_cmd cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
	};

	/* Only for an id whose QP the caller moves through its states. */
	if (id->qp)
		return kqp_err(EINVAL);
	return kqp_ret(kqp_ioctl(id->channel->fd, KQP_IOCTL_ESTABLISH, &cmd));
}

KQP_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			       void *optval, size_t optlen)
{
	struct kqp_set_option cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
		.level = level,
		.optname = optname,
		.optlen = optlen > UINT32_MAX ? UINT32_MAX : optlen,
		.optval = (uintptr_t)optval,
	};

	return kqp_ret(kqp_ioctl(id->channel->fd, KQP_IOCTL_SET_OPTION, &cmd));
}

KQP_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				 struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	struct kqp_init_qp_attr cmd = {
		.size = sizeof(cmd),
		.id = to_kid(id)->handle,
		.qp_state = qp_attr->qp_state,
	};
	int ret;

	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_INIT_QP_ATTR, &cmd);
	if (ret)
		return kqp_err(-ret);
	kqp_qp_attr_from_kern(qp_attr, &cmd.out_attr);
	*qp_attr_mask = cmd.out_attr_mask;
	return 0;
}

/* rdma_migrate_id(); 0 or -errno. */
static int kqp_migrate_id(struct rdma_cm_id *id,
			  struct rdma_event_channel *channel)
{
	struct kqp_migrate_id cmd = { .size = sizeof(cmd) };
	struct kqp_id *kid = to_kid(id);
	bool sync = !channel;
	int ret;

	if (kid->sync && !channel)
		return -EINVAL;
	if (channel)
		ret = kqp_is_kqp_fd(channel->fd);
	else
		ret = kqp_event_channel_new(&channel);
	if (ret)
		return ret;

	cmd.id = kid->handle;
	cmd.fd = channel->fd;
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_MIGRATE_ID, &cmd);
	if (ret) {
		if (sync)
			rdma_destroy_event_channel(channel);
		return ret;
	}

	if (kid->sync) {
		if (id->event) {
			rdma_ack_cm_event(id->event);
			id->event = NULL;
		}
		rdma_destroy_event_channel(id->channel);
	}
	pthread_mutex_lock(&kid->mut);
	kid->handle = cmd.out_id;
	kid->sync = sync;
	id->channel = channel;
	while (kid->events_completed < (int)cmd.out_events_reported)
		pthread_cond_wait(&kid->cond, &kid->mut);
	pthread_mutex_unlock(&kid->mut);
	return 0;
}

KQP_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			       struct rdma_event_channel *channel)
{
	return kqp_ret(kqp_migrate_id(id, channel));
}

/* The event's private data, copied into @evt; NULL if it has none. */
static const void *kqp_event_private_data(struct kqp_cm_event *evt,
					  const struct kqp_get_event *ge)
{
	if (!ge->out_private_data_len)
		return NULL;
	memcpy(evt->private_data, ge->out_private_data,
	       ge->out_private_data_len);
	return evt->private_data;
}

static void kqp_copy_conn_event(struct kqp_cm_event *evt,
				const struct kqp_get_event *ge)
{
	struct rdma_conn_param *dst = &evt->event.param.conn;

	dst->private_data_len = ge->out_private_data_len;
	dst->private_data = kqp_event_private_data(evt, ge);
	dst->responder_resources = ge->out_responder_resources;
	dst->initiator_depth = ge->out_initiator_depth;
	dst->flow_control = ge->out_flow_control;
	dst->retry_count = ge->out_retry_count;
	dst->rnr_retry_count = ge->out_rnr_retry_count;
	dst->srq = ge->out_srq;
	dst->qp_num = ge->out_qp_num;
}

static void kqp_copy_ud_event(struct kqp_cm_event *evt,
			      const struct kqp_get_event *ge)
{
	struct rdma_ud_param *dst = &evt->event.param.ud;

	dst->private_data_len = ge->out_private_data_len;
	dst->private_data = kqp_event_private_data(evt, ge);
	kqp_ah_attr_from_kern(&dst->ah_attr, &ge->out_ah_attr);
	dst->qp_num = ge->out_qp_num;
	dst->qkey = ge->out_qkey;
}

static void kqp_copy_event_param(struct kqp_cm_event *evt,
				 const struct kqp_get_event *ge)
{
	if (evt->kid->id.qp_type == IBV_QPT_UD)
		kqp_copy_ud_event(evt, ge);
	else
		kqp_copy_conn_event(evt, ge);
}

/*
 * The new id of a connection request, created on the listener's channel
 * (or, for a synchronous listener, on a channel of its own) before the
 * event is returned.  On failure the request is dropped: its kernel id is
 * destroyed, which the peer sees as a rejection or a timeout.  0 or
 * -errno.
 */
static int kqp_process_conn_req(struct kqp_cm_event *evt,
				const struct kqp_get_event *ge)
{
	struct kqp_id *listen = evt->kid, *kid;
	int ret;

	ret = kqp_id_alloc(listen->id.channel, listen->id.context,
			   listen->id.ps, listen->id.qp_type, &kid);
	if (ret) {
		kqp_destroy_kern_id(listen->id.channel->fd, ge->out_id);
		goto err;
	}
	kid->handle = ge->out_id;
	kid->initiator_depth = ge->out_initiator_depth;
	kid->responder_resources = ge->out_responder_resources;
	evt->event.listen_id = &listen->id;
	evt->event.id = &kid->id;

	if (listen->sync)
		ret = kqp_migrate_id(&kid->id, NULL);
	if (!ret)
		ret = kqp_query(kid, true);
	if (!ret)
		return 0;

	kqp_destroy_id(&kid->id);
err:
	kqp_complete_event(listen);
	return ret;
}

/*
 * As librdmacm: the id's QP joins the group when the join is reported,
 * unless the membership only sends.  0 or an errno.
 */
static int kqp_process_join(struct kqp_cm_event *evt)
{
	struct rdma_cm_id *id = &evt->kid->id;

	evt->mc->mgid = evt->event.param.ud.ah_attr.grh.dgid;
	evt->mc->mlid = evt->event.param.ud.ah_attr.dlid;
	if (!id->qp ||
	    evt->mc->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return 0;
	return ibv_attach_mcast(id->qp, &evt->mc->mgid, evt->mc->mlid);
}

/*
 * Find the id (and group) of the kernel's event @ge and copy what the
 * event carries; a connection request gets its new id.  False when the
 * event is to be dropped: the request's id could not be made.
 */
static bool kqp_event_from_kern(struct kqp_cm_event *evt,
				const struct kqp_get_event *ge)
{
	int ret;

	evt->event.event = ge->out_event;
	evt->event.status = ge->out_status;

	switch (ge->out_event) {
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		evt->mc = (struct kqp_mc *)(uintptr_t)ge->out_uid;
		evt->kid = evt->mc->kid;
		evt->event.id = &evt->kid->id;
		kqp_copy_ud_event(evt, ge);
		evt->event.param.ud.private_data = evt->mc->context;
		evt->event.param.ud.private_data_len = 0;
		if (ge->out_event == RDMA_CM_EVENT_MULTICAST_JOIN) {
			ret = kqp_process_join(evt);
			if (ret) {
				evt->event.status = -ret;
				evt->event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
			}
		}
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		evt->kid = (struct kqp_id *)(uintptr_t)ge->out_uid;
		kqp_copy_event_param(evt, ge);
		if (kqp_process_conn_req(evt, ge))
			return false;
		break;
	default:
		evt->kid = (struct kqp_id *)(uintptr_t)ge->out_uid;
		evt->event.id = &evt->kid->id;
		break;
	}
	return true;
}

/*
 * What an event does to its id: a resolved address or route refreshes
 * it (an error event if that fails).  False when the event is to be
 * dropped: librdmacm hides what follows a failed connect.
 */
static bool kqp_event_update_id(struct kqp_cm_event *evt,
				const struct kqp_get_event *ge)
{
	struct kqp_id *kid = evt->kid;
	int ret;

	switch (ge->out_event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = kqp_query(kid, false);
		if (ret)
			evt->event.status = ret;
		else if (!kid->id.verbs)
			evt->event.status = -ENODEV;
		if (evt->event.status)
			evt->event.event = RDMA_CM_EVENT_ADDR_ERROR;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = kqp_query(kid, true);
		if (ret) {
			evt->event.status = ret;
			evt->event.event = RDMA_CM_EVENT_ROUTE_ERROR;
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DISCONNECTED:
		if (kid->connect_error) {
			kqp_complete_event(kid);
			return false;
		}
		kqp_copy_conn_event(evt, ge);
		if (ge->out_event == RDMA_CM_EVENT_REJECTED)
			kqp_id_qp_state(&kid->id, IBV_QPS_ERR);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		kqp_copy_event_param(evt, ge);
		/*
		 * The connect response: where librdmacm moves the active
		 * side's QP to RTS (ERR if that fails), kqp's kernel did.
		 */
		if (kid->active && kid->id.qp_type != IBV_QPT_UD)
			kqp_id_qp_state(&kid->id, ge->out_event ==
					RDMA_CM_EVENT_ESTABLISHED ?
					IBV_QPS_RTS : IBV_QPS_ERR);
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		break;
	default:
		kqp_copy_event_param(evt, ge);
		break;
	}
	return true;
}

/* rdma_get_cm_event(); 0 or -errno. */
static int kqp_get_cm_event(struct rdma_event_channel *channel,
			    struct rdma_cm_event **event)
{
	struct kqp_get_event ge;
	struct kqp_cm_event *evt;
	int ret;

	if (!channel || !event)
		return -EINVAL;
	ret = kqp_is_kqp_fd(channel->fd);
	if (ret)
		return ret;
	evt = malloc(sizeof(*evt));
	if (!evt)
		return -ENOMEM;

	do {
		memset(evt, 0, sizeof(*evt));
		memset(&ge, 0, sizeof(ge));
		ge.size = sizeof(ge);
		ret = kqp_ioctl(channel->fd, KQP_IOCTL_GET_EVENT, &ge);
		if (ret) {
			free(evt);
			return ret;
		}
	} while (!kqp_event_from_kern(evt, &ge) ||
		 !kqp_event_update_id(evt, &ge));

	*event = &evt->event;
	return 0;
}

KQP_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				 struct rdma_cm_event **event)
{
	return kqp_ret(kqp_get_cm_event(channel, event));
}

KQP_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]) &&
	    names[event])
		return names[event];
	return "UNKNOWN EVENT";
}

static int kqp_join_multicast2(struct rdma_cm_id *id, struct sockaddr *addr,
			       socklen_t addrlen, uint16_t join_flags,
			       void *context)
{
	struct kqp_join_mcast cmd = { .size = sizeof(cmd) };
	struct kqp_id *kid = to_kid(id);
	struct kqp_mc *mc, **pos;
	int ret;

	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return -ENOMEM;
	mc->context = context;
	mc->kid = kid;
	mc->join_flags = join_flags;
	memcpy(&mc->addr, addr, addrlen);
	pthread_cond_init(&mc->cond, NULL);

	pthread_mutex_lock(&kid->mut);
	mc->next = kid->mc_list;
	kid->mc_list = mc;
	pthread_mutex_unlock(&kid->mut);

	cmd.id = kid->handle;
	cmd.join_flags = join_flags;
	cmd.uid = (uintptr_t)mc;
	kqp_copy_addr(&cmd.addr, addr);
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_JOIN_MCAST, &cmd);
	if (ret) {
		pthread_mutex_lock(&kid->mut);
		for (pos = &kid->mc_list; *pos != mc; pos = &(*pos)->next)
			;
		*pos = mc->next;
		pthread_mutex_unlock(&kid->mut);
		pthread_cond_destroy(&mc->cond);
		free(mc);
		return ret;
	}
	mc->handle = cmd.out_mc_id;
	return kqp_complete(kid);
}

KQP_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				      struct rdma_cm_join_mc_attr_ex *attr,
				      void *context)
{
	socklen_t addrlen;

	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return kqp_err(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS))
		return kqp_err(EINVAL);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return kqp_err(EINVAL);
	addrlen = kqp_addrlen(attr->addr);
	if (!addrlen)
		return kqp_err(EINVAL);
	return kqp_ret(kqp_join_multicast2(id, attr->addr, addrlen,
					   attr->join_flags, context));
}

KQP_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				   void *context)
{
	socklen_t addrlen = kqp_addrlen(addr);

	if (!addrlen)
		return kqp_err(EINVAL);
	return kqp_ret(kqp_join_multicast2(id, addr, addrlen,
					   RDMA_MC_JOIN_FLAG_FULLMEMBER,
					   context));
}

KQP_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	struct kqp_leave_mcast cmd = { .size = sizeof(cmd) };
	struct kqp_id *kid = to_kid(id);
	struct kqp_mc *mc, **pos;
	socklen_t addrlen = kqp_addrlen(addr);
	int ret;

	if (!addrlen)
		return kqp_err(EINVAL);
	pthread_mutex_lock(&kid->mut);
	for (pos = &kid->mc_list; *pos; pos = &(*pos)->next)
		if (!memcmp(&(*pos)->addr, addr, addrlen))
			break;
	mc = *pos;
	if (mc)
		*pos = mc->next;
	pthread_mutex_unlock(&kid->mut);
	if (!mc)
		return kqp_err(EADDRNOTAVAIL);

	/* As librdmacm: the QP leaves first; it may have left already. */
	if (id->qp && mc->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		ibv_detach_mcast(id->qp, &mc->mgid, mc->mlid);
	cmd.id = kid->handle;
	cmd.mc_id = mc->handle;
	ret = kqp_ioctl(id->channel->fd, KQP_IOCTL_LEAVE_MCAST, &cmd);
	if (!ret) {
		pthread_mutex_lock(&kid->mut);
		while (mc->events_completed < (int)cmd.out_events_reported)
			pthread_cond_wait(&mc->cond, &kid->mut);
		pthread_mutex_unlock(&kid->mut);
	}
	pthread_cond_destroy(&mc->cond);
	free(mc);
	return kqp_ret(ret);
}

KQP_EXPORT int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	struct kqp_id *kid = to_kid(listen);
	struct rdma_cm_event *event;
	int ret;

	if (!kid->sync)
		return kqp_err(EINVAL);
	if (listen->event) {
		rdma_ack_cm_event(listen->event);
		listen->event = NULL;
	}
	ret = kqp_get_cm_event(listen->channel, &event);
	if (ret)
		return kqp_err(-ret);

	if (event->event == RDMA_CM_EVENT_REJECTED) {
		ret = kqp_err(ECONNREFUSED);
		goto err;
	}
	if (event->status) {
		ret = kqp_err(-event->status);
		goto err;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		ret = kqp_err(EINVAL);
		goto err;
	}
	if (kid->qp_init_attr) {
		struct ibv_qp_init_attr attr = *kid->qp_init_attr;

		ret = rdma_create_qp(event->id, listen->pd, &attr);
		if (ret)
			goto err;
	}
	*id = event->id;
	(*id)->event = event;
	return 0;

err:
	listen->event = event;
	return ret;
}

static __be16 kqp_get_port(const struct sockaddr *addr)
{
	switch (addr->sa_family) {
	case AF_INET:
		return ((const struct sockaddr_in *)addr)->sin_port;
	case AF_INET6:
		return ((const struct sockaddr_in6 *)addr)->sin6_port;
	case AF_IB:
		return htobe16((uint16_t)be64toh(
			((const struct sockaddr_ib *)addr)->sib_sid));
	default:
		return 0;
	}
}

KQP_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return kqp_get_port(&id->route.addr.src_addr);
}

KQP_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return kqp_get_port(&id->route.addr.dst_addr);
}
