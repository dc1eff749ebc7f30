// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The per-file object table: handles, references and ordered teardown.
 *
 * Every object a file owns is named by a handle in kfile->objects.  An
 * object is reserved (its handle exists but reads as NULL), built, and
 * only then published, so a lookup never sees a half-built object.  A
 * lookup takes a reference under the xarray lock.  Exactly one caller
 * destroys an object: the one whose xa_cmpxchg swaps it for XA_ZERO_ENTRY.
 * That caller waits for the references to drain before freeing anything a
 * command could be using, and erases the handle last.
 */
#include <linux/sched.h>

#include "kqp.h"

int kqp_object_reserve(struct kqp_file *kfile, struct kqp_object *obj,
		       enum kqp_obj_type type)
{
	obj->type = type;
	refcount_set(&obj->users, 1);
	init_completion(&obj->unused);
	return xa_alloc(&kfile->objects, &obj->id, NULL, xa_limit_32b,
			GFP_KERNEL);
}

void kqp_object_publish(struct kqp_file *kfile, struct kqp_object *obj)
{
	void *old;

	old = xa_store(&kfile->objects, obj->id, obj, GFP_KERNEL);
	WARN_ON(old);
}

/* Free the handle of an object that was never published, or was claimed. */
void kqp_object_release_id(struct kqp_file *kfile, struct kqp_object *obj)
{
	xa_erase(&kfile->objects, obj->id);
}

/*
 * ENOENT when the handle names nothing of @type; ENXIO when it names an
 * object whose resources are already gone (a cm_id after device removal).
 */
struct kqp_object *kqp_object_get(struct kqp_file *kfile, u32 id,
				  enum kqp_obj_type type)
{
	struct kqp_object *obj;

	xa_lock(&kfile->objects);
	obj = xa_load(&kfile->objects, id);
	if (!obj || obj->type != type)
		obj = ERR_PTR(-ENOENT);
	else if (!refcount_inc_not_zero(&obj->users))
		obj = ERR_PTR(-ENXIO);
	xa_unlock(&kfile->objects);
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
bool kqp_object_claim(struct kqp_file *kfile, struct kqp_object *obj)
{
	return xa_cmpxchg(&kfile->objects, obj->id, obj, XA_ZERO_ENTRY,
			  GFP_KERNEL) == obj;
}

struct kqp_object *kqp_object_claim_id(struct kqp_file *kfile, u32 id,
				       enum kqp_obj_type type)
{
	struct kqp_object *obj;

	xa_lock(&kfile->objects);
	obj = xa_load(&kfile->objects, id);
	if (!obj || obj->type != type ||
	    __xa_cmpxchg(&kfile->objects, id, obj, XA_ZERO_ENTRY,
			 GFP_KERNEL) != obj)
		obj = ERR_PTR(-ENOENT);
	xa_unlock(&kfile->objects);
	return obj;
}

static void kqp_object_destroy(struct kqp_file *kfile, struct kqp_object *obj)
{
	switch (obj->type) {
	case KQP_OBJ_CM_ID:
		kqp_cm_id_destroy(kfile, obj);
		break;
	}
}

/*
 * The file is being released: no command can run on it any more, but
 * rdma_cm can still publish ids for connection requests on a listener that
 * is not destroyed yet, possibly below the iteration point.  Go round
 * until the table is empty; every pass destroys at least the listeners
 * found, after which they publish nothing.
 */
void kqp_file_destroy_objects(struct kqp_file *kfile)
{
	struct kqp_object *obj;
	unsigned long index;

	while (!xa_empty(&kfile->objects)) {
		xa_for_each(&kfile->objects, index, obj) {
			if (kqp_object_claim(kfile, obj))
				kqp_object_destroy(kfile, obj);
		}
		cond_resched();
	}
}
