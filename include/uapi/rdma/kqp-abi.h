/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * kqp: RDMA CM ids and kernel-owned QPs over /dev/kqp.
 *
 * This header is the whole ABI between kqp.ko and its users.
 */
#ifndef _UAPI_RDMA_KQP_ABI_H
#define _UAPI_RDMA_KQP_ABI_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Bumped only for an incompatible change; additions use size and flags. */
#define KQP_ABI_VERSION 1

/**
 * DOC: General ioctl format
 *
 * Every command takes one argument: a pointer to a structure whose first
 * two fields are ``__u32 size`` (set by the caller to the size of the
 * structure it was compiled with) and ``__u32 flags``.  A caller built
 * against an older header passes a shorter structure and a newer caller a
 * longer one; the kernel copies min(size, its own size) bytes back.  All
 * pointers are carried in ``__aligned_u64`` fields, and every field named
 * ``__reserved`` must be zero.
 *
 * The errno contract, in the order the checks are made:
 *
 *  - ENOTTY: the ioctl number is not a kqp command at all.
 *  - EFAULT: the argument, or a pointer inside it, is not accessible.
 *  - EINVAL: @size is smaller than the command's minimum size (the end of
 *    the last field the first version of the command had).
 *  - E2BIG: @size is larger than the kernel's structure and the bytes the
 *    kernel does not know are not all zero.  Zero bytes there are accepted,
 *    so a newer caller that leaves new fields at zero works on old kernels.
 *  - EOPNOTSUPP: a flag this kernel does not know is set, or a ``__reserved``
 *    field is not zero.  Both mean "this kernel cannot do what you ask",
 *    which is the signal a newer caller uses to fall back.
 *  - EINVAL: everything was understood, but a value is not valid.
 *  - ENOENT: a handle or index names nothing.
 *  - ENODEV: the RDMA device went away.
 *  - ENOMEM: out of memory.
 *
 * Individual commands document further errnos of their own.
 */

/* The InfiniBand subsystem's ioctl type; ib_uverbs uses number 1 of it. */
#define KQP_IOCTL_TYPE 0x1b

enum {
	KQP_CMD_BASE = 0x80,
	KQP_CMD_QUERY = KQP_CMD_BASE,
	KQP_CMD_MAX,	/* one past the last command */
};

/* Feature bits reported by KQP_IOCTL_QUERY; none are defined yet. */
enum kqp_features {
	KQP_FEATURES_NONE = 0,
};

#define KQP_DEVICE_NAME_MAX 64

/**
 * struct kqp_device_info - one RDMA device, as reported by KQP_IOCTL_QUERY
 * @index: the kernel's index of the device (ib_device->index); stable for
 *	the device's lifetime and never reused while it exists
 * @node_type: enum rdma_node_type of the device (1 = CA, 4 = RNIC, ...)
 * @node_guid: node GUID, in network byte order as in ib_device
 * @phys_port_cnt: number of physical ports, numbered from 1
 * @__reserved: zero
 * @name: the device's current name, NUL-terminated
 */
struct kqp_device_info {
	__u32 index;
	__u32 node_type;
	__aligned_u64 node_guid;
	__u32 phys_port_cnt;
	__u32 __reserved;
	char name[KQP_DEVICE_NAME_MAX];
};

/**
 * struct kqp_query - ioctl(KQP_IOCTL_QUERY)
 * @size: sizeof(struct kqp_query)
 * @flags: must be 0
 * @out_abi_version: KQP_ABI_VERSION of the running module
 * @num_devices: in: number of entries @devices has room for;
 *	out: number of RDMA devices the module currently sees
 * @out_features: bitmap of enum kqp_features
 * @devices: user pointer to an array of @num_devices entries, each
 *	@device_info_size bytes apart; may be 0 when @num_devices is 0
 * @device_info_size: in: sizeof(struct kqp_device_info) as the caller knows
 *	it, at least offsetofend(struct kqp_device_info, name)
 * @__reserved: zero
 *
 * Reports the module's ABI version and the RDMA devices it sees, in
 * increasing @index order.  The first min(in @num_devices, out
 * @num_devices) entries are written, each truncated to @device_info_size;
 * a caller whose array was too small sees a larger @num_devices and calls
 * again.  EINVAL if @device_info_size is too small while @num_devices is
 * non-zero.
 */
struct kqp_query {
	__u32 size;
	__u32 flags;
	__u32 out_abi_version;
	__u32 num_devices;
	__aligned_u64 out_features;
	__aligned_u64 devices;
	__u32 device_info_size;
	__u32 __reserved;
};
#define KQP_IOCTL_QUERY _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY)

#endif /* _UAPI_RDMA_KQP_ABI_H */
