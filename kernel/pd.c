// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Protection domains, and the default PD each table has per device.
 *
 * Kernel PDs (ib_alloc_pd() without IB_PD_UNSAFE_GLOBAL_RKEY): nothing
 * done through them reaches memory that was not registered.  A default
 * PD exists while someone holds a reference from KQP_ALLOC_PD_DEFAULT or
 * a QP created with no PD uses it, and goes with the last of them.
 */
#include <linux/cgroup_rdma.h>
#include <linux/slab.h>

#include "kqp.h"
#include "account.h"
#include "pd.h"
#include "qp_cache.h"

/*
 * Deallocate a kernel PD of kqp's (a table's, or the QP cache's).
 * ib_dealloc_pd() frees one even while used (with a WARN): one still used
 * by a QP the device refused to destroy is left to the device, and the
 * module stays loaded.
 */
void kqp_ib_pd_dealloc(struct ib_pd *ibpd)
{
	if (atomic_read(&ibpd->usecnt)) {
		pr_err_ratelimited("kqp: a PD is still in use by the device; left to it\n");
		__module_get(THIS_MODULE);
	} else {
		ib_dealloc_pd(ibpd);
	}
}

/*
 * The rdma cgroup charge of a default PD's spare cached QPs and their CQs
 * (qp_cache.c): KQP_QPC_SLOT_OBJS hca_objects each, to the cgroup of the
 * task that made the PD, as if it had made them.  A QP taken is charged
 * as its own object (kqp_vobj_begin()), and its slot's charge goes.
 */
#ifdef CONFIG_CGROUP_RDMA
static void kqp_pd_qpc_uncharge(struct kqp_pd *pd, struct kqp_device *kdev,
				unsigned int objs)
{
	for (; objs && pd->qpc_objs; objs--, pd->qpc_objs--)
		rdmacg_uncharge(pd->qpc_cg, &kdev->ibdev->cg_device,
				RDMACG_RESOURCE_HCA_OBJECT);
}

static int kqp_pd_qpc_charge(struct kqp_pd *pd, struct kqp_device *kdev,
			     unsigned int objs)
{
	struct rdma_cgroup *cg;

	while (pd->qpc_objs < objs) {
		if (rdmacg_try_charge(&cg, &kdev->ibdev->cg_device,
				      RDMACG_RESOURCE_HCA_OBJECT))
			goto err;
		/* One cgroup for all: the task may move meanwhile. */
		if (pd->qpc_objs && cg != pd->qpc_cg) {
			rdmacg_uncharge(cg, &kdev->ibdev->cg_device,
					RDMACG_RESOURCE_HCA_OBJECT);
			goto err;
		}
		pd->qpc_cg = cg;
		pd->qpc_objs++;
	}
	return 0;

err:
	kqp_pd_qpc_uncharge(pd, kdev, pd->qpc_objs);
	return -EAGAIN;
}
#else
static void kqp_pd_qpc_uncharge(struct kqp_pd *pd, struct kqp_device *kdev,
				unsigned int objs)
{
}

static int kqp_pd_qpc_charge(struct kqp_pd *pd, struct kqp_device *kdev,
			     unsigned int objs)
{
	return 0;
}
#endif

/*
 * Adopt an idle group of the QP cache as the new default PD @pd of
 * @uctx, if there is one and the table can pay for its spare QPs: their
 * queues against max_queue_bytes, their objects to the rdma cgroup.
 */
static void kqp_pd_qpc_adopt(struct kqp_pd *pd, struct kqp_ucontext *uctx,
			     struct kqp_device *kdev)
{
	struct kqp_qpc_group *group = kqp_qpc_adopt(kdev);

	if (!group)
		return;
	if (kqp_queue_charge(uctx, &pd->vobj, kqp_qpc_group_bytes(group),
			     false))
		goto err;
	if (kqp_pd_qpc_charge(pd, kdev,
			      kqp_qpc_group_nr(group) * KQP_QPC_SLOT_OBJS)) {
		kqp_queue_charge(uctx, &pd->vobj, 0, false);
		goto err;
	}
	pd->qpc = group;
	return;

err:
	kqp_qpc_unadopt(kdev, group);
}

/*
 * A spare QP of @pd's group was taken: the PD pays for one fewer.  With
 * @pd->uctx->lock held.
 */
void kqp_pd_qpc_took(struct kqp_pd *pd)
{
	lockdep_assert_held(&pd->uctx->lock);
	kqp_queue_charge(pd->uctx, &pd->vobj, kqp_qpc_group_bytes(pd->qpc),
			 false);
	kqp_pd_qpc_uncharge(pd, pd->vobj.kdev, KQP_QPC_SLOT_OBJS);
}

/*
 * The end of a default PD from the QP cache: the PD goes back to the
 * cache with its spare QPs when they are all that use it, or they go.
 */
static bool kqp_pd_qpc_end(struct kqp_pd *pd)
{
	struct kqp_qpc_group *group = pd->qpc;
	struct kqp_device *kdev = pd->vobj.kdev;

	pd->qpc = NULL;
	kqp_pd_qpc_uncharge(pd, kdev, pd->qpc_objs);
	if (kqp_qpc_group_nr(group) &&
	    atomic_read(&pd->pd->usecnt) == kqp_qpc_group_nr(group)) {
		kqp_qpc_unadopt(kdev, group);
		pd->pd = NULL;
		return true;
	}
	kqp_qpc_group_release(group);
	return false;
}

static void kqp_pd_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_pd *pd = container_of(vobj, struct kqp_pd, vobj);

	/* Its spare cached QPs first: they use it. */
	if (pd->qpc && kqp_pd_qpc_end(pd))
		return;
	kqp_ib_pd_dealloc(pd->pd);
	pd->pd = NULL;
}

/*
 * A new PD, reserved in @uctx but not published.  The caller holds
 * kdev->hw_rwsem for reading and checked that the device lives.
 */
static struct kqp_pd *kqp_pd_create_locked(struct kqp_ucontext *uctx,
					   struct kqp_device *kdev,
					   bool is_default)
{
	struct kqp_pd *pd;
	struct ib_pd *ibpd;
	int ret;

	pd = kzalloc(sizeof(*pd), GFP_KERNEL_ACCOUNT);
	if (!pd)
		return ERR_PTR(-ENOMEM);
	ret = kqp_vobj_begin(uctx, &pd->vobj, KQP_OBJ_PD, kdev, 0);
	if (ret)
		goto err_free;
	/*
	 * A default PD comes from the QP cache when it has a group, with
	 * the group's spare QPs, which the table pays for (qp_cache.c).
	 */
	if (is_default)
		kqp_pd_qpc_adopt(pd, uctx, kdev);
	if (pd->qpc) {
		ibpd = kqp_qpc_group_pd(pd->qpc);
	} else {
		ibpd = ib_alloc_pd(kdev->ibdev, 0);
		if (IS_ERR(ibpd)) {
			ret = PTR_ERR(ibpd);
			kqp_vobj_cancel(uctx, &pd->vobj);
			goto err_free;
		}
	}
	pd->pd = ibpd;
	pd->uctx = uctx;
	xa_init(&pd->mrs);
	pd->is_default = is_default;
	kqp_vobj_made(&pd->vobj, kdev, kqp_pd_destroy_hw);
	return pd;

err_free:
	kfree(pd);
	return ERR_PTR(ret);
}

/*
 * The PD is claimed (or was never published) and unused: nothing can
 * reach it any more.
 */
void kqp_pd_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	struct kqp_pd *pd = container_of(obj, struct kqp_pd, vobj.obj);
	struct kqp_device *kdev = pd->vobj.kdev;

	kqp_object_drain(obj);
	kqp_vobj_destroy_hw(&pd->vobj);
	if (pd->is_default)
		xa_erase(&uctx->default_pds, kdev->index);
	kqp_queue_uncharge(uctx, &pd->vobj);
	kqp_object_release_id(uctx, obj);
	kqp_device_put(kdev);
	WARN_ON(!xa_empty(&pd->mrs));
	xa_destroy(&pd->mrs);
	kfree_rcu(pd, vobj.obj.rcu);
}

/*
 * Called with uctx->lock held when a default PD may have lost its last
 * reference; the caller destroys what this returns, after dropping the
 * lock.
 */
static bool kqp_pd_default_unused(struct kqp_pd *pd)
{
	lockdep_assert_held(&pd->uctx->lock);
	if (!pd->is_default || pd->default_refs || pd->users)
		return false;
	/* Nobody can find it from now on; the handle may be claimed. */
	xa_erase(&pd->uctx->default_pds, pd->vobj.kdev->index);
	pd->is_default = false;
	return kqp_object_claim(pd->uctx, &pd->vobj.obj);
}

/*
 * The device's default PD in @uctx, with one more user (a QP).  The
 * caller holds kdev->hw_rwsem for reading (lock order: the device's
 * rwsem, then the table's lock) and checked that the device lives.
 */
struct kqp_pd *kqp_pd_get_default_locked(struct kqp_ucontext *uctx,
					 struct kqp_device *kdev)
{
	struct kqp_pd *pd;
	int ret;

	mutex_lock(&uctx->lock);
	pd = xa_load(&uctx->default_pds, kdev->index);
	if (!pd) {
		/* Room first, so nothing can fail once the PD exists. */
		ret = xa_reserve(&uctx->default_pds, kdev->index, GFP_KERNEL_ACCOUNT);
		if (ret) {
			pd = ERR_PTR(ret);
			goto out;
		}
		pd = kqp_pd_create_locked(uctx, kdev, true);
		if (IS_ERR(pd)) {
			xa_release(&uctx->default_pds, kdev->index);
			goto out;
		}
		xa_store(&uctx->default_pds, kdev->index, pd, GFP_KERNEL_ACCOUNT);
		kqp_object_publish(uctx, &pd->vobj.obj);
	}
	pd->users++;
out:
	mutex_unlock(&uctx->lock);
	return pd;
}

/*
 * One more user (a QP) of a PD the caller looked up: refused if the PD is
 * being destroyed, which is decided under the same lock.
 */
static int kqp_pd_add_user(struct kqp_pd *pd)
{
	struct kqp_ucontext *uctx = pd->uctx;
	int ret = 0;

	mutex_lock(&uctx->lock);
	if (xa_load(&uctx->objects, pd->vobj.obj.id) != pd)
		ret = -ENOENT;
	else
		pd->users++;
	mutex_unlock(&uctx->lock);
	return ret;
}

/*
 * The PD @handle names, with one more user (a QP, an MR or an AH): ENOENT
 * or ENXIO as kqp_object_get(), or ENOENT if it is being destroyed.
 */
struct kqp_pd *kqp_pd_take(struct kqp_ucontext *uctx, u32 handle)
{
	struct kqp_object *obj = kqp_object_get(uctx, handle, KQP_OBJ_PD);
	struct kqp_pd *pd;
	int ret;

	if (IS_ERR(obj))
		return ERR_CAST(obj);
	pd = container_of(obj, struct kqp_pd, vobj.obj);
	ret = kqp_pd_add_user(pd);
	kqp_object_put(obj);
	return ret ? ERR_PTR(ret) : pd;
}

/* Drop a user (a QP) of @pd; a default PD may go with it. */
static void kqp_pd_put_count(struct kqp_pd *pd, unsigned int *count)
{
	struct kqp_ucontext *uctx = pd->uctx;
	bool destroy;

	mutex_lock(&uctx->lock);
	(*count)--;
	destroy = kqp_pd_default_unused(pd);
	mutex_unlock(&uctx->lock);
	if (destroy)
		kqp_pd_destroy(uctx, &pd->vobj.obj);
}

void kqp_pd_put_user(struct kqp_pd *pd)
{
	kqp_pd_put_count(pd, &pd->users);
}

static void kqp_pd_put_default_ref(struct kqp_pd *pd)
{
	kqp_pd_put_count(pd, &pd->default_refs);
}

int kqp_alloc_pd_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_alloc_pd *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_device *kdev;
	struct kqp_pd *pd;
	int ret;

	/* __reserved_out stays zero: no local_dma_lkey for userspace. */
	kdev = kqp_device_get_user(cmd->device_index);
	if (!kdev)
		return -ENODEV;

	down_read(&kdev->hw_rwsem);
	if (kdev->dead)
		pd = ERR_PTR(-ENXIO);
	else if (cmd->flags & KQP_ALLOC_PD_DEFAULT)
		pd = kqp_pd_get_default_locked(uctx, kdev);
	else
		pd = kqp_pd_create_locked(uctx, kdev, false);
	up_read(&kdev->hw_rwsem);
	if (IS_ERR(pd)) {
		ret = PTR_ERR(pd);
		goto out;
	}

	if (cmd->flags & KQP_ALLOC_PD_DEFAULT) {
		/* Trade the user reference for a handed-out one. */
		mutex_lock(&uctx->lock);
		pd->users--;
		pd->default_refs++;
		mutex_unlock(&uctx->lock);
		cmd->out_pd = pd->vobj.obj.id;
		ret = kqp_ucmd_respond(ucmd, sizeof(*cmd));
		if (ret)
			kqp_pd_put_default_ref(pd);
		goto out;
	}

	cmd->out_pd = pd->vobj.obj.id;
	ret = kqp_object_commit(ucmd, &pd->vobj.obj, sizeof(*cmd));
out:
	kqp_device_put(kdev);
	return ret;
}

int kqp_dealloc_pd_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_dealloc_pd *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_object *obj;
	bool destroy = false;
	struct kqp_pd *pd;
	int ret = 0;

	obj = kqp_object_get(uctx, cmd->pd, KQP_OBJ_PD);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	pd = container_of(obj, struct kqp_pd, vobj.obj);

	/*
	 * The reference is checked and dropped under one hold of the lock:
	 * two callers racing for the last one must not both get it.
	 */
	mutex_lock(&uctx->lock);
	if (pd->is_default) {
		if (!pd->default_refs) {
			ret = -EINVAL;
		} else {
			pd->default_refs--;
			destroy = kqp_pd_default_unused(pd);
		}
	} else if (pd->users) {
		ret = -EBUSY;
	} else if (!kqp_object_claim(uctx, obj)) {
		ret = -ENOENT;
	} else {
		destroy = true;
	}
	mutex_unlock(&uctx->lock);
	kqp_object_put(obj);
	if (destroy)
		kqp_pd_destroy(uctx, obj);
	return ret;
}
