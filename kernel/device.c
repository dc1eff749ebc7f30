// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RDMA devices as kqp sees them: an ib_client keeps a table of every
 * ib_device, indexed by the device's own index, and KQP_IOCTL_QUERY reports
 * it.
 */
#include <linux/rwsem.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include "kqp.h"

/*
 * kqp_devices maps ib_device->index to struct kqp_device.  The rwsem, not
 * the xarray's own lock, is what keeps a kqp_device (and its ibdev) alive:
 * readers hold it across their use of ->ibdev, and the ib_client callbacks
 * take it for writing.
 */
static DEFINE_XARRAY(kqp_devices);
static DECLARE_RWSEM(kqp_devices_rwsem);

static struct ib_client kqp_ib_client;

static int kqp_ib_add(struct ib_device *ibdev)
{
	struct kqp_device *kdev;
	int ret;

	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev)
		return -ENOMEM;
	kdev->ibdev = ibdev;

	down_write(&kqp_devices_rwsem);
	ret = xa_insert(&kqp_devices, ibdev->index, kdev, GFP_KERNEL);
	up_write(&kqp_devices_rwsem);
	if (ret) {
		kfree(kdev);
		return ret;
	}
	ib_set_client_data(ibdev, &kqp_ib_client, kdev);
	ibdev_dbg(ibdev, "kqp: device added\n");
	return 0;
}

static void kqp_ib_remove(struct ib_device *ibdev, void *client_data)
{
	struct kqp_device *kdev = client_data;

	down_write(&kqp_devices_rwsem);
	xa_erase(&kqp_devices, ibdev->index);
	up_write(&kqp_devices_rwsem);
	ibdev_dbg(ibdev, "kqp: device removed\n");
	kfree(kdev);
}

static struct ib_client kqp_ib_client = {
	.name = KQP_MODNAME,
	.add = kqp_ib_add,
	.remove = kqp_ib_remove,
};

static void kqp_device_fill_info(struct kqp_device *kdev,
				 struct kqp_device_info *info)
{
	struct ib_device *ibdev = kdev->ibdev;

	info->index = ibdev->index;
	info->node_type = ibdev->node_type;
	info->node_guid = (__force u64)ibdev->node_guid;
	info->phys_port_cnt = rdma_end_port(ibdev);
	strscpy(info->name, dev_name(&ibdev->dev), sizeof(info->name));
	info->max_qp_rd_atom = ibdev->attrs.max_qp_rd_atom;
	info->max_qp_init_rd_atom = ibdev->attrs.max_qp_init_rd_atom;
}

int kqp_query(struct kqp_ucmd *ucmd)
{
	struct kqp_query *cmd = ucmd->cmd;
	struct kqp_device_info *infos = NULL;
	u8 __user *udst = u64_to_user_ptr(cmd->devices);
	struct kqp_device *kdev;
	unsigned long index;
	u32 total = 0, n = 0, i;
	size_t len;
	int ret;

	if (cmd->__reserved)
		return -EOPNOTSUPP;
	if (cmd->num_devices &&
	    cmd->device_info_size < offsetofend(struct kqp_device_info, name))
		return -EINVAL;

	/*
	 * Snapshot under the rwsem and copy out after dropping it, so that no
	 * user page fault is taken while device add/remove is excluded.
	 */
	down_read(&kqp_devices_rwsem);
	xa_for_each(&kqp_devices, index, kdev)
		total++;
	n = min(total, cmd->num_devices);
	if (n) {
		infos = kcalloc(n, sizeof(*infos), GFP_KERNEL);
		if (!infos) {
			up_read(&kqp_devices_rwsem);
			return -ENOMEM;
		}
		i = 0;
		xa_for_each(&kqp_devices, index, kdev) {
			if (i == n)
				break;
			kqp_device_fill_info(kdev, &infos[i++]);
		}
	}
	up_read(&kqp_devices_rwsem);

	len = min_t(size_t, cmd->device_info_size, sizeof(*infos));
	for (i = 0; i < n; i++) {
		if (copy_to_user(udst + (size_t)i * cmd->device_info_size,
				 &infos[i], len)) {
			ret = -EFAULT;
			goto out;
		}
	}

	cmd->out_abi_version = KQP_ABI_VERSION;
	cmd->out_features = 0;
	cmd->num_devices = total;
	ret = kqp_ucmd_respond(ucmd, sizeof(*cmd));
out:
	kfree(infos);
	return ret;
}

int kqp_device_init(void)
{
	return ib_register_client(&kqp_ib_client);
}

void kqp_device_exit(void)
{
	ib_unregister_client(&kqp_ib_client);
	WARN_ON(!xa_empty(&kqp_devices));
}
