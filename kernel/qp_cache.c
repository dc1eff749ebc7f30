// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The QP cache: kernel QPs made ahead of rdma_create_qp(), so that a
 * create takes one instead of waiting for the driver.
 *
 * What it keeps.  Per device, idle groups: a kernel PD and up to
 * qp_cache_batch slots on it, each a QP in RESET with a send and a
 * receive CQ made for it.  Nothing in a slot was ever anyone's: no WR was
 * posted, no CQ armed, no ring made.  The idle slots of a device number
 * at most qp_cache; they are charged to nobody (made by a worker, outside
 * any process's memory cgroup, rdma cgroup and max_queue_bytes).
 *
 * Who takes them.  A QP's PD decides which QPs can share its MRs, so
 * slots cannot move between PDs.  A table's default PD on a device
 * (pd.c) is made by adopting the fullest idle group: the group's PD
 * becomes the default PD, and the table pays for every spare slot on it,
 * against max_queue_bytes and to the rdma cgroup (three hca_objects a
 * slot), or the PD is made as before, without slots.  Then
 * rdma_create_qp(3) on an id of that PD with no CQs (core.c) takes a
 * spare slot when one matches: same QP type and signalling, capabilities
 * at least those asked.  The caps written back are the slot's.  The take
 * wraps the slot's CQs as the table's, with rings and channels, and
 * moves the QP to INIT with the id's attributes, as a QP made on the call
 * is moved; the table pays for them as its own objects from then on.
 *
 * What it never does: give a used QP back.  A destroyed QP is destroyed,
 * so a QP a table takes is one no process has used, and its QP number is
 * a new one; a peer of an old QP reaches nothing.  When a default PD
 * ends, nothing of the table's is left on it; if only its spare slots
 * use it, it goes back to the idle cache with them (a PD keeps no state
 * of its own), else they are destroyed with it.
 *
 * What it makes.  The shape of the last create that found no slot (type,
 * signalling, capabilities rounded up to a power of two, within
 * KQP_QPC_MAX_*), taken up at most once a second (a miss sooner is taken
 * up when the second is over): a device where nobody created a QP keeps
 * nothing.  A worker refills a device's idle slots up to qp_cache a
 * tenth of a second after a group is adopted or a create misses (not
 * during the burst of creates that took them), and drops idle groups of
 * another shape, larger than qp_cache_batch, or past qp_cache.  Writing
 * qp_cache or qp_cache_batch wakes every device's worker at once;
 * qp_cache=0 empties the cache and keeps it empty.  A device with an
 * InfiniBand port caches nothing: there a QP's P_Key access is checked
 * against the security label of the task that made it, which a worker
 * is not.
 *
 * Locks and lifetimes.  qpc->refill_mutex serialises refills (the worker,
 * debugfs) with the device's removal; qpc->lock protects the idle list,
 * its count, the shape and @dead, and is never held across the driver.
 * Lock order: kdev->hw_rwsem, uctx->lock, qpc->lock; refill_mutex, then
 * qpc->lock.  An adopted group is its PD's: its slots are taken under the
 * table's lock (core.c) and given back or destroyed by the PD's
 * destruction, after every object of the table on it is gone.  Device
 * removal and module unload (kqp_ib_remove()) free the idle groups after
 * the worker stopped; adopted ones go with their PDs, in the device's
 * own teardown, where giving back frees them.
 */
#include <linux/debugfs.h>
#include <linux/slab.h>

#include "kqp.h"
#include "account.h"
#include "cq.h"
#include "pd.h"
#include "qp_cache.h"

/* What a shape learnt from a miss may ask for; past it, nothing is made. */
#define KQP_QPC_MAX_WR		64
#define KQP_QPC_MAX_SGE		4
#define KQP_QPC_MAX_INLINE	128
/* How long a refill waits after a take or a miss. */
#define KQP_QPC_DELAY		(HZ / 10)

static unsigned int kqp_qp_cache = 32;
static unsigned int kqp_qp_cache_batch = 8;

static int kqp_qpc_param_set(const char *val, const struct kernel_param *kp)
{
	int ret = param_set_uint(val, kp);

	if (!ret)
		kqp_qpc_kick_all();
	return ret;
}

static const struct kernel_param_ops kqp_qpc_param_ops = {
	.set = kqp_qpc_param_set,
	.get = param_get_uint,
};

module_param_cb(qp_cache, &kqp_qpc_param_ops, &kqp_qp_cache, 0644);
MODULE_PARM_DESC(qp_cache,
		 "QPs kept ready per device for rdma_create_qp() with no PD and no CQs (0: none)");
module_param_cb(qp_cache_batch, &kqp_qpc_param_ops, &kqp_qp_cache_batch, 0644);
MODULE_PARM_DESC(qp_cache_batch,
		 "QPs of the cache one default PD adopts at once");

struct kqp_qpc_shape {
	enum ib_qp_type qp_type;
	enum ib_sig_type sq_sig_type;
	struct ib_qp_cap cap;
};

/**
 * struct kqp_qpc_group - a PD with spare slots on it
 * @entry: on the device's idle list, while idle
 * @pd: the kernel PD; an adopted group's belongs to its kqp_pd
 * @shape: what its slots were made as
 * @slots: the spare slots
 * @nr: how many
 * @slot_bytes: what one spare slot is charged against max_queue_bytes
 */
struct kqp_qpc_group {
	struct list_head entry;
	struct ib_pd *pd;
	struct kqp_qpc_shape shape;
	struct list_head slots;
	unsigned int nr;
	u64 slot_bytes;
};

/**
 * struct kqp_qpc - a device's cache
 * @kdev: the device, which owns this
 * @refill_mutex: one refill at a time, and none after @dead
 * @lock: @groups, @nr_idle, @shape, @shaped, @want, @wanted, @dead
 * @groups: the idle groups
 * @nr_idle: the slots in them
 * @shape: what to make
 * @shaped: whether a miss said what to make
 * @shape_jiffies: when @shape last changed
 * @want: the shape the last miss asked for
 * @wanted: @want is not taken up yet (kqp_qpc_reshape())
 * @ib: the device has an InfiniBand port: nothing is cached (P_Key
 *	access is checked against the label of the task that made a QP)
 * @dead: the device is going: nothing is made or adopted any more
 * @work: the refill, after KQP_QPC_DELAY unless a parameter changed
 * @hits: creates that took a slot
 * @misses: creates with no PD and no CQs that found none
 * @made: slots made
 * @adopted: groups adopted
 * @returned: groups given back, with their PDs
 */
struct kqp_qpc {
	struct kqp_device *kdev;
	struct mutex refill_mutex;	/* one refill at a time */
	struct mutex lock;		/* the idle list, @shape, @dead */
	struct list_head groups;
	unsigned int nr_idle;
	struct kqp_qpc_shape shape;
	bool shaped;
	unsigned long shape_jiffies;
	struct kqp_qpc_shape want;
	bool wanted;
	bool ib;
	bool dead;
	struct delayed_work work;
	atomic64_t hits;
	atomic64_t misses;
	atomic64_t made;
	atomic64_t adopted;
	atomic64_t returned;
};

static void kqp_qpc_event(struct ib_event *event, void *context)
{
	struct kqp_qpc_ctx *ctx = context;
	void (*handler)(struct ib_event *event, void *context);

	/* Pairs with synchronize_rcu() in kqp_qpc_ctx_clear(). */
	rcu_read_lock();
	/* Pairs with smp_store_release() in kqp_qpc_ctx_set(). */
	handler = smp_load_acquire(&ctx->handler);
	if (handler)
		handler(event, READ_ONCE(ctx->context));
	rcu_read_unlock();
}

/*
 * Where a taken QP's events go from now on.  Until this, a QP in RESET
 * that nobody posted to has no event to report; one reported anyway is
 * dropped.
 */
void kqp_qpc_ctx_set(struct kqp_qpc_ctx *ctx,
		     void (*handler)(struct ib_event *, void *),
		     void *context)
{
	WRITE_ONCE(ctx->context, context);
	/* Pairs with smp_load_acquire() in kqp_qpc_event(). */
	smp_store_release(&ctx->handler, handler);
}

/*
 * The device kept a QP it was asked to destroy: its events go nowhere
 * from now on, and no call that began before is still running when this
 * returns, so the context's object may go.
 */
void kqp_qpc_ctx_clear(struct kqp_qpc_ctx *ctx)
{
	WRITE_ONCE(ctx->handler, NULL);
	synchronize_rcu();
}

/* Destroy what is left in @slot, the QP before its CQs. */
void kqp_qpc_slot_free(struct kqp_qpc_slot *slot)
{
	bool leave_cqs = false;

	if (slot->qp) {
		if (ib_destroy_qp(slot->qp)) {
			/* The device keeps it, with its context and CQs. */
			pr_err_ratelimited("kqp: the device refused to destroy a cached QP; left to it\n");
			__module_get(THIS_MODULE);
			leave_cqs = true;
		} else {
			kfree(slot->ctx);
		}
	} else {
		kfree(slot->ctx);
	}
	if (!leave_cqs) {
		if (slot->send_cq)
			kqp_cq_free_spare(slot->send_cq);
		if (slot->recv_cq)
			kqp_cq_free_spare(slot->recv_cq);
	}
	kfree(slot);
}

static struct kqp_qpc_slot *kqp_qpc_slot_make(struct kqp_device *kdev,
					      struct ib_pd *pd,
					      const struct kqp_qpc_shape *shape)
{
	struct ib_qp_init_attr attr = {};
	struct kqp_qpc_slot *slot;
	struct ib_qp *qp;
	int ret = -ENOMEM;

	slot = kzalloc(sizeof(*slot), GFP_KERNEL);
	if (!slot)
		return ERR_PTR(-ENOMEM);
	slot->ctx = kzalloc(sizeof(*slot->ctx), GFP_KERNEL);
	if (!slot->ctx)
		goto err;
	slot->send_cq = kqp_cq_make_spare(kdev, max(shape->cap.max_send_wr, 1U));
	if (IS_ERR(slot->send_cq)) {
		ret = PTR_ERR(slot->send_cq);
		slot->send_cq = NULL;
		goto err;
	}
	slot->recv_cq = kqp_cq_make_spare(kdev, max(shape->cap.max_recv_wr, 1U));
	if (IS_ERR(slot->recv_cq)) {
		ret = PTR_ERR(slot->recv_cq);
		slot->recv_cq = NULL;
		goto err;
	}
	attr.qp_type = shape->qp_type;
	attr.sq_sig_type = shape->sq_sig_type;
	attr.cap = shape->cap;
	attr.send_cq = slot->send_cq->cq;
	attr.recv_cq = slot->recv_cq->cq;
	attr.event_handler = kqp_qpc_event;
	attr.qp_context = slot->ctx;
	qp = ib_create_qp(pd, &attr);
	if (IS_ERR(qp)) {
		ret = PTR_ERR(qp);
		goto err;
	}
	slot->qp = qp;
	slot->cap = attr.cap;
	return slot;

err:
	kqp_qpc_slot_free(slot);
	return ERR_PTR(ret);
}

/* Free a group's spare slots and the group; not its PD. */
static void kqp_qpc_group_free_slots(struct kqp_qpc_group *group)
{
	struct kqp_qpc_slot *slot, *next;

	list_for_each_entry_safe(slot, next, &group->slots, entry) {
		list_del(&slot->entry);
		kqp_qpc_slot_free(slot);
	}
	kfree(group);
}

/* Free an idle group, its PD with it. */
static void kqp_qpc_group_free(struct kqp_qpc_group *group)
{
	struct ib_pd *pd = group->pd;

	kqp_qpc_group_free_slots(group);
	kqp_ib_pd_dealloc(pd);
}

/* A group of @n slots of @shape on a PD of its own. */
static struct kqp_qpc_group *kqp_qpc_group_make(struct kqp_device *kdev,
						const struct kqp_qpc_shape *shape,
						unsigned int n)
{
	struct kqp_qpc_group *group;
	struct kqp_qpc_slot *slot;
	struct ib_pd *pd;

	group = kzalloc(sizeof(*group), GFP_KERNEL);
	if (!group)
		return ERR_PTR(-ENOMEM);
	INIT_LIST_HEAD(&group->slots);
	group->shape = *shape;
	pd = ib_alloc_pd(kdev->ibdev, 0);
	if (IS_ERR(pd)) {
		kfree(group);
		return ERR_CAST(pd);
	}
	group->pd = pd;
	while (group->nr < n) {
		slot = kqp_qpc_slot_make(kdev, pd, shape);
		if (IS_ERR(slot)) {
			kqp_qpc_group_free(group);
			return ERR_CAST(slot);
		}
		list_add_tail(&slot->entry, &group->slots);
		group->nr++;
		/* What a table will be charged for it: its caps and CQs. */
		group->slot_bytes = kqp_qp_queue_bytes(&slot->cap, false) +
				    kqp_cq_queue_bytes(slot->send_cq->cqe) +
				    kqp_cq_queue_bytes(slot->recv_cq->cqe);
	}
	return group;
}

static bool kqp_qpc_shape_eq(const struct kqp_qpc_shape *a,
			     const struct kqp_qpc_shape *b)
{
	return a->qp_type == b->qp_type && a->sq_sig_type == b->sq_sig_type &&
	       a->cap.max_send_wr == b->cap.max_send_wr &&
	       a->cap.max_recv_wr == b->cap.max_recv_wr &&
	       a->cap.max_send_sge == b->cap.max_send_sge &&
	       a->cap.max_recv_sge == b->cap.max_recv_sge &&
	       a->cap.max_inline_data == b->cap.max_inline_data;
}

/*
 * Take up the shape the last miss asked for.  A new shape drops the idle
 * groups, so it changes at most once a second, lest creates alternating
 * two shapes keep the worker rebuilding; one asked for sooner waits, and
 * the refill comes back for it.  With @qpc->lock held.
 */
static void kqp_qpc_reshape(struct kqp_qpc *qpc)
{
	unsigned long when = qpc->shape_jiffies + HZ;

	lockdep_assert_held(&qpc->lock);
	if (!qpc->wanted)
		return;
	if (qpc->shaped && time_before(jiffies, when)) {
		if (!qpc->dead)
			queue_delayed_work(system_unbound_wq, &qpc->work,
					   when - jiffies);
		return;
	}
	qpc->wanted = false;
	if (qpc->shaped && kqp_qpc_shape_eq(&qpc->shape, &qpc->want))
		return;
	qpc->shape = qpc->want;
	qpc->shaped = true;
	qpc->shape_jiffies = jiffies;
}

/*
 * Bring @qpc's idle slots to @want (negative: qp_cache): drop idle groups
 * of another shape, larger than qp_cache_batch, or past @want, then make
 * groups of the shape.  Stops at
 * the first error, which it returns; the next kick tries again.
 */
static int kqp_qpc_refill(struct kqp_qpc *qpc, int want)
{
	struct kqp_qpc_group *group;
	struct kqp_qpc_shape shape;
	unsigned int target, batch, n;
	int ret = 0;

	mutex_lock(&qpc->refill_mutex);
	for (;;) {
		target = want < 0 ? READ_ONCE(kqp_qp_cache) : want;
		batch = clamp(READ_ONCE(kqp_qp_cache_batch), 1U, max(target, 1U));
		mutex_lock(&qpc->lock);
		kqp_qpc_reshape(qpc);
		group = NULL;
		if (qpc->dead || qpc->nr_idle > target) {
			group = list_first_entry_or_null(&qpc->groups,
							 struct kqp_qpc_group,
							 entry);
		} else {
			struct kqp_qpc_group *g;

			list_for_each_entry(g, &qpc->groups, entry) {
				if (!kqp_qpc_shape_eq(&g->shape, &qpc->shape) ||
				    g->nr > batch) {
					group = g;
					break;
				}
			}
		}
		if (group) {
			list_del(&group->entry);
			qpc->nr_idle -= group->nr;
			mutex_unlock(&qpc->lock);
			kqp_qpc_group_free(group);
			continue;
		}
		/* Nothing of a shape about to change. */
		if (qpc->dead || !qpc->shaped || qpc->wanted ||
		    qpc->nr_idle >= target) {
			mutex_unlock(&qpc->lock);
			break;
		}
		n = min(batch, target - qpc->nr_idle);
		shape = qpc->shape;
		mutex_unlock(&qpc->lock);

		group = kqp_qpc_group_make(qpc->kdev, &shape, n);
		if (IS_ERR(group)) {
			ret = PTR_ERR(group);
			break;
		}
		atomic64_add(n, &qpc->made);
		mutex_lock(&qpc->lock);
		list_add_tail(&group->entry, &qpc->groups);
		qpc->nr_idle += group->nr;
		mutex_unlock(&qpc->lock);
	}
	mutex_unlock(&qpc->refill_mutex);
	return ret;
}

static void kqp_qpc_work(struct work_struct *work)
{
	kqp_qpc_refill(container_of(to_delayed_work(work), struct kqp_qpc,
				    work), -1);
}

/*
 * Queued under @lock, so that none is queued after kqp_qpc_exit() set
 * @dead and cancelled the work.  After a take or a miss the refill waits
 * KQP_QPC_DELAY, so that it does not compete for the CPU with the burst
 * of creates that is usually under way; a parameter's change is at once.
 */
static void kqp_qpc_queue(struct kqp_qpc *qpc, unsigned long delay)
{
	mutex_lock(&qpc->lock);
	if (!qpc->dead) {
		if (delay)
			queue_delayed_work(system_unbound_wq, &qpc->work, delay);
		else
			mod_delayed_work(system_unbound_wq, &qpc->work, 0);
	}
	mutex_unlock(&qpc->lock);
}

static void kqp_qpc_kick(struct kqp_qpc *qpc)
{
	kqp_qpc_queue(qpc, KQP_QPC_DELAY);
}

static void kqp_qpc_kick_dev(struct kqp_device *kdev, void *arg)
{
	kqp_qpc_queue(kdev->qpc, 0);
}

/* After a parameter changed: every device trims or refills. */
void kqp_qpc_kick_all(void)
{
	kqp_device_for_each(kqp_qpc_kick_dev, NULL);
}

/*
 * An idle group for a new default PD of @kdev, the fullest (a group given
 * back may hold fewer), or NULL.  It is the caller's, who either makes it
 * a kqp_pd's or gives it back with kqp_qpc_unadopt().
 */
struct kqp_qpc_group *kqp_qpc_adopt(struct kqp_device *kdev)
{
	struct kqp_qpc *qpc = kdev->qpc;
	struct kqp_qpc_group *group = NULL, *g;

	mutex_lock(&qpc->lock);
	if (!qpc->dead)
		list_for_each_entry(g, &qpc->groups, entry)
			if (!group || g->nr > group->nr)
				group = g;
	if (group) {
		list_del(&group->entry);
		qpc->nr_idle -= group->nr;
	}
	mutex_unlock(&qpc->lock);
	if (group) {
		atomic64_inc(&qpc->adopted);
		kqp_qpc_kick(qpc);
	}
	return group;
}

/*
 * Give back a group kqp_qpc_adopt() gave, with its PD: untouched, or at
 * the end of a default PD that nothing but its spare QPs uses any more
 * (no MR, AH, QP or SRQ of the table's is left on it; a PD keeps no
 * state of its own).  The spare QPs were never anyone's.
 */
void kqp_qpc_unadopt(struct kqp_device *kdev, struct kqp_qpc_group *group)
{
	struct kqp_qpc *qpc = kdev->qpc;

	atomic64_inc(&qpc->returned);
	mutex_lock(&qpc->lock);
	/* An empty group holds nothing worth its PD. */
	if (!qpc->dead && group->nr) {
		list_add(&group->entry, &qpc->groups);
		qpc->nr_idle += group->nr;
		group = NULL;
	}
	mutex_unlock(&qpc->lock);
	if (group)
		kqp_qpc_group_free(group);
	else
		kqp_qpc_kick(qpc);
}

struct ib_pd *kqp_qpc_group_pd(struct kqp_qpc_group *group)
{
	return group->pd;
}

unsigned int kqp_qpc_group_nr(struct kqp_qpc_group *group)
{
	return group->nr;
}

/* What the spare slots of @group are charged against max_queue_bytes. */
u64 kqp_qpc_group_bytes(struct kqp_qpc_group *group)
{
	return group->nr * group->slot_bytes;
}

/*
 * The PD of an adopted group is being destroyed, its QPs gone: its spare
 * slots go, and the group.  The PD is the caller's.
 */
void kqp_qpc_group_release(struct kqp_qpc_group *group)
{
	kqp_qpc_group_free_slots(group);
}

/*
 * Whether @slot serves @attr: its QP's caps, and its CQs' depths (which
 * the core writes back when lower), at least those asked.
 */
static bool kqp_qpc_fits(const struct kqp_qpc_shape *shape,
			 const struct kqp_qpc_slot *slot,
			 const struct ib_qp_init_attr *attr)
{
	const struct ib_qp_cap *have = &slot->cap;
	const struct ib_qp_cap *want = &attr->cap;

	return shape->qp_type == attr->qp_type &&
	       slot->send_cq->cqe >= want->max_send_wr &&
	       slot->recv_cq->cqe >= want->max_recv_wr &&
	       shape->sq_sig_type == attr->sq_sig_type &&
	       have->max_send_wr >= want->max_send_wr &&
	       have->max_recv_wr >= want->max_recv_wr &&
	       have->max_send_sge >= want->max_send_sge &&
	       have->max_recv_sge >= want->max_recv_sge &&
	       have->max_inline_data >= want->max_inline_data;
}

/* The power of two at or above @n, at least @min; 0 past @max. */
static u32 kqp_qpc_round(u32 n, u32 min, u32 max)
{
	if (n > max)
		return 0;
	return n <= min ? min : roundup_pow_of_two(n);
}

/* A create that found no slot says what to make next. */
static void kqp_qpc_miss(struct kqp_qpc *qpc, const struct ib_qp_init_attr *attr)
{
	const struct ib_qp_cap *c = &attr->cap;
	struct kqp_qpc_shape shape = {
		.qp_type = attr->qp_type,
		.sq_sig_type = attr->sq_sig_type,
	};

	atomic64_inc(&qpc->misses);
	if (qpc->ib)
		return;
	shape.cap.max_send_wr = kqp_qpc_round(c->max_send_wr, 1, KQP_QPC_MAX_WR);
	shape.cap.max_recv_wr = kqp_qpc_round(c->max_recv_wr, 1, KQP_QPC_MAX_WR);
	shape.cap.max_send_sge = kqp_qpc_round(c->max_send_sge, 1, KQP_QPC_MAX_SGE);
	shape.cap.max_recv_sge = kqp_qpc_round(c->max_recv_sge, 1, KQP_QPC_MAX_SGE);
	if (c->max_inline_data > KQP_QPC_MAX_INLINE)
		return;
	shape.cap.max_inline_data = c->max_inline_data ?
		roundup_pow_of_two(c->max_inline_data) : 0;
	if (!shape.cap.max_send_wr || !shape.cap.max_recv_wr ||
	    !shape.cap.max_send_sge || !shape.cap.max_recv_sge)
		return;
	/* The refill takes it up (kqp_qpc_reshape()). */
	mutex_lock(&qpc->lock);
	qpc->want = shape;
	qpc->wanted = true;
	mutex_unlock(&qpc->lock);
	kqp_qpc_kick(qpc);
}

/*
 * A spare slot of @group (a default PD's, or NULL) for a QP of @attr,
 * with no PD, CQs or SRQ given, off the group's list; or NULL, and the
 * miss teaches the cache.  The caller holds the lock of the table the
 * group's PD is in, and charges the PD kqp_qpc_group_bytes() after.
 */
struct kqp_qpc_slot *kqp_qpc_take(struct kqp_device *kdev,
				  struct kqp_qpc_group *group,
				  const struct ib_qp_init_attr *attr)
{
	struct kqp_qpc *qpc = kdev->qpc;
	struct kqp_qpc_slot *slot;

	if (attr->qp_type != IB_QPT_RC && attr->qp_type != IB_QPT_UD)
		return NULL;
	if (attr->create_flags || attr->srq || attr->xrcd ||
	    attr->rwq_ind_tbl)
		return NULL;
	if (group) {
		list_for_each_entry(slot, &group->slots, entry) {
			if (kqp_qpc_fits(&group->shape, slot, attr)) {
				list_del(&slot->entry);
				group->nr--;
				atomic64_inc(&qpc->hits);
				return slot;
			}
		}
	}
	kqp_qpc_miss(qpc, attr);
	return NULL;
}

int kqp_qpc_init(struct kqp_device *kdev)
{
	struct kqp_qpc *qpc = kzalloc(sizeof(*qpc), GFP_KERNEL);
	u32 port;

	if (!qpc)
		return -ENOMEM;
	qpc->kdev = kdev;
	rdma_for_each_port(kdev->ibdev, port)
		if (rdma_protocol_ib(kdev->ibdev, port))
			qpc->ib = true;
	mutex_init(&qpc->refill_mutex);
	mutex_init(&qpc->lock);
	INIT_LIST_HEAD(&qpc->groups);
	INIT_DELAYED_WORK(&qpc->work, kqp_qpc_work);
	kdev->qpc = qpc;
	return 0;
}

/*
 * The device is going (or the module): nothing is made or adopted from
 * now on, and the idle groups go.  Adopted groups are their PDs' and go
 * with them.
 */
void kqp_qpc_exit(struct kqp_device *kdev)
{
	struct kqp_qpc *qpc = kdev->qpc;

	mutex_lock(&qpc->lock);
	qpc->dead = true;
	mutex_unlock(&qpc->lock);
	cancel_delayed_work_sync(&qpc->work);
	/* A refill running for debugfs ends; with @dead it frees all. */
	kqp_qpc_refill(qpc, -1);
	WARN_ON(qpc->nr_idle || !list_empty(&qpc->groups));
}

void kqp_qpc_free(struct kqp_device *kdev)
{
	kfree(kdev->qpc);
	kdev->qpc = NULL;
}

/*
 * /sys/kernel/debug/kqp/qp_cache: a line per device, "NAME idle N hits H
 * misses M made K adopted A returned R", then "shape TYPE SIGNAL SEND_WR
 * RECV_WR SEND_SGE RECV_SGE INLINE" once a miss said what to make.
 * Writing "INDEX [N]" refills that device's cache (to N idle slots, else
 * to qp_cache) in the writer's task, which fault injection (fail_nth) can
 * then reach, and fails as the refill did.
 */
static void kqp_qpc_show_dev(struct kqp_device *kdev, void *arg)
{
	struct seq_file *m = arg;
	struct kqp_qpc *qpc = kdev->qpc;
	struct kqp_qpc_shape shape;
	unsigned int idle;
	bool shaped;

	mutex_lock(&qpc->lock);
	idle = qpc->nr_idle;
	shape = qpc->shape;
	shaped = qpc->shaped;
	mutex_unlock(&qpc->lock);
	seq_printf(m, "%s idle %u hits %lld misses %lld made %lld",
		   dev_name(&kdev->ibdev->dev), idle,
		   (s64)atomic64_read(&qpc->hits),
		   (s64)atomic64_read(&qpc->misses),
		   (s64)atomic64_read(&qpc->made));
	seq_printf(m, " adopted %lld returned %lld",
		   (s64)atomic64_read(&qpc->adopted),
		   (s64)atomic64_read(&qpc->returned));
	if (shaped)
		seq_printf(m, " shape %s %s %u %u %u %u %u",
			   shape.qp_type == IB_QPT_RC ? "rc" : "ud",
			   shape.sq_sig_type == IB_SIGNAL_ALL_WR ? "all" : "req",
			   shape.cap.max_send_wr, shape.cap.max_recv_wr,
			   shape.cap.max_send_sge, shape.cap.max_recv_sge,
			   shape.cap.max_inline_data);
	seq_putc(m, '\n');
}

static int kqp_qpc_show(struct seq_file *m, void *v)
{
	kqp_device_for_each(kqp_qpc_show_dev, m);
	return 0;
}

static int kqp_qpc_open(struct inode *inode, struct file *file)
{
	return single_open(file, kqp_qpc_show, NULL);
}

static ssize_t kqp_qpc_write(struct file *file, const char __user *buf,
			     size_t len, loff_t *ppos)
{
	struct kqp_device *kdev;
	unsigned int index;
	int want = -1, ret;
	char kbuf[32];

	if (len >= sizeof(kbuf))
		return -EINVAL;
	if (copy_from_user(kbuf, buf, len))
		return -EFAULT;
	kbuf[len] = 0;
	ret = sscanf(kbuf, "%u %d", &index, &want);
	if (ret < 1 || (ret == 2 && (want < 0 || want > 65536)))
		return -EINVAL;
	kdev = kqp_device_get_user(index);
	if (!kdev)
		return -ENODEV;
	ret = kqp_qpc_refill(kdev->qpc, want);
	kqp_device_put(kdev);
	return ret ? ret : len;
}

static const struct file_operations kqp_qpc_fops = {
	.owner = THIS_MODULE,
	.open = kqp_qpc_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = kqp_qpc_write,
};

void kqp_qpc_debugfs_init(struct dentry *dir)
{
	debugfs_create_file("qp_cache", 0600, dir, NULL, &kqp_qpc_fops);
}
