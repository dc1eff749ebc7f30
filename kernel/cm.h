/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * RDMA CM ids, their events and multicast memberships.
 */
#ifndef KQP_CM_H
#define KQP_CM_H

#include "kqp.h"

/*
 * The three lifetimes of a cm_id (struct kqp_cm_id):
 *  - the table entry: reserved (reads as NULL), published, claimed (swapped
 *    for XA_ZERO_ENTRY by the one destroyer), erased last by
 *    kqp_object_release_id().  What can name the id.
 *  - @obj.users: the table's reference and one per command using the id;
 *    the destroyer drains it (kqp_object_drain()) before the rdma_cm id
 *    goes.  What keeps the id usable.
 *  - @mem_ref: the struct's memory: the id holds one and a QP created on
 *    it one, so a QP being destroyed can always take the id's mutex.
 *    What keeps the struct.
 *
 */

/* What an id waits for its owner to answer (struct kqp_cm_id.answer). */
enum kqp_cm_answer {
	KQP_ANSWER_NONE,
	KQP_ANSWER_REQUEST,
	KQP_ANSWER_RESPONSE,
};

/**
 * struct kqp_cm_id - an RDMA CM id owned by a file
 * @obj: handle and lifetime
 * @kfile: the owning file, whose queue gets the id's events; changes only
 *	under the rdma_cm handler lock and both files' locks (migrate)
 * @cm_id: the kernel's id; NULL once destroyed (device removal)
 * @uid: the caller's value reported with events
 * @mutex: serialises commands on this id
 * @ready: events are reported; false for an id from a connection request
 *	until it is accepted, as nothing in userspace can name it before
 * @named: commands may name the id; false for an id from a connection
 *	request until GET_EVENT reported that request (under kfile->lock),
 *	as the id still belongs to the event that announces it
 * @listening: LISTEN succeeded; under @mutex
 * @addr_resolved: rdma_cm reported ADDR_RESOLVED, so the id has its device
 *	(see kqp_resolve_route_ioctl())
 * @removed: rdma_cm reported DEVICE_REMOVAL; under the rdma_cm handler lock
 * @answer: what the id waits for the caller to answer, if anything: a
 *	connection request (ACCEPT or REJECT) or a connection response
 *	(ESTABLISH or REJECT); set by the event handler and cleared by those
 *	commands, all under the rdma_cm handler lock (see kqp_cm_answer())
 * @events_reported: events for this id taken by GET_EVENT
 * @cm_events: events rdma_cm delivered for the id; written under the
 *	rdma_cm handler lock, waited on by NOTIFY (see kqp_notify_ioctl())
 * @backlog: connection requests a listener may still queue (never below 0)
 * @close_work: destroys @cm_id after DEVICE_REMOVAL
 * @mc_ids: handle -> struct kqp_mcast joined through this id; changed
 *	under @mutex
 * @purge_list: on a destroyer's list of ids to destroy
 * @qp: the QP created on the id; changed under @mutex and the rdma_cm
 *	handler lock (kqp_cm_id_set_qp()), so either keeps it
 * @mem_ref: keeps the struct: the id holds one, and its QP one, so a QP
 *	being destroyed can always take @mutex
 */
struct kqp_cm_id {
	struct kqp_object obj;
	struct kqp_file *kfile;
	struct rdma_cm_id *cm_id;
	u64 uid;
	struct mutex mutex;	/* commands on this id */
	bool ready;
	bool named;
	bool listening;
	bool addr_resolved;
	bool removed;
	u8 answer;
	int events_reported;
	unsigned int cm_events;
	atomic_t backlog;
	struct work_struct close_work;
	struct xarray mc_ids;
	struct list_head purge_list;
	struct kqp_qp *qp;
	struct kref mem_ref;
};

/**
 * struct kqp_mcast - a multicast group joined through a UD id
 * @ctx: the id; the id destroys its memberships, so no reference is held
 * @id: handle, among @ctx's memberships; it moves with @ctx on migrate
 * @uid: the caller's value reported with the group's events
 * @events_reported: events for this membership taken by GET_EVENT
 * @addr: the group
 */
struct kqp_mcast {
	struct kqp_cm_id *ctx;
	u32 id;
	u64 uid;
	int events_reported;
	struct sockaddr_storage addr;
};

/**
 * struct kqp_event - an rdma_cm event waiting to be reported
 * @list: in kfile->events
 * @ctx: the id the event is for (the listener for CONNECT_REQUEST)
 * @child: CONNECT_REQUEST: the new id, owned by this event until reported
 * @mc: multicast events: the membership
 * @resp: the answer GET_EVENT gives
 */
struct kqp_event {
	struct list_head list;
	struct kqp_cm_id *ctx;
	struct kqp_cm_id *child;
	struct kqp_mcast *mc;
	struct kqp_get_event resp;
};

/* cm_id.c */
int kqp_create_id_ioctl(struct kqp_ucmd *ucmd);
int kqp_destroy_id_ioctl(struct kqp_ucmd *ucmd);
int kqp_bind_addr_ioctl(struct kqp_ucmd *ucmd);
int kqp_resolve_addr_ioctl(struct kqp_ucmd *ucmd);
int kqp_resolve_route_ioctl(struct kqp_ucmd *ucmd);
int kqp_query_id_ioctl(struct kqp_ucmd *ucmd);
int kqp_listen_ioctl(struct kqp_ucmd *ucmd);
int kqp_connect_ioctl(struct kqp_ucmd *ucmd);
int kqp_accept_ioctl(struct kqp_ucmd *ucmd);
int kqp_reject_ioctl(struct kqp_ucmd *ucmd);
int kqp_disconnect_ioctl(struct kqp_ucmd *ucmd);
int kqp_establish_ioctl(struct kqp_ucmd *ucmd);
int kqp_set_option_ioctl(struct kqp_ucmd *ucmd);
void kqp_cm_id_report(struct kqp_cm_id *ctx, enum rdma_cm_event_type type);
int kqp_init_qp_attr_ioctl(struct kqp_ucmd *ucmd);
int kqp_notify_ioctl(struct kqp_ucmd *ucmd);
void kqp_cm_id_destroy(struct kqp_ucontext *uctx, struct kqp_object *obj);
struct kqp_cm_id *kqp_cm_id_get(struct kqp_ucmd *ucmd, u32 id);
void kqp_cm_id_put(struct kqp_cm_id *ctx);
struct kqp_cm_id *kqp_cm_id_lock(struct kqp_ucmd *ucmd, u32 id);
void kqp_cm_id_unlock(struct kqp_cm_id *ctx);
int kqp_cm_id_check_bound(struct kqp_cm_id *ctx);
void kqp_cm_id_mem_put(struct kqp_cm_id *ctx);
void kqp_cm_id_set_qp(struct kqp_cm_id *ctx, struct kqp_qp *qp);

/* event.c */
int kqp_migrate_id_ioctl(struct kqp_ucmd *ucmd);
struct kqp_event *kqp_event_alloc(struct kqp_cm_id *ctx,
				  struct rdma_cm_id *cm_id,
				  struct rdma_cm_event *event);
int kqp_get_event_ioctl(struct kqp_ucmd *ucmd);
__poll_t kqp_events_poll(struct kqp_file *kfile, struct file *filp,
			 struct poll_table_struct *wait);
void kqp_event_queue(struct kqp_file *kfile, struct kqp_event *ev);
int kqp_events_purge(struct kqp_cm_id *ctx, struct list_head *children);
void kqp_events_purge_mcast(struct kqp_mcast *mc);
void kqp_events_free_all(struct kqp_file *kfile);

/* mcast.c */
int kqp_join_mcast_ioctl(struct kqp_ucmd *ucmd);
int kqp_leave_mcast_ioctl(struct kqp_ucmd *ucmd);
void kqp_mcast_free_all(struct kqp_cm_id *ctx);
int kqp_attach_mcast_ioctl(struct kqp_ucmd *ucmd);
int kqp_detach_mcast_ioctl(struct kqp_ucmd *ucmd);
void kqp_qp_mcast_detach_all(struct kqp_qp *qp);

#endif /* KQP_CM_H */
