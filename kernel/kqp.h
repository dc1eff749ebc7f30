/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * kqp's object core: devices, the per-file table and its objects, the
 * verbs object every device-backed object is, and the ioctl being
 * executed.  Each kind of object has a header of its own: pd.h (PDs, MRs,
 * AHs), cq.h, qp.h, srq.h, cm.h (ids, events, multicast) and core.h
 * (rdma_create_qp(3)'s rules, shared with the exported API); what
 * objects cost and who pays is in account.h.
 *
 * The lock order of the whole module is below; each object's lifetime is
 * written beside its struct (struct kqp_object here, struct kqp_cm_id in
 * cm.h, struct kqp_srq in srq.h).
 */
#ifndef KQP_H
#define KQP_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rcupdate.h>
#include <linux/refcount.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/kqp-abi.h>

#define KQP_MODNAME "kqp"

/* A uapi value that is passed to or from ib_core as it is. */
#define KQP_SAME_AS_IB(kqp, ib) static_assert((int)(kqp) == (int)(ib))

extern unsigned int kqp_max_backlog;
extern unsigned int kqp_max_objects;
extern unsigned long kqp_max_mr_bytes;
extern unsigned long kqp_max_queue_bytes;
extern unsigned int kqp_max_mcast;
/* Drains rings after completions (ring.c); flushed at module exit. */
extern struct workqueue_struct *kqp_wq;

/*
 * Words, one meaning each:
 *
 *   file	struct kqp_file: one open of /dev/kqp.  It is an event
 *		channel, and owns the CM ids made through it.
 *   table	struct kqp_ucontext (uctx): the handles and objects a group
 *		of files share (KQP_IOCTL_ATTACH).  The ABI says "ctx" for it
 *		(KQP_IOCTL_CTX_INFO); libkqp calls the file it keeps for its
 *		verbs, and so that file's table, its "session".
 *   user	struct kqp_user (account.c): the uid a table is charged to.
 *   object	struct kqp_object: what a handle of a table names.
 *		Reserved, built, then published or aborted
 *		(kqp_object_publish(), kqp_object_abort()).
 *   handle	an object's u32 name in its table, allocated cyclically.
 *   uid	a u64 the caller gives an object and gets back with its
 *		events and completions.  Not a user id.
 *   vobj	struct kqp_vobj: an object with a device half (PD, CQ, QP,
 *		MR, AH, SRQ), made in kqp_vobj_begin()'s steps, released on
 *		destroy or device removal, whichever comes first (@hw_gone).
 *   id		struct kqp_cm_id: an RDMA CM id.  cm_id.c, event.c and
 *		mcast.c name a pointer to one "ctx", as ucma.c names its
 *		struct ucma_context.
 *   ucmd	struct kqp_ucmd: the ioctl being executed.
 *   scope	struct kqp_core_scope: where rdma_create_qp(3)'s default PD
 *		and missing CQs come from: the table's for an ioctl (uscope,
 *		core.c), the exported API's for a kernel ULP (kscope,
 *		kapi.c).  A scope's token is its private record of what it
 *		made, handed back to free it.
 *   ring	memory a process shares with the kernel: a CQ's completion
 *		ring, a QP's send and receive rings (doc/design/rings.md).
 *   slot	the kernel's record of one posted request (struct
 *		kqp_wr_slot): the caller's wr_id, never given to the device.
 *   drain	take a ring's published entries, check them, post them.
 *   commit	promise to drain a ring again without a doorbell; the ring
 *		shows it as NEED_DOORBELL clear.
 *   settle	after a drain, decide whether to stay committed (ring.c).
 *   poller	the table's thread that drains rings (poller.c).  A CQ's
 *		softirq (cq.c) is "the CQ's poll", not a poller.
 *
 * A map for the reader.
 *
 * Lock order, outermost first; a lock is only taken with those above it
 * in its own column held, never the other way round:
 *
 *   kqp_cm_id.mutex			serialises commands on one id
 *     rdma_lock_handler(cm_id)		rdma_cm's handler_mutex of the id
 *       kqp_file.lock			a file's event queue (two files:
 *					by address, kqp_lock_two())
 *     kqp_device.hw_rwsem		read: using hardware; write: removal
 *					and destroying a verbs object
 *       kqp_qp.move_mutex		also under the handler's lock (qp.h)
 *       kqp_qp.sq_mutex		posting, and draining the send ring
 *         kqp_qp.rq_mutex		receives; under sq_mutex only to reset
 *       kqp_srq.post_mutex		posting to an SRQ, resizing it
 *         kqp_srq.lock		(spin, irq) an SRQ's slots
 *       kqp_qp.mcast_mutex		a QP's group list
 *         kqp_mcast_hw_mutex (mcast.c)	every attach and detach, a leaf
 *       kqp_ucontext.lock		PD and CQ use counts, default PDs
 *         kqp_ucontext.dev_lock	the table's per-device charges
 *         kqp_qpc.lock (qp_cache.c)	a device's idle QP cache, a leaf
 *       kqp_device.objects_lock	(spin) the device's verbs objects
 *       kqp_kernel_lock (kapi.c)	the exported API's default PDs
 *   kqp_cq.lock				(spin, bh) producer, arming
 *     kqp_qp.lock			(spin, irq) a QP's slots
 *     kqp_srq.lock			(spin, irq) an SRQ's slots
 *     kqp_channel.q.lock		(spin, irqsave) pending CQs
 *     kqp_async.q.lock (async.c)	(spin, irqsave) async events
 *   kqp_evq.read_mutex -> kqp_evq.lock (evq.h): a channel's, an async fd's
 *   ib_device.event_handler_rwsem	ib_core's, read: a device event
 *     kqp_asyncs_lock (async.c)	(spin, irqsave) the queues device
 *					events go to
 *       kqp_async.q.lock
 *   xa_lock(&kqp_ucontext.objects)	a leaf: taken under kqp_file.lock,
 *					kqp_ucontext.lock and others
 *   kqp_qpc.refill_mutex (qp_cache.c)	one refill of a device's cache
 *     kqp_qpc.lock
 *   kqp_users_lock (account.c), kqp_devices_rwsem (device.c) and
 *   kqp_cq_stats_lock (cq.c) are taken with nothing else of kqp's held
 *   but their own xarrays; kqp_qpc.lock under kqp_devices_rwsem
 *   (kqp_device_for_each()).
 *
 * A QP's drain_work (ring.c) runs on its user's ordered workqueue
 * (kqp_user_wq(); kqp_wq for a QP of no table) and takes hw_rwsem (read),
 * then rq_mutex, then, rq_mutex released, sq_mutex, as a doorbell does;
 * a RESET alone holds rq_mutex under sq_mutex.  It holds a reference to
 * the QP, which its destroy waits for.  The completion path queues it, under
 * kqp_cq.lock and kqp_qp.lock, and never waits for it.
 *
 * hw_rwsem is also taken for writing under kqp_cm_id.mutex (a QP on an
 * id is destroyed under it) and takes kqp_cq.lock (kqp_cq_destroy_hw());
 * NOTIFY waits for an event with kqp_cm_id.mutex held.  The completion
 * path (kqp_cq_poll(), a softirq) takes kqp_cq.lock, then kqp_qp.lock in
 * kqp_qp_complete() (or kqp_srq.lock in kqp_srq_complete()), then the
 * channel's and the async queue's locks.
 */

struct kqp_async;
struct kqp_poller;
struct kqp_ucontext;
struct kqp_user;
struct dentry;
struct mem_cgroup;
struct mm_struct;
struct rdma_cgroup;

/**
 * struct kqp_device - an RDMA device as kqp tracks it
 * @ibdev: the device; valid while @dead is false
 * @index: the device's index, as reported by KQP_IOCTL_QUERY
 * @ref: the device table holds one; each verbs object on the device holds
 *	one, so the struct outlives the device for objects left behind
 * @hw_rwsem: held for reading by anyone using a hardware object of this
 *	device (@ibdev included), for writing by device removal
 * @dead: the device went away; its hardware objects are destroyed
 * @objects_lock: protects @objects
 * @objects: struct kqp_vobj on this device, for device removal
 * @event_handler: passes the device's and its ports' events on to the
 *	async fds (kqp_async_device_event()); registered while the device is
 *	in the device table, unregistered first thing on its removal
 * @qpc: the device's QP cache (qp_cache.c)
 */
struct kqp_device {
	struct ib_device *ibdev;
	u32 index;
	struct kref ref;
	struct rw_semaphore hw_rwsem;
	bool dead;
	spinlock_t objects_lock;	/* @objects */
	struct list_head objects;
	struct ib_event_handler event_handler;
	struct kqp_qpc *qpc;
};

/**
 * struct kqp_ucontext - the object table a group of files share
 * @ref: one per attached file
 * @objects: handle -> struct kqp_object; a reserved (NULL) entry is an
 *	object being built, XA_ZERO_ENTRY one being destroyed.  Handles are
 *	allocated cyclically, so a handle is not reused soon after its object
 *	is gone; completions carry QP handles and rely on that.
 * @next_id: cursor for the cyclic allocation
 * @nr_objects: handles in use (what KQP_IOCTL_CTX_INFO reports)
 * @mr_bytes: bytes registered, against max_mr_bytes
 * @lock: protects PD and CQ use counts and @default_pds
 * @default_pds: device index -> struct kqp_pd, the default PD of each
 *	device in this context
 * @async: the context's async event queue
 * @mm: the address space of the process that made the table, grabbed:
 *	the only one whose commands may use it (see kqp_file_uctx())
 * @user: the user the table's objects count against (max_objects)
 * @memcg: the memory cgroup kernel memory made for the table outside
 *	its owner's commands (rdma_cm's handler) is charged to
 * @dev_lock: protects @devices
 * @devices: device index -> struct kqp_udev, the table's use of each
 *	device, charged to the rdma cgroup as a handle
 *
 * Each open file of /dev/kqp starts with a context of its own; attaching
 * it to another file (KQP_IOCTL_ATTACH) makes the two share one, so that
 * event channels and the verbs objects their ids use live in one table.
 */
struct kqp_ucontext {
	struct kref ref;
	struct xarray objects;
	u32 next_id;
	atomic_t nr_objects;
	atomic64_t mr_bytes;
	struct mutex lock;	/* use counts, @default_pds */
	struct xarray default_pds;
	struct kqp_async *async;
	struct mm_struct *mm;
	struct pid *owner;	/* the thread group that made it (poller.c) */
	struct kqp_user *user;
	struct mem_cgroup *memcg;
	struct mutex dev_lock;	/* @devices */
	struct xarray devices;
	struct kqp_poller *poller;	/* set once, under @lock (poller.c) */
};

/*
 * The mark of an RC QP with rings in its table's xarray, for the poller;
 * XA_FLAGS_ALLOC uses XA_MARK_0 for itself.
 */
#define KQP_OBJ_MARK_RINGS	XA_MARK_1

/**
 * struct kqp_file - one open of /dev/kqp: an event channel
 * @filp: the open file
 * @uctx: the object table the file uses: set by the first command that
 *	needs one (or by KQP_IOCTL_ATTACH) and never changed after
 * @lock: protects @events and orders an object's publication with the
 *	event that announces it.  rdma_cm's handler takes it, so nothing
 *	holds it across a wait on userspace: GET_EVENT copies out with page
 *	faults off, and faults the caller's memory in with the lock dropped.
 * @events: struct kqp_event, oldest first
 * @poll_wait: woken when an event is queued
 */
struct kqp_file {
	struct file *filp;
	struct kqp_ucontext *uctx;
	struct mutex lock;	/* @events, publication vs. announcement */
	struct list_head events;
	wait_queue_head_t poll_wait;
};

enum kqp_obj_type {
	KQP_OBJ_CM_ID = 1,
	KQP_OBJ_PD,
	KQP_OBJ_CQ,
	KQP_OBJ_QP,
	KQP_OBJ_MR,
	KQP_OBJ_AH,
	KQP_OBJ_SRQ,
	KQP_OBJ_MAX,
};

/**
 * struct kqp_object - what every handle in a context's table names
 * @id: the handle
 * @type: what the object is
 * @users: one for the table, one per command using it; the object's
 *	resources may go once it drops to zero
 * @unused: completed when @users drops to zero
 * @dying: a drain of an object still in the table (an id closed after
 *	device removal) began: lookups fail with ENXIO from then on, so
 *	commands cannot keep @users above zero and stall the removal
 * @rcu: the memory goes after a grace period: the completion path looks
 *	handles up under RCU and reads the type of what it finds
 *
 * Lifetime, as iommufd and ucma: an object is reserved, built, then
 * published; a lookup takes a @users reference under the xarray lock;
 * destruction has one winner, the caller that swaps the published entry
 * for XA_ZERO_ENTRY, and it waits for @users to reach zero before freeing
 * anything a command could be using.
 */
struct kqp_object {
	u32 id;
	enum kqp_obj_type type;
	refcount_t users;
	struct completion unused;
	bool dying;
	struct rcu_head rcu;
};

int kqp_handle_alloc(struct kqp_ucontext *uctx, u32 *id);
void kqp_handle_free(struct kqp_ucontext *uctx, u32 id);
int kqp_object_reserve(struct kqp_ucontext *uctx, struct kqp_object *obj,
		       enum kqp_obj_type type);
void kqp_object_publish(struct kqp_ucontext *uctx, struct kqp_object *obj);
void kqp_object_release_id(struct kqp_ucontext *uctx, struct kqp_object *obj);
void kqp_objects_read(enum kqp_obj_type type, u32 *live, u64 *made);
u32 kqp_contexts_read(void);
struct kqp_object *kqp_object_get(struct kqp_ucontext *uctx, u32 id,
				  enum kqp_obj_type type);
struct kqp_object *kqp_object_get_marked(struct kqp_ucontext *uctx,
					 unsigned long *index, xa_mark_t mark);
void kqp_object_put(struct kqp_object *obj);
void kqp_object_drain(struct kqp_object *obj);
struct kqp_object *kqp_object_claim_id(struct kqp_ucontext *uctx, u32 id,
				       enum kqp_obj_type type);
bool kqp_object_claim(struct kqp_ucontext *uctx, struct kqp_object *obj);
void kqp_object_abort(struct kqp_ucontext *uctx, struct kqp_object *obj);
int kqp_object_destroy_id(struct kqp_ucontext *uctx, u32 id,
			  enum kqp_obj_type type);
void kqp_file_destroy_objects(struct kqp_file *kfile);

struct kqp_ucontext *kqp_ucontext_alloc(void);
void kqp_ucontext_put(struct kqp_ucontext *uctx);

/**
 * struct kqp_vobj - a verbs object: backed by the hardware of one device
 * @obj: handle and lifetime
 * @kdev: the device, referenced
 * @dev_entry: in @kdev->objects
 * @destroy_hw: releases the hardware object; called once, by whoever comes
 *	first of the object's destruction and its device's removal, with
 *	@kdev->hw_rwsem held for writing
 * @hw_gone: @destroy_hw ran
 * @uctx: the table, while the object is charged to its rdma cgroup
 * @cg: the rdma cgroup the object is charged to (hca_object)
 * @owner: the thread group that made it, referenced while the object is
 *	on @kdev->objects and read under its lock: who owns it, for
 *	/sys/kernel/debug/kqp/resources (ib_core reports kqp's objects as
 *	the kernel's own; see kqp_device_resources_show())
 * @queue_bytes: for a CQ, QP or SRQ, what it is charged against its
 *	user's max_queue_bytes (kqp_queue_charge()); changed only by
 *	whoever builds, resizes (post_mutex for an SRQ) or frees it
 */
struct kqp_vobj {
	struct kqp_object obj;
	struct kqp_device *kdev;
	struct list_head dev_entry;
	void (*destroy_hw)(struct kqp_vobj *vobj);
	bool hw_gone;
	struct kqp_ucontext *uctx;
	struct rdma_cgroup *cg;
	struct pid *owner;
	u64 queue_bytes;
};

int kqp_vobj_begin(struct kqp_ucontext *uctx, struct kqp_vobj *vobj,
		   enum kqp_obj_type type, struct kqp_device *kdev, u64 qbytes);
void kqp_vobj_cancel(struct kqp_ucontext *uctx, struct kqp_vobj *vobj);
void kqp_vobj_made(struct kqp_vobj *vobj, struct kqp_device *kdev,
		   void (*destroy_hw)(struct kqp_vobj *vobj));
struct kqp_vobj *kqp_vobj_get_hw(struct kqp_ucontext *uctx, u32 handle,
				 enum kqp_obj_type type);
void kqp_vobj_put_hw(struct kqp_vobj *vobj);

void kqp_vobj_release_hw(struct kqp_vobj *vobj);
void kqp_vobj_destroy_hw(struct kqp_vobj *vobj);
struct pid *kqp_vobj_unlist(struct kqp_vobj *vobj);

/**
 * struct kqp_ucmd - one ioctl being executed
 * @kfile: the file it was issued on
 * @uctx: the file's table, owned by the caller, for commands that use one
 * @ubuffer: the caller's argument
 * @user_size: the caller's idea of the argument's size
 * @cmd: kernel copy of the argument, zero-extended to the kernel's size
 */
struct kqp_ucmd {
	struct kqp_file *kfile;
	struct kqp_ucontext *uctx;
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

int kqp_ucmd_respond(struct kqp_ucmd *ucmd, size_t cmd_len);
int kqp_object_commit(struct kqp_ucmd *ucmd, struct kqp_object *obj,
		      size_t cmd_len);
int kqp_ucmd_respond_locked(struct kqp_ucmd *ucmd, size_t cmd_len);
int kqp_ucmd_fault_in(struct kqp_ucmd *ucmd, size_t cmd_len);

/* device.c */
int kqp_device_init(void);
void kqp_device_exit(void);
int kqp_query_ioctl(struct kqp_ucmd *ucmd);
struct kqp_device *kqp_device_get_user(u32 index);
struct kqp_device *kqp_device_of(struct ib_device *ibdev);
void kqp_device_for_each(void (*fn)(struct kqp_device *kdev, void *arg),
			 void *arg);
struct seq_file;
int kqp_device_resources_show(struct seq_file *m, void *v);
void kqp_device_put(struct kqp_device *kdev);
int kqp_query_device_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_port_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_gid_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_pkey_ioctl(struct kqp_ucmd *ucmd);

/* file.c */
extern const struct file_operations kqp_fops;
struct kqp_ucontext *kqp_file_uctx(struct kqp_file *kfile);

/* async.c */
int kqp_create_async_fd_ioctl(struct kqp_ucmd *ucmd);
void kqp_async_queue_event(struct kqp_ucontext *uctx, u32 event, u32 kind,
			   u32 handle, u64 uid, u32 *reported);
void kqp_async_forget(struct kqp_ucontext *uctx, u32 *reported);
void kqp_async_device_event(const struct ib_event *event);
void kqp_async_detach(struct kqp_ucontext *uctx);

#endif /* KQP_H */
