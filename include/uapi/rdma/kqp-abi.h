/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR Linux-OpenIB) */
/*
 * kqp: RDMA CM ids and kernel-owned QPs over /dev/kqp.
 *
 * This header is the whole ABI between kqp.ko and its users.
 */
#ifndef _UAPI_RDMA_KQP_ABI_H
#define _UAPI_RDMA_KQP_ABI_H

#include <linux/ioctl.h>
#include <linux/socket.h>
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
 *  - ENOENT: a handle names nothing in this file, or an object of
 *    another type.
 *  - ENXIO: the object's RDMA device went away (after
 *    RDMA_CM_EVENT_DEVICE_REMOVAL); it can still be destroyed.  ucma
 *    answers ENXIO here too.
 *  - ENOMEM: out of memory.
 *
 * Errnos that rdma_cm itself returns (EADDRINUSE, EADDRNOTAVAIL,
 * ENETUNREACH, ...) are passed through unchanged, as ucma passes them to
 * librdmacm.
 *
 * Individual commands document further errnos of their own.
 */

/* The InfiniBand subsystem's ioctl type; ib_uverbs uses number 1 of it. */
#define KQP_IOCTL_TYPE 0x1b

enum {
	KQP_CMD_BASE = 0x80,
	KQP_CMD_QUERY = KQP_CMD_BASE,
	KQP_CMD_CREATE_ID,
	KQP_CMD_DESTROY_ID,
	KQP_CMD_BIND_ADDR,
	KQP_CMD_RESOLVE_ADDR,
	KQP_CMD_RESOLVE_ROUTE,
	KQP_CMD_QUERY_ID,
	KQP_CMD_LISTEN,
	KQP_CMD_CONNECT,
	KQP_CMD_ACCEPT,
	KQP_CMD_REJECT,
	KQP_CMD_DISCONNECT,
	KQP_CMD_SET_OPTION,
	KQP_CMD_INIT_QP_ATTR,
	KQP_CMD_NOTIFY,
	KQP_CMD_ESTABLISH,
	KQP_CMD_JOIN_MCAST,
	KQP_CMD_LEAVE_MCAST,
	KQP_CMD_MIGRATE_ID,
	KQP_CMD_GET_EVENT,
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
 * @max_qp_rd_atom: RDMA reads and atomics a QP can answer at once
 * @max_qp_init_rd_atom: RDMA reads and atomics a QP can have outstanding
 */
struct kqp_device_info {
	__u32 index;
	__u32 node_type;
	__aligned_u64 node_guid;
	__u32 phys_port_cnt;
	__u32 __reserved;
	char name[KQP_DEVICE_NAME_MAX];
	__u32 max_qp_rd_atom;
	__u32 max_qp_init_rd_atom;
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

/**
 * DOC: RDMA CM ids
 *
 * Each open file of /dev/kqp is an event channel.  The CM ids it creates
 * are named by handles that are only meaningful in that file; events for
 * them queue on it, and closing it destroys every id it still owns,
 * whatever state the id is in.  Commands on one id are serialised.
 *
 * Port spaces and QP types follow librdmacm: RDMA_PS_TCP with RC,
 * RDMA_PS_UDP and RDMA_PS_IPOIB with UD, RDMA_PS_IB with either.
 * Addresses are struct sockaddr_in, sockaddr_in6 or sockaddr_ib in a
 * struct __kernel_sockaddr_storage; any other family gets EINVAL.
 */

/* Port spaces, as enum rdma_ucm_port_space. */
#define KQP_PS_IPOIB	0x0002
#define KQP_PS_IB	0x013F
#define KQP_PS_TCP	0x0106
#define KQP_PS_UDP	0x0111

/* QP types, as enum ibv_qp_type. */
#define KQP_QPT_RC	2
#define KQP_QPT_UD	4

/* No RDMA device: the value of a device index for an unbound id. */
#define KQP_NO_DEVICE	0xffffffffu

#define KQP_MAX_PRIVATE_DATA 256

/**
 * struct kqp_create_id - ioctl(KQP_IOCTL_CREATE_ID)
 * @size: sizeof(struct kqp_create_id)
 * @flags: must be 0
 * @uid: caller's value, reported back with every event for the id
 * @port_space: KQP_PS_*
 * @qp_type: KQP_QPT_RC or KQP_QPT_UD, consistent with @port_space
 * @out_id: handle of the new id
 * @__reserved: zero
 *
 * Creates an id in the caller's network namespace.  EINVAL for an unknown
 * port space or a QP type the port space does not allow.
 */
struct kqp_create_id {
	__u32 size;
	__u32 flags;
	__aligned_u64 uid;
	__u32 port_space;
	__u32 qp_type;
	__u32 out_id;
	__u32 __reserved;
};
#define KQP_IOCTL_CREATE_ID _IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_ID)

/**
 * struct kqp_destroy_id - ioctl(KQP_IOCTL_DESTROY_ID)
 * @size: sizeof(struct kqp_destroy_id)
 * @flags: must be 0
 * @id: handle
 * @out_events_reported: how many events were reported for the id (and its
 *	multicast groups) by KQP_IOCTL_GET_EVENT
 *
 * Destroys the id, any connection requests it received that were not yet
 * reported (their new ids with them), and its events not yet reported.
 * Once it returns no further event is reported for the id; a caller that
 * hands events out waits until it has seen @out_events_reported of them
 * acknowledged, as librdmacm does.
 */
struct kqp_destroy_id {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 out_events_reported;
};
#define KQP_IOCTL_DESTROY_ID _IO(KQP_IOCTL_TYPE, KQP_CMD_DESTROY_ID)

/**
 * struct kqp_bind_addr - ioctl(KQP_IOCTL_BIND_ADDR)
 * @size: sizeof(struct kqp_bind_addr)
 * @flags: must be 0
 * @id: handle
 * @__reserved: zero
 * @addr: local address; a wildcard address binds no device
 */
struct kqp_bind_addr {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 __reserved;
	struct __kernel_sockaddr_storage addr;
};
#define KQP_IOCTL_BIND_ADDR _IO(KQP_IOCTL_TYPE, KQP_CMD_BIND_ADDR)

/**
 * struct kqp_resolve_addr - ioctl(KQP_IOCTL_RESOLVE_ADDR)
 * @size: sizeof(struct kqp_resolve_addr)
 * @flags: must be 0
 * @id: handle
 * @timeout_ms: how long resolution may take, as rdma_resolve_addr(3)
 * @src_addr: local address to bind first, or family 0 for none
 * @dst_addr: destination
 *
 * Completes with RDMA_CM_EVENT_ADDR_RESOLVED or ADDR_ERROR.
 */
struct kqp_resolve_addr {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 timeout_ms;
	struct __kernel_sockaddr_storage src_addr;
	struct __kernel_sockaddr_storage dst_addr;
};
#define KQP_IOCTL_RESOLVE_ADDR _IO(KQP_IOCTL_TYPE, KQP_CMD_RESOLVE_ADDR)

/**
 * struct kqp_resolve_route - ioctl(KQP_IOCTL_RESOLVE_ROUTE)
 * @size: sizeof(struct kqp_resolve_route)
 * @flags: must be 0
 * @id: handle
 * @timeout_ms: as rdma_resolve_route(3)
 *
 * Completes with RDMA_CM_EVENT_ROUTE_RESOLVED or ROUTE_ERROR.
 */
struct kqp_resolve_route {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 timeout_ms;
};
#define KQP_IOCTL_RESOLVE_ROUTE _IO(KQP_IOCTL_TYPE, KQP_CMD_RESOLVE_ROUTE)

/**
 * struct kqp_path_rec - one path of an id's route
 *
 * The fields of struct ibv_sa_path_rec; multi-byte fields are in network
 * byte order as there.
 */
struct kqp_path_rec {
	__u8 dgid[16];
	__u8 sgid[16];
	__be16 dlid;
	__be16 slid;
	__be32 flow_label;
	__be16 pkey;
	__u8 raw_traffic;
	__u8 hop_limit;
	__u8 traffic_class;
	__u8 reversible;
	__u8 numb_path;
	__u8 sl;
	__u8 mtu_selector;
	__u8 mtu;
	__u8 rate_selector;
	__u8 rate;
	__u8 packet_life_time_selector;
	__u8 packet_life_time;
	__u8 preference;
	__u8 __reserved[5];
};

#define KQP_MAX_PATHS 2

/**
 * struct kqp_query_id - ioctl(KQP_IOCTL_QUERY_ID)
 * @size: sizeof(struct kqp_query_id)
 * @flags: must be 0
 * @id: handle
 * @out_device_index: the bound device's index (as in struct
 *	kqp_device_info), or KQP_NO_DEVICE
 * @out_node_guid: the bound device's node GUID, network byte order
 * @out_port_num: the bound port, 0 when unbound
 * @out_pkey: the P_Key, host byte order
 * @out_num_paths: entries valid in @out_paths
 * @out_sgid: source GID
 * @out_dgid: destination GID
 * @out_src_addr: local address
 * @out_dst_addr: peer address
 * @out_paths: primary and alternate path, as resolved
 *
 * Everything librdmacm keeps in struct rdma_cm_id's route.
 */
struct kqp_query_id {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 out_device_index;
	__aligned_u64 out_node_guid;
	__u32 out_port_num;
	__u16 out_pkey;
	__u16 out_num_paths;
	__u8 out_sgid[16];
	__u8 out_dgid[16];
	struct __kernel_sockaddr_storage out_src_addr;
	struct __kernel_sockaddr_storage out_dst_addr;
	struct kqp_path_rec out_paths[KQP_MAX_PATHS];
};
#define KQP_IOCTL_QUERY_ID _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY_ID)

/**
 * struct kqp_listen - ioctl(KQP_IOCTL_LISTEN)
 * @size: sizeof(struct kqp_listen)
 * @flags: must be 0
 * @id: handle
 * @backlog: connection requests that may wait unreported; 0 or more than
 *	the module's max_backlog parameter means max_backlog
 *
 * A request arriving while @backlog requests are unreported is rejected,
 * so the peer sees RDMA_CM_EVENT_REJECTED; a request leaves the backlog
 * when KQP_IOCTL_GET_EVENT reports it.
 */
struct kqp_listen {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 backlog;
};
#define KQP_IOCTL_LISTEN _IO(KQP_IOCTL_TYPE, KQP_CMD_LISTEN)

/**
 * struct kqp_conn_param - connection parameters, as struct rdma_conn_param
 * @private_data: user pointer to @private_data_len bytes, or 0
 * @private_data_len: at most KQP_MAX_PRIVATE_DATA; rdma_cm applies the
 *	transport's own, smaller, limit (EINVAL beyond it)
 * @responder_resources: as in struct rdma_conn_param
 * @initiator_depth: as in struct rdma_conn_param
 * @flow_control: as in struct rdma_conn_param
 * @retry_count: as in struct rdma_conn_param
 * @rnr_retry_count: as in struct rdma_conn_param
 * @srq: as in struct rdma_conn_param
 * @__reserved: zero
 * @qp_num: QP number announced to the peer (for an id whose QP the caller
 *	manages itself); for UD, the QP number of the SIDR reply
 * @qkey: UD only: the Q_Key of the SIDR reply
 */
struct kqp_conn_param {
	__aligned_u64 private_data;
	__u32 private_data_len;
	__u8 responder_resources;
	__u8 initiator_depth;
	__u8 flow_control;
	__u8 retry_count;
	__u8 rnr_retry_count;
	__u8 srq;
	__u8 __reserved[2];
	__u32 qp_num;
	__u32 qkey;
};

/**
 * struct kqp_connect - ioctl(KQP_IOCTL_CONNECT)
 * @size: sizeof(struct kqp_connect)
 * @flags: must be 0
 * @id: handle
 * @__reserved: zero
 * @param: connection parameters
 */
struct kqp_connect {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 __reserved;
	struct kqp_conn_param param;
};
#define KQP_IOCTL_CONNECT _IO(KQP_IOCTL_TYPE, KQP_CMD_CONNECT)

/**
 * struct kqp_accept - ioctl(KQP_IOCTL_ACCEPT)
 * @size: sizeof(struct kqp_accept)
 * @flags: must be 0
 * @id: handle of an id from RDMA_CM_EVENT_CONNECT_REQUEST
 * @__reserved: zero
 * @uid: caller's value for the id's events from now on.  Until an id
 *	from a connection request is accepted its events are not reported,
 *	as with ucma: nothing can name it yet.
 * @param: connection parameters
 */
struct kqp_accept {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 __reserved;
	__aligned_u64 uid;
	struct kqp_conn_param param;
};
#define KQP_IOCTL_ACCEPT _IO(KQP_IOCTL_TYPE, KQP_CMD_ACCEPT)

/**
 * struct kqp_reject - ioctl(KQP_IOCTL_REJECT)
 * @size: sizeof(struct kqp_reject)
 * @flags: must be 0
 * @id: handle
 * @private_data_len: at most KQP_MAX_PRIVATE_DATA
 * @private_data: user pointer, or 0
 */
struct kqp_reject {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 private_data_len;
	__aligned_u64 private_data;
};
#define KQP_IOCTL_REJECT _IO(KQP_IOCTL_TYPE, KQP_CMD_REJECT)

/**
 * struct kqp_id_cmd - ioctl(KQP_IOCTL_DISCONNECT), ioctl(KQP_IOCTL_ESTABLISH)
 * @size: sizeof(struct kqp_id_cmd)
 * @flags: must be 0
 * @id: handle
 * @__reserved: zero
 */
struct kqp_id_cmd {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 __reserved;
};
#define KQP_IOCTL_DISCONNECT _IO(KQP_IOCTL_TYPE, KQP_CMD_DISCONNECT)
#define KQP_IOCTL_ESTABLISH _IO(KQP_IOCTL_TYPE, KQP_CMD_ESTABLISH)

/* Option levels and names, as librdmacm's. */
#define KQP_OPTION_ID			0
#define KQP_OPTION_ID_TOS		0	/* __u8 */
#define KQP_OPTION_ID_REUSEADDR		1	/* int */
#define KQP_OPTION_ID_AFONLY		2	/* int */
#define KQP_OPTION_ID_ACK_TIMEOUT	3	/* __u8 */

/**
 * struct kqp_set_option - ioctl(KQP_IOCTL_SET_OPTION)
 * @size: sizeof(struct kqp_set_option)
 * @flags: must be 0
 * @id: handle
 * @level: KQP_OPTION_ID
 * @optname: KQP_OPTION_ID_*
 * @optlen: size of the value at @optval: exactly the option's size
 * @optval: user pointer to the value
 *
 * ENOSYS for an option this module does not implement, as ucma; EINVAL
 * for a wrong @optlen; REUSEADDR and AFONLY after bind get rdma_cm's
 * EINVAL.
 */
struct kqp_set_option {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 level;
	__u32 optname;
	__u32 optlen;
	__aligned_u64 optval;
};
#define KQP_IOCTL_SET_OPTION _IO(KQP_IOCTL_TYPE, KQP_CMD_SET_OPTION)

/**
 * struct kqp_ah_attr - an address handle's attributes, as struct ibv_ah_attr
 */
struct kqp_ah_attr {
	__u8 dgid[16];
	__u32 flow_label;
	__u16 dlid;
	__u8 sgid_index;
	__u8 hop_limit;
	__u8 traffic_class;
	__u8 sl;
	__u8 src_path_bits;
	__u8 static_rate;
	__u8 is_global;
	__u8 port_num;
	__u8 __reserved[2];
};

/**
 * struct kqp_qp_attr - QP attributes, as struct ibv_qp_attr
 *
 * Only the attributes named by the accompanying mask (enum ibv_qp_attr_mask
 * bits) are meaningful.
 */
struct kqp_qp_attr {
	__u32 qp_state;
	__u32 cur_qp_state;
	__u32 path_mtu;
	__u32 path_mig_state;
	__u32 qkey;
	__u32 rq_psn;
	__u32 sq_psn;
	__u32 dest_qp_num;
	__u32 qp_access_flags;
	__u16 pkey_index;
	__u16 alt_pkey_index;
	__u8 en_sqd_async_notify;
	__u8 sq_draining;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 min_rnr_timer;
	__u8 port_num;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 alt_port_num;
	__u8 alt_timeout;
	__u8 __reserved;
	struct kqp_ah_attr ah_attr;
	struct kqp_ah_attr alt_ah_attr;
};

/**
 * struct kqp_init_qp_attr - ioctl(KQP_IOCTL_INIT_QP_ATTR)
 * @size: sizeof(struct kqp_init_qp_attr)
 * @flags: must be 0
 * @id: handle of an id bound to a device
 * @qp_state: the state (enum ibv_qp_state) to compute attributes for
 * @out_attr_mask: enum ibv_qp_attr_mask bits valid in @out_attr
 * @__reserved: zero
 * @out_attr: the attributes rdma_cm would use
 *
 * For callers that create and transition their own QP, as
 * rdma_init_qp_attr(3).  EINVAL when the id is not bound.
 */
struct kqp_init_qp_attr {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 qp_state;
	__u32 out_attr_mask;
	__u32 __reserved;
	struct kqp_qp_attr out_attr;
};
#define KQP_IOCTL_INIT_QP_ATTR _IO(KQP_IOCTL_TYPE, KQP_CMD_INIT_QP_ATTR)

/**
 * struct kqp_notify - ioctl(KQP_IOCTL_NOTIFY)
 * @size: sizeof(struct kqp_notify)
 * @flags: must be 0
 * @id: handle
 * @event: enum ibv_event_type; rdma_cm acts on IBV_EVENT_COMM_EST
 */
struct kqp_notify {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 event;
};
#define KQP_IOCTL_NOTIFY _IO(KQP_IOCTL_TYPE, KQP_CMD_NOTIFY)

/**
 * struct kqp_join_mcast - ioctl(KQP_IOCTL_JOIN_MCAST)
 * @size: sizeof(struct kqp_join_mcast)
 * @flags: must be 0
 * @id: handle of a UD id
 * @join_flags: 0 full member, 1 send-only full member
 * @uid: caller's value, reported with the group's events
 * @out_mc_id: handle of the membership, among @id's; it moves with the id
 *	when the id migrates
 * @__reserved: zero
 * @addr: the group
 *
 * Completes with RDMA_CM_EVENT_MULTICAST_JOIN or MULTICAST_ERROR.
 */
struct kqp_join_mcast {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 join_flags;
	__aligned_u64 uid;
	__u32 out_mc_id;
	__u32 __reserved;
	struct __kernel_sockaddr_storage addr;
};
#define KQP_IOCTL_JOIN_MCAST _IO(KQP_IOCTL_TYPE, KQP_CMD_JOIN_MCAST)

/**
 * struct kqp_leave_mcast - ioctl(KQP_IOCTL_LEAVE_MCAST)
 * @size: sizeof(struct kqp_leave_mcast)
 * @flags: must be 0
 * @id: handle of the id that joined
 * @mc_id: handle from KQP_IOCTL_JOIN_MCAST
 * @out_events_reported: events reported for the membership
 * @__reserved: zero
 */
struct kqp_leave_mcast {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 mc_id;
	__u32 out_events_reported;
	__u32 __reserved;
};
#define KQP_IOCTL_LEAVE_MCAST _IO(KQP_IOCTL_TYPE, KQP_CMD_LEAVE_MCAST)

/**
 * struct kqp_migrate_id - ioctl(KQP_IOCTL_MIGRATE_ID)
 * @size: sizeof(struct kqp_migrate_id)
 * @flags: must be 0
 * @id: handle, in the file the ioctl is issued on
 * @fd: another open file of /dev/kqp to move the id to
 * @out_id: the id's handle in that file
 * @out_events_reported: events reported for the id so far, in its old
 *	file; its unreported events move with it
 *
 * EBADF if @fd is not open; EINVAL if it is not /dev/kqp.  Migrating to
 * the same file is allowed and changes nothing.
 */
struct kqp_migrate_id {
	__u32 size;
	__u32 flags;
	__u32 id;
	__s32 fd;
	__u32 out_id;
	__u32 out_events_reported;
};
#define KQP_IOCTL_MIGRATE_ID _IO(KQP_IOCTL_TYPE, KQP_CMD_MIGRATE_ID)

/**
 * struct kqp_get_event - ioctl(KQP_IOCTL_GET_EVENT)
 * @size: sizeof(struct kqp_get_event)
 * @flags: must be 0
 * @out_uid: the id's uid; the listener's for CONNECT_REQUEST; the
 *	membership's for MULTICAST_JOIN and MULTICAST_ERROR
 * @out_id: the id the event is for; for CONNECT_REQUEST, the new id
 * @out_listen_id: for CONNECT_REQUEST, the listening id
 * @out_mc_id: for multicast events, the membership
 * @out_event: enum rdma_cm_event_type
 * @out_status: the event's status (0, a negative errno, or a CM reject
 *	reason for REJECTED)
 * @out_qp_num: the peer's QP number
 * @out_qkey: UD events: the peer's Q_Key
 * @out_private_data_len: bytes valid in @out_private_data
 * @out_responder_resources: as in struct rdma_conn_param
 * @out_initiator_depth: as in struct rdma_conn_param
 * @out_flow_control: as in struct rdma_conn_param
 * @out_retry_count: as in struct rdma_conn_param
 * @out_rnr_retry_count: as in struct rdma_conn_param
 * @out_srq: as in struct rdma_conn_param
 * @out_is_ud: 1 when @out_ah_attr, @out_qp_num and @out_qkey are a UD
 *	event's parameters
 * @__reserved: zero
 * @out_ah_attr: UD events: how to reach the peer or group
 * @out_private_data: the private data the peer sent
 *
 * Reports the oldest event queued on the file.  Blocks until there is one,
 * unless the file is O_NONBLOCK (EAGAIN).  The file is poll()able: EPOLLIN
 * while an event is queued.  An event is taken off the queue only when
 * it was copied out, so EFAULT loses nothing.
 */
struct kqp_get_event {
	__u32 size;
	__u32 flags;
	__aligned_u64 out_uid;
	__u32 out_id;
	__u32 out_listen_id;
	__u32 out_mc_id;
	__u32 out_event;
	__s32 out_status;
	__u32 out_qp_num;
	__u32 out_qkey;
	__u32 out_private_data_len;
	__u8 out_responder_resources;
	__u8 out_initiator_depth;
	__u8 out_flow_control;
	__u8 out_retry_count;
	__u8 out_rnr_retry_count;
	__u8 out_srq;
	__u8 out_is_ud;
	__u8 __reserved;
	struct kqp_ah_attr out_ah_attr;
	__u8 out_private_data[KQP_MAX_PRIVATE_DATA];
};
#define KQP_IOCTL_GET_EVENT _IO(KQP_IOCTL_TYPE, KQP_CMD_GET_EVENT)

#endif /* _UAPI_RDMA_KQP_ABI_H */
