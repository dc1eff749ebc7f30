// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Completion channels: an anonymous fd per channel.  A CQ that fires adds
 * itself to its channel's pending list (from the CQ's poll, a softirq,
 * or a flush, under the CQ's spinlock); read() hands out one
 * notification per call.
 * The queue's entries are the CQs themselves, each once however often it
 * fired, and a CQ being destroyed leaves the queue (evq.h): a reader
 * never reports a CQ that has gone, and the count destroy returns is
 * exactly what readers saw.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/slab.h>

#include "kqp.h"
#include "cq.h"
#include "evq.h"

static void kqp_channel_free(struct kref *ref)
{
	struct kqp_channel *chan = container_of(ref, struct kqp_channel, ref);

	WARN_ON(!list_empty(&chan->q.list));
	mutex_destroy(&chan->q.read_mutex);
	kfree(chan);
}

void kqp_channel_put(struct kqp_channel *chan)
{
	kref_put(&chan->ref, kqp_channel_free);
}

/*
 * From the CQ producer: the CQ fired.  A process re-arms through the ring
 * without a system call and need never read the channel, so the count is
 * bounded: past KQP_CQ_MAX_PENDING_EVENTS unread notifications the reader
 * has been woken already, and more would only wrap the count round to a
 * second list_add() of the same entry.
 */
void kqp_channel_notify(struct kqp_channel *chan, struct kqp_cq *cq)
{
	unsigned long flags;

	spin_lock_irqsave(&chan->q.lock, flags);
	if (cq->chan_pending < KQP_CQ_MAX_PENDING_EVENTS &&
	    !cq->chan_pending++)
		list_add_tail(&cq->chan_entry, &chan->q.list);
	spin_unlock_irqrestore(&chan->q.lock, flags);
	wake_up_interruptible(&chan->q.wait);
}

/* The CQ is being destroyed: drop its notifications, return how many were read. */
u32 kqp_channel_forget(struct kqp_channel *chan, struct kqp_cq *cq)
{
	u32 reported;

	mutex_lock(&chan->q.read_mutex);
	spin_lock_irq(&chan->q.lock);
	if (cq->chan_pending)
		list_del_init(&cq->chan_entry);
	cq->chan_pending = 0;
	reported = cq->comp_events_reported;
	spin_unlock_irq(&chan->q.lock);
	mutex_unlock(&chan->q.read_mutex);
	return reported;
}

static void kqp_channel_peek(struct kqp_evq *q, void *ev)
{
	struct kqp_cq *cq = list_first_entry(&q->list, struct kqp_cq,
					     chan_entry);
	struct kqp_comp_event *e = ev;

	e->cq_uid = cq->uid;
	e->cq = cq->vobj.obj.id;
}

static void *kqp_channel_take(struct kqp_evq *q)
{
	struct kqp_cq *cq = list_first_entry(&q->list, struct kqp_cq,
					     chan_entry);

	if (!--cq->chan_pending)
		list_del_init(&cq->chan_entry);
	cq->comp_events_reported++;
	return NULL;
}

static_assert(sizeof(struct kqp_comp_event) <= KQP_EVQ_EVENT_MAX);

static const struct kqp_evq_ops kqp_channel_evq_ops = {
	.size = sizeof(struct kqp_comp_event),
	.peek = kqp_channel_peek,
	.take = kqp_channel_take,
};

static int kqp_channel_release(struct inode *inode, struct file *filp)
{
	kqp_channel_put(container_of(filp->private_data, struct kqp_channel,
				     q));
	return 0;
}

static const struct file_operations kqp_channel_fops = {
	.owner = THIS_MODULE,
	.read = kqp_evq_read,
	.poll = kqp_evq_poll,
	.release = kqp_channel_release,
	.llseek = noop_llseek,
};

/* The channel behind a completion channel fd, referenced. */
struct kqp_channel *kqp_channel_get_fd(int fd)
{
	struct kqp_channel *chan;
	struct file *filp;

	filp = fget(fd);
	if (!filp)
		return ERR_PTR(-EBADF);
	if (filp->f_op != &kqp_channel_fops) {
		fput(filp);
		return ERR_PTR(-EINVAL);
	}
	chan = container_of(filp->private_data, struct kqp_channel, q);
	kref_get(&chan->ref);
	fput(filp);
	return chan;
}

/*
 * A new channel and an fd for it, not installed: the caller installs it
 * with fd_install() once nothing can fail any more, or undoes it with
 * kqp_channel_unmake_fd().
 */
struct kqp_channel *kqp_channel_make_fd(int *fd, struct file **filp)
{
	struct kqp_channel *chan;

	chan = kzalloc(sizeof(*chan), GFP_KERNEL_ACCOUNT);
	if (!chan)
		return ERR_PTR(-ENOMEM);
	kref_init(&chan->ref);
	kqp_evq_init(&chan->q, &kqp_channel_evq_ops);

	*fd = get_unused_fd_flags(O_CLOEXEC);
	if (*fd < 0) {
		int ret = *fd;

		kqp_channel_put(chan);
		return ERR_PTR(ret);
	}
	/* The file owns the initial reference. */
	*filp = anon_inode_getfile("[kqp-comp]", &kqp_channel_fops, &chan->q,
				   O_RDWR);
	if (IS_ERR(*filp)) {
		int ret = PTR_ERR(*filp);

		put_unused_fd(*fd);
		kqp_channel_put(chan);
		return ERR_PTR(ret);
	}
	return chan;
}

void kqp_channel_unmake_fd(int fd, struct file *filp)
{
	put_unused_fd(fd);
	fput(filp);
}

int kqp_create_comp_channel_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_comp_channel *cmd = ucmd->cmd;
	struct kqp_channel *chan;
	struct file *filp;
	int fd, ret;

	chan = kqp_channel_make_fd(&fd, &filp);
	if (IS_ERR(chan))
		return PTR_ERR(chan);
	cmd->out_fd = fd;
	ret = kqp_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret) {
		kqp_channel_unmake_fd(fd, filp);
		return ret;
	}
	fd_install(fd, filp);
	return 0;
}
