/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * kqp internal definitions shared by the module's objects.
 */
#ifndef KQP_H
#define KQP_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/refcount.h>
#include <linux/types.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/kqp-abi.h>

#define KQP_MODNAME "kqp"

extern unsigned int kqp_max_backlog;

/**
 * struct kqp_device - an RDMA device as kqp tracks it
 * @ibdev: the device; valid until the ib_client remove callback returns
 *
 * Created by the ib_client add callback and destroyed by its remove
 * callback; both run under kqp_devices_rwsem held for writing, so anyone
 * holding it for reading sees a live @ibdev.
 */
struct kqp_device {
	struct ib_device *ibdev;
};

/**
 * struct kqp_file - the context behind one open of /dev/kqp
 * @filp: the open file
 * @objects: handle -> struct kqp_object; a reserved (NULL) entry is an
 *	object being built, XA_ZERO_ENTRY one being destroyed
 * @lock: protects @events and orders an object's publication with the
 *	event that announces it
 * @events: struct kqp_event, oldest first
 * @poll_wait: woken when an event is queued
 */
struct kqp_file {
	struct file *filp;
	struct xarray objects;
	struct mutex lock;
	struct list_head events;
	wait_queue_head_t poll_wait;
};

enum kqp_obj_type {
	KQP_OBJ_CM_ID = 1,
};

/**
 * struct kqp_object - what every handle in a file's table names
 * @id: the handle
 * @type: what the object is
 * @users: one for the table, one per command using it; the object's
 *	resources may go once it drops to zero
 * @unused: completed when @users drops to zero
 *
 * Lifetime, as iommufd and ucma: an object is reserved, built, then
 * published; a lookup takes a @users reference under the xarray lock;
 * destruction has one winner, the caller that swaps the published entry
 * for XA_ZERO_ENTRY, and it waits for @users to reach zero before freeing
 * anything a command could be using.
 */
struct kqp_object {
	u32 id;
	enum kqp_obj_type type;
	refcount_t users;
	struct completion unused;
};

int kqp_object_reserve(struct kqp_file *kfile, struct kqp_object *obj,
		       enum kqp_obj_type type);
void kqp_object_publish(struct kqp_file *kfile, struct kqp_object *obj);
void kqp_object_release_id(struct kqp_file *kfile, struct kqp_object *obj);
struct kqp_object *kqp_object_get(struct kqp_file *kfile, u32 id,
				  enum kqp_obj_type type);
void kqp_object_put(struct kqp_object *obj);
void kqp_object_drain(struct kqp_object *obj);
struct kqp_object *kqp_object_claim_id(struct kqp_file *kfile, u32 id,
				       enum kqp_obj_type type);
bool kqp_object_claim(struct kqp_file *kfile, struct kqp_object *obj);

/**
 * struct kqp_cm_id - an RDMA CM id owned by a file
 * @obj: handle and lifetime
 * @kfile: the owning file; changes only under the cm_id's handler lock
 *	and both files' locks (migrate)
 * @cm_id: the kernel's id; NULL once destroyed (device removal)
 * @uid: the caller's value reported with events
 * @mutex: serialises commands on this id
 * @ready: events are reported; false for an id from a connection request
 *	until it is accepted, as nothing in userspace can name it before
 * @events_reported: events for this id taken by GET_EVENT
 * @backlog: connection requests a listener may still queue
 * @close_work: destroys @cm_id after DEVICE_REMOVAL
 * @mc_ids: handle -> struct kqp_mcast joined through this id; changed
 *	under @mutex
 * @purge_list: on a destroyer's list of ids to destroy
 */
struct kqp_cm_id {
	struct kqp_object obj;
	struct kqp_file *kfile;
	struct rdma_cm_id *cm_id;
	u64 uid;
	struct mutex mutex;
	bool ready;
	int events_reported;
	atomic_t backlog;
	struct work_struct close_work;
	struct xarray mc_ids;
	struct list_head purge_list;
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

/**
 * struct kqp_ucmd - one ioctl being executed
 * @kfile: the file it was issued on
 * @ubuffer: the caller's argument
 * @user_size: the caller's idea of the argument's size
 * @cmd: kernel copy of the argument, zero-extended to the kernel's size
 */
struct kqp_ucmd {
	struct kqp_file *kfile;
	void __user *ubuffer;
	u32 user_size;
	void *cmd;
};

int kqp_ucmd_respond(struct kqp_ucmd *ucmd, size_t cmd_len);

/* device.c */
int kqp_device_init(void);
void kqp_device_exit(void);
int kqp_query(struct kqp_ucmd *ucmd);

/* file.c */
extern const struct file_operations kqp_fops;

/* object.c */
void kqp_file_destroy_objects(struct kqp_file *kfile);

/* cm_id.c */
int kqp_create_id(struct kqp_ucmd *ucmd);
int kqp_destroy_id(struct kqp_ucmd *ucmd);
int kqp_bind_addr(struct kqp_ucmd *ucmd);
int kqp_resolve_addr(struct kqp_ucmd *ucmd);
int kqp_resolve_route(struct kqp_ucmd *ucmd);
int kqp_query_id(struct kqp_ucmd *ucmd);
int kqp_listen(struct kqp_ucmd *ucmd);
int kqp_connect(struct kqp_ucmd *ucmd);
int kqp_accept(struct kqp_ucmd *ucmd);
int kqp_reject(struct kqp_ucmd *ucmd);
int kqp_disconnect(struct kqp_ucmd *ucmd);
int kqp_establish(struct kqp_ucmd *ucmd);
int kqp_set_option(struct kqp_ucmd *ucmd);
int kqp_init_qp_attr(struct kqp_ucmd *ucmd);
int kqp_notify(struct kqp_ucmd *ucmd);
int kqp_migrate_id(struct kqp_ucmd *ucmd);
void kqp_cm_id_destroy(struct kqp_file *kfile, struct kqp_object *obj);
struct kqp_cm_id *kqp_cm_id_get(struct kqp_file *kfile, u32 id);
void kqp_cm_id_put(struct kqp_cm_id *ctx);
void kqp_ah_attr_to_user(struct ib_device *ibdev, struct kqp_ah_attr *dst,
			 struct rdma_ah_attr *src);

/* event.c */
int kqp_get_event(struct kqp_ucmd *ucmd);
__poll_t kqp_events_poll(struct kqp_file *kfile, struct file *filp,
			 struct poll_table_struct *wait);
void kqp_event_queue(struct kqp_file *kfile, struct kqp_event *ev);
int kqp_events_purge(struct kqp_cm_id *ctx, struct list_head *children);
void kqp_events_purge_mcast(struct kqp_mcast *mc);
void kqp_events_free_all(struct kqp_file *kfile);

/* mcast.c */
int kqp_join_mcast(struct kqp_ucmd *ucmd);
int kqp_leave_mcast(struct kqp_ucmd *ucmd);
void kqp_mcast_free_all(struct kqp_cm_id *ctx);

#endif /* KQP_H */
