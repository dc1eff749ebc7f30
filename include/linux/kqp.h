/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * kqp's in-kernel API: rdma_create_qp(3)'s semantics for kernel ULPs.
 *
 * The kernel's own rdma_create_qp() wants a PD and both CQs.  kqp_create_qp()
 * gives what librdmacm gives a process: a NULL PD means the device's default
 * PD, a missing CQ is allocated, the capabilities the device granted are
 * written back, an id has one QP, and a call that cannot be honoured fails
 * with a negative errno and changes nothing.  The character device's QPs go
 * through the same code, so both kinds of caller get one set of rules.
 *
 * Every export is GPL-only and in the symbol namespace KQP: a module using
 * them says MODULE_IMPORT_KQP().
 *
 * Device removal: rdma_cm reports RDMA_CM_EVENT_DEVICE_REMOVAL as usual.
 * The ULP calls kqp_destroy_qp() on each id of the device (from the event
 * handler, before returning non-zero, or before rdma_destroy_id()) and puts
 * every default PD reference it took; the default PD goes with the last.
 */
#ifndef _LINUX_KQP_H
#define _LINUX_KQP_H

#include <linux/module.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

/**
 * MODULE_IMPORT_KQP() - declare that a module uses kqp's exports
 *
 * kqp exports into the namespace KQP.  MODULE_IMPORT_NS() took a bare name
 * before Linux 6.13 and takes a string literal since; both record the
 * string "KQP", which is what this records, on either side of the change.
 */
#define MODULE_IMPORT_KQP() MODULE_INFO(import_ns, "KQP")

/**
 * kqp_create_qp() - create a QP on an rdma_cm id, with rdma_create_qp(3)'s
 *	defaults
 * @id: a kernel rdma_cm id bound to a device (after rdma_bind_addr() to a
 *	device's address, address resolution, or in a CONNECT_REQUEST)
 * @pd: a PD of @id's device, or NULL for the device's default PD, which
 *	kqp shares between all kernel callers and frees with its last user
 * @attr: as for rdma_create_qp(); @attr->qp_type must be @id's.  A NULL
 *	@attr->send_cq or @attr->recv_cq is allocated with ib_alloc_cq()
 *	(IB_POLL_SOFTIRQ, so work requests carry a &struct ib_cqe in wr_cqe,
 *	whose done() runs in softirq context), with as many entries as
 *	@attr->cap asks for on that queue.  On success both are written back,
 *	as are the capabilities the device granted, except that a queue
 *	deeper than the CQ allocated for it is written back as deep as the
 *	CQ.
 *
 * Like rdma_create_qp(), the QP is ready for receives when this returns,
 * and rdma_cm moves a connected one to RTS.  CQs passed in @attr stay the
 * caller's: kqp never frees them.
 *
 * Context: process context; may sleep.  Allowed in an rdma_cm event
 * handler, as for a CONNECT_REQUEST.
 * Return: 0, or -EINVAL when @id is not bound to a device, already has a
 * QP, or @pd or a CQ is of another device (nothing changed then), -ENODEV
 * when the device is going away, or the errno of the allocation that
 * failed, with nothing allocated left behind.
 */
int kqp_create_qp(struct rdma_cm_id *id, struct ib_pd *pd,
		  struct ib_qp_init_attr *attr);

/**
 * kqp_destroy_qp() - destroy the QP kqp_create_qp() made on an id
 * @id: the id
 *
 * Destroys the QP, then frees the CQs kqp allocated for it and drops its
 * reference to the default PD, if it used that.  A caller's own PD and
 * CQs are left alone.  Call it before rdma_destroy_id(), and, on
 * RDMA_CM_EVENT_DEVICE_REMOVAL, from the event handler or before the id
 * is destroyed.  An id without such a QP is left alone.
 *
 * Context: process context; may sleep.  Allowed in an rdma_cm event
 * handler.
 */
void kqp_destroy_qp(struct rdma_cm_id *id);

/**
 * kqp_qp_cqs() - the CQs kqp allocated for an id's QP
 * @id: an id with a QP from kqp_create_qp()
 * @send_cq: set to the send CQ if kqp allocated it, else NULL; may be NULL
 * @recv_cq: set to the receive CQ if kqp allocated it, else NULL; may be
 *	NULL
 *
 * The QP's CQs are also @id->qp->send_cq and @id->qp->recv_cq; this tells
 * which of them kqp owns.  They stay valid until kqp_destroy_qp().
 *
 * Return: 0, or -ENOENT if @id has no QP from kqp_create_qp().
 */
int kqp_qp_cqs(struct rdma_cm_id *id, struct ib_cq **send_cq,
	       struct ib_cq **recv_cq);

/**
 * kqp_get_default_pd() - a reference to a device's default PD
 * @dev: an RDMA device
 *
 * The PD kqp_create_qp() uses for a NULL @pd, created on first use.  It is
 * a kernel PD without IB_PD_UNSAFE_GLOBAL_RKEY: its local_dma_lkey serves
 * local access, and remote access needs an MR (ib_alloc_mr() and
 * IB_WR_REG_MR).  Hand it back with kqp_put_default_pd(), at the latest
 * while the device is being removed (in the ib_client's remove callback,
 * or on RDMA_CM_EVENT_DEVICE_REMOVAL).
 *
 * Context: process context; may sleep.
 * Return: the PD, or ERR_PTR(-ENODEV) when kqp does not know @dev or it is
 * going away, or the errno of the failed allocation.
 */
struct ib_pd *kqp_get_default_pd(struct ib_device *dev);

/**
 * kqp_put_default_pd() - drop a reference kqp_get_default_pd() gave
 * @pd: the PD
 *
 * The PD is freed when neither a reference nor a QP uses it any more.
 *
 * Context: process context; may sleep.
 */
void kqp_put_default_pd(struct ib_pd *pd);

/**
 * struct kqp_kernel_counts - what kqp holds for kernel callers
 * @default_pds: default PDs in existence, at most one per device
 * @default_pd_refs: their users: one per QP created with a NULL PD, one
 *	per kqp_get_default_pd() not yet put
 * @cqs: CQs kqp_create_qp() allocated that kqp_destroy_qp() has not freed
 * @qps: QPs kqp_create_qp() created that kqp_destroy_qp() has not
 *	destroyed
 *
 * /sys/kernel/debug/kqp/kernel shows the same numbers.
 */
struct kqp_kernel_counts {
	u32 default_pds;
	u32 default_pd_refs;
	u32 cqs;
	u32 qps;
};

/**
 * kqp_get_kernel_counts() - what kqp holds for kernel callers, summed over
 *	every device and caller
 * @counts: filled in
 *
 * For tests and diagnostics: the numbers may change as soon as this
 * returns.
 */
void kqp_get_kernel_counts(struct kqp_kernel_counts *counts);

#endif /* _LINUX_KQP_H */
