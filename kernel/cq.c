// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * CQs whose completions userspace reaps from a ring, without a syscall.
 *
 * The kernel CQ is always armed.  Its completion handler only schedules
 * the CQ's irq_poll (through an irq_work when the driver calls it from a
 * task: kqp_cq_comp_handler()); the softirq polls the kernel CQ straight
 * into the ring and arms it again (kqp_cq_poll()).  The poll is the
 * only producer, serialised with KQP_IOCTL_FLUSH_CQ by cq->lock; it
 * keeps the producer index and the flags in cq->tail and cq->ring_flags
 * and only ever writes the ring's copies.  The ring never drops a
 * completion: one that finds no room stays in the kernel CQ, the ring
 * says KQP_CQ_RING_OVERFLOW, and FLUSH_CQ resumes (kqp_cq_produce()).
 *
 * The ring is kernel memory charged to the caller's memory cgroup, and
 * a child does not inherit its mapping (vmem.c).  The protocol, its
 * barrier pairs and the path from the driver to the ring, step by step:
 * doc/design/rings.md.
 */
#include <linux/mm.h>
#include <linux/sched/clock.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "kqp.h"
#include "account.h"
#include "cq.h"
#include "qp.h"
#include "trace.h"

/*
 * The most entries a device may give a CQ: its ring's size must fit the
 * u32 of struct kqp_ring_info.  Four times the largest max_cqe we know
 * of (mlx5 and hns: 4M).
 */
#define KQP_CQ_RING_MAX SZ_16M

#define KQP_CQ_POLL_BATCH 8
#define KQP_CQ_POLL_BUDGET 64

/* The ring's header is followed by the entries. */
static_assert(sizeof(struct kqp_cq_ring_hdr) == 256);
static_assert(sizeof(struct kqp_cqe) == 64);

/*
 * The completion path's measurements, per CPU, over every CQ, live or
 * destroyed.  Written only with bottom halves off (the poll is a
 * softirq; flushes hold cq->lock with _bh), so this CPU's counters are
 * never updated from two contexts at once, and this_cpu ops suffice.
 */
static DEFINE_PER_CPU(struct kqp_cq_stats, kqp_cq_pcpu_stats);

void kqp_cq_stats_read(struct kqp_cq_stats *st)
{
	int cpu, b;

	memset(st, 0, sizeof(*st));
	for_each_possible_cpu(cpu) {
		const struct kqp_cq_stats *c = per_cpu_ptr(&kqp_cq_pcpu_stats,
							   cpu);

		st->calls += READ_ONCE(c->calls);
		st->cqes += READ_ONCE(c->cqes);
		st->lat_ns_sum += READ_ONCE(c->lat_ns_sum);
		st->lat_ns_max = max(st->lat_ns_max, READ_ONCE(c->lat_ns_max));
		for (b = 0; b < KQP_CQ_LAT_BUCKETS; b++)
			st->lat_hist[b] += READ_ONCE(c->lat_hist[b]);
	}
}

/* One poll that produced: @dt ns from the callback to the ring. */
static void kqp_cq_stats_poll(u64 dt)
{
	unsigned int b = dt ? min_t(unsigned int, ilog2(dt),
				    KQP_CQ_LAT_BUCKETS - 1) : 0;

	this_cpu_inc(kqp_cq_pcpu_stats.calls);
	this_cpu_add(kqp_cq_pcpu_stats.lat_ns_sum, dt);
	this_cpu_inc(kqp_cq_pcpu_stats.lat_hist[b]);
	if (dt > this_cpu_read(kqp_cq_pcpu_stats.lat_ns_max))
		this_cpu_write(kqp_cq_pcpu_stats.lat_ns_max, dt);
}

static struct kqp_cqe *kqp_cq_cqes(struct kqp_cq *cq)
{
	return (struct kqp_cqe *)(cq->ring + 1);
}

/*
 * Would a completion fire a solicited-only arm?  Those cannot be told
 * apart exactly: ib_core does not pass the solicited-event bit of a
 * completion to kernel consumers.  They fire on any receive completion
 * and on any error, a superset that never misses a solicited one; the
 * consumer polls after waking in any case.  Decided from the kernel's
 * own completion, not from the entry written to the shared ring.
 */
static bool kqp_wc_fires_solicited(const struct ib_wc *wc)
{
	return wc->status != IB_WC_SUCCESS || (wc->opcode & IB_WC_RECV);
}

/* Publish the kernel's ring flags; the consumer only reads them. */
static void kqp_cq_set_ring_flags(struct kqp_cq *cq, u32 flags)
{
	lockdep_assert_held(&cq->lock);
	cq->ring_flags = flags;
	WRITE_ONCE(cq->ring->flags, flags);
}

/*
 * Write one kernel completion into the ring's next entry, if it is to be
 * reported (kqp_qp_complete()); with cq->lock held and room in the ring.
 */
static void kqp_cq_put(struct kqp_cq *cq, struct kqp_cqe *cqes, u32 mask,
		       struct ib_wc *wc, bool *solicited, u32 *recv)
{
	struct kqp_cqe *cqe = &cqes[cq->tail & mask];
	bool report;

	kqp_qp_complete(cq->uctx, wc, cqe, &report);
	if (!report)
		return;
	cq->tail++;
	*solicited |= kqp_wc_fires_solicited(wc);
	*recv += !!(wc->opcode & IB_WC_RECV);
}

/*
 * Move up to @budget completions from the kernel CQ into the ring while
 * there is room; fire the channel if the consumer armed for one of them.
 * Called with cq->lock held.  Returns how many were polled; *@full says
 * a completion is waiting that the ring has no room for.
 *
 * A ring filled to its last entry is not full in that sense: a consumer
 * that keeps as many entries as it asked the CQ for (ib_send_lat polls
 * its one-entry send CQ once per send) has overrun nothing.  So with no
 * room left, one more completion is taken from the kernel CQ, if there
 * is one, and held in @stash for the next entry the consumer frees: only
 * then is the ring full.  The stash keeps the completions in order: it
 * goes into the ring before anything else is polled.
 *
 * The stash is not looked for in the call that filled the ring: both
 * callers arm the CQ next with IB_CQ_REPORT_MISSED_EVENTS, which reports
 * a completion that is still waiting, and the poll's next run looks
 * then.  Looking at once would cost every completion of a busy one-entry
 * CQ (ib_send_lat's send CQ) a second trip through the driver's lock.
 * A batch shorter than asked does not end the loop: under load, the next
 * poll takes what arrived meanwhile, where arming would have the driver
 * call back (an interrupt) for it.
 */
static int kqp_cq_produce(struct kqp_cq *cq, int budget, bool *full)
{
	struct kqp_cq_ring_hdr *ring = cq->ring;
	struct kqp_cqe *cqes = kqp_cq_cqes(cq);
	struct ib_wc wc[KQP_CQ_POLL_BATCH];
	u32 mask = cq->entries - 1;
	u32 head, room, arm, start = cq->tail, recv = 0;
	bool solicited = false;
	int n, i, polled = 0;

	*full = false;
	while (polled < budget) {
		/*
		 * Pairs with the consumer's store-release of the head: the
		 * entries below it were read and may be overwritten.  The
		 * value is the consumer's to write, so it is only used to
		 * compute room, never to index; one that no consumer could
		 * have written reads as a full ring.
		 */
		head = smp_load_acquire(&ring->head);
		room = cq->entries - (cq->tail - head);
		if (room > cq->entries)
			room = 0;
		if (!room) {
			/* This call filled it: the next run looks (above). */
			if (cq->tail != start)
				break;
			/*
			 * Not counted in @polled: the caller's budget
			 * bounds what reached the ring, and a full
			 * ring must return less than the budget, or
			 * irq_poll would take the poll for still
			 * scheduled after irq_poll_complete().
			 */
			if (!cq->stashed &&
			    ib_poll_cq(cq->cq, 1, &cq->stash) > 0)
				cq->stashed = true;
			*full = cq->stashed;
			break;
		}
		if (cq->stashed) {
			cq->stashed = false;
			kqp_cq_put(cq, cqes, mask, &cq->stash, &solicited,
				   &recv);
			continue;
		}
		n = ib_poll_cq(cq->cq, min3(room, (u32)KQP_CQ_POLL_BATCH,
					    (u32)(budget - polled)), wc);
		if (n <= 0)
			break;
		polled += n;
		for (i = 0; i < n; i++)
			kqp_cq_put(cq, cqes, mask, &wc[i], &solicited, &recv);
	}
	if (cq->tail == start)
		return polled;

	this_cpu_add(kqp_cq_pcpu_stats.cqes, cq->tail - start);
	/*
	 * Pairs with the consumer's load-acquire of the tail: the entries
	 * are written before the tail that covers them.
	 */
	smp_store_release(&ring->tail, cq->tail);
	trace_kqp_cq_publish(cq->vobj.obj.id, cq->tail, cq->tail - start,
			     recv);
	/*
	 * Pairs with the full barrier the consumer issues between storing the
	 * arm word and reading the tail again: either the consumer sees these
	 * entries, or this reads its arm.
	 */
	smp_mb();
	arm = READ_ONCE(ring->arm);
	if (arm && arm != cq->last_fired && cq->channel &&
	    (!(arm & KQP_CQ_ARM_SOLICITED) || solicited)) {
		cq->last_fired = arm;
		kqp_channel_notify(cq->channel, cq);
	}
	return polled;
}

/*
 * Poll the kernel CQ into the ring; with cq->lock held.  Returns how many
 * completions were polled; true in *@more when the budget ran out first.
 * A ring that filled is marked KQP_CQ_RING_OVERFLOW, and the kernel CQ
 * stays unarmed until KQP_IOCTL_FLUSH_CQ.
 */
static int kqp_cq_drain(struct kqp_cq *cq, int budget, bool *more)
{
	bool full;
	int done;

	*more = false;
	done = kqp_cq_produce(cq, budget, &full);
	if (full) {
		if (!(cq->ring_flags & KQP_CQ_RING_OVERFLOW)) {
			kqp_cq_set_ring_flags(cq, cq->ring_flags |
						  KQP_CQ_RING_OVERFLOW);
			kqp_async_queue_event(cq->uctx, IB_EVENT_CQ_ERR,
					      KQP_ASYNC_CQ, cq->vobj.obj.id,
					      cq->uid, &cq->async_reported);
		}
		return done;
	}
	if (done >= budget)
		*more = true;
	return done;
}

/*
 * Arm the kernel CQ for its next completion; with cq->lock held.  True
 * when a completion arrived since it was last polled: the arm does not
 * report that one, so the caller schedules the poll.  A CQ whose
 * hardware is going is left alone.
 */
static bool kqp_cq_arm(struct kqp_cq *cq)
{
	if (cq->dying)
		return false;
	return ib_req_notify_cq(cq->cq, IB_CQ_NEXT_COMP |
					IB_CQ_REPORT_MISSED_EVENTS) > 0;
}

/*
 * The CQ's poll, a softirq.  With KQP_IOCTL_FLUSH_CQ, the only paths from the
 * kernel CQ to the ring, and the only ones to arm it.
 */
static int kqp_cq_poll(struct irq_poll *iop, int budget)
{
	struct kqp_cq *cq = container_of(iop, struct kqp_cq, iop);
	bool more, missed = false;
	u64 now, cb;
	int done;

	spin_lock(&cq->lock);
	done = kqp_cq_drain(cq, budget, &more);
	if (done) {
		/*
		 * From the callback to the entries being in the ring, on
		 * this CPU's clock: the irq_work and the poll run where
		 * the callback ran.  A poll scheduled elsewhere (by an arm
		 * that reported a missed completion) may read an earlier
		 * time than the callback's, and counts 0.
		 */
		now = local_clock();
		cb = READ_ONCE(cq->cb_ns);
		kqp_cq_stats_poll(now > cb ? now - cb : 0);
	}
	spin_unlock(&cq->lock);

	/* Budget spent: irq_poll calls again. */
	if (more)
		return done;
	irq_poll_complete(iop);
	/*
	 * Arm only now that the poll is no longer scheduled.  The driver
	 * calls the handler once per arm (rxe does): a completion whose
	 * callback came between arming and irq_poll_complete() would find
	 * the poll still scheduled, be dropped there, and then wait in
	 * the kernel CQ for good.  One that arrives before the arm is
	 * reported as missed instead.
	 *
	 * Whether to arm is decided now, under the lock, not from the drain
	 * above: a ring that was full then may have been flushed since
	 * (KQP_IOCTL_FLUSH_CQ), which armed the CQ, and a completion's
	 * callback may have found this poll still scheduled and done
	 * nothing.  Deciding from the drain left that completion in the
	 * kernel CQ, unarmed, for good (seen on PREEMPT_RT, where this
	 * softirq can be preempted right here).  Arming again reports it as
	 * missed.
	 *
	 * The CQ outlives this: its hardware goes only after cq->dying is
	 * set under cq->lock, and its memory after an RCU grace period,
	 * which this softirq holds off.
	 */
	spin_lock(&cq->lock);
	if (!(cq->ring_flags & KQP_CQ_RING_OVERFLOW))
		missed = kqp_cq_arm(cq);
	spin_unlock(&cq->lock);
	if (missed)
		irq_poll_sched(iop);
	return done;
}

/*
 * The irq_work: runs in hard interrupt context (or with interrupts off,
 * from a dying CPU's flush), except on PREEMPT_RT, where an item not
 * marked IRQ_WORK_HARD_IRQ runs only in the per-CPU irq_work thread
 * (SCHED_FIFO; run_irq_workd(), kernel/irq_work.c), with interrupts and
 * preemption on, so the RT branch alone may enable bottom halves.  A
 * softirq raised in a thread with bottom halves enabled is left to
 * ksoftirqd, an ordinary thread that waits behind whatever busy-polls
 * that CPU, for milliseconds at the tail.  Raised with bottom halves
 * off, it runs in this thread instead, at local_bh_enable(), as a
 * threaded interrupt handler's do (irq_forced_thread_fn()).  The price
 * is a thread switch per callback, and so per completion or two, where
 * ksoftirqd's delay had batched them, which lowers the message rate.
 * Every softirq pending on this CPU
 * then runs at the thread's priority, for 2 ms at most before the rest
 * goes to ksoftirqd (handle_softirqs()), as it does in a threaded
 * interrupt handler.
 */
static void kqp_cq_kick(struct irq_work *work)
{
	struct kqp_cq *cq = container_of(work, struct kqp_cq, kick);

	if (IS_ENABLED(CONFIG_PREEMPT_RT) && in_task()) {
		local_bh_disable();
		irq_poll_sched(&cq->iop);
		local_bh_enable();
		return;
	}
	irq_poll_sched(&cq->iop);
}

/*
 * Called by the driver, possibly under its own CQ lock: only schedule
 * the poll.
 *
 * A softirq raised in interrupt context runs on the way out of it.  One
 * raised in task context, with bottom halves enabled, only wakes
 * ksoftirqd, and a thread waits for a CPU behind whatever runs there:
 * with the consumers busy-polling, that cost hundreds of microseconds per
 * completion under rxe, which calls the handler from a work item on 6.12
 * (from a tasklet on 6.1).  So from task context the poll is scheduled
 * by an irq_work instead: a self-interrupt taken as soon as the driver
 * re-enables interrupts, whose exit runs the softirq on this CPU at once.
 * On PREEMPT_RT the driver's lock leaves interrupts on, and the irq_work
 * runs in a thread that preempts the driver at once (kqp_cq_kick()).
 */
static void kqp_cq_comp_handler(struct ib_cq *ibcq, void *cq_context)
{
	struct kqp_cq *cq = cq_context;

	/* Pairs with synchronize_rcu() in kqp_cq_destroy_hw(). */
	rcu_read_lock();
	if (READ_ONCE(cq->abandoned))
		goto out;
	/*
	 * local_clock(), not ktime_get_ns(): the CPU's sched_clock (the TSC
	 * on x86) whatever the clocksource, where ktime_get_ns() reads the
	 * clocksource, a device access on a machine that keeps time with
	 * the HPET.
	 */
	WRITE_ONCE(cq->cb_ns, local_clock());
	if (in_task())
		irq_work_queue(&cq->kick);
	else
		irq_poll_sched(&cq->iop);
out:
	rcu_read_unlock();
}

static void kqp_cq_event_handler(struct ib_event *event, void *cq_context)
{
	struct kqp_cq *cq = cq_context;

	rcu_read_lock();
	/*
	 * Nothing before the ring: the CQ is not anyone's yet.  Pairs with
	 * smp_store_release() in kqp_cq_ring_alloc(), after @uctx and @uid.
	 */
	if (!READ_ONCE(cq->abandoned) && smp_load_acquire(&cq->ring))
		kqp_async_queue_event(cq->uctx, event->event, KQP_ASYNC_CQ,
				      cq->vobj.obj.id, cq->uid,
				      &cq->async_reported);
	rcu_read_unlock();
}

/*
 * Destroy @ibcq, whose handlers get @cq.  ib_destroy_cq() WARNs when the
 * device refuses (a QP the device would not destroy still uses the CQ):
 * ask without the WARN, and leave a refused CQ to the device.  It may
 * still call the handlers with @cq, reading handler and context apart, so
 * neither changes: the handlers do nothing once @abandoned is set and a
 * call that began before has ended.  False if the device kept the CQ:
 * @cq must then never be freed.
 */
static bool kqp_cq_destroy_ib(struct kqp_cq *cq, struct ib_cq *ibcq)
{
	int ret = ib_destroy_cq_user(ibcq, NULL);

	if (!ret)
		return true;
	pr_err_ratelimited("kqp: the device refused to destroy a CQ (%d); left to it\n",
			   ret);
	WRITE_ONCE(cq->abandoned, true);
	__module_get(THIS_MODULE);
	synchronize_rcu();
	return false;
}

static void kqp_cq_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_cq *cq = container_of(vobj, struct kqp_cq, vobj);

	/* Waits for a scheduled poll; none is scheduled after this... */
	irq_poll_disable(&cq->iop);
	/* ...but one past irq_poll_complete() may still arm the CQ. */
	spin_lock_bh(&cq->lock);
	cq->dying = true;
	spin_unlock_bh(&cq->lock);
	kqp_cq_destroy_ib(cq, cq->cq);
	cq->cq = NULL;
	/* No handler calls are left to queue one; a queued one finds it off. */
	irq_work_sync(&cq->kick);
}

void kqp_cq_fill_ring_info(struct kqp_cq *cq, struct kqp_ring_info *info)
{
	memset(info, 0, sizeof(*info));
	info->mmap_offset = (u64)cq->vobj.obj.id << PAGE_SHIFT;
	info->mmap_size = cq->ring_bytes;
	info->entries = cq->entries;
	info->off_head = offsetof(struct kqp_cq_ring_hdr, head);
	info->off_tail = offsetof(struct kqp_cq_ring_hdr, tail);
	info->off_arm = offsetof(struct kqp_cq_ring_hdr, arm);
	info->off_flags = offsetof(struct kqp_cq_ring_hdr, flags);
	info->off_cqes = sizeof(struct kqp_cq_ring_hdr);
}

/*
 * The ring of a CQ whose kernel CQ holds @cqe: at least as many entries,
 * so a consumer that keeps up never sees the ring fill; a power of two,
 * which may be past max_cqe.  Its memory is charged to the caller's
 * cgroup, and to max_queue_bytes apart, as it lives on while mapped.
 */
static int kqp_cq_ring_alloc(struct kqp_cq *cq, struct kqp_ucontext *uctx,
			     u32 cqe)
{
	struct kqp_vmem *vmem;

	cq->entries = roundup_pow_of_two(cqe);
	cq->ring_bytes = PAGE_ALIGN(sizeof(struct kqp_cq_ring_hdr) +
				    (size_t)cq->entries *
				    sizeof(struct kqp_cqe));
	vmem = kqp_vmem_alloc(uctx, cq->ring_bytes);
	if (IS_ERR(vmem))
		return PTR_ERR(vmem);
	cq->ring_vmem = vmem;
	/* Pairs with smp_load_acquire() in kqp_cq_event_handler(). */
	smp_store_release(&cq->ring, kqp_vmem_addr(vmem));
	return 0;
}

/* A CQ's struct before it has a kernel CQ, a table or a ring. */
static struct kqp_cq *kqp_cq_alloc(gfp_t gfp)
{
	struct kqp_cq *cq = kzalloc(sizeof(*cq), gfp);

	if (!cq)
		return NULL;
	spin_lock_init(&cq->lock);
	irq_poll_init(&cq->iop, KQP_CQ_POLL_BUDGET, kqp_cq_poll);
	init_irq_work(&cq->kick, kqp_cq_kick);
	INIT_LIST_HEAD(&cq->chan_entry);
	return cq;
}

/*
 * The kernel CQ of @cq, of at least @cqe entries, with @cq as the
 * handlers' context.  Not armed: the completion handler does not run
 * before the ring is there.  The event handler may, and drops what comes
 * before the ring (no QP can use the CQ yet), so an error path has no
 * event to take back.  On error nothing is left but @cq's struct, unless
 * the device kept a CQ it refused to destroy (*@freeable is false).
 */
static int kqp_cq_make_ib(struct kqp_cq *cq, struct kqp_device *kdev, u32 cqe,
			  u32 comp_vector, bool *freeable)
{
	struct ib_cq_init_attr attr = {};
	struct ib_cq *ibcq;

	*freeable = true;
	/* The depth asked for, as uverbs asks: the device may round it up. */
	attr.cqe = cqe;
	attr.comp_vector = comp_vector;
	ibcq = ib_create_cq(kdev->ibdev, kqp_cq_comp_handler,
			    kqp_cq_event_handler, cq, &attr);
	if (IS_ERR(ibcq))
		return PTR_ERR(ibcq);
	if (ibcq->cqe < 1 || ibcq->cqe > KQP_CQ_RING_MAX) {
		*freeable = kqp_cq_destroy_ib(cq, ibcq);
		return -EINVAL;
	}
	cq->cq = ibcq;
	cq->cqe = ibcq->cqe;
	return 0;
}

/*
 * Give @cq, whose kernel CQ is made, to @uctx: charged for what the
 * device made, with its ring.  On error @cq is as it was, and was never
 * anyone's.  The caller holds kdev->hw_rwsem for reading, the device
 * alive, and has begun @cq->vobj.
 */
static int kqp_cq_give(struct kqp_cq *cq, struct kqp_ucontext *uctx,
		       struct kqp_device *kdev, struct kqp_channel *chan,
		       u64 uid)
{
	int ret;

	/* A device that rounded up is charged what it made. */
	ret = kqp_queue_charge(uctx, &cq->vobj,
			       max(cq->vobj.queue_bytes,
				   kqp_cq_queue_bytes(cq->cqe)), false);
	if (ret)
		return ret;
	cq->uctx = uctx;
	cq->uid = uid;
	ret = kqp_cq_ring_alloc(cq, uctx, cq->cqe);
	if (ret)
		return ret;
	cq->channel = chan;
	kqp_vobj_made(&cq->vobj, kdev, kqp_cq_destroy_hw);
	/* From now on completions flow into the ring. */
	ib_req_notify_cq(cq->cq, IB_CQ_NEXT_COMP);
	return 0;
}

/*
 * A CQ of at least @cqe entries on @kdev, reserved in @uctx but not
 * published.  @chan, if any, is taken over by the CQ.  The caller holds
 * kdev->hw_rwsem for reading and checked that the device lives.
 */
struct kqp_cq *kqp_cq_create_locked(struct kqp_ucontext *uctx,
				    struct kqp_device *kdev, u32 cqe,
				    u32 comp_vector, struct kqp_channel *chan,
				    u64 uid)
{
	struct kqp_cq *cq;
	bool freeable = true;
	int ret;

	if (!cqe || cqe > kdev->ibdev->attrs.max_cqe)
		return ERR_PTR(-EINVAL);
	if (comp_vector >= kdev->ibdev->num_comp_vectors)
		return ERR_PTR(-EINVAL);

	cq = kqp_cq_alloc(GFP_KERNEL_ACCOUNT);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	ret = kqp_vobj_begin(uctx, &cq->vobj, KQP_OBJ_CQ, kdev,
			     kqp_cq_queue_bytes(cqe));
	if (ret)
		goto err_free;
	ret = kqp_cq_make_ib(cq, kdev, cqe, comp_vector, &freeable);
	if (ret)
		goto err_cancel;
	ret = kqp_cq_give(cq, uctx, kdev, chan, uid);
	if (ret)
		goto err_destroy;
	return cq;

err_destroy:
	/* A CQ the device keeps is left to it, struct and all. */
	freeable = kqp_cq_destroy_ib(cq, cq->cq);
err_cancel:
	kqp_vobj_cancel(uctx, &cq->vobj);
err_free:
	if (freeable)
		kfree(cq);
	return ERR_PTR(ret);
}

/*
 * A spare CQ for the QP cache (qp_cache.c): a kernel CQ of at least @cqe
 * entries, nobody's, unarmed, charged to nobody.  Its handlers' context
 * is the struct it will keep when a table adopts it (kqp_cq_adopt_locked()),
 * so nothing about the kernel CQ changes then.
 */
struct kqp_cq *kqp_cq_make_spare(struct kqp_device *kdev, u32 cqe)
{
	struct kqp_cq *cq;
	bool freeable;
	int ret;

	if (!cqe || cqe > kdev->ibdev->attrs.max_cqe)
		return ERR_PTR(-EINVAL);
	cq = kqp_cq_alloc(GFP_KERNEL);
	if (!cq)
		return ERR_PTR(-ENOMEM);
	ret = kqp_cq_make_ib(cq, kdev, cqe, 0, &freeable);
	if (ret) {
		if (freeable)
			kfree(cq);
		return ERR_PTR(ret);
	}
	return cq;
}

/* Destroy a spare CQ no table adopted; its QP is gone. */
void kqp_cq_free_spare(struct kqp_cq *cq)
{
	if (kqp_cq_destroy_ib(cq, cq->cq))
		kfree(cq);
}

/*
 * Adopt the spare @cq into @uctx, reserved but not published, as
 * kqp_cq_create_locked() makes one; @chan, if any, is taken over.  On
 * error @cq is still a spare.  The caller holds kdev->hw_rwsem for
 * reading and checked that the device lives.
 */
int kqp_cq_adopt_locked(struct kqp_cq *cq, struct kqp_ucontext *uctx,
			struct kqp_device *kdev, struct kqp_channel *chan,
			u64 uid)
{
	int ret;

	ret = kqp_vobj_begin(uctx, &cq->vobj, KQP_OBJ_CQ, kdev,
			     kqp_cq_queue_bytes(cq->cqe));
	if (ret)
		return ret;
	ret = kqp_cq_give(cq, uctx, kdev, chan, uid);
	if (ret) {
		/* The ring is the last step that fails: there is none. */
		kqp_vobj_cancel(uctx, &cq->vobj);
		cq->uctx = NULL;
		cq->uid = 0;
	}
	return ret;
}

/*
 * The CQ is claimed (or never published): no QP uses it.  The ring's
 * pages stay in whatever mappings still have them and go with the last.
 */
static void kqp_cq_free(struct kqp_ucontext *uctx, struct kqp_cq *cq,
			u32 *comp_reported, u32 *async_reported)
{
	struct kqp_device *kdev = cq->vobj.kdev;
	u32 comp = 0;

	kqp_object_drain(&cq->vobj.obj);
	kqp_vobj_destroy_hw(&cq->vobj);
	if (cq->channel) {
		comp = kqp_channel_forget(cq->channel, cq);
		kqp_channel_put(cq->channel);
	}
	kqp_async_forget(uctx, &cq->async_reported);
	if (comp_reported)
		*comp_reported = comp;
	if (async_reported)
		*async_reported = cq->async_reported;
	kqp_object_release_id(uctx, &cq->vobj.obj);
	kqp_device_put(kdev);
	kqp_vmem_put(cq->ring_vmem);
	kqp_queue_uncharge(uctx, &cq->vobj);
	/* The device may still hand it to the handlers. */
	if (cq->abandoned)
		return;
	/* A poll that just finished may still hold cq->lock. */
	kfree_rcu(cq, rcu);
}

void kqp_cq_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	kqp_cq_free(uctx, container_of(obj, struct kqp_cq, vobj.obj), NULL,
		    NULL);
}

/* The CQ @handle names, with a reference on its object. */
static struct kqp_cq *kqp_cq_get(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_object *obj = kqp_object_get(uctx, handle, KQP_OBJ_CQ);

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	return container_of(obj, struct kqp_cq, vobj.obj);
}

int kqp_create_cq_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_cq *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_channel *chan = NULL;
	struct kqp_device *kdev;
	struct kqp_cq *cq;
	int ret;

	if (cmd->channel_fd != -1) {
		chan = kqp_channel_get_fd(cmd->channel_fd);
		if (IS_ERR(chan))
			return PTR_ERR(chan);
	}
	kdev = kqp_device_get_user(cmd->device_index);
	if (!kdev) {
		ret = -ENODEV;
		goto err_chan;
	}
	down_read(&kdev->hw_rwsem);
	cq = kdev->dead ? ERR_PTR(-ENXIO) :
			  kqp_cq_create_locked(uctx, kdev, cmd->cqe,
					       cmd->comp_vector, chan, cmd->uid);
	up_read(&kdev->hw_rwsem);
	kqp_device_put(kdev);
	if (IS_ERR(cq)) {
		ret = PTR_ERR(cq);
		goto err_chan;
	}
	cmd->out_cq = cq->vobj.obj.id;
	cmd->out_cqe = cq->cqe;
	kqp_cq_fill_ring_info(cq, &cmd->out_ring);
	return kqp_object_commit(ucmd, &cq->vobj.obj, sizeof(*cmd));

err_chan:
	if (chan)
		kqp_channel_put(chan);
	return ret;
}

int kqp_destroy_cq_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_destroy_cq *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_cq *cq;
	int ret = 0;

	cq = kqp_cq_get(uctx, cmd->cq);
	if (IS_ERR(cq))
		return PTR_ERR(cq);

	/* Same lock as QPs taking the CQ: a CQ in use stays. */
	mutex_lock(&uctx->lock);
	if (cq->users || cq->auto_qp)
		ret = -EBUSY;
	else if (!kqp_object_claim(uctx, &cq->vobj.obj))
		ret = -ENOENT;
	mutex_unlock(&uctx->lock);
	kqp_object_put(&cq->vobj.obj);
	if (ret)
		return ret;
	kqp_cq_free(uctx, cq, &cmd->out_comp_events_reported,
		    &cmd->out_async_events_reported);
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/* One more user (a QP) of a CQ the caller looked up. */
static int kqp_cq_add_user(struct kqp_cq *cq)
{
	struct kqp_ucontext *uctx = cq->uctx;
	int ret = 0;

	mutex_lock(&uctx->lock);
	if (xa_load(&uctx->objects, cq->vobj.obj.id) != cq)
		ret = -ENOENT;
	else
		cq->users++;
	mutex_unlock(&uctx->lock);
	return ret;
}

/*
 * The CQ @handle names, with one more user (a QP).  That may be a CQ made
 * for a QP on an id, as with librdmacm: rdma_create_qp(3) hands the id's
 * CQs back in the caller's attributes, and cmtime's server creates every
 * further QP with them.
 */
struct kqp_cq *kqp_cq_take(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_cq *cq = kqp_cq_get(uctx, handle);
	int ret;

	if (IS_ERR(cq))
		return cq;
	ret = kqp_cq_add_user(cq);
	kqp_object_put(&cq->vobj.obj);
	return ret ? ERR_PTR(ret) : cq;
}

void kqp_cq_put_user(struct kqp_cq *cq)
{
	mutex_lock(&cq->uctx->lock);
	cq->users--;
	mutex_unlock(&cq->uctx->lock);
}

/*
 * The QP a CQ was made for goes: free the CQ with it, unless other QPs
 * use it; then it stays, theirs, as an ordinary CQ of the table (@counts
 * says so, and true is returned).  What decides, and the claim, happen
 * under the same lock as kqp_cq_add_user(), so no QP takes a CQ being
 * freed.  @counts gets the notifications and async events read for a
 * freed CQ, which userspace waits to see acked before it frees its side.
 */
bool kqp_cq_release_auto(struct kqp_ucontext *uctx, struct kqp_cq *cq,
			 struct kqp_cq_counts *counts)
{
	bool claimed = false;

	counts->comp = 0;
	counts->async = 0;
	mutex_lock(&uctx->lock);
	/* Pairs with READ_ONCE() in kqp_qp_release_deps() of another QP. */
	WRITE_ONCE(cq->auto_qp, NULL);
	counts->kept = cq->users > 1;
	if (counts->kept)
		cq->users--;
	else
		claimed = kqp_object_claim(uctx, &cq->vobj.obj);
	mutex_unlock(&uctx->lock);
	if (claimed)
		kqp_cq_free(uctx, cq, &counts->comp, &counts->async);
	return counts->kept;
}

int kqp_flush_cq_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_flush_cq *cmd = ucmd->cmd;
	bool more = false, sched = false;
	struct kqp_vobj *vobj;
	struct kqp_cq *cq;

	vobj = kqp_vobj_get_hw(ucmd->uctx, cmd->cq, KQP_OBJ_CQ);
	if (IS_ERR(vobj))
		return PTR_ERR(vobj);
	cq = container_of(vobj, struct kqp_cq, vobj);

	/* In the caller's context, so the room it made is used now. */
	spin_lock_bh(&cq->lock);
	if (cq->ring_flags & KQP_CQ_RING_OVERFLOW) {
		kqp_cq_set_ring_flags(cq, cq->ring_flags &
					  ~KQP_CQ_RING_OVERFLOW);
		kqp_cq_drain(cq, cq->entries, &more);
		/*
		 * Unless the ring filled again: what is left goes to the
		 * poll, and the CQ is armed now, so that what comes next is
		 * not left waiting for a softirq (on PREEMPT_RT a thread).
		 * A poll still running from before arms again once it is
		 * done (kqp_cq_poll()), so a callback it swallowed is
		 * reported as missed.
		 */
		if (!(cq->ring_flags & KQP_CQ_RING_OVERFLOW))
			sched = more || kqp_cq_arm(cq);
	}
	/*
	 * Scheduled with bottom halves off, the poll runs here, at
	 * spin_unlock_bh(), in the caller's time.  Raised from task context
	 * with them on, the softirq would only wake ksoftirqd, a thread
	 * switch (two under a busy-polling caller) before the completion
	 * reaches the ring.
	 */
	if (sched)
		irq_poll_sched(&cq->iop);
	spin_unlock_bh(&cq->lock);
	kqp_vobj_put_hw(vobj);
	return 0;
}
