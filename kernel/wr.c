// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Work requests in, completions out: what the kernel posts for a process
 * (KQP_IOCTL_POST_SEND and _RECV, and the submission rings of ring.c) and
 * what it reports back in the CQ rings.
 *
 * The kernel posts every work request itself, so each one is checked
 * first.  A posted request takes a slot in its queue; the kernel's wr_id
 * names the QP (by handle) and the slot, and the slot holds the caller's
 * wr_id.  A completion retires its slot and every unsignaled one before
 * it.  Completions name their QP by handle, looked up under RCU, so one
 * that arrives for a QP already destroyed is recognised and dropped.
 */
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"
#include "cm.h"
#include "cq.h"
#include "pd.h"
#include "qp.h"
#include "srq.h"

#define KQP_WRID_RECV		BIT(31)
#define KQP_WRID_SLOT_MASK	(KQP_WRID_RECV - 1)

static u64 kqp_wrid(struct kqp_qp *qp, u32 slot, bool recv)
{
	return (u64)qp->vobj.obj.id << 32 | (recv ? KQP_WRID_RECV : 0) |
	       (slot & KQP_WRID_SLOT_MASK);
}

/*
 * A request's opcode goes to the device as it is, and the completion
 * opcodes and statuses a kernel ib_wc carries go to the ring as they are;
 * the uapi's names for them must therefore be ib_core's values.
 */
KQP_SAME_AS_IB(KQP_WR_OP_RDMA_WRITE, IB_WR_RDMA_WRITE);
KQP_SAME_AS_IB(KQP_WR_OP_RDMA_WRITE_WITH_IMM, IB_WR_RDMA_WRITE_WITH_IMM);
KQP_SAME_AS_IB(KQP_WR_OP_SEND, IB_WR_SEND);
KQP_SAME_AS_IB(KQP_WR_OP_SEND_WITH_IMM, IB_WR_SEND_WITH_IMM);
KQP_SAME_AS_IB(KQP_WR_OP_RDMA_READ, IB_WR_RDMA_READ);
KQP_SAME_AS_IB(KQP_WR_OP_ATOMIC_CMP_AND_SWP, IB_WR_ATOMIC_CMP_AND_SWP);
KQP_SAME_AS_IB(KQP_WR_OP_ATOMIC_FETCH_AND_ADD, IB_WR_ATOMIC_FETCH_AND_ADD);
KQP_SAME_AS_IB(KQP_WC_OP_SEND, IB_WC_SEND);
KQP_SAME_AS_IB(KQP_WC_OP_RDMA_WRITE, IB_WC_RDMA_WRITE);
KQP_SAME_AS_IB(KQP_WC_OP_RDMA_READ, IB_WC_RDMA_READ);
KQP_SAME_AS_IB(KQP_WC_OP_COMP_SWAP, IB_WC_COMP_SWAP);
KQP_SAME_AS_IB(KQP_WC_OP_FETCH_ADD, IB_WC_FETCH_ADD);
KQP_SAME_AS_IB(KQP_WC_OP_RECV, IB_WC_RECV);
KQP_SAME_AS_IB(KQP_WC_OP_RECV_RDMA_WITH_IMM, IB_WC_RECV_RDMA_WITH_IMM);
KQP_SAME_AS_IB(KQP_WC_SUCCESS, IB_WC_SUCCESS);
KQP_SAME_AS_IB(KQP_WC_LOC_LEN_ERR, IB_WC_LOC_LEN_ERR);
KQP_SAME_AS_IB(KQP_WC_LOC_QP_OP_ERR, IB_WC_LOC_QP_OP_ERR);
KQP_SAME_AS_IB(KQP_WC_LOC_EEC_OP_ERR, IB_WC_LOC_EEC_OP_ERR);
KQP_SAME_AS_IB(KQP_WC_LOC_PROT_ERR, IB_WC_LOC_PROT_ERR);
KQP_SAME_AS_IB(KQP_WC_WR_FLUSH_ERR, IB_WC_WR_FLUSH_ERR);
KQP_SAME_AS_IB(KQP_WC_MW_BIND_ERR, IB_WC_MW_BIND_ERR);
KQP_SAME_AS_IB(KQP_WC_BAD_RESP_ERR, IB_WC_BAD_RESP_ERR);
KQP_SAME_AS_IB(KQP_WC_LOC_ACCESS_ERR, IB_WC_LOC_ACCESS_ERR);
KQP_SAME_AS_IB(KQP_WC_REM_INV_REQ_ERR, IB_WC_REM_INV_REQ_ERR);
KQP_SAME_AS_IB(KQP_WC_REM_ACCESS_ERR, IB_WC_REM_ACCESS_ERR);
KQP_SAME_AS_IB(KQP_WC_REM_OP_ERR, IB_WC_REM_OP_ERR);
KQP_SAME_AS_IB(KQP_WC_RETRY_EXC_ERR, IB_WC_RETRY_EXC_ERR);
KQP_SAME_AS_IB(KQP_WC_RNR_RETRY_EXC_ERR, IB_WC_RNR_RETRY_EXC_ERR);
KQP_SAME_AS_IB(KQP_WC_LOC_RDD_VIOL_ERR, IB_WC_LOC_RDD_VIOL_ERR);
KQP_SAME_AS_IB(KQP_WC_REM_INV_RD_REQ_ERR, IB_WC_REM_INV_RD_REQ_ERR);
KQP_SAME_AS_IB(KQP_WC_REM_ABORT_ERR, IB_WC_REM_ABORT_ERR);
KQP_SAME_AS_IB(KQP_WC_INV_EECN_ERR, IB_WC_INV_EECN_ERR);
KQP_SAME_AS_IB(KQP_WC_INV_EEC_STATE_ERR, IB_WC_INV_EEC_STATE_ERR);
KQP_SAME_AS_IB(KQP_WC_FATAL_ERR, IB_WC_FATAL_ERR);
KQP_SAME_AS_IB(KQP_WC_RESP_TIMEOUT_ERR, IB_WC_RESP_TIMEOUT_ERR);
KQP_SAME_AS_IB(KQP_WC_GENERAL_ERR, IB_WC_GENERAL_ERR);

/* The completion opcode of a send request, for a completion in error. */
static u32 kqp_wc_opcode_of_wr(u32 opcode)
{
	switch (opcode) {
	case KQP_WR_OP_RDMA_WRITE:
	case KQP_WR_OP_RDMA_WRITE_WITH_IMM:
		return KQP_WC_OP_RDMA_WRITE;
	case KQP_WR_OP_RDMA_READ:
		return KQP_WC_OP_RDMA_READ;
	case KQP_WR_OP_ATOMIC_CMP_AND_SWP:
		return KQP_WC_OP_COMP_SWAP;
	case KQP_WR_OP_ATOMIC_FETCH_AND_ADD:
		return KQP_WC_OP_FETCH_ADD;
	default:
		return KQP_WC_OP_SEND;
	}
}

/* ib_wc_flags to enum kqp_wc_flags */
static u32 kqp_wc_flags(int flags)
{
	u32 out = 0;

	if (flags & IB_WC_GRH)
		out |= KQP_WC_FLAG_GRH;
	if (flags & IB_WC_WITH_IMM)
		out |= KQP_WC_FLAG_WITH_IMM;
	if (flags & IB_WC_IP_CSUM_OK)
		out |= KQP_WC_FLAG_IP_CSUM_OK;
	if (flags & IB_WC_WITH_INVALIDATE)
		out |= KQP_WC_FLAG_WITH_INV;
	return out;
}

/*
 * Fill @cqe from a kernel completion of the request the caller posted as
 * @wr_id; @err_opcode is the completion opcode of a request that failed.
 */
void kqp_wc_to_cqe(const struct ib_wc *wc, struct kqp_cqe *cqe, u64 wr_id,
		   u32 qp_num, u32 err_opcode)
{
	memset(cqe, 0, sizeof(*cqe));
	cqe->wr_id = wr_id;
	cqe->status = wc->status;
	cqe->opcode = wc->status == IB_WC_SUCCESS ? wc->opcode : err_opcode;
	cqe->vendor_err = wc->vendor_err;
	cqe->byte_len = wc->byte_len;
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE)
		cqe->imm_data = wc->ex.invalidate_rkey;
	else
		cqe->imm_data = (__force u32)wc->ex.imm_data;
	cqe->qp_num = qp_num;
	cqe->src_qp = wc->src_qp;
	cqe->wc_flags = kqp_wc_flags(wc->wc_flags);
	cqe->slid = wc->slid;
	cqe->pkey_index = wc->pkey_index;
	cqe->sl = wc->sl;
	cqe->dlid_path_bits = wc->dlid_path_bits;
}

/*
 * Retire @n sends, the oldest first, with qp->lock held.  On a QP with
 * rings, tell userspace how far (the ring's @retired: it may reuse that
 * much room), and when a signaled send retired while the kernel is
 * committed to drain the send ring (qp->sq_committed), have it drained:
 * whatever the process published without ringing is posted now, and the
 * settle that follows decides whether it must ring again (ring.c).
 */
static void kqp_qp_retire_sends(struct kqp_qp *qp, u32 n)
{
	struct kqp_wq *wq = &qp->sq;
	u32 sig = 0;

	for (; n; n--, wq->tail++)
		if (wq->slots[wq->tail & (wq->size - 1)].signaled)
			sig++;
	if (WARN_ON_ONCE(sig > qp->sq_sig_out))
		sig = qp->sq_sig_out;
	qp->sq_sig_out -= sig;
	if (!qp->sq_ring.nr)
		return;
	/*
	 * Pairs with the acquire load in kqp_wq_retired() (lib/ring.h): the
	 * slots below it are free, so the process may publish up to
	 * @entries past it and the kernel still has a slot for each.
	 */
	smp_store_release(&qp->sq_ring.hdr->retired, wq->tail);
	if (sig && qp->sq_committed)
		kqp_sq_retired(qp);
}

/*
 * Fill @cqe from a kernel completion; @report says whether it is to be
 * reported.  Runs in the CQ's poll (a softirq) or a flush, under the
 * CQ's lock.  The handle in the kernel's wr_id names a QP, or for a
 * receive posted to an SRQ, the SRQ.
 */
void kqp_qp_complete(struct kqp_ucontext *uctx, struct ib_wc *wc,
		     struct kqp_cqe *cqe, bool *report)
{
	u32 handle = wc->wr_id >> 32, slot_id = (u32)wc->wr_id;
	bool recv = slot_id & KQP_WRID_RECV;
	struct kqp_wr_slot *slot;
	struct kqp_object *obj;
	struct kqp_qp *qp;
	struct kqp_wq *wq;
	u32 idx, n;

	*report = false;
	rcu_read_lock();
	obj = xa_load(&uctx->objects, handle);
	if (obj && obj->type == KQP_OBJ_SRQ && recv) {
		kqp_srq_complete(container_of(obj, struct kqp_srq, vobj.obj),
				 wc, cqe, report);
		goto out;
	}
	if (!obj || obj->type != KQP_OBJ_QP)
		goto out;
	qp = container_of(obj, struct kqp_qp, vobj.obj);
	spin_lock(&qp->lock);
	wq = recv ? &qp->rq : &qp->sq;
	idx = slot_id & KQP_WRID_SLOT_MASK;
	/* Not outstanding: a stale completion; drop it. */
	if (!wq->slots || ((idx - wq->tail) & KQP_WRID_SLOT_MASK) >=
			  ((wq->head - wq->tail) & KQP_WRID_SLOT_MASK))
		goto unlock;
	slot = &wq->slots[idx & (wq->size - 1)];

	kqp_wc_to_cqe(wc, cqe, slot->wr_id, qp->qp_num,
		      recv ? KQP_WC_OP_RECV : kqp_wc_opcode_of_wr(slot->opcode));
	/* A placeholder for a ring entry the kernel refused (ring.c). */
	if (slot->err_status && wc->status != IB_WC_SUCCESS) {
		cqe->status = slot->err_status;
		cqe->vendor_err = 0;
	}

	/* Completions come in order: everything before it is done too. */
	n = ((idx - wq->tail) & KQP_WRID_SLOT_MASK) + 1;
	if (!recv) {
		kqp_qp_retire_sends(qp, n);
	} else {
		wq->tail += n;
		if (qp->rq_async)
			kqp_rq_retired(qp);
	}
	*report = true;
unlock:
	spin_unlock(&qp->lock);
out:
	rcu_read_unlock();
}

/* The caller's list of work requests, copied once. */
void *kqp_post_copy(struct kqp_post *cmd)
{
	void *buf;

	if (!cmd->count || !cmd->wrs_len || cmd->wrs_len > KQP_POST_MAX_BYTES)
		return ERR_PTR(-EINVAL);
	buf = kvmalloc(cmd->wrs_len, GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!buf)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(buf, u64_to_user_ptr(cmd->wrs), cmd->wrs_len)) {
		kvfree(buf);
		return ERR_PTR(-EFAULT);
	}
	return buf;
}

/*
 * Check an SGE list (already in kernel memory) against a PD (the QP's, or
 * the SRQ's) and convert it.  @access is what the device will do with the
 * memory.
 */
static int kqp_post_sges(struct kqp_pd *pd, const struct kqp_sge *usge,
			 u32 num, struct ib_sge *ksge, int access)
{
	u32 i;
	int ret;

	for (i = 0; i < num; i++) {
		ret = kqp_mr_check_sge(pd, usge[i].addr, usge[i].length,
				       usge[i].lkey, access);
		if (ret)
			return ret;
		ksge[i].addr = usge[i].addr;
		ksge[i].length = usge[i].length;
		ksge[i].lkey = usge[i].lkey;
	}
	return 0;
}

/*
 * The part of a send request that depends on the QP's type and the
 * opcode: a UD request's AH (a reference in *@ahp, which the caller puts
 * once the request was posted or failed), an atomic's or an RDMA
 * request's remote memory.
 */
static int kqp_build_send_remote(struct kqp_qp *qp, struct kqp_object **ahp,
				 const struct kqp_send_wr *hdr,
				 union kqp_kwr *kwr)
{
	bool inl = hdr->send_flags & KQP_SEND_FLAG_INLINE;
	struct ib_send_wr *wr = &kwr->send;

	if (qp->qp_type == IB_QPT_UD) {
		struct kqp_object *obj;
		struct kqp_ah *ah;

		/* A UD QP sends, with or without immediate data, and only. */
		if (wr->opcode != IB_WR_SEND &&
		    wr->opcode != IB_WR_SEND_WITH_IMM)
			return -EINVAL;
		if (hdr->wr.ud.__reserved)
			return -EOPNOTSUPP;
		obj = kqp_object_get(qp->uctx, hdr->wr.ud.ah, KQP_OBJ_AH);
		if (IS_ERR(obj))
			return PTR_ERR(obj) == -ENOENT ? -EINVAL : PTR_ERR(obj);
		*ahp = obj;
		ah = container_of(obj, struct kqp_ah, vobj.obj);
		if (ah->pd != qp->pd || ah->vobj.hw_gone)
			return -EINVAL;
		kwr->ud.ah = ah->ah;
		kwr->ud.remote_qpn = hdr->wr.ud.remote_qpn & 0xffffff;
		kwr->ud.remote_qkey = hdr->wr.ud.remote_qkey;
	} else if (wr->opcode == IB_WR_ATOMIC_CMP_AND_SWP ||
		   wr->opcode == IB_WR_ATOMIC_FETCH_AND_ADD) {
		if (hdr->wr.atomic.__reserved)
			return -EOPNOTSUPP;
		/* Atomics work on one 8-byte operand. */
		if (inl || hdr->num_sge != 1 ||
		    ((const struct kqp_sge *)(hdr + 1))->length != 8)
			return -EINVAL;
		kwr->atomic.remote_addr = hdr->wr.atomic.remote_addr;
		kwr->atomic.compare_add = hdr->wr.atomic.compare_add;
		kwr->atomic.swap = hdr->wr.atomic.swap;
		kwr->atomic.rkey = hdr->wr.atomic.rkey;
	} else if (wr->opcode != IB_WR_SEND &&
		   wr->opcode != IB_WR_SEND_WITH_IMM) {
		if (hdr->wr.rdma.__reserved)
			return -EOPNOTSUPP;
		if (inl && wr->opcode == IB_WR_RDMA_READ)
			return -EINVAL;
		kwr->rdma.remote_addr = hdr->wr.rdma.remote_addr;
		kwr->rdma.rkey = hdr->wr.rdma.rkey;
	}
	return 0;
}

/*
 * Build one send request from @p (in a kernel copy: a list's, or a ring
 * entry's), checking it against the QP's type and capabilities and the
 * caller's MRs.  @len is what is left of the copy; returns the request's
 * size in it, and its opcode in *@opcode.  A UD request's AH reference
 * goes to *@ah, which must be NULL, on failure too.  Inline data stays in
 * the copy, which must outlive the post.
 */
long kqp_build_send(struct kqp_qp *qp, struct kqp_object **ah,
		    const void *p, size_t len, union kqp_kwr *kwr,
		    struct ib_sge *ksge, u32 *opcode)
{
	const struct kqp_send_wr *hdr = p;
	const unsigned int allowed = KQP_SEND_FLAG_FENCE | KQP_SEND_FLAG_SIGNALED |
				     KQP_SEND_FLAG_SOLICITED | KQP_SEND_FLAG_INLINE;
	struct ib_send_wr *wr = &kwr->send;
	bool inl;
	size_t need;
	int access = 0, ret;

	/* Nothing of the request is read before it is known to be there. */
	if (len < sizeof(*hdr))
		return -EINVAL;
	if (hdr->__reserved)
		return -EOPNOTSUPP;
	if (hdr->send_flags & ~allowed)
		return -EINVAL;
	inl = hdr->send_flags & KQP_SEND_FLAG_INLINE;
	if (inl) {
		if (hdr->num_sge || hdr->inline_len > qp->cap.max_inline_data)
			return -EINVAL;
		need = kqp_send_wr_bytes(0, hdr->inline_len);
	} else {
		if (hdr->inline_len || hdr->num_sge > qp->cap.max_send_sge)
			return -EINVAL;
		need = kqp_send_wr_bytes(hdr->num_sge, 0);
	}
	if (need > len)
		return -EINVAL;

	memset(kwr, 0, sizeof(*kwr));
	switch (hdr->opcode) {
	case KQP_WR_OP_RDMA_READ:
	case KQP_WR_OP_ATOMIC_CMP_AND_SWP:
	case KQP_WR_OP_ATOMIC_FETCH_AND_ADD:
		/* The device writes what it reads into the local SGEs. */
		access = IB_ACCESS_LOCAL_WRITE;
		fallthrough;
	case KQP_WR_OP_RDMA_WRITE:
	case KQP_WR_OP_RDMA_WRITE_WITH_IMM:
	case KQP_WR_OP_SEND:
	case KQP_WR_OP_SEND_WITH_IMM:
		wr->opcode = hdr->opcode;
		break;
	default:
		return -EINVAL;
	}

	ret = kqp_build_send_remote(qp, ah, hdr, kwr);
	if (ret)
		return ret;

	/*
	 * The request itself is sound: a failure from here on is one of its
	 * SGEs (ring.c reports it as a protection error).
	 */
	*opcode = hdr->opcode;
	if (inl) {
		/*
		 * The device copies inline data when the request is posted;
		 * point it at the kernel's copy of the caller's bytes.
		 */
		if (hdr->inline_len) {
			ksge[0].addr = (uintptr_t)(hdr + 1);
			ksge[0].length = hdr->inline_len;
			wr->num_sge = 1;
		}
		wr->send_flags |= IB_SEND_INLINE;
	} else {
		ret = kqp_post_sges(qp->pd, (const struct kqp_sge *)(hdr + 1),
				    hdr->num_sge, ksge, access);
		if (ret)
			return ret;
		wr->num_sge = hdr->num_sge;
	}
	wr->sg_list = ksge;
	wr->ex.imm_data = (__force __be32)hdr->imm_data;
	if (hdr->send_flags & KQP_SEND_FLAG_FENCE)
		wr->send_flags |= IB_SEND_FENCE;
	if ((hdr->send_flags & KQP_SEND_FLAG_SIGNALED) || qp->sq_sig_all)
		wr->send_flags |= IB_SEND_SIGNALED;
	if (hdr->send_flags & KQP_SEND_FLAG_SOLICITED)
		wr->send_flags |= IB_SEND_SOLICITED;
	*opcode = hdr->opcode;
	return need;
}

/*
 * Build one receive request, for a QP or an SRQ with @max_sge SGEs per
 * request whose receives are checked against @pd; as kqp_build_send().
 */
long kqp_build_recv(struct kqp_pd *pd, u32 max_sge, const void *p,
		    size_t len, struct ib_recv_wr *wr, struct ib_sge *ksge)
{
	const struct kqp_recv_wr *hdr = p;
	int ret;

	/* Nothing of the request is read before it is known to be there. */
	if (len < sizeof(*hdr))
		return -EINVAL;
	/* As for sends and every other reserved field: the uapi's contract. */
	if (hdr->__reserved)
		return -EOPNOTSUPP;
	if (hdr->num_sge > max_sge || len < kqp_recv_wr_bytes(hdr->num_sge))
		return -EINVAL;
	memset(wr, 0, sizeof(*wr));
	ret = kqp_post_sges(pd, (const struct kqp_sge *)(hdr + 1),
			    hdr->num_sge, ksge, IB_ACCESS_LOCAL_WRITE);
	wr->sg_list = ksge;
	wr->num_sge = hdr->num_sge;
	if (ret)
		return ret;
	return kqp_recv_wr_bytes(hdr->num_sge);
}

/*
 * Give @n built requests slots and hand them to the device as one chain:
 * take the slots under qp->lock, then post without it (the device may
 * complete a request before ib_post_*() returns, and the CQ's poll
 * takes qp->lock).  The queue's mutex, held by the caller, keeps other
 * posters out, so slots the device did not take can be given back.
 * Returns how many requests the device took, the first of @kwrs first;
 * when that is fewer than @n, *@err says why the next one was not:
 * ENOMEM for a full queue, or the device's errno.  @err_status, if not
 * NULL, gives each request's placeholder status (struct kqp_wr_slot).
 * Signaled sends are counted in qp->sq_sig_out from when their slot is
 * taken until their completion retires it.
 */
u32 kqp_post_chain(struct kqp_qp *qp, bool recv, union kqp_kwr *kwrs,
		   const u64 *wr_ids, const u32 *opcodes, const u8 *err_status,
		   u32 n, int *err)
{
	struct kqp_wq *wq = recv ? &qp->rq : &qp->sq;
	const struct ib_send_wr *bad_send = NULL;
	const struct ib_recv_wr *bad_recv = NULL;
	struct kqp_wr_slot *slot;
	u32 first, m, i, posted;
	int ret;

	spin_lock_irq(&qp->lock);
	m = min(n, wq->size - (wq->head - wq->tail));
	first = wq->head;
	for (i = 0; i < m; i++) {
		slot = &wq->slots[(first + i) & (wq->size - 1)];
		slot->wr_id = wr_ids[i];
		slot->opcode = opcodes[i];
		slot->signaled = recv ||
				 (kwrs[i].send.send_flags & IB_SEND_SIGNALED);
		slot->err_status = err_status ? err_status[i] : 0;
		if (!recv && slot->signaled)
			qp->sq_sig_out++;
	}
	wq->head += m;
	spin_unlock_irq(&qp->lock);
	*err = m < n ? -ENOMEM : 0;
	if (!m)
		return 0;

	for (i = 0; i < m; i++) {
		if (recv) {
			kwrs[i].recv.wr_id = kqp_wrid(qp, first + i, true);
			kwrs[i].recv.next = i + 1 < m ? &kwrs[i + 1].recv : NULL;
		} else {
			kwrs[i].send.wr_id = kqp_wrid(qp, first + i, false);
			kwrs[i].send.next = i + 1 < m ? &kwrs[i + 1].send : NULL;
		}
	}
	if (recv)
		ret = ib_post_recv(qp->qp, &kwrs[0].recv, &bad_recv);
	else
		ret = ib_post_send(qp->qp, &kwrs[0].send, &bad_send);
	if (!ret)
		return m;

	/*
	 * The device took the requests before the one it names.  One that
	 * names none of ours is taken to have posted none: give the slots
	 * back all the same, as a single post always did.
	 */
	posted = 0;
	for (i = 0; i < m; i++) {
		if (recv ? bad_recv == &kwrs[i].recv : bad_send == &kwrs[i].send) {
			posted = i;
			break;
		}
	}
	spin_lock_irq(&qp->lock);
	/*
	 * Never below a slot already retired: a device that completed a
	 * request it said it did not take would otherwise leave the tail
	 * ahead of the head, and the room computed above would wrap.
	 */
	if (wq->tail - first > posted && wq->tail - first <= m)
		posted = wq->tail - first;
	/* The slots given back were never the device's: not outstanding. */
	for (i = posted; !recv && i < m; i++)
		if (wq->slots[(first + i) & (wq->size - 1)].signaled)
			qp->sq_sig_out--;
	wq->head = first + posted;
	spin_unlock_irq(&qp->lock);
	*err = ret;
	return posted;
}

/* Post one built request: a chain of one. */
static int kqp_post_one(struct kqp_qp *qp, bool recv, union kqp_kwr *kwr,
			u64 wr_id, u32 opcode)
{
	int err;

	kqp_post_chain(qp, recv, kwr, &wr_id, &opcode, NULL, 1, &err);
	return err;
}

/*
 * Post one request at a time: build it, give it a slot, hand it to the
 * device.  The first request that fails stops the list; none after it is
 * posted, and out_posted says which it was.
 */
static int kqp_post(struct kqp_ucmd *ucmd, bool recv)
{
	struct kqp_post *cmd = ucmd->cmd;
	struct kqp_object *ah = NULL;
	struct ib_sge *ksge;
	union kqp_kwr *kwr;
	struct kqp_qp *qp;
	size_t off = 0;
	void *buf;
	u32 i = 0, max_sge;
	int ret = 0;

	buf = kqp_post_copy(cmd);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	qp = kqp_qp_get_hw(ucmd->uctx, cmd->qp);
	if (IS_ERR(qp)) {
		kvfree(buf);
		return PTR_ERR(qp);
	}
	/* Its receives come from its SRQ: KQP_IOCTL_POST_SRQ_RECV. */
	if (recv && qp->srq) {
		ret = -EINVAL;
		goto out;
	}
	max_sge = max(recv ? qp->cap.max_recv_sge : qp->cap.max_send_sge, 1U);
	kwr = kmalloc(sizeof(*kwr) + max_sge * sizeof(*ksge),
		      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!kwr) {
		ret = -ENOMEM;
		goto out;
	}
	ksge = (struct ib_sge *)(kwr + 1);

	mutex_lock(recv ? &qp->rq_mutex : &qp->sq_mutex);
	for (i = 0; i < cmd->count; i++) {
		u32 opcode = 0;
		long used;

		if (recv) {
			used = kqp_build_recv(qp->pd, qp->cap.max_recv_sge,
					      buf + off, cmd->wrs_len - off,
					      &kwr->recv, ksge);
		} else {
			used = kqp_build_send(qp, &ah, buf + off,
					      cmd->wrs_len - off, kwr, ksge,
					      &opcode);
		}
		if (used < 0) {
			ret = used;
			goto put_ah;
		}

		ret = kqp_post_one(qp, recv, kwr, *(const u64 *)(buf + off),
				   opcode);
put_ah:
		if (ah) {
			kqp_object_put(ah);
			ah = NULL;
		}
		if (ret)
			break;
		off += used;
	}
	mutex_unlock(recv ? &qp->rq_mutex : &qp->sq_mutex);
	kfree(kwr);
out:
	kqp_vobj_put_hw(&qp->vobj);
	kvfree(buf);
	cmd->out_posted = i;
	/* The posted count is part of the answer, failure or not. */
	if (kqp_ucmd_respond(ucmd, sizeof(*cmd)))
		return -EFAULT;
	return ret;
}

int kqp_post_send_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_post(ucmd, false);
}

int kqp_post_recv_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_post(ucmd, true);
}
