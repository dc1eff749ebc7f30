// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * /dev/kqp file operations and the ioctl dispatch table.
 *
 * Every command's argument starts with __u32 size and __u32 flags; the
 * checks common to all of them (the errno contract in kqp-abi.h) are made
 * here, once, before a command's handler sees its argument.
 */
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"

struct kqp_ucmd_header {
	u32 size;
	u32 flags;
};

union kqp_ucmd_buffer {
	struct kqp_ucmd_header hdr;
	struct kqp_query query;
	struct kqp_create_id create_id;
	struct kqp_destroy_id destroy_id;
	struct kqp_bind_addr bind_addr;
	struct kqp_resolve_addr resolve_addr;
	struct kqp_resolve_route resolve_route;
	struct kqp_query_id query_id;
	struct kqp_listen listen;
	struct kqp_connect connect;
	struct kqp_accept accept;
	struct kqp_reject reject;
	struct kqp_id_cmd id_cmd;
	struct kqp_set_option set_option;
	struct kqp_init_qp_attr init_qp_attr;
	struct kqp_notify notify;
	struct kqp_join_mcast join_mcast;
	struct kqp_leave_mcast leave_mcast;
	struct kqp_migrate_id migrate_id;
	struct kqp_get_event get_event;
};

struct kqp_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	u32 valid_flags;
	int (*execute)(struct kqp_ucmd *ucmd);
};

#define KQP_IOCTL_OP(_ioctl, _fn, _struct, _last, _flags)		\
	[_IOC_NR(_ioctl) - KQP_CMD_BASE] = {				\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union kqp_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = _ioctl,					\
		.valid_flags = _flags,					\
		.execute = _fn,						\
	}

static const struct kqp_ioctl_op kqp_ioctl_ops[] = {
	KQP_IOCTL_OP(KQP_IOCTL_QUERY, kqp_query, struct kqp_query,
		     __reserved, 0),
	KQP_IOCTL_OP(KQP_IOCTL_CREATE_ID, kqp_create_id, struct kqp_create_id,
		     __reserved, 0),
	KQP_IOCTL_OP(KQP_IOCTL_DESTROY_ID, kqp_destroy_id,
		     struct kqp_destroy_id, out_events_reported, 0),
	KQP_IOCTL_OP(KQP_IOCTL_BIND_ADDR, kqp_bind_addr, struct kqp_bind_addr,
		     addr, 0),
	KQP_IOCTL_OP(KQP_IOCTL_RESOLVE_ADDR, kqp_resolve_addr,
		     struct kqp_resolve_addr, dst_addr, 0),
	KQP_IOCTL_OP(KQP_IOCTL_RESOLVE_ROUTE, kqp_resolve_route,
		     struct kqp_resolve_route, timeout_ms, 0),
	KQP_IOCTL_OP(KQP_IOCTL_QUERY_ID, kqp_query_id, struct kqp_query_id,
		     out_paths, 0),
	KQP_IOCTL_OP(KQP_IOCTL_LISTEN, kqp_listen, struct kqp_listen,
		     backlog, 0),
	KQP_IOCTL_OP(KQP_IOCTL_CONNECT, kqp_connect, struct kqp_connect,
		     param, 0),
	KQP_IOCTL_OP(KQP_IOCTL_ACCEPT, kqp_accept, struct kqp_accept,
		     param, 0),
	KQP_IOCTL_OP(KQP_IOCTL_REJECT, kqp_reject, struct kqp_reject,
		     private_data, 0),
	KQP_IOCTL_OP(KQP_IOCTL_DISCONNECT, kqp_disconnect, struct kqp_id_cmd,
		     __reserved, 0),
	KQP_IOCTL_OP(KQP_IOCTL_SET_OPTION, kqp_set_option,
		     struct kqp_set_option, optval, 0),
	KQP_IOCTL_OP(KQP_IOCTL_INIT_QP_ATTR, kqp_init_qp_attr,
		     struct kqp_init_qp_attr, out_attr, 0),
	KQP_IOCTL_OP(KQP_IOCTL_NOTIFY, kqp_notify, struct kqp_notify,
		     event, 0),
	KQP_IOCTL_OP(KQP_IOCTL_ESTABLISH, kqp_establish, struct kqp_id_cmd,
		     __reserved, 0),
	KQP_IOCTL_OP(KQP_IOCTL_JOIN_MCAST, kqp_join_mcast,
		     struct kqp_join_mcast, addr, 0),
	KQP_IOCTL_OP(KQP_IOCTL_LEAVE_MCAST, kqp_leave_mcast,
		     struct kqp_leave_mcast, __reserved, 0),
	KQP_IOCTL_OP(KQP_IOCTL_MIGRATE_ID, kqp_migrate_id,
		     struct kqp_migrate_id, out_events_reported, 0),
	KQP_IOCTL_OP(KQP_IOCTL_GET_EVENT, kqp_get_event, struct kqp_get_event,
		     out_private_data, 0),
};

static_assert(ARRAY_SIZE(kqp_ioctl_ops) == KQP_CMD_MAX - KQP_CMD_BASE);

/**
 * kqp_ucmd_respond - copy a command's result back to its caller
 * @ucmd: the command
 * @cmd_len: the kernel's size of the command's structure
 *
 * Copies no more than the caller said it has, so an older caller with a
 * shorter structure gets exactly its fields back.
 */
int kqp_ucmd_respond(struct kqp_ucmd *ucmd, size_t cmd_len)
{
	if (copy_to_user(ucmd->ubuffer, ucmd->cmd,
			 min_t(size_t, ucmd->user_size, cmd_len)))
		return -EFAULT;
	return 0;
}

static long kqp_fops_ioctl(struct file *filp, unsigned int cmd,
			   unsigned long arg)
{
	struct kqp_ucmd ucmd = {
		.kfile = filp->private_data,
		.ubuffer = (void __user *)arg,
	};
	const struct kqp_ioctl_op *op;
	union kqp_ucmd_buffer buf;
	unsigned int nr = _IOC_NR(cmd);
	int ret;

	if (_IOC_TYPE(cmd) != KQP_IOCTL_TYPE || nr < KQP_CMD_BASE ||
	    nr - KQP_CMD_BASE >= ARRAY_SIZE(kqp_ioctl_ops))
		return -ENOTTY;
	op = &kqp_ioctl_ops[nr - KQP_CMD_BASE];
	if (op->ioctl_num != cmd)
		return -ENOTTY;

	ret = get_user(ucmd.user_size, (u32 __user *)ucmd.ubuffer);
	if (ret)
		return ret;
	if (ucmd.user_size < op->min_size)
		return -EINVAL;
	ret = copy_struct_from_user(&buf, op->size, ucmd.ubuffer,
				    ucmd.user_size);
	if (ret)
		return ret;
	if (buf.hdr.flags & ~op->valid_flags)
		return -EOPNOTSUPP;

	ucmd.cmd = &buf;
	return op->execute(&ucmd);
}

static __poll_t kqp_fops_poll(struct file *filp, struct poll_table_struct *wait)
{
	return kqp_events_poll(filp->private_data, filp, wait);
}

static int kqp_fops_open(struct inode *inode, struct file *filp)
{
	struct kqp_file *kfile;

	kfile = kzalloc(sizeof(*kfile), GFP_KERNEL);
	if (!kfile)
		return -ENOMEM;
	kfile->filp = filp;
	xa_init_flags(&kfile->objects, XA_FLAGS_ALLOC1);
	mutex_init(&kfile->lock);
	INIT_LIST_HEAD(&kfile->events);
	init_waitqueue_head(&kfile->poll_wait);
	filp->private_data = kfile;
	return nonseekable_open(inode, filp);
}

/* Whatever state its ids are in, closing the file destroys them all. */
static int kqp_fops_release(struct inode *inode, struct file *filp)
{
	struct kqp_file *kfile = filp->private_data;

	kqp_file_destroy_objects(kfile);
	kqp_events_free_all(kfile);
	xa_destroy(&kfile->objects);
	mutex_destroy(&kfile->lock);
	kfree(kfile);
	return 0;
}

const struct file_operations kqp_fops = {
	.owner = THIS_MODULE,
	.open = kqp_fops_open,
	.release = kqp_fops_release,
	.poll = kqp_fops_poll,
	.unlocked_ioctl = kqp_fops_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};
