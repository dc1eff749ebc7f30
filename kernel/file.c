// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * /dev/kqp file operations and the ioctl dispatch table.
 *
 * Every command's argument starts with __u32 size and __u32 flags; the
 * checks common to all of them (the errno contract in kqp-abi.h) are made
 * here, once, before a command's handler sees its argument.  So is the
 * file's table resolved, for the commands that use one, and refused to
 * any process but the one that made it.
 */
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "kqp.h"
#include "account.h"
#include "cm.h"
#include "cq.h"
#include "pd.h"
#include "qp.h"
#include "srq.h"

#include <kqp/cmd_rsv.h>

struct kqp_ucmd_header {
	u32 size;
	u32 flags;
};

/* What a .refault command read, to run it again on (see kqp_ucmd_respond_locked()). */
union kqp_refault_buffer {
	struct kqp_join_mcast join_mcast;
	struct kqp_create_qp create_qp;
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
	struct kqp_attach attach;
	struct kqp_ctx_info ctx_info;
	struct kqp_query_device query_device;
	struct kqp_query_port query_port;
	struct kqp_query_gid query_gid;
	struct kqp_query_pkey query_pkey;
	struct kqp_alloc_pd alloc_pd;
	struct kqp_dealloc_pd dealloc_pd;
	struct kqp_create_comp_channel create_comp_channel;
	struct kqp_create_cq create_cq;
	struct kqp_destroy_cq destroy_cq;
	struct kqp_flush_cq flush_cq;
	struct kqp_create_qp create_qp;
	struct kqp_destroy_qp destroy_qp;
	struct kqp_modify_qp modify_qp;
	struct kqp_query_qp query_qp;
	struct kqp_post post;
	struct kqp_doorbell doorbell;
	struct kqp_create_poller create_poller;
	struct kqp_create_async_fd create_async_fd;
	struct kqp_reg_mr reg_mr;
	struct kqp_dereg_mr dereg_mr;
	struct kqp_create_ah create_ah;
	struct kqp_destroy_ah destroy_ah;
	struct kqp_mcast_attach mcast_attach;
};

/* A reserved member of a command's argument: where it is, its size. */
struct kqp_ioctl_rsv {
	u16 off;
	u16 len;
};

struct kqp_ioctl_op {
	unsigned int size;
	unsigned int min_size;
	unsigned int ioctl_num;
	u32 valid_flags;
	bool no_table;
	bool refault;
	/* Up to the first with len 0. */
	struct kqp_ioctl_rsv rsv[KQP_RSV_MAX];
	int (*execute)(struct kqp_ucmd *ucmd);
};

/* The list's reserved column, as initialisers of rsv[]. */
#define KQP_RSV_ENTRY(_s, _m)						\
	{ offsetof(_s, _m) + BUILD_BUG_ON_ZERO(offsetof(_s, _m) > U16_MAX), \
	  sizeof_field(_s, _m) }

#define __KQP_IOCTL_OP(_ioctl, _fn, _struct, _last, _flags, _rsv,	\
		       _no_table, _refault)				\
	[_IOC_NR(_ioctl) - KQP_CMD_BASE] = {				\
		.size = sizeof(_struct) +				\
			BUILD_BUG_ON_ZERO(sizeof(union kqp_ucmd_buffer) < \
					  sizeof(_struct)),		\
		.min_size = offsetofend(_struct, _last),		\
		.ioctl_num = _ioctl,					\
		.valid_flags = _flags,					\
		.no_table = _no_table,					\
		.refault = _refault,					\
		.rsv = { KQP_RSV_EACH(_struct, _rsv) },			\
		.execute = _fn,						\
	}

/* A command on the file's table: ucmd->uctx is set, and the caller's. */
#define KQP_IOCTL_OP_TABLE(_ioctl, _fn, _struct, _last, _flags, _rsv)	\
	__KQP_IOCTL_OP(_ioctl, _fn, _struct, _last, _flags, _rsv,	\
		       false, false)
/* One that answers under a lock, and is run again after EFAULT. */
#define KQP_IOCTL_OP_REFAULT(_ioctl, _fn, _struct, _last, _flags, _rsv) \
	__KQP_IOCTL_OP(_ioctl, _fn, _struct, _last, _flags, _rsv, false, \
		       true + BUILD_BUG_ON_ZERO(sizeof(union kqp_refault_buffer) < \
						sizeof(_struct)))
/* A command that uses no table (device queries, a new channel). */
#define KQP_IOCTL_OP_NO_TABLE(_ioctl, _fn, _struct, _last, _flags, _rsv) \
	__KQP_IOCTL_OP(_ioctl, _fn, _struct, _last, _flags, _rsv,	\
		       true, false)

/* The file's own commands, defined below the table. */
static int kqp_attach_ioctl(struct kqp_ucmd *ucmd);
static int kqp_ctx_info_ioctl(struct kqp_ucmd *ucmd);

/* Every command, indexed by its number, from the one list. */
static const struct kqp_ioctl_op kqp_ioctl_ops[] = {
#define KQP_CMD(_name, _fn, _struct, _last, _flags, _kind, _rsv)	\
	KQP_IOCTL_OP_##_kind(KQP_IOCTL_##_name, kqp_##_fn##_ioctl,	\
			     _struct, _last, _flags, _rsv),
#include <kqp/cmds.h>
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

/*
 * The last step of a create command: answer the caller, then publish
 * @obj, so that its handle names it only once the answer is written; or,
 * if the answer cannot be written, abort @obj as if it had never been
 * made.  Nothing may fail after this.
 */
int kqp_object_commit(struct kqp_ucmd *ucmd, struct kqp_object *obj,
		      size_t cmd_len)
{
	int ret = kqp_ucmd_respond(ucmd, cmd_len);

	if (ret) {
		kqp_object_abort(ucmd->uctx, obj);
		return ret;
	}
	kqp_object_publish(ucmd->uctx, obj);
	return 0;
}

/*
 * Copies to userspace made while holding what others wait for (an id's
 * mutex, a file's event lock, an id device removal waits for) must not
 * wait on a page fault: userfaultfd or FUSE can make one last as long as
 * the caller likes.  Such copies run with page faults off.  When one
 * fails, the command undoes what it did and returns EFAULT; for commands
 * marked .refault, the dispatcher then faults the argument in, with
 * nothing held, and runs the command again on the argument as it first
 * read it (a page that was present may need a fault to be written:
 * copy-on-write, NUMA hinting, migration).
 * Readers that can let go and try again themselves (GET_EVENT, the
 * channels) fault in and retry in place.
 */
int kqp_ucmd_respond_locked(struct kqp_ucmd *ucmd, size_t cmd_len)
{
	if (copy_to_user_nofault(ucmd->ubuffer, ucmd->cmd,
				 min_t(size_t, ucmd->user_size, cmd_len)))
		return -EFAULT;
	return 0;
}

/* Fault the answer's memory in for writing, without writing to it. */
int kqp_ucmd_fault_in(struct kqp_ucmd *ucmd, size_t cmd_len)
{
	size_t len = min_t(size_t, ucmd->user_size, cmd_len);

	return fault_in_safe_writeable(ucmd->ubuffer, len) ? -EFAULT : 0;
}

#define KQP_REFAULT_TRIES 3

static long kqp_fops_ioctl(struct file *filp, unsigned int cmd,
			   unsigned long arg)
{
	struct kqp_ucmd ucmd = {
		.kfile = filp->private_data,
		.ubuffer = (void __user *)arg,
	};
	const struct kqp_ioctl_op *op;
	union kqp_refault_buffer saved;
	union kqp_ucmd_buffer buf;
	unsigned int nr = _IOC_NR(cmd), tries = 0, i;
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
	/* The list's reserved members (kqp/cmds.h): the uapi's contract. */
	for (i = 0; i < KQP_RSV_MAX && op->rsv[i].len; i++) {
		if (memchr_inv((u8 *)&buf + op->rsv[i].off, 0, op->rsv[i].len))
			return -EOPNOTSUPP;
	}

	if (!op->no_table) {
		ucmd.uctx = kqp_file_uctx(ucmd.kfile);
		if (IS_ERR(ucmd.uctx))
			return PTR_ERR(ucmd.uctx);
	}
	ucmd.cmd = &buf;
	/*
	 * A failed answer may have written part of the argument: run again
	 * on what was read the first time, not on that.
	 */
	if (op->refault)
		memcpy(&saved, &buf, op->size);
	for (;;) {
		ret = op->execute(&ucmd);
		/* The answer could not be written with a lock held. */
		if (ret != -EFAULT || !op->refault ||
		    ++tries >= KQP_REFAULT_TRIES ||
		    kqp_ucmd_fault_in(&ucmd, op->size))
			return ret;
		memcpy(&buf, &saved, op->size);
	}
}

/*
 * Share another file's table.  A file's table is fixed the first time a
 * command needs one, so this has to come first; after that, EBUSY.  The
 * table pointer is set once and never changes, which is what lets every
 * other command use it without a lock.  Only the table's owner may
 * attach to it (EPERM).
 */
static int kqp_attach_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_attach *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx;
	struct kqp_file *other;
	struct file *filp;
	int ret = 0;

	filp = fget(cmd->fd);
	if (!filp)
		return -EBADF;
	if (filp->f_op != &kqp_fops) {
		ret = -EINVAL;
		goto out;
	}
	other = filp->private_data;
	if (other == ucmd->kfile) {
		ret = -EINVAL;
		goto out;
	}
	/* The other file's table, made now if it has none yet. */
	uctx = kqp_file_uctx(other);
	if (IS_ERR(uctx)) {
		ret = PTR_ERR(uctx);
		goto out;
	}
	kref_get(&uctx->ref);
	if (cmpxchg(&ucmd->kfile->uctx, NULL, uctx)) {
		kqp_ucontext_put(uctx);
		ret = -EBUSY;
	}
out:
	fput(filp);
	return ret;
}

/* Is @uctx the calling process's? */
static bool kqp_uctx_is_callers(struct kqp_ucontext *uctx)
{
	return uctx->mm == current->mm;
}

/*
 * The file's table, made on first use by the calling process, which owns
 * it from then on.  ERR_PTR(-EPERM) for any other process: after fork()
 * the child shares the parent's files, and could otherwise post into the
 * memory the parent registered.  ERR_PTR(-ENOMEM) when out of memory.
 */
struct kqp_ucontext *kqp_file_uctx(struct kqp_file *kfile)
{
	struct kqp_ucontext *uctx = READ_ONCE(kfile->uctx);

	if (!uctx) {
		uctx = kqp_ucontext_alloc();
		if (!uctx)
			return ERR_PTR(-ENOMEM);
		if (cmpxchg(&kfile->uctx, NULL, uctx)) {
			kqp_ucontext_put(uctx);
			uctx = READ_ONCE(kfile->uctx);
		}
	}
	if (!kqp_uctx_is_callers(uctx))
		return ERR_PTR(-EPERM);
	return uctx;
}

static int kqp_ctx_info_ioctl(struct kqp_ucmd *ucmd)
{
	struct kqp_ctx_info *cmd = ucmd->cmd;
	struct kqp_ucontext *uctx = ucmd->uctx;
	u32 *count[KQP_OBJ_MAX] = {
		[KQP_OBJ_CM_ID] = &cmd->out_cm_ids,
		[KQP_OBJ_PD] = &cmd->out_pds,
		[KQP_OBJ_CQ] = &cmd->out_cqs,
		[KQP_OBJ_QP] = &cmd->out_qps,
		[KQP_OBJ_MR] = &cmd->out_mrs,
		[KQP_OBJ_AH] = &cmd->out_ahs,
	};
	struct kqp_object *obj;
	unsigned long index;

	*cmd = (struct kqp_ctx_info){ .size = cmd->size };
	xa_lock(&uctx->objects);
	xa_for_each(&uctx->objects, index, obj) {
		if (obj->type < KQP_OBJ_MAX && count[obj->type])
			(*count[obj->type])++;
		if (obj->type == KQP_OBJ_PD &&
		    container_of(obj, struct kqp_pd, vobj.obj)->is_default)
			cmd->out_default_pds++;
	}
	xa_unlock(&uctx->objects);
	cmd->out_files = kref_read(&uctx->ref);
	cmd->out_objects = atomic_read(&uctx->nr_objects);
	cmd->out_mr_bytes = atomic64_read(&uctx->mr_bytes);
	kqp_poller_info(uctx, cmd);
	return kqp_ucmd_respond(ucmd, sizeof(*cmd));
}

static __poll_t kqp_fops_poll(struct file *filp, struct poll_table_struct *wait)
{
	return kqp_events_poll(filp->private_data, filp, wait);
}

/*
 * mmap of a CQ's ring or a QP's rings: the offset is the object's handle
 * (handles are never both); the rules are kqp_vmem_mmap()'s.  No such
 * object, one already going, or a QP without rings: EINVAL.
 */
static int kqp_fops_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct kqp_ucontext *uctx = READ_ONCE(((struct kqp_file *)
					      filp->private_data)->uctx);
	struct kqp_object *obj;
	struct kqp_vmem *vmem;
	int ret;

	if (!uctx)
		return -EINVAL;
	if (!kqp_uctx_is_callers(uctx))
		return -EPERM;
	if (vma->vm_pgoff > U32_MAX)
		return -EINVAL;
	obj = kqp_object_get(uctx, vma->vm_pgoff, KQP_OBJ_CQ);
	if (obj == ERR_PTR(-ENOENT))
		obj = kqp_object_get(uctx, vma->vm_pgoff, KQP_OBJ_QP);
	if (IS_ERR(obj))
		return -EINVAL;
	/* Set before the object was published, unchanged until its free. */
	if (obj->type == KQP_OBJ_CQ)
		vmem = container_of(obj, struct kqp_cq, vobj.obj)->ring_vmem;
	else
		vmem = container_of(obj, struct kqp_qp, vobj.obj)->ring_vmem;
	ret = vmem ? kqp_vmem_mmap(vmem, vma) : -EINVAL;
	kqp_object_put(obj);
	return ret;
}

static int kqp_fops_open(struct inode *inode, struct file *filp)
{
	struct kqp_file *kfile;

	kfile = kzalloc(sizeof(*kfile), GFP_KERNEL_ACCOUNT);
	if (!kfile)
		return -ENOMEM;
	kfile->filp = filp;
	mutex_init(&kfile->lock);
	INIT_LIST_HEAD(&kfile->events);
	init_waitqueue_head(&kfile->poll_wait);
	filp->private_data = kfile;
	return nonseekable_open(inode, filp);
}

/*
 * Whatever state its ids are in, closing the file destroys them all; the
 * table, and the verbs objects in it, go with the last file using it.
 */
static int kqp_fops_release(struct inode *inode, struct file *filp)
{
	struct kqp_file *kfile = filp->private_data;

	if (kfile->uctx) {
		kqp_file_destroy_objects(kfile);
		kqp_ucontext_put(kfile->uctx);
	}
	kqp_events_free_all(kfile);
	mutex_destroy(&kfile->lock);
	kfree(kfile);
	return 0;
}

const struct file_operations kqp_fops = {
	.owner = THIS_MODULE,
	.open = kqp_fops_open,
	.release = kqp_fops_release,
	.poll = kqp_fops_poll,
	.mmap = kqp_fops_mmap,
	.unlocked_ioctl = kqp_fops_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};
