/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Stream rsockets on kqp: <rdma/rsocket.h> over libkqp's own ids, QPs
 * and CQs, speaking rdma-core's rsocket wire protocol (version 1), so
 * that either end of a connection may be rdma-core's librdmacm.
 *
 * The protocol, as rdma-core's librdmacm/rsocket.c defines it on the wire
 * (doc/design/rsocket.md has the whole of it):
 *  - one RC QP per connection; every message is an RDMA WRITE WITH
 *    IMMEDIATE, and the immediate's top three bits are its operation;
 *  - the connection's private data (struct krs_conn_data) gives each end
 *    the other's first receive area (half the receive buffer), the
 *    address of its target SGL (two struct krs_sge a peer writes), and
 *    how many messages it may send (credits, a 16-bit sequence);
 *  - data is written into the advertised area, with the length as the
 *    immediate (KRS_OP_DATA);
 *  - the receiver gives credits and the next half of its buffer back with
 *    KRS_OP_SGL: the new sequence limit as the immediate, and the half's
 *    struct krs_sge written into the sender's target SGL;
 *  - KRS_OP_CTRL carries disconnect, shutdown and keep-alive;
 *  - riomap(): each end's target area goes on past its SGL with an iomap
 *    of target_iomap_size entries (struct krs_iomap).  KRS_OP_IOMAP_SGL
 *    writes one of them, its index as the immediate, and riowrite() is a
 *    plain RDMA WRITE to what an entry names (rsocket_iomap.c).
 *
 * What a peer sends is checked before anything is read on its word: a
 * data message longer than what this end advertised and the peer has not
 * yet used, more messages than the credits given, an operation or a
 * completion the protocol does not have, each closes the connection
 * with EPROTO.  A peer can write its own numbers into the target SGL at
 * any time; they are only ever used as the peer's own addresses, and a
 * length from there bounds nothing but what is sent to it.
 *
 * Locking: one mutex per rsocket, held by every call on it; a blocking
 * call drops it only to poll() its fds.  The table of rsockets has its
 * own mutex, taken alone.  rpoll()'s sleepers have one too
 * (rsocket_poll.c), taken last, under an rsocket's or alone.
 */
#ifndef KQP_RSOCKET_H
#define KQP_RSOCKET_H

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>

/* The wire: rdma-core's values, which a stock peer sends and expects. */
#define KRS_MSG(op, data)	(((uint32_t)(op) << KRS_OP_SHIFT) | (uint32_t)(data))
#define KRS_MSG_OP(msg)		((uint32_t)(msg) >> KRS_OP_SHIFT)
#define KRS_MSG_DATA(msg)	((uint32_t)(msg) & KRS_DATA_MASK)
#define KRS_VERSION		1
#define KRS_CONN_FLAG_NET	(1 << 0)
#define KRS_CONN_FLAG_IOMAP	(1 << 1)
#define KRS_SGL_SIZE		2
#define KRS_OP_SHIFT		29
#define KRS_DATA_MASK		0x1fffffffu

enum krs_op {
	KRS_OP_DATA = 0,
	KRS_OP_WRITE = 2,	/* never on the wire */
	KRS_OP_SGL = 4,
	KRS_OP_IOMAP_SGL = 6,
	KRS_OP_CTRL = 7,
};

enum krs_ctrl {
	KRS_CTRL_DISCONNECT,
	KRS_CTRL_KEEPALIVE,
	KRS_CTRL_SHUTDOWN,
};

/* An area a peer may write: in the byte order of the end that reads it. */
struct krs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* The private data of the connect request and reply, big-endian. */
struct krs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;
	uint8_t reserved[3];
	uint8_t target_iomap_size;
	struct krs_sge target_sgl;
	struct krs_sge data_buf;
};

/* An entry of an iomap: in the byte order of the end that reads it. */
struct krs_iomap {
	uint64_t offset;
	struct krs_sge sge;
};

_Static_assert(sizeof(struct krs_iomap) == 24,
	       "an iomap entry is 24 bytes on the wire");

/**
 * struct krs_iomr - a buffer riomap() registered
 * @index: its entry in the peer's iomap; -1 for one the peer is not given
 * @sent: the peer has been sent its entry
 */
struct krs_iomr {
	struct krs_iomr *next;
	struct ibv_mr *mr;
	uint64_t offset;
	int index;
	bool sent;
};

_Static_assert(sizeof(struct krs_conn_data) == 40,
	       "rsocket's connection data is 40 bytes on the wire");

/* Defaults and limits, as rdma-core's. */
#define KRS_DEF_SQSIZE		384
#define KRS_DEF_RQSIZE		384
#define KRS_DEF_INLINE		64
#define KRS_DEF_MEM		(1 << 17)
#define KRS_DEF_WMEM		(1 << 17)
#define KRS_QP_MIN_SIZE		16
#define KRS_QP_MAX_SIZE		0xfffe
#define KRS_CTRL_SIZE		4	/* control messages in flight; 2^n */
#define KRS_SNDLOWAT		2048
#define KRS_OLAP_START		2048
#define KRS_MAX_TRANSFER	65536
#define KRS_MAX_BUF		(1u << 28)	/* a bound of kqp's own */
#define KRS_MAX_IOMAP		(127 << 8)	/* what 8 scaled bits hold */

/* States, ordered as rdma-core's: passive, opening, connected, ended. */
enum {
	KRS_INIT = 0,
	KRS_BOUND = 0x0001,
	KRS_LISTENING = 0x0002,
	KRS_OPENING = 0x0004,
	KRS_RESOLVING_ADDR = KRS_OPENING | 0x0010,
	KRS_RESOLVING_ROUTE = KRS_OPENING | 0x0020,
	KRS_CONNECTING = KRS_OPENING | 0x0040,
	KRS_ACCEPTING = KRS_OPENING | 0x0080,
	KRS_CONNECTED = 0x0100,
	KRS_WRITABLE = 0x0200,
	KRS_READABLE = 0x0400,
	KRS_CONNECT_RDWR = KRS_CONNECTED | KRS_READABLE | KRS_WRITABLE,
	KRS_CONNECT_ERROR = 0x0800,
	KRS_DISCONNECTED = 0x1000,
	KRS_ERROR = 0x2000,
};

struct krs_dg;

/**
 * struct krs - one rsocket
 * @index: what the caller holds: the fd of @ch, as rdma-core's (of the
 *	UDP socket for a datagram one)
 * @ref: one for the table and one for each call using it, under the
 *	table's lock; the last one frees it
 * @closed: rclose() took it out of the table
 * @svc: what the background thread does for it (KRS_SVC_*,
 *	rsocket_accept.c); 0 when it is not on the thread's list
 * @ka_next: when its next keep-alive is due (CLOCK_MONOTONIC seconds)
 * @ch: the id's event channel, non-blocking; blocking calls poll() it
 * @cch: the CQ's completion channel, non-blocking
 * @tsgl: the target SGL: where the peer writes the areas it gives
 * @tiomap: the @iomap_size entries after it, where the peer writes its
 *	riomap()s; read a field at a time, never trusted
 * @iomrs: this end's riomap()s
 * @remote_iomap: the peer's iomap: its address, key and entry count
 * @iomap_used: which of the peer's entries @iomrs hold, a bit each
 * @adv: the areas of @rbuf this end gave and the peer has not filled, in
 *	the order it fills them: what an incoming data message is checked
 *	against
 * @rmsg: received messages' lengths not yet read, @rq_size + 1 slots
 * @accept_queue: a listener's accepted rsockets, by index, written by the
 *	accepting thread and read by raccept(); [0] is non-blocking
 * @accept_fd: an accepted rsocket not yet established: its listener's
 *	queue, where its index goes once it is
 * @backlog: a listener's bounds on what it accepted (rsocket_accept.c)
 * @accepted_by: an accepted rsocket raccept() has not taken: its
 *	listener's @backlog, in which it counts, as queued once @queued
 */
/*
 * What a listener accepted in the background and raccept() has not taken,
 * bounded: at most @max established ones in its queue (rlisten()'s
 * backlog) and KRS_MAX_OPENING(@max) still opening.  Each has its QP and
 * buffers; past either bound a connect request is rejected, so that a
 * peer that connects again and again, or never finishes, cannot grow the
 * listener's process without end, and opening ones that never finish
 * cannot keep the queue's room from those that do.  The listener and
 * each rsocket counted hold a reference.  @lock is taken after any
 * rsocket's mutex, and nothing is taken under it.
 */
struct krs_backlog {
	pthread_mutex_t lock;
	int refs;
	int opening;
	int queued;
	int max;
	bool gone;	/* the listener was closed: nothing more is queued */
};

/* rlisten()'s backlog when it is 0, negative or more: the module's default max_backlog. */
#define KRS_MAX_BACKLOG		1024
#define KRS_MAX_OPENING(max)	((max) < 64 ? 64 : (max))

struct krs {
	int index;
	int ref;
	bool closed;
	/* kqp_fork_gen() of the process that made it: a fork child's are not. */
	unsigned int gen;
	unsigned int svc;
	long ka_next;
	int domain;
	pthread_mutex_t lock;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	int state;
	int err;
	int fd_flags;
	uint32_t so_opts;
	uint32_t tcp_opts;
	uint32_t ipv6_opts;
	int keepalive_time;
	/* RDMA_ROUTE: the path records to connect on, until the connect uses them. */
	struct ibv_path_data *route;
	uint32_t route_len;

	uint32_t sbuf_size;
	uint32_t rbuf_size;
	uint16_t sq_size;
	uint16_t rq_size;
	uint16_t sq_inline;
	uint16_t iomap_size;

	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool cq_armed;
	struct ibv_mr *smr;
	struct ibv_mr *rmr;
	struct ibv_mr *tmr;
	uint8_t *sbuf;
	uint8_t *rbuf;
	volatile struct krs_sge *tsgl;
	volatile struct krs_iomap *tiomap;
	struct krs_iomr *iomrs;
	struct krs_sge remote_iomap;
	uint64_t *iomap_used;
	bool iomap_pending;

	/* Sending. */
	bool swap;
	uint16_t sseq_no;
	uint16_t sseq_comp;
	int sqe_avail;
	uint32_t sbuf_avail;
	uint32_t sbuf_off;
	int target_sge;
	unsigned int ctrl_seqno;
	unsigned int ctrl_max_seqno;
	struct krs_sge remote_sgl;
	uint32_t remote_sge;

	/* Receiving. */
	uint16_t rseq_no;
	uint16_t rseq_comp;
	uint32_t *rmsg;
	uint32_t rmsg_head;
	uint32_t rmsg_tail;
	uint32_t rmsg_count;
	uint32_t rbuf_off;
	uint32_t rbuf_free_off;
	uint32_t rbuf_avail;
	struct {
		uint32_t left;
	} adv[KRS_SGL_SIZE];
	uint32_t adv_head;
	uint32_t adv_count;

	struct sockaddr_storage dst;
	int accept_queue[2];
	int accept_fd;
	struct krs_backlog *backlog;
	struct krs_backlog *accepted_by;
	bool queued;

	/* A datagram rsocket's own (rsocket_dgram.c); NULL for a stream one. */
	struct krs_dg *dg;
};

/* rsocket.c */
int krs_insert(struct krs *rs);
struct krs *krs_alloc(const struct krs *parent, int domain);
void krs_free(struct krs *rs);
void krs_backlog_leave(struct krs *rs);
int krs_new_channel(struct krs *rs);
int krs_create_qp(struct krs *rs, enum ibv_qp_type type,
		  struct ibv_qp_init_attr *attr);
int krs_create_ep(struct krs *rs);
int krs_set_nonblock(int fd);
int krs_wait_readable(int fd, int ms);
struct krs *krs_get(int index);
bool krs_is_parents(int index);
int krs_close(int s, bool graceful);
void krs_put(struct krs *rs);
int krs_connect_step(struct krs *rs, bool nonblock);
int krs_drain_cm(struct krs *rs);
int krs_wait_fd(const struct krs *rs);
void krs_state_moved(const struct krs *rs, int before);

/* rsocket_dgram.c */
int krs_dg_socket(int domain);
int krs_dg_bind(struct krs *rs, const struct sockaddr *addr, socklen_t len);
int krs_dg_connect(struct krs *rs, const struct sockaddr *addr,
		   socklen_t len);
ssize_t krs_dg_sendv(struct krs *rs, const struct iovec *iov, int iovcnt,
		     int flags, const struct sockaddr *to, socklen_t tolen);
ssize_t krs_dg_recv(struct krs *rs, void *buf, size_t len, int flags,
		    struct sockaddr *from, socklen_t *fromlen);
short krs_dg_poll(struct krs *rs, short events);
void krs_dg_svc(struct krs *rs);
void krs_dg_close(struct krs *rs);
int krs_dg_shutdown(struct krs *rs, int how);
void krs_dg_free(struct krs *rs);
int krs_dg_setsockopt(struct krs *rs, int level, int optname,
		      const void *optval, socklen_t optlen);
int krs_dg_getsockopt(struct krs *rs, int level, int optname, void *optval,
		      socklen_t *optlen);

/* rsocket_poll.c */
void krs_poll_wake(void);
void krs_poll_lock(void);
void krs_poll_unlock(void);
void krs_poll_fork_child(void);

/* rsocket_accept.c: what the background thread does for an rsocket. */
enum {
	KRS_SVC_LISTENER = 1 << 0,	/* accepts its connect requests */
	KRS_SVC_CM = 1 << 1,		/* takes its connection's events */
	KRS_SVC_KEEPALIVE = 1 << 2,	/* sends its keep-alives */
	KRS_SVC_DGRAM = 1 << 3,		/* reads its UDP socket */
};

int krs_svc_add(struct krs *rs, unsigned int what);
long krs_now(void);
void krs_svc_forget(struct krs *rs);
void krs_svc_lock_all(void);
void krs_svc_unlock_all(void);
void krs_svc_fork_child(void);

/* rsocket_iomap.c */
int krs_send_iomaps(struct krs *rs, int flags);
void krs_free_iomaps(struct krs *rs);
int krs_iomap_scale(uint32_t n);
uint32_t krs_iomap_unscale(uint8_t v);

/* rsocket_data.c */
int krs_post_data(struct krs *rs, const struct iovec **iov, size_t *off,
		  uint32_t len, uint32_t msg, bool imm, uint64_t addr,
		  uint32_t rkey);
int krs_send_start(struct krs *rs, int flags);
int krs_wait_send(struct krs *rs, int flags);
uint32_t krs_xfer_size(const struct krs *rs, size_t left, uint32_t *olen);
int krs_init_bufs(struct krs *rs);
void krs_free_ep(struct krs *rs);
void krs_format_conn_data(const struct krs *rs, struct krs_conn_data *c);
int krs_save_conn_data(struct krs *rs, const void *data, size_t len);
int krs_process(struct krs *rs, bool nonblock, bool (*test)(struct krs *rs));
void krs_drain_cq_events(struct krs *rs);
int krs_post_recvs(struct krs *rs, uint32_t n);
bool krs_can_send(struct krs *rs);
bool krs_have_rdata(struct krs *rs);
bool krs_conn_have_rdata(struct krs *rs);
bool krs_conn_can_send(struct krs *rs);
bool krs_all_sends_done(struct krs *rs);
void krs_send_keepalive(struct krs *rs);
int krs_shutdown(struct krs *rs, int how);

/*
 * @expr on the rsocket @s names, held as @rs: its value, or -1 and EBADF
 * when @s is no rsocket (EPERM when it is a fork parent's, see krs_get()).
 */
#define KRS_CALL(s, rs, expr)						\
	({								\
		struct krs *rs = krs_get(s);				\
		long __ret = -1;					\
									\
		if (rs) {						\
			__ret = (expr);					\
			krs_put(rs);					\
		}							\
		__ret;							\
	})

static inline bool krs_nonblocking(const struct krs *rs, int flags)
{
	return (rs->fd_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

#endif
