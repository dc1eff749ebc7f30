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
 *  - EPERM: the file's table belongs to another process.  A table (the
 *    objects of a group of files, see KQP_IOCTL_ATTACH) belongs to the
 *    process that made it, by issuing the first command that needed one;
 *    every command that uses the table (all but QUERY, the four device
 *    queries, ATTACH and CREATE_COMP_CHANNEL) fails with EPERM in any
 *    other process, such as a child after fork() or a process the file
 *    was passed to.  Such a process can close the file, and that is all.
 *    So can mmap() of its rings, which a child does not inherit either.
 *  - EINVAL: everything was understood, but a value is not valid.
 *  - ENOENT: a handle names nothing in this file, or an object of
 *    another type.
 *  - ENXIO: the object's RDMA device went away (after
 *    RDMA_CM_EVENT_DEVICE_REMOVAL); it can still be destroyed.  ucma
 *    answers ENXIO here too.
 *  - ENOMEM: out of memory.  Also: creating a CQ, QP or SRQ, or
 *    MODIFY_SRQ to a deeper SRQ, would take its user past the
 *    max_queue_bytes module parameter, which bounds the kernel memory of
 *    all of a user's queues together, as kqp estimates it from their
 *    capabilities (see kqp(7), MODULE PARAMETERS).  It is checked
 *    before the device allocates anything; nothing is created, and a
 *    refused resize leaves the SRQ as it was.
 *  - EMFILE: a command that creates an object (an id, PD, CQ, QP, SRQ,
 *    MR or AH) would take its user past the max_objects module parameter, which
 *    counts the objects of all of a user's tables together.  A
 *    connection request that would do so is rejected.
 *  - EAGAIN: creating a PD, CQ, QP, SRQ, MR or AH would take the caller's rdma
 *    cgroup past its rdma.max (hca_object for each of them, hca_handle
 *    for a table's first object on a device), as with uverbs.
 *  - ENODEV: a device index names no device the caller's network
 *    namespace may use (`rdma system set netns exclusive`).
 *
 * Errnos that rdma_cm itself returns (EADDRINUSE, EADDRNOTAVAIL,
 * ENETUNREACH, ...) are passed through unchanged, as ucma passes them to
 * librdmacm.
 *
 * Individual commands document further errnos of their own.
 */

/* The InfiniBand subsystem's ioctl type; ib_uverbs uses number 1 of it. */
#define KQP_IOCTL_TYPE 0x1b

/**
 * enum kqp_cmd - the command numbers of the KQP_IOCTL_* ioctls
 * @KQP_CMD_BASE: the first, well clear of ib_uverbs' number 1
 * @KQP_CMD_QUERY: KQP_IOCTL_QUERY
 * @KQP_CMD_CREATE_ID: KQP_IOCTL_CREATE_ID
 * @KQP_CMD_DESTROY_ID: KQP_IOCTL_DESTROY_ID
 * @KQP_CMD_BIND_ADDR: KQP_IOCTL_BIND_ADDR
 * @KQP_CMD_RESOLVE_ADDR: KQP_IOCTL_RESOLVE_ADDR
 * @KQP_CMD_RESOLVE_ROUTE: KQP_IOCTL_RESOLVE_ROUTE
 * @KQP_CMD_QUERY_ID: KQP_IOCTL_QUERY_ID
 * @KQP_CMD_LISTEN: KQP_IOCTL_LISTEN
 * @KQP_CMD_CONNECT: KQP_IOCTL_CONNECT
 * @KQP_CMD_ACCEPT: KQP_IOCTL_ACCEPT
 * @KQP_CMD_REJECT: KQP_IOCTL_REJECT
 * @KQP_CMD_DISCONNECT: KQP_IOCTL_DISCONNECT
 * @KQP_CMD_SET_OPTION: KQP_IOCTL_SET_OPTION
 * @KQP_CMD_INIT_QP_ATTR: KQP_IOCTL_INIT_QP_ATTR
 * @KQP_CMD_NOTIFY: KQP_IOCTL_NOTIFY
 * @KQP_CMD_ESTABLISH: KQP_IOCTL_ESTABLISH
 * @KQP_CMD_JOIN_MCAST: KQP_IOCTL_JOIN_MCAST
 * @KQP_CMD_LEAVE_MCAST: KQP_IOCTL_LEAVE_MCAST
 * @KQP_CMD_MIGRATE_ID: KQP_IOCTL_MIGRATE_ID
 * @KQP_CMD_GET_EVENT: KQP_IOCTL_GET_EVENT
 * @KQP_CMD_ATTACH: KQP_IOCTL_ATTACH
 * @KQP_CMD_CTX_INFO: KQP_IOCTL_CTX_INFO
 * @KQP_CMD_QUERY_DEVICE: KQP_IOCTL_QUERY_DEVICE
 * @KQP_CMD_QUERY_PORT: KQP_IOCTL_QUERY_PORT
 * @KQP_CMD_QUERY_GID: KQP_IOCTL_QUERY_GID
 * @KQP_CMD_QUERY_PKEY: KQP_IOCTL_QUERY_PKEY
 * @KQP_CMD_ALLOC_PD: KQP_IOCTL_ALLOC_PD
 * @KQP_CMD_DEALLOC_PD: KQP_IOCTL_DEALLOC_PD
 * @KQP_CMD_CREATE_COMP_CHANNEL: KQP_IOCTL_CREATE_COMP_CHANNEL
 * @KQP_CMD_CREATE_CQ: KQP_IOCTL_CREATE_CQ
 * @KQP_CMD_DESTROY_CQ: KQP_IOCTL_DESTROY_CQ
 * @KQP_CMD_FLUSH_CQ: KQP_IOCTL_FLUSH_CQ
 * @KQP_CMD_CREATE_QP: KQP_IOCTL_CREATE_QP
 * @KQP_CMD_DESTROY_QP: KQP_IOCTL_DESTROY_QP
 * @KQP_CMD_MODIFY_QP: KQP_IOCTL_MODIFY_QP
 * @KQP_CMD_QUERY_QP: KQP_IOCTL_QUERY_QP
 * @KQP_CMD_POST_SEND: KQP_IOCTL_POST_SEND
 * @KQP_CMD_POST_RECV: KQP_IOCTL_POST_RECV
 * @KQP_CMD_CREATE_ASYNC_FD: KQP_IOCTL_CREATE_ASYNC_FD
 * @KQP_CMD_REG_MR: KQP_IOCTL_REG_MR
 * @KQP_CMD_DEREG_MR: KQP_IOCTL_DEREG_MR
 * @KQP_CMD_CREATE_AH: KQP_IOCTL_CREATE_AH
 * @KQP_CMD_DESTROY_AH: KQP_IOCTL_DESTROY_AH
 * @KQP_CMD_ATTACH_MCAST: KQP_IOCTL_ATTACH_MCAST
 * @KQP_CMD_DETACH_MCAST: KQP_IOCTL_DETACH_MCAST
 * @KQP_CMD_CREATE_SRQ: KQP_IOCTL_CREATE_SRQ
 * @KQP_CMD_DESTROY_SRQ: KQP_IOCTL_DESTROY_SRQ
 * @KQP_CMD_MODIFY_SRQ: KQP_IOCTL_MODIFY_SRQ
 * @KQP_CMD_QUERY_SRQ: KQP_IOCTL_QUERY_SRQ
 * @KQP_CMD_POST_SRQ_RECV: KQP_IOCTL_POST_SRQ_RECV
 * @KQP_CMD_DOORBELL: KQP_IOCTL_DOORBELL
 * @KQP_CMD_CREATE_POLLER: KQP_IOCTL_CREATE_POLLER
 * @KQP_CMD_MAX: one past the last command
 */
enum kqp_cmd {
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
	KQP_CMD_ATTACH,
	KQP_CMD_CTX_INFO,
	KQP_CMD_QUERY_DEVICE,
	KQP_CMD_QUERY_PORT,
	KQP_CMD_QUERY_GID,
	KQP_CMD_QUERY_PKEY,
	KQP_CMD_ALLOC_PD,
	KQP_CMD_DEALLOC_PD,
	KQP_CMD_CREATE_COMP_CHANNEL,
	KQP_CMD_CREATE_CQ,
	KQP_CMD_DESTROY_CQ,
	KQP_CMD_FLUSH_CQ,
	KQP_CMD_CREATE_QP,
	KQP_CMD_DESTROY_QP,
	KQP_CMD_MODIFY_QP,
	KQP_CMD_QUERY_QP,
	KQP_CMD_POST_SEND,
	KQP_CMD_POST_RECV,
	KQP_CMD_CREATE_ASYNC_FD,
	KQP_CMD_REG_MR,
	KQP_CMD_DEREG_MR,
	KQP_CMD_CREATE_AH,
	KQP_CMD_DESTROY_AH,
	KQP_CMD_ATTACH_MCAST,
	KQP_CMD_DETACH_MCAST,
	KQP_CMD_CREATE_SRQ,
	KQP_CMD_DESTROY_SRQ,
	KQP_CMD_MODIFY_SRQ,
	KQP_CMD_QUERY_SRQ,
	KQP_CMD_POST_SRQ_RECV,
	KQP_CMD_DOORBELL,
	KQP_CMD_CREATE_POLLER,
	KQP_CMD_MAX,
};

/**
 * enum kqp_features - feature bits reported by KQP_IOCTL_QUERY
 * @KQP_FEATURES_NONE: none are defined yet
 */
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
 * @dgid: destination GID
 * @sgid: source GID
 * @dlid: destination LID
 * @slid: source LID
 * @flow_label: GRH flow label
 * @pkey: P_Key
 * @raw_traffic: 1 for raw (non-IB) traffic
 * @hop_limit: GRH hop limit
 * @traffic_class: GRH traffic class
 * @reversible: 1 if the path can be used in the other direction
 * @numb_path: paths requested or found
 * @sl: service level
 * @mtu_selector: how @mtu is compared (SA selector)
 * @mtu: path MTU, enum ibv_mtu
 * @rate_selector: how @rate is compared (SA selector)
 * @rate: static rate, enum ibv_rate
 * @packet_life_time_selector: how @packet_life_time is compared
 * @packet_life_time: packet lifetime, 4.096 us * 2^value
 * @preference: the SA's order of preference
 * @__reserved: zero
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
 * @private_data_len: at most 255, as rdma_cm's length is a u8 (EINVAL
 *	beyond it); rdma_cm applies the transport's own, smaller, limit
 *	(EINVAL beyond it too)
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
 * @private_data_len: at most 255, as for struct kqp_conn_param
 * @private_data: user pointer, or 0
 *
 * REJECT answers a connection request (an id from
 * RDMA_CM_EVENT_CONNECT_REQUEST, before ACCEPT) or a connection response
 * (an active id after RDMA_CM_EVENT_CONNECT_RESPONSE, before ESTABLISH);
 * ACCEPT only the first, ESTABLISH only the second.  Any other id, such
 * as an active id whose request has had no answer yet or an id already
 * accepted, gets EINVAL: rdma_cm would send a REJ (a failed accept sends
 * one too) but leave the id's own request or reply retrying, and
 * destroying the id would then sleep until those retries ran out (over a
 * minute).  Destroy such an id instead; that cancels the retries and
 * rejects for you.
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
#define KQP_OPTION_IB			1
#define KQP_OPTION_IB_PATH		1	/* struct ib_path_rec_data[] */
/* The most path records one KQP_OPTION_IB_PATH takes. */
#define KQP_OPTION_IB_PATH_MAX		16

/**
 * struct kqp_set_option - ioctl(KQP_IOCTL_SET_OPTION)
 * @size: sizeof(struct kqp_set_option)
 * @flags: must be 0
 * @id: handle
 * @level: KQP_OPTION_ID or KQP_OPTION_IB
 * @optname: KQP_OPTION_ID_* or KQP_OPTION_IB_PATH
 * @optlen: size of the value at @optval: exactly the option's size, or
 *	for KQP_OPTION_IB_PATH 1 to KQP_OPTION_IB_PATH_MAX whole records
 * @optval: user pointer to the value
 *
 * ENOSYS for an option this module does not implement, as ucma; EINVAL
 * for a wrong @optlen; REUSEADDR and AFONLY after bind get rdma_cm's
 * EINVAL.  ACK_TIMEOUT is the IBTA's 5-bit field: EINVAL past 31 (ucma
 * takes any byte).
 *
 * KQP_OPTION_IB_PATH gives an id whose address is resolved its route
 * instead of rdma_resolve_route(), as ucma's: the first record flagged
 * exactly GMP, PRIMARY and BIDIRECTIONAL (<rdma/ib_user_sa.h>) is the
 * path, and ROUTE_RESOLVED is queued before the call returns.  EINVAL
 * when no record is so flagged, when its packet lifetime is past 31 or
 * its MTU none of IB's, when the address is not resolved, or when the
 * route is (or is being) resolved already, or once was; ucma takes any
 * number of records, and any lifetime and MTU.
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
 * @dgid: GRH: destination GID
 * @flow_label: GRH: flow label
 * @dlid: destination LID
 * @sgid_index: GRH: source GID index in the port's table
 * @hop_limit: GRH: hop limit
 * @traffic_class: GRH: traffic class
 * @sl: service level
 * @src_path_bits: source path bits
 * @static_rate: static rate, enum ibv_rate
 * @is_global: 1: the GRH fields are used (always on RoCE)
 * @port_num: the port, from 1
 * @__reserved: zero
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
 * enum kqp_qp_state - a QP's state (struct kqp_qp_attr's @qp_state)
 * @KQP_QPS_RESET: reset: no work is kept
 * @KQP_QPS_INIT: initialised: receives may be posted
 * @KQP_QPS_RTR: ready to receive
 * @KQP_QPS_RTS: ready to send
 * @KQP_QPS_SQD: send queue drained
 * @KQP_QPS_SQE: send queue error (UD)
 * @KQP_QPS_ERR: error: posted work completes flushed
 *
 * The values are libibverbs' enum ibv_qp_state and ib_core's enum
 * ib_qp_state.
 */
enum kqp_qp_state {
	KQP_QPS_RESET = 0,
	KQP_QPS_INIT = 1,
	KQP_QPS_RTR = 2,
	KQP_QPS_RTS = 3,
	KQP_QPS_SQD = 4,
	KQP_QPS_SQE = 5,
	KQP_QPS_ERR = 6,
};

/**
 * enum kqp_qp_attr_mask - which attributes of a struct kqp_qp_attr count
 * @KQP_QP_ATTR_STATE: @qp_state
 * @KQP_QP_ATTR_CUR_STATE: @cur_qp_state
 * @KQP_QP_ATTR_EN_SQD_ASYNC_NOTIFY: @en_sqd_async_notify
 * @KQP_QP_ATTR_ACCESS_FLAGS: @qp_access_flags
 * @KQP_QP_ATTR_PKEY_INDEX: @pkey_index
 * @KQP_QP_ATTR_PORT: @port_num
 * @KQP_QP_ATTR_QKEY: @qkey
 * @KQP_QP_ATTR_AV: @ah_attr
 * @KQP_QP_ATTR_PATH_MTU: @path_mtu
 * @KQP_QP_ATTR_TIMEOUT: @timeout
 * @KQP_QP_ATTR_RETRY_CNT: @retry_cnt
 * @KQP_QP_ATTR_RNR_RETRY: @rnr_retry
 * @KQP_QP_ATTR_RQ_PSN: @rq_psn
 * @KQP_QP_ATTR_MAX_QP_RD_ATOMIC: @max_rd_atomic
 * @KQP_QP_ATTR_ALT_PATH: @alt_ah_attr, @alt_pkey_index, @alt_port_num
 *	and @alt_timeout
 * @KQP_QP_ATTR_MIN_RNR_TIMER: @min_rnr_timer
 * @KQP_QP_ATTR_SQ_PSN: @sq_psn
 * @KQP_QP_ATTR_MAX_DEST_RD_ATOMIC: @max_dest_rd_atomic
 * @KQP_QP_ATTR_PATH_MIG_STATE: @path_mig_state
 * @KQP_QP_ATTR_CAP: the capabilities
 * @KQP_QP_ATTR_DEST_QPN: @dest_qp_num
 *
 * The bits are libibverbs' enum ibv_qp_attr_mask and ib_core's enum
 * ib_qp_attr_mask.
 */
enum kqp_qp_attr_mask {
	KQP_QP_ATTR_STATE = 1 << 0,
	KQP_QP_ATTR_CUR_STATE = 1 << 1,
	KQP_QP_ATTR_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	KQP_QP_ATTR_ACCESS_FLAGS = 1 << 3,
	KQP_QP_ATTR_PKEY_INDEX = 1 << 4,
	KQP_QP_ATTR_PORT = 1 << 5,
	KQP_QP_ATTR_QKEY = 1 << 6,
	KQP_QP_ATTR_AV = 1 << 7,
	KQP_QP_ATTR_PATH_MTU = 1 << 8,
	KQP_QP_ATTR_TIMEOUT = 1 << 9,
	KQP_QP_ATTR_RETRY_CNT = 1 << 10,
	KQP_QP_ATTR_RNR_RETRY = 1 << 11,
	KQP_QP_ATTR_RQ_PSN = 1 << 12,
	KQP_QP_ATTR_MAX_QP_RD_ATOMIC = 1 << 13,
	KQP_QP_ATTR_ALT_PATH = 1 << 14,
	KQP_QP_ATTR_MIN_RNR_TIMER = 1 << 15,
	KQP_QP_ATTR_SQ_PSN = 1 << 16,
	KQP_QP_ATTR_MAX_DEST_RD_ATOMIC = 1 << 17,
	KQP_QP_ATTR_PATH_MIG_STATE = 1 << 18,
	KQP_QP_ATTR_CAP = 1 << 19,
	KQP_QP_ATTR_DEST_QPN = 1 << 20,
};

/**
 * struct kqp_qp_attr - QP attributes, as struct ibv_qp_attr
 * @qp_state: enum kqp_qp_state
 * @cur_qp_state: enum kqp_qp_state
 * @path_mtu: enum ibv_mtu
 * @path_mig_state: enum ibv_mig_state
 * @qkey: Q_Key (UD)
 * @rq_psn: receive queue PSN
 * @sq_psn: send queue PSN
 * @dest_qp_num: the peer's QP number (RC)
 * @qp_access_flags: enum ibv_access_flags
 * @pkey_index: P_Key index
 * @alt_pkey_index: alternate path's P_Key index
 * @en_sqd_async_notify: notify when the send queue drained
 * @sq_draining: the send queue is draining (query only)
 * @max_rd_atomic: outstanding RDMA reads and atomics as initiator
 * @max_dest_rd_atomic: outstanding RDMA reads and atomics as target
 * @min_rnr_timer: minimum RNR NAK timer (IBTA encoding)
 * @port_num: primary path's port
 * @timeout: local ack timeout, 4.096 us * 2^value
 * @retry_cnt: transport retries
 * @rnr_retry: RNR retries (7: infinite)
 * @alt_port_num: alternate path's port
 * @alt_timeout: alternate path's local ack timeout
 * @__reserved: zero
 * @ah_attr: primary path's address vector
 * @alt_ah_attr: alternate path's address vector
 *
 * Only the attributes named by the accompanying mask (enum
 * kqp_qp_attr_mask bits) are meaningful.
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
 * @qp_state: the state (enum kqp_qp_state) to compute attributes for
 * @out_attr_mask: enum kqp_qp_attr_mask bits valid in @out_attr
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
 *
 * With IBV_EVENT_COMM_EST on an InfiniBand or RoCE device, NOTIFY returns
 * once the id's next event (RDMA_CM_EVENT_ESTABLISHED, or whatever the
 * peer sent instead) is queued, or after 5 s: until then the connection's
 * REP may still be retrying, and a DISCONNECT or destroy would leave it
 * retrying for over a minute.
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
 * Completes with RDMA_CM_EVENT_MULTICAST_JOIN or MULTICAST_ERROR.  It
 * does not attach the id's QP to the group: the caller does, with the
 * GID and LID the MULTICAST_JOIN event gives (KQP_IOCTL_ATTACH_MCAST), as
 * librdmacm does with ibv_attach_mcast().  EADDRINUSE if the id is in
 * the group already: rdma_cm tells memberships apart by address only.
 * ENOSPC if the id is in max_mcast (a module parameter) groups already.
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

/**
 * DOC: Verbs objects
 *
 * PDs, CQs and QPs live in the kernel, in a table of handles that a group
 * of files can share: a file attached to another (KQP_IOCTL_ATTACH) uses
 * the other's table, so an event channel's ids can use the PDs and CQs
 * created through the file the library keeps for its verbs.  The table
 * and everything in it go with the last file that uses it; ids go with
 * the file that owns them.
 *
 * A QP made with KQP_CREATE_QP_RINGS has submission rings, mapped the
 * same way at &struct kqp_qp_ring_info.mmap_offset: userspace is their
 * producer and rings KQP_IOCTL_DOORBELL; see struct kqp_wq_ring_hdr.
 * KQP_IOCTL_POST_SEND and KQP_IOCTL_POST_RECV work on such a QP too, and
 * post after whatever its rings' drains already took.
 *
 * Completions are reaped from a ring the kernel fills and userspace maps
 * (mmap of the file at &struct kqp_ring_info.mmap_offset, MAP_SHARED,
 * readable and writable, not executable, exactly mmap_size bytes).  The
 * kernel is the only producer: it writes entries, then the tail with
 * release semantics.  Userspace is the only consumer: it reads the tail
 * with acquire semantics, reads entries, then stores the head with
 * release semantics.  The kernel reads the head only to learn how much
 * room there is, and treats an impossible value as a full ring.
 *
 * A CQ is armed by storing a new value in the ring's arm word: an
 * increasing sequence in bits 31..1 and KQP_CQ_ARM_SOLICITED in bit 0.
 * The kernel fires the CQ's completion channel once for each new arm value,
 * when it adds a completion that matches it.  Userspace must issue a full
 * memory barrier between storing the arm word and looking at the tail
 * again; the kernel issues one between storing the tail and reading the
 * arm word.
 *
 * ENXIO: the object's device went away; the object can still be destroyed.
 * EBUSY: destroying an object that another object still uses.
 */

/**
 * struct kqp_attach - ioctl(KQP_IOCTL_ATTACH): share @fd's table
 * @size: sizeof(struct kqp_attach)
 * @flags: must be 0
 * @fd: an open file of /dev/kqp whose table this file is to use
 * @__reserved: zero
 *
 * EBUSY if this file has objects.
 */
struct kqp_attach {
	__u32 size;
	__u32 flags;
	__s32 fd;
	__u32 __reserved;
};

#define KQP_IOCTL_ATTACH _IO(KQP_IOCTL_TYPE, KQP_CMD_ATTACH)

/**
 * struct kqp_ctx_info - ioctl(KQP_IOCTL_CTX_INFO): what the table holds
 * @size: sizeof(struct kqp_ctx_info)
 * @flags: must be 0
 * @out_cm_ids: CM ids
 * @out_pds: PDs, default ones included
 * @out_default_pds: default PDs
 * @out_cqs: CQs
 * @out_qps: QPs
 * @out_files: files sharing the table
 * @out_mrs: MRs
 * @out_ahs: AHs
 * @out_objects: handles in use, counted against max_objects
 * @__reserved: zero
 * @out_mr_bytes: bytes registered, in whole pages, counted against
 *	max_mr_bytes
 * @out_poller: 1 if the table has a live poller (KQP_IOCTL_CREATE_POLLER)
 * @out_poller_wakeups: times the poller woke from sleep
 * @out_poller_entries: ring entries the poller drained
 * @out_poller_busy_ns: time the poller spent awake, up to its last sleep
 */
struct kqp_ctx_info {
	__u32 size;
	__u32 flags;
	__u32 out_cm_ids;
	__u32 out_pds;
	__u32 out_default_pds;
	__u32 out_cqs;
	__u32 out_qps;
	__u32 out_files;
	__u32 out_mrs;
	__u32 out_ahs;
	__u32 out_objects;
	__u32 __reserved;
	__aligned_u64 out_mr_bytes;
	__u32 out_poller;
	__u32 out_poller_wakeups;
	__aligned_u64 out_poller_entries;
	__aligned_u64 out_poller_busy_ns;
};

#define KQP_IOCTL_CTX_INFO _IO(KQP_IOCTL_TYPE, KQP_CMD_CTX_INFO)

/**
 * struct kqp_query_device - ioctl(KQP_IOCTL_QUERY_DEVICE)
 * @size: sizeof(struct kqp_query_device)
 * @flags: must be 0
 * @device_index: the device
 * @__reserved: zero
 * @out_fw_ver: firmware version: bits 63..32, 31..16 and 15..0 are its
 *	three numbers
 * @out_node_guid: node GUID, network byte order
 * @out_sys_image_guid: system image GUID, network byte order
 * @out_max_mr_size: largest MR, in bytes
 * @out_page_size_cap: page sizes the device supports, a bit each
 * @out_device_cap_flags: enum ibv_device_cap_flags
 * @out_vendor_id: IEEE vendor ID
 * @out_vendor_part_id: vendor's part ID
 * @out_hw_ver: hardware version
 * @out_max_qp: QPs
 * @out_max_qp_wr: work requests per queue
 * @out_max_sge: SGEs per work request
 * @out_max_sge_rd: SGEs per RDMA read
 * @out_max_cq: CQs
 * @out_max_cqe: entries per CQ
 * @out_max_mr: MRs
 * @out_max_pd: PDs
 * @out_max_qp_rd_atom: RDMA reads and atomics a QP takes as target
 * @out_max_ee_rd_atom: likewise per EE context
 * @out_max_res_rd_atom: resources for incoming RDMA reads and atomics
 * @out_max_qp_init_rd_atom: RDMA reads and atomics a QP issues at once
 * @out_max_ee_init_rd_atom: likewise per EE context
 * @out_atomic_cap: enum ibv_atomic_cap
 * @out_max_ee: EE contexts
 * @out_max_rdd: RD domains
 * @out_max_mw: memory windows
 * @out_max_raw_ipv6_qp: raw IPv6 QPs
 * @out_max_raw_ethy_qp: raw Ethertype QPs
 * @out_max_mcast_grp: multicast groups
 * @out_max_mcast_qp_attach: QPs per multicast group
 * @out_max_total_mcast_qp_attach: QP attachments to groups in all
 * @out_max_ah: AHs
 * @out_max_srq: SRQs
 * @out_max_srq_wr: work requests per SRQ
 * @out_max_srq_sge: SGEs per SRQ work request
 * @out_max_pkeys: P_Key table entries
 * @out_local_ca_ack_delay: local CA ack delay (IBTA encoding)
 * @out_phys_port_cnt: physical ports, numbered from 1
 *
 * The device's attributes, as struct ibv_device_attr, as far as kqp
 * implements them: the flags of features kqp does not implement (memory
 * windows, XRC, raw packet QPs, ...) are clear, and their limits
 * (@out_max_mw, the EE, RDD and raw QP ones) 0.  SRQs are the device's,
 * and IBV_DEVICE_SRQ_RESIZE is passed on (KQP_IOCTL_MODIFY_SRQ).  ENODEV if
 * @device_index names no device.
 */
struct kqp_query_device {
	__u32 size;
	__u32 flags;
	__u32 device_index;
	__u32 __reserved;
	__aligned_u64 out_fw_ver;
	__aligned_u64 out_node_guid;
	__aligned_u64 out_sys_image_guid;
	__aligned_u64 out_max_mr_size;
	__aligned_u64 out_page_size_cap;
	__aligned_u64 out_device_cap_flags;
	__u32 out_vendor_id;
	__u32 out_vendor_part_id;
	__u32 out_hw_ver;
	__u32 out_max_qp;
	__u32 out_max_qp_wr;
	__u32 out_max_sge;
	__u32 out_max_sge_rd;
	__u32 out_max_cq;
	__u32 out_max_cqe;
	__u32 out_max_mr;
	__u32 out_max_pd;
	__u32 out_max_qp_rd_atom;
	__u32 out_max_ee_rd_atom;
	__u32 out_max_res_rd_atom;
	__u32 out_max_qp_init_rd_atom;
	__u32 out_max_ee_init_rd_atom;
	__u32 out_atomic_cap;
	__u32 out_max_ee;
	__u32 out_max_rdd;
	__u32 out_max_mw;
	__u32 out_max_raw_ipv6_qp;
	__u32 out_max_raw_ethy_qp;
	__u32 out_max_mcast_grp;
	__u32 out_max_mcast_qp_attach;
	__u32 out_max_total_mcast_qp_attach;
	__u32 out_max_ah;
	__u32 out_max_srq;
	__u32 out_max_srq_wr;
	__u32 out_max_srq_sge;
	__u16 out_max_pkeys;
	__u8 out_local_ca_ack_delay;
	__u8 out_phys_port_cnt;
};

#define KQP_IOCTL_QUERY_DEVICE _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY_DEVICE)

/**
 * struct kqp_query_port - ioctl(KQP_IOCTL_QUERY_PORT)
 * @size: sizeof(struct kqp_query_port)
 * @flags: must be 0
 * @device_index: the device
 * @port_num: the port, from 1
 * @out_state: enum ibv_port_state
 * @out_max_mtu: enum ibv_mtu
 * @out_active_mtu: enum ibv_mtu
 * @out_gid_tbl_len: GID table entries
 * @out_port_cap_flags: enum ibv_port_cap_flags
 * @out_max_msg_sz: largest message, in bytes
 * @out_bad_pkey_cntr: bad P_Key counter
 * @out_qkey_viol_cntr: Q_Key violation counter
 * @out_lid: the port's LID, host byte order
 * @out_sm_lid: the subnet manager's LID
 * @out_pkey_tbl_len: P_Key table entries
 * @out_active_speed: as ibv_port_attr's active_speed
 * @out_lmc: LID mask control
 * @out_max_vl_num: virtual lanes
 * @out_sm_sl: the subnet manager's service level
 * @out_subnet_timeout: subnet propagation delay (IBTA encoding)
 * @out_init_type_reply: InitTypeReply
 * @out_active_width: as ibv_port_attr's active_width
 * @out_phys_state: physical port state (IBTA encoding)
 * @out_link_layer: KQP_LINK_LAYER_*
 * @out_port_cap_flags2: enum ibv_port_cap_flags2
 * @__reserved: zero
 * @out_flags: KQP_PORT_* (ibv_port_attr's flags); added after the first
 *	version: the caller sets it to 0, which a kernel without it leaves
 *	(and a non-zero value there is E2BIG to such a kernel)
 *
 * A port's attributes, as struct ibv_port_attr.  EINVAL for a port the
 * device does not have.
 */
struct kqp_query_port {
	__u32 size;
	__u32 flags;
	__u32 device_index;
	__u32 port_num;
	__u32 out_state;
	__u32 out_max_mtu;
	__u32 out_active_mtu;
	__u32 out_gid_tbl_len;
	__u32 out_port_cap_flags;
	__u32 out_max_msg_sz;
	__u32 out_bad_pkey_cntr;
	__u32 out_qkey_viol_cntr;
	__u32 out_lid;
	__u32 out_sm_lid;
	__u16 out_pkey_tbl_len;
	__u16 out_active_speed;
	__u8 out_lmc;
	__u8 out_max_vl_num;
	__u8 out_sm_sl;
	__u8 out_subnet_timeout;
	__u8 out_init_type_reply;
	__u8 out_active_width;
	__u8 out_phys_state;
	__u8 out_link_layer;
	__u32 out_port_cap_flags2;
	__u32 __reserved;
	__u32 out_flags;
};

#define KQP_IOCTL_QUERY_PORT _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY_PORT)

/* Port flags, as IBV_QPF_*: every address on the port needs a GRH (RoCE). */
#define KQP_PORT_GRH_REQUIRED		(1U << 0)

/* Link layers, as IBV_LINK_LAYER_*. */
#define KQP_LINK_LAYER_INFINIBAND	1
#define KQP_LINK_LAYER_ETHERNET		2

/**
 * struct kqp_query_gid - ioctl(KQP_IOCTL_QUERY_GID)
 * @size: sizeof(struct kqp_query_gid)
 * @flags: must be 0
 * @device_index: the device
 * @port_num: the port, from 1
 * @index: the entry
 * @out_gid_type: enum ibv_gid_type
 * @out_gid: the GID, network byte order
 *
 * One GID table entry and its type (IB, RoCE v1, RoCE v2: the values of
 * enum ibv_gid_type).  EINVAL for an index past the table; an unused
 * entry reads as zero, as in libibverbs.
 */
struct kqp_query_gid {
	__u32 size;
	__u32 flags;
	__u32 device_index;
	__u32 port_num;
	__u32 index;
	__u32 out_gid_type;
	__u8 out_gid[16];
};

#define KQP_IOCTL_QUERY_GID _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY_GID)

/**
 * struct kqp_query_pkey - ioctl(KQP_IOCTL_QUERY_PKEY): one P_Key
 * @size: sizeof(struct kqp_query_pkey)
 * @flags: must be 0
 * @device_index: the device
 * @port_num: the port, from 1
 * @index: the P_Key table entry
 * @out_pkey: the P_Key, host byte order
 */
struct kqp_query_pkey {
	__u32 size;
	__u32 flags;
	__u32 device_index;
	__u32 port_num;
	__u32 index;
	__u32 out_pkey;
};

#define KQP_IOCTL_QUERY_PKEY _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY_PKEY)

/* Get the table's default PD for the device instead of a new PD. */
#define KQP_ALLOC_PD_DEFAULT	(1U << 0)

/**
 * struct kqp_alloc_pd - ioctl(KQP_IOCTL_ALLOC_PD)
 * @size: sizeof(struct kqp_alloc_pd)
 * @flags: KQP_ALLOC_PD_DEFAULT or 0
 * @device_index: the device
 * @out_pd: handle
 * @__reserved_out: zero, in and out.  It once carried the PD's
 *	local_dma_lkey, a key that lets the device reach any memory the
 *	kernel can map; the kernel no longer hands it to userspace, where
 *	no request may name it anyway (KQP_IOCTL_POST_SEND's EINVAL).
 * @__reserved: zero
 *
 * With KQP_ALLOC_PD_DEFAULT, the device's default PD in this table, one
 * per device: the same handle each time, one more reference each time.
 * KQP_IOCTL_DEALLOC_PD drops one; the PD goes with the last of these and
 * of the QPs using it.  A QP created on an id with no PD uses it too.
 */
struct kqp_alloc_pd {
	__u32 size;
	__u32 flags;
	__u32 device_index;
	__u32 out_pd;
	__u32 __reserved_out;
	__u32 __reserved;
};

#define KQP_IOCTL_ALLOC_PD _IO(KQP_IOCTL_TYPE, KQP_CMD_ALLOC_PD)

/**
 * struct kqp_dealloc_pd - ioctl(KQP_IOCTL_DEALLOC_PD)
 * @size: sizeof(struct kqp_dealloc_pd)
 * @flags: must be 0
 * @pd: handle
 * @__reserved: zero
 *
 * EBUSY while a QP uses the PD (or, for the default PD, EINVAL when no
 * reference from KQP_ALLOC_PD_DEFAULT is left).
 */
struct kqp_dealloc_pd {
	__u32 size;
	__u32 flags;
	__u32 pd;
	__u32 __reserved;
};

#define KQP_IOCTL_DEALLOC_PD _IO(KQP_IOCTL_TYPE, KQP_CMD_DEALLOC_PD)

/**
 * struct kqp_create_comp_channel - ioctl(KQP_IOCTL_CREATE_COMP_CHANNEL)
 * @size: sizeof(struct kqp_create_comp_channel)
 * @flags: must be 0
 * @out_fd: a new file descriptor (O_CLOEXEC): poll()able, and read()
 *	gives one struct kqp_comp_event per call (EAGAIN if O_NONBLOCK and
 *	none is waiting; EINVAL for a buffer smaller than one)
 * @__reserved: zero
 */
struct kqp_create_comp_channel {
	__u32 size;
	__u32 flags;
	__s32 out_fd;
	__u32 __reserved;
};

#define KQP_IOCTL_CREATE_COMP_CHANNEL \
	_IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_COMP_CHANNEL)

/*
 * A CQ keeps at most KQP_CQ_MAX_PENDING_EVENTS unread notifications on its
 * channel; the reader was woken by the first of them, and further ones
 * are dropped until it reads some.
 */
#define KQP_CQ_MAX_PENDING_EVENTS 4096

/**
 * struct kqp_comp_event - what read() of a completion channel gives: an
 *	armed CQ fired
 * @cq_uid: the CQ's uid (struct kqp_create_cq)
 * @cq: the CQ's handle
 * @__reserved: zero
 */
struct kqp_comp_event {
	__aligned_u64 cq_uid;
	__u32 cq;
	__u32 __reserved;
};

#define KQP_CQ_ARM_SOLICITED	(1U << 0)

/* Ring flags: completions wait in the kernel; call KQP_IOCTL_FLUSH_CQ. */
#define KQP_CQ_RING_OVERFLOW	(1U << 0)

/**
 * struct kqp_cq_ring_hdr - the start of a CQ ring mapping
 * @head: consumer index, written by userspace
 * @arm: arm word, written by userspace
 * @__pad0: keeps the consumer's half on its own line
 * @tail: producer index, written by the kernel
 * @flags: KQP_CQ_RING_*, written by the kernel
 * @__pad1: keeps the producer's half on its own line
 *
 * Indices count entries since creation and wrap at 2^32; entry i is at
 * cqes[i & (entries - 1)].  The two halves are on separate 128-byte
 * lines so the producer and the consumer do not share one.
 */
struct kqp_cq_ring_hdr {
	__u32 head;
	__u32 arm;
	__u8 __pad0[120];
	__u32 tail;
	__u32 flags;
	__u8 __pad1[120];
};

/**
 * enum kqp_wc_opcode - what a completion (struct kqp_cqe) completed
 * @KQP_WC_OP_SEND: a send
 * @KQP_WC_OP_RDMA_WRITE: an RDMA write, with or without immediate data
 * @KQP_WC_OP_RDMA_READ: an RDMA read
 * @KQP_WC_OP_COMP_SWAP: an atomic compare and swap
 * @KQP_WC_OP_FETCH_ADD: an atomic fetch and add
 * @KQP_WC_OP_RECV: a receive; also the bit every receive opcode has
 * @KQP_WC_OP_RECV_RDMA_WITH_IMM: a receive consumed by an RDMA write with
 *	immediate data
 *
 * The values are libibverbs' enum ibv_wc_opcode, and ib_core's enum
 * ib_wc_opcode: a completion's opcode passes through both unchanged.
 */
enum kqp_wc_opcode {
	KQP_WC_OP_SEND = 0,
	KQP_WC_OP_RDMA_WRITE = 1,
	KQP_WC_OP_RDMA_READ = 2,
	KQP_WC_OP_COMP_SWAP = 3,
	KQP_WC_OP_FETCH_ADD = 4,
	KQP_WC_OP_RECV = 1 << 7,
	KQP_WC_OP_RECV_RDMA_WITH_IMM = (1 << 7) + 1,
};

/**
 * enum kqp_wc_flags - struct kqp_cqe's wc_flags
 * @KQP_WC_FLAG_GRH: the receive buffer starts with the 40 bytes of a GRH
 *	(or, RoCE v2 over IPv4, the IPv4 header in their last 20)
 * @KQP_WC_FLAG_WITH_IMM: imm_data holds immediate data
 * @KQP_WC_FLAG_IP_CSUM_OK: the device checked the IP checksum
 * @KQP_WC_FLAG_WITH_INV: imm_data holds the rkey a send invalidated
 *
 * The values are libibverbs' enum ibv_wc_flags.
 */
enum kqp_wc_flags {
	KQP_WC_FLAG_GRH = 1 << 0,
	KQP_WC_FLAG_WITH_IMM = 1 << 1,
	KQP_WC_FLAG_IP_CSUM_OK = 1 << 2,
	KQP_WC_FLAG_WITH_INV = 1 << 3,
};

/**
 * enum kqp_wc_status - how a work request completed (struct kqp_cqe)
 * @KQP_WC_SUCCESS: it did what was asked
 * @KQP_WC_LOC_LEN_ERR: a length did not fit (a receive too small)
 * @KQP_WC_LOC_QP_OP_ERR: the QP could not do it; also a ring entry kqp
 *	refused as malformed
 * @KQP_WC_LOC_EEC_OP_ERR: EE context error (unused)
 * @KQP_WC_LOC_PROT_ERR: a local SGE failed its protection check, the
 *	device's or, for a ring entry, kqp's
 * @KQP_WC_WR_FLUSH_ERR: flushed: the QP is in the error state
 * @KQP_WC_MW_BIND_ERR: memory window bind error
 * @KQP_WC_BAD_RESP_ERR: the responder answered unexpectedly
 * @KQP_WC_LOC_ACCESS_ERR: local access error
 * @KQP_WC_REM_INV_REQ_ERR: the responder found the request invalid
 * @KQP_WC_REM_ACCESS_ERR: the responder refused access (rkey, bounds)
 * @KQP_WC_REM_OP_ERR: the responder could not do it
 * @KQP_WC_RETRY_EXC_ERR: transport retries ran out
 * @KQP_WC_RNR_RETRY_EXC_ERR: receiver-not-ready retries ran out
 * @KQP_WC_LOC_RDD_VIOL_ERR: RD domain violation (unused)
 * @KQP_WC_REM_INV_RD_REQ_ERR: invalid RD request (unused)
 * @KQP_WC_REM_ABORT_ERR: the responder aborted
 * @KQP_WC_INV_EECN_ERR: invalid EE context number (unused)
 * @KQP_WC_INV_EEC_STATE_ERR: invalid EE context state (unused)
 * @KQP_WC_FATAL_ERR: fatal error
 * @KQP_WC_RESP_TIMEOUT_ERR: the response timed out
 * @KQP_WC_GENERAL_ERR: any other error
 *
 * The values are libibverbs' enum ibv_wc_status and ib_core's enum
 * ib_wc_status, which kqp passes on as the device reported them.
 */
enum kqp_wc_status {
	KQP_WC_SUCCESS = 0,
	KQP_WC_LOC_LEN_ERR = 1,
	KQP_WC_LOC_QP_OP_ERR = 2,
	KQP_WC_LOC_EEC_OP_ERR = 3,
	KQP_WC_LOC_PROT_ERR = 4,
	KQP_WC_WR_FLUSH_ERR = 5,
	KQP_WC_MW_BIND_ERR = 6,
	KQP_WC_BAD_RESP_ERR = 7,
	KQP_WC_LOC_ACCESS_ERR = 8,
	KQP_WC_REM_INV_REQ_ERR = 9,
	KQP_WC_REM_ACCESS_ERR = 10,
	KQP_WC_REM_OP_ERR = 11,
	KQP_WC_RETRY_EXC_ERR = 12,
	KQP_WC_RNR_RETRY_EXC_ERR = 13,
	KQP_WC_LOC_RDD_VIOL_ERR = 14,
	KQP_WC_REM_INV_RD_REQ_ERR = 15,
	KQP_WC_REM_ABORT_ERR = 16,
	KQP_WC_INV_EECN_ERR = 17,
	KQP_WC_INV_EEC_STATE_ERR = 18,
	KQP_WC_FATAL_ERR = 19,
	KQP_WC_RESP_TIMEOUT_ERR = 20,
	KQP_WC_GENERAL_ERR = 21,
};

/**
 * struct kqp_cqe - a completion, as struct ibv_wc
 * @wr_id: the work request's wr_id
 * @status: enum kqp_wc_status
 * @opcode: enum kqp_wc_opcode
 * @vendor_err: the device's own error code
 * @byte_len: bytes received (receives)
 * @imm_data: with KQP_WC_FLAG_WITH_IMM, the immediate data (network byte
 *	order); with KQP_WC_FLAG_WITH_INV, the invalidated rkey
 * @qp_num: the QP's number
 * @src_qp: the sender's QP number (UD receives)
 * @wc_flags: enum kqp_wc_flags
 * @slid: the sender's LID (UD receives)
 * @pkey_index: the P_Key index (GSI QPs)
 * @sl: the sender's service level (UD receives)
 * @dlid_path_bits: the destination LID's path bits (UD receives)
 * @__reserved: zero
 *
 * Numbering and flags are libibverbs'.
 */
struct kqp_cqe {
	__aligned_u64 wr_id;
	__u32 status;
	__u32 opcode;
	__u32 vendor_err;
	__u32 byte_len;
	__u32 imm_data;
	__u32 qp_num;
	__u32 src_qp;
	__u32 wc_flags;
	__u32 slid;
	__u16 pkey_index;
	__u8 sl;
	__u8 dlid_path_bits;
	__u8 __reserved[16];
};

/**
 * struct kqp_ring_info - how to map a CQ's ring
 * @mmap_offset: the offset to pass to mmap() of a file sharing the table
 * @mmap_size: the length to map
 * @entries: ring entries, a power of two
 * @off_head: byte offset of the head
 * @off_tail: byte offset of the tail
 * @off_arm: byte offset of the arm word
 * @off_flags: byte offset of the flags
 * @off_cqes: byte offset of the first struct kqp_cqe
 * @__reserved: zero
 */
struct kqp_ring_info {
	__aligned_u64 mmap_offset;
	__u32 mmap_size;
	__u32 entries;
	__u32 off_head;
	__u32 off_tail;
	__u32 off_arm;
	__u32 off_flags;
	__u32 off_cqes;
	__u32 __reserved;
};

/**
 * struct kqp_create_cq - ioctl(KQP_IOCTL_CREATE_CQ)
 * @size: sizeof(struct kqp_create_cq)
 * @flags: must be 0
 * @device_index: the device
 * @cqe: minimum depth, 1 to the device's max_cqe (EINVAL otherwise)
 * @comp_vector: as ibv_create_cq()
 * @channel_fd: a completion channel's fd, or -1
 * @uid: the caller's value, reported with the CQ's events
 * @out_cq: handle
 * @out_cqe: actual depth, as the device gave it for @cqe (ibv_cq->cqe);
 *	the ring's entries are at least as many
 * @out_ring: the completion ring
 */
struct kqp_create_cq {
	__u32 size;
	__u32 flags;
	__u32 device_index;
	__u32 cqe;
	__u32 comp_vector;
	__s32 channel_fd;
	__aligned_u64 uid;
	__u32 out_cq;
	__u32 out_cqe;
	struct kqp_ring_info out_ring;
};

#define KQP_IOCTL_CREATE_CQ _IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_CQ)

/**
 * struct kqp_destroy_cq - ioctl(KQP_IOCTL_DESTROY_CQ)
 * @size: sizeof(struct kqp_destroy_cq)
 * @flags: must be 0
 * @cq: handle
 * @out_comp_events_reported: channel notifications read for the CQ
 * @out_async_events_reported: async events read for the CQ
 * @__reserved: zero
 *
 * EBUSY while a QP uses the CQ.  The ring stays mapped where it is mapped
 * (it is freed with the last mapping) but is never written again.
 */
struct kqp_destroy_cq {
	__u32 size;
	__u32 flags;
	__u32 cq;
	__u32 out_comp_events_reported;
	__u32 out_async_events_reported;
	__u32 __reserved;
};

#define KQP_IOCTL_DESTROY_CQ _IO(KQP_IOCTL_TYPE, KQP_CMD_DESTROY_CQ)

/**
 * struct kqp_flush_cq - ioctl(KQP_IOCTL_FLUSH_CQ)
 * @size: sizeof(struct kqp_flush_cq)
 * @flags: must be 0
 * @cq: handle
 * @__reserved: zero
 *
 * After KQP_CQ_RING_OVERFLOW, move the completions that wait in the
 * kernel into the room the consumer made.
 */
struct kqp_flush_cq {
	__u32 size;
	__u32 flags;
	__u32 cq;
	__u32 __reserved;
};

#define KQP_IOCTL_FLUSH_CQ _IO(KQP_IOCTL_TYPE, KQP_CMD_FLUSH_CQ)

/**
 * struct kqp_qp_cap - QP capabilities, as struct ibv_qp_cap
 * @max_send_wr: outstanding send work requests
 * @max_recv_wr: outstanding receive work requests
 * @max_send_sge: SGEs per send work request
 * @max_recv_sge: SGEs per receive work request
 * @max_inline_data: bytes of inline data per send work request
 * @__reserved: zero
 */
struct kqp_qp_cap {
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u32 __reserved;
};

/* Every send is signaled (ibv_qp_init_attr.sq_sig_all). */
#define KQP_CREATE_QP_SQ_SIG_ALL	(1U << 0)
/*
 * Give the QP submission rings (struct kqp_qp_ring_info, KQP_IOCTL_DOORBELL);
 * needs a @size that covers @out_rings (EINVAL otherwise).  A kernel
 * without rings refuses the flag with EOPNOTSUPP.  Rings are given when
 * they can be: a QP whose rings would pass max_queue_bytes or 1 GiB, or
 * find no memory, is made without them (@out_rings.mmap_size 0) and is
 * posted to with the ioctls, which check the same things.
 */
#define KQP_CREATE_QP_RINGS		(1U << 1)
/*
 * With KQP_CREATE_QP_RINGS, on an RC QP with a receive queue of its own:
 * let the kernel drain the receive ring after receive completions, as it
 * drains the send ring (KQP_QP_RINGS_RECV_ASYNC says when it was given).
 * It does so only while the peer retries an RNR NAK for ever, as a
 * receive may then reach the device after the post returns: on an id,
 * once the id's CONNECT or ACCEPT gave an rnr_retry_count of 7 (which the
 * CM hands to the peer's QP); on a QP the caller connects itself, the
 * flag is the caller's word for it.  A kernel without it refuses the
 * flag with EOPNOTSUPP; a QP that cannot have it (UD, an SRQ, no rings)
 * is made without it.
 */
#define KQP_CREATE_QP_RECV_ASYNC	(1U << 2)

/**
 * struct kqp_wq_ring_hdr - the header of a QP's send or receive ring
 * @tail: producer index, written by userspace: entries below it are
 *	published
 * @__pad0: keeps the producer's half on its own line
 * @head: consumer index, written by the kernel: entries below it were
 *	taken (posted to the device)
 * @flags: KQP_WQ_RING_*, written by the kernel
 * @retired: send ring, and receive ring with KQP_QP_RINGS_RECV_ASYNC:
 *	requests completed (or flushed) so far, written by the kernel; the
 *	kernel has a slot for every entry up to @entries past it, so
 *	userspace publishes no further (other receive rings: 0)
 * @__pad1: keeps the consumer's half on its own line; zero when the ring
 *	is made, and the kernel may give the bytes a meaning later
 *
 * Indices count entries since creation and wrap at 2^32; entry i is at
 * off_entries + (i & (entries - 1)) * entry_size.  Each entry is one
 * struct kqp_send_wr (send ring) or struct kqp_recv_wr (receive ring),
 * followed by its SGEs or inline bytes, in the layout KQP_IOCTL_POST_SEND
 * takes, and must fit in entry_size; bytes past it are ignored.
 *
 * The protocol.  Userspace writes entries, then stores @tail with release
 * semantics, then, with a full barrier between, loads @flags and rings
 * KQP_IOCTL_DOORBELL if KQP_WQ_RING_NEED_DOORBELL is set.  The kernel
 * reads @tail with acquire semantics, copies each entry once into its own
 * memory and checks the copy exactly as KQP_IOCTL_POST_SEND checks a
 * list, posts the entries to the device, then stores @head with release
 * semantics.  An entry below @head may be overwritten.  Before it clears
 * NEED_DOORBELL it has committed to drain again; when it sets it, it
 * then (full barrier) reads @tail again, so an entry is never left
 * behind: either the kernel sees the new @tail or userspace sees the
 * flag.  One doorbell takes at most 4096 entries of a ring; the rest stay
 * published for the next.  The kernel never reads @head, @flags or
 * @retired back, and it checks every @tail it reads: one that claims
 * more than @entries entries past @head fails the doorbell with EINVAL
 * and posts nothing.  Rewriting an entry while the kernel copies it can
 * only change what that one request is; the copy is checked, never the
 * ring.
 *
 * Errors.  A receive entry the kernel refuses stops the drain: @head
 * names it and the doorbell returns its errno, as KQP_IOCTL_POST_RECV
 * would; so does a send entry of a UD QP.  A send entry of an RC QP it
 * refuses (a bad lkey, range, access, opcode, flag or size) is consumed,
 * as a device consumes what rdma-core's providers hand it: the QP is
 * moved to ERR, that entry completes with IBV_WC_LOC_PROT_ERR (its SGEs)
 * or IBV_WC_LOC_QP_OP_ERR (the rest), and every later entry with
 * IBV_WC_WR_FLUSH_ERR; nothing of them reaches the wire.  Moving the QP
 * to RESET ends that.  An RC send drain stops only where the device
 * refuses a request, and the doorbell returns that errno.
 *
 * A receive ring with KQP_QP_RINGS_RECV_ASYNC is an RC send ring's twin.
 * While the peer retries RNR NAKs for ever (KQP_CREATE_QP_RECV_ASYNC),
 * the kernel keeps NEED_DOORBELL clear while the device holds at least
 * half the max_recv_wr asked for (at least one; not of the larger depth
 * a device may give) of the QP's receives.  What is
 * published meanwhile is drained by the QP's next doorbell of either
 * ring, or, in a kworker of the user's, after the receive completion
 * that leaves the device fewer than that, which also sets NEED_DOORBELL.
 * A receive published then reaches the device before the device has used
 * up the receives it had, unless that many more messages arrive before
 * the kworker runs: the peer then meets an RNR NAK and tries again.  The
 * receives it counts are those whose completions it has not yet reaped:
 * while the receive CQ's ring is in overflow,
 * published entries wait for KQP_IOCTL_FLUSH_CQ or a doorbell.  RESET
 * drops the entries not yet taken, as it drops the device's receives.
 * An entry the kernel refuses is consumed as an RC send entry is, at
 * once: the QP goes to ERR, every receive the device had completes with
 * IBV_WC_WR_FLUSH_ERR, then the entry with IBV_WC_LOC_PROT_ERR, then every
 * later one with a flush; the doorbell returns 0.  As the kernel meets the
 * entry when it drains, not when a message needs it, the QP can go to ERR
 * between a receive's completion and the device's acknowledgment of its
 * message: the peer's send of that message then fails with its retries
 * exhausted.
 */
struct kqp_wq_ring_hdr {
	__u32 tail;
	__u8 __pad0[124];
	__u32 head;
	__u32 flags;
	__u32 retired;
	__u8 __pad1[116];
};

/*
 * Set while the kernel will not drain the ring on its own: userspace
 * must ring KQP_IOCTL_DOORBELL after publishing entries.  A receive ring
 * has it unless KQP_QP_RINGS_RECV_ASYNC, and a UD QP's send ring always.  An RC QP's send ring
 * has it clear while a signaled send is outstanding: its completion makes
 * the kernel drain the ring, so entries published then need no doorbell.
 */
#define KQP_WQ_RING_NEED_DOORBELL	(1U << 0)
/*
 * Set while the table's poller (KQP_IOCTL_CREATE_POLLER) is awake and
 * serves the ring: it drains what is published without a doorbell.  On
 * an RC QP's send ring NEED_DOORBELL is then clear, with the same
 * guarantee as above: before it sleeps the poller clears this and
 * settles the ring as after any drain (NEED_DOORBELL unless a signaled
 * send is outstanding, then, with a full barrier, @tail again).  A send
 * ring is served only once the device has taken a send from it since the
 * QP was made or reset, so a QP that cannot send yet still rings and its
 * post fails at once.  A receive ring not committed as above (struct
 * kqp_wq_ring_hdr) keeps NEED_DOORBELL: a receive must
 * be in the device before ibv_post_recv() returns, so userspace may wait
 * for @head to cover its entries (the poller posts them), and rings if
 * that takes too long, or once this flag is clear (a drain stopped on an
 * entry it refused, which only the doorbell drains again).
 */
#define KQP_WQ_RING_POLLED		(1U << 1)

/**
 * struct kqp_wq_ring_info - where one of a QP's rings is in its mapping
 * @entries: ring entries, a power of two; 0 for no ring (the receive
 *	queue of a QP on an SRQ)
 * @entry_size: bytes per entry, a power of two: a request's header and
 *	its SGEs (or inline bytes, rounded up to 8) at the QP's caps fit
 * @off_hdr: byte offset of the ring's struct kqp_wq_ring_hdr
 * @off_entries: byte offset of its first entry
 */
struct kqp_wq_ring_info {
	__u32 entries;
	__u32 entry_size;
	__u32 off_hdr;
	__u32 off_entries;
};

/*
 * The send ring keeps @retired, and an RC QP's is drained after
 * completions with NEED_DOORBELL clear, its refused entries completing
 * in error (struct kqp_wq_ring_hdr).  A kernel without the flag drains
 * only when rung, stops at a refused send, and leaves @retired zero.
 */
#define KQP_QP_RINGS_SEND_ASYNC	(1U << 0)
/*
 * The receive ring keeps @retired and is drained after receive
 * completions (KQP_CREATE_QP_RECV_ASYNC, struct kqp_wq_ring_hdr).
 */
#define KQP_QP_RINGS_RECV_ASYNC	(1U << 1)

/**
 * struct kqp_qp_ring_info - how to map a QP's rings
 * @mmap_offset: the offset to pass to mmap() of a file sharing the table
 * @mmap_size: the length to map (MAP_SHARED, not executable)
 * @flags: KQP_QP_RINGS_*, written by the kernel (zero on input)
 * @sq: the send ring
 * @rq: the receive ring
 */
struct kqp_qp_ring_info {
	__aligned_u64 mmap_offset;
	__u32 mmap_size;
	__u32 flags;
	struct kqp_wq_ring_info sq;
	struct kqp_wq_ring_info rq;
};

/**
 * struct kqp_create_qp - ioctl(KQP_IOCTL_CREATE_QP)
 * @size: sizeof(struct kqp_create_qp)
 * @flags: KQP_CREATE_QP_*
 * @id: the CM id to create the QP on, or 0 for a QP the caller moves
 *	through its states itself (ibv_create_qp())
 * @pd: the PD, or 0 (on an id only) for the device's default PD
 * @send_cq: the send CQ, or 0 (on an id only) to have one made
 * @recv_cq: the receive CQ, or 0 (on an id only) to have one made
 * @qp_type: KQP_QPT_RC or KQP_QPT_UD; on an id, the id's
 * @srq: an SRQ (KQP_IOCTL_CREATE_SRQ) the QP receives from, or 0 (added
 *	later: a kernel without SRQs refuses a non-zero one with EOPNOTSUPP,
 *	as a reserved field)
 * @send_cq_uid: the uid of a send CQ made here
 * @recv_cq_uid: the uid of a receive CQ made here
 * @uid: the caller's value, reported with the QP's async events
 * @cap: wanted capabilities; on return, the actual ones
 * @out_qp: handle
 * @out_qp_num: the QP number
 * @out_pd: the PD used
 * @out_send_cq: the send CQ used
 * @out_recv_cq: the receive CQ used
 * @out_send_channel_fd: the completion channel of a send CQ made here, or
 *	-1; a new fd the caller owns
 * @out_recv_channel_fd: likewise for the receive CQ
 * @out_send_cqe: depth of a send CQ made here
 * @out_recv_cqe: depth of a receive CQ made here
 * @__reserved2: zero
 * @out_send_ring: ring of a send CQ made here
 * @out_recv_ring: ring of a receive CQ made here
 * @out_rings: with KQP_CREATE_QP_RINGS, the QP's submission rings (added
 *	later)
 *
 * On an id this is rdma_create_qp(3): the id must be bound to a device
 * (EINVAL), a PD given must be of that device (EINVAL), the id must have
 * no QP yet (EINVAL, and nothing changes), and capabilities the device
 * cannot give fail with EINVAL, leaving nothing behind.  An RC QP is left
 * in INIT, ready for receives, and rdma_cm moves it to RTR and RTS when
 * the connection is made; a UD QP is left in RTS.  CQs made here get a
 * completion channel each and are destroyed with the QP.
 *
 * Without an id, @pd, @send_cq and @recv_cq are required and the QP is
 * left in RESET.
 *
 * With @srq, the QP has no receive queue of its own: its receives come
 * from the SRQ, which must be on the QP's device (EINVAL otherwise; its
 * PD may differ, as ib_core allows), and which cannot be destroyed while
 * the QP uses it.  @cap's max_recv_wr and max_recv_sge then go to the
 * device, which may ignore them (rxe does), and come back as it leaves
 * them; KQP_IOCTL_QUERY_QP reports 0 for both, and KQP_IOCTL_POST_RECV on
 * the QP is EINVAL.
 */
struct kqp_create_qp {
	__u32 size;
	__u32 flags;
	__u32 id;
	__u32 pd;
	__u32 send_cq;
	__u32 recv_cq;
	__u32 qp_type;
	__u32 srq;
	__aligned_u64 send_cq_uid;
	__aligned_u64 recv_cq_uid;
	__aligned_u64 uid;
	struct kqp_qp_cap cap;
	__u32 out_qp;
	__u32 out_qp_num;
	__u32 out_pd;
	__u32 out_send_cq;
	__u32 out_recv_cq;
	__s32 out_send_channel_fd;
	__s32 out_recv_channel_fd;
	__u32 out_send_cqe;
	__u32 out_recv_cqe;
	__u32 __reserved2;
	struct kqp_ring_info out_send_ring;
	struct kqp_ring_info out_recv_ring;
	struct kqp_qp_ring_info out_rings;
};

#define KQP_IOCTL_CREATE_QP _IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_QP)

/**
 * struct kqp_destroy_qp - ioctl(KQP_IOCTL_DESTROY_QP)
 * @size: sizeof(struct kqp_destroy_qp)
 * @flags: must be 0
 * @qp: handle
 * @out_events_reported: async events read for the QP
 * @out_send_cq_events: channel notifications read for a send CQ made for
 *	the QP, which goes with it
 * @out_recv_cq_events: likewise for the receive CQ
 * @out_send_cq_async_events: async events read for a send CQ made for
 *	the QP (added later: a caller whose @size ends before it gets
 *	the fields before)
 * @out_recv_cq_async_events: likewise for the receive CQ
 * @out_flags: KQP_DESTROY_QP_*_CQ_KEPT (added later, as the async counts)
 * @__reserved: must be 0 (EOPNOTSUPP)
 *
 * Work still posted is discarded with the QP.  CQs made for it go too,
 * but for one that another QP uses (rdma_create_qp(3) writes an id's CQs
 * back into the caller's attributes, and programs create further QPs
 * with them): that one stays, an ordinary CQ from then on, and @out_flags
 * says so.  librdmacm's ibv_destroy_cq() of such a CQ fails (EBUSY) and
 * leaves it just as alive.
 */
struct kqp_destroy_qp {
	__u32 size;
	__u32 flags;
	__u32 qp;
	__u32 out_events_reported;
	__u32 out_send_cq_events;
	__u32 out_recv_cq_events;
	__u32 out_send_cq_async_events;
	__u32 out_recv_cq_async_events;
	__u32 out_flags;
	__u32 __reserved;
};

/**
 * enum kqp_destroy_qp_out_flags - struct kqp_destroy_qp's @out_flags
 * @KQP_DESTROY_QP_SEND_CQ_KEPT: the send CQ made for the QP stays, as
 *	another QP uses it
 * @KQP_DESTROY_QP_RECV_CQ_KEPT: likewise for the receive CQ
 */
enum kqp_destroy_qp_out_flags {
	KQP_DESTROY_QP_SEND_CQ_KEPT = 1 << 0,
	KQP_DESTROY_QP_RECV_CQ_KEPT = 1 << 1,
};

#define KQP_IOCTL_DESTROY_QP _IO(KQP_IOCTL_TYPE, KQP_CMD_DESTROY_QP)

/**
 * struct kqp_modify_qp - ioctl(KQP_IOCTL_MODIFY_QP)
 * @size: sizeof(struct kqp_modify_qp)
 * @flags: must be 0
 * @qp: handle
 * @attr_mask: enum kqp_qp_attr_mask bits naming the fields of @attr to use
 * @attr: as struct ibv_qp_attr
 *
 * For a QP on an id, rdma_cm moves it from state to state: a new state
 * other than ERR is refused (EINVAL); attributes the current state lets
 * change (RTS to RTS) are not.  Unknown mask bits: EOPNOTSUPP.  A
 * privileged Q_Key (bit 31 set) needs CAP_NET_RAW: EPERM otherwise, as
 * with ib_uverbs.  A path MTU other than IBV_MTU_256..IBV_MTU_4096:
 * EINVAL.
 */
struct kqp_modify_qp {
	__u32 size;
	__u32 flags;
	__u32 qp;
	__u32 attr_mask;
	struct kqp_qp_attr attr;
};

#define KQP_IOCTL_MODIFY_QP _IO(KQP_IOCTL_TYPE, KQP_CMD_MODIFY_QP)

/**
 * struct kqp_query_qp - ioctl(KQP_IOCTL_QUERY_QP)
 * @size: sizeof(struct kqp_query_qp)
 * @flags: must be 0
 * @qp: handle
 * @attr_mask: the attributes wanted, enum kqp_qp_attr_mask
 * @out_attr: the attributes
 * @out_cap: the capabilities
 * @out_qp_type: KQP_QPT_*
 * @out_sq_sig_all: 1 if every send is signaled
 */
struct kqp_query_qp {
	__u32 size;
	__u32 flags;
	__u32 qp;
	__u32 attr_mask;
	struct kqp_qp_attr out_attr;
	struct kqp_qp_cap out_cap;
	__u32 out_qp_type;
	__u32 out_sq_sig_all;
};

#define KQP_IOCTL_QUERY_QP _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY_QP)

/**
 * struct kqp_sge - a scatter/gather element: a range of a registered MR
 * @addr: the start, as the MR's iova
 * @length: bytes
 * @lkey: the MR's local key
 */
struct kqp_sge {
	__aligned_u64 addr;
	__u32 length;
	__u32 lkey;
};

/**
 * enum kqp_wr_opcode - a send work request's operation (struct kqp_send_wr)
 * @KQP_WR_OP_RDMA_WRITE: RDMA write (RC)
 * @KQP_WR_OP_RDMA_WRITE_WITH_IMM: RDMA write with immediate data (RC)
 * @KQP_WR_OP_SEND: send
 * @KQP_WR_OP_SEND_WITH_IMM: send with immediate data
 * @KQP_WR_OP_RDMA_READ: RDMA read (RC)
 * @KQP_WR_OP_ATOMIC_CMP_AND_SWP: atomic compare and swap (RC)
 * @KQP_WR_OP_ATOMIC_FETCH_AND_ADD: atomic fetch and add (RC)
 *
 * The values are libibverbs' enum ibv_wr_opcode, so a caller's opcode
 * passes through unchanged; others are EINVAL.  A UD QP takes only the
 * two sends.
 */
enum kqp_wr_opcode {
	KQP_WR_OP_RDMA_WRITE = 0,
	KQP_WR_OP_RDMA_WRITE_WITH_IMM = 1,
	KQP_WR_OP_SEND = 2,
	KQP_WR_OP_SEND_WITH_IMM = 3,
	KQP_WR_OP_RDMA_READ = 4,
	KQP_WR_OP_ATOMIC_CMP_AND_SWP = 5,
	KQP_WR_OP_ATOMIC_FETCH_AND_ADD = 6,
};

/**
 * enum kqp_send_flags - struct kqp_send_wr's send_flags
 * @KQP_SEND_FLAG_FENCE: wait for earlier RDMA reads and atomics first
 * @KQP_SEND_FLAG_SIGNALED: complete with a completion (always, on a QP
 *	created with KQP_CREATE_QP_SQ_SIG_ALL)
 * @KQP_SEND_FLAG_SOLICITED: the peer's receive completion is solicited
 * @KQP_SEND_FLAG_INLINE: the data follows the request, not SGEs
 *
 * The values are libibverbs' enum ibv_send_flags; other bits are EINVAL.
 */
enum kqp_send_flags {
	KQP_SEND_FLAG_FENCE = 1 << 0,
	KQP_SEND_FLAG_SIGNALED = 1 << 1,
	KQP_SEND_FLAG_SOLICITED = 1 << 2,
	KQP_SEND_FLAG_INLINE = 1 << 3,
};

/**
 * struct kqp_send_wr - one send work request in a KQP_IOCTL_POST_SEND list
 * @wr_id: reported back in the request's completion
 * @opcode: enum kqp_wr_opcode
 * @send_flags: enum kqp_send_flags
 * @num_sge: SGEs following this header
 * @inline_len: with KQP_SEND_FLAG_INLINE, the bytes following this header
 *	(and no SGEs); at most the QP's max_inline_data
 * @imm_data: immediate data, network byte order
 * @__reserved: zero
 * @wr: the opcode's parameters
 *
 * Each request is followed by its SGEs or inline data, padded to 8 bytes.
 */
struct kqp_send_wr {
	__aligned_u64 wr_id;
	__u32 opcode;
	__u32 send_flags;
	__u32 num_sge;
	__u32 inline_len;
	__u32 imm_data;
	__u32 __reserved;
	union {
		struct {
			__aligned_u64 remote_addr;
			__u32 rkey;
			__u32 __reserved;
		} rdma;
		struct {
			__aligned_u64 remote_addr;
			__aligned_u64 compare_add;
			__aligned_u64 swap;
			__u32 rkey;
			__u32 __reserved;
		} atomic;
		struct {
			__u32 ah;
			__u32 remote_qpn;
			__u32 remote_qkey;
			__u32 __reserved;
		} ud;
	} wr;
};

/**
 * struct kqp_recv_wr - one receive work request, followed by its SGEs
 * @wr_id: reported back in the request's completion
 * @num_sge: SGEs following this header
 * @__reserved: zero
 */
struct kqp_recv_wr {
	__aligned_u64 wr_id;
	__u32 num_sge;
	__u32 __reserved;
};

/**
 * kqp_send_wr_bytes() - the bytes one send request takes in a list or a
 *	send ring's entry: struct kqp_send_wr, then its SGEs or its inline
 *	data padded to 8 bytes
 * @num_sge: its SGEs, below 2^32; 0 for inline data
 * @inline_len: its inline bytes, below 2^63; 0 unless KQP_SEND_FLAG_INLINE
 *
 * The kernel and libkqp size requests, lists and ring entries with these
 * three functions and nothing else.
 */
static __inline__ __u64 kqp_send_wr_bytes(__u64 num_sge, __u64 inline_len)
{
	return sizeof(struct kqp_send_wr) +
	       num_sge * sizeof(struct kqp_sge) + ((inline_len + 7) & ~(__u64)7);
}

/**
 * kqp_recv_wr_bytes() - the bytes one receive request takes: struct
 *	kqp_recv_wr, then its SGEs
 * @num_sge: its SGEs, below 2^32
 */
static __inline__ __u64 kqp_recv_wr_bytes(__u64 num_sge)
{
	return sizeof(struct kqp_recv_wr) + num_sge * sizeof(struct kqp_sge);
}

/**
 * kqp_send_wr_bytes_max() - the largest send request a QP takes
 * @max_sge: its max_send_sge
 * @max_inline: its max_inline_data
 */
static __inline__ __u64 kqp_send_wr_bytes_max(__u32 max_sge, __u32 max_inline)
{
	__u64 sges = kqp_send_wr_bytes(max_sge, 0);
	__u64 inl = kqp_send_wr_bytes(0, max_inline);

	return sges > inl ? sges : inl;
}

/**
 * struct kqp_post - ioctl(KQP_IOCTL_POST_SEND), ioctl(KQP_IOCTL_POST_RECV),
 *	ioctl(KQP_IOCTL_POST_SRQ_RECV)
 * @size: sizeof(struct kqp_post)
 * @flags: must be 0
 * @qp: the QP's handle; for KQP_IOCTL_POST_SRQ_RECV, the SRQ's
 * @count: requests in the list
 * @wrs: user pointer to the list
 * @wrs_len: its length in bytes, at most KQP_POST_MAX_BYTES
 * @out_posted: requests posted; on failure, the index of the first that
 *	was not, and nothing from it onward was posted
 *
 * The list is copied once and checked request by request before anything
 * reaches the device: the opcode and flags against the QP's type, SGE and
 * inline counts against its capabilities, every SGE against the caller's
 * registered memory.  The kernel never reads the caller's list again, so
 * rewriting it during the call changes nothing that was checked.  Errnos,
 * for the request out_posted names:
 *
 *  - EINVAL: @count or @wrs_len is 0, @wrs_len is past KQP_POST_MAX_BYTES
 *    or shorter than the requests it must hold; an opcode or flag the QP's
 *    type does not allow; more SGEs or inline bytes than the QP's caps; an
 *    SGE whose lkey is not an MR this context registered in the QP's PD
 *    (a deregistered MR, another process's, the PD's local_dma_lkey; for
 *    an SRQ, the SRQ's PD), or
 *    whose range is not inside that MR; an AH that is not the caller's or
 *    is of another PD; an atomic whose operand is not one 8-byte SGE.
 *  - EACCES: the MR lacks local write, and the device would write there
 *    (a receive, the target of an RDMA read or atomic).
 *  - EOPNOTSUPP: a reserved field is not zero.
 *  - ENOMEM: the queue is full.
 *  - Errnos of the device's post routine, passed through.
 *
 * KQP_IOCTL_POST_RECV on a QP that receives from an SRQ is EINVAL.
 */
struct kqp_post {
	__u32 size;
	__u32 flags;
	__u32 qp;
	__u32 count;
	__aligned_u64 wrs;
	__u32 wrs_len;
	__u32 out_posted;
};

#define KQP_IOCTL_POST_SEND _IO(KQP_IOCTL_TYPE, KQP_CMD_POST_SEND)
#define KQP_IOCTL_POST_RECV _IO(KQP_IOCTL_TYPE, KQP_CMD_POST_RECV)

#define KQP_POST_MAX_BYTES	(1U << 20)

/**
 * struct kqp_create_async_fd - ioctl(KQP_IOCTL_CREATE_ASYNC_FD)
 * @size: sizeof(struct kqp_create_async_fd)
 * @flags: must be 0
 * @out_fd: a new fd (O_CLOEXEC), poll()able; read() gives one struct
 *	kqp_async_event per call.  One per table: EBUSY for a second.  It
 *	holds at most 1024 events not read yet; later ones are dropped.
 * @__reserved: zero
 */
struct kqp_create_async_fd {
	__u32 size;
	__u32 flags;
	__s32 out_fd;
	__u32 __reserved;
};

#define KQP_IOCTL_CREATE_ASYNC_FD _IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_ASYNC_FD)

/*
 * What an async event is about.  KQP_ASYNC_DEVICE: an event of a device or
 * of one of its ports (IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR,
 * IBV_EVENT_DEVICE_FATAL, ...), which every table whose process may use
 * the device gets.
 */
#define KQP_ASYNC_CQ	1
#define KQP_ASYNC_QP	2
#define KQP_ASYNC_DEVICE 3
#define KQP_ASYNC_SRQ	4

/**
 * struct kqp_async_event - an async event (enum ibv_event_type)
 * @uid: the object's uid; KQP_ASYNC_DEVICE: the port number the device
 *	gave, as ib_uverbs passes it on (ibv_async_event.element.port_num)
 * @event: enum ibv_event_type
 * @kind: KQP_ASYNC_*
 * @handle: the object's handle; KQP_ASYNC_DEVICE: the device's index
 *	(struct kqp_device_info)
 * @__reserved: zero
 */
struct kqp_async_event {
	__aligned_u64 uid;
	__u32 event;
	__u32 kind;
	__u32 handle;
	__u32 __reserved;
};

/**
 * struct kqp_reg_mr - ioctl(KQP_IOCTL_REG_MR)
 * @size: sizeof(struct kqp_reg_mr)
 * @flags: must be 0
 * @pd: the PD
 * @access: enum ibv_access_flags: local write, remote write, remote read
 *	and remote atomic, and any bits of IBV_ACCESS_OPTIONAL_RANGE
 *	(0x3ff00000, relaxed ordering and later hints), which are accepted
 *	and ignored, as a device without them ignores them.  The other
 *	bits the verbs define (memory window binding, zero-based, on-demand
 *	paging, huge pages, flush) are EOPNOTSUPP; a bit they do not define
 *	is EINVAL, as uverbs answers.  Remote write or atomic access
 *	needs local write (EINVAL otherwise), as the verbs spec says
 * @addr: start of the caller's memory to register
 * @length: its length, not 0
 * @iova: the address work requests and peers use for @addr
 * @out_mr: handle
 * @out_lkey: local key
 * @out_rkey: remote key
 * @__reserved: zero
 *
 * The pages are pinned against the caller's RLIMIT_MEMLOCK (ENOMEM past
 * it, unless the caller has CAP_IPC_LOCK), and counted against the
 * context's max_mr_bytes module parameter (ENOMEM past it, whatever the
 * caller's capabilities).
 */
struct kqp_reg_mr {
	__u32 size;
	__u32 flags;
	__u32 pd;
	__u32 access;
	__aligned_u64 addr;
	__aligned_u64 length;
	__aligned_u64 iova;
	__u32 out_mr;
	__u32 out_lkey;
	__u32 out_rkey;
	__u32 __reserved;
};

#define KQP_IOCTL_REG_MR _IO(KQP_IOCTL_TYPE, KQP_CMD_REG_MR)

/**
 * struct kqp_dereg_mr - ioctl(KQP_IOCTL_DEREG_MR)
 * @size: sizeof(struct kqp_dereg_mr)
 * @flags: must be 0
 * @mr: handle
 * @__reserved: zero
 *
 * Work still in flight on the MR completes in error.
 */
struct kqp_dereg_mr {
	__u32 size;
	__u32 flags;
	__u32 mr;
	__u32 __reserved;
};

#define KQP_IOCTL_DEREG_MR _IO(KQP_IOCTL_TYPE, KQP_CMD_DEREG_MR)

/**
 * struct kqp_create_ah - ioctl(KQP_IOCTL_CREATE_AH)
 * @size: sizeof(struct kqp_create_ah)
 * @flags: must be 0
 * @pd: the PD
 * @__reserved: zero
 * @attr: where to send; on Ethernet (RoCE) a GRH is required and the
 *	peer's MAC address is resolved from its GID
 * @out_ah: handle, for UD send work requests
 * @__reserved2: zero
 */
struct kqp_create_ah {
	__u32 size;
	__u32 flags;
	__u32 pd;
	__u32 __reserved;
	struct kqp_ah_attr attr;
	__u32 out_ah;
	__u32 __reserved2;
};

#define KQP_IOCTL_CREATE_AH _IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_AH)

/**
 * struct kqp_destroy_ah - ioctl(KQP_IOCTL_DESTROY_AH)
 * @size: sizeof(struct kqp_destroy_ah)
 * @flags: must be 0
 * @ah: handle
 * @__reserved: zero
 */
struct kqp_destroy_ah {
	__u32 size;
	__u32 flags;
	__u32 ah;
	__u32 __reserved;
};

#define KQP_IOCTL_DESTROY_AH _IO(KQP_IOCTL_TYPE, KQP_CMD_DESTROY_AH)

/**
 * struct kqp_mcast_attach - ioctl(KQP_IOCTL_ATTACH_MCAST),
 *	ioctl(KQP_IOCTL_DETACH_MCAST)
 * @size: sizeof(struct kqp_mcast_attach)
 * @flags: must be 0
 * @qp: a UD QP
 * @lid: the group's LID (0 on RoCE)
 * @__reserved: zero
 * @gid: the group's GID
 *
 * As ibv_attach_mcast() and ibv_detach_mcast(): the QP receives what is
 * sent to the group while attached.  A group is its GID: attaching to a
 * group the QP is in already, with the same LID, changes nothing, and
 * with another LID is EINVAL; detaching from one it is not in is EINVAL.
 * So are a GID that is not a multicast GID, a QP that is not UD, and, on
 * a device with an InfiniBand port, a LID that is not a multicast LID.
 * ENOSPC past max_mcast groups per QP.  The QP is detached from every
 * group when it is destroyed.
 */
struct kqp_mcast_attach {
	__u32 size;
	__u32 flags;
	__u32 qp;
	__u16 lid;
	__u16 __reserved;
	__u8 gid[16];
};

#define KQP_IOCTL_ATTACH_MCAST _IO(KQP_IOCTL_TYPE, KQP_CMD_ATTACH_MCAST)
#define KQP_IOCTL_DETACH_MCAST _IO(KQP_IOCTL_TYPE, KQP_CMD_DETACH_MCAST)

/**
 * struct kqp_srq_attr - SRQ attributes, as struct ibv_srq_attr
 * @max_wr: outstanding receive work requests
 * @max_sge: SGEs per work request
 * @srq_limit: the limit: when fewer requests than this are left, the SRQ
 *	reports IBV_EVENT_SRQ_LIMIT_REACHED once and the limit drops to 0
 *	(disarmed) until set again; 0 is disarmed
 * @__reserved: zero
 */
struct kqp_srq_attr {
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 __reserved;
};

/**
 * struct kqp_create_srq - ioctl(KQP_IOCTL_CREATE_SRQ)
 * @size: sizeof(struct kqp_create_srq)
 * @flags: must be 0
 * @pd: the PD; the SGEs of the SRQ's work requests are checked against
 *	the MRs registered in it
 * @__reserved: zero
 * @uid: the caller's value, reported with the SRQ's async events
 * @attr: wanted attributes; on return @attr.max_wr and @attr.max_sge are
 *	the actual ones (at least those asked for)
 * @out_srq: handle
 * @__reserved2: zero
 *
 * A basic SRQ (IBV_SRQT_BASIC) on the PD's device, its limit armed with
 * a non-zero @attr.srq_limit.  EINVAL: @attr.max_wr is 0 or above the
 * max_srq_wr KQP_IOCTL_QUERY_DEVICE reports, @attr.max_sge above its
 * max_srq_sge; the device may refuse more.  ENOENT: @pd names no PD.
 * ENXIO: its device went away.
 */
struct kqp_create_srq {
	__u32 size;
	__u32 flags;
	__u32 pd;
	__u32 __reserved;
	__aligned_u64 uid;
	struct kqp_srq_attr attr;
	__u32 out_srq;
	__u32 __reserved2;
};

#define KQP_IOCTL_CREATE_SRQ _IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_SRQ)

/**
 * struct kqp_destroy_srq - ioctl(KQP_IOCTL_DESTROY_SRQ)
 * @size: sizeof(struct kqp_destroy_srq)
 * @flags: must be 0
 * @srq: handle
 * @out_events_reported: async events read for the SRQ
 *
 * EBUSY while a QP uses the SRQ, as with uverbs; nothing changes then.
 * Work still posted is discarded with the SRQ: completions that arrive
 * for it later are dropped.
 */
struct kqp_destroy_srq {
	__u32 size;
	__u32 flags;
	__u32 srq;
	__u32 out_events_reported;
};

#define KQP_IOCTL_DESTROY_SRQ _IO(KQP_IOCTL_TYPE, KQP_CMD_DESTROY_SRQ)

/* struct kqp_modify_srq's attr_mask: enum ibv_srq_attr_mask. */
#define KQP_SRQ_MAX_WR		(1U << 0)
#define KQP_SRQ_LIMIT		(1U << 1)

/**
 * struct kqp_modify_srq - ioctl(KQP_IOCTL_MODIFY_SRQ)
 * @size: sizeof(struct kqp_modify_srq)
 * @flags: must be 0
 * @srq: handle
 * @attr_mask: KQP_SRQ_*; other bits are EOPNOTSUPP
 * @attr: with KQP_SRQ_MAX_WR, the new depth (resizing: EINVAL on a device
 *	without IBV_DEVICE_SRQ_RESIZE, or for 0 or more than its
 *	max_srq_wr); with KQP_SRQ_LIMIT, the limit to arm (0 disarms).  The
 *	device refuses a limit above the depth; kqp refuses a depth below
 *	the receives posted and not completed yet (EINVAL), before the
 *	device sees it.  @attr.max_sge is ignored, as
 *	ibv_modify_srq() ignores it; @attr.__reserved must be zero.
 */
struct kqp_modify_srq {
	__u32 size;
	__u32 flags;
	__u32 srq;
	__u32 attr_mask;
	struct kqp_srq_attr attr;
};

#define KQP_IOCTL_MODIFY_SRQ _IO(KQP_IOCTL_TYPE, KQP_CMD_MODIFY_SRQ)

/**
 * struct kqp_query_srq - ioctl(KQP_IOCTL_QUERY_SRQ)
 * @size: sizeof(struct kqp_query_srq)
 * @flags: must be 0
 * @srq: handle
 * @__reserved: zero
 * @out_attr: the SRQ's attributes, as the device reports them
 */
struct kqp_query_srq {
	__u32 size;
	__u32 flags;
	__u32 srq;
	__u32 __reserved;
	struct kqp_srq_attr out_attr;
};

#define KQP_IOCTL_QUERY_SRQ _IO(KQP_IOCTL_TYPE, KQP_CMD_QUERY_SRQ)

/*
 * KQP_IOCTL_POST_SRQ_RECV takes a struct kqp_post whose @qp is the SRQ's
 * handle and whose list holds struct kqp_recv_wr, checked as for
 * KQP_IOCTL_POST_RECV against the SRQ's max_sge and PD.  A completion of
 * one of them carries the number of the QP that took it.
 */
#define KQP_IOCTL_POST_SRQ_RECV _IO(KQP_IOCTL_TYPE, KQP_CMD_POST_SRQ_RECV)

/* struct kqp_doorbell_entry's flags */
#define KQP_DB_SEND	(1U << 0)	/* drain the send ring */
#define KQP_DB_RECV	(1U << 1)	/* drain the receive ring (first) */

/**
 * struct kqp_doorbell_entry - one QP to drain
 * @qp: the QP's handle
 * @flags: KQP_DB_*, at least one
 * @out_errno: 0, or why draining stopped short (positive errno)
 * @__reserved: zero
 *
 * A drain posts the ring's entries from @head up to the @tail it reads
 * (at most 4096 of them per round), in order.  A receive drain, and a
 * UD QP's send drain, stop at the first entry that fails, with that
 * entry's errno, exactly those of KQP_IOCTL_POST_SEND and
 * KQP_IOCTL_POST_RECV for a request: EINVAL, EACCES, EOPNOTSUPP, ENOMEM
 * (the queue is full), or the device's.  @head then names the entry that
 * failed, and the entries from it onward stay published: the next
 * doorbell tries it again, unless userspace moves @tail back to @head
 * first.  An RC QP's send drain consumes an entry the kernel refuses and
 * reports it as a completion in error (struct kqp_wq_ring_hdr), so its
 * @out_errno is 0 unless the device refused a request (its errno, as
 * above; nothing drains the ring again before the next doorbell).  It
 * may also return 0 with entries left past @head that the kernel keeps
 * and drains after completions: a long ring, or a refused entry waiting
 * for the signaled sends before it.  With both flags, a failure of the
 * receive ring leaves the send ring undrained.  Errnos of the QP itself:
 * ENOENT (no such QP), ENXIO (its device is gone), EINVAL (no such ring,
 * or a @tail more than @entries past @head), EINTR (a fatal signal is
 * pending).
 */
struct kqp_doorbell_entry {
	__u32 qp;
	__u32 flags;
	__s32 out_errno;
	__u32 __reserved;
};

#define KQP_DOORBELL_MAX	1024

/*
 * struct kqp_doorbell's flags: once the entries are drained, wake the
 * table's poller, which then serves the rings again until it has been
 * idle for its idle time.  Without a poller the flag does nothing.  Once
 * the poller's thread is dead (its process exited while another process
 * on the same mm, a CLONE_VM or vfork() child, kept the table; CTX_INFO's
 * @out_poller is 0), the doorbell with the flag is ESRCH and drains
 * nothing: ring again without it.  A poller that dies while the doorbell
 * drains is not woken, and the doorbell succeeds.
 */
#define KQP_DOORBELL_WAKE_POLLER	(1U << 0)

/**
 * struct kqp_doorbell - ioctl(KQP_IOCTL_DOORBELL): drain QPs' rings
 * @size: sizeof(struct kqp_doorbell)
 * @flags: KQP_DOORBELL_*; others are EOPNOTSUPP
 * @count: entries, 1 to KQP_DOORBELL_MAX
 * @entry_size: sizeof(struct kqp_doorbell_entry) as the caller knows it;
 *	at least 16, bytes past the kernel's must be zero (as @size)
 * @entries: user pointer to @count entries
 * @out_done: entries drained (whatever their @out_errno)
 * @__reserved: zero
 *
 * Every entry is copied and checked before any QP is drained: a bad
 * entry_size or count is EINVAL, a non-zero byte past the kernel's entry
 * E2BIG, an unknown entry flag, no flag, or a non-zero __reserved
 * EOPNOTSUPP, and nothing is drained.  Then each
 * entry's QP is drained in turn and its @out_errno written back; one QP's
 * failure stops no other.  Draining returns only once every entry it took
 * was handed to the device, so a receive is in the device's queue before
 * the doorbell returns.  Drains are idempotent: EFAULT writing the
 * results back loses nothing.
 */
struct kqp_doorbell {
	__u32 size;
	__u32 flags;
	__u32 count;
	__u32 entry_size;
	__aligned_u64 entries;
	__u32 out_done;
	__u32 __reserved;
};

#define KQP_IOCTL_DOORBELL _IO(KQP_IOCTL_TYPE, KQP_CMD_DOORBELL)

/* The longest idle time a poller may spin for before it sleeps: 1 s. */
#define KQP_POLLER_IDLE_US_MAX		1000000

/**
 * struct kqp_create_poller - ioctl(KQP_IOCTL_CREATE_POLLER): give the
 *	table a kernel thread that drains its QPs' rings
 * @size: sizeof(struct kqp_create_poller)
 * @flags: must be 0
 * @idle_us: how long the poller keeps looking after it last found work
 *	before it sleeps; 0 for the default, 1000 (1 ms)
 * @__reserved: zero
 *
 * The poller is a thread of the calling process (as vhost's workers are):
 * its CPU time is the process's, in the process's cgroups and rusage, and
 * it ends with the process or with the table, whichever goes first.
 * While it is awake it drains every ring of the table's RC QPs made with
 * KQP_CREATE_QP_RINGS, old and new: published send entries go to the
 * device with no doorbell (once the QP has sent), and receive entries are
 * posted without one while userspace waits for @head (struct
 * kqp_wq_ring_hdr, KQP_WQ_RING_POLLED).  Once it has found nothing for @idle_us it sets
 * NEED_DOORBELL again and sleeps; a doorbell with
 * KQP_DOORBELL_WAKE_POLLER wakes it.  It drains with the doorbell's
 * checks, and a failing entry ends as a doorbell's would (a send completes
 * in error, a receive stops the ring until the next doorbell).
 *
 * Only the table's owner, the thread group that made it (its first
 * command), may give it a poller: EPERM for a process that merely shares
 * its mm (a CLONE_VM or vfork() child, posix_spawn()'s), even one that
 * may use the table.  EBUSY: the table has, or had, a poller (it ends with
 * the owner even while such a process keeps the table, and CTX_INFO then
 * reports none).  EINVAL: @idle_us is above KQP_POLLER_IDLE_US_MAX.
 * EOPNOTSUPP: the kernel cannot make a
 * thread that is charged to the process (no CONFIG_VHOST_TASK, or before
 * 6.11).  EAGAIN, ENOMEM or EINTR: the thread could not be made
 * (RLIMIT_NPROC counts it as a thread of the caller).  Closing the table's
 * last file waits for the poller to finish the QP it is draining; a
 * poller stopped with its process (SIGSTOP, a debugger) holds that close
 * until the process runs again.
 */
struct kqp_create_poller {
	__u32 size;
	__u32 flags;
	__u32 idle_us;
	__u32 __reserved;
};

#define KQP_IOCTL_CREATE_POLLER _IO(KQP_IOCTL_TYPE, KQP_CMD_CREATE_POLLER)

#endif /* _UAPI_RDMA_KQP_ABI_H */
