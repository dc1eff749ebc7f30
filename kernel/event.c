// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The per-file event queue: filled by the rdma_cm event handler, drained
 * by KQP_IOCTL_GET_EVENT, purged when an id or membership goes away.
 *
 * The handler takes kfile->lock, so nobody holds that lock across anything
 * that can wait on userspace: GET_EVENT copies the event out with page
 * faults off, and when that fails it lets go, faults the caller's memory
 * in, and starts again.  A copy that a userfaultfd or FUSE page makes
 * last for ever stalls only the caller.
 */
#include <linux/pagemap.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"
#include "cm.h"

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

	if (cmd->__reserved)
		return -EOPNOTSUPP;

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
