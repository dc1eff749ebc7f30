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
 * Its objects count against the owner's user, its memory cgroup and its
 * rdma cgroup (account.c).
 */
#include <linux/cred.h>
#include <linux/memcontrol.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "kqp.h"
#include "account.h"
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

/*
 * Reserve a handle that names nothing yet, within the max_objects
 * parameter (kqp_user_handle_charge()).
 */
int kqp_handle_alloc(struct kqp_ucontext *uctx, u32 *id)
{
	int ret;

	ret = kqp_user_handle_charge(uctx);
	if (ret)
		return ret;
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
	kqp_user_handle_uncharge(uctx);
	return ret;
}

void kqp_handle_free(struct kqp_ucontext *uctx, u32 id)
{
	xa_erase(&uctx->objects, id);
	atomic_dec(&uctx->nr_objects);
	kqp_user_handle_uncharge(uctx);
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

/*
 * The steps every verbs object's creation takes, in the spirit of uverbs'
 * rdma_alloc_begin_uobject() and _commit_, with @kdev->hw_rwsem held for
 * reading from the first to the third and the device checked alive:
 *   kqp_vobj_begin()     a handle reserved, @qbytes charged against
 *                        max_queue_bytes, the object charged to the rdma
 *                        cgroup: all before the device allocates anything;
 *   (the object made in ib_core)
 *   kqp_vobj_made()      the device referenced, the object on its list;
 *   kqp_object_commit()  the answer written, then the object published,
 *                        or aborted (file.c).
 * Until kqp_vobj_made(), kqp_vobj_cancel() undoes kqp_vobj_begin(); after
 * it, kqp_object_abort() undoes everything.
 */
int kqp_vobj_begin(struct kqp_ucontext *uctx, struct kqp_vobj *vobj,
		   enum kqp_obj_type type, struct kqp_device *kdev, u64 qbytes)
{
	int ret;

	lockdep_assert_held_read(&kdev->hw_rwsem);
	ret = kqp_object_reserve(uctx, &vobj->obj, type);
	if (ret)
		return ret;
	ret = kqp_queue_charge(uctx, vobj, qbytes, false);
	if (ret)
		goto err_release;
	ret = kqp_vobj_charge(vobj, uctx, kdev);
	if (ret)
		goto err_queue;
	return 0;

err_queue:
	kqp_queue_uncharge(uctx, vobj);
err_release:
	kqp_object_release_id(uctx, &vobj->obj);
	return ret;
}

void kqp_vobj_cancel(struct kqp_ucontext *uctx, struct kqp_vobj *vobj)
{
	kqp_vobj_uncharge(vobj);
	kqp_queue_uncharge(uctx, vobj);
	kqp_object_release_id(uctx, &vobj->obj);
}

/*
 * The verbs object @handle names, referenced, with its device's hardware
 * held for a command (hw_rwsem for reading); ENXIO once device removal
 * took its hardware half.  kqp_vobj_put_hw() lets both go.
 */
struct kqp_vobj *kqp_vobj_get_hw(struct kqp_ucontext *uctx, u32 handle,
				 enum kqp_obj_type type)
{
	struct kqp_object *obj = kqp_object_get(uctx, handle, type);
	struct kqp_vobj *vobj;

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	vobj = container_of(obj, struct kqp_vobj, obj);
	down_read(&vobj->kdev->hw_rwsem);
	if (!vobj->hw_gone)
		return vobj;
	up_read(&vobj->kdev->hw_rwsem);
	kqp_object_put(obj);
	return ERR_PTR(-ENXIO);
}

void kqp_vobj_put_hw(struct kqp_vobj *vobj)
{
	up_read(&vobj->kdev->hw_rwsem);
	kqp_object_put(&vobj->obj);
}

void kqp_vobj_made(struct kqp_vobj *vobj, struct kqp_device *kdev,
		   void (*destroy_hw)(struct kqp_vobj *vobj))
{
	kref_get(&kdev->ref);
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
