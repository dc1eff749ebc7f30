// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * What kqp charges, and to whom.
 *
 * A table's objects belong to the user of the process that made it, and
 * count against that user over all its tables (struct kqp_user): handles
 * against max_objects, queues against max_queue_bytes, registered pages
 * against max_mr_bytes.  Counting per table would let a user hold as
 * many times more as it can open files.  A queue's bytes are an estimate
 * made before the device allocates (kqp_qp_queue_bytes() and the rest),
 * the same for every device, so a budget means the same everywhere.
 *
 * Hardware objects are also charged to the owner's rdma cgroup, as
 * uverbs charges them: an hca_object each, and an hca_handle for each
 * device the table uses.  Kernel memory goes to the owner's memory
 * cgroup through GFP_KERNEL_ACCOUNT, and through the table's memcg where
 * rdma_cm's handler allocates for it (cm_id.c).
 */
#include <linux/cgroup_rdma.h>
#include <linux/cred.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "kqp.h"
#include "account.h"
#include "qp.h"
#include "srq.h"

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

struct kqp_user *kqp_user_get(kuid_t kuid)
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

void kqp_user_put(struct kqp_user *user)
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
 * Count one more handle against the user of @uctx, within the max_objects
 * parameter over all its tables: EMFILE past it, as for a process's file
 * table.
 */
int kqp_user_handle_charge(struct kqp_ucontext *uctx)
{
	if (atomic_inc_return(&uctx->user->nr_objects) >
	    READ_ONCE(kqp_max_objects)) {
		atomic_dec(&uctx->user->nr_objects);
		return -EMFILE;
	}
	return 0;
}

void kqp_user_handle_uncharge(struct kqp_ucontext *uctx)
{
	atomic_dec(&uctx->user->nr_objects);
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
