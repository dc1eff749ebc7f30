// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A table's poller (KQP_IOCTL_CREATE_POLLER): a thread that drains the
 * submission rings of the table's RC QPs while the process keeps
 * publishing, so that posting makes no system call at all.
 *
 * The thread is a vhost_task: a thread of the process that asked for it
 * (CLONE_THREAD | CLONE_VM, no files), so its CPU time is the process's,
 * counted in its cgroups and its rusage, and limited by them, and it dies
 * with the process.  A kthread would be nobody's, and any local user
 * could start one per table: kernels without CONFIG_VHOST_TASK, or older
 * than 6.11 (6.1), refuse the command instead.  io_uring's SQPOLL thread
 * is the same kind of thread, but create_io_thread() is not exported to
 * modules, and vhost_task_create() is.
 *
 * What it does to the rings, and the barrier pair that lets it sleep
 * without stranding an entry: doc/design/rings.md.  In short, each pass
 * drains every ring QP of the table (KQP_OBJ_MARK_RINGS) with the
 * doorbell's code and locks, holding a reference to the QP as a command
 * does, and marks each send ring committed and KQP_WQ_RING_POLLED; after
 * idle_ns with nothing to do, a last pass hands every ring back
 * (kqp_sq_settle()) before the thread sleeps.  @kick, set before
 * vhost_task_wake() and read after TASK_INTERRUPTIBLE, keeps a
 * KQP_DOORBELL_WAKE_POLLER wake from being lost.  A send ring is served
 * only once the device took a chain from it (@sq_ready, ring.c), so a
 * post to a QP below RTS still fails at once.
 *
 * Lifetime: the poller belongs to the table and holds no reference to it
 * (that would be a cycle): the table's release stops the thread, and waits
 * for it, before any object goes.  vhost_task_fn() tests its STOP bit
 * only before calling kqp_poller_fn(), so a stop that comes during a pass
 * would find the thread running and its wakeup would be lost when the
 * pass then sleeps: @stopping, set before vhost_task_stop(), is tested
 * after TASK_INTERRUPTIBLE, as @kick is, and between QPs, so the release
 * waits for one QP's drain at most.  @uctx->poller is set once, under
 * uctx->lock, and never cleared before the release.  A SIGKILL (the
 * process exits or execs) ends the thread early: kqp_poller_killed()
 * gives every ring back first, and nobody but the dead process could have
 * posted anyway (every command checks the caller's mm).  Only the table's
 * owner, the thread group that made it (@uctx->owner), may make its
 * poller: a process sharing the mm without being one of its threads (a
 * CLONE_VM or vfork() child, posix_spawn()'s) gets EPERM, so the thread
 * never belongs to a process that execs or exits under the table's
 * users.  The owner's death kills it all the same while such a process
 * lives on with the table: @dead says so, CTX_INFO reports no poller, and
 * the table gets no other.
 *
 * Death and wake: vhost_task_wake() on a thread that has exited is
 * wake_up_process() on its task_struct, which kernels before 6.17 (and
 * its stable backports) have freed by then, as the vhost_task holds no
 * reference to it.  So the death and every wake are decided under
 * @lock: kqp_poller_killed() sets @dead under it before anything else
 * (the thread is still alive, and exits only after it returns), and
 * kqp_poller_wake() wakes under it only while @dead is clear.  A doorbell
 * that asks to wake a dead poller is ESRCH before it drains anything
 * (kqp_poller_alive()); one whose poller dies while it drains is not
 * woken, and succeeds.
 */
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "compat.h"
#include "kqp.h"
#include "qp.h"

#ifdef KQP_HAVE_POLLER
#include <linux/sched/vhost_task.h>

#define KQP_POLLER_IDLE_US_DEFAULT	1000

/**
 * struct kqp_poller - a table's poller
 * @uctx: the table; it outlives the poller
 * @vtsk: the thread
 * @lock: @dead, and every vhost_task_wake() (see "Death and wake")
 * @idle_ns: how long a pass may find nothing before the thread sleeps
 * @last_work: when a pass last took an entry (the thread's alone)
 * @awake_since: when it last woke (the thread's alone)
 * @awake: it serves the rings (the thread's alone)
 * @kick: a doorbell asked it to wake
 * @stopping: the table is going: finish the pass and do not sleep
 * @dead: the thread was killed
 * @wakeups: times it woke, for KQP_IOCTL_CTX_INFO
 * @entries: entries it drained
 * @busy_ns: time it was awake, up to its last sleep
 */
struct kqp_poller {
	struct kqp_ucontext *uctx;
	struct vhost_task *vtsk;
	spinlock_t lock;	/* @dead, wakes */
	u64 idle_ns;
	u64 last_work;
	u64 awake_since;
	bool awake;
	bool stopping;
	bool dead;
	atomic_t kick;
	atomic_t wakeups;
	atomic64_t entries;
	atomic64_t busy_ns;
};

/* One pass over the table's ring QPs; the entries it took. */
static u32 kqp_poller_pass(struct kqp_poller *p, bool polled)
{
	unsigned long index = 0;
	struct kqp_object *obj;
	u32 took = 0;

	while ((obj = kqp_object_get_marked(p->uctx, &index,
					    KQP_OBJ_MARK_RINGS))) {
		if (!WARN_ON_ONCE(obj->type != KQP_OBJ_QP))
			took += kqp_qp_poll(container_of(obj, struct kqp_qp,
							 vobj.obj), polled);
		kqp_object_put(obj);
		/*
		 * The release waits for the pass: leave it early.  Not a
		 * last pass for a signal: it gives the rings back.
		 */
		if (READ_ONCE(p->stopping) ||
		    (polled && fatal_signal_pending(current)))
			break;
		cond_resched();
	}
	return took;
}

/*
 * vhost_task_fn() calls this in a loop, with TASK_INTERRUPTIBLE set, and
 * schedule()s when it returns false; it handles signals between calls.
 */
static bool kqp_poller_fn(void *data)
{
	struct kqp_poller *p = data;
	u64 now;
	u32 took;

	__set_current_state(TASK_RUNNING);
	now = ktime_get_ns();
	if (!p->awake) {
		p->awake = true;
		p->awake_since = now;
		p->last_work = now;
		atomic_inc(&p->wakeups);
	}
	atomic_set(&p->kick, 0);
	took = kqp_poller_pass(p, true);
	now = ktime_get_ns();
	if (!took && now - p->last_work >= p->idle_ns) {
		/* Give every ring back to its doorbell, then look once more. */
		took = kqp_poller_pass(p, false);
		if (!took) {
			p->awake = false;
			atomic64_add(now - p->awake_since, &p->busy_ns);
			/*
			 * Pairs with the wakes in kqp_poller_wake() and
			 * vhost_task_stop(), each after its store.
			 */
			set_current_state(TASK_INTERRUPTIBLE);
			if (!atomic_read(&p->kick) && !READ_ONCE(p->stopping))
				return false;
			__set_current_state(TASK_RUNNING);
		}
	}
	if (took) {
		p->last_work = now;
		atomic64_add(took, &p->entries);
	}
	cond_resched();
	return true;
}

/* The process got SIGKILL: the thread is about to exit. */
static void kqp_poller_killed(void *data)
{
	struct kqp_poller *p = data;
	int i;

	/* First: from here on nobody wakes the thread, which is about to go. */
	spin_lock(&p->lock);
	WRITE_ONCE(p->dead, true);
	spin_unlock(&p->lock);
	/*
	 * Give every ring back; a settle that saw entries published behind
	 * the flag drains them, so pass again while passes take any (a few
	 * times at most: every thread of the process is being killed).
	 */
	for (i = 0; i < 4 && kqp_poller_pass(p, false); i++)
		;
	p->awake = false;
}

static int kqp_poller_create(struct kqp_ucontext *uctx, u32 idle_us)
{
	struct vhost_task *vtsk;
	struct kqp_poller *p;
	int ret = 0;

	mutex_lock(&uctx->lock);
	if (uctx->poller) {
		ret = -EBUSY;
		goto out;
	}
	p = kzalloc(sizeof(*p), GFP_KERNEL_ACCOUNT);
	if (!p) {
		ret = -ENOMEM;
		goto out;
	}
	p->uctx = uctx;
	spin_lock_init(&p->lock);
	p->idle_ns = (u64)(idle_us ?: KQP_POLLER_IDLE_US_DEFAULT) *
		     NSEC_PER_USEC;
	/* A thread of the caller, which kqp_file_uctx() made sure owns uctx. */
	vtsk = vhost_task_create(kqp_poller_fn, kqp_poller_killed, p,
				 "kqp-poller");
	/* Some 6.12.y kernels return NULL for every failure. */
	if (IS_ERR_OR_NULL(vtsk)) {
		ret = vtsk ? PTR_ERR(vtsk) : -ENOMEM;
		kfree(p);
		goto out;
	}
	p->vtsk = vtsk;
	/* Pairs with the acquire loads in kqp_poller_wake() and _info(). */
	smp_store_release(&uctx->poller, p);
	vhost_task_start(vtsk);
out:
	mutex_unlock(&uctx->lock);
	return ret;
}

/*
 * May a doorbell wake the table's poller?  0 with no poller (nothing to
 * wake) or a live one, -ESRCH once its thread was killed.  Only a hint
 * that lets the doorbell fail before it drains: kqp_poller_wake()
 * decides again under the lock.
 */
int kqp_poller_alive(struct kqp_ucontext *uctx)
{
	/* Pairs with the release in kqp_poller_create(): @p is set up. */
	struct kqp_poller *p = smp_load_acquire(&uctx->poller);

	return p && READ_ONCE(p->dead) ? -ESRCH : 0;
}

/*
 * A doorbell asked for the poller: wake it, if the table has one and its
 * thread lives.  -ESRCH, and no wake, once the thread was killed.
 */
int kqp_poller_wake(struct kqp_ucontext *uctx)
{
	/* As in kqp_poller_alive(). */
	struct kqp_poller *p = smp_load_acquire(&uctx->poller);
	int ret = 0;

	if (!p)
		return 0;
	atomic_set(&p->kick, 1);
	/* @dead is set under the lock before the thread exits: see above. */
	spin_lock(&p->lock);
	if (p->dead)
		ret = -ESRCH;
	else
		vhost_task_wake(p->vtsk);
	spin_unlock(&p->lock);
	return ret;
}

void kqp_poller_info(struct kqp_ucontext *uctx, struct kqp_ctx_info *info)
{
	/* Pairs with the release in kqp_poller_create(), as above. */
	struct kqp_poller *p = smp_load_acquire(&uctx->poller);

	if (!p)
		return;
	info->out_poller = !READ_ONCE(p->dead);
	info->out_poller_wakeups = atomic_read(&p->wakeups);
	info->out_poller_entries = atomic64_read(&p->entries);
	info->out_poller_busy_ns = atomic64_read(&p->busy_ns);
}

/* The table is going: stop the thread and wait for it. */
void kqp_poller_stop(struct kqp_ucontext *uctx)
{
	struct kqp_poller *p = uctx->poller;

	if (!p)
		return;
	/* Before the stop's wakeup: see "Lifetime" above. */
	WRITE_ONCE(p->stopping, true);
	vhost_task_stop(p->vtsk);
	uctx->poller = NULL;
	kfree(p);
}

#else /* !KQP_HAVE_POLLER */

static int kqp_poller_create(struct kqp_ucontext *uctx, u32 idle_us)
{
	return -EOPNOTSUPP;
}

int kqp_poller_alive(struct kqp_ucontext *uctx)
{
	return 0;
}

int kqp_poller_wake(struct kqp_ucontext *uctx)
{
	return 0;
}

void kqp_poller_info(struct kqp_ucontext *uctx, struct kqp_ctx_info *info)
{
}

void kqp_poller_stop(struct kqp_ucontext *uctx)
{
}

#endif /* KQP_HAVE_POLLER */

/* KQP_IOCTL_CREATE_POLLER: the same checks with or without vhost_task. */
int kqp_create_poller_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_poller *cmd = ucmd->cmd;

	if (cmd->idle_us > KQP_POLLER_IDLE_US_MAX)
		return -EINVAL;
	/* Not a CLONE_VM child's thread: see "Lifetime" above. */
	if (task_tgid(current) != ucmd->uctx->owner)
		return -EPERM;
	return kqp_poller_create(ucmd->uctx, cmd->idle_us);
}
