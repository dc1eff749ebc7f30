// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Async events of a table's CQs and QPs, and of the devices and ports
 * its process may use, read from an anonymous fd (ibv_context->async_fd).
 * Events are queued from driver callbacks, so under a spinlock with atomic
 * allocations, and the queue is bounded: past KQP_ASYNC_MAX pending events
 * new ones are counted as dropped.  ib_uverbs queues without a bound; a
 * table whose owner never reads must not grow without one.
 */
#include <linux/anon_inodes.h>
#include <linux/file.h>
#include <linux/pagemap.h>
#include <linux/nsproxy.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <net/net_namespace.h>

#include "kqp.h"

#define KQP_ASYNC_MAX 1024

/**
 * struct kqp_async - a table's async event queue, behind its async fd
 * @ref: one for the table, one for the fd
 * @lock: protects @events, @pending and @dropped
 * @read_mutex: held by a reader from peeking to removing, and by an
 *	object leaving (kqp_async_forget())
 * @wait: woken when an event is queued
 * @events: struct kqp_async_entry, oldest first
 * @pending: entries in @events, at most KQP_ASYNC_MAX
 * @dropped: events not queued: the queue was full, or memory short
 * @all: in kqp_asyncs while both the table and the fd are there, under
 *	kqp_asyncs_lock
 * @net: the network namespace of the process that made the fd,
 *	referenced: which devices' events it gets (rdma_dev_access_netns())
 */
struct kqp_async {
	struct kref ref;
	spinlock_t lock;		/* @events, @pending, @dropped */
	struct mutex read_mutex;	/* a reader; an object leaving */
	wait_queue_head_t wait;
	struct list_head events;
	unsigned int pending;
	unsigned long dropped;
	struct list_head all;
	struct net *net;
};

/*
 * Every queue device events go to.  A queue is on the list only while
 * both its references are held, and taken off under the lock before either
 * is dropped, so the device event handler needs no reference of its own.
 */
static LIST_HEAD(kqp_asyncs);
static DEFINE_SPINLOCK(kqp_asyncs_lock);

struct kqp_async_entry {
	struct list_head list;
	struct kqp_async_event ev;
	u32 *reported;		/* the object's count of events read */
};

static void kqp_async_free(struct kref *ref)
{
	struct kqp_async *async = container_of(ref, struct kqp_async, ref);
	struct kqp_async_entry *e, *tmp;

	list_for_each_entry_safe(e, tmp, &async->events, list)
		kfree(e);
	put_net(async->net);
	mutex_destroy(&async->read_mutex);
	kfree(async);
}

/* No more device events for @async; before dropping a reference. */
static void kqp_async_unlink(struct kqp_async *async)
{
	unsigned long flags;

	spin_lock_irqsave(&kqp_asyncs_lock, flags);
	list_del_init(&async->all);
	spin_unlock_irqrestore(&kqp_asyncs_lock, flags);
}

static void kqp_async_queue(struct kqp_async *async, u32 event, u32 kind,
			    u32 handle, u64 uid, u32 *reported)
{
	struct kqp_async_entry *e;
	unsigned long flags;

	e = kzalloc(sizeof(*e), GFP_ATOMIC);
	spin_lock_irqsave(&async->lock, flags);
	if (!e || async->pending >= KQP_ASYNC_MAX) {
		async->dropped++;
		spin_unlock_irqrestore(&async->lock, flags);
		kfree(e);
		return;
	}
	e->ev.uid = uid;
	e->ev.event = event;
	e->ev.kind = kind;
	e->ev.handle = handle;
	e->reported = reported;
	list_add_tail(&e->list, &async->events);
	async->pending++;
	spin_unlock_irqrestore(&async->lock, flags);
	wake_up_interruptible(&async->wait);
}

/*
 * Queue an event for an object; @reported is the object's count of events
 * read, which kqp_async_forget() reads when the object goes.
 */
void kqp_async_queue_event(struct kqp_ucontext *uctx, u32 event, u32 kind,
			   u32 handle, u64 uid, u32 *reported)
{
	struct kqp_async *async = READ_ONCE(uctx->async);

	if (async)
		kqp_async_queue(async, event, kind, handle, uid, reported);
}

/**
 * kqp_async_device_event() - queue a device or port event
 * @event: what the device reported to its event handlers
 *
 * As ib_uverbs_event_handler(): every event a device dispatches to its
 * clients goes to every async fd that may see the device, with the port
 * number the device gave.  Called by the device's event handler, possibly
 * in atomic context; ib_unregister_event_handler() waits for it.
 */
void kqp_async_device_event(const struct ib_event *event)
{
	struct ib_device *ibdev = event->device;
	struct kqp_async *async;
	unsigned long flags;

	spin_lock_irqsave(&kqp_asyncs_lock, flags);
	list_for_each_entry(async, &kqp_asyncs, all)
		if (rdma_dev_access_netns(ibdev, async->net))
			kqp_async_queue(async, event->event, KQP_ASYNC_DEVICE,
					ibdev->index, event->element.port_num,
					NULL);
	spin_unlock_irqrestore(&kqp_asyncs_lock, flags);
}

/* An object is going: drop its pending events; the count read is final. */
void kqp_async_forget(struct kqp_ucontext *uctx, u32 *reported)
{
	struct kqp_async *async = READ_ONCE(uctx->async);
	struct kqp_async_entry *e, *tmp;
	LIST_HEAD(dead);

	if (!async)
		return;
	mutex_lock(&async->read_mutex);
	spin_lock_irq(&async->lock);
	list_for_each_entry_safe(e, tmp, &async->events, list) {
		if (e->reported == reported) {
			list_move(&e->list, &dead);
			async->pending--;
		}
	}
	spin_unlock_irq(&async->lock);
	mutex_unlock(&async->read_mutex);
	list_for_each_entry_safe(e, tmp, &dead, list)
		kfree(e);
}

static ssize_t kqp_async_read(struct file *filp, char __user *buf,
			      size_t count, loff_t *pos)
{
	struct kqp_async *async = filp->private_data;
	struct kqp_async_entry *e;
	ssize_t ret;

	if (count < sizeof(e->ev))
		return -EINVAL;
retry:
	for (;;) {
		if (mutex_lock_interruptible(&async->read_mutex))
			return -ERESTARTSYS;
		spin_lock_irq(&async->lock);
		if (!list_empty(&async->events))
			break;
		spin_unlock_irq(&async->lock);
		mutex_unlock(&async->read_mutex);
		if (filp->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(async->wait,
					     !list_empty_careful(&async->events)))
			return -ERESTARTSYS;
	}
	e = list_first_entry(&async->events, struct kqp_async_entry, list);
	spin_unlock_irq(&async->lock);

	/*
	 * Objects going away wait for read_mutex (kqp_async_forget()): the
	 * copy must not wait on a page fault.  Fault in with nothing held.
	 */
	if (copy_to_user_nofault(buf, &e->ev, sizeof(e->ev))) {
		mutex_unlock(&async->read_mutex);
		if (fault_in_writeable(buf, sizeof(e->ev)))
			return -EFAULT;
		goto retry;
	}
	spin_lock_irq(&async->lock);
	list_del(&e->list);
	async->pending--;
	if (e->reported)
		(*e->reported)++;
	spin_unlock_irq(&async->lock);
	kfree(e);
	ret = sizeof(struct kqp_async_event);
	mutex_unlock(&async->read_mutex);
	return ret;
}

static __poll_t kqp_async_poll(struct file *filp,
			       struct poll_table_struct *wait)
{
	struct kqp_async *async = filp->private_data;

	poll_wait(filp, &async->wait, wait);
	return list_empty_careful(&async->events) ? 0 : EPOLLIN | EPOLLRDNORM;
}

static int kqp_async_release(struct inode *inode, struct file *filp)
{
	struct kqp_async *async = filp->private_data;

	kqp_async_unlink(async);
	kref_put(&async->ref, kqp_async_free);
	return 0;
}

static const struct file_operations kqp_async_fops = {
	.owner = THIS_MODULE,
	.read = kqp_async_read,
	.poll = kqp_async_poll,
	.release = kqp_async_release,
	.llseek = noop_llseek,
};

int kqp_create_async_fd_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_async_fd *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_async *async;
	struct file *filp;
	int fd, ret;

	async = kzalloc(sizeof(*async), GFP_KERNEL_ACCOUNT);
	if (!async)
		return -ENOMEM;
	/* One for the table, one for the file. */
	kref_init(&async->ref);
	kref_get(&async->ref);
	spin_lock_init(&async->lock);
	mutex_init(&async->read_mutex);
	init_waitqueue_head(&async->wait);
	INIT_LIST_HEAD(&async->events);
	INIT_LIST_HEAD(&async->all);
	async->net = get_net(current->nsproxy->net_ns);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	filp = anon_inode_getfile("[kqp-async]", &kqp_async_fops, async,
				  O_RDWR);
	if (IS_ERR(filp)) {
		ret = PTR_ERR(filp);
		goto err_fd;
	}
	cmd->out_fd = fd;
	ret = kqp_ucmd_respond(ucmd, sizeof(*cmd));
	if (ret)
		goto err_file;
	if (cmpxchg(&uctx->async, NULL, async)) {
		ret = -EBUSY;
		goto err_file;
	}
	spin_lock_irq(&kqp_asyncs_lock);
	list_add_tail(&async->all, &kqp_asyncs);
	spin_unlock_irq(&kqp_asyncs_lock);
	fd_install(fd, filp);
	return 0;

err_file:
	put_unused_fd(fd);
	fput(filp);	/* drops the file's reference */
	kref_put(&async->ref, kqp_async_free);
	return ret;
err_fd:
	put_unused_fd(fd);
err_free:
	kqp_async_free(&async->ref);
	return ret;
}

/* The table is going; its objects and their events went before. */
void kqp_async_detach(struct kqp_ucontext *uctx)
{
	struct kqp_async *async = xchg(&uctx->async, NULL);

	if (async) {
		kqp_async_unlink(async);
		kref_put(&async->ref, kqp_async_free);
	}
}
