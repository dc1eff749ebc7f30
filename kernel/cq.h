/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * CQs with completion rings, and completion channels.
 */
#ifndef KQP_CQ_H
#define KQP_CQ_H

#include <linux/list.h>
/* irq_poll.h relies on list.h being included first. */
#include <linux/irq_poll.h>
#include <linux/irq_work.h>

#include "kqp.h"
#include "evq.h"

/**
 * struct kqp_channel - a completion channel, behind an anonymous fd
 * @ref: the fd holds one, each CQ using the channel one
 * @q: struct kqp_cq with notifications not read yet; its lock also
 *	protects the CQs' counts, and a CQ leaving takes its read_mutex
 */
struct kqp_channel {
	struct kref ref;
	struct kqp_evq q;
};

/* Histogram buckets of the callback-to-ring delay: [2^b, 2^(b+1)) ns. */
#define KQP_CQ_LAT_BUCKETS 40

/**
 * struct kqp_cq_stats - the completion path's measurements (debugfs)
 * @calls: polls that produced entries
 * @cqes: entries produced, by polls and flushes
 * @lat_ns_sum: the delays from the driver's callback to the ring, summed
 * @lat_ns_max: the longest of them
 * @lat_hist: how many fell in each log2 bucket
 */
struct kqp_cq_stats {
	u64 calls;
	u64 cqes;
	u64 lat_ns_sum;
	u64 lat_ns_max;
	u64 lat_hist[KQP_CQ_LAT_BUCKETS];
};

/**
 * struct kqp_cq - a CQ whose completions userspace reaps from a ring
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @cq: the kernel CQ; NULL once its device is gone
 * @uid: the caller's value, reported with channel and async events
 * @cqe: the CQ's actual depth
 * @channel: completion channel, referenced, or NULL
 * @chan_entry: in @channel->q while notifications wait
 * @chan_pending: notifications waiting in @channel, under its lock
 * @comp_events_reported: notifications read from @channel, under its lock
 * @ring: the shared ring: header, then @entries CQEs, in @ring_vmem
 * @ring_vmem: the ring's memory, which outlives the CQ while mapped
 * @ring_bytes: size of the mapping
 * @entries: ring size, a power of two at least @cqe
 * @iop: the CQ's poll, a softirq the completion handler schedules
 * @kick: schedules @iop from a hard interrupt (on PREEMPT_RT, from the
 *	irq_work thread), for handlers in task context
 * @cb_ns: when the completion handler last ran (local_clock()), for the
 *	completion path's statistics
 * @lock: serialises the producer (the poll and flushes), arming the
 *	kernel CQ, and @dying
 * @tail: the producer index; the ring's copy is only ever written
 * @last_fired: the last arm sequence that fired a notification
 * @ring_flags: KQP_CQ_RING_* as the kernel set them, under @lock; the
 *	ring's copy is only ever written from it, never read back, as the
 *	consumer can write there too.  KQP_CQ_RING_OVERFLOW: the ring
 *	filled; completions wait in @cq (and @stash) until a flush
 * @stash: a completion taken from @cq when the ring had no room, under
 *	@lock: the next one the ring gets (kqp_cq_produce())
 * @stashed: @stash holds one
 * @users: QPs using the CQ, under @uctx->lock
 * @auto_qp: the QP on an id the CQ was made for, which destroys it as it
 *	goes, unless other QPs use it by then: it stays for them, an
 *	ordinary CQ (NULL) from then on.  Set before the CQ is published,
 *	cleared under @uctx->lock.
 * @async_reported: async events read for the CQ
 * @dying: the kernel CQ is being destroyed: the poll must not arm it
 * @abandoned: the device refused to destroy the kernel CQ: it keeps this
 *	struct as its context, for good, and the handlers do nothing
 * @rcu: frees the CQ after a poll that may still be finishing
 */
struct kqp_cq {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_cq *cq;
	u64 uid;
	u32 cqe;
	struct kqp_channel *channel;
	struct list_head chan_entry;
	u32 chan_pending;
	u32 comp_events_reported;
	struct kqp_cq_ring_hdr *ring;
	struct kqp_vmem *ring_vmem;
	size_t ring_bytes;
	u32 entries;
	struct irq_poll iop;
	struct irq_work kick;
	u64 cb_ns;
	spinlock_t lock;	/* producer, arming, @dying */
	u32 tail;
	u32 last_fired;
	u32 ring_flags;
	struct ib_wc stash;
	bool stashed;
	unsigned int users;
	struct kqp_qp *auto_qp;
	u32 async_reported;
	bool dying;
	bool abandoned;
	struct rcu_head rcu;
};

/* channel.c */
int kqp_create_comp_channel_ioctl(struct kqp_ucmd *ucmd);
struct kqp_channel *kqp_channel_get_fd(int fd);
struct kqp_channel *kqp_channel_make_fd(int *fd, struct file **filp);
void kqp_channel_unmake_fd(int fd, struct file *filp);
void kqp_channel_put(struct kqp_channel *chan);
void kqp_channel_notify(struct kqp_channel *chan, struct kqp_cq *cq);
u32 kqp_channel_forget(struct kqp_channel *chan, struct kqp_cq *cq);

/* cq.c */
int kqp_create_cq_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_cq_ioctl(struct kqp_ucmd *ucmd);
int kqp_flush_cq_ioctl(struct kqp_ucmd *ucmd);
struct kqp_cq *kqp_cq_create_locked(struct kqp_ucontext *uctx,
				    struct kqp_device *kdev, u32 cqe,
				    u32 comp_vector, struct kqp_channel *chan,
				    u64 uid);
struct kqp_cq *kqp_cq_make_spare(struct kqp_device *kdev, u32 cqe);
void kqp_cq_free_spare(struct kqp_cq *cq);
int kqp_cq_adopt_locked(struct kqp_cq *cq, struct kqp_ucontext *uctx,
			struct kqp_device *kdev, struct kqp_channel *chan,
			u64 uid);
void kqp_cq_fill_ring_info(struct kqp_cq *cq, struct kqp_ring_info *info);
struct kqp_cq *kqp_cq_take(struct kqp_ucontext *uctx, u32 handle);
void kqp_cq_put_user(struct kqp_cq *cq);
/**
 * struct kqp_cq_counts - what was read for a CQ made for a QP, as it goes
 * @comp: completion channel notifications
 * @async: async events
 * @kept: it did not go: other QPs use it
 */
struct kqp_cq_counts {
	u32 comp;
	u32 async;
	bool kept;
};

bool kqp_cq_release_auto(struct kqp_ucontext *uctx, struct kqp_cq *cq,
			 struct kqp_cq_counts *counts);
void kqp_cq_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
void kqp_cq_stats_read(struct kqp_cq_stats *st);

#endif /* KQP_CQ_H */
