// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Multicast memberships of UD ids.  A membership belongs to its id: its
 * handle is one of the id's, it moves with the id to another file, and
 * destroying the id (which leaves every group in rdma_cm) frees it.
 *
 * rdma_cm knows a membership by its address only, and leaves the newest
 * one of an address: an id may therefore hold one membership per group
 * (EADDRINUSE for another), or rdma_cm would leave one and kqp free the
 * other, under the events still coming for it.  An id holds at most
 * max_mcast memberships (ENOSPC).
 *
 * Joining does not attach a QP: the process does that when it learns the
 * group's GID from MULTICAST_JOIN (KQP_IOCTL_ATTACH_MCAST, below), as
 * librdmacm does it from rdma_get_cm_event().  A UD QP on an id is not
 * bound into the id (core.c), because rdma_cm refuses to join multicast
 * groups on an id with a QP.  The QP keeps the list of groups it is
 * attached to, because ib_core refuses to destroy a QP still attached.
 */
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_sa.h>

#include "kqp.h"
#include "cm.h"
#include "qp.h"

/* Does @ctx hold a membership of @addr (compared as rdma_cm compares)? */
static bool kqp_mcast_joined(struct kqp_cm_id *ctx,
			     const struct __kernel_sockaddr_storage *addr,
			     unsigned long *count)
{
	size_t len = rdma_addr_size_kss((struct __kernel_sockaddr_storage *)
					addr);
	struct kqp_mcast *mc;
	unsigned long index;
	bool found = false;

	lockdep_assert_held(&ctx->mutex);
	*count = 0;
	xa_for_each(&ctx->mc_ids, index, mc) {
		(*count)++;
		if (!memcmp(&mc->addr, addr, len))
			found = true;
	}
	return found;
}

int kqp_join_mcast_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_join_mcast *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	struct kqp_mcast *mc;
	unsigned long count;
	int ret;

	if (cmd->join_flags > 1)
		return -EINVAL;
	if (!rdma_addr_size_kss(&cmd->addr))
		return -EINVAL;

	ctx = kqp_cm_id_get(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	mutex_lock(&ctx->mutex);

	/*
	 * rdma_cm WARNs on an id that holds a QP (a kernel caller's) before
	 * it sees the id is not UD: refuse both first.
	 */
	if (ctx->cm_id->qp_type != IB_QPT_UD || ctx->cm_id->qp) {
		ret = -EINVAL;
		goto out_unlock;
	}
	if (kqp_mcast_joined(ctx, &cmd->addr, &count)) {
		ret = -EADDRINUSE;
		goto out_unlock;
	}
	if (count >= READ_ONCE(kqp_max_mcast)) {
		ret = -ENOSPC;
		goto out_unlock;
	}
	mc = kzalloc(sizeof(*mc), GFP_KERNEL_ACCOUNT);
	if (!mc) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	mc->ctx = ctx;
	mc->uid = cmd->uid;
	memcpy(&mc->addr, &cmd->addr, sizeof(mc->addr));
	ret = xa_alloc(&ctx->mc_ids, &mc->id, mc, xa_limit_32b, GFP_KERNEL_ACCOUNT);
	if (ret)
		goto err_free;

	ret = rdma_join_multicast(ctx->cm_id, (struct sockaddr *)&mc->addr,
				  cmd->join_flags ? BIT(SENDONLY_FULLMEMBER_JOIN) :
						    BIT(FULLMEMBER_JOIN), mc);
	if (ret)
		goto err_erase;

	cmd->out_mc_id = mc->id;
	ret = kqp_ucmd_respond_locked(ucmd, sizeof(*cmd));
	if (ret) {
		/* Nobody can name it; leave again. */
		rdma_leave_multicast(ctx->cm_id, (struct sockaddr *)&mc->addr);
		rdma_lock_handler(ctx->cm_id);
		kqp_events_purge_mcast(mc);
		rdma_unlock_handler(ctx->cm_id);
		goto err_erase;
	}
	mutex_unlock(&ctx->mutex);
	kqp_cm_id_put(ctx);
	return 0;

err_erase:
	xa_erase(&ctx->mc_ids, mc->id);
err_free:
	kfree(mc);
out_unlock:
	mutex_unlock(&ctx->mutex);
	kqp_cm_id_put(ctx);
	return ret;
}

int kqp_leave_mcast_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_leave_mcast *cmd = ucmd->cmd;
	struct kqp_cm_id *ctx;
	struct kqp_mcast *mc;
	int ret = 0;

	ctx = kqp_cm_id_get(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	mutex_lock(&ctx->mutex);
	mc = xa_erase(&ctx->mc_ids, cmd->mc_id);
	if (!mc) {
		ret = -ENOENT;
		goto out;
	}
	rdma_leave_multicast(ctx->cm_id, (struct sockaddr *)&mc->addr);
	/* A join completion already in the handler queues its event first. */
	rdma_lock_handler(ctx->cm_id);
	kqp_events_purge_mcast(mc);
	rdma_unlock_handler(ctx->cm_id);
	cmd->out_events_reported = mc->events_reported;
	kfree(mc);
out:
	mutex_unlock(&ctx->mutex);
	kqp_cm_id_put(ctx);
	/* With nothing held: the copy may wait. */
	return ret ? ret : kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/* The id's rdma_cm id is destroyed, and with it every membership. */
void kqp_mcast_free_all(struct kqp_cm_id *ctx)
{
	struct kqp_mcast *mc;
	unsigned long index;

	xa_for_each(&ctx->mc_ids, index, mc) {
		xa_erase(&ctx->mc_ids, index);
		kfree(mc);
	}
}

/*
 * Devices keep a group's members per device, and rxe's attach and detach
 * race each other across QPs: an attach can land in a group a detach on
 * another QP is tearing down, and then neither detach nor destroy can
 * undo it.  kqp's attaches and detaches take turns.  Those of ib_uverbs
 * and of kernel ULPs on the same device do not, and a uverbs user racing
 * a kqp QP's attach to the same group can still leave it undestroyable
 * (an rxe bug, reachable through uverbs alone): kqp_qp_hw_abandon().
 * A leaf lock: taken under hw_rwsem and a QP's mcast_mutex.
 */
static DEFINE_MUTEX(kqp_mcast_hw_mutex);

/**
 * struct kqp_qp_mcast - a multicast group a QP is attached to
 * @list: in qp->mcasts
 * @gid: the group's GID
 * @lid: the group's LID
 */
struct kqp_qp_mcast {
	struct list_head list;
	union ib_gid gid;
	u16 lid;
};

/* Detach a QP being destroyed from every group; hw_rwsem held to write. */
void kqp_qp_mcast_detach_all(struct kqp_qp *qp)
{
	struct kqp_qp_mcast *m, *tmp;

	/*
	 * hw_rwsem, held for writing, keeps this QP's attach and detach
	 * out; kqp_mcast_hw_mutex keeps other kqp QPs'.  Each group was
	 * attached once and checked to stay valid (see kqp_qp_mcast()), so
	 * detaching cannot be refused; if the device refuses anyway, the
	 * caller's destroy of the QP says so (kqp_qp_destroy_hw()).
	 */
	mutex_lock(&kqp_mcast_hw_mutex);
	list_for_each_entry_safe(m, tmp, &qp->mcasts, list) {
		ib_detach_mcast(qp->qp, &m->gid, m->lid);
		list_del(&m->list);
		kfree(m);
	}
	mutex_unlock(&kqp_mcast_hw_mutex);
	qp->nr_mcasts = 0;
}

/*
 * Would ib_core take @lid for a group on @dev whatever port and state the
 * QP is in?  It checks the LID against the QP's port once the QP has one
 * (any LID on Ethernet, a multicast LID on InfiniBand), and against every
 * port before that.  Detaching must pass the same check as attaching did,
 * so a LID is taken only if it passes every way.
 */
static bool kqp_mcast_lid_ok(struct ib_device *dev, u16 lid)
{
	u32 port;

	rdma_for_each_port(dev, port)
		if (rdma_port_get_link_layer(dev, port) ==
		    IB_LINK_LAYER_INFINIBAND)
			return lid >= be16_to_cpu(IB_MULTICAST_LID_BASE) &&
			       lid != be16_to_cpu(IB_LID_PERMISSIVE);
	return true;
}

/*
 * Attach a UD QP to a multicast group, or detach it, as ib_uverbs does:
 * attaching twice attaches once, detaching what is not attached is
 * EINVAL.  Unlike ib_uverbs, a group is the GID alone: the same GID with
 * another LID is EINVAL, since a device may ignore the LID (rxe does) and
 * count two attachments where it made one, which detaching would then
 * fail to undo and destroying the QP be refused for.  A QP is in at most
 * max_mcast groups (ENOSPC).
 */
static int kqp_qp_mcast(struct kqp_ucmd *ucmd, bool attach)
{
	struct kqp_mcast_attach *cmd = ucmd->cmd;
	struct kqp_qp_mcast *m, *found = NULL;
	union ib_gid gid;
	struct kqp_qp *qp;
	int ret = 0;

	memcpy(gid.raw, cmd->gid, sizeof(gid.raw));
	qp = kqp_qp_get_hw(ucmd->uctx, cmd->qp);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	if (qp->qp_type != IB_QPT_UD) {
		ret = -EINVAL;
		goto out;
	}
	mutex_lock(&qp->mcast_mutex);
	list_for_each_entry(m, &qp->mcasts, list) {
		if (!memcmp(&m->gid, &gid, sizeof(gid))) {
			found = m;
			break;
		}
	}
	if (found && found->lid != cmd->lid) {
		ret = -EINVAL;
		goto unlock;
	}
	if (!attach) {
		if (!found) {
			ret = -EINVAL;
			goto unlock;
		}
		mutex_lock(&kqp_mcast_hw_mutex);
		ret = ib_detach_mcast(qp->qp, &gid, cmd->lid);
		mutex_unlock(&kqp_mcast_hw_mutex);
		if (!ret) {
			list_del(&found->list);
			qp->nr_mcasts--;
			kfree(found);
		}
		goto unlock;
	}
	if (found)
		goto unlock;
	if (!kqp_mcast_lid_ok(qp->qp->device, cmd->lid)) {
		ret = -EINVAL;
		goto unlock;
	}
	if (qp->nr_mcasts >= READ_ONCE(kqp_max_mcast)) {
		ret = -ENOSPC;
		goto unlock;
	}
	m = kzalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);
	if (!m) {
		ret = -ENOMEM;
		goto unlock;
	}
	m->gid = gid;
	m->lid = cmd->lid;
	mutex_lock(&kqp_mcast_hw_mutex);
	ret = ib_attach_mcast(qp->qp, &gid, cmd->lid);
	mutex_unlock(&kqp_mcast_hw_mutex);
	if (ret) {
		kfree(m);
		goto unlock;
	}
	list_add_tail(&m->list, &qp->mcasts);
	qp->nr_mcasts++;
unlock:
	mutex_unlock(&qp->mcast_mutex);
out:
	kqp_vobj_put_hw(&qp->vobj);
	return ret;
}

int kqp_attach_mcast_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_qp_mcast(ucmd, true);
}

int kqp_detach_mcast_ioctl(struct kqp_ucmd *ucmd)
{
	return kqp_qp_mcast(ucmd, false);
}
