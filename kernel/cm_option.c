// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * SET_OPTION: an id's options, as ucma's RDMA_OPTION_ID and RDMA_OPTION_IB.
 *
 * The ACK timeout is the IBTA's 5-bit field.  rdma_cm takes any u8, makes
 * a RoCE route's packet lifetime of it, and ib_cm then shifts by it
 * (1 << 70: UBSAN in cm_convert_to_ms(), found by the fuzzer); ucma passes
 * it on unchecked too.
 *
 * KQP_OPTION_IB_PATH is a route the caller resolved itself (rsockets'
 * RDMA_ROUTE, ibacm): its records are read one at a time, at most
 * KQP_OPTION_IB_PATH_MAX of them, so that no length the caller gives
 * sizes an allocation.  rdma_cm checks the path's state change; what the
 * record says (its GIDs, its rate) is the caller's to say, as with ucma,
 * and a GID the port does not have fails the connect, not here.  Except
 * what the kernel would misuse, which ucma passes on:
 *  - a packet lifetime past 31, which ib_cm shifts by as it does the ACK
 *    timeout (the same UBSAN);
 *  - an MTU that is none of IB's five;
 *  - a second route: rdma_set_ib_path() overwrites route.path_rec, which
 *    an IB route query that failed leaves allocated (a leak per call).
 */
#include <linux/uaccess.h>
#include <rdma/ib_sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/rdma_cm_ib.h>

#include "kqp.h"
#include "cm.h"

#define KQP_IB_PATH_FLAGS (IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL)

/* The first primary, bidirectional record at @uval, in *@rec. */
static int kqp_ib_path_from_user(struct sa_path_rec *rec,
				 const void __user *uval, u32 optlen)
{
	struct ib_path_rec_data data;
	u32 i;

	if (!optlen || optlen % sizeof(data) ||
	    optlen / sizeof(data) > KQP_OPTION_IB_PATH_MAX)
		return -EINVAL;
	for (i = 0; i < optlen / sizeof(data); i++) {
		if (copy_from_user(&data, uval + i * sizeof(data),
				   sizeof(data)))
			return -EFAULT;
		if (data.flags != KQP_IB_PATH_FLAGS)
			continue;
		memset(rec, 0, sizeof(*rec));
		rec->rec_type = SA_PATH_REC_TYPE_IB;
		ib_sa_unpack_path(data.path_rec, rec);
		if (rec->packet_life_time > 31 || rec->mtu < IB_MTU_256 ||
		    rec->mtu > IB_MTU_4096)
			return -EINVAL;
		return 0;
	}
	return -EINVAL;
}

static int kqp_set_ib_path(struct kqp_ucmd *ucmd, u32 id,
			   const void __user *uval, u32 optlen)
{
	struct sa_path_rec rec, opa;
	struct kqp_cm_id *ctx;
	int ret;

	ret = kqp_ib_path_from_user(&rec, uval, optlen);
	if (ret)
		return ret;
	ctx = kqp_cm_id_lock(ucmd, id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	ret = -EINVAL;
	/*
	 * Pairs with the release in __kqp_cm_event_handler(): the id's
	 * device is known (see kqp_resolve_route_ioctl()).
	 */
	if (!smp_load_acquire(&ctx->addr_resolved) ||
	    ctx->cm_id->route.path_rec)
		goto out;
	if (rdma_cap_opa_ah(ctx->cm_id->device, ctx->cm_id->port_num)) {
		sa_convert_path_ib_to_opa(&opa, &rec);
		rec = opa;
	}
	ret = rdma_set_ib_path(ctx->cm_id, &rec);
	if (!ret)
		kqp_cm_id_report(ctx, RDMA_CM_EVENT_ROUTE_RESOLVED);
out:
	kqp_cm_id_unlock(ctx);
	return ret;
}

int kqp_set_option_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_set_option *cmd = ucmd->cmd;
	void __user *uval = u64_to_user_ptr(cmd->optval);
	struct kqp_cm_id *ctx;
	u32 want;
	int ret, ival = 0;
	u8 bval = 0;

	if (cmd->level == KQP_OPTION_IB) {
		if (cmd->optname != KQP_OPTION_IB_PATH)
			return -ENOSYS;
		return kqp_set_ib_path(ucmd, cmd->id, uval, cmd->optlen);
	}
	if (cmd->level != KQP_OPTION_ID)
		return -ENOSYS;
	switch (cmd->optname) {
	case KQP_OPTION_ID_TOS:
	case KQP_OPTION_ID_ACK_TIMEOUT:
		want = sizeof(u8);
		break;
	case KQP_OPTION_ID_REUSEADDR:
	case KQP_OPTION_ID_AFONLY:
		want = sizeof(int);
		break;
	default:
		return -ENOSYS;
	}
	if (cmd->optlen != want)
		return -EINVAL;
	if (want == sizeof(u8) ? copy_from_user(&bval, uval, 1) :
				 copy_from_user(&ival, uval, sizeof(ival)))
		return -EFAULT;

	ctx = kqp_cm_id_lock(ucmd, cmd->id);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	switch (cmd->optname) {
	case KQP_OPTION_ID_TOS:
		rdma_set_service_type(ctx->cm_id, bval);
		ret = 0;
		break;
	case KQP_OPTION_ID_ACK_TIMEOUT:
		ret = bval > 31 ? -EINVAL : rdma_set_ack_timeout(ctx->cm_id, bval);
		break;
	case KQP_OPTION_ID_REUSEADDR:
		ret = rdma_set_reuseaddr(ctx->cm_id, ival ? 1 : 0);
		break;
	default:
		ret = rdma_set_afonly(ctx->cm_id, ival ? 1 : 0);
		break;
	}
	kqp_cm_id_unlock(ctx);
	return ret;
}
