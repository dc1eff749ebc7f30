// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RDMA CM ids owned by a /dev/kqp file: the commands on them and the
 * rdma_cm event handler.
 *
 * The lifetime rules are ucma's.  An id's events queue on the file that
 * owns it.  A connection request creates the new id inside the handler,
 * bounded by the listener's backlog.  After DEVICE_REMOVAL the rdma_cm id
 * is destroyed from a work item, because rdma_cm waits for that, while the
 * handle lives on until its owner destroys it.  Destroying an id purges
 * its unreported events and the ids of its unreported connection requests.
 *
 * An id from a connection request cannot be named by any command until
 * GET_EVENT reported the request: until then it belongs to the event that
 * announces it, which must never be left pointing at an id destroyed or
 * moved under it (ctx->named).
 *
 * Lock order: ctx->mutex, then the rdma_cm handler lock, then kfile->lock.
 * The handler takes only the last two, and a QP's move_mutex to move it
 * (qp_state.c), under which nothing takes any of these.  No copy to userspace waits on a
 * page fault while any of them is held, or while an id is referenced
 * that device removal would wait for (see kqp_ucmd_respond_locked()).
 */
#include <linux/file.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_sa.h>

#include "kqp.h"
#include "cm.h"
#include "pd.h"
#include "qp.h"

/*
 * Give the rdma_cm id back: wait for the commands using it, destroy the
 * hardware of its QP (no use without its id), destroy the id.  The QP
 * object itself stays until it is destroyed.
 */
static void kqp_cm_id_close(struct kqp_cm_id *ctx)
{
	kqp_object_drain(&ctx->obj);
	mutex_lock(&ctx->mutex);
	if (ctx->qp)
		kqp_vobj_destroy_hw(&ctx->qp->vobj);
	rdma_destroy_id(ctx->cm_id);
	ctx->cm_id = NULL;
	mutex_unlock(&ctx->mutex);
}

static void kqp_cm_id_close_work(struct work_struct *work)
{
	kqp_cm_id_close(container_of(work, struct kqp_cm_id, close_work));
}

static struct kqp_cm_id *kqp_cm_id_alloc(struct kqp_file *kfile)
{
	struct kqp_cm_id *ctx;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return NULL;
	ctx->kfile = kfile;
	kref_init(&ctx->mem_ref);
	mutex_init(&ctx->mutex);
	INIT_WORK(&ctx->close_work, kqp_cm_id_close_work);
	xa_init_flags(&ctx->mc_ids, XA_FLAGS_ALLOC1);
	INIT_LIST_HEAD(&ctx->purge_list);
	return ctx;
}

static void kqp_cm_id_free(struct kref *ref)
{
	struct kqp_cm_id *ctx = container_of(ref, struct kqp_cm_id, mem_ref);

	xa_destroy(&ctx->mc_ids);
	mutex_destroy(&ctx->mutex);
	kfree_rcu(ctx, obj.rcu);
}

void kqp_cm_id_mem_put(struct kqp_cm_id *ctx)
{
	kref_put(&ctx->mem_ref, kqp_cm_id_free);
}

/*
 * The id @id of @kfile: ids share their file's table with other files, but
 * only the file that owns an id can name it, and only once the caller
 * could know it (see ctx->named).  The dispatcher resolved the table.
 */
struct kqp_cm_id *kqp_cm_id_get(struct kqp_ucmd *ucmd, u32 id)
{
	struct kqp_file *kfile = ucmd->kfile;
	struct kqp_object *obj;
	struct kqp_cm_id *ctx;

	obj = kqp_object_get(ucmd->uctx, id, KQP_OBJ_CM_ID);
	if (IS_ERR(obj))
		return ERR_CAST(obj);
	ctx = container_of(obj, struct kqp_cm_id, obj);
	if (READ_ONCE(ctx->kfile) != kfile || !READ_ONCE(ctx->named)) {
		kqp_object_put(obj);
		return ERR_PTR(-ENOENT);
	}
	return ctx;
}

void kqp_cm_id_put(struct kqp_cm_id *ctx)
{
	kqp_object_put(&ctx->obj);
}

/* Look the id up and lock it against other commands. */
struct kqp_cm_id *kqp_cm_id_lock(struct kqp_ucmd *ucmd, u32 id)
{
	struct kqp_cm_id *ctx = kqp_cm_id_get(ucmd, id);

	if (!IS_ERR(ctx))
		mutex_lock(&ctx->mutex);
	return ctx;
}

void kqp_cm_id_unlock(struct kqp_cm_id *ctx)
{
	mutex_unlock(&ctx->mutex);
	kqp_cm_id_put(ctx);
}

/*
 * What acts on an id's device needs one: EINVAL for an id not bound to a
 * device yet, as rdma_cm says of it.  Under ctx->mutex.
 */
int kqp_cm_id_check_bound(struct kqp_cm_id *ctx)
{
	return ctx->cm_id->device ? 0 : -EINVAL;
}

/*
 * Destroy an id the caller claimed, with its QP and the ids of its
 * unreported connection requests; returns how many events were reported
 * for it.
 */
static int kqp_cm_id_destroy_reported(struct kqp_ucontext *uctx,
				      struct kqp_cm_id *ctx)
{
	struct kqp_cm_id *child, *tmp;
	struct kqp_qp *qp;
	LIST_HEAD(children);
	bool claimed;
	int reported;

	/*
	 * The claim stops the handler from queueing close_work (it checks the
	 * table under its lock); the work may still be queued or running.
	 * Either it consumed the table's reference, or we close the id now.
	 */
	cancel_work_sync(&ctx->close_work);
	if (refcount_read(&ctx->obj.users))
		kqp_cm_id_close(ctx);

	/* The QP goes with its id; someone destroying it already finishes. */
	mutex_lock(&ctx->mutex);
	qp = ctx->qp;
	claimed = qp && kqp_object_claim(uctx, &qp->vobj.obj);
	mutex_unlock(&ctx->mutex);
	if (claimed)
		kqp_qp_destroy(uctx, &qp->vobj.obj);

	/* rdma_cm delivers nothing more for this id now. */
	reported = kqp_events_purge(ctx, &children);
	list_for_each_entry_safe(child, tmp, &children, purge_list) {
		list_del(&child->purge_list);
		kqp_cm_id_destroy_reported(uctx, child);
	}
	kqp_mcast_free_all(ctx);
	kqp_object_release_id(uctx, &ctx->obj);
	kqp_cm_id_mem_put(ctx);
	return reported;
}

void kqp_cm_id_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	kqp_cm_id_destroy_reported(uctx,
				   container_of(obj, struct kqp_cm_id, obj));
}

/*
 * A connection request on a listener: the new rdma_cm id becomes a kqp id
 * right here, in the listener's file.  Returning an error makes rdma_cm
 * destroy the new id.  ib_cm then rejects the request (consumer-defined
 * reason), except for -ENOMEM, where it stays silent so the peer retries:
 * a full backlog refuses at once, running out of memory does not.  (ucma
 * answers -ENOMEM for a full backlog, so its peers retry until they time
 * out.)
 */
static int kqp_cm_conn_request(struct kqp_cm_id *listen,
			       struct rdma_cm_id *cm_id,
			       struct rdma_cm_event *event)
{
	struct kqp_file *kfile = listen->kfile;
	struct kqp_ucontext *uctx = kfile->uctx;
	struct kqp_cm_id *ctx;
	struct kqp_event *ev;

	if (atomic_dec_if_positive(&listen->backlog) < 0)
		return -ECONNREFUSED;

	ctx = kqp_cm_id_alloc(kfile);
	if (!ctx)
		goto err_backlog;
	if (kqp_object_reserve(uctx, &ctx->obj, KQP_OBJ_CM_ID))
		goto err_free;
	ev = kqp_event_alloc(listen, cm_id, event);
	if (!ev)
		goto err_release;
	ev->child = ctx;
	ctx->cm_id = cm_id;
	ctx->answer = KQP_ANSWER_REQUEST;
	cm_id->context = ctx;

	mutex_lock(&kfile->lock);
	kqp_object_publish(uctx, &ctx->obj);
	list_add_tail(&ev->list, &kfile->events);
	mutex_unlock(&kfile->lock);
	wake_up_interruptible(&kfile->poll_wait);
	return 0;

err_release:
	kqp_object_release_id(uctx, &ctx->obj);
err_free:
	kqp_cm_id_mem_put(ctx);
err_backlog:
	atomic_inc(&listen->backlog);
	return -ENOMEM;
}

/*
 * Set or clear the id's QP, with @ctx->mutex held: under the handler's
 * lock too, so that the handler, which cannot take @ctx->mutex (it is
 * taken before the handler's lock), finds the QP alive or none.  An id
 * whose rdma_cm id went runs no handler.
 */
void kqp_cm_id_set_qp(struct kqp_cm_id *ctx, struct kqp_qp *qp)
{
	lockdep_assert_held(&ctx->mutex);
	if (ctx->cm_id)
		rdma_lock_handler(ctx->cm_id);
	ctx->qp = qp;
	if (ctx->cm_id)
		rdma_unlock_handler(ctx->cm_id);
}

/*
 * The id's RC QP, which kqp moves through its states as rdma_cm moves
 * the QPs it holds (kqp_qp_cm_move()), or NULL.  With @ctx->mutex or the
 * handler's lock held.  A UD QP is in RTS from its creation.
 */
static struct kqp_qp *kqp_cm_id_rc_qp(struct kqp_cm_id *ctx)
{
	return ctx->qp && ctx->qp->qp_type == IB_QPT_RC ? ctx->qp : NULL;
}

/*
 * NOTIFY waits here for the event that follows it (see
 * kqp_notify_ioctl()).  The bound is for a device that never answers;
 * ib_cm's worker normally runs within milliseconds.
 */
static DECLARE_WAIT_QUEUE_HEAD(kqp_notify_wait);
#define KQP_NOTIFY_WAIT_MS 5000

static int __kqp_cm_event_handler(struct rdma_cm_id *cm_id,
				  struct rdma_cm_event *event)
{
	struct kqp_cm_id *ctx = cm_id->context;
	struct kqp_file *kfile = ctx->kfile;
	struct kqp_event *ev;

	if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return kqp_cm_conn_request(ctx, cm_id, event);
	if (event->event == RDMA_CM_EVENT_ADDR_RESOLVED) {
		/* Pairs with the acquire in kqp_resolve_route_ioctl(). */
		smp_store_release(&ctx->addr_resolved, true);
	}
	kqp_qp_cm_event(kqp_cm_id_rc_qp(ctx), cm_id, event);
	/* Without a QP, the active side answers a REP: ESTABLISH or REJECT. */
	if (event->event == RDMA_CM_EVENT_CONNECT_RESPONSE)
		ctx->answer = KQP_ANSWER_RESPONSE;

	/*
	 * An id from a connection request is not ready until it is accepted;
	 * until then nobody could tell which id an event is for.  Such events
	 * (the peer giving up, say) only make the accept fail later.
	 */
	if (ctx->ready) {
		ev = kqp_event_alloc(ctx, cm_id, event);
		if (ev)
			kqp_event_queue(kfile, ev);
	}

	if (event->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
		struct xarray *objects = &kfile->uctx->objects;

		ctx->removed = true;
		xa_lock(objects);
		if (xa_load(objects, ctx->obj.id) == ctx)
			queue_work(system_unbound_wq, &ctx->close_work);
		xa_unlock(objects);
	}

	/* wq_has_sleeper()'s barrier pairs with the waiter's, in wait_event. */
	WRITE_ONCE(ctx->cm_events, ctx->cm_events + 1);
	if (wq_has_sleeper(&kqp_notify_wait))
		wake_up_all(&kqp_notify_wait);
	return 0;
}

/*
 * rdma_cm calls this from its own workers: what is allocated here for a
 * table (events, the ids of connection requests) is charged to the memory
 * cgroup of the process that owns the table, not to the worker's.
 */
static int kqp_cm_event_handler(struct rdma_cm_id *cm_id,
				struct rdma_cm_event *event)
{
	struct kqp_cm_id *ctx = cm_id->context;
	struct mem_cgroup *old;
	int ret;

	old = set_active_memcg(ctx->kfile->uctx->memcg);
	ret = __kqp_cm_event_handler(cm_id, event);
	set_active_memcg(old);
	return ret;
}

/*
 * Report an event rdma_cm does not raise itself (ROUTE_RESOLVED after a
 * route the caller gave), as if it had; but nothing after DEVICE_REMOVAL,
 * which rdma_cm says is the last.  Under ctx->mutex.
 */
void kqp_cm_id_report(struct kqp_cm_id *ctx, enum rdma_cm_event_type type)
{
	struct rdma_cm_event event = { .event = type };

	rdma_lock_handler(ctx->cm_id);
	if (!ctx->removed)
		kqp_cm_event_handler(ctx->cm_id, &event);
	rdma_unlock_handler(ctx->cm_id);
}

static int kqp_port_space(u32 ps, u32 qp_type, enum ib_qp_type *qpt)
{
	switch (ps) {
	case KQP_PS_TCP:
		if (qp_type != KQP_QPT_RC)
			return -EINVAL;
		break;
	case KQP_PS_UDP:
	case KQP_PS_IPOIB:
		if (qp_type != KQP_QPT_UD)
			return -EINVAL;
		break;
	case KQP_PS_IB:
		if (qp_type != KQP_QPT_RC && qp_type != KQP_QPT_UD)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	*qpt = qp_type == KQP_QPT_RC ? IB_QPT_RC : IB_QPT_UD;
	return 0;
}

int kqp_create_id_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_id *cmd = ucmd->cmd;
	struct kqp_file *kfile = ucmd->kfile;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct rdma_cm_id *cm_id;
	struct kqp_cm_id *ctx;
	enum ib_qp_type qpt;
	int ret;

	ret = kqp_port_space(cmd->port_space, cmd->qp_type, &qpt);
	if (ret)
		return ret;

	ctx = kqp_cm_id_alloc(kfile);
	if (!ctx)
		return -ENOMEM;
	ctx->uid = cmd->uid;
	ctx->ready = true;
	ctx->named = true;
	ret = kqp_object_reserve(uctx, &ctx->obj, KQP_OBJ_CM_ID);
	if (ret)
		goto err_free;

	/* In the caller's network namespace, accounted to the caller. */
	cm_id = rdma_create_user_id(kqp_cm_event_handler, ctx,
				    cmd->port_space, qpt);
	if (IS_ERR(cm_id)) {
		ret = PTR_ERR(cm_id);
		goto err_release;
	}
	ctx->cm_id = cm_id;

	/*
	 * A new id is bound to no device, so nothing waits for it while the
	 * copy does; it is published once the caller has its handle.
	 */
	cmd->out_id = ctx->obj.id;
	ret = kqp_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret)
		goto err_destroy;
	kqp_object_publish(uctx, &ctx->obj);
	return 0;

err_destroy:
	rdma_destroy_id(cm_id);
err_release:
	kqp_object_release_id(uctx, &ctx->obj);
err_free:
	kqp_cm_id_mem_put(ctx);
	return ret;
}

int kqp_destroy_id_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_destroy_id *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_cm_id *ctx;
	struct kqp_object *obj;

	/* Claimed under the table's lock, and only by the owning file. */
	xa_lock(&uctx->objects);
	obj = xa_load(&uctx->objects, cmd->id);
	if (!obj || obj->type != KQP_OBJ_CM_ID ||
	    container_of(obj, struct kqp_cm_id, obj)->kfile != ucmd->kfile ||
	    !READ_ONCE(container_of(obj, struct kqp_cm_id, obj)->named) ||
	    __xa_cmpxchg(&uctx->objects, cmd->id, obj, XA_ZERO_ENTRY,
			 GFP_KERNEL) != obj)
		obj = NULL;
	xa_unlock(&uctx->objects);
	if (!obj)
		return -ENOENT;
	ctx = container_of(obj, struct kqp_cm_id, obj);
	cmd->out_events_reported = kqp_cm_id_destroy_reported(uctx, ctx);
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/* The size of a sockaddr of a family rdma_cm knows, or 0. */
static size_t kqp_addr_size(const struct __kernel_sockaddr_storage *addr)
{
	return rdma_addr_size_kss((struct __kernel_sockaddr_storage *)addr);
}

int kqp_bind_addr_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_bind_addr *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	int ret;

	if (!kqp_addr_size(&cmd->addr))
		return -EINVAL;
	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = rdma_bind_addr(ctx->cm_id, (struct sockaddr *)&cmd->addr);
	kqp_cm_id_unlock(ctx);
	return ret;
}

int kqp_resolve_addr_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_resolve_addr *cmd = ucmd->cmd;
	struct sockaddr *src = NULL;
	struct kqp_cm_id *ctx;
	int ret;

	if (cmd->src_addr.ss_family) {
		if (!kqp_addr_size(&cmd->src_addr))
			return -EINVAL;
		src = (struct sockaddr *)&cmd->src_addr;
	}
	if (!kqp_addr_size(&cmd->dst_addr))
		return -EINVAL;
	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = rdma_resolve_addr(ctx->cm_id, src,
				(struct sockaddr *)&cmd->dst_addr,
				cmd->timeout_ms);
	kqp_cm_id_unlock(ctx);
	return ret;
}

/*
 * rdma_cm's address handler marks the id ADDR_RESOLVED before it looks
 * for the id's device, and rdma_resolve_route() takes the id in that
 * state without the handler's lock, then uses the device: NULL, for an id
 * that was not bound to one (ucma's RESOLVE_ROUTE has the same hole).  An
 * id is taken only once the handler has reported ADDR_RESOLVED, which it
 * does after it found the device; before that, EINVAL, as rdma_cm says of
 * an id whose address is not resolved yet.
 */
int kqp_resolve_route_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_resolve_route *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	int ret;

	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = -EINVAL;
	/*
	 * Pairs with the release in __kqp_cm_event_handler(): the handler
	 * found the id's device before it said so.
	 */
	if (smp_load_acquire(&ctx->addr_resolved))
		ret = rdma_resolve_route(ctx->cm_id, cmd->timeout_ms);
	kqp_cm_id_unlock(ctx);
	return ret;
}

static void kqp_path_to_user(struct kqp_path_rec *dst, struct sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = htons(ntohl(sa_path_get_dlid(src)));
	dst->slid = htons(ntohl(sa_path_get_slid(src)));
	dst->raw_traffic = sa_path_get_raw_traffic(src);
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

int kqp_query_id_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query_id *cmd = ucmd->cmd;
	struct rdma_cm_id *cm_id;
	union ib_gid sgid, dgid;
	struct kqp_cm_id *ctx;
	u32 id = cmd->id;
	int i, n;

	ctx = kqp_cm_id_lock(ucmd, id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	cm_id = ctx->cm_id;

	memset(cmd, 0, sizeof(*cmd));
	cmd->id = id;
	cmd->out_device_index = KQP_NO_DEVICE;
	memcpy(&cmd->out_src_addr, &cm_id->route.addr.src_addr,
	       sizeof(cmd->out_src_addr));
	memcpy(&cmd->out_dst_addr, &cm_id->route.addr.dst_addr,
	       sizeof(cmd->out_dst_addr));
	if (cm_id->device) {
		cmd->out_device_index = cm_id->device->index;
		cmd->out_node_guid = (__force u64)cm_id->device->node_guid;
		cmd->out_port_num = cm_id->port_num;
		cmd->out_pkey = ib_addr_get_pkey(&cm_id->route.addr.dev_addr);
		rdma_read_gids(cm_id, &sgid, &dgid);
		memcpy(cmd->out_sgid, sgid.raw, sizeof(cmd->out_sgid));
		memcpy(cmd->out_dgid, dgid.raw, sizeof(cmd->out_dgid));
		n = min_t(int, cm_id->route.num_pri_alt_paths, KQP_MAX_PATHS);
		for (i = 0; i < n; i++)
			kqp_path_to_user(&cmd->out_paths[i],
					 &cm_id->route.path_rec[i]);
		cmd->out_num_paths = n;
	}
	kqp_cm_id_unlock(ctx);

	cmd->size = ucmd->user_size;
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

int kqp_listen_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_listen *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	int backlog, ret;

	backlog = cmd->backlog && cmd->backlog <= kqp_max_backlog ?
		  cmd->backlog : kqp_max_backlog;
	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	/*
	 * An id listens once (rdma_listen() says EINVAL after that, as to
	 * ucma); its backlog, with requests outstanding against it, stays.
	 */
	if (ctx->listening) {
		ret = -EINVAL;
		goto out;
	}
	/* No request can arrive before rdma_listen(), nor if it fails. */
	atomic_set(&ctx->backlog, backlog);
	ret = rdma_listen(ctx->cm_id, backlog);
	if (ret)
		atomic_set(&ctx->backlog, 0);
	else
		ctx->listening = true;
out:
	kqp_cm_id_unlock(ctx);
	return ret;
}

/*
 * The most private data a caller may pass: rdma_cm's length is a u8.
 * KQP_MAX_PRIVATE_DATA, one more, sizes what events report and the
 * buffers here.
 */
#define KQP_CM_PDATA_MAX U8_MAX

/*
 * @buf has room for KQP_MAX_PRIVATE_DATA bytes.  @src->__reserved was
 * checked by the dispatcher (kqp/cmds.h).
 */
static int kqp_conn_param_from_user(struct rdma_conn_param *dst,
				    const struct kqp_conn_param *src, void *buf)
{
	if (src->private_data_len > KQP_CM_PDATA_MAX)
		return -EINVAL;

	memset(dst, 0, sizeof(*dst));
	if (src->private_data_len) {
		if (copy_from_user(buf, u64_to_user_ptr(src->private_data),
				   src->private_data_len))
			return -EFAULT;
		dst->private_data = buf;
		dst->private_data_len = src->private_data_len;
	}
	dst->responder_resources = src->responder_resources;
	dst->initiator_depth = src->initiator_depth;
	dst->flow_control = src->flow_control;
	dst->retry_count = src->retry_count;
	dst->rnr_retry_count = src->rnr_retry_count;
	dst->srq = src->srq;
	dst->qp_num = src->qp_num & 0xffffff;
	dst->qkey = src->qkey;
	return 0;
}

/*
 * CONNECT and ACCEPT: the caller's parameters, then the id, locked, with
 * the number of its QP if it has one.  @pdata has room for
 * KQP_MAX_PRIVATE_DATA bytes.
 */
static struct kqp_cm_id *kqp_conn_lock(struct kqp_ucmd *ucmd, u32 id,
				       const struct kqp_conn_param *uparam,
				       struct rdma_conn_param *param,
				       void *pdata)
{
	struct kqp_cm_id *ctx;
	int ret;

	ret = kqp_conn_param_from_user(param, uparam, pdata);
	if (ret)
		return ERR_PTR(ret);
	ctx = kqp_cm_id_lock(ucmd, id);
	/* The id's QP is not rdma_cm's (see core.c): name it. */
	if (!IS_ERR(ctx) && ctx->qp) {
		param->qp_num = ctx->qp->qp_num;
		param->srq = !!ctx->qp->srq;
	}
	return ctx;
}

int kqp_connect_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_connect *cmd = ucmd->cmd;
	struct rdma_conn_param param;
	u8 pdata[KQP_MAX_PRIVATE_DATA];
	struct kqp_cm_id *ctx;
	int ret;

	ctx = kqp_conn_lock(ucmd, cmd->id, &cmd->param, &param, pdata);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	if (ctx->qp)
		kqp_qp_peer_rnr(ctx->qp, ctx->cm_id, param.rnr_retry_count);
	/*
	 * The QP waits in INIT for the REP (IB CM) or for iWARP's CM to move
	 * it, as librdmacm's QPs do.
	 */
	ret = rdma_connect(ctx->cm_id, &param);
	kqp_cm_id_unlock(ctx);
	return ret;
}

/* How an owner answers its id (kqp_cm_answer()). */
enum kqp_cm_how {
	KQP_CM_ACCEPT,		/* a request: @param, then @uid */
	KQP_CM_ESTABLISH,	/* a response */
	KQP_CM_REJECT,		/* either: @pdata */
};

/*
 * What the id waits for its owner to answer (ctx->answer), answered once,
 * under the handler's lock, so that the answer, and an accepted id's new
 * uid and readiness, are ordered with the events that follow.  Answering
 * anything else, or nothing, is EINVAL: ib_cm would also send a REJ from
 * an id whose own REQ (active side, before any answer) or REP (passive
 * side, after ACCEPT) still waits for a reply, and leave that MAD
 * retrying.  The listener then sees the REQ again as a new request, and
 * the MAD holds the ib_cm id for 16 response timeouts (about 75 s), so
 * destroying the id, or closing the file, sleeps that long.
 * rdma_accept() sends such a REJ when it fails.  ucma takes all of
 * these.  With the id locked (kqp_cm_id_lock()).
 */
static int kqp_cm_answer(struct kqp_cm_id *ctx, enum kqp_cm_how how,
			 struct rdma_conn_param *param, u64 uid,
			 const void *pdata, u8 pdata_len)
{
	int ret = -EINVAL;

	rdma_lock_handler(ctx->cm_id);
	switch (how) {
	case KQP_CM_ACCEPT:
		if (ctx->answer == KQP_ANSWER_REQUEST)
			ret = kqp_qp_cm_accept(kqp_cm_id_rc_qp(ctx),
					       ctx->cm_id, param);
		if (!ret) {
			ctx->uid = uid;
			ctx->ready = true;
		}
		break;
	case KQP_CM_ESTABLISH:
		/* A QP made since CONNECT_RESPONSE moves now. */
		if (ctx->answer == KQP_ANSWER_RESPONSE)
			ret = kqp_qp_cm_accept(kqp_cm_id_rc_qp(ctx),
					       ctx->cm_id, NULL);
		break;
	case KQP_CM_REJECT:
		if (ctx->answer != KQP_ANSWER_NONE)
			ret = rdma_reject(ctx->cm_id, pdata_len ? pdata : NULL,
					  pdata_len,
					  IB_CM_REJ_CONSUMER_DEFINED);
		break;
	}
	if (!ret)
		ctx->answer = KQP_ANSWER_NONE;
	rdma_unlock_handler(ctx->cm_id);
	return ret;
}

int kqp_accept_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_accept *cmd = ucmd->cmd;
	struct rdma_conn_param param;
	u8 pdata[KQP_MAX_PRIVATE_DATA];
	struct kqp_cm_id *ctx;
	int ret;

	ctx = kqp_conn_lock(ucmd, cmd->id, &cmd->param, &param, pdata);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	if (ctx->qp)
		kqp_qp_peer_rnr(ctx->qp, ctx->cm_id, param.rnr_retry_count);
	ret = kqp_cm_answer(ctx, KQP_CM_ACCEPT, &param, cmd->uid, NULL, 0);
	kqp_cm_id_unlock(ctx);
	return ret;
}

int kqp_reject_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_reject *cmd = ucmd->cmd;
	u8 pdata[KQP_MAX_PRIVATE_DATA];
	struct kqp_cm_id *ctx;
	int ret;

	if (cmd->private_data_len > KQP_CM_PDATA_MAX)
		return -EINVAL;
	if (cmd->private_data_len &&
	    copy_from_user(pdata, u64_to_user_ptr(cmd->private_data),
			   cmd->private_data_len))
		return -EFAULT;
	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = kqp_cm_answer(ctx, KQP_CM_REJECT, NULL, 0, pdata,
			    cmd->private_data_len);
	kqp_cm_id_unlock(ctx);
	return ret;
}

int kqp_disconnect_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_id_cmd *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	int ret;

	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	/*
	 * To ERR first on a device that uses the IB CM (iWARP's CM moves
	 * it itself), as librdmacm's rdma_disconnect() and rdma_cm's do;
	 * like librdmacm's, whether or not the id was ever connected.
	 */
	ret = 0;
	if (kqp_cm_id_rc_qp(ctx) && ctx->cm_id->device &&
	    rdma_cap_ib_cm(ctx->cm_id->device, ctx->cm_id->port_num))
		ret = kqp_qp_cm_move(ctx->qp, ctx->cm_id, IB_QPS_ERR, NULL);
	if (!ret)
		ret = rdma_disconnect(ctx->cm_id);
	kqp_cm_id_unlock(ctx);
	return ret;
}

/*
 * The active side of a connection whose QP the caller manages got
 * CONNECT_RESPONSE; after moving its QP to RTS it completes the handshake
 * (the RTU), as librdmacm's rdma_establish() does through ucma's accept.
 */
int kqp_establish_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_id_cmd *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	int ret;

	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = kqp_cm_answer(ctx, KQP_CM_ESTABLISH, NULL, 0, NULL, 0);
	kqp_cm_id_unlock(ctx);
	return ret;
}

int kqp_init_qp_attr_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_init_qp_attr *cmd = ucmd->cmd;
	struct ib_qp_attr attr = {};
	struct kqp_cm_id *ctx;
	int mask = 0, ret;

	if (cmd->qp_state > IB_QPS_ERR)
		return -EINVAL;
	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = kqp_cm_id_check_bound(ctx);
	if (ret)
		goto out;
	attr.qp_state = cmd->qp_state;
	ret = rdma_init_qp_attr(ctx->cm_id, &attr, &mask);
	if (ret)
		goto out;
	cmd->out_attr_mask = mask;
	kqp_qp_attr_to_user(ctx->cm_id->device, &cmd->out_attr, &attr);
out:
	kqp_cm_id_unlock(ctx);
	return ret ? ret : kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

int kqp_notify_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_notify *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	int ret;

	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = kqp_cm_id_check_bound(ctx);
	if (!ret) {
		struct rdma_cm_id *cm_id = ctx->cm_id;
		unsigned int seen = READ_ONCE(ctx->cm_events);

		ret = rdma_notify(cm_id, (enum ib_event_type)cmd->event);
		/*
		 * ib_cm makes the connection ESTABLISHED at once, but cancels
		 * the retries of the REP that waited for its RTU only later,
		 * from its workqueue, just before it reports ESTABLISHED.  A
		 * DISCONNECT or destroy in between leaves the REP retrying,
		 * and the destroy then sleeps until its retries run out (16
		 * response timeouts, over a minute).  So wait, holding the id
		 * against other commands (a destroy drains them first), for
		 * that event or whatever came instead.  Not killable: a
		 * process killed here would destroy the id at once.  What
		 * kqp cannot close: a REJ or DREQ from the peer handled in
		 * the same window also leaves the REP retrying (ib_cm cancels
		 * only in cm_establish_handler(); ucma's users share this).
		 */
		if (!ret && cmd->event == IB_EVENT_COMM_EST &&
		    rdma_cap_ib_cm(cm_id->device, cm_id->port_num))
			wait_event_timeout(kqp_notify_wait,
					   READ_ONCE(ctx->cm_events) != seen,
					   msecs_to_jiffies(KQP_NOTIFY_WAIT_MS));
	}
	kqp_cm_id_unlock(ctx);
	return ret;
}
