/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Every command of /dev/kqp, once.  The kernel's dispatch table
 * (kernel/file.c) and the selftests that hold the kernel to it (abi.c,
 * fuzz.c) are each built from this list: define KQP_CMD(), then include
 * this file, which undefines it again (as KVM's kvm-x86-ops.h is used).
 * Not installed.
 *
 * KQP_CMD(NAME, name, struct, last, flags, kind, reserved), in the order
 * of enum kqp_cmd:
 *   NAME    KQP_CMD_NAME and KQP_IOCTL_NAME (<rdma/kqp-abi.h>);
 *   name    the kernel's kqp_name_ioctl() runs it;
 *   struct  its argument;
 *   last    the last member of the argument's first version: a shorter
 *           size is EINVAL.  Moving it later breaks every caller built
 *           before, and nothing here would notice: the selftests check
 *           that the kernel does what this list says, not that the list
 *           kept its word;
 *   flags   the flags it knows; any other is EOPNOTSUPP;
 *   kind    TABLE: runs on the caller's table; NO_TABLE: uses none
 *           (device queries, a new channel); REFAULT: answers under a
 *           lock, and runs again after an EFAULT once the argument is
 *           faulted in (kqp_ucmd_respond_locked());
 *   reserved  the argument's reserved members, in parentheses, nested
 *           ones as attr.__reserved: one that is not zero is EOPNOTSUPP
 *           before the command runs.  Those of a structure the argument
 *           points to are the command's to check.
 */
KQP_CMD(QUERY, query, struct kqp_query, __reserved, 0, NO_TABLE, (__reserved))
KQP_CMD(CREATE_ID, create_id, struct kqp_create_id, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(DESTROY_ID, destroy_id, struct kqp_destroy_id,
	out_events_reported, 0, TABLE, ())
KQP_CMD(BIND_ADDR, bind_addr, struct kqp_bind_addr, addr, 0, TABLE,
	(__reserved))
KQP_CMD(RESOLVE_ADDR, resolve_addr, struct kqp_resolve_addr, dst_addr, 0, TABLE,
	())
KQP_CMD(RESOLVE_ROUTE, resolve_route, struct kqp_resolve_route,
	timeout_ms, 0, TABLE, ())
KQP_CMD(QUERY_ID, query_id, struct kqp_query_id, out_paths, 0, TABLE, ())
KQP_CMD(LISTEN, listen, struct kqp_listen, backlog, 0, TABLE, ())
KQP_CMD(CONNECT, connect, struct kqp_connect, param, 0, TABLE,
	(__reserved, param.__reserved))
KQP_CMD(ACCEPT, accept, struct kqp_accept, param, 0, TABLE,
	(__reserved, param.__reserved))
KQP_CMD(REJECT, reject, struct kqp_reject, private_data, 0, TABLE, ())
KQP_CMD(DISCONNECT, disconnect, struct kqp_id_cmd, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(SET_OPTION, set_option, struct kqp_set_option, optval, 0, TABLE, ())
KQP_CMD(INIT_QP_ATTR, init_qp_attr, struct kqp_init_qp_attr, out_attr, 0, TABLE,
	(__reserved))
KQP_CMD(NOTIFY, notify, struct kqp_notify, event, 0, TABLE, ())
KQP_CMD(ESTABLISH, establish, struct kqp_id_cmd, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(JOIN_MCAST, join_mcast, struct kqp_join_mcast, addr, 0, REFAULT,
	(__reserved))
KQP_CMD(LEAVE_MCAST, leave_mcast, struct kqp_leave_mcast, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(MIGRATE_ID, migrate_id, struct kqp_migrate_id,
	out_events_reported, 0, TABLE, ())
KQP_CMD(GET_EVENT, get_event, struct kqp_get_event, out_private_data, 0, TABLE,
	(__reserved))
KQP_CMD(ATTACH, attach, struct kqp_attach, __reserved, 0, NO_TABLE,
	(__reserved))
KQP_CMD(CTX_INFO, ctx_info, struct kqp_ctx_info, out_files, 0, TABLE,
	(__reserved))
KQP_CMD(QUERY_DEVICE, query_device, struct kqp_query_device,
	out_phys_port_cnt, 0, NO_TABLE, (__reserved))
KQP_CMD(QUERY_PORT, query_port, struct kqp_query_port, __reserved, 0, NO_TABLE,
	(__reserved))
KQP_CMD(QUERY_GID, query_gid, struct kqp_query_gid, out_gid, 0, NO_TABLE, ())
KQP_CMD(QUERY_PKEY, query_pkey, struct kqp_query_pkey, out_pkey, 0, NO_TABLE,
	())
KQP_CMD(ALLOC_PD, alloc_pd, struct kqp_alloc_pd,
	out_pd, KQP_ALLOC_PD_DEFAULT, TABLE, (__reserved, __reserved_out))
KQP_CMD(DEALLOC_PD, dealloc_pd, struct kqp_dealloc_pd, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(CREATE_COMP_CHANNEL, create_comp_channel,
	struct kqp_create_comp_channel, __reserved, 0, NO_TABLE, (__reserved))
KQP_CMD(CREATE_CQ, create_cq, struct kqp_create_cq, out_ring, 0, TABLE, ())
KQP_CMD(DESTROY_CQ, destroy_cq, struct kqp_destroy_cq, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(FLUSH_CQ, flush_cq, struct kqp_flush_cq, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(CREATE_QP, create_qp, struct kqp_create_qp, out_recv_ring,
	KQP_CREATE_QP_SQ_SIG_ALL | KQP_CREATE_QP_RINGS |
	KQP_CREATE_QP_RECV_ASYNC, REFAULT, (__reserved2, cap.__reserved))
KQP_CMD(DESTROY_QP, destroy_qp, struct kqp_destroy_qp,
	out_recv_cq_events, 0, TABLE, (__reserved))
KQP_CMD(MODIFY_QP, modify_qp, struct kqp_modify_qp, attr, 0, TABLE,
	(attr.__reserved))
KQP_CMD(QUERY_QP, query_qp, struct kqp_query_qp, out_sq_sig_all, 0, TABLE, ())
KQP_CMD(POST_SEND, post_send, struct kqp_post, out_posted, 0, TABLE, ())
KQP_CMD(POST_RECV, post_recv, struct kqp_post, out_posted, 0, TABLE, ())
KQP_CMD(CREATE_ASYNC_FD, create_async_fd, struct kqp_create_async_fd,
	__reserved, 0, TABLE, (__reserved))
KQP_CMD(REG_MR, reg_mr, struct kqp_reg_mr, __reserved, 0, TABLE, (__reserved))
KQP_CMD(DEREG_MR, dereg_mr, struct kqp_dereg_mr, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(CREATE_AH, create_ah, struct kqp_create_ah, __reserved2, 0, TABLE,
	(__reserved, __reserved2))
KQP_CMD(DESTROY_AH, destroy_ah, struct kqp_destroy_ah, __reserved, 0, TABLE,
	(__reserved))
KQP_CMD(ATTACH_MCAST, attach_mcast, struct kqp_mcast_attach, gid, 0, TABLE,
	(__reserved))
KQP_CMD(DETACH_MCAST, detach_mcast, struct kqp_mcast_attach, gid, 0, TABLE,
	(__reserved))
KQP_CMD(CREATE_SRQ, create_srq, struct kqp_create_srq, __reserved2, 0, TABLE,
	(__reserved, __reserved2, attr.__reserved))
KQP_CMD(DESTROY_SRQ, destroy_srq, struct kqp_destroy_srq,
	out_events_reported, 0, TABLE, ())
KQP_CMD(MODIFY_SRQ, modify_srq, struct kqp_modify_srq, attr, 0, TABLE,
	(attr.__reserved))
KQP_CMD(QUERY_SRQ, query_srq, struct kqp_query_srq, out_attr, 0, TABLE,
	(__reserved))
KQP_CMD(POST_SRQ_RECV, post_srq_recv, struct kqp_post, out_posted, 0, TABLE, ())
KQP_CMD(DOORBELL, doorbell, struct kqp_doorbell,
	__reserved, KQP_DOORBELL_WAKE_POLLER, TABLE, (__reserved))
KQP_CMD(CREATE_POLLER, create_poller, struct kqp_create_poller,
	__reserved, 0, TABLE, (__reserved))

#undef KQP_CMD
