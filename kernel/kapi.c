// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The exported API: QPs on kernel callers' rdma_cm ids, through the same
 * core as the character device's (core.c), in a scope of its own.
 *
 * The kernel scope has one default PD per device, shared by every kernel
 * caller and freed with its last user, and allocates missing CQs with
 * ib_alloc_cq().  What it made for an id is recorded in kqp_kernel_qps,
 * keyed by the id's address, so that kqp_destroy_qp() frees exactly that.
 *
 * Lifetimes.  Nothing here is on its device's object list: device.c's
 * removal runs before rdma_cm's, so the ULPs have not been told yet and
 * still use their QPs.  They tear down when rdma_cm reports
 * DEVICE_REMOVAL, which it does before it lets the device go, and the
 * default PD goes with the last of them.  Removal marks the device dead
 * first, under its hw_rwsem, so that nothing new is allocated on it.
 *
 * Nothing here counts against max_objects or max_queue_bytes: those bound
 * what a user makes through /dev/kqp, and a kernel caller has no user.
 * Its CQs are ib_alloc_cq()'s and its QPs rdma_cm's, as for any ULP.
 */
#include <linux/debugfs.h>
#include <linux/kqp.h>
#include <linux/seq_file.h>
#include <linux/slab.h>

#include "compat.h"
#include "kqp.h"
#include "core.h"

/**
 * struct kqp_kernel_pd - the kernel scope's default PD of a device
 * @list: in kqp_kernel_pds
 * @kdev: its device, referenced
 * @pd: the PD
 * @users: QPs using it and references kqp_get_default_pd() gave; it drops
 *	to zero only under kqp_kernel_lock
 */
struct kqp_kernel_pd {
	struct list_head list;
	struct kqp_device *kdev;
	struct ib_pd *pd;
	refcount_t users;
};

/**
 * struct kqp_kernel_qp - what kqp_create_qp() made for an id
 * @id: the id, the key in kqp_kernel_qps
 * @qp: the QP, as @id->qp was when it was made
 * @res: the default PD (a struct kqp_kernel_pd) and the CQs (struct
 *	ib_cq) the core got from the kernel scope for it
 * @ref: one for kqp_kernel_qps, one per lookup in progress
 */
struct kqp_kernel_qp {
	struct rdma_cm_id *id;
	struct ib_qp *qp;
	struct kqp_core_qp res;
	refcount_t ref;
};

/* Protects kqp_kernel_pds, and each PD's last reference. */
static DEFINE_MUTEX(kqp_kernel_lock);
static LIST_HEAD(kqp_kernel_pds);

/*
 * id -> struct kqp_kernel_qp.  A reserved entry (reading as NULL) is a QP
 * being created; the reservation is what makes a second creation on the
 * same id fail.  Erasing a published entry, under the xarray's lock, is
 * what makes one caller the destroyer.
 */
static DEFINE_XARRAY(kqp_kernel_qps);

static atomic_t kqp_kernel_cqs = ATOMIC_INIT(0);
static atomic_t kqp_kernel_qp_count = ATOMIC_INIT(0);

/*
 * The default PD of @kdev, with one more user.  The caller holds
 * kdev->hw_rwsem for reading (lock order: the device's rwsem, then
 * kqp_kernel_lock) and checked that the device lives.
 */
static struct kqp_kernel_pd *kqp_kernel_pd_get_locked(struct kqp_device *kdev)
{
	struct kqp_kernel_pd *kpd;
	struct ib_pd *pd;

	lockdep_assert_held_read(&kdev->hw_rwsem);
	mutex_lock(&kqp_kernel_lock);
	list_for_each_entry(kpd, &kqp_kernel_pds, list) {
		if (kpd->kdev == kdev) {
			refcount_inc(&kpd->users);
			goto out;
		}
	}

	kpd = kzalloc(sizeof(*kpd), GFP_KERNEL);
	if (!kpd) {
		kpd = ERR_PTR(-ENOMEM);
		goto out;
	}
	pd = ib_alloc_pd(kdev->ibdev, 0);
	if (IS_ERR(pd)) {
		kfree(kpd);
		kpd = ERR_CAST(pd);
		goto out;
	}
	kpd->pd = pd;
	kpd->kdev = kdev;
	kref_get(&kdev->ref);
	refcount_set(&kpd->users, 1);
	list_add_tail(&kpd->list, &kqp_kernel_pds);
out:
	mutex_unlock(&kqp_kernel_lock);
	return kpd;
}

static void kqp_kernel_pd_put(struct kqp_kernel_pd *kpd)
{
	if (!refcount_dec_and_mutex_lock(&kpd->users, &kqp_kernel_lock))
		return;
	/* Unreachable from now on; a new one is made on next use. */
	list_del(&kpd->list);
	mutex_unlock(&kqp_kernel_lock);
	ib_dealloc_pd(kpd->pd);
	kqp_device_put(kpd->kdev);
	kfree(kpd);
}

/*
 * The kernel scope's operations, called by the core with kdev->hw_rwsem
 * held for reading (the allocating ones) or not at all (the freeing ones).
 */
static struct ib_pd *kqp_kscope_get_default_pd(struct kqp_core_scope *scope,
					       struct kqp_device *kdev,
					       void **token)
{
	struct kqp_kernel_pd *kpd = kqp_kernel_pd_get_locked(kdev);

	if (IS_ERR(kpd))
		return ERR_CAST(kpd);
	*token = kpd;
	return kpd->pd;
}

static void kqp_kscope_put_default_pd(struct kqp_core_scope *scope,
				      void *token)
{
	kqp_kernel_pd_put(token);
}

static struct ib_cq *kqp_kscope_alloc_cq(struct kqp_core_scope *scope,
					 struct kqp_device *kdev, u32 cqe,
					 bool send, void **token)
{
	struct ib_cq *cq;

	if (cqe > INT_MAX)
		return ERR_PTR(-EINVAL);
	cq = ib_alloc_cq_any(kdev->ibdev, NULL, cqe, IB_POLL_SOFTIRQ);
	if (IS_ERR(cq))
		return cq;
	atomic_inc(&kqp_kernel_cqs);
	*token = cq;
	return cq;
}

static void kqp_kscope_free_cq(struct kqp_core_scope *scope, void *token)
{
	ib_free_cq(token);
	atomic_dec(&kqp_kernel_cqs);
}

static const struct kqp_core_scope_ops kqp_kscope_ops = {
	.get_default_pd = kqp_kscope_get_default_pd,
	.put_default_pd = kqp_kscope_put_default_pd,
	.alloc_cq = kqp_kscope_alloc_cq,
	.free_cq = kqp_kscope_free_cq,
};

static struct kqp_core_scope kqp_kscope = {
	.ops = &kqp_kscope_ops,
};

/*
 * The device of @ibdev, referenced, with its hw_rwsem held for reading,
 * or NULL if kqp does not know it or saw it go.
 */
static struct kqp_device *kqp_kernel_device_hold(struct ib_device *ibdev)
{
	struct kqp_device *kdev = kqp_device_of(ibdev);

	if (!kdev)
		return NULL;
	down_read(&kdev->hw_rwsem);
	if (kdev->dead) {
		up_read(&kdev->hw_rwsem);
		kqp_device_put(kdev);
		return NULL;
	}
	return kdev;
}

static void kqp_kernel_device_release(struct kqp_device *kdev)
{
	up_read(&kdev->hw_rwsem);
	kqp_device_put(kdev);
}

static void kqp_kernel_qp_put(struct kqp_kernel_qp *kqp)
{
	if (refcount_dec_and_test(&kqp->ref))
		kfree(kqp);
}

int kqp_create_qp(struct rdma_cm_id *id, struct ib_pd *pd,
		  struct ib_qp_init_attr *attr)
{
	unsigned long key = (unsigned long)id;
	struct kqp_kernel_qp *kqp;
	struct kqp_device *kdev;
	struct ib_qp *qp;
	int ret;

	if (!id || !attr || !id->device)
		return -EINVAL;
	kqp = kzalloc(sizeof(*kqp), GFP_KERNEL);
	if (!kqp)
		return -ENOMEM;
	/* One QP per id, also between callers racing on one id. */
	ret = xa_insert(&kqp_kernel_qps, key, NULL, GFP_KERNEL);
	if (ret) {
		if (ret == -EBUSY)
			ret = -EINVAL;
		goto err_free;
	}

	kdev = kqp_kernel_device_hold(id->device);
	if (!kdev) {
		ret = -ENODEV;
		goto err_unreserve;
	}
	/* rdma_create_qp(3): the QP is the id's, UD too. */
	ret = kqp_core_create_qp(&kqp_kscope, id, pd, attr, &kqp->res, false,
				 &qp);
	kqp_kernel_device_release(kdev);
	if (ret)
		goto err_core;

	kqp->id = id;
	kqp->qp = qp;
	refcount_set(&kqp->ref, 1);
	atomic_inc(&kqp_kernel_qp_count);
	/* Into the reserved slot: needs no memory, cannot fail. */
	xa_store(&kqp_kernel_qps, key, kqp, GFP_KERNEL);
	return 0;

err_core:
	kqp_core_release(&kqp_kscope, &kqp->res);
err_unreserve:
	xa_release(&kqp_kernel_qps, key);
err_free:
	kfree(kqp);
	return ret;
}
EXPORT_SYMBOL_NS_GPL(kqp_create_qp, KQP_NS);

void kqp_destroy_qp(struct rdma_cm_id *id)
{
	unsigned long key = (unsigned long)id;
	struct kqp_kernel_qp *kqp;

	/* The one who erases it destroys it; a reservation is not ours. */
	xa_lock(&kqp_kernel_qps);
	kqp = xa_load(&kqp_kernel_qps, key);
	if (kqp)
		__xa_erase(&kqp_kernel_qps, key);
	xa_unlock(&kqp_kernel_qps);
	if (!kqp)
		return;

	/* The CQs and PD go after the QP that uses them. */
	if (id->qp && id->qp == kqp->qp)
		rdma_destroy_qp(id);
	kqp_core_release(&kqp_kscope, &kqp->res);
	atomic_dec(&kqp_kernel_qp_count);
	kqp_kernel_qp_put(kqp);
}
EXPORT_SYMBOL_NS_GPL(kqp_destroy_qp, KQP_NS);

int kqp_qp_cqs(struct rdma_cm_id *id, struct ib_cq **send_cq,
	       struct ib_cq **recv_cq)
{
	struct kqp_kernel_qp *kqp;

	xa_lock(&kqp_kernel_qps);
	kqp = xa_load(&kqp_kernel_qps, (unsigned long)id);
	if (kqp)
		refcount_inc(&kqp->ref);
	xa_unlock(&kqp_kernel_qps);
	if (!kqp)
		return -ENOENT;
	if (send_cq)
		*send_cq = kqp->res.send_cq_token;
	if (recv_cq)
		*recv_cq = kqp->res.recv_cq_token;
	kqp_kernel_qp_put(kqp);
	return 0;
}
EXPORT_SYMBOL_NS_GPL(kqp_qp_cqs, KQP_NS);

struct ib_pd *kqp_get_default_pd(struct ib_device *dev)
{
	struct kqp_kernel_pd *kpd;
	struct kqp_device *kdev;

	if (!dev)
		return ERR_PTR(-EINVAL);
	kdev = kqp_kernel_device_hold(dev);
	if (!kdev)
		return ERR_PTR(-ENODEV);
	kpd = kqp_kernel_pd_get_locked(kdev);
	kqp_kernel_device_release(kdev);
	return IS_ERR(kpd) ? ERR_CAST(kpd) : kpd->pd;
}
EXPORT_SYMBOL_NS_GPL(kqp_get_default_pd, KQP_NS);

void kqp_put_default_pd(struct ib_pd *pd)
{
	struct kqp_kernel_pd *kpd, *found = NULL;

	/*
	 * The caller's reference keeps the entry listed, so it is still
	 * there after the lock is dropped.
	 */
	mutex_lock(&kqp_kernel_lock);
	list_for_each_entry(kpd, &kqp_kernel_pds, list) {
		if (kpd->pd == pd) {
			found = kpd;
			break;
		}
	}
	mutex_unlock(&kqp_kernel_lock);
	if (WARN_ON(!found))
		return;
	kqp_kernel_pd_put(found);
}
EXPORT_SYMBOL_NS_GPL(kqp_put_default_pd, KQP_NS);

void kqp_get_kernel_counts(struct kqp_kernel_counts *counts)
{
	struct kqp_kernel_pd *kpd;

	memset(counts, 0, sizeof(*counts));
	mutex_lock(&kqp_kernel_lock);
	list_for_each_entry(kpd, &kqp_kernel_pds, list) {
		counts->default_pds++;
		counts->default_pd_refs += refcount_read(&kpd->users);
	}
	mutex_unlock(&kqp_kernel_lock);
	counts->cqs = atomic_read(&kqp_kernel_cqs);
	counts->qps = atomic_read(&kqp_kernel_qp_count);
}
EXPORT_SYMBOL_NS_GPL(kqp_get_kernel_counts, KQP_NS);

/* /sys/kernel/debug/kqp/kernel: kqp_get_kernel_counts(), for scripts. */
static int kqp_kernel_show(struct seq_file *m, void *v)
{
	struct kqp_kernel_counts c;

	kqp_get_kernel_counts(&c);
	seq_printf(m, "default_pds %u\n", c.default_pds);
	seq_printf(m, "default_pd_refs %u\n", c.default_pd_refs);
	seq_printf(m, "cqs %u\n", c.cqs);
	seq_printf(m, "qps %u\n", c.qps);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kqp_kernel);

void kqp_kapi_init(struct dentry *debugfs)
{
	debugfs_create_file("kernel", 0444, debugfs, NULL, &kqp_kernel_fops);
}

/*
 * Kernel callers depend on the module, so none is left by now; what a
 * caller leaked stays leaked, with a warning.
 */
void kqp_kapi_exit(void)
{
	WARN_ON(!xa_empty(&kqp_kernel_qps));
	WARN_ON(!list_empty(&kqp_kernel_pds));
}
