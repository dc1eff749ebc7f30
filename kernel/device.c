// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * RDMA devices as kqp sees them: an ib_client keeps a table of every
 * ib_device, indexed by the device's own index, and KQP_IOCTL_QUERY reports
 * it.  A process sees, and can use, only the devices its network
 * namespace may use (rdma_dev_access_netns(): all of them in the default
 * shared mode, its own after `rdma system set netns exclusive`), as
 * uverbs lets it open only those.
 */
#include <linux/nsproxy.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/xarray.h>

#include <rdma/ib_cache.h>

#include "kqp.h"
#include "cq.h"
#include "pd.h"
#include "qp.h"
#include "qp_cache.h"
#include "srq.h"

/*
 * kqp_devices maps ib_device->index to struct kqp_device.  The rwsem, not
 * the xarray's own lock, is what keeps a kqp_device (and its ibdev) alive:
 * readers hold it across their use of ->ibdev, and the ib_client callbacks
 * take it for writing.
 */
static DEFINE_XARRAY(kqp_devices);
static DECLARE_RWSEM(kqp_devices_rwsem);

static struct ib_client kqp_ib_client;

static void kqp_device_free(struct kref *ref)
{
	struct kqp_device *kdev = container_of(ref, struct kqp_device, ref);

	kqp_qpc_free(kdev);
	kfree(kdev);
}

void kqp_device_put(struct kqp_device *kdev)
{
	kref_put(&kdev->ref, kqp_device_free);
}

/* The device with this index, referenced, or NULL. */
static struct kqp_device *kqp_device_get(u32 index)
{
	struct kqp_device *kdev;

	down_read(&kqp_devices_rwsem);
	kdev = xa_load(&kqp_devices, index);
	if (kdev)
		kref_get(&kdev->ref);
	up_read(&kqp_devices_rwsem);
	return kdev;
}

/* May the calling process use @ibdev?  With kqp_devices_rwsem held. */
static bool kqp_device_visible(struct ib_device *ibdev)
{
	return rdma_dev_access_netns(ibdev, current->nsproxy->net_ns);
}

/*
 * The device with this index, referenced, for a command of the calling
 * process: NULL if there is none, or none its network namespace may use.
 */
struct kqp_device *kqp_device_get_user(u32 index)
{
	struct kqp_device *kdev;

	down_read(&kqp_devices_rwsem);
	kdev = xa_load(&kqp_devices, index);
	if (kdev && kqp_device_visible(kdev->ibdev))
		kref_get(&kdev->ref);
	else
		kdev = NULL;
	up_read(&kqp_devices_rwsem);
	return kdev;
}

struct kqp_device *kqp_device_of(struct ib_device *ibdev)
{
	return kqp_device_get(ibdev->index);
}

/* Call @fn on every device, with kqp_devices_rwsem held for reading. */
void kqp_device_for_each(void (*fn)(struct kqp_device *kdev, void *arg),
			 void *arg)
{
	struct kqp_device *kdev;
	unsigned long index;

	down_read(&kqp_devices_rwsem);
	xa_for_each(&kqp_devices, index, kdev)
		fn(kdev, arg);
	up_read(&kqp_devices_rwsem);
}

static void kqp_device_event(struct ib_event_handler *handler,
			     struct ib_event *event)
{
	kqp_async_device_event(event);
}

static int kqp_ib_add(struct ib_device *ibdev)
{
	struct kqp_device *kdev;
	int ret;

	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev)
		return -ENOMEM;
	kdev->ibdev = ibdev;
	kdev->index = ibdev->index;
	kref_init(&kdev->ref);
	init_rwsem(&kdev->hw_rwsem);
	spin_lock_init(&kdev->objects_lock);
	INIT_LIST_HEAD(&kdev->objects);
	ret = kqp_qpc_init(kdev);
	if (ret) {
		kfree(kdev);
		return ret;
	}

	down_write(&kqp_devices_rwsem);
	ret = xa_insert(&kqp_devices, ibdev->index, kdev, GFP_KERNEL);
	up_write(&kqp_devices_rwsem);
	if (ret) {
		kqp_device_put(kdev);
		return ret;
	}
	ib_set_client_data(ibdev, &kqp_ib_client, kdev);
	INIT_IB_EVENT_HANDLER(&kdev->event_handler, ibdev, kqp_device_event);
	ib_register_event_handler(&kdev->event_handler);
	ibdev_dbg(ibdev, "kqp: device added\n");
	return 0;
}

/*
 * The device is going.  ib_core removes clients in the reverse order of
 * registration, so this runs before rdma_cm's removal: the ids are still
 * alive, and their handlers may still move their QPs (kqp_qp_cm_move()
 * finds a QP gone under its move_mutex).  Every
 * hardware object of every table goes now, QPs first; the objects stay,
 * answering ENXIO, until their owners destroy them.
 *
 * Kernel callers' QPs and the kernel scope's default PD (kapi.c) are not
 * on the device's list: their owners have not been told yet.  They are
 * told next, by rdma_cm's DEVICE_REMOVAL, and rdma_cm's removal waits
 * for their ids to go, so their QPs, CQs and the default PD are released
 * before the device is.  Marking the device dead here stops the kernel
 * scope from allocating anything more on it.
 */
static void kqp_ib_remove(struct ib_device *ibdev, void *client_data)
{
	static const enum kqp_obj_type order[] = {
		KQP_OBJ_QP, KQP_OBJ_SRQ, KQP_OBJ_AH, KQP_OBJ_MR, KQP_OBJ_CQ,
		KQP_OBJ_PD,
	};
	struct kqp_device *kdev = client_data;
	struct kqp_vobj *vobj, *found;
	struct pid *owner;
	unsigned int i;

	/* Waits for a handler running: none runs after this. */
	ib_unregister_event_handler(&kdev->event_handler);
	down_write(&kqp_devices_rwsem);
	xa_erase(&kqp_devices, ibdev->index);
	up_write(&kqp_devices_rwsem);
	/* The idle QP cache; adopted groups go with their PDs below. */
	kqp_qpc_exit(kdev);

	down_write(&kdev->hw_rwsem);
	kdev->dead = true;
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		for (;;) {
			found = NULL;
			spin_lock(&kdev->objects_lock);
			list_for_each_entry(vobj, &kdev->objects, dev_entry) {
				if (vobj->obj.type == order[i]) {
					found = vobj;
					owner = kqp_vobj_unlist(vobj);
					break;
				}
			}
			spin_unlock(&kdev->objects_lock);
			if (!found)
				break;
			put_pid(owner);
			/* Its owner may be destroying it: it waits for us. */
			kqp_vobj_release_hw(found);
		}
	}
	WARN_ON(!list_empty(&kdev->objects));
	up_write(&kdev->hw_rwsem);
	ibdev_dbg(ibdev, "kqp: device removed\n");
	kqp_device_put(kdev);
}

static struct ib_client kqp_ib_client = {
	.name = KQP_MODNAME,
	.add = kqp_ib_add,
	.remove = kqp_ib_remove,
};

/*
 * The capabilities kqp passes on: what the device has and kqp lets a
 * caller use; SRQ_RESIZE too (KQP_IOCTL_MODIFY_SRQ resizes).  Not the
 * MEM_WINDOW flags (no memory windows), MEM_MGT_EXTENSIONS (no fast
 * registration, local invalidate or send with invalidate), XRC, the raw
 * packet QP flags (RAW_MULTI,
 * RAW_IP_CSUM, RAW_SCATTER_FCS, MANAGED_FLOW_STEERING,
 * PCI_WRITE_END_PADDING), RESIZE_MAX_WR (no IBV_QP_CAP in a modify), nor
 * the flush and atomic write operations.
 */
#define KQP_DEVICE_CAP_FLAGS						\
	(IB_DEVICE_BAD_PKEY_CNTR | IB_DEVICE_BAD_QKEY_CNTR |		\
	 IB_DEVICE_AUTO_PATH_MIG | IB_DEVICE_CHANGE_PHY_PORT |		\
	 IB_DEVICE_UD_AV_PORT_ENFORCE | IB_DEVICE_CURR_QP_STATE_MOD |	\
	 IB_DEVICE_SHUTDOWN_PORT | IB_DEVICE_PORT_ACTIVE_EVENT |		\
	 IB_DEVICE_SYS_IMAGE_GUID | IB_DEVICE_RC_RNR_NAK_GEN |		\
	 IB_DEVICE_N_NOTIFY_CQ | IB_DEVICE_UD_IP_CSUM |			\
	 IB_DEVICE_RC_IP_CSUM | IB_DEVICE_SRQ_RESIZE)

/*
 * One line of /sys/kernel/debug/kqp/resources for @vobj, named as
 * `rdma res show` names it (pdn, cqn and mrn are ib_core's restrack ids,
 * lqpn the QP number), with the pid and command of the process that made
 * it.  ib_core itself says "[kqp]" or "[rdma_cm]" for these objects: the
 * flag that would make it print a task also makes it read uverbs state
 * (cq->uobject) that kernel objects do not have.  Objects of processes
 * outside the reader's pid namespace are left out, as nldev leaves them.
 * With kdev->hw_rwsem held for reading and kdev->objects_lock held, so
 * the hardware objects stay.
 */
static void kqp_device_show_vobj(struct seq_file *m, struct kqp_device *kdev,
				 struct kqp_vobj *vobj)
{
	pid_t nr = pid_nr_ns(vobj->owner, task_active_pid_ns(current));
	char comm[TASK_COMM_LEN] = "";
	struct task_struct *task;
	const char *type;
	u32 id;

	if (!nr)
		return;
	switch (vobj->obj.type) {
	case KQP_OBJ_PD:
		type = "pd pdn";
		id = container_of(vobj, struct kqp_pd, vobj)->pd->res.id;
		break;
	case KQP_OBJ_CQ:
		type = "cq cqn";
		id = container_of(vobj, struct kqp_cq, vobj)->cq->res.id;
		break;
	case KQP_OBJ_MR:
		type = "mr mrn";
		id = container_of(vobj, struct kqp_mr, vobj)->mr->res.id;
		break;
	case KQP_OBJ_QP:
		type = "qp lqpn";
		id = container_of(vobj, struct kqp_qp, vobj)->qp_num;
		break;
	case KQP_OBJ_SRQ:
		type = "srq srqn";
		id = container_of(vobj, struct kqp_srq, vobj)->srq->res.id;
		break;
	default:
		/* AHs: rdma res does not list them either. */
		return;
	}
	rcu_read_lock();
	task = pid_task(vobj->owner, PIDTYPE_TGID);
	if (task)
		get_task_comm(comm, task);
	rcu_read_unlock();
	seq_printf(m, "dev %s %s %u pid %d comm %s\n",
		   dev_name(&kdev->ibdev->dev), type, id, nr,
		   task ? comm : "-");
}

/*
 * /sys/kernel/debug/kqp/resources: every PD, CQ, MR, QP and SRQ a process made
 * through /dev/kqp, one per line, on the devices the reader's network
 * namespace may use: "dev DEV TYPE IDNAME ID pid PID comm COMM".
 */
int kqp_device_resources_show(struct seq_file *m, void *v)
{
	struct kqp_device *kdev;
	struct kqp_vobj *vobj;
	unsigned long index = 0;

	for (;; index++) {
		down_read(&kqp_devices_rwsem);
		xa_for_each_start(&kqp_devices, index, kdev, index)
			if (kqp_device_visible(kdev->ibdev))
				break;
		if (kdev)
			kref_get(&kdev->ref);
		up_read(&kqp_devices_rwsem);
		if (!kdev)
			return 0;
		down_read(&kdev->hw_rwsem);
		if (!kdev->dead) {
			spin_lock(&kdev->objects_lock);
			list_for_each_entry(vobj, &kdev->objects, dev_entry)
				kqp_device_show_vobj(m, kdev, vobj);
			spin_unlock(&kdev->objects_lock);
		}
		up_read(&kdev->hw_rwsem);
		kqp_device_put(kdev);
	}
}

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

int kqp_query_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query *cmd = ucmd->cmd;
	struct kqp_device_info *infos = NULL;
	u8 __user *udst = u64_to_user_ptr(cmd->devices);
	struct kqp_device *kdev;
	unsigned long index;
	u32 total = 0, n = 0, i;
	size_t len;
	int ret;

	if (cmd->num_devices &&
	    cmd->device_info_size < offsetofend(struct kqp_device_info, name))
		return -EINVAL;

	/*
	 * Snapshot under the rwsem and copy out after dropping it, so that no
	 * user page fault is taken while device add/remove is excluded.
	 */
	down_read(&kqp_devices_rwsem);
	xa_for_each(&kqp_devices, index, kdev)
		if (kqp_device_visible(kdev->ibdev))
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
			if (kqp_device_visible(kdev->ibdev))
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

int kqp_query_device_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query_device *cmd = ucmd->cmd;
	const struct ib_device_attr *a;
	struct kqp_device *kdev;
	u32 index = cmd->device_index;

	kdev = kqp_device_get_user(index);
	if (!kdev)
		return -ENODEV;
	down_read(&kdev->hw_rwsem);
	if (kdev->dead) {
		up_read(&kdev->hw_rwsem);
		kqp_device_put(kdev);
		return -ENODEV;
	}
	a = &kdev->ibdev->attrs;
	memset(cmd, 0, sizeof(*cmd));
	cmd->size = ucmd->user_size;
	cmd->device_index = index;
	cmd->out_fw_ver = a->fw_ver;
	cmd->out_node_guid = (__force u64)kdev->ibdev->node_guid;
	cmd->out_sys_image_guid = (__force u64)a->sys_image_guid;
	cmd->out_max_mr_size = a->max_mr_size;
	cmd->out_page_size_cap = a->page_size_cap;
	cmd->out_device_cap_flags = a->device_cap_flags & KQP_DEVICE_CAP_FLAGS;
	cmd->out_vendor_id = a->vendor_id;
	cmd->out_vendor_part_id = a->vendor_part_id;
	cmd->out_hw_ver = a->hw_ver;
	cmd->out_max_qp = a->max_qp;
	cmd->out_max_qp_wr = a->max_qp_wr;
	cmd->out_max_sge = min(a->max_send_sge, a->max_recv_sge);
	cmd->out_max_sge_rd = a->max_sge_rd;
	cmd->out_max_cq = a->max_cq;
	cmd->out_max_cqe = a->max_cqe;
	cmd->out_max_mr = a->max_mr;
	cmd->out_max_pd = a->max_pd;
	cmd->out_max_qp_rd_atom = a->max_qp_rd_atom;
	cmd->out_max_res_rd_atom = a->max_res_rd_atom;
	cmd->out_max_qp_init_rd_atom = a->max_qp_init_rd_atom;
	cmd->out_atomic_cap = a->atomic_cap;
	cmd->out_max_mcast_grp = a->max_mcast_grp;
	cmd->out_max_mcast_qp_attach = a->max_mcast_qp_attach;
	cmd->out_max_total_mcast_qp_attach = a->max_total_mcast_qp_attach;
	cmd->out_max_ah = a->max_ah;
	cmd->out_max_srq = a->max_srq;
	cmd->out_max_srq_wr = min_t(u32, a->max_srq_wr, KQP_SRQ_DEPTH_MAX);
	cmd->out_max_srq_sge = a->max_srq_sge;
	/*
	 * Left zero, as the memset made them: EE contexts, RDDs, memory
	 * windows and raw packet QPs, which kqp does not make.
	 */
	cmd->out_max_pkeys = a->max_pkeys;
	cmd->out_local_ca_ack_delay = a->local_ca_ack_delay;
	cmd->out_phys_port_cnt = rdma_end_port(kdev->ibdev);
	up_read(&kdev->hw_rwsem);
	kqp_device_put(kdev);
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

/* The device and port a query names, with the hardware held. */
static struct kqp_device *kqp_query_port_start(u32 index, u32 port)
{
	struct kqp_device *kdev = kqp_device_get_user(index);

	if (!kdev)
		return ERR_PTR(-ENODEV);
	down_read(&kdev->hw_rwsem);
	if (kdev->dead || !rdma_is_port_valid(kdev->ibdev, port)) {
		int ret = kdev->dead ? -ENODEV : -EINVAL;

		up_read(&kdev->hw_rwsem);
		kqp_device_put(kdev);
		return ERR_PTR(ret);
	}
	return kdev;
}

static void kqp_query_port_end(struct kqp_device *kdev)
{
	up_read(&kdev->hw_rwsem);
	kqp_device_put(kdev);
}

static_assert(KQP_PORT_GRH_REQUIRED == IB_UVERBS_QPF_GRH_REQUIRED);

int kqp_query_port_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query_port *cmd = ucmd->cmd;
	struct ib_port_attr a;
	struct kqp_device *kdev;
	int ret;

	kdev = kqp_query_port_start(cmd->device_index, cmd->port_num);
	if (IS_ERR(kdev))
		return PTR_ERR(kdev);
	ret = ib_query_port(kdev->ibdev, cmd->port_num, &a);
	if (!ret) {
		cmd->out_state = a.state;
		cmd->out_max_mtu = a.max_mtu;
		cmd->out_active_mtu = a.active_mtu;
		cmd->out_gid_tbl_len = a.gid_tbl_len;
		cmd->out_port_cap_flags = a.port_cap_flags;
		cmd->out_max_msg_sz = a.max_msg_sz;
		cmd->out_bad_pkey_cntr = a.bad_pkey_cntr;
		cmd->out_qkey_viol_cntr = a.qkey_viol_cntr;
		cmd->out_lid = a.lid;
		cmd->out_sm_lid = a.sm_lid;
		cmd->out_pkey_tbl_len = a.pkey_tbl_len;
		cmd->out_active_speed = a.active_speed;
		cmd->out_lmc = a.lmc;
		cmd->out_max_vl_num = a.max_vl_num;
		cmd->out_sm_sl = a.sm_sl;
		cmd->out_subnet_timeout = a.subnet_timeout;
		cmd->out_init_type_reply = a.init_type_reply;
		cmd->out_active_width = a.active_width;
		cmd->out_phys_state = a.phys_state;
		cmd->out_link_layer =
			rdma_port_get_link_layer(kdev->ibdev, cmd->port_num) ==
					IB_LINK_LAYER_ETHERNET ?
				KQP_LINK_LAYER_ETHERNET :
				KQP_LINK_LAYER_INFINIBAND;
		cmd->out_port_cap_flags2 = a.port_cap_flags2;
		/* As ib_uverbs fills ib_uverbs_query_port_resp's flags. */
		cmd->out_flags = 0;
		if (rdma_is_grh_required(kdev->ibdev, cmd->port_num))
			cmd->out_flags |= KQP_PORT_GRH_REQUIRED;
	}
	kqp_query_port_end(kdev);
	return ret ? ret : kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

int kqp_query_gid_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query_gid *cmd = ucmd->cmd;
	const struct ib_gid_attr *attr;
	struct kqp_device *kdev;
	int ret = 0;

	kdev = kqp_query_port_start(cmd->device_index, cmd->port_num);
	if (IS_ERR(kdev))
		return PTR_ERR(kdev);
	if (cmd->index >= kdev->ibdev->port_data[cmd->port_num].immutable.gid_tbl_len) {
		ret = -EINVAL;
		goto out;
	}
	/* An unused entry reads as zero, as libibverbs reads it. */
	memset(cmd->out_gid, 0, sizeof(cmd->out_gid));
	cmd->out_gid_type = 0;
	attr = rdma_get_gid_attr(kdev->ibdev, cmd->port_num, cmd->index);
	if (!IS_ERR(attr)) {
		memcpy(cmd->out_gid, attr->gid.raw, sizeof(cmd->out_gid));
		cmd->out_gid_type = attr->gid_type;
		rdma_put_gid_attr(attr);
	}
out:
	kqp_query_port_end(kdev);
	return ret ? ret : kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

int kqp_query_pkey_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_query_pkey *cmd = ucmd->cmd;
	struct kqp_device *kdev;
	u16 pkey;
	int ret;

	kdev = kqp_query_port_start(cmd->device_index, cmd->port_num);
	if (IS_ERR(kdev))
		return PTR_ERR(kdev);
	/*
	 * Bounded by the port's table, as ib_uverbs bounds it: a driver may
	 * read an index past it as something else (mlx5: the whole table).
	 */
	if (cmd->index >=
	    kdev->ibdev->port_data[cmd->port_num].immutable.pkey_tbl_len)
		ret = -EINVAL;
	else
		ret = ib_query_pkey(kdev->ibdev, cmd->port_num, cmd->index,
				    &pkey);
	kqp_query_port_end(kdev);
	if (ret)
		return ret;
	cmd->out_pkey = pkey;
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
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
