// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Reading an event queue (evq.h): one event per read(), blocking or not,
 * and poll().
 */
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "evq.h"

/*
 * One event per call.  An entry leaves only once its event reached the
 * caller.  Owners leaving wait for read_mutex, so the copy must not wait
 * on a page fault: the memory is faulted in with nothing held, and the
 * read starts again.
 */
ssize_t kqp_evq_read(struct file *filp, char __user *buf, size_t count,
		     loff_t *pos)
{
	struct kqp_evq *q = filp->private_data;
	const struct kqp_evq_ops *ops = q->ops;
	size_t size = ops->size;
	u64 ev[KQP_EVQ_EVENT_MAX / sizeof(u64)] = {};
	void *dead;

	if (count < size)
		return -EINVAL;
retry:
	for (;;) {
		if (mutex_lock_interruptible(&q->read_mutex))
			return -ERESTARTSYS;
		spin_lock_irq(&q->lock);
		if (!list_empty(&q->list))
			break;
		spin_unlock_irq(&q->lock);
		mutex_unlock(&q->read_mutex);
		if (filp->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(q->wait,
					     !list_empty_careful(&q->list)))
			return -ERESTARTSYS;
	}
	ops->peek(q, ev);
	spin_unlock_irq(&q->lock);

	if (copy_to_user_nofault(buf, ev, size)) {
		mutex_unlock(&q->read_mutex);
		if (fault_in_writeable(buf, size))
			return -EFAULT;
		goto retry;
	}
	spin_lock_irq(&q->lock);
	dead = ops->take(q);
	spin_unlock_irq(&q->lock);
	mutex_unlock(&q->read_mutex);
	kfree(dead);
	return size;
}

__poll_t kqp_evq_poll(struct file *filp, struct poll_table_struct *wait)
{
	struct kqp_evq *q = filp->private_data;

	poll_wait(filp, &q->wait, wait);
	return list_empty_careful(&q->list) ? 0 : EPOLLIN | EPOLLRDNORM;
}
