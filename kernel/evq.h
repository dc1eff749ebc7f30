/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * An event queue read from an anonymous fd, the shape completion
 * channels (channel.c) and async fds (async.c) share.  Producers add to
 * @list under @lock, from any context, and wake @wait.  A reader holds
 * @read_mutex from looking at the first entry until it has taken it, and
 * an entry's owner takes @read_mutex to drop its entries when it goes (a
 * CQ, a QP), so no reader reports an entry whose owner has gone, and the
 * owner's count of entries read is final once it holds the mutex.
 * Entries leave only through a reader or their owner: the first entry
 * stays first while a reader holds @read_mutex.
 */
#ifndef KQP_EVQ_H
#define KQP_EVQ_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/poll.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

/* The largest event a queue hands out. */
#define KQP_EVQ_EVENT_MAX 64

struct kqp_evq;

/**
 * struct kqp_evq_ops - what a queue's entries are
 * @size: the bytes of one event, at most KQP_EVQ_EVENT_MAX (checked
 *	where the ops are defined)
 * @peek: copy the first entry's event into @ev; under the queue's lock
 * @take: the event reached the reader: count the entry, remove it if it
 *	is spent; under the queue's lock.  Returns memory to kfree() once
 *	the lock is dropped, or NULL.
 */
struct kqp_evq_ops {
	size_t size;
	void (*peek)(struct kqp_evq *q, void *ev);
	void *(*take)(struct kqp_evq *q);
};

/**
 * struct kqp_evq - an event queue behind an fd, the fd's private data
 * @lock: (spin, irqsave) protects @list, and what its user says
 * @read_mutex: a reader, from peeking to taking; an owner leaving
 * @wait: woken when an entry is added
 * @list: the entries, oldest first
 * @ops: what they are
 */
struct kqp_evq {
	spinlock_t lock;		/* @list, and what its user says */
	struct mutex read_mutex;	/* a reader; an owner leaving */
	wait_queue_head_t wait;
	struct list_head list;
	const struct kqp_evq_ops *ops;
};

/*
 * Inline, so that each file using it has lock classes of its own: a
 * channel's locks and an async fd's are told apart by lockdep.
 */
static inline void kqp_evq_init(struct kqp_evq *q,
				const struct kqp_evq_ops *ops)
{
	q->ops = ops;
	spin_lock_init(&q->lock);
	mutex_init(&q->read_mutex);
	init_waitqueue_head(&q->wait);
	INIT_LIST_HEAD(&q->list);
}

/* The file operations of an fd whose private data is a struct kqp_evq. */
ssize_t kqp_evq_read(struct file *filp, char __user *buf, size_t count,
		     loff_t *pos);
__poll_t kqp_evq_poll(struct file *filp, struct poll_table_struct *wait);

#endif /* KQP_EVQ_H */
