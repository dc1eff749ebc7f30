/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * kqp internal definitions shared by the module's objects.
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
/* irq_poll.h relies on list.h being included first. */
#include <linux/irq_poll.h>
#include <linux/irq_work.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/kqp-abi.h>

#define KQP_MODNAME "kqp"

extern unsigned int kqp_max_backlog;
extern unsigned int kqp_max_objects;
extern unsigned long kqp_max_mr_bytes;
extern unsigned long kqp_max_queue_bytes;
extern unsigned int kqp_max_mcast;
/* Drains rings after completions (ring.c); flushed at module exit. */
extern struct workqueue_struct *kqp_wq;

/*
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
 *       kqp_qp.sq_mutex		posting, and draining the send ring
 *         kqp_qp.rq_mutex		receives; under sq_mutex only to reset
 *       kqp_srq.post_mutex		posting to an SRQ, resizing it
 *         kqp_srq.lock		(spin, irq) an SRQ's slots
 *       kqp_qp.mcast_mutex		a QP's group list
 *         kqp_mcast_hw_mutex (qp.c)	every attach and detach, a leaf
 *       kqp_ucontext.lock		PD and CQ use counts, default PDs
 *         kqp_ucontext.dev_lock	the table's per-device charges
 *       kqp_device.objects_lock	(spin) the device's verbs objects
 *       kqp_kernel_lock (kapi.c)	the exported API's default PDs
 *   kqp_cq.lock				(spin, bh) producer, arming
 *     kqp_qp.lock			(spin, irq) a QP's slots
 *     kqp_srq.lock			(spin, irq) an SRQ's slots
 *     kqp_channel.lock			(spin, irqsave) pending CQs
 *     kqp_async.lock (async.c)		(spin, irqsave) async events
 *   kqp_channel.read_mutex -> kqp_channel.lock
 *   kqp_async.read_mutex -> kqp_async.lock
 *   ib_device.event_handler_rwsem	ib_core's, read: a device event
 *     kqp_asyncs_lock (async.c)	(spin, irqsave) the queues device
 *					events go to
 *       kqp_async.lock
 *   xa_lock(&kqp_ucontext.objects)	a leaf: taken under kqp_file.lock,
 *					kqp_ucontext.lock and others
 *   kqp_users_lock (object.c), kqp_devices_rwsem (device.c) and
 *   kqp_cq_stats_lock (cq.c) are taken with nothing else of kqp's held
 *   but their own xarrays.
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
 *
 * The three lifetimes of a cm_id (struct kqp_cm_id):
 *  - the table entry: reserved (reads as NULL), published, claimed (swapped
 *    for XA_ZERO_ENTRY by the one destroyer), erased last by
 *    kqp_object_release_id().  What can name the id.
 *  - @obj.users: the table's reference and one per command using the id;
 *    the destroyer drains it (kqp_object_drain()) before the rdma_cm id
 *    goes.  What keeps the id usable.
 *  - @mem_ref: the struct's memory: the id holds one and a QP created on
 *    it one, so a QP being destroyed can always take the id's mutex.
 *    What keeps the struct.
 *
 * The lifetime of an SRQ (struct kqp_srq), a verbs object like the rest:
 *  - the table entry and @vobj.obj.users as for every object: a command
 *    using the SRQ holds a reference; DESTROY_SRQ claims it only while no
 *    QP uses it (@users, under kqp_ucontext.lock: EBUSY otherwise), and
 *    the table's teardown destroys QPs before SRQs.
 *  - @users: QPs created on it.  Each holds one from CREATE_QP until its
 *    own hardware and deps are released, and is in @qps from just after
 *    its hardware is made until just before it goes.
 *  - the ib_srq: destroyed by whoever comes first of DESTROY_SRQ (or the
 *    table's teardown) and the device's removal, which releases QPs
 *    before SRQs.  The SRQ's PD is a user of the PD until the struct
 *    goes.
 *  - the memory, and the slot array, go after an RCU grace period: the
 *    completion path finds an SRQ by handle under RCU, as it finds QPs;
 *    a completion for an SRQ that is gone finds nothing and is dropped.
 */

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
struct kqp_poller;

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

struct kqp_async;

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

struct kqp_ucontext *kqp_ucontext_alloc(void);
void kqp_ucontext_put(struct kqp_ucontext *uctx);
void kqp_users_exit(void);

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

int kqp_vobj_charge(struct kqp_vobj *vobj, struct kqp_ucontext *uctx,
		    struct kqp_device *kdev);
void kqp_vobj_uncharge(struct kqp_vobj *vobj);
void kqp_vobj_init(struct kqp_vobj *vobj, struct kqp_device *kdev,
		   void (*destroy_hw)(struct kqp_vobj *vobj));

u64 kqp_cq_queue_bytes(u32 cqe);
u64 kqp_qp_queue_bytes(const struct ib_qp_cap *cap, bool srq);
u64 kqp_srq_queue_bytes(u32 max_wr, u32 max_sge, u32 nslots);
int kqp_queue_charge(struct kqp_ucontext *uctx, struct kqp_vobj *vobj,
		     u64 bytes, bool force);
struct kqp_user *kqp_user_charge(struct kqp_ucontext *uctx, u64 bytes);
int kqp_user_mr_charge(struct kqp_ucontext *uctx, u64 bytes);
void kqp_user_mr_uncharge(struct kqp_ucontext *uctx, u64 bytes);
struct workqueue_struct *kqp_user_wq(struct kqp_ucontext *uctx);
void kqp_user_uncharge(struct kqp_user *user, u64 bytes);

/* vmem.c */
struct kqp_vmem;
struct kqp_vmem *kqp_vmem_alloc(struct kqp_ucontext *uctx, size_t bytes);
void *kqp_vmem_addr(const struct kqp_vmem *v);
size_t kqp_vmem_size(const struct kqp_vmem *v);
void kqp_vmem_put(struct kqp_vmem *v);
int kqp_vmem_mmap(struct kqp_vmem *v, struct vm_area_struct *vma);
void kqp_queue_uncharge(struct kqp_ucontext *uctx, struct kqp_vobj *vobj);
void kqp_vobj_release_hw(struct kqp_vobj *vobj);
void kqp_vobj_destroy_hw(struct kqp_vobj *vobj);
struct pid *kqp_vobj_unlist(struct kqp_vobj *vobj);

/**
 * struct kqp_pd - a protection domain
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @pd: the kernel PD; NULL once its device is gone
 * @users: QPs (and later MRs and AHs) using it, under @uctx->lock
 * @default_refs: for a default PD, the references KQP_PD_DEFAULT handed
 *	out, under @uctx->lock; it goes with the last of these and @users
 * @is_default: this is its context's default PD for the device
 * @mrs: lkey -> struct kqp_mr registered in this PD; what work requests
 *	are checked against
 */
struct kqp_pd {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_pd *pd;
	unsigned int users;
	unsigned int default_refs;
	bool is_default;
	struct xarray mrs;
};

/**
 * struct kqp_mr - memory the caller registered
 * @vobj: handle, device, lifetime
 * @pd: its PD, a user of it
 * @mr: the kernel MR; NULL once its device is gone
 * @lkey: local key, as handed out
 * @iova: first address work requests may name
 * @length: bytes from @iova
 * @access: IB_ACCESS_* flags
 */
struct kqp_mr {
	struct kqp_vobj vobj;
	struct kqp_pd *pd;
	struct ib_mr *mr;
	u32 lkey;
	u64 iova;
	u64 length;
	u64 charged;
	int access;
};

/**
 * struct kqp_ah - an address handle for UD sends
 * @vobj: handle, device, lifetime
 * @pd: its PD, a user of it
 * @ah: the kernel AH; NULL once its device is gone
 */
struct kqp_ah {
	struct kqp_vobj vobj;
	struct kqp_pd *pd;
	struct ib_ah *ah;
};

/**
 * struct kqp_channel - a completion channel, behind an anonymous fd
 * @ref: the fd holds one, each CQ using the channel one
 * @lock: protects @pending and the CQs' counts
 * @read_mutex: held by a reader from peeking to counting, and by a CQ
 *	leaving the channel
 * @wait: woken when a CQ is added to @pending
 * @pending: struct kqp_cq with notifications not read yet
 */
struct kqp_channel {
	struct kref ref;
	spinlock_t lock;		/* @pending, the CQs' counts */
	struct mutex read_mutex;	/* a reader; a CQ leaving */
	wait_queue_head_t wait;
	struct list_head pending;
};

/* Histogram buckets of the callback-to-ring delay: [2^b, 2^(b+1)) ns. */
#define KQP_CQ_LAT_BUCKETS 40

/**
 * struct kqp_cq_stats - the completion path's measurements (debugfs)
 * @calls: polls that produced entries
 * @cqes: entries produced, by polls and flushes
 * @lat_ns_sum: the delays from the driver's callback to the ring, summed
 * @lat_ns_max: the longest of them
 * @lat_hist: how many fell in each log2 bucket
 */
struct kqp_cq_stats {
	u64 calls;
	u64 cqes;
	u64 lat_ns_sum;
	u64 lat_ns_max;
	u64 lat_hist[KQP_CQ_LAT_BUCKETS];
};

/**
 * struct kqp_cq - a CQ whose completions userspace reaps from a ring
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @cq: the kernel CQ; NULL once its device is gone
 * @uid: the caller's value, reported with channel and async events
 * @cqe: the CQ's actual depth
 * @channel: completion channel, referenced, or NULL
 * @chan_entry: in @channel->pending while notifications wait
 * @chan_pending: notifications waiting in @channel, under its lock
 * @comp_events_reported: notifications read from @channel, under its lock
 * @ring: the shared ring: header, then @entries CQEs, in @ring_vmem
 * @ring_vmem: the ring's memory, which outlives the CQ while mapped
 * @ring_bytes: size of the mapping
 * @entries: ring size, a power of two at least @cqe
 * @iop: the softirq poller the completion handler schedules
 * @kick: schedules @iop from a hard interrupt (on PREEMPT_RT, from the
 *	irq_work thread), for handlers in task context
 * @cb_ns: when the completion handler last ran (local_clock()), for the
 *	completion path's statistics
 * @lock: serialises the producer (the poller and flushes), arming the
 *	kernel CQ, and @dying
 * @tail: the producer index; the ring's copy is only ever written
 * @last_fired: the last arm sequence that fired a notification
 * @ring_flags: KQP_CQ_RING_* as the kernel set them, under @lock; the
 *	ring's copy is only ever written from it, never read back, as the
 *	consumer can write there too.  KQP_CQ_RING_OVERFLOW: the ring
 *	filled; completions wait in @cq (and @stash) until a flush
 * @stash: a completion taken from @cq when the ring had no room, under
 *	@lock: the next one the ring gets (kqp_cq_produce())
 * @stashed: @stash holds one
 * @users: QPs using the CQ, under @uctx->lock
 * @auto_qp: the QP on an id the CQ was made for, which destroys it as it
 *	goes, unless other QPs use it by then: it stays for them, an
 *	ordinary CQ (NULL) from then on.  Set before the CQ is published,
 *	cleared under @uctx->lock.
 * @async_reported: async events read for the CQ
 * @dying: the kernel CQ is being destroyed: the poller must not arm it
 * @abandoned: the device refused to destroy the kernel CQ: it keeps this
 *	struct as its context, for good, and the handlers do nothing
 * @rcu: frees the CQ after a poller that may still be finishing
 */
struct kqp_cq {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_cq *cq;
	u64 uid;
	u32 cqe;
	struct kqp_channel *channel;
	struct list_head chan_entry;
	u32 chan_pending;
	u32 comp_events_reported;
	struct kqp_cq_ring_hdr *ring;
	struct kqp_vmem *ring_vmem;
	size_t ring_bytes;
	u32 entries;
	struct irq_poll iop;
	struct irq_work kick;
	u64 cb_ns;
	spinlock_t lock;	/* producer, arming, @dying */
	u32 tail;
	u32 last_fired;
	u32 ring_flags;
	struct ib_wc stash;
	bool stashed;
	unsigned int users;
	struct kqp_qp *auto_qp;
	u32 async_reported;
	bool dying;
	bool abandoned;
	struct rcu_head rcu;
};

/**
 * struct kqp_wr_slot - a posted work request the QP still owns
 * @wr_id: the caller's wr_id
 * @opcode: the caller's opcode (enum ibv_wr_opcode), for flush completions
 * @signaled: a completion is reported for it
 * @err_status: a ring entry the kernel refused, posted in its place to a
 *	QP in ERR (ring.c): the status its completion reports, or 0 for the
 *	device's own (a flush)
 */
struct kqp_wr_slot {
	u64 wr_id;
	u32 opcode;
	bool signaled;
	u8 err_status;
};

/**
 * struct kqp_wq - one work queue's slots: a ring indexed by post counter
 * @slots: @size entries
 * @size: a power of two at least the queue's depth
 * @head: posts so far
 * @tail: posts retired so far
 */
struct kqp_wq {
	struct kqp_wr_slot *slots;
	u32 size;
	u32 head;
	u32 tail;
};

/* One request, in kernel form, with room for the largest of its kinds. */
union kqp_kwr {
	struct ib_send_wr send;
	struct ib_rdma_wr rdma;
	struct ib_atomic_wr atomic;
	struct ib_ud_wr ud;
	struct ib_recv_wr recv;
};

/**
 * struct kqp_ring - a QP's submission ring for one work queue (ring.c)
 * @hdr: the shared header, in the QP's ring mapping
 * @entries: the first entry, in the mapping
 * @nr: entries, a power of two; 0 when the queue has no ring
 * @entry_size: bytes per entry, a power of two
 * @head: the consumer index; @hdr's copy is only ever written
 * @batch: entries copied and posted as one chain
 * @max_sge: SGEs per request the staging area has room for
 * @kwrs: @batch requests being built
 * @ahs: the AH each of them holds, or NULL
 * @sges: @max_sge SGEs for each of them
 * @stage: @batch copies of entries, each checked and used only there
 * @failed: the send ring refused an entry: the QP was moved to ERR and
 *	every entry from then on is posted as a placeholder (ring.c)
 * @fail_status: the ib_wc_status the refused entry completes with
 * @stopped: the last drain failed (the device or the checks refused an
 *	entry of a receive ring, the device a send chain, or the tail was
 *	impossible): only a doorbell drains it again, so that the process
 *	can take back what it published first
 *
 * Everything but @hdr and the entries is the kernel's alone, used under
 * the queue's mutex (kqp_qp.sq_mutex or rq_mutex).
 */
struct kqp_ring {
	struct kqp_wq_ring_hdr *hdr;
	void *entries;
	u32 nr;
	u32 entry_size;
	u32 head;
	u32 batch;
	u32 max_sge;
	union kqp_kwr *kwrs;
	struct kqp_object **ahs;
	struct ib_sge *sges;
	void *stage;
	bool failed;
	bool stopped;
	u8 fail_status;
};

/**
 * struct kqp_qp - a QP created in the kernel for a userspace caller
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @qp: the kernel QP; NULL once destroyed
 * @cm: the id it was created on, or NULL for a QP the caller transitions
 * @pd: the PD, a user of it
 * @send_cq: a user of it
 * @recv_cq: a user of it
 * @srq: the SRQ it receives from, a user of it, or NULL
 * @srq_ibqp: the kernel QP, as an SRQ completion names it: its key in
 *	@srq->qps, never followed
 * @uid: the caller's value, reported with async events
 * @qp_num: the QP number
 * @qp_type: IB_QPT_RC or IB_QPT_UD
 * @sq_sig_all: every send is signaled
 * @cap: the actual capabilities
 * @lock: protects @sq and @rq, between posting and completions
 * @sq_mutex: serialises posting sends
 * @rq_mutex: serialises posting receives
 * @sq: send slots
 * @rq: receive slots
 * @ring_mem: with KQP_CREATE_QP_RINGS, the memory userspace maps: both
 *	rings' headers and entries, in @ring_vmem
 * @ring_vmem: its owner, dropped with the QP; it lives on while mapped
 * @ring_bytes: its length, page aligned
 * @sq_ring: the send ring
 * @rq_ring: the receive ring
 * @sq_sig_out: signaled sends the device has and has not completed, under
 *	@lock
 * @sq_committed: under @lock: the send ring's NEED_DOORBELL is clear, and
 *	the completion of a signaled send queues @drain_work (ring.c)
 * @sq_polled: the table's poller serves the send ring (poller.c): the
 *	kernel stays committed without a signaled send.  Written by the
 *	poller under @sq_mutex and @lock, read under either
 * @rq_polled: the poller serves the receive ring, under @rq_mutex
 * @rq_async: the receive ring is drained after receive completions
 *	(KQP_QP_RINGS_RECV_ASYNC); set before the QP is published
 * @rq_committed: under @lock: the receive ring's NEED_DOORBELL is clear,
 *	and a receive completion queues @drain_work (ring.c)
 * @rq_low: with @rq_async, the receives the device must hold for the
 *	kernel to stay committed to the receive ring: half those asked for
 * @rq_peer_waits: the peer retries an RNR NAK for ever (the id's CONNECT
 *	or ACCEPT said so): only then does the kernel commit (ring.c)
 * @sq_ready: under @sq_mutex: the device took a send chain since the QP
 *	was made or last reset, so it is in a state that sends; only then
 *	does the poller commit to the send ring (ring.c)
 * @drain_work: drains the rings after completions, holding a reference
 *	to the QP
 * @async_reported: async events read for the QP
 * @mcast_mutex: protects @mcasts and @nr_mcasts
 * @mcasts: struct kqp_qp_mcast, the groups the QP is attached to; they are
 *	detached before the QP is destroyed (ib_core refuses otherwise)
 * @nr_mcasts: entries in @mcasts
 * @abandoned: the device refused to destroy the QP: it keeps this struct
 *	as its context, for good, and the handler must not touch the rest
 * @rcu: the CQ's poller looks QPs up under RCU (kqp_qp_complete())
 */
struct kqp_qp {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_qp *qp;
	struct kqp_cm_id *cm;
	struct kqp_pd *pd;
	struct kqp_cq *send_cq;
	struct kqp_cq *recv_cq;
	struct kqp_srq *srq;
	const void *srq_ibqp;
	u64 uid;
	u32 qp_num;
	enum ib_qp_type qp_type;
	bool sq_sig_all;
	struct ib_qp_cap cap;
	spinlock_t lock;		/* @sq and @rq */
	struct mutex sq_mutex;		/* posting sends */
	struct mutex rq_mutex;		/* posting receives */
	struct kqp_wq sq;
	struct kqp_wq rq;
	void *ring_mem;
	struct kqp_vmem *ring_vmem;
	u32 ring_bytes;
	struct kqp_ring sq_ring;
	struct kqp_ring rq_ring;
	u32 sq_sig_out;
	bool sq_committed;
	bool sq_polled;
	bool rq_polled;
	bool rq_async;
	bool rq_committed;
	bool rq_peer_waits;
	u32 rq_low;
	bool sq_ready;
	struct work_struct drain_work;
	u32 async_reported;
	struct mutex mcast_mutex;	/* @mcasts, @nr_mcasts */
	struct list_head mcasts;
	unsigned int nr_mcasts;
	bool abandoned;
	struct rcu_head rcu;
};

/*
 * The deepest SRQ kqp makes: its slots' index must fit the kernel's wr_id
 * (srq.c).  KQP_IOCTL_QUERY_DEVICE reports no more as max_srq_wr.
 */
#define KQP_SRQ_DEPTH_MAX	(1U << 20)

/**
 * struct kqp_srq_slot - a receive posted to an SRQ and not completed yet
 * @wr_id: the caller's wr_id
 * @gen: bumped each time the slot is taken; the kernel's wr_id carries it
 * @next_free: the next free slot, while this one is free
 * @busy: posted, not completed
 */
struct kqp_srq_slot {
	u64 wr_id;
	u32 gen;
	u32 next_free;
	bool busy;
};

/**
 * struct kqp_srq - a shared receive queue
 * @vobj: handle, device, lifetime
 * @uctx: the owning context
 * @srq: the kernel SRQ; NULL once its hardware is gone
 * @pd: its PD, a user of it: receives are checked against its MRs
 * @uid: the caller's value, reported with async events
 * @max_sge: SGEs per receive, as the device gave it
 * @users: QPs using it, under @uctx->lock
 * @post_mutex: serialises posting and resizing
 * @lock: protects the slots, between posting and completions
 * @slots: @nslots slots; SRQ receives complete in any order, so each is
 *	retired alone
 * @nslots: slots, twice the depth: a receive a QP took when it went to
 *	the error state never completes and keeps its slot
 * @free_head: the first free slot, or U32_MAX
 * @busy: slots in use: receives posted and not completed, an upper bound
 *	of what the device holds (MODIFY_SRQ never shrinks it below that)
 * @qps: kernel QP address -> struct kqp_qp using the SRQ, for the QP
 *	number of a completion, looked up under RCU without following the
 *	kernel QP, which may be gone by the time its completion is polled
 * @async_reported: async events read for the SRQ
 * @ready: the SRQ was made whole; its events are queued from then on
 * @abandoned: the device refused to destroy the SRQ; it keeps the struct
 * @rcu: the completion path looks SRQs up under RCU
 */
struct kqp_srq {
	struct kqp_vobj vobj;
	struct kqp_ucontext *uctx;
	struct ib_srq *srq;
	struct kqp_pd *pd;
	u64 uid;
	u32 max_sge;
	unsigned int users;
	struct mutex post_mutex;	/* posting, resizing */
	spinlock_t lock;		/* slots */
	struct kqp_srq_slot *slots;
	u32 nslots;
	u32 free_head;
	u32 busy;
	struct xarray qps;
	u32 async_reported;
	bool ready;
	bool abandoned;
	struct rcu_head rcu;
};

/* What an id waits for its owner to answer (struct kqp_cm_id.answer). */
enum kqp_cm_answer {
	KQP_ANSWER_NONE,
	KQP_ANSWER_REQUEST,
	KQP_ANSWER_RESPONSE,
};

/**
 * struct kqp_cm_id - an RDMA CM id owned by a file
 * @obj: handle and lifetime
 * @kfile: the owning file, whose queue gets the id's events; changes only
 *	under the rdma_cm handler lock and both files' locks (migrate)
 * @cm_id: the kernel's id; NULL once destroyed (device removal)
 * @uid: the caller's value reported with events
 * @mutex: serialises commands on this id
 * @ready: events are reported; false for an id from a connection request
 *	until it is accepted, as nothing in userspace can name it before
 * @named: commands may name the id; false for an id from a connection
 *	request until GET_EVENT reported that request (under kfile->lock),
 *	as the id still belongs to the event that announces it
 * @listening: LISTEN succeeded; under @mutex
 * @addr_resolved: rdma_cm reported ADDR_RESOLVED, so the id has its device
 *	(see kqp_resolve_route_ioctl())
 * @answer: what the id waits for the caller to answer, if anything: a
 *	connection request (ACCEPT or REJECT) or a connection response
 *	(ESTABLISH or REJECT); set by the event handler and cleared by those
 *	commands, all under the rdma_cm handler lock (see kqp_reject_ioctl())
 * @events_reported: events for this id taken by GET_EVENT
 * @cm_events: events rdma_cm delivered for the id; written under the
 *	rdma_cm handler lock, waited on by NOTIFY (see kqp_notify_ioctl())
 * @backlog: connection requests a listener may still queue (never below 0)
 * @close_work: destroys @cm_id after DEVICE_REMOVAL
 * @mc_ids: handle -> struct kqp_mcast joined through this id; changed
 *	under @mutex
 * @purge_list: on a destroyer's list of ids to destroy
 * @qp: the QP created on the id, under @mutex
 * @mem_ref: keeps the struct: the id holds one, and its QP one, so a QP
 *	being destroyed can always take @mutex
 */
struct kqp_cm_id {
	struct kqp_object obj;
	struct kqp_file *kfile;
	struct rdma_cm_id *cm_id;
	u64 uid;
	struct mutex mutex;	/* commands on this id */
	bool ready;
	bool named;
	bool listening;
	bool addr_resolved;
	u8 answer;
	int events_reported;
	unsigned int cm_events;
	atomic_t backlog;
	struct work_struct close_work;
	struct xarray mc_ids;
	struct list_head purge_list;
	struct kqp_qp *qp;
	struct kref mem_ref;
};

/**
 * struct kqp_mcast - a multicast group joined through a UD id
 * @ctx: the id; the id destroys its memberships, so no reference is held
 * @id: handle, among @ctx's memberships; it moves with @ctx on migrate
 * @uid: the caller's value reported with the group's events
 * @events_reported: events for this membership taken by GET_EVENT
 * @addr: the group
 */
struct kqp_mcast {
	struct kqp_cm_id *ctx;
	u32 id;
	u64 uid;
	int events_reported;
	struct sockaddr_storage addr;
};

/**
 * struct kqp_event - an rdma_cm event waiting to be reported
 * @list: in kfile->events
 * @ctx: the id the event is for (the listener for CONNECT_REQUEST)
 * @child: CONNECT_REQUEST: the new id, owned by this event until reported
 * @mc: multicast events: the membership
 * @resp: the answer GET_EVENT gives
 */
struct kqp_event {
	struct list_head list;
	struct kqp_cm_id *ctx;
	struct kqp_cm_id *child;
	struct kqp_mcast *mc;
	struct kqp_get_event resp;
};

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
int kqp_ucmd_respond_locked(struct kqp_ucmd *ucmd, size_t cmd_len);
int kqp_ucmd_fault_in(struct kqp_ucmd *ucmd, size_t cmd_len);

/* device.c */
int kqp_device_init(void);
void kqp_device_exit(void);
int kqp_query_ioctl(struct kqp_ucmd *ucmd);
struct kqp_device *kqp_device_get_user(u32 index);
struct kqp_device *kqp_device_of(struct ib_device *ibdev);
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

/* object.c */
void kqp_file_destroy_objects(struct kqp_file *kfile);

/* cm_id.c */
int kqp_create_id_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_id_ioctl(struct kqp_ucmd *ucmd);
int kqp_bind_addr_ioctl(struct kqp_ucmd *ucmd);
int kqp_resolve_addr_ioctl(struct kqp_ucmd *ucmd);
int kqp_resolve_route_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_id_ioctl(struct kqp_ucmd *ucmd);
int kqp_listen_ioctl(struct kqp_ucmd *ucmd);
int kqp_connect_ioctl(struct kqp_ucmd *ucmd);
int kqp_accept_ioctl(struct kqp_ucmd *ucmd);
int kqp_reject_ioctl(struct kqp_ucmd *ucmd);
int kqp_disconnect_ioctl(struct kqp_ucmd *ucmd);
int kqp_establish_ioctl(struct kqp_ucmd *ucmd);
int kqp_set_option_ioctl(struct kqp_ucmd *ucmd);
int kqp_init_qp_attr_ioctl(struct kqp_ucmd *ucmd);
int kqp_notify_ioctl(struct kqp_ucmd *ucmd);
int kqp_migrate_id_ioctl(struct kqp_ucmd *ucmd);
void kqp_cm_id_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
struct kqp_cm_id *kqp_cm_id_get(struct kqp_ucmd *ucmd, u32 id);
void kqp_cm_id_put(struct kqp_cm_id *ctx);
struct kqp_cm_id *kqp_cm_id_lock(struct kqp_ucmd *ucmd, u32 id);
void kqp_cm_id_unlock(struct kqp_cm_id *ctx);
int kqp_cm_id_check_bound(struct kqp_cm_id *ctx);
void kqp_cm_id_mem_put(struct kqp_cm_id *ctx);

/* event.c */
int kqp_get_event_ioctl(struct kqp_ucmd *ucmd);
__poll_t kqp_events_poll(struct kqp_file *kfile, struct file *filp,
			 struct poll_table_struct *wait);
void kqp_event_queue(struct kqp_file *kfile, struct kqp_event *ev);
int kqp_events_purge(struct kqp_cm_id *ctx, struct list_head *children);
void kqp_events_purge_mcast(struct kqp_mcast *mc);
void kqp_events_free_all(struct kqp_file *kfile);

/* mcast.c */
int kqp_join_mcast_ioctl(struct kqp_ucmd *ucmd);
int kqp_leave_mcast_ioctl(struct kqp_ucmd *ucmd);
void kqp_mcast_free_all(struct kqp_cm_id *ctx);

/* pd.c */
int kqp_alloc_pd_ioctl(struct kqp_ucmd *ucmd);
int kqp_dealloc_pd_ioctl(struct kqp_ucmd *ucmd);
struct kqp_pd *kqp_pd_get_default_locked(struct kqp_ucontext *uctx,
					 struct kqp_device *kdev);
struct kqp_pd *kqp_pd_take(struct kqp_ucontext *uctx, u32 handle);
void kqp_pd_put_user(struct kqp_pd *pd);
void kqp_pd_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);

/* channel.c */
int kqp_create_comp_channel_ioctl(struct kqp_ucmd *ucmd);
struct kqp_channel *kqp_channel_get_fd(int fd);
struct kqp_channel *kqp_channel_make_fd(int *fd, struct file **filp);
void kqp_channel_unmake_fd(int fd, struct file *filp);
void kqp_channel_put(struct kqp_channel *chan);
void kqp_channel_notify(struct kqp_channel *chan, struct kqp_cq *cq);
u32 kqp_channel_forget(struct kqp_channel *chan, struct kqp_cq *cq);

/* cq.c */
int kqp_create_cq_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_cq_ioctl(struct kqp_ucmd *ucmd);
int kqp_flush_cq_ioctl(struct kqp_ucmd *ucmd);
struct kqp_cq *kqp_cq_create_locked(struct kqp_ucontext *uctx,
				    struct kqp_device *kdev, u32 cqe,
				    u32 comp_vector, struct kqp_channel *chan,
				    u64 uid);
void kqp_cq_fill_ring_info(struct kqp_cq *cq, struct kqp_ring_info *info);
struct kqp_cq *kqp_cq_take(struct kqp_ucontext *uctx, u32 handle);
void kqp_cq_put_user(struct kqp_cq *cq);
/**
 * struct kqp_cq_counts - what was read for a CQ made for a QP, as it goes
 * @comp: completion channel notifications
 * @async: async events
 * @kept: it did not go: other QPs use it
 */
struct kqp_cq_counts {
	u32 comp;
	u32 async;
	bool kept;
};

bool kqp_cq_release_auto(struct kqp_ucontext *uctx, struct kqp_cq *cq,
			 struct kqp_cq_counts *counts);
void kqp_cq_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
void kqp_cq_stats_read(struct kqp_cq_stats *st);
int kqp_cq_mmap(struct kqp_ucontext *uctx, struct vm_area_struct *vma);

/* qp.c */
int kqp_create_qp_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_qp_ioctl(struct kqp_ucmd *ucmd);
int kqp_modify_qp_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_qp_ioctl(struct kqp_ucmd *ucmd);
int kqp_post_send_ioctl(struct kqp_ucmd *ucmd);
int kqp_post_recv_ioctl(struct kqp_ucmd *ucmd);
int kqp_attach_mcast_ioctl(struct kqp_ucmd *ucmd);
int kqp_detach_mcast_ioctl(struct kqp_ucmd *ucmd);
void kqp_qp_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
void kqp_qp_attr_to_user(struct ib_device *ibdev, struct kqp_qp_attr *dst,
			 struct ib_qp_attr *src);
void kqp_qp_complete(struct kqp_ucontext *uctx, struct ib_wc *wc,
		     struct kqp_cqe *cqe, bool *report);
void kqp_wc_to_cqe(const struct ib_wc *wc, struct kqp_cqe *cqe, u64 wr_id,
		   u32 qp_num, u32 err_opcode);
void *kqp_post_copy(struct kqp_post *cmd);
struct kqp_qp *kqp_qp_get_hw(struct kqp_ucontext *uctx, u32 handle);
void kqp_qp_put_hw(struct kqp_qp *qp);
long kqp_build_send(struct kqp_qp *qp, struct kqp_object **ah,
		    const void *p, size_t len, union kqp_kwr *kwr,
		    struct ib_sge *ksge, u32 *opcode);
long kqp_build_recv(struct kqp_pd *pd, u32 max_sge, const void *p,
		    size_t len, struct ib_recv_wr *wr, struct ib_sge *ksge);
u32 kqp_post_chain(struct kqp_qp *qp, bool recv, union kqp_kwr *kwrs,
		   const u64 *wr_ids, const u32 *opcodes, const u8 *err_status,
		   u32 n, int *err);
int kqp_qp_mmap(struct kqp_ucontext *uctx, struct vm_area_struct *vma);

/* ring.c */
void kqp_qp_rings_init(struct kqp_qp *qp, bool recv_async, u32 recv_asked);
void kqp_rq_retired(struct kqp_qp *qp);
void kqp_qp_peer_rnr(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		     u8 rnr_retry);
void kqp_rq_commit(struct kqp_qp *qp, bool commit);
void kqp_qp_rings_free(struct kqp_qp *qp);
void kqp_qp_rings_to_user(const struct kqp_qp *qp,
			  struct kqp_qp_ring_info *info);
void kqp_qp_drain_work(struct work_struct *work);
void kqp_sq_retired(struct kqp_qp *qp);
void kqp_sq_commit(struct kqp_qp *qp, bool commit);
int kqp_doorbell_ioctl(struct kqp_ucmd *ucmd);
u32 kqp_qp_poll(struct kqp_qp *qp, bool polled);

/* poller.c */
int kqp_create_poller_ioctl(struct kqp_ucmd *ucmd);
int kqp_poller_alive(struct kqp_ucontext *uctx);
int kqp_poller_wake(struct kqp_ucontext *uctx);
void kqp_poller_info(struct kqp_ucontext *uctx, struct kqp_ctx_info *info);
void kqp_poller_stop(struct kqp_ucontext *uctx);

/* srq.c */
int kqp_create_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_modify_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_srq_ioctl(struct kqp_ucmd *ucmd);
int kqp_post_srq_recv_ioctl(struct kqp_ucmd *ucmd);
void kqp_srq_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
struct kqp_srq *kqp_srq_take(struct kqp_ucontext *uctx, u32 handle);
void kqp_srq_put_user(struct kqp_srq *srq);
int kqp_srq_add_qp(struct kqp_srq *srq, struct kqp_qp *qp);
void kqp_srq_del_qp(struct kqp_srq *srq, struct kqp_qp *qp);
void kqp_srq_complete(struct kqp_srq *srq, struct ib_wc *wc,
		      struct kqp_cqe *cqe, bool *report);

/* mr.c */
int kqp_reg_mr_ioctl(struct kqp_ucmd *ucmd);
int kqp_dereg_mr_ioctl(struct kqp_ucmd *ucmd);
void kqp_mr_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
int kqp_mr_check_sge(struct kqp_pd *pd, u64 addr, u32 length, u32 lkey,
		     int access);

/* ah.c */
int kqp_create_ah_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_ah_ioctl(struct kqp_ucmd *ucmd);
void kqp_ah_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
int kqp_ah_attr_from_user(struct ib_device *ibdev,
			  const struct kqp_ah_attr *src,
			  struct rdma_ah_attr *dst);
void kqp_ah_attr_to_user(struct ib_device *ibdev, struct kqp_ah_attr *dst,
			 struct rdma_ah_attr *src);

/* async.c */
int kqp_create_async_fd_ioctl(struct kqp_ucmd *ucmd);
void kqp_async_queue_event(struct kqp_ucontext *uctx, u32 event, u32 kind,
			   u32 handle, u64 uid, u32 *reported);
void kqp_async_forget(struct kqp_ucontext *uctx, u32 *reported);
void kqp_async_device_event(const struct ib_event *event);
void kqp_async_detach(struct kqp_ucontext *uctx);

/* kapi.c: the exported API's scope */
void kqp_kapi_init(struct dentry *debugfs);
void kqp_kapi_exit(void);

/* core.c: rdma_create_qp(3) semantics, shared with the exported API */
struct kqp_core_scope;

/**
 * struct kqp_core_scope_ops - where a caller's default PD and CQs come from
 * @get_default_pd: the default PD of @kdev in this scope, one more user
 * @put_default_pd: drop the user @get_default_pd took
 * @alloc_cq: a CQ of at least @cqe entries for a QP that has none
 * @free_cq: free a CQ @alloc_cq made
 */
struct kqp_core_scope_ops {
	struct ib_pd *(*get_default_pd)(struct kqp_core_scope *scope,
					struct kqp_device *kdev, void **token);
	void (*put_default_pd)(struct kqp_core_scope *scope, void *token);
	struct ib_cq *(*alloc_cq)(struct kqp_core_scope *scope,
				  struct kqp_device *kdev, u32 cqe, bool send,
				  void **token);
	void (*free_cq)(struct kqp_core_scope *scope, void *token);
};

struct kqp_core_scope {
	const struct kqp_core_scope_ops *ops;
};

/**
 * struct kqp_core_qp - what the core allocated for one QP
 * @pd_token: the default PD's, when the caller passed none
 * @send_cq_token: the send CQ's, when the caller passed none
 * @recv_cq_token: the receive CQ's, when the caller passed none
 */
struct kqp_core_qp {
	void *pd_token;
	void *send_cq_token;
	void *recv_cq_token;
};

int kqp_core_create_qp(struct kqp_core_scope *scope, struct rdma_cm_id *id,
		       struct ib_pd *pd, struct ib_qp_init_attr *attr,
		       struct kqp_core_qp *res, bool unbound_ud,
		       struct ib_qp **qp);
void kqp_core_release(struct kqp_core_scope *scope, struct kqp_core_qp *res);

#endif /* KQP_H */
