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
#include <linux/nsproxy.h>
#include <linux/slab.h>

#include <net/net_namespace.h>

#include "kqp.h"
#include "evq.h"

#define KQP_ASYNC_MAX 1024

/**
 * struct kqp_async - a table's async event queue, behind its async fd
 * @ref: one for the table, one for the fd
 * @q: struct kqp_async_entry; its lock also protects @pending and
 *	@dropped, and an object leaving takes its read_mutex
 *	(kqp_async_forget())
 * @pending: entries in @q, at most KQP_ASYNC_MAX
 * @dropped: events not queued: the queue was full, or memory short
 * @all: in kqp_asyncs while both the table and the fd are there, under
 *	kqp_asyncs_lock
 * @net: the network namespace of the process that made the fd,
 *	referenced: which devices' events it gets (rdma_dev_access_netns())
 */
struct kqp_async {
	struct kref ref;
	struct kqp_evq q;
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

	list_for_each_entry_safe(e, tmp, &async->q.list, list)
		kfree(e);
	put_net(async->net);
	mutex_destroy(&async->q.read_mutex);
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
	spin_lock_irqsave(&async->q.lock, flags);
	if (!e || async->pending >= KQP_ASYNC_MAX) {
		async->dropped++;
		spin_unlock_irqrestore(&async->q.lock, flags);
		kfree(e);
		return;
	}
	e->ev.uid = uid;
	e->ev.event = event;
	e->ev.kind = kind;
	e->ev.handle = handle;
	e->reported = reported;
	list_add_tail(&e->list, &async->q.list);
	async->pending++;
	spin_unlock_irqrestore(&async->q.lock, flags);
	wake_up_interruptible(&async->q.wait);
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
	mutex_lock(&async->q.read_mutex);
	spin_lock_irq(&async->q.lock);
	list_for_each_entry_safe(e, tmp, &async->q.list, list) {
		if (e->reported == reported) {
			list_move(&e->list, &dead);
			async->pending--;
		}
	}
	spin_unlock_irq(&async->q.lock);
	mutex_unlock(&async->q.read_mutex);
	list_for_each_entry_safe(e, tmp, &dead, list)
		kfree(e);
}

static void kqp_async_peek(struct kqp_evq *q, void *ev)
{
	struct kqp_async_entry *e = list_first_entry(&q->list,
						     struct kqp_async_entry,
						     list);

	memcpy(ev, &e->ev, sizeof(e->ev));
}

static void *kqp_async_take(struct kqp_evq *q)
{
	struct kqp_async *async = container_of(q, struct kqp_async, q);
	struct kqp_async_entry *e = list_first_entry(&q->list,
						     struct kqp_async_entry,
						     list);

	list_del(&e->list);
	async->pending--;
	if (e->reported)
		(*e->reported)++;
	return e;
}

static_assert(sizeof(struct kqp_async_event) <= KQP_EVQ_EVENT_MAX);

static const struct kqp_evq_ops kqp_async_evq_ops = {
	.size = sizeof(struct kqp_async_event),
	.peek = kqp_async_peek,
	.take = kqp_async_take,
};

static int kqp_async_release(struct inode *inode, struct file *filp)
{
	struct kqp_async *async = container_of(filp->private_data,
					       struct kqp_async, q);

	kqp_async_unlink(async);
	kref_put(&async->ref, kqp_async_free);
	return 0;
}

static const struct file_operations kqp_async_fops = {
	.owner = THIS_MODULE,
	.read = kqp_evq_read,
	.poll = kqp_evq_poll,
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
	kqp_evq_init(&async->q, &kqp_async_evq_ops);
	INIT_LIST_HEAD(&async->all);
	async->net = get_net(current->nsproxy->net_ns);

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0) {
		ret = fd;
		goto err_free;
	}
	filp = anon_inode_getfile("[kqp-async]", &kqp_async_fops, &async->q,
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
