// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Address handles for UD sends, and the conversion of the ABI's address
 * attributes into the kernel's.
 */
#include <linux/slab.h>

#include "kqp.h"
#include "account.h"
#include "pd.h"

/*
 * A caller's address attributes as rdma_ah_attr; the port must exist and,
 * on Ethernet, a GRH is required (the peer is found by its GID).
 */
int kqp_ah_attr_from_user(struct ib_device *ibdev,
			  const struct kqp_ah_attr *src,
			  struct rdma_ah_attr *dst)
{
	union ib_gid dgid;

	if (src->__reserved[0] || src->__reserved[1])
		return -EOPNOTSUPP;
	if (!rdma_is_port_valid(ibdev, src->port_num))
		return -EINVAL;
	memset(dst, 0, sizeof(*dst));
	dst->type = rdma_ah_find_type(ibdev, src->port_num);
	rdma_ah_set_dlid(dst, src->dlid);
	rdma_ah_set_sl(dst, src->sl);
	rdma_ah_set_path_bits(dst, src->src_path_bits);
	rdma_ah_set_static_rate(dst, src->static_rate);
	rdma_ah_set_port_num(dst, src->port_num);
	if (src->is_global) {
		memcpy(dgid.raw, src->dgid, sizeof(dgid.raw));
		rdma_ah_set_grh(dst, &dgid, src->flow_label, src->sgid_index,
				src->hop_limit, src->traffic_class);
	} else if (dst->type == RDMA_AH_ATTR_TYPE_ROCE) {
		return -EINVAL;
	}
	return 0;
}

void kqp_ah_attr_to_user(struct ib_device *ibdev, struct kqp_ah_attr *dst,
			 struct rdma_ah_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->dlid = rdma_ah_get_dlid(src);
	dst->sl = rdma_ah_get_sl(src);
	dst->src_path_bits = rdma_ah_get_path_bits(src);
	dst->static_rate = rdma_ah_get_static_rate(src);
	dst->port_num = rdma_ah_get_port_num(src);
	if (rdma_ah_get_ah_flags(src) & IB_AH_GRH) {
		const struct ib_global_route *grh = rdma_ah_read_grh(src);

		dst->is_global = 1;
		memcpy(dst->dgid, grh->dgid.raw, sizeof(dst->dgid));
		dst->flow_label = grh->flow_label;
		dst->sgid_index = grh->sgid_index;
		dst->hop_limit = grh->hop_limit;
		dst->traffic_class = grh->traffic_class;
	}
}

static void kqp_ah_destroy_hw(struct kqp_vobj *vobj)
{
	struct kqp_ah *ah = container_of(vobj, struct kqp_ah, vobj);

	rdma_destroy_ah(ah->ah, RDMA_DESTROY_AH_SLEEPABLE);
	ah->ah = NULL;
}

void kqp_ah_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj)
{
	struct kqp_ah *ah = container_of(obj, struct kqp_ah, vobj.obj);
	struct kqp_device *kdev = ah->vobj.kdev;

	kqp_object_drain(obj);
	kqp_vobj_destroy_hw(&ah->vobj);
	kqp_pd_put_user(ah->pd);
	kqp_object_release_id(uctx, obj);
	kqp_device_put(kdev);
	kfree_rcu(ah, vobj.obj.rcu);
}

int kqp_create_ah_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_create_ah *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	struct rdma_ah_attr attr;
	struct kqp_device *kdev;
	struct kqp_pd *pd;
	struct kqp_ah *ah;
	struct ib_ah *ibah;
	int ret;

	pd = kqp_pd_take(uctx, cmd->pd);
	if (IS_ERR(pd))
		return PTR_ERR(pd);
	kdev = pd->vobj.kdev;

	ah = kzalloc(sizeof(*ah), GFP_KERNEL_ACCOUNT);
	if (!ah) {
		ret = -ENOMEM;
		goto err_pd;
	}
	ah->pd = pd;

	down_read(&kdev->hw_rwsem);
	if (pd->vobj.hw_gone) {
		ret = -ENXIO;
		goto err_unlock;
	}
	ret = kqp_ah_attr_from_user(kdev->ibdev, &cmd->attr, &attr);
	if (ret)
		goto err_unlock;
	ret = kqp_vobj_begin(uctx, &ah->vobj, KQP_OBJ_AH, kdev, 0);
	if (ret)
		goto err_unlock;
	/* The user variant resolves a RoCE peer's MAC address from its GID. */
	ibah = rdma_create_user_ah(pd->pd, &attr, NULL);
	if (IS_ERR(ibah)) {
		ret = PTR_ERR(ibah);
		kqp_vobj_cancel(uctx, &ah->vobj);
		goto err_unlock;
	}
	ah->ah = ibah;
	kqp_vobj_made(&ah->vobj, kdev, kqp_ah_destroy_hw);
	up_read(&kdev->hw_rwsem);

	cmd->out_ah = ah->vobj.obj.id;
	return kqp_object_commit(ucmd, &ah->vobj.obj, sizeof(*cmd));

err_unlock:
	up_read(&kdev->hw_rwsem);
	kfree(ah);
err_pd:
	kqp_pd_put_user(pd);
	return ret;
}

int kqp_destroy_ah_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_destroy_ah *cmd = ucmd->cmd;

	return kqp_object_destroy_id(ucmd->uctx, cmd->ah, KQP_OBJ_AH);
}
