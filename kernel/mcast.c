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
 * group's GID from MULTICAST_JOIN (KQP_IOCTL_ATTACH_MCAST, qp.c), as
 * librdmacm does it from rdma_get_cm_event().
 */
#include <linux/slab.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_sa.h>

#include "kqp.h"
#include "cm.h"

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

	if (cmd->__reserved)
		return -EOPNOTSUPP;
	if (cmd->join_flags > 1)
		return -EINVAL;
	if (!rdma_addr_size_kss(&cmd->addr))
		return -EINVAL;

	ctx = kqp_cm_id_get(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	mutex_lock(&ctx->mutex);

	/*
	 * rdma_cm WARNs on an id that holds a QP (an RC id's is rdma_cm's)
	 * before it sees the id is not UD: refuse both first.
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

	if (cmd->__reserved)
		return -EOPNOTSUPP;
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
