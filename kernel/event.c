// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The per-file event queue: filled by the rdma_cm event handler, drained
 * by KQP_IOCTL_GET_EVENT, purged when an id or membership goes away, and
 * moved with an id to another file by KQP_IOCTL_MIGRATE_ID.
 *
 * The handler takes kfile->lock, so nobody holds that lock across anything
 * that can wait on userspace: GET_EVENT copies the event out with page
 * faults off, and when that fails it lets go, faults the caller's memory
 * in, and starts again.  A copy that a userfaultfd or FUSE page makes
 * last for ever stalls only the caller.
 */
#include <linux/file.h>
#include <linux/pagemap.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"
#include "cm.h"
#include "pd.h"

/* The event GET_EVENT will report for rdma_cm's @event on @ctx. */
struct kqp_event *kqp_event_alloc(struct kqp_cm_id *ctx,
				  struct rdma_cm_id *cm_id,
				  struct rdma_cm_event *event)
{
	struct kqp_get_event *resp;
	struct kqp_event *ev;
	const void *pdata;
	u8 plen;

	ev = kzalloc(sizeof(*ev), GFP_KERNEL_ACCOUNT);
	if (!ev)
		return NULL;
	ev->ctx = ctx;
	resp = &ev->resp;
	resp->out_event = event->event;
	resp->out_status = event->status;

	switch (event->event) {
	case RDMA_CM_EVENT_MULTICAST_JOIN:
	case RDMA_CM_EVENT_MULTICAST_ERROR:
		/* rdma_cm hands back the context given to join. */
		ev->mc = (struct kqp_mcast *)event->param.ud.private_data;
		resp->out_uid = ev->mc->uid;
		resp->out_is_ud = 1;
		resp->out_qp_num = event->param.ud.qp_num;
		resp->out_qkey = event->param.ud.qkey;
		kqp_ah_attr_to_user(cm_id->device, &resp->out_ah_attr,
				    &event->param.ud.ah_attr);
		return ev;
	default:
		break;
	}

	resp->out_uid = ctx->uid;
	if (cm_id->qp_type == IB_QPT_UD) {
		resp->out_is_ud = 1;
		resp->out_qp_num = event->param.ud.qp_num;
		resp->out_qkey = event->param.ud.qkey;
		if (cm_id->device)
			kqp_ah_attr_to_user(cm_id->device, &resp->out_ah_attr,
					    &event->param.ud.ah_attr);
		pdata = event->param.ud.private_data;
		plen = event->param.ud.private_data_len;
	} else {
		resp->out_qp_num = event->param.conn.qp_num;
		resp->out_responder_resources =
			event->param.conn.responder_resources;
		resp->out_initiator_depth = event->param.conn.initiator_depth;
		resp->out_flow_control = event->param.conn.flow_control;
		resp->out_retry_count = event->param.conn.retry_count;
		resp->out_rnr_retry_count = event->param.conn.rnr_retry_count;
		resp->out_srq = event->param.conn.srq;
		pdata = event->param.conn.private_data;
		plen = event->param.conn.private_data_len;
	}
	if (pdata && plen) {
		/* u8 length: always fits the 256-byte buffer. */
		memcpy(resp->out_private_data, pdata, plen);
		resp->out_private_data_len = plen;
	}
	return ev;
}

void kqp_event_queue(struct kqp_file *kfile, struct kqp_event *ev)
{
	mutex_lock(&kfile->lock);
	list_add_tail(&ev->list, &kfile->events);
	mutex_unlock(&kfile->lock);
	wake_up_interruptible(&kfile->poll_wait);
}

__poll_t kqp_events_poll(struct kqp_file *kfile, struct file *filp,
			 struct poll_table_struct *wait)
{
	poll_wait(filp, &kfile->poll_wait, wait);
	return list_empty_careful(&kfile->events) ? 0 : EPOLLIN | EPOLLRDNORM;
}

/*
 * Handles are filled in only now: an id keeps its events when it migrates
 * to another file, where its handle is different.
 */
static void kqp_event_fill_ids(struct kqp_event *ev)
{
	struct kqp_get_event *resp = &ev->resp;

	resp->out_id = ev->ctx->obj.id;
	resp->out_listen_id = 0;
	resp->out_mc_id = 0;
	if (ev->child) {
		resp->out_listen_id = ev->ctx->obj.id;
		resp->out_id = ev->child->obj.id;
	}
	if (ev->mc)
		resp->out_mc_id = ev->mc->id;
}

int kqp_get_event_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_file *kfile = ucmd->kfile;
	struct kqp_get_event *cmd = ucmd->cmd;
	struct kqp_event *ev;
	int ret;

	for (;;) {
		if (mutex_lock_interruptible(&kfile->lock))
			return -ERESTARTSYS;
		if (list_empty(&kfile->events)) {
			mutex_unlock(&kfile->lock);
			if (kfile->filp->f_flags & O_NONBLOCK)
				return -EAGAIN;
			if (wait_event_interruptible(kfile->poll_wait,
						     !list_empty_careful(&kfile->events)))
				return -ERESTARTSYS;
			continue;
		}
		ev = list_first_entry(&kfile->events, struct kqp_event, list);
		kqp_event_fill_ids(ev);
		ev->resp.size = cmd->size;
		ev->resp.flags = 0;
		memcpy(cmd, &ev->resp, sizeof(*cmd));
		/* Only an event that reached the caller leaves the queue. */
		ret = kqp_ucmd_respond_locked(ucmd, sizeof(*cmd));
		if (!ret)
			break;
		mutex_unlock(&kfile->lock);
		/* The event may be another by then: start again. */
		ret = kqp_ucmd_fault_in(ucmd, sizeof(*cmd));
		if (ret)
			return ret;
	}
	list_del(&ev->list);
	ev->ctx->events_reported++;
	if (ev->mc)
		ev->mc->events_reported++;
	if (ev->child) {
		atomic_inc(&ev->ctx->backlog);
		/* The caller knows the new id now. */
		WRITE_ONCE(ev->child->named, true);
	}
	mutex_unlock(&kfile->lock);
	kfree(ev);
	return 0;
}

/**
 * kqp_events_purge - drop the unreported events of an id being destroyed
 * @ctx: the id; its rdma_cm id is destroyed, so no new event can come
 * @children: where to put the ids of unreported connection requests, which
 *	the caller destroys; each is already claimed
 *
 * Also drops the connection request that announces @ctx itself, if it is
 * a new id nobody was told about yet, and gives its listener the backlog
 * slot back.  Returns how many events were reported for @ctx.
 */
int kqp_events_purge(struct kqp_cm_id *ctx, struct list_head *children)
{
	struct kqp_file *kfile = ctx->kfile;
	struct kqp_event *ev, *tmp;
	LIST_HEAD(dead);
	int reported;

	mutex_lock(&kfile->lock);
	list_for_each_entry_safe(ev, tmp, &kfile->events, list) {
		if (ev->child == ctx) {
			atomic_inc(&ev->ctx->backlog);
			list_move_tail(&ev->list, &dead);
			continue;
		}
		if (ev->ctx != ctx)
			continue;
		/*
		 * Whoever claims the new id destroys it; if that is not us,
		 * someone destroying it by its handle is waiting for this
		 * lock to purge this very event, and finds it gone.
		 */
		if (ev->child && kqp_object_claim(kfile->uctx, &ev->child->obj))
			list_add_tail(&ev->child->purge_list, children);
		list_move_tail(&ev->list, &dead);
	}
	reported = ctx->events_reported;
	mutex_unlock(&kfile->lock);

	list_for_each_entry_safe(ev, tmp, &dead, list)
		kfree(ev);
	return reported;
}

/*
 * Drop the unreported events of a membership that is being left.  The
 * caller holds the id's handler lock, so that a join completion in the
 * handler queued its event first.
 */
void kqp_events_purge_mcast(struct kqp_mcast *mc)
{
	struct kqp_file *kfile = mc->ctx->kfile;
	struct kqp_event *ev, *tmp;
	LIST_HEAD(dead);

	mutex_lock(&kfile->lock);
	list_for_each_entry_safe(ev, tmp, &kfile->events, list)
		if (ev->mc == mc)
			list_move_tail(&ev->list, &dead);
	mutex_unlock(&kfile->lock);

	list_for_each_entry_safe(ev, tmp, &dead, list)
		kfree(ev);
}

/* The file is gone and so are its ids: nothing may be left. */
void kqp_events_free_all(struct kqp_file *kfile)
{
	struct kqp_event *ev, *tmp;

	WARN_ON(!list_empty(&kfile->events));
	list_for_each_entry_safe(ev, tmp, &kfile->events, list)
		kfree(ev);
}

/* Two files' event locks, by address. */
static void kqp_lock_two(struct kqp_file *a, struct kqp_file *b)
{
	if (a > b)
		swap(a, b);
	mutex_lock(&a->lock);
	mutex_lock_nested(&b->lock, SINGLE_DEPTH_NESTING);
}

static void kqp_unlock_two(struct kqp_file *a, struct kqp_file *b)
{
	mutex_unlock(&a->lock);
	mutex_unlock(&b->lock);
}

/*
 * Move @ctx and its unreported events from @cur to @dst, under new handle
 * @new_id in @ductx when that is not @uctx; with the id locked.  On
 * success *@reported is the events reported for the id; on failure
 * nothing moved.
 */
static int kqp_migrate_move(struct kqp_cm_id *ctx, struct kqp_file *cur,
			    struct kqp_file *dst, struct kqp_ucontext *uctx,
			    struct kqp_ucontext *ductx, u32 new_id,
			    u32 *reported)
{
	bool same = uctx == ductx;
	struct kqp_event *ev, *tmp;
	int ret;

	/* No event is delivered while the id changes files. */
	rdma_lock_handler(ctx->cm_id);
	kqp_lock_two(cur, dst);
	list_for_each_entry(ev, &cur->events, list) {
		if (!same && ev->ctx == ctx && ev->child) {
			ret = -EBUSY;
			goto out;
		}
	}
	if (!same && !kqp_object_claim(uctx, &ctx->obj)) {
		/* Being destroyed by its old handle. */
		ret = -ENOENT;
		goto out;
	}
	list_for_each_entry_safe(ev, tmp, &cur->events, list) {
		if (ev->ctx != ctx)
			continue;
		/* Nobody knows these new ids yet: they follow their listener. */
		if (ev->child)
			WRITE_ONCE(ev->child->kfile, dst);
		list_move_tail(&ev->list, &dst->events);
	}
	if (!same) {
		/* The same object under a new handle: not one less alive. */
		kqp_handle_free(uctx, ctx->obj.id);
		ctx->obj.id = new_id;
	}
	WRITE_ONCE(ctx->kfile, dst);
	if (!same)
		kqp_object_publish(ductx, &ctx->obj);
	*reported = ctx->events_reported;
	ret = 0;
out:
	kqp_unlock_two(cur, dst);
	rdma_unlock_handler(ctx->cm_id);
	return ret;
}

/*
 * Move an id, with its unreported events and its memberships, to another
 * file.  Between files that share a table the handle stays, and the new
 * ids of its unreported connection requests move with it.  Into another
 * table the id gets a new handle; it cannot take a QP or unreported
 * connection requests there (EBUSY), as those belong to the old table.
 */
int kqp_migrate_id_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_migrate_id *cmd = ucmd->cmd;
	struct kqp_file *cur = ucmd->kfile, *dst;
	struct kqp_ucontext *uctx = ucmd->uctx, *ductx;
	struct kqp_cm_id *ctx;
	struct file *filp;
	bool same;
	int ret;

	filp = fget(cmd->fd);
	if (!filp)
		return -EBADF;
	if (filp->f_op != &kqp_fops) {
		ret = -EINVAL;
		goto out_fput;
	}
	dst = filp->private_data;
	/* Only into a table of the caller's own (EPERM otherwise). */
	ductx = kqp_file_uctx(dst);
	if (IS_ERR(ductx)) {
		ret = PTR_ERR(ductx);
		goto out_fput;
	}

	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx)) {
		ret = PTR_ERR(ctx);
		goto out_fput;
	}
	same = uctx == ductx;
	cmd->out_id = ctx->obj.id;
	if (dst == cur) {
		mutex_lock(&cur->lock);
		cmd->out_events_reported = ctx->events_reported;
		mutex_unlock(&cur->lock);
		ret = 0;
		goto out_unlock;
	}
	if (!same) {
		if (ctx->qp) {
			ret = -EBUSY;
			goto out_unlock;
		}
		/* Reserve the new handle first: moving must not fail half way. */
		ret = kqp_handle_alloc(ductx, &cmd->out_id);
		if (ret)
			goto out_unlock;
	}
	ret = kqp_migrate_move(ctx, cur, dst, uctx, ductx, cmd->out_id,
			       &cmd->out_events_reported);
	if (ret) {
		if (!same)
			kqp_handle_free(ductx, cmd->out_id);
		goto out_unlock;
	}
	wake_up_interruptible(&dst->poll_wait);
	kqp_cm_id_unlock(ctx);
	fput(filp);
	/* The id moved whatever happens to this answer. */
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));

out_unlock:
	kqp_cm_id_unlock(ctx);
	if (!ret)
		ret = kqp_ucmd_respond(ucmd, sizeof(*cmd));
out_fput:
	fput(filp);
	return ret;
}
