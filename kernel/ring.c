// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A QP's submission rings: userspace writes work requests into memory it
 * shares with the kernel and rings KQP_IOCTL_DOORBELL, instead of handing
 * a list to KQP_IOCTL_POST_SEND.  A drain copies each entry once, checks
 * the copy with the post ioctls' code, and hands the device chains of up
 * to KQP_RING_BATCH requests.  The ring is the process's to scribble on:
 * the kernel reads its tail once per drain and checks it against its own
 * head, parses only its copy of an entry, never reads back what it wrote,
 * and uses its own vmalloc() address.
 *
 * Drains run in process context only, under the queue's mutex and the
 * device's hw_rwsem (read), as the post ioctls do.  Who writes what, the
 * barrier pairs (each also named where it stands, with its partner in
 * lib/ring.h), when the kernel commits to drain unprompted and why no
 * entry is left behind: doc/design/rings.md.
 */
#include <linux/overflow.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "kqp.h"
#include "account.h"
#include "qp.h"

/* Requests per chain, at most. */
#define KQP_RING_BATCH		16
/* A queue's staging area stays near this size, whatever its entry size. */
#define KQP_RING_STAGE_BYTES	SZ_16K
/* The largest entry: 64 KiB of inline data or 4095 SGEs is past any device. */
#define KQP_RING_ENTRY_MAX	SZ_64K
/* Both rings of a QP, with their headers, at most. */
#define KQP_RING_BYTES_MAX	SZ_1G
/* Entries one drain takes at most (a post ioctl takes 1 MiB: 21845 sends). */
#define KQP_RING_DRAIN_MAX	4096
/* Drains and settles of a send ring per call, before drain_work goes on. */
#define KQP_RING_WORK_ROUNDS	4

#define KQP_RING_HDR_BYTES	sizeof(struct kqp_wq_ring_hdr)
static_assert(sizeof(struct kqp_wq_ring_hdr) == 256);

/* An entry's size for a request of @bytes at most; 0 if past the largest. */
static u32 kqp_ring_entry_size(u64 bytes)
{
	if (bytes > KQP_RING_ENTRY_MAX)
		return 0;
	return roundup_pow_of_two(max_t(u32, bytes, 16));
}

/* A staging area for @r, whose @nr, @entry_size and @max_sge are set. */
static int kqp_ring_stage_alloc(struct kqp_ring *r)
{
	size_t per = sizeof(*r->kwrs) + sizeof(*r->ahs) +
		     (size_t)r->max_sge * sizeof(*r->sges) + r->entry_size;
	void *p;

	r->batch = clamp_t(size_t, KQP_RING_STAGE_BYTES / per, 1,
			   min_t(u32, KQP_RING_BATCH, r->nr));
	p = kvzalloc(r->batch * per, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!p)
		return -ENOMEM;
	r->kwrs = p;
	r->ahs = (struct kqp_object **)(r->kwrs + r->batch);
	r->sges = (struct ib_sge *)(r->ahs + r->batch);
	r->stage = r->sges + (size_t)r->batch * r->max_sge;
	return 0;
}

static size_t kqp_ring_stage_bytes(const struct kqp_ring *r)
{
	if (!r->nr)
		return 0;
	return r->batch * (sizeof(*r->kwrs) + sizeof(*r->ahs) +
			   (size_t)r->max_sge * sizeof(*r->sges) +
			   r->entry_size);
}

/*
 * Give a QP made with KQP_CREATE_QP_RINGS its rings: called once its caps
 * and slots are known, before it is published.  A ring has as many
 * entries as the queue has slots, each large enough for a request at the
 * QP's caps.  The rings are charged to the caller's cgroup and, apart,
 * to its max_queue_bytes (they live on while mapped: vmem.c); the
 * staging areas with the QP.  A QP whose rings would pass a limit, or
 * find no memory, gets none and posts with the ioctls: the flag asks for
 * speed, not for different semantics.
 */
void kqp_qp_rings_init(struct kqp_qp *qp, bool recv_async, u32 recv_asked)
{
	struct kqp_ring *sq = &qp->sq_ring, *rq = &qp->rq_ring;
	u64 send_bytes, recv_bytes, bytes, charged = qp->vobj.queue_bytes;
	struct kqp_vmem *vmem;

	send_bytes = kqp_send_wr_bytes_max(qp->cap.max_send_sge,
					   qp->cap.max_inline_data);
	sq->nr = qp->sq.size;
	sq->entry_size = kqp_ring_entry_size(send_bytes);
	sq->max_sge = max(qp->cap.max_send_sge, 1U);
	if (!qp->srq) {
		rq->nr = qp->rq.size;
		recv_bytes = kqp_recv_wr_bytes(qp->cap.max_recv_sge);
		rq->entry_size = kqp_ring_entry_size(recv_bytes);
		rq->max_sge = max(qp->cap.max_recv_sge, 1U);
	}
	if (!sq->entry_size || (rq->nr && !rq->entry_size))
		goto err;
	bytes = 2 * KQP_RING_HDR_BYTES + (u64)sq->nr * sq->entry_size +
		(u64)rq->nr * rq->entry_size;
	if (bytes > KQP_RING_BYTES_MAX)
		goto err;

	if (kqp_ring_stage_alloc(sq) || (rq->nr && kqp_ring_stage_alloc(rq)))
		goto err;
	if (kqp_queue_charge(qp->uctx, &qp->vobj,
			     qp->vobj.queue_bytes + kqp_ring_stage_bytes(sq) +
			     kqp_ring_stage_bytes(rq), false))
		goto err;
	vmem = kqp_vmem_alloc(qp->uctx, PAGE_ALIGN(bytes));
	if (IS_ERR(vmem))
		goto err;
	qp->ring_vmem = vmem;
	qp->ring_mem = kqp_vmem_addr(vmem);
	qp->ring_bytes = kqp_vmem_size(vmem);
	sq->hdr = qp->ring_mem;
	rq->hdr = qp->ring_mem + KQP_RING_HDR_BYTES;
	sq->entries = qp->ring_mem + 2 * KQP_RING_HDR_BYTES;
	rq->entries = sq->entries + (size_t)sq->nr * sq->entry_size;
	/* Nothing drains unprompted: every publish must be rung. */
	sq->hdr->flags = KQP_WQ_RING_NEED_DOORBELL;
	if (rq->nr) {
		rq->hdr->flags = KQP_WQ_RING_NEED_DOORBELL;
		/* Refused entries are consumed as an RC send ring's are. */
		qp->rq_async = recv_async && qp->qp_type == IB_QPT_RC;
		/*
		 * Half the receives asked for, not of what the device made
		 * of them (rxe makes 1023 of 512): a process keeps posting
		 * the depth it asked for, which must be enough to commit.
		 */
		qp->rq_low = max(min(recv_asked, qp->cap.max_recv_wr) / 2, 1U);
		/* Off an id, the flag is the caller's word for it. */
		qp->rq_peer_waits = qp->rq_async && !qp->cm;
	}
	return;

err:
	kqp_qp_rings_free(qp);
	/* Lowering a charge cannot fail. */
	kqp_queue_charge(qp->uctx, &qp->vobj, charged, false);
}

/* With the QP: no command uses it, and it was never published or is claimed. */
void kqp_qp_rings_free(struct kqp_qp *qp)
{
	/* A mapping keeps the pages, and their charge, until it goes. */
	kqp_vmem_put(qp->ring_vmem);
	qp->ring_vmem = NULL;
	qp->ring_mem = NULL;
	qp->ring_bytes = 0;
	kvfree(qp->sq_ring.kwrs);
	kvfree(qp->rq_ring.kwrs);
	memset(&qp->sq_ring, 0, sizeof(qp->sq_ring));
	memset(&qp->rq_ring, 0, sizeof(qp->rq_ring));
}

static void kqp_ring_info(const struct kqp_qp *qp, const struct kqp_ring *r,
			  struct kqp_wq_ring_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!r->nr)
		return;
	info->entries = r->nr;
	info->entry_size = r->entry_size;
	info->off_hdr = (void *)r->hdr - qp->ring_mem;
	info->off_entries = r->entries - qp->ring_mem;
}

void kqp_qp_rings_to_user(const struct kqp_qp *qp,
			  struct kqp_qp_ring_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!qp->ring_mem)
		return;
	info->mmap_offset = (u64)qp->vobj.obj.id << PAGE_SHIFT;
	info->mmap_size = qp->ring_bytes;
	info->flags = KQP_QP_RINGS_SEND_ASYNC |
		      (qp->rq_async ? KQP_QP_RINGS_RECV_ASYNC : 0);
	kqp_ring_info(qp, &qp->sq_ring, &info->sq);
	kqp_ring_info(qp, &qp->rq_ring, &info->rq);
}

/*
 * Copy the entry at @idx into staging slot @j and build it.  Returns 0,
 * or the entry's errno; its AH reference, if any, is in r->ahs[j].  On a
 * send's failure *@opcode is U32_MAX unless only its SGEs were refused.
 */
static int kqp_ring_build(struct kqp_qp *qp, struct kqp_ring *r, bool recv,
			  u32 idx, u32 j, u64 *wr_id, u32 *opcode)
{
	void *e = r->stage + (size_t)j * r->entry_size;
	struct ib_sge *sges = r->sges + (size_t)j * r->max_sge;
	long used;

	memcpy(e, r->entries + (size_t)(idx & (r->nr - 1)) * r->entry_size,
	       r->entry_size);
	/* Both request layouts start with the caller's wr_id. */
	*wr_id = *(const u64 *)e;
	*opcode = recv ? 0 : U32_MAX;
	r->ahs[j] = NULL;
	if (recv)
		used = kqp_build_recv(qp->pd, qp->cap.max_recv_sge, e,
				      r->entry_size, &r->kwrs[j].recv, sges);
	else
		used = kqp_build_send(qp, &r->ahs[j], e, r->entry_size,
				      &r->kwrs[j], sges, opcode);
	return used < 0 ? used : 0;
}

/* Is a signaled send the device has not completed outstanding? */
static bool kqp_sq_outstanding(struct kqp_qp *qp)
{
	bool ret;

	spin_lock_irq(&qp->lock);
	ret = qp->sq_sig_out;
	spin_unlock_irq(&qp->lock);
	return ret;
}

/*
 * An entry of @r the kernel refused: an RC send, or a receive of an
 * asynchronous receive ring.  The process was told nothing when it
 * published it (it may not even have rung), so it learns as it would from
 * a device: the QP goes to ERR, the entry completes with @status and every
 * later one with a flush.  Each takes its slot as a zero-length signaled
 * SEND, or a receive without SGEs, posted to the QP in ERR, which the
 * device flushes without sending or writing anything (IBTA: work posted in
 * the Error state completes in error); kqp_qp_complete() reports @status
 * for the first.  Returns 0, or the errno of a device that refused the
 * transition, in which case the drain stops at the entry as a receive
 * drain does.
 */
static int kqp_ring_fail(struct kqp_qp *qp, struct kqp_ring *r, u8 status)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	int ret;

	ret = ib_modify_qp(qp->qp, &attr, IB_QP_STATE);
	if (ret)
		return ret;
	r->failed = true;
	r->fail_status = status;
	return 0;
}

/* Staging slot @j becomes the placeholder of a refused entry. */
static void kqp_ring_placeholder(struct kqp_ring *r, bool recv, u32 j,
				 u8 *status)
{
	struct ib_send_wr *wr = &r->kwrs[j].send;

	if (r->ahs[j]) {
		kqp_object_put(r->ahs[j]);
		r->ahs[j] = NULL;
	}
	memset(&r->kwrs[j], 0, sizeof(r->kwrs[j]));
	if (!recv) {
		wr->opcode = IB_WR_SEND;
		wr->send_flags = IB_SEND_SIGNALED;
	}
	*status = r->fail_status;
	/* Only the first reports its own status; the device flushes the rest. */
	r->fail_status = 0;
}

/*
 * Post what the process published on one of @qp's rings, from the head
 * up to the tail read once here, a batch per chain, and at most
 * KQP_RING_DRAIN_MAX entries: the device's hw_rwsem, which every destroy
 * on the device waits for, is held no longer than a post ioctl's largest
 * list holds it.  A receive drain stops at the first entry that fails,
 * which the head then names, and so does a UD send drain, unless the
 * receive ring is asynchronous.  An RC send entry the kernel's checks
 * refuse is consumed (kqp_ring_fail()), once the signaled sends before it
 * have completed: until then the drain stops there without an error, and
 * the ring stays committed, so their completion drains it again.  So is
 * a receive entry of an asynchronous ring, at once.  An RC send drain
 * fails only where the device refuses.  Called with the queue's mutex and
 * hw_rwsem (read) held.
 */
static int kqp_ring_drain(struct kqp_qp *qp, bool recv)
{
	struct kqp_ring *r = recv ? &qp->rq_ring : &qp->sq_ring;
	u64 wr_ids[KQP_RING_BATCH];
	u32 opcodes[KQP_RING_BATCH];
	u8 status[KQP_RING_BATCH];
	u32 tail, n, built, posted, j;
	bool waiting = false;
	int ret = 0, err;

	if (!r->nr)
		return -EINVAL;
	/*
	 * Pairs with the release store of the tail in kqp_wq_publish()
	 * (lib/ring.h): the entries below it are written.
	 */
	tail = smp_load_acquire(&r->hdr->tail);
	n = tail - r->head;
	if (n > r->nr)
		return -EINVAL;
	n = min_t(u32, n, KQP_RING_DRAIN_MAX);

	while (n && !ret && !waiting) {
		u32 m = min(n, r->batch);

		for (built = 0; built < m; built++) {
			status[built] = 0;
			err = kqp_ring_build(qp, r, recv, r->head + built,
					     built, &wr_ids[built],
					     &opcodes[built]);
			if (!err && !r->failed)
				continue;
			/*
			 * A UD send's placeholder would need an AH: it stops,
			 * as a receive of a synchronous ring does.
			 */
			if (recv ? !qp->rq_async : qp->qp_type != IB_QPT_RC) {
				ret = err;
				break;
			}
			if (!r->failed) {
				/*
				 * What comes before it goes to the device first,
				 * and a send completes, as on a device: the entry
				 * is copied and built again after them.  The
				 * receives before a refused one are flushed.
				 */
				if (built)
					break;
				if (!recv && kqp_sq_outstanding(qp)) {
					waiting = true;
					break;
				}
				ret = kqp_ring_fail(qp, r,
						opcodes[built] == U32_MAX ?
						IB_WC_LOC_QP_OP_ERR :
						IB_WC_LOC_PROT_ERR);
				if (ret)
					break;
			}
			kqp_ring_placeholder(r, recv, built, &status[built]);
		}
		/* An entry not in the chain keeps no AH. */
		if (built < m && r->ahs[built]) {
			kqp_object_put(r->ahs[built]);
			r->ahs[built] = NULL;
		}
		posted = built ? kqp_post_chain(qp, recv, r->kwrs, wr_ids,
						opcodes, status, built,
						&err) : 0;
		/* An entry the device refused comes before one that failed. */
		if (posted < built)
			ret = err;
		for (j = 0; j < built; j++)
			if (r->ahs[j])
				kqp_object_put(r->ahs[j]);
		/* Read without the mutex by kqp_sq_retired(). */
		WRITE_ONCE(r->head, r->head + posted);
		n -= posted;
		if (n && !ret && !waiting) {
			if (fatal_signal_pending(current))
				ret = -EINTR;
			cond_resched();
		}
	}
	/*
	 * Pairs with the acquire load of the head in kqp_wq_consumed()
	 * (lib/ring.h): the device has every request below it, and their
	 * entries were copied and may be overwritten.
	 */
	smp_store_release(&r->hdr->head, r->head);
	return ret;
}

/*
 * With qp->lock held: whether the kernel is committed to drain the send
 * ring unprompted, and NEED_DOORBELL, which says the opposite to the
 * process.  Every change of either goes through here, so the two never
 * disagree.
 */
void kqp_sq_commit(struct kqp_qp *qp, bool commit)
{
	u32 flags = KQP_WQ_RING_NEED_DOORBELL;

	lockdep_assert_held(&qp->lock);
	WRITE_ONCE(qp->sq_committed, commit);
	if (commit)
		flags = qp->sq_polled ? KQP_WQ_RING_POLLED : 0;
	if (qp->sq_ring.nr)
		WRITE_ONCE(qp->sq_ring.hdr->flags, flags);
}

/*
 * With qp->lock held: whether the kernel is committed to drain the
 * receive ring unprompted (only ever with @rq_async), and the ring's
 * flags, which say so: NEED_DOORBELL when it is not, and POLLED while
 * the poller posts what is published (kqp_qp_poll()).  A stopped ring is
 * not polled.  @rq_polled and the ring's @stopped are written under
 * rq_mutex, whose holder settles after changing them: flags written here
 * from a completion with a stale copy are written again then.
 */
void kqp_rq_commit(struct kqp_qp *qp, bool commit)
{
	struct kqp_ring *r = &qp->rq_ring;
	bool polled = READ_ONCE(qp->rq_polled) && !READ_ONCE(r->stopped);

	lockdep_assert_held(&qp->lock);
	WRITE_ONCE(qp->rq_committed, commit);
	WRITE_ONCE(r->hdr->flags, (commit ? 0 : KQP_WQ_RING_NEED_DOORBELL) |
		   (polled ? KQP_WQ_RING_POLLED : 0));
}

/*
 * After a drain of the receive ring, under rq_mutex: decide whether the
 * process must ring for what it publishes next.  An asynchronous ring is
 * committed while the device holds @rq_low of its receives or more: the
 * completion that takes it below, which must come before the device runs
 * out, queues drain_work (kqp_rq_retired()).  The decision and the count are
 * both under qp->lock, so a completion either comes after it and sees
 * it, or came before and left the count it read.  Not committed,
 * NEED_DOORBELL is set, then the tail is read once more, as
 * kqp_sq_settle() does and for the same reason; the smp_mb() pairs with
 * the fence in kqp_wq_need_doorbell() (lib/ring.h).  Returns true when
 * nothing is left behind, false when the caller must drain again.
 */
static bool kqp_rq_settle(struct kqp_qp *qp)
{
	struct kqp_ring *r = &qp->rq_ring;
	bool commit;

	spin_lock_irq(&qp->lock);
	commit = qp->rq_async && READ_ONCE(qp->rq_peer_waits) && !r->stopped &&
		 qp->rq.head - qp->rq.tail >= qp->rq_low;
	kqp_rq_commit(qp, commit);
	spin_unlock_irq(&qp->lock);
	/* A synchronous ring is always rung: nothing can be left behind. */
	if (commit || r->stopped || !qp->rq_async)
		return true;
	/* Pairs with the fence in kqp_wq_need_doorbell() (lib/ring.h). */
	smp_mb();
	return READ_ONCE(r->hdr->tail) == r->head;
}

/*
 * Drain the receive ring and settle it, again while the process keeps
 * publishing behind the settle, @rounds times at most.  A ring that
 * stopped on an entry is drained again only by a doorbell (the process
 * may rewind its tail past it meanwhile).  Returns the drain's errno, 0,
 * or -EAGAIN when entries were left for another round.  Called with
 * rq_mutex and hw_rwsem (read) held.
 */
static int kqp_rq_drain_settle(struct kqp_qp *qp, unsigned int rounds)
{
	int ret;

	do {
		ret = kqp_ring_drain(qp, true);
		if (!qp->rq_ring.nr)
			return ret;
		/*
		 * A doorbell cut short by a fatal signal stops nothing that
		 * a post already returned from: drain_work takes the rest.
		 */
		if (ret == -EINTR && qp->rq_async)
			ret = 0;
		WRITE_ONCE(qp->rq_ring.stopped, ret);
		if (kqp_rq_settle(qp))
			return ret;
		cond_resched();
	} while (--rounds);
	return -EAGAIN;
}

/*
 * CONNECT or ACCEPT of @qp's id, with the id's lock, and @rnr_retry the
 * caller's rnr_retry_count.  The CM hands it to the peer (in the REQ or
 * the REP), whose QP then retries that often when it finds no receive
 * of ours: 7 is for ever.  Only then may a receive ring leave receives
 * for later (kqp_rq_settle()): a peer that sends faster than the kernel
 * posts them meets an RNR NAK and tries again, where with fewer retries
 * its QP would fail, as cmatose's do (rnr_retry_count 0) when a burst
 * overtakes the kworker.  iWARP has no RNR NAK: a missing receive is
 * fatal there.  A QP not on an id (the caller connects it itself) never
 * learns its peer's count, and keeps its receive ring synchronous.
 */
void kqp_qp_peer_rnr(struct kqp_qp *qp, struct rdma_cm_id *cm_id,
		     u8 rnr_retry)
{
	WRITE_ONCE(qp->rq_peer_waits,
		   rnr_retry >= 7 &&
		   !rdma_protocol_iwarp(cm_id->device, cm_id->port_num));
}

/*
 * Queue @qp's drain_work, with a reference the work drops: the QP's
 * destroy (kqp_object_drain()) waits for it.  Any context; nothing is
 * queued for a QP being destroyed.
 *
 * The work runs in a kworker, whose CPU time is nobody's: it is the one
 * part of posting that escapes the process's accounting (its rusage, its
 * cgroup's CPU controller).  So it is bounded per user: each user's
 * drains go to an ordered workqueue of its own, one at a time over all
 * its tables, each one round of at most the ring's entries before it
 * queues itself again behind the user's others.  Whatever a user's
 * processes do, this costs the host one CPU at most, and only while they
 * keep publishing behind signaled sends without ringing.  A ring the
 * poller serves has none of it: the poller, a thread of the process,
 * drains it itself while awake (kqp_sq_retired()).
 */
static void kqp_qp_queue_drain(struct kqp_qp *qp)
{
	struct kqp_object *obj = &qp->vobj.obj;
	struct workqueue_struct *wq = qp->uctx ? kqp_user_wq(qp->uctx) :
						 kqp_wq;

	if (READ_ONCE(obj->dying) || !refcount_inc_not_zero(&obj->users))
		return;
	if (!queue_work(wq, &qp->drain_work))
		kqp_object_put(obj);
}

/*
 * A receive of an asynchronous ring completed, with qp->lock held
 * (kqp_qp_complete()): publish how far the receives retired.  While the
 * device still holds @rq_low or more, nothing else: what was published
 * waits for the QP's next doorbell (libkqp's send doorbells carry the
 * receive ring) or for the completion that takes the device below
 * @rq_low, which ends the commitment and queues a drain if anything was
 * published, with @rq_low - 1 receives left in the device meanwhile.  So
 * a ping-pong, whose receives ride on its sends' doorbells, wakes no
 * kworker.  The smp_mb() pairs with the fence in kqp_wq_need_doorbell(),
 * as kqp_rq_settle()'s does: an entry published before the process saw
 * NEED_DOORBELL is seen here.  The head is read without rq_mutex: a
 * drain that holds it settles after it moves the head, under qp->lock,
 * so it decides on its own head.
 */
void kqp_rq_retired(struct kqp_qp *qp)
{
	struct kqp_ring *r = &qp->rq_ring;

	lockdep_assert_held(&qp->lock);
	/*
	 * Pairs with the acquire load in kqp_wq_retired() (lib/ring.h): the
	 * slots below it are free.
	 */
	smp_store_release(&r->hdr->retired, qp->rq.tail);
	if (!qp->rq_committed || qp->rq.head - qp->rq.tail >= qp->rq_low)
		return;
	kqp_rq_commit(qp, false);
	/* Pairs with the fence in kqp_wq_need_doorbell() (lib/ring.h). */
	smp_mb();
	if (READ_ONCE(r->hdr->tail) != READ_ONCE(r->head))
		kqp_qp_queue_drain(qp);
}

/*
 * After a drain of the send ring: decide whether the process must ring
 * for what it publishes next.  The kernel commits to drain again on its
 * own while a signaled send is outstanding, because that send's
 * completion will queue drain_work (kqp_qp_retire_sends()); the decision
 * and the count are both under qp->lock, so a completion either comes
 * after it and sees it, or came before and left the count it read.  It
 * also commits while the poller serves the ring (@sq_polled), which the
 * poller clears, then settles, before it sleeps (kqp_qp_poll()), once the
 * device has taken a chain (@sq_ready): until then the process rings, and
 * a device that refuses sends (a QP below RTS) fails its post at once.
 *
 * Not committed, NEED_DOORBELL is set, then the tail is read once more:
 * the process may have published after the drain read the tail and
 * before it could see the flag.  The smp_mb() pairs with the fence in
 * kqp_wq_need_doorbell() (lib/ring.h), between its store of the tail and
 * its load of the flags: a store-buffering pair, so either this sees its
 * tail, or it sees NEED_DOORBELL and rings.  Returns true when nothing is
 * left behind, false when the caller must drain again.
 */
static bool kqp_sq_settle(struct kqp_qp *qp, bool stopped)
{
	struct kqp_ring *r = &qp->sq_ring;
	bool commit;

	spin_lock_irq(&qp->lock);
	/* UD refuses entries synchronously (kqp_ring_drain()): always rung. */
	commit = !stopped && qp->qp_type == IB_QPT_RC &&
		 (qp->sq_sig_out || (qp->sq_polled && qp->sq_ready));
	kqp_sq_commit(qp, commit);
	spin_unlock_irq(&qp->lock);
	if (commit || stopped)
		return true;
	/* Pairs with the fence in kqp_wq_need_doorbell() (lib/ring.h). */
	smp_mb();
	return READ_ONCE(r->hdr->tail) == r->head;
}

/*
 * Drain the send ring and settle it, again while the process keeps
 * publishing behind the settle, @rounds times at most.  Returns the
 * drain's errno, 0, or -EAGAIN when entries were left for another round.
 * Called with sq_mutex and hw_rwsem (read) held.
 */
static int kqp_sq_drain_settle(struct kqp_qp *qp, unsigned int rounds)
{
	int ret;

	do {
		u32 head = qp->sq_ring.head;

		ret = kqp_ring_drain(qp, false);
		qp->sq_ring.stopped = ret;
		/* What the device took, or refused (RESET clears it too). */
		if (ret)
			qp->sq_ready = false;
		else if (qp->sq_ring.head != head)
			qp->sq_ready = true;
		if (kqp_sq_settle(qp, ret))
			return ret;
		cond_resched();
	} while (--rounds);
	return -EAGAIN;
}

/*
 * A signaled send of a committed send ring retired, with qp->lock held
 * (kqp_qp_retire_sends()).  Queue a drain only when there is something
 * to do: entries published, or, with nothing signaled left, the settle
 * that ends the commitment, done here.  Its smp_mb() pairs with the
 * fence in kqp_wq_need_doorbell() as kqp_sq_settle()'s does.  The head
 * is read without sq_mutex: a drain that holds it settles after it moves
 * the head, under qp->lock, so it decides on its own head.
 */
void kqp_sq_retired(struct kqp_qp *qp)
{
	struct kqp_ring *r = &qp->sq_ring;

	lockdep_assert_held(&qp->lock);
	/* The poller looks anyway, and settles before it stops looking. */
	if (qp->sq_polled)
		return;
	if (!qp->sq_sig_out) {
		kqp_sq_commit(qp, false);
		/* Pairs with kqp_wq_need_doorbell()'s fence (lib/ring.h). */
		smp_mb();
	}
	if (READ_ONCE(r->hdr->tail) != READ_ONCE(r->head))
		kqp_qp_queue_drain(qp);
}

/*
 * Drain the rings the kernel committed to drain: what the process
 * published after a signaled send, or behind the receives of an
 * asynchronous receive ring, without ringing.  The receive ring first,
 * as a doorbell does; only a ring with something published.  One round
 * each, then it queues itself again if the process is still publishing
 * behind a settle: it runs on behalf of the process, outside its own
 * context.  A refused entry fails the QP (kqp_ring_fail()).  A device
 * that refuses the chain stops the ring, with NEED_DOORBELL set, and the
 * next doorbell drains it again and returns the errno; nothing drains a
 * stopped ring before that, so the process may take back its entries.
 * The heads are read without the mutexes only to skip an empty ring: a
 * drain that moved one settled after it.
 */
void kqp_qp_drain_work(struct work_struct *work)
{
	struct kqp_qp *qp = container_of(work, struct kqp_qp, drain_work);
	struct rw_semaphore *hw_rwsem = &qp->vobj.kdev->hw_rwsem;
	struct kqp_ring *rq = &qp->rq_ring, *sq = &qp->sq_ring;
	int ret = 0, rret = 0;

	down_read(hw_rwsem);
	if (!qp->vobj.hw_gone && qp->rq_async &&
	    READ_ONCE(rq->hdr->tail) != READ_ONCE(rq->head)) {
		mutex_lock(&qp->rq_mutex);
		if (!rq->stopped)
			rret = kqp_rq_drain_settle(qp, 1);
		mutex_unlock(&qp->rq_mutex);
	}
	if (!qp->vobj.hw_gone &&
	    READ_ONCE(sq->hdr->tail) != READ_ONCE(sq->head)) {
		mutex_lock(&qp->sq_mutex);
		if (!sq->stopped)
			ret = kqp_sq_drain_settle(qp, 1);
		mutex_unlock(&qp->sq_mutex);
	}
	up_read(hw_rwsem);
	/* Still being fed: let other work run, then go on. */
	if (ret == -EAGAIN || rret == -EAGAIN)
		kqp_qp_queue_drain(qp);
	kqp_object_put(&qp->vobj.obj);
}

/*
 * The poller's look at one QP (poller.c): drain its rings, as a doorbell
 * would, and mark them served (@polled) or no longer.  Only RC QPs: a UD
 * send drain refuses entries synchronously, so its ring is always rung.
 * Neither ring is drained once stopped: the doorbell that stopped it
 * returned the errno, and the process may be taking its entries back.
 * Returns the entries taken (or 1 when the send ring was left with more,
 * for another pass).
 *
 * Going to sleep (@polled false), the send ring's settle is the one that
 * ends the poller's commitment: with @sq_polled cleared first, under
 * sq_mutex and qp->lock, it sets NEED_DOORBELL unless a signaled send
 * keeps the kernel committed, then reads the tail again (smp_mb(), paired
 * with kqp_wq_need_doorbell() in lib/ring.h).  A synchronous receive
 * ring needs no such pair: userspace waits for @head and rings if it
 * does not move.  An asynchronous one settles as after any drain.
 */
u32 kqp_qp_poll(struct kqp_qp *qp, bool polled)
{
	struct rw_semaphore *hw_rwsem = &qp->vobj.kdev->hw_rwsem;
	struct kqp_ring *r;
	u32 head, took = 0;

	if (!qp->ring_mem || qp->qp_type != IB_QPT_RC)
		return 0;
	down_read(hw_rwsem);
	if (qp->vobj.hw_gone)
		goto out;

	r = &qp->rq_ring;
	if (r->nr) {
		mutex_lock(&qp->rq_mutex);
		WRITE_ONCE(qp->rq_polled, polled);
		if (!r->stopped) {
			head = r->head;
			if (kqp_rq_drain_settle(qp, 1) == -EAGAIN)
				took++;
			took += r->head - head;
		} else {
			kqp_rq_settle(qp);
		}
		mutex_unlock(&qp->rq_mutex);
	}

	r = &qp->sq_ring;
	mutex_lock(&qp->sq_mutex);
	/* Served, committed and empty: nothing to do, as long as it stays so. */
	if (polled && qp->sq_polled && READ_ONCE(qp->sq_committed) &&
	    READ_ONCE(r->hdr->tail) == r->head)
		goto unlock;
	if (qp->sq_polled != polled) {
		spin_lock_irq(&qp->lock);
		qp->sq_polled = polled;
		spin_unlock_irq(&qp->lock);
	}
	if (!r->stopped) {
		head = r->head;
		if (kqp_sq_drain_settle(qp, 1) == -EAGAIN)
			took++;
		took += r->head - head;
	}
unlock:
	mutex_unlock(&qp->sq_mutex);
out:
	up_read(hw_rwsem);
	return took;
}

/* Drain one QP's rings as @flags say: the receive ring first. */
static int kqp_doorbell_one(struct kqp_ucontext *uctx, u32 handle, u32 flags)
{
	struct kqp_qp *qp;
	int ret = 0;

	qp = kqp_qp_get_hw(uctx, handle);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	if (!qp->ring_mem) {
		ret = -EINVAL;
		goto out;
	}
	if (flags & KQP_DB_RECV) {
		mutex_lock(&qp->rq_mutex);
		ret = kqp_rq_drain_settle(qp, KQP_RING_WORK_ROUNDS);
		mutex_unlock(&qp->rq_mutex);
		/* As for sends below. */
		if (ret == -EAGAIN) {
			kqp_qp_queue_drain(qp);
			ret = 0;
		}
	}
	if (!ret && (flags & KQP_DB_SEND)) {
		mutex_lock(&qp->sq_mutex);
		ret = kqp_sq_drain_settle(qp, KQP_RING_WORK_ROUNDS);
		mutex_unlock(&qp->sq_mutex);
		/*
		 * Another thread keeps publishing: what it left behind the
		 * last settle is drain_work's, and this call is done.
		 */
		if (ret == -EAGAIN) {
			kqp_qp_queue_drain(qp);
			ret = 0;
		}
	}
out:
	kqp_vobj_put_hw(&qp->vobj);
	return ret;
}

/* Entries kept on the stack; longer arrays are allocated. */
#define KQP_DOORBELL_STACK	4

/*
 * KQP_IOCTL_DOORBELL: copy and check every entry, then drain each QP it
 * names and write its errno back.
 */
int kqp_doorbell_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_doorbell *cmd = ucmd->cmd;
	struct kqp_doorbell_entry stack[KQP_DOORBELL_STACK], *ents = stack;
	const u32 known = KQP_DB_SEND | KQP_DB_RECV;
	void __user *uents = u64_to_user_ptr(cmd->entries);
	u32 i, esz = cmd->entry_size;
	int ret = 0;

	/* Before anything is drained: the caller learns, and rings alone. */
	if (cmd->flags & KQP_DOORBELL_WAKE_POLLER) {
		ret = kqp_poller_alive(ucmd->uctx);
		if (ret)
			return ret;
	}
	if (!cmd->count || cmd->count > KQP_DOORBELL_MAX ||
	    esz < sizeof(*ents) || esz > PAGE_SIZE)
		return -EINVAL;
	if (cmd->count > KQP_DOORBELL_STACK) {
		ents = kvmalloc_array(cmd->count, sizeof(*ents),
				      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!ents)
			return -ENOMEM;
	}
	if (esz == sizeof(*ents)) {
		if (copy_from_user(ents, uents, cmd->count * sizeof(*ents)))
			ret = -EFAULT;
	} else {
		for (i = 0; i < cmd->count && !ret; i++)
			ret = copy_struct_from_user(&ents[i], sizeof(*ents),
						    uents + (size_t)i * esz,
						    esz);
	}
	for (i = 0; i < cmd->count && !ret; i++)
		if (!ents[i].flags || (ents[i].flags & ~known) ||
		    ents[i].__reserved)
			ret = -EOPNOTSUPP;
	if (ret)
		goto out;

	for (i = 0; i < cmd->count; i++) {
		s32 err = -kqp_doorbell_one(ucmd->uctx, ents[i].qp,
					    ents[i].flags);
		struct kqp_doorbell_entry __user *u = uents + (size_t)i * esz;

		if (put_user(err, &u->out_errno)) {
			ret = -EFAULT;
			goto out;
		}
		if (i + 1 < cmd->count) {
			if (fatal_signal_pending(current)) {
				ret = -EINTR;
				goto out;
			}
			cond_resched();
		}
	}
	cmd->out_done = cmd->count;
	/* A poller that died meanwhile is not woken; what was asked is done. */
	if (cmd->flags & KQP_DOORBELL_WAKE_POLLER)
		kqp_poller_wake(ucmd->uctx);
	ret = kqp_ucmd_respond(ucmd, sizeof(*cmd));
out:
	if (ents != stack)
		kvfree(ents);
	return ret;
}
