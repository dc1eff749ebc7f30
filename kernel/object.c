// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Object tables: handles, references and ordered teardown.
 *
 * Every object is named by a handle in a struct kqp_ucontext's table.  An
 * object is reserved (its handle exists but reads as NULL), built, and
 * only then published, so a lookup never sees a half-built object.  A
 * lookup takes a reference under the xarray lock.  Exactly one caller
 * destroys an object: the one whose xa_cmpxchg swaps it for XA_ZERO_ENTRY.
 * That caller waits for the references to drain before freeing anything a
 * command could be using, and erases the handle last; the memory goes
 * after an RCU grace period.
 *
 * Nothing reads an object it found in a table without either a reference
 * or the table's xarray lock: a scan that is to destroy objects claims
 * each under the lock (kqp_object_claim_next()), because another file on
 * the table can free any object it has not claimed.
 *
 * A table belongs to the process that made it (its mm): the dispatcher
 * refuses every command that uses the table to any other process, so
 * that a child after fork(), or whoever is passed the file, can neither
 * post into the owner's registered memory nor register its own there.
 * Its objects count against the owner's user (max_objects), its kernel
 * memory against the owner's memory cgroup, and its hardware objects
 * against the owner's rdma cgroup.
 */
#include <linux/cgroup_rdma.h>
#include <linux/cred.h>
#include <linux/log2.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "kqp.h"
#include "cm.h"
#include "cq.h"
#include "pd.h"
#include "qp.h"
#include "srq.h"

/*
 * Objects of each type alive and ever made, over every table: what
 * /sys/kernel/debug/kqp/objects shows, so that a test can see that kqp,
 * and not some other library, made its QPs, and that nothing outlived
 * the process that made it.
 */
static atomic_t kqp_objects_live[KQP_OBJ_MAX];
static atomic64_t kqp_objects_made[KQP_OBJ_MAX];
static atomic_t kqp_contexts_live;

void kqp_objects_read(enum kqp_obj_type type, u32 *live, u64 *made)
{
	*live = atomic_read(&kqp_objects_live[type]);
	*made = atomic64_read(&kqp_objects_made[type]);
}

u32 kqp_contexts_read(void)
{
	return atomic_read(&kqp_contexts_live);
}

/**
 * struct kqp_user - what one user holds in kqp, over all its tables
 * @ref: one per table
 * @uid: the user, in the initial user namespace
 * @nr_objects: handles the user's tables hold, against max_objects
 * @queue_bytes: what the user's CQs, QPs and SRQs are charged, against
 *	max_queue_bytes (kqp_queue_charge())
 * @mr_bytes: the pages the user's MRs span, against max_mr_bytes
 *	(kqp_user_mr_charge())
 * @wq: where the drains of the user's send rings that the kernel
 *	committed to run (ring.c): ordered, so that one user's escape
 *	from its own CPU accounting is one CPU at a time at most
 *
 * Counting per table would let a user hold max_objects times the files
 * it can open, and max_queue_bytes and max_mr_bytes times as many bytes.
 */
struct kqp_user {
	refcount_t ref;
	uid_t uid;
	atomic_t nr_objects;
	atomic64_t queue_bytes;
	atomic64_t mr_bytes;
	struct workqueue_struct *wq;
};

/* uid -> struct kqp_user; the lock orders lookups with the last put. */
static DEFINE_XARRAY(kqp_users);
static DEFINE_MUTEX(kqp_users_lock);

/* A new user, with its workqueue: made outside kqp_users_lock. */
static struct kqp_user *kqp_user_alloc(uid_t uid)
{
	struct kqp_user *user = kzalloc(sizeof(*user), GFP_KERNEL_ACCOUNT);

	if (!user)
		return NULL;
	refcount_set(&user->ref, 1);
	user->uid = uid;
	user->wq = alloc_ordered_workqueue("kqp-u%u", 0, uid);
	if (!user->wq) {
		kfree(user);
		return NULL;
	}
	return user;
}

static void kqp_user_free(struct kqp_user *user)
{
	destroy_workqueue(user->wq);
	kfree(user);
}

static struct kqp_user *kqp_user_get(kuid_t kuid)
{
	uid_t uid = from_kuid(&init_user_ns, kuid);
	struct kqp_user *user, *made = NULL;

	mutex_lock(&kqp_users_lock);
	for (;;) {
		user = xa_load(&kqp_users, uid);
		if (user) {
			refcount_inc(&user->ref);
			break;
		}
		if (made) {
			user = made;
			made = NULL;
			if (xa_err(xa_store(&kqp_users, uid, user,
					    GFP_KERNEL))) {
				made = user;
				user = NULL;
			}
			break;
		}
		/*
		 * Making a workqueue takes the CPU hotplug lock and the
		 * workqueue pools' mutex: not under the users' lock, which
		 * every table's first command takes.
		 */
		mutex_unlock(&kqp_users_lock);
		made = kqp_user_alloc(uid);
		if (!made)
			return NULL;
		mutex_lock(&kqp_users_lock);
	}
	mutex_unlock(&kqp_users_lock);
	/* Another table of the same user stored one first, or no memory. */
	if (made)
		kqp_user_free(made);
	return user;
}

static void kqp_user_put(struct kqp_user *user)
{
	if (!refcount_dec_and_mutex_lock(&user->ref, &kqp_users_lock))
		return;
	xa_erase(&kqp_users, user->uid);
	mutex_unlock(&kqp_users_lock);
	WARN_ON(atomic_read(&user->nr_objects));
	WARN_ON(atomic64_read(&user->queue_bytes));
	WARN_ON(atomic64_read(&user->mr_bytes));
	/* Every QP is gone; its last drain may still be returning. */
	kqp_user_free(user);
}

/* Module unload: every table is gone, and with them their users. */
void kqp_users_exit(void)
{
	WARN_ON(!xa_empty(&kqp_users));
	xa_destroy(&kqp_users);
}

/*
 * The kernel memory a queue takes, as max_queue_bytes counts it: one
 * estimate for every device, from the queue's capabilities alone, that
 * errs high.  The device's part is a ring of @depth entries of @entry
 * bytes, both rounded as rxe rounds them (and hardware rings mostly are):
 * one entry more than asked, to a power of two of entries each a power
 * of two bytes.  The entry sizes are rxe's, rounded up, which are at
 * least those of the hardware we know (mlx5's 64-byte CQEs and WQE
 * blocks):
 *
 *   CQ:        cqe x 128 (rxe: an ib_wc), plus kqp's ring, its header and
 *              a power of two of 64-byte entries, whole pages
 *   send queue: max_send_wr x (256 + 16 x max_send_sge + max_inline_data)
 *              (rxe: a 208-byte WQE header before the SGEs or inline
 *              data), plus kqp's power of two of struct kqp_wr_slot
 *   recv queue: max_recv_wr x (64 + 16 x max_recv_sge) (rxe: 40 bytes
 *              before the SGEs), plus kqp's slots; none on an SRQ
 *   SRQ:       max_wr x (64 + 16 x max_sge), plus kqp's @nslots of
 *              struct kqp_srq_slot (twice max_wr: kqp_srq_grow())
 *
 * Saturating at KQP_QUEUE_BYTES_MAX (1 PiB): a capability near U32_MAX
 * is charged far past any budget, and a user's sum cannot wrap.  The
 * caller clamps what it asks the device for to the device's limits
 * first, so that a request the device refuses still fails with EINVAL.
 */
#define KQP_QUEUE_BYTES_MAX	(1ULL << 50)

static u64 kqp_pow2(u64 n)
{
	return n <= 1 ? 1 : 1ULL << order_base_2(n);
}

/* @depth is at most 2^32 and @entry below 2^37: neither rounds past 2^63. */
static u64 kqp_ring_bytes(u64 depth, u64 entry)
{
	u64 bytes;

	if (!depth)
		return 0;
	if (check_mul_overflow(kqp_pow2(depth + 1), kqp_pow2(entry), &bytes))
		return KQP_QUEUE_BYTES_MAX;
	return min(bytes, KQP_QUEUE_BYTES_MAX);
}

static u64 kqp_queue_bytes_add(u64 a, u64 b)
{
	return min(a + b, KQP_QUEUE_BYTES_MAX);	/* each is at most the max */
}

/* kqp's own ring is charged apart, as it lives on while mapped (vmem.c). */
u64 kqp_cq_queue_bytes(u32 cqe)
{
	return kqp_ring_bytes(cqe, 128);
}

u64 kqp_qp_queue_bytes(const struct ib_qp_cap *cap, bool srq)
{
	u64 send, recv = 0;

	send = kqp_ring_bytes(cap->max_send_wr,
			      256 + 16ULL * cap->max_send_sge +
			      cap->max_inline_data);
	send = kqp_queue_bytes_add(send, kqp_pow2(cap->max_send_wr) *
					 sizeof(struct kqp_wr_slot));
	if (!srq) {
		recv = kqp_ring_bytes(cap->max_recv_wr,
				      64 + 16ULL * cap->max_recv_sge);
		recv = kqp_queue_bytes_add(recv, kqp_pow2(cap->max_recv_wr) *
						 sizeof(struct kqp_wr_slot));
	}
	return kqp_queue_bytes_add(send, recv);
}

u64 kqp_srq_queue_bytes(u32 max_wr, u32 max_sge, u32 nslots)
{
	return kqp_queue_bytes_add(kqp_ring_bytes(max_wr, 64 + 16ULL * max_sge),
				   (u64)nslots * sizeof(struct kqp_srq_slot));
}

/*
 * Add @delta to the user's count @used, within @limit: never past it, even
 * for a moment (no add and take back), unless @force.  ENOMEM past it.
 */
static int kqp_user_add(atomic64_t *used, u64 limit, u64 delta, bool force)
{
	s64 old = atomic64_read(used);

	do {
		if (!force && ((u64)old > limit || delta > limit - (u64)old))
			return -ENOMEM;
	} while (!atomic64_try_cmpxchg(used, &old, old + delta));
	return 0;
}

/* The default max_queue_bytes: a sixteenth of RAM per user. */
static u64 kqp_queue_bytes_limit(void)
{
	u64 limit = READ_ONCE(kqp_max_queue_bytes);

	return limit ?: ((u64)totalram_pages() << PAGE_SHIFT) / 16;
}

/* The default max_mr_bytes: an eighth of RAM per user. */
static u64 kqp_mr_bytes_limit(void)
{
	u64 limit = READ_ONCE(kqp_max_mr_bytes);

	return limit ?: ((u64)totalram_pages() << PAGE_SHIFT) / 8;
}

static int kqp_user_queue_add(struct kqp_user *user, u64 delta, bool force)
{
	return kqp_user_add(&user->queue_bytes, kqp_queue_bytes_limit(), delta,
			    force);
}

/* The workqueue of @uctx's user, for its rings' drains (ring.c). */
struct workqueue_struct *kqp_user_wq(struct kqp_ucontext *uctx)
{
	return uctx->user->wq;
}

/*
 * Charge @bytes of pinned pages to the user of @uctx, within max_mr_bytes
 * over all its tables (ENOMEM past it), and to the table's own count,
 * which KQP_IOCTL_CTX_INFO reports.
 */
int kqp_user_mr_charge(struct kqp_ucontext *uctx, u64 bytes)
{
	int ret;

	ret = kqp_user_add(&uctx->user->mr_bytes, kqp_mr_bytes_limit(), bytes,
			   false);
	if (!ret)
		atomic64_add(bytes, &uctx->mr_bytes);
	return ret;
}

void kqp_user_mr_uncharge(struct kqp_ucontext *uctx, u64 bytes)
{
	atomic64_sub(bytes, &uctx->mr_bytes);
	atomic64_sub(bytes, &uctx->user->mr_bytes);
}

/*
 * Set what @vobj, a queue of @uctx, is charged against its user's
 * max_queue_bytes to @bytes.  Lowering it always succeeds; raising it
 * fails with ENOMEM past the budget, as for max_mr_bytes, unless @force
 * (memory already taken that cannot be given back).  Called before the
 * device allocates, with the capabilities asked for, and again with those
 * it gave if they take more.
 */
int kqp_queue_charge(struct kqp_ucontext *uctx, struct kqp_vobj *vobj,
		     u64 bytes, bool force)
{
	int ret;

	if (bytes <= vobj->queue_bytes) {
		atomic64_sub(vobj->queue_bytes - bytes,
			     &uctx->user->queue_bytes);
		vobj->queue_bytes = bytes;
		return 0;
	}
	ret = kqp_user_queue_add(uctx->user, bytes - vobj->queue_bytes, force);
	if (!ret)
		vobj->queue_bytes = bytes;
	return ret;
}

/*
 * Charge @bytes to the user of @uctx for memory that may outlive the
 * table (mapped rings, kernel/vmem.c), and hold the user for the uncharge.
 * Returns the user, or an ERR_PTR: ENOMEM past max_queue_bytes.
 */
struct kqp_user *kqp_user_charge(struct kqp_ucontext *uctx, u64 bytes)
{
	struct kqp_user *user = uctx->user;
	int ret;

	ret = kqp_user_queue_add(user, bytes, false);
	if (ret)
		return ERR_PTR(ret);
	/* The table holds a reference for as long as it lives. */
	refcount_inc(&user->ref);
	return user;
}

void kqp_user_uncharge(struct kqp_user *user, u64 bytes)
{
	atomic64_sub(bytes, &user->queue_bytes);
	kqp_user_put(user);
}

void kqp_queue_uncharge(struct kqp_ucontext *uctx, struct kqp_vobj *vobj)
{
	kqp_queue_charge(uctx, vobj, 0, false);
}

/*
 * Reserve a handle that names nothing yet, within the max_objects
 * parameter, counted per user: EMFILE past it, as for a process's file
 * table.
 */
int kqp_handle_alloc(struct kqp_ucontext *uctx, u32 *id)
{
	int ret;

	if (atomic_inc_return(&uctx->user->nr_objects) >
	    READ_ONCE(kqp_max_objects)) {
		ret = -EMFILE;
		goto err;
	}
	/*
	 * Cyclic: a completion names its QP by handle, and one that arrives
	 * after its QP is gone must not find a new QP under the same handle.
	 */
	ret = xa_alloc_cyclic(&uctx->objects, id, NULL, xa_limit_32b,
			      &uctx->next_id, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto err;
	atomic_inc(&uctx->nr_objects);
	return 0;

err:
	atomic_dec(&uctx->user->nr_objects);
	return ret;
}

void kqp_handle_free(struct kqp_ucontext *uctx, u32 id)
{
	xa_erase(&uctx->objects, id);
	atomic_dec(&uctx->nr_objects);
	atomic_dec(&uctx->user->nr_objects);
}

int kqp_object_reserve(struct kqp_ucontext *uctx, struct kqp_object *obj,
		       enum kqp_obj_type type)
{
	int ret;

	obj->type = type;
	refcount_set(&obj->users, 1);
	obj->dying = false;
	init_completion(&obj->unused);
	ret = kqp_handle_alloc(uctx, &obj->id);
	if (ret)
		return ret;
	atomic_inc(&kqp_objects_live[type]);
	atomic64_inc(&kqp_objects_made[type]);
	return 0;
}

void kqp_object_publish(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	void *old;

	old = xa_store(&uctx->objects, obj->id, obj, GFP_KERNEL_ACCOUNT);
	WARN_ON(old);
}

/* Free the handle of an object that was never published, or was claimed. */
void kqp_object_release_id(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	kqp_handle_free(uctx, obj->id);
	atomic_dec(&kqp_objects_live[obj->type]);
}

/*
 * ENOENT when the handle names nothing of @type; ENXIO when it names an
 * object whose resources are already gone (a cm_id after device removal).
 */
struct kqp_object *kqp_object_get(struct kqp_ucontext *uctx, u32 id,
				  enum kqp_obj_type type)
{
	struct kqp_object *obj;

	xa_lock(&uctx->objects);
	obj = xa_load(&uctx->objects, id);
	if (!obj || obj->type != type)
		obj = ERR_PTR(-ENOENT);
	else if (READ_ONCE(obj->dying) ||
		 !refcount_inc_not_zero(&obj->users))
		obj = ERR_PTR(-ENXIO);
	xa_unlock(&uctx->objects);
	return obj;
}

/*
 * A reference to the first usable object at *@index or after it that
 * carries @mark, and *@index moved past it; NULL when there is none.
 */
struct kqp_object *kqp_object_get_marked(struct kqp_ucontext *uctx,
					 unsigned long *index, xa_mark_t mark)
{
	struct kqp_object *obj;

	xa_lock(&uctx->objects);
	/* A claimed object (XA_ZERO_ENTRY) is never found. */
	while ((obj = xa_find(&uctx->objects, index, ULONG_MAX, mark))) {
		(*index)++;
		if (!READ_ONCE(obj->dying) &&
		    refcount_inc_not_zero(&obj->users))
			break;
	}
	xa_unlock(&uctx->objects);
	return obj;
}

void kqp_object_put(struct kqp_object *obj)
{
	if (refcount_dec_and_test(&obj->users))
		complete(&obj->unused);
}

/*
 * Drop the table's reference and wait until no command uses @obj.  An
 * object still in the table takes no new users from here on: otherwise
 * threads that overlap their commands keep @users above zero for ever.
 */
void kqp_object_drain(struct kqp_object *obj)
{
	WRITE_ONCE(obj->dying, true);
	kqp_object_put(obj);
	wait_for_completion(&obj->unused);
}

/* Become the one caller that destroys @obj; false if another already is. */
bool kqp_object_claim(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	return xa_cmpxchg(&uctx->objects, obj->id, obj, XA_ZERO_ENTRY,
			  GFP_KERNEL) == obj;
}

struct kqp_object *kqp_object_claim_id(struct kqp_ucontext *uctx, u32 id,
				       enum kqp_obj_type type)
{
	struct kqp_object *obj;

	xa_lock(&uctx->objects);
	obj = xa_load(&uctx->objects, id);
	if (!obj || obj->type != type ||
	    __xa_cmpxchg(&uctx->objects, id, obj, XA_ZERO_ENTRY,
			 GFP_KERNEL) != obj)
		obj = ERR_PTR(-ENOENT);
	xa_unlock(&uctx->objects);
	return obj;
}

/*
 * Claim the first object at *@index or after it that @match accepts, and
 * move *@index past it; NULL when there is none.  Objects are looked at
 * only under the table's lock, and an object another caller claimed is
 * not seen at all (XA_ZERO_ENTRY reads as empty), so nothing is read that
 * could be freed meanwhile.
 */
static struct kqp_object *
kqp_object_claim_next(struct kqp_ucontext *uctx, unsigned long *index,
		      bool (*match)(struct kqp_object *obj, void *arg),
		      void *arg)
{
	struct kqp_object *obj, *found = NULL;
	unsigned long i;

	xa_lock(&uctx->objects);
	xa_for_each_start(&uctx->objects, i, obj, *index) {
		if (!match(obj, arg))
			continue;
		if (__xa_cmpxchg(&uctx->objects, i, obj, XA_ZERO_ENTRY,
				 GFP_KERNEL) == obj) {
			found = obj;
			*index = i + 1;
			break;
		}
	}
	xa_unlock(&uctx->objects);
	return found;
}

/**
 * struct kqp_object_ops - what the table does with an object of one type
 * @destroy: free an object that is claimed, or was never published:
 *	drain its users, release its hardware, its dependencies and its
 *	handle
 */
struct kqp_object_ops {
	void (*destroy)(struct kqp_ucontext *uctx, struct kqp_object *obj);
};

static const struct kqp_object_ops kqp_object_ops[KQP_OBJ_MAX] = {
	[KQP_OBJ_CM_ID] = { .destroy = kqp_cm_id_destroy },
	[KQP_OBJ_PD] = { .destroy = kqp_pd_destroy },
	[KQP_OBJ_CQ] = { .destroy = kqp_cq_destroy },
	[KQP_OBJ_QP] = { .destroy = kqp_qp_destroy },
	[KQP_OBJ_MR] = { .destroy = kqp_mr_destroy },
	[KQP_OBJ_AH] = { .destroy = kqp_ah_destroy },
	[KQP_OBJ_SRQ] = { .destroy = kqp_srq_destroy },
};

/* Destroy @obj, which the caller claimed. */
static void kqp_object_destroy(struct kqp_ucontext *uctx,
			       struct kqp_object *obj)
{
	if (WARN_ON(obj->type >= KQP_OBJ_MAX ||
		    !kqp_object_ops[obj->type].destroy))
		return;
	kqp_object_ops[obj->type].destroy(uctx, obj);
}

/**
 * kqp_object_abort - destroy an object that was reserved but never published
 * @uctx: the table it was reserved in
 * @obj: the object, built as far as its type's destroy can undo
 *
 * As iommufd_object_abort_and_destroy(): nobody can have found the object
 * (its handle reads as empty until published), so there is no claim to
 * win; the error path of a command that made it calls this instead of
 * publishing it only to claim it back.
 */
void kqp_object_abort(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	WARN_ON(xa_load(&uctx->objects, obj->id));
	kqp_object_destroy(uctx, obj);
}

/*
 * A destroy command on a type whose objects nothing else waits for (MRs,
 * AHs): claim the handle, then destroy through the type's operations.
 */
int kqp_object_destroy_id(struct kqp_ucontext *uctx, u32 id,
			  enum kqp_obj_type type)
{
	struct kqp_object *obj = kqp_object_claim_id(uctx, id, type);

	if (IS_ERR(obj))
		return PTR_ERR(obj);
	kqp_object_destroy(uctx, obj);
	return 0;
}

static bool kqp_object_is_files_id(struct kqp_object *obj, void *kfile)
{
	return obj->type == KQP_OBJ_CM_ID &&
	       READ_ONCE(container_of(obj, struct kqp_cm_id, obj)->kfile) ==
		       kfile;
}

/*
 * The file is being released: destroy the ids it owns, whatever their
 * state.  No command can run on the file any more, but other files on
 * the table can, and rdma_cm can still publish ids for connection
 * requests on a listener that is not destroyed yet, possibly below the
 * scan's position; go round until a pass finds none, which happens once
 * the listeners are gone.
 */
void kqp_file_destroy_objects(struct kqp_file *kfile)
{
	struct kqp_ucontext *uctx = kfile->uctx;
	struct kqp_object *obj;
	unsigned long index;
	bool found;

	do {
		found = false;
		index = 0;
		while ((obj = kqp_object_claim_next(uctx, &index,
						    kqp_object_is_files_id,
						    kfile))) {
			found = true;
			kqp_object_destroy(uctx, obj);
			cond_resched();
		}
	} while (found);
}

/*
 * A table for the calling process: its mm, user and memory cgroup are
 * the table's from now on.
 */
struct kqp_ucontext *kqp_ucontext_alloc(void)
{
	struct kqp_ucontext *uctx;

	if (!current->mm)
		return NULL;
	uctx = kzalloc(sizeof(*uctx), GFP_KERNEL_ACCOUNT);
	if (!uctx)
		return NULL;
	uctx->user = kqp_user_get(current_euid());
	if (!uctx->user) {
		kfree(uctx);
		return NULL;
	}
	kref_init(&uctx->ref);
	xa_init_flags(&uctx->objects, XA_FLAGS_ALLOC1);
	mutex_init(&uctx->lock);
	xa_init(&uctx->default_pds);
	mutex_init(&uctx->dev_lock);
	xa_init(&uctx->devices);
	uctx->mm = current->mm;
	mmgrab(uctx->mm);
	uctx->owner = get_task_pid(current, PIDTYPE_TGID);
#ifdef CONFIG_MEMCG
	uctx->memcg = get_mem_cgroup_from_mm(current->mm);
#endif
	atomic_inc(&kqp_contexts_live);
	return uctx;
}

static bool kqp_object_is_type(struct kqp_object *obj, void *type)
{
	return obj->type == *(enum kqp_obj_type *)type;
}

/*
 * The last file using the table is gone.  Tear down in dependency order:
 * QPs use CQs, SRQs and PDs, so they go first; SRQs use PDs.
 */
static void kqp_ucontext_release(struct kref *ref)
{
	struct kqp_ucontext *uctx = container_of(ref, struct kqp_ucontext, ref);
	static const enum kqp_obj_type order[] = {
		KQP_OBJ_CM_ID, KQP_OBJ_QP, KQP_OBJ_SRQ, KQP_OBJ_AH, KQP_OBJ_MR,
		KQP_OBJ_CQ, KQP_OBJ_PD,
	};
	enum kqp_obj_type type;
	struct kqp_object *obj;
	unsigned long index;
	unsigned int i;

	/* Before any object goes: the poller uses QPs without the table's ref. */
	kqp_poller_stop(uctx);
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		type = order[i];
		index = 0;
		while ((obj = kqp_object_claim_next(uctx, &index,
						    kqp_object_is_type, &type)))
			kqp_object_destroy(uctx, obj);
	}
	WARN_ON(!xa_empty(&uctx->objects));
	WARN_ON(atomic_read(&uctx->nr_objects));
	WARN_ON(atomic64_read(&uctx->mr_bytes));
	WARN_ON(!xa_empty(&uctx->devices));
	kqp_async_detach(uctx);
	xa_destroy(&uctx->devices);
	xa_destroy(&uctx->default_pds);
	xa_destroy(&uctx->objects);
	mutex_destroy(&uctx->dev_lock);
	mutex_destroy(&uctx->lock);
#ifdef CONFIG_MEMCG
	mem_cgroup_put(uctx->memcg);
#endif
	mmdrop(uctx->mm);
	put_pid(uctx->owner);
	kqp_user_put(uctx->user);
	kfree(uctx);
	atomic_dec(&kqp_contexts_live);
}

void kqp_ucontext_put(struct kqp_ucontext *uctx)
{
	kref_put(&uctx->ref, kqp_ucontext_release);
}

#ifdef CONFIG_CGROUP_RDMA
/**
 * struct kqp_udev - a table's use of one device
 * @cg: the rdma cgroup its hca_handle is charged to
 * @users: the table's objects charged on the device
 *
 * uverbs charges a handle for each device context a process opens; kqp
 * has none, so a table's use of a device stands for one: charged with the
 * table's first hardware object on the device, uncharged with its last.
 */
struct kqp_udev {
	struct rdma_cgroup *cg;
	unsigned int users;
};

static int kqp_udev_get(struct kqp_ucontext *uctx, struct kqp_device *kdev)
{
	struct kqp_udev *udev;
	int ret;

	lockdep_assert_held(&uctx->dev_lock);
	udev = xa_load(&uctx->devices, kdev->index);
	if (udev) {
		udev->users++;
		return 0;
	}
	udev = kzalloc(sizeof(*udev), GFP_KERNEL_ACCOUNT);
	if (!udev)
		return -ENOMEM;
	ret = rdmacg_try_charge(&udev->cg, &kdev->ibdev->cg_device,
				RDMACG_RESOURCE_HCA_HANDLE);
	if (ret)
		goto err_free;
	ret = xa_err(xa_store(&uctx->devices, kdev->index, udev,
			      GFP_KERNEL_ACCOUNT));
	if (ret)
		goto err_uncharge;
	udev->users = 1;
	return 0;

err_uncharge:
	rdmacg_uncharge(udev->cg, &kdev->ibdev->cg_device,
			RDMACG_RESOURCE_HCA_HANDLE);
err_free:
	kfree(udev);
	return ret;
}

static void kqp_udev_put(struct kqp_ucontext *uctx, struct kqp_device *kdev)
{
	struct kqp_udev *udev;

	lockdep_assert_held(&uctx->dev_lock);
	udev = xa_load(&uctx->devices, kdev->index);
	if (WARN_ON(!udev) || --udev->users)
		return;
	xa_erase(&uctx->devices, kdev->index);
	rdmacg_uncharge(udev->cg, &kdev->ibdev->cg_device,
			RDMACG_RESOURCE_HCA_HANDLE);
	kfree(udev);
}
#endif

/*
 * Charge a verbs object to the caller's rdma cgroup before its hardware
 * is allocated: one hca_object, and the table's hca_handle for the
 * device if this is its first object there.  EAGAIN past rdma.max, as
 * from uverbs.  The caller holds kdev->hw_rwsem for reading and checked
 * that the device lives; the charge is undone by kqp_vobj_uncharge(), or
 * with the hardware by kqp_vobj_release_hw().
 */
int kqp_vobj_charge(struct kqp_vobj *vobj, struct kqp_ucontext *uctx,
		    struct kqp_device *kdev)
{
#ifdef CONFIG_CGROUP_RDMA
	int ret;

	lockdep_assert_held_read(&kdev->hw_rwsem);
	mutex_lock(&uctx->dev_lock);
	ret = kqp_udev_get(uctx, kdev);
	if (ret)
		goto out;
	ret = rdmacg_try_charge(&vobj->cg, &kdev->ibdev->cg_device,
				RDMACG_RESOURCE_HCA_OBJECT);
	if (ret) {
		kqp_udev_put(uctx, kdev);
		goto out;
	}
	vobj->uctx = uctx;
	vobj->kdev = kdev;
out:
	mutex_unlock(&uctx->dev_lock);
	return ret;
#else
	return 0;
#endif
}

/* Undo kqp_vobj_charge(), while the device's hardware is held. */
void kqp_vobj_uncharge(struct kqp_vobj *vobj)
{
#ifdef CONFIG_CGROUP_RDMA
	struct kqp_ucontext *uctx = vobj->uctx;

	if (!uctx)
		return;
	mutex_lock(&uctx->dev_lock);
	rdmacg_uncharge(vobj->cg, &vobj->kdev->ibdev->cg_device,
			RDMACG_RESOURCE_HCA_OBJECT);
	kqp_udev_put(uctx, vobj->kdev);
	mutex_unlock(&uctx->dev_lock);
	vobj->uctx = NULL;
#endif
}

void kqp_vobj_init(struct kqp_vobj *vobj, struct kqp_device *kdev,
		   void (*destroy_hw)(struct kqp_vobj *vobj))
{
	vobj->kdev = kdev;
	vobj->destroy_hw = destroy_hw;
	vobj->owner = get_task_pid(current, PIDTYPE_TGID);
	spin_lock(&kdev->objects_lock);
	list_add_tail(&vobj->dev_entry, &kdev->objects);
	spin_unlock(&kdev->objects_lock);
}

/*
 * The hardware half goes, with its rdma cgroup charge, before the device
 * can be unregistered (which drops the device's cgroup pools).  With
 * kdev->hw_rwsem held for writing.
 */
void kqp_vobj_release_hw(struct kqp_vobj *vobj)
{
	lockdep_assert_held_write(&vobj->kdev->hw_rwsem);
	if (vobj->hw_gone)
		return;
	vobj->destroy_hw(vobj);
	vobj->hw_gone = true;
	kqp_vobj_uncharge(vobj);
}

/*
 * Release a verbs object's hardware half: on destruction, or earlier when
 * its device goes away (device.c), whichever comes first.
 */
void kqp_vobj_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_device *kdev = vobj->kdev;
	struct pid *owner;

	down_write(&kdev->hw_rwsem);
	kqp_vobj_release_hw(vobj);
	spin_lock(&kdev->objects_lock);
	owner = kqp_vobj_unlist(vobj);
	spin_unlock(&kdev->objects_lock);
	up_write(&kdev->hw_rwsem);
	put_pid(owner);
}

/*
 * Take @vobj off its device's list, with kdev->objects_lock held; the
 * caller puts the owner returned once the lock is dropped.  Idempotent.
 */
struct pid *kqp_vobj_unlist(struct kqp_vobj *vobj)
{
	struct pid *owner = vobj->owner;

	lockdep_assert_held(&vobj->kdev->objects_lock);
	list_del_init(&vobj->dev_entry);
	vobj->owner = NULL;
	return owner;
}
