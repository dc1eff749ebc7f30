/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * libkqp internals.  Helpers here return 0 or a negative errno (a helper
 * that makes something hands it back through an out parameter, or returns
 * it with the -errno in *err); only the public librdmacm/libibverbs entry
 * points turn that into -1 and errno, or into the errno value libibverbs
 * returns.  An entry point that another needs is a static kqp_ helper
 * with a thin exported wrapper.
 *
 * Names:
 *  - the session (session.c): the one /dev/kqp file the process keeps
 *    for its verbs.  Its table (kernel/kqp.h says what a table is) holds
 *    every PD, MR, AH, CQ, QP and SRQ the process makes; an event
 *    channel's file attaches to it, so its ids' QPs live there too.
 *  - struct kqp_context: the session as libibverbs' ibv_context for one
 *    device.
 *  - struct kqp_l<object> (kqp_lpd, kqp_lmr, kqp_lah, kqp_lcq, kqp_lqp,
 *    kqp_lsrq): the library's side of a kernel object, "l" for library.
 *    Each begins with the libibverbs struct the caller holds, whose
 *    handle is the object's handle in the session's table, and adds what
 *    libkqp keeps: a ring's mapping and indices, locks.  A kqp_lwq is
 *    one of a QP's submission rings.
 */
#ifndef KQP_PRIV_H
#define KQP_PRIV_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/kqp-abi.h>

#define KQP_DEV_PATH "/dev/kqp"

#define KQP_EXPORT __attribute__((visibility("default")))

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * A kqp wire value that libkqp passes through as libibverbs' own (work
 * request and completion opcodes and flags): they must stay equal.
 */
#define KQP_SAME_AS_IBV(kqp, ibv) \
	_Static_assert((unsigned int)(kqp) == (unsigned int)(ibv), \
		       #kqp " must equal " #ibv)

/* librdmacm's convention: set errno, return -1. */
static inline int kqp_err(int err)
{
	errno = err;
	return -1;
}

/* libibverbs' convention for calls that make an object: errno, NULL. */
static inline void *kqp_err_ptr(int err)
{
	errno = err;
	return NULL;
}

/* A helper's -errno as librdmacm's -1/errno. */
static inline int kqp_ret(int ret)
{
	return ret < 0 ? kqp_err(-ret) : ret;
}

/*
 * libibverbs exports that its installed headers do not declare (they are
 * in rdma-core's driver.h and memory interfaces); libkqp defines them.
 */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* marshall.c: kernel structures to and from the verbs ones */
void kqp_path_rec_from_kern(struct ibv_sa_path_rec *dst,
			    const struct kqp_path_rec *src);
void kqp_ah_attr_to_kern(struct kqp_ah_attr *dst,
			 const struct ibv_ah_attr *src);
void kqp_ah_attr_from_kern(struct ibv_ah_attr *dst,
			   const struct kqp_ah_attr *src);
void kqp_qp_attr_to_kern(struct kqp_qp_attr *dst,
			 const struct ibv_qp_attr *src);
void kqp_qp_attr_from_kern(struct ibv_qp_attr *dst,
			   const struct kqp_qp_attr *src);
void kqp_qp_cap_to_kern(struct kqp_qp_cap *dst, const struct ibv_qp_cap *src);
void kqp_qp_cap_from_kern(struct ibv_qp_cap *dst,
			  const struct kqp_qp_cap *src);

/* session.c */
int kqp_dev_open(void);
int kqp_session_fd(void);
bool kqp_session_poller(void);
void kqp_session_poller_gone(void);
int kqp_env_ulong(const char *name, unsigned long max, unsigned long *val);
int kqp_session_async_fd(void);
int kqp_channel_open(void);
void kqp_channel_close(int fd);
int kqp_is_kqp_fd(int fd);
int kqp_ioctl(int fd, unsigned long req, void *arg);
void *kqp_ioctl_new(int fd, unsigned long req, void *cmd, size_t size,
		    int *err);
int kqp_query_devices(int fd, struct kqp_device_info **infos, uint32_t *n);
int kqp_query_devices_once(struct kqp_device_info **infos, uint32_t *n);
void *kqp_device_list_new(int *num_devices, struct kqp_device_info **infos,
			  uint32_t *n, int *err);

/* device.c */
struct kqp_ibv_device {
	struct ibv_device ibv;
	uint32_t index;
	uint64_t node_guid;	/* network byte order, as the kernel keeps it */
	uint32_t phys_port_cnt;
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	unsigned int refcnt;
	struct kqp_ibv_device *next;
};

static inline struct kqp_ibv_device *to_kdev(struct ibv_device *dev)
{
	return container_of(dev, struct kqp_ibv_device, ibv);
}

int kqp_device_get_by_index(uint32_t index, struct kqp_ibv_device **kdevp);
void kqp_device_put(struct kqp_ibv_device *kdev);

/* context.c */
struct kqp_lpd;

/**
 * struct kqp_context - libkqp's ibv_context: one per device per process, and
 *	one per ibv_open_device() call
 * @vctx: libibverbs' extended context; its ops are query_port and
 *	query_device_ex (see verbs.c), create_qp_ex (qp.c) and
 *	create_cq_ex (cq.c).  Callers see vctx.context, whose
 *	cmd_fd is the session's fd
 * @kdev: the device
 * @default_pd: the process's default PD on the device, while ids use it
 * @default_pd_refs: ids bound to the device, under pd_lock
 * @pd_lock: protects the default PD
 * @shared: the process's context for the device (ids, rdma_get_devices()),
 *	not one from ibv_open_device()
 * @next: in the process's list
 */
struct kqp_context {
	struct verbs_context vctx;
	struct kqp_ibv_device *kdev;
	struct kqp_lpd *default_pd;
	unsigned int default_pd_refs;
	pthread_mutex_t pd_lock;
	bool shared;
	struct kqp_context *next;
};

static inline struct kqp_context *to_kctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct kqp_context, vctx.context);
}

int kqp_context_for_device(uint32_t index, struct kqp_context **kctxp);
void kqp_contexts_lock(void);
void kqp_contexts_unlock(void);
void kqp_contexts_forget(void);
int kqp_context_get_default_pd(struct kqp_context *kctx, struct ibv_pd **pdp);
void kqp_context_put_default_pd(struct kqp_context *kctx);

static inline uint32_t kqp_dev_index(struct ibv_context *ctx)
{
	return to_kctx(ctx)->kdev->index;
}

/* verbs.c */
int kqp_query_port_ex(struct ibv_context *context, uint8_t port_num,
		      struct ibv_port_attr *attr, size_t len);
int kqp_query_device_ex(struct ibv_context *context,
			const struct ibv_query_device_ex_input *input,
			struct ibv_device_attr_ex *attr, size_t attr_size);
struct kqp_lpd {
	struct ibv_pd ibv;
	bool is_default;
};

struct kqp_lmr {
	struct ibv_mr ibv;
};

struct kqp_lah {
	struct ibv_ah ibv;
};

/* cq.c */
/**
 * struct kqp_lcq - libkqp's ibv_cq: a mapped completion ring
 * @ibv: what callers see
 * @lock: serialises pollers and armers of the CQ
 * @ring: the mapping
 * @ring_size: its length
 * @head: consumer index (ours to write)
 * @tail: producer index (the kernel's)
 * @arm: arm word (ours to write)
 * @flags: ring flags (the kernel's)
 * @cqes: the entries
 * @mask: entries - 1
 * @head_cache: our own copy of *@head
 * @arm_seq: the last arm sequence written
 * @auto_id: for a CQ kqp made for an id's QP: the id
 * @ibx: the same CQ, as the ibv_cq_ex of one ibv_create_cq_ex() made
 *	(its leading fields are struct ibv_cq's, as libibverbs lays it out)
 * @cur: between start_poll and end_poll: a copy of the entry the read_*
 *	ops report, read from the ring once
 * @poll_head: the index of @cur in the ring
 * @poll_valid: @cur is not consumed yet (next_poll found none after it)
 */
struct kqp_lcq {
	union {
		struct ibv_cq ibv;
		struct ibv_cq_ex ibx;
	};
	pthread_spinlock_t lock;
	void *ring;
	size_t ring_size;
	uint32_t *head;
	uint32_t *tail;
	uint32_t *arm;
	uint32_t *flags;
	struct kqp_cqe *cqes;
	uint32_t mask;
	uint32_t head_cache;
	uint32_t arm_seq;
	struct rdma_cm_id *auto_id;
	struct kqp_cqe cur;
	uint32_t poll_head;
	bool poll_valid;
};

static inline struct kqp_lcq *to_lcq(struct ibv_cq *cq)
{
	return container_of(cq, struct kqp_lcq, ibv);
}

int kqp_cq_map(struct kqp_lcq *cq, const struct kqp_ring_info *info,
	       uint32_t handle, int cqe, struct ibv_context *ctx,
	       struct ibv_comp_channel *channel, void *cq_context);
void kqp_cq_unmap(struct kqp_lcq *cq);
void kqp_cq_wait_acks(struct ibv_cq *cq, uint32_t comp, uint32_t async);
int kqp_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int kqp_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *kqp_create_cq_ex(struct ibv_context *context,
				   struct ibv_cq_init_attr_ex *attr);

/* qp.c */
/**
 * struct kqp_wr_batch - the work requests ibv_wr_*() built since
 *	ibv_wr_start(), in the kernel's KQP_IOCTL_POST_SEND form
 * @lock: held from ibv_wr_start() to ibv_wr_complete()/ibv_wr_abort(), as
 *	rxe holds its send queue's lock
 * @buf: the requests, each followed by its SGEs or inline bytes
 * @len: bytes used
 * @cap: bytes allocated; it grows as batches need, up to @max
 * @max: what the QP's send depth can take: max_send_wr requests of the
 *	largest size its caps allow
 * @last: offset of the last request's header, which the setters change
 * @count: requests built
 * @err: the first error of the batch (an errno), returned at complete
 * @started: between ibv_wr_start() and its complete or abort
 */
struct kqp_wr_batch {
	pthread_mutex_t lock;
	char *buf;
	size_t len;
	size_t cap;
	size_t max;
	size_t last;
	uint32_t count;
	int err;
	bool started;
};

/**
 * struct kqp_lqp - libkqp's ibv_qp
 * @ibv: what callers see
 * @ibx: the same, as the ibv_qp_ex of a QP made through the extended
 *	calls (its first member is @ibv)
 * @cap: the actual capabilities
 * @id: the id the QP was made on, while both exist
 * @gone: the kernel's QP went with its id; the struct stays for the
 *	caller's ibv_destroy_qp(), as librdmacm leaves the QP to the caller
 * @is_ex: made through ibv_create_qp_ex() (or rdma_create_qp_ex() with
 *	more than a PD in comp_mask): ibv_qp_to_qp_ex() returns @ibx
 * @batch: the ibv_wr_*() batch, with @is_ex
 */
/**
 * struct kqp_lwq - our side of one of a QP's submission rings
 * @lock: serialises posting to the queue: filling entries, ringing, and
 *	moving the tail back over entries the kernel refused
 * @hdr: the ring's header, shared with the kernel
 * @entries: its first entry
 * @nr: entries, a power of two; 0: the queue has no ring, post by ioctl
 * @entry_size: bytes per entry
 * @tail: our producer index; @hdr->tail is only ever stored
 * @max_sge: the QP's SGEs per request, as its caps say
 * @max_inline: the QP's inline bytes per send
 * @depth: requests the device takes at once (the caps' max_*_wr)
 * @async: a send ring the kernel drains after completions and whose
 *	@hdr->retired it keeps (KQP_QP_RINGS_SEND_ASYNC)
 */
struct kqp_lwq {
	pthread_mutex_t lock;
	struct kqp_wq_ring_hdr *hdr;
	char *entries;
	uint32_t nr;
	uint32_t entry_size;
	uint32_t tail;
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t depth;
	bool async;
};

struct kqp_lqp {
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex ibx;
	};
	struct ibv_qp_cap cap;
	struct rdma_cm_id *id;
	bool gone;
	bool is_ex;
	struct kqp_wr_batch batch;
	/*
	 * The rings the kernel offered, mapped at the first post (qp.c:
	 * kqp_qp_rings()): @ring_info as CREATE_QP gave it (its size is
	 * the mapping's), @ring_state one of enum kqp_ring_state, @ring_lock
	 * serialising the mapping, @ring the mapping once made, @ring_gen the
	 * kqp_fork_gen() of the process that may use it.
	 */
	struct kqp_qp_ring_info ring_info;
	pthread_mutex_t ring_lock;
	int ring_state;
	void *ring;
	unsigned int ring_gen;
	struct kqp_lwq sq;
	struct kqp_lwq rq;
};

/* Where a QP's rings are: never offered or not mappable, offered, mapped. */
enum kqp_ring_state {
	KQP_RINGS_NONE,
	KQP_RINGS_OFFERED,
	KQP_RINGS_MAPPED,
};

/* Bytes a request in the kernel's form takes, with its SGEs or inline data. */
static inline size_t kqp_send_wr_len(const struct kqp_send_wr *k)
{
	if (k->send_flags & KQP_SEND_FLAG_INLINE)
		return kqp_send_wr_bytes(0, k->inline_len);
	return kqp_send_wr_bytes(k->num_sge, 0);
}

static inline size_t kqp_recv_wr_len(const struct kqp_recv_wr *k)
{
	return kqp_recv_wr_bytes(k->num_sge);
}

/**
 * struct kqp_post_target - what a list is posted to
 * @fd: the file the kernel's object is on
 * @handle: the QP's handle, or the SRQ's
 * @type: the QP's type (an SRQ's receives: IBV_QPT_RC, unused)
 * @gone: the kernel's QP went with its id
 * @wq: the queue's ring, or NULL: post with the ioctl
 * @rq: for a send, the QP's asynchronous receive ring, drained by the
 *	send's doorbell too; or NULL
 */
struct kqp_post_target {
	int fd;
	uint32_t handle;
	enum ibv_qp_type type;
	bool gone;
	struct kqp_lwq *wq;
	struct kqp_lwq *rq;
};

struct kqp_post_target kqp_qp_target(struct ibv_qp *qp, bool recv);
int kqp_post_buf(const struct kqp_post_target *t, unsigned long req,
		 bool recv, void *buf, size_t len, uint32_t count,
		 uint32_t *posted);
int kqp_create_qp_cmd(int fd, struct kqp_create_qp *cmd);
unsigned int kqp_fork_gen(void);
void kqp_qp_fini(struct kqp_lqp *qp);

static inline struct kqp_lqp *to_lqp(struct ibv_qp *qp)
{
	return container_of(qp, struct kqp_lqp, ibv);
}

int kqp_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		  struct ibv_send_wr **bad_wr);
int kqp_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad_wr);
int kqp_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr);
void kqp_qp_cmd_init(struct kqp_create_qp *cmd, struct kqp_lqp *qp,
		     enum ibv_qp_type type, int sq_sig_all,
		     const struct ibv_qp_cap *cap);
void kqp_qp_init(struct kqp_lqp *qp, const struct kqp_create_qp *cmd,
		 struct ibv_context *ctx, struct ibv_pd *pd,
		 const struct ibv_qp_init_attr *attr, enum ibv_qp_state state);
int kqp_qp_wait_events(struct kqp_lqp *qp, uint32_t reported);
int kqp_qp_destroy_kern(struct kqp_lqp *qp);
struct ibv_qp *kqp_create_qp_ex(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *attr);

/* qp_ex.c */
int kqp_qp_ex_check(const struct ibv_qp_init_attr_ex *attr);
bool kqp_qp_ex_wanted(const struct ibv_qp_init_attr_ex *attr);
void kqp_qp_ex_init(struct kqp_lqp *qp, const struct ibv_qp_init_attr_ex *attr);
void kqp_qp_ex_fini(struct kqp_lqp *qp);

/* srq.c */
/**
 * struct kqp_lsrq - libkqp's ibv_srq
 * @ibv: what callers see; its uid in the kernel, reported with its async
 *	events (ibv_async_event.element.srq)
 */
struct kqp_lsrq {
	struct ibv_srq ibv;
};

static inline struct kqp_lsrq *to_lsrq(struct ibv_srq *srq)
{
	return container_of(srq, struct kqp_lsrq, ibv);
}

struct ibv_srq *kqp_create_srq_ex(struct ibv_context *context,
				  struct ibv_srq_init_attr_ex *attr);

/* cma_qp.c */
void kqp_id_qp_gone(struct rdma_cm_id *id, const struct kqp_destroy_qp *d);

/* cma.c */
int kqp_create_id_qpt(struct rdma_event_channel *channel,
		      struct rdma_cm_id **id, void *context,
		      enum rdma_port_space ps, enum ibv_qp_type qp_type);

struct kqp_mc {
	struct kqp_mc *next;
	struct kqp_id *kid;
	void *context;
	int events_completed;
	pthread_cond_t cond;
	uint32_t handle;
	union ibv_gid mgid;
	uint16_t mlid;
	uint16_t join_flags;
	struct sockaddr_storage addr;
};

struct kqp_id {
	struct rdma_cm_id id;
	struct kqp_context *kctx;
	uint32_t handle;
	bool sync;
	bool active;		/* rdma_connect()ed: ESTABLISHED answers it */
	bool connect_error;
	int events_completed;
	pthread_mutex_t mut;
	pthread_cond_t cond;
	struct kqp_mc *mc_list;
	struct ibv_qp_init_attr *qp_init_attr;
	bool holds_default_pd;
	uint8_t initiator_depth;
	uint8_t responder_resources;
	void *connect;
	size_t connect_len;
};

static inline struct kqp_id *to_kid(struct rdma_cm_id *id)
{
	return container_of(id, struct kqp_id, id);
}

#endif /* KQP_PRIV_H */
