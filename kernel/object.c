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
 * command could be using, and erases the handle last.
 */
#include <linux/sched.h>
#include <linux/slab.h>

#include "kqp.h"

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
 * parameter: EMFILE past it, as for a process's file table.
 */
int kqp_handle_alloc(struct kqp_ucontext *uctx, u32 *id)
{
	int ret;

	if (atomic_inc_return(&uctx->nr_objects) > READ_ONCE(kqp_max_objects)) {
		ret = -EMFILE;
		goto err;
	}
	/*
	 * Cyclic: a completion names its QP by handle, and one that arrives
	 * after its QP is gone must not find a new QP under the same handle.
	 */
	ret = xa_alloc_cyclic(&uctx->objects, id, NULL, xa_limit_32b,
			      &uctx->next_id, GFP_KERNEL);
	if (ret < 0)
		goto err;
	return 0;

err:
	atomic_dec(&uctx->nr_objects);
	return ret;
}

void kqp_handle_free(struct kqp_ucontext *uctx, u32 id)
{
	xa_erase(&uctx->objects, id);
	atomic_dec(&uctx->nr_objects);
}

int kqp_object_reserve(struct kqp_ucontext *uctx, struct kqp_object *obj,
		       enum kqp_obj_type type)
{
	int ret;

	obj->type = type;
	refcount_set(&obj->users, 1);
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

	old = xa_store(&uctx->objects, obj->id, obj, GFP_KERNEL);
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
	else if (!refcount_inc_not_zero(&obj->users))
		obj = ERR_PTR(-ENXIO);
	xa_unlock(&uctx->objects);
	return obj;
}

void kqp_object_put(struct kqp_object *obj)
{
	if (refcount_dec_and_test(&obj->users))
		complete(&obj->unused);
}

/* Drop the table's reference and wait until no command uses @obj. */
void kqp_object_drain(struct kqp_object *obj)
{
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

static void kqp_object_destroy(struct kqp_ucontext *uctx,
			       struct kqp_object *obj)
{
	switch (obj->type) {
	case KQP_OBJ_CM_ID:
		kqp_cm_id_destroy(uctx, obj);
		break;
	case KQP_OBJ_QP:
		kqp_qp_destroy(uctx, obj);
		break;
	case KQP_OBJ_CQ:
		kqp_cq_destroy(uctx, obj);
		break;
	case KQP_OBJ_MR:
		kqp_mr_destroy(uctx, obj);
		break;
	case KQP_OBJ_AH:
		kqp_ah_destroy(uctx, obj);
		break;
	case KQP_OBJ_PD:
		kqp_pd_destroy(uctx, obj);
		break;
	default:
		WARN_ON(1);
	}
}

/*
 * The file is being released: destroy the ids it owns, whatever their
 * state.  No command can run on the file any more, but rdma_cm can still
 * publish ids for connection requests on a listener that is not destroyed
 * yet, possibly below the iteration point; go round until a pass finds
 * none, which happens once the listeners are gone.
 */
void kqp_file_destroy_objects(struct kqp_file *kfile)
{
	struct kqp_ucontext *uctx = kfile->uctx;
	struct kqp_object *obj;
	unsigned long index;
	bool found;

	do {
		found = false;
		xa_for_each(&uctx->objects, index, obj) {
			if (obj->type != KQP_OBJ_CM_ID ||
			    container_of(obj, struct kqp_cm_id, obj)->kfile !=
				    kfile)
				continue;
			found = true;
			if (kqp_object_claim(uctx, obj))
				kqp_object_destroy(uctx, obj);
		}
		cond_resched();
	} while (found);
}

struct kqp_ucontext *kqp_ucontext_alloc(void)
{
	struct kqp_ucontext *uctx;

	uctx = kzalloc(sizeof(*uctx), GFP_KERNEL);
	if (!uctx)
		return NULL;
	kref_init(&uctx->ref);
	xa_init_flags(&uctx->objects, XA_FLAGS_ALLOC1);
	mutex_init(&uctx->lock);
	xa_init(&uctx->default_pds);
	atomic_inc(&kqp_contexts_live);
	return uctx;
}

/*
 * The last file using the table is gone.  Tear down in dependency order:
 * QPs use CQs and PDs, so they go first.
 */
static void kqp_ucontext_release(struct kref *ref)
{
	struct kqp_ucontext *uctx = container_of(ref, struct kqp_ucontext, ref);
	static const enum kqp_obj_type order[] = {
		KQP_OBJ_CM_ID, KQP_OBJ_QP, KQP_OBJ_AH, KQP_OBJ_MR, KQP_OBJ_CQ,
		KQP_OBJ_PD,
	};
	struct kqp_object *obj;
	unsigned long index;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(order); i++) {
		xa_for_each(&uctx->objects, index, obj)
			if (obj->type == order[i] &&
			    kqp_object_claim(uctx, obj))
				kqp_object_destroy(uctx, obj);
	}
	WARN_ON(!xa_empty(&uctx->objects));
	WARN_ON(atomic_read(&uctx->nr_objects));
	WARN_ON(atomic64_read(&uctx->mr_bytes));
	kqp_async_detach(uctx);
	xa_destroy(&uctx->default_pds);
	xa_destroy(&uctx->objects);
	mutex_destroy(&uctx->lock);
	kfree(uctx);
	atomic_dec(&kqp_contexts_live);
}

void kqp_ucontext_put(struct kqp_ucontext *uctx)
{
	kref_put(&uctx->ref, kqp_ucontext_release);
}

void kqp_vobj_init(struct kqp_vobj *vobj, struct kqp_device *kdev,
		   void (*destroy_hw)(struct kqp_vobj *vobj))
{
	vobj->kdev = kdev;
	vobj->destroy_hw = destroy_hw;
	spin_lock(&kdev->objects_lock);
	list_add_tail(&vobj->dev_entry, &kdev->objects);
	spin_unlock(&kdev->objects_lock);
}

/*
 * Release a verbs object's hardware half: on destruction, or earlier when
 * its device goes away (device.c), whichever comes first.
 */
void kqp_vobj_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_device *kdev = vobj->kdev;

	down_write(&kdev->hw_rwsem);
	if (!vobj->hw_gone) {
		vobj->destroy_hw(vobj);
		vobj->hw_gone = true;
	}
	spin_lock(&kdev->objects_lock);
	list_del_init(&vobj->dev_entry);
	spin_unlock(&kdev->objects_lock);
	up_write(&kdev->hw_rwsem);
}
