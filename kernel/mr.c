// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Memory regions: the caller's memory, registered in the kernel.
 *
 * ib_reg_user_mr() pins the calling process's pages (ib_umem_get(),
 * charged to its RLIMIT_MEMLOCK), so an MR's keys address the caller's
 * virtual addresses exactly as on the userspace verbs path.  Each PD keeps
 * its MRs by lkey: every SGE of every work request is checked against
 * them before kqp posts it, so the device is never handed a range the
 * caller did not register in that PD, with the access it needs.
 */
#include <linux/bits.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>

#include "kqp.h"
#include "account.h"
#include "pd.h"

/* enum ibv_access_flags kqp accepts; they equal IB_ACCESS_*. */
#define KQP_ACCESS_LOCAL_WRITE		BIT(0)
#define KQP_ACCESS_REMOTE_WRITE		BIT(1)
#define KQP_ACCESS_REMOTE_READ		BIT(2)
#define KQP_ACCESS_REMOTE_ATOMIC	BIT(3)
#define KQP_ACCESS_SUPPORTED	(KQP_ACCESS_LOCAL_WRITE |		\
				 KQP_ACCESS_REMOTE_WRITE |		\
				 KQP_ACCESS_REMOTE_READ |		\
				 KQP_ACCESS_REMOTE_ATOMIC)

/*
 * IBV_ACCESS_OPTIONAL_RANGE: hints (relaxed ordering, and any defined
 * later) that a device without them ignores, so uverbs takes them
 * whatever the device.  kqp takes them too and passes none on: they
 * change how a device may order its writes, never what a work request
 * may touch, and a driver written before the range existed may refuse
 * them.
 */
#define KQP_ACCESS_OPTIONAL		GENMASK(29, 20)

/*
 * The bits below the optional range that the verbs define (up to
 * IBV_ACCESS_FLUSH_PERSISTENT).  Those kqp does not offer (memory window
 * binding, zero-based, on-demand paging, huge pages, flush) are
 * EOPNOTSUPP; a bit no verbs define is EINVAL, as uverbs answers.
 */
#define KQP_ACCESS_DEFINED		GENMASK(9, 0)

static_assert(KQP_ACCESS_OPTIONAL == IB_ACCESS_OPTIONAL);
static_assert(KQP_ACCESS_LOCAL_WRITE == IB_ACCESS_LOCAL_WRITE);
static_assert(KQP_ACCESS_REMOTE_WRITE == IB_ACCESS_REMOTE_WRITE);
static_assert(KQP_ACCESS_REMOTE_READ == IB_ACCESS_REMOTE_READ);
static_assert(KQP_ACCESS_REMOTE_ATOMIC == IB_ACCESS_REMOTE_ATOMIC);

static void kqp_mr_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_mr *mr = container_of(vobj, struct kqp_mr, vobj);

	ib_dereg_mr(mr->mr);
	mr->mr = NULL;
}

/*
 * Charge the pages [addr, addr + length) spans to the context's user,
 * within the max_mr_bytes parameter over all the user's tables (an eighth
 * of RAM when 0): ENOMEM past it, as for RLIMIT_MEMLOCK.  Unlike
 * RLIMIT_MEMLOCK, CAP_IPC_LOCK does not lift it, and more processes do
 * not multiply it.
 */
static int kqp_mr_charge(struct kqp_ucontext *uctx, struct kqp_mr *mr,
			 u64 addr, u64 length)
{
	u64 end = addr + length;	/* the caller checked it for overflow */
	u64 bytes;
	int ret;

	if (PAGE_ALIGN(end) < end)
		return -EINVAL;
	bytes = PAGE_ALIGN(end) - ALIGN_DOWN(addr, PAGE_SIZE);
	ret = kqp_user_mr_charge(uctx, bytes);
	if (!ret)
		mr->charged = bytes;
	return ret;
}

static void kqp_mr_uncharge(struct kqp_ucontext *uctx, struct kqp_mr *mr)
{
	kqp_user_mr_uncharge(uctx, mr->charged);
	mr->charged = 0;
}

/*
 * Is [addr, addr + length) inside an MR of @pd registered with @access?
 * Called by the post path with the device's hw_rwsem held for reading,
 * which keeps every MR it can find alive: an MR is freed only after its
 * hardware half, which needs the rwsem for writing.
 */
int kqp_mr_check_sge(struct kqp_pd *pd, u64 addr, u32 length, u32 lkey,
		     int access)
{
	struct kqp_mr *mr = xa_load(&pd->mrs, lkey);
	u64 end;

	if (!mr || mr->vobj.hw_gone)
		return -EINVAL;
	if (check_add_overflow(addr, (u64)length, &end) ||
	    addr < mr->iova || end > mr->iova + mr->length)
		return -EINVAL;
	if ((mr->access & access) != access)
		return -EACCES;
	return 0;
}

/* The MR is claimed, or was never published. */
void kqp_mr_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	struct kqp_mr *mr = container_of(obj, struct kqp_mr, vobj.obj);
	struct kqp_device *kdev = mr->vobj.kdev;

	kqp_object_drain(obj);
	/* No new work request can name it from here on... */
	xa_cmpxchg(&mr->pd->mrs, mr->lkey, mr, NULL, GFP_KERNEL);
	/* ...and this waits for any post that already found it. */
	kqp_vobj_destroy_hw(&mr->vobj);
	kqp_mr_uncharge(uctx, mr);
	kqp_pd_put_user(mr->pd);
	kqp_object_release_id(uctx, obj);
	kqp_device_put(kdev);
	kfree_rcu(mr, vobj.obj.rcu);
}

int kqp_reg_mr_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_reg_mr *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct kqp_device *kdev;
	struct kqp_pd *pd;
	struct kqp_mr *mr;
	struct ib_mr *ibmr;
	u32 access;
	u64 end;
	int ret;

	if (cmd->access & ~(KQP_ACCESS_DEFINED | KQP_ACCESS_OPTIONAL))
		return -EINVAL;
	if (cmd->access & KQP_ACCESS_DEFINED & ~KQP_ACCESS_SUPPORTED)
		return -EOPNOTSUPP;
	access = cmd->access & KQP_ACCESS_SUPPORTED;
	/* Remote write and atomics need local write (IBA 10.6.3.1). */
	if ((access & (KQP_ACCESS_REMOTE_WRITE | KQP_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & KQP_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if (!cmd->length || check_add_overflow(cmd->addr, cmd->length, &end) ||
	    check_add_overflow(cmd->iova, cmd->length, &end))
		return -EINVAL;

	pd = kqp_pd_take(uctx, cmd->pd);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	kdev = pd->vobj.kdev;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr) {
		ret = -ENOMEM;
		goto err_pd;
	}
	mr->pd = pd;
	ret = kqp_mr_charge(uctx, mr, cmd->addr, cmd->length);
	if (ret)
		goto err_free;

	down_read(&kdev->hw_rwsem);
	if (pd->vobj.hw_gone) {
		ret = -ENXIO;
		goto err_unlock;
	}
	ret = kqp_vobj_begin(uctx, &mr->vobj, KQP_OBJ_MR, kdev, 0);
	if (ret)
		goto err_unlock;
	/* Pins the calling process's pages, against its RLIMIT_MEMLOCK. */
	ibmr = ib_reg_user_mr(pd->pd, cmd->addr, cmd->length, cmd->iova,
			      access);
	if (IS_ERR(ibmr)) {
		ret = PTR_ERR(ibmr);
		kqp_vobj_cancel(uctx, &mr->vobj);
		goto err_unlock;
	}
	mr->mr = ibmr;
	mr->lkey = ibmr->lkey;
	mr->iova = cmd->iova;
	mr->length = cmd->length;
	mr->access = access;
	kqp_vobj_made(&mr->vobj, kdev, kqp_mr_destroy_hw);
	up_read(&kdev->hw_rwsem);

	cmd->out_mr = mr->vobj.obj.id;
	cmd->out_lkey = ibmr->lkey;
	cmd->out_rkey = ibmr->rkey;
	ret = xa_insert(&pd->mrs, mr->lkey, mr, GFP_KERNEL_ACCOUNT);
	if (ret) {
		kqp_object_abort(uctx, &mr->vobj.obj);
		return ret;
	}
	return kqp_object_commit(ucmd, &mr->vobj.obj, sizeof(*cmd));

err_unlock:
	up_read(&kdev->hw_rwsem);
	kqp_mr_uncharge(uctx, mr);
err_free:
	kfree(mr);
err_pd:
	kqp_pd_put_user(pd);
	return ret;
}

int kqp_dereg_mr_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_dereg_mr *cmd = ucmd->cmd;

	return kqp_object_destroy_id(ucmd->uctx, cmd->mr, KQP_OBJ_MR);
}
