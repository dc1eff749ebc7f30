// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * kqp_ulp: a kernel ULP on kqp's exported API, and the test of that API.
 *
 * Both ends of a connection live here: a listener, and a client that
 * connects to it over the RDMA device of a local address.  Their QPs come
 * from kqp_create_qp() with a NULL PD and no CQs; the data moves by SEND
 * and by an RDMA WRITE into memory the server registered with FRWR.
 *
 * Commands, written to /sys/kernel/debug/kqp_ulp/run:
 *   run ADDR PORT [ADDR2]  the API checks and a verified exchange over the
 *                          device of ADDR; ADDR2, an address of another
 *                          RDMA device, adds the checks that need one
 *   hold ADDR PORT         connect a pair and keep it, so that the device
 *                          can be removed under it: each id then destroys
 *                          its QP on DEVICE_REMOVAL, as a ULP must
 *   release                report how the held pair ended, and free it
 * Each check is one TAP line ("ok - ..." or "not ok - ...", unnumbered)
 * in /sys/kernel/debug/kqp_ulp/results; the selftest numbers them.
 */
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/kqp.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define ULP_TIMEOUT		(30 * HZ)
#define ULP_RESOLVE_MS		5000
#define ULP_BUF_SIZE		4096
#define ULP_RESULTS_SIZE	(32 * 1024)
#define ULP_WR			8

enum {
	ULP_MSG_PING = 1,
	ULP_MSG_BUF,
	ULP_MSG_DONE,
	ULP_MSG_PONG,
};

/* What the two ends tell each other, in SENDs. */
struct ulp_msg {
	__be32 type;
	__be32 rkey;
	__be64 addr;
	__be32 len;
	char text[44];
};

struct ulp_pair;

/**
 * struct ulp_conn - one end of the connection, or the listener
 * @pair: the pair it belongs to
 * @id: its id; NULL once someone took over destroying it, under
 *	@pair->lock
 * @events: the rdma_cm events seen, a bit per event type
 * @status: the status of the last event
 * @has_qp: kqp_create_qp() succeeded and kqp_destroy_qp() is due
 * @send: the message buffer for SENDs, DMA-mapped
 * @recv: the message buffer for receives, DMA-mapped
 * @send_dma: @send's DMA address
 * @recv_dma: @recv's DMA address
 * @send_cqe: the send queue's completion handler
 * @recv_cqe: the receive queue's completion handler
 * @send_done: completed by @send_cqe
 * @recv_done: completed by @recv_cqe
 * @send_status: the last send completion's status
 * @recv_status: the last receive completion's status
 * @recv_len: the last receive's length
 * @buf: the RDMA WRITE's source (client) or target (server)
 * @buf_dma: the source's DMA address
 * @sg: the target, for the MR
 * @sg_mapped: @sg is DMA-mapped
 * @mr: the server's FRWR MR, or NULL
 */
struct ulp_conn {
	struct ulp_pair *pair;
	struct rdma_cm_id *id;
	unsigned long events;
	int status;
	bool has_qp;
	struct ulp_msg *send;
	struct ulp_msg *recv;
	u64 send_dma;
	u64 recv_dma;
	struct ib_cqe send_cqe;
	struct ib_cqe recv_cqe;
	struct completion send_done;
	struct completion recv_done;
	enum ib_wc_status send_status;
	enum ib_wc_status recv_status;
	u32 recv_len;
	void *buf;
	u64 buf_dma;
	struct scatterlist sg;
	bool sg_mapped;
	struct ib_mr *mr;
};

/**
 * struct ulp_pair - a listener and the two ends of one connection
 * @lock: who destroys each id: rdma_cm (DEVICE_REMOVAL) or the owner;
 *	and @server
 * @wait: woken on every rdma_cm event of the pair
 * @listener: the listening id
 * @client: the active end
 * @server: the passive end, made in the CONNECT_REQUEST handler
 * @held: a held pair: DEVICE_REMOVAL tears an id down in its handler.
 *	Otherwise the owner is using the ids, and the event only says the
 *	owner should finish.
 * @removed: ids torn down on DEVICE_REMOVAL
 */
struct ulp_pair {
	struct mutex lock;
	wait_queue_head_t wait;
	struct ulp_conn listener;
	struct ulp_conn client;
	struct ulp_conn *server;
	bool held;
	atomic_t removed;
};

static struct dentry *ulp_debugfs;
/* One command at a time; also protects ulp_held. */
static DEFINE_MUTEX(ulp_cmd_lock);
static struct ulp_pair *ulp_held;

static DEFINE_MUTEX(ulp_results_lock);
static char *ulp_results;
static size_t ulp_results_len;

static __printf(3, 4) bool ulp_tap(bool ok, const char *skip,
				   const char *fmt, ...)
{
	size_t room;
	va_list ap;

	mutex_lock(&ulp_results_lock);
	room = ULP_RESULTS_SIZE - ulp_results_len;
	ulp_results_len += scnprintf(ulp_results + ulp_results_len, room,
				     "%s - ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	room = ULP_RESULTS_SIZE - ulp_results_len;
	ulp_results_len += vscnprintf(ulp_results + ulp_results_len, room,
				      fmt, ap);
	va_end(ap);
	room = ULP_RESULTS_SIZE - ulp_results_len;
	if (skip)
		ulp_results_len += scnprintf(ulp_results + ulp_results_len,
					     room, " # SKIP %s", skip);
	room = ULP_RESULTS_SIZE - ulp_results_len;
	ulp_results_len += scnprintf(ulp_results + ulp_results_len, room,
				     "\n");
	mutex_unlock(&ulp_results_lock);
	return ok;
}

#define ULP_CHECK(cond, fmt, ...) ulp_tap(cond, NULL, fmt, ##__VA_ARGS__)

static bool ulp_counts_are(u32 pds, u32 refs, u32 cqs, u32 qps)
{
	struct kqp_kernel_counts c;

	kqp_get_kernel_counts(&c);
	if (c.default_pds == pds && c.default_pd_refs == refs &&
	    c.cqs == cqs && c.qps == qps)
		return true;
	pr_info("kqp_ulp: counts: %u PDs %u refs %u CQs %u QPs, expected %u %u %u %u\n",
		c.default_pds, c.default_pd_refs, c.cqs, c.qps, pds, refs,
		cqs, qps);
	return false;
}

static void ulp_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ulp_conn *conn = container_of(wc->wr_cqe, struct ulp_conn,
					     send_cqe);

	conn->send_status = wc->status;
	complete(&conn->send_done);
}

static void ulp_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ulp_conn *conn = container_of(wc->wr_cqe, struct ulp_conn,
					     recv_cqe);

	conn->recv_status = wc->status;
	conn->recv_len = wc->byte_len;
	complete(&conn->recv_done);
}

static void ulp_qp_event(struct ib_event *event, void *context)
{
	pr_info("kqp_ulp: QP event %s\n", ib_event_msg(event->event));
}

static void ulp_conn_init(struct ulp_pair *pair, struct ulp_conn *conn)
{
	conn->pair = pair;
	conn->send_cqe.done = ulp_send_done;
	conn->recv_cqe.done = ulp_recv_done;
	init_completion(&conn->send_done);
	init_completion(&conn->recv_done);
}

static void ulp_qp_attr(struct ib_qp_init_attr *attr, struct ulp_conn *conn)
{
	memset(attr, 0, sizeof(*attr));
	attr->event_handler = ulp_qp_event;
	attr->qp_context = conn;
	attr->qp_type = IB_QPT_RC;
	attr->sq_sig_type = IB_SIGNAL_REQ_WR;
	attr->cap.max_send_wr = ULP_WR;
	attr->cap.max_recv_wr = ULP_WR;
	attr->cap.max_send_sge = 1;
	attr->cap.max_recv_sge = 1;
}

/*
 * Release what the end has on the device, in the order the device needs:
 * the MR before the QP whose destruction may free the default PD it is
 * in; the buffers once no QP can reach them.  Idempotent.
 */
static void ulp_conn_teardown(struct ulp_conn *conn, struct rdma_cm_id *id)
{
	struct ib_device *dev = id->device;

	if (conn->mr) {
		ib_dereg_mr(conn->mr);
		conn->mr = NULL;
	}
	if (conn->has_qp) {
		kqp_destroy_qp(id);
		conn->has_qp = false;
	}
	if (conn->sg_mapped) {
		ib_dma_unmap_sg(dev, &conn->sg, 1, DMA_FROM_DEVICE);
		conn->sg_mapped = false;
	}
	if (conn->buf_dma) {
		ib_dma_unmap_single(dev, conn->buf_dma, ULP_BUF_SIZE,
				    DMA_TO_DEVICE);
		conn->buf_dma = 0;
	}
	if (conn->send_dma) {
		ib_dma_unmap_single(dev, conn->send_dma, sizeof(*conn->send),
				    DMA_TO_DEVICE);
		conn->send_dma = 0;
	}
	if (conn->recv_dma) {
		ib_dma_unmap_single(dev, conn->recv_dma, sizeof(*conn->recv),
				    DMA_FROM_DEVICE);
		conn->recv_dma = 0;
	}
	kfree(conn->buf);
	conn->buf = NULL;
	kfree(conn->send);
	conn->send = NULL;
	kfree(conn->recv);
	conn->recv = NULL;
}

static int ulp_post_recv(struct ulp_conn *conn)
{
	struct ib_sge sge = {
		.addr = conn->recv_dma,
		.length = sizeof(*conn->recv),
		.lkey = conn->id->qp->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &conn->recv_cqe,
		.sg_list = &sge,
		.num_sge = 1,
	};

	ib_dma_sync_single_for_device(conn->id->device, conn->recv_dma,
				      sizeof(*conn->recv), DMA_FROM_DEVICE);
	reinit_completion(&conn->recv_done);
	return ib_post_recv(conn->id->qp, &wr, NULL);
}

/* Post one signaled send-queue request and wait for its completion. */
static int ulp_post_send_wait(struct ulp_conn *conn, struct ib_send_wr *wr)
{
	int ret;

	wr->wr_cqe = &conn->send_cqe;
	wr->send_flags |= IB_SEND_SIGNALED;
	reinit_completion(&conn->send_done);
	ret = ib_post_send(conn->id->qp, wr, NULL);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&conn->send_done, ULP_TIMEOUT))
		return -ETIMEDOUT;
	return conn->send_status == IB_WC_SUCCESS ? 0 : -EIO;
}

/* An end's message buffers, with the first receive posted. */
static int ulp_conn_buffers(struct ulp_conn *conn)
{
	struct ib_device *dev = conn->id->device;

	conn->send = kzalloc(sizeof(*conn->send), GFP_KERNEL);
	conn->recv = kzalloc(sizeof(*conn->recv), GFP_KERNEL);
	conn->buf = kzalloc(ULP_BUF_SIZE, GFP_KERNEL);
	if (!conn->send || !conn->recv || !conn->buf)
		return -ENOMEM;
	conn->send_dma = ib_dma_map_single(dev, conn->send,
					   sizeof(*conn->send), DMA_TO_DEVICE);
	if (ib_dma_mapping_error(dev, conn->send_dma)) {
		conn->send_dma = 0;
		return -ENOMEM;
	}
	conn->recv_dma = ib_dma_map_single(dev, conn->recv,
					   sizeof(*conn->recv),
					   DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(dev, conn->recv_dma)) {
		conn->recv_dma = 0;
		return -ENOMEM;
	}
	return ulp_post_recv(conn);
}

/* An end's QP, with a NULL PD and no CQs, and its buffers. */
static int ulp_conn_setup(struct ulp_conn *conn)
{
	struct ib_qp_init_attr attr;
	int ret;

	ulp_qp_attr(&attr, conn);
	ret = kqp_create_qp(conn->id, NULL, &attr);
	if (ret)
		return ret;
	conn->has_qp = true;
	return ulp_conn_buffers(conn);
}

static int ulp_send_msg(struct ulp_conn *conn, u32 type, const char *text,
			u64 addr, u32 rkey, u32 len)
{
	struct ib_sge sge = {
		.addr = conn->send_dma,
		.length = sizeof(*conn->send),
		.lkey = conn->id->qp->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.opcode = IB_WR_SEND,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ulp_msg *msg = conn->send;

	ib_dma_sync_single_for_cpu(conn->id->device, conn->send_dma,
				   sizeof(*msg), DMA_TO_DEVICE);
	memset(msg, 0, sizeof(*msg));
	msg->type = cpu_to_be32(type);
	msg->addr = cpu_to_be64(addr);
	msg->rkey = cpu_to_be32(rkey);
	msg->len = cpu_to_be32(len);
	strscpy(msg->text, text, sizeof(msg->text));
	ib_dma_sync_single_for_device(conn->id->device, conn->send_dma,
				      sizeof(*msg), DMA_TO_DEVICE);
	return ulp_post_send_wait(conn, &wr);
}

/*
 * Wait for the message of @type the posted receive gets; the caller
 * posts the next receive once it has read it.
 */
static struct ulp_msg *ulp_recv_msg(struct ulp_conn *conn, u32 type)
{
	struct ulp_msg *msg = conn->recv;

	if (!wait_for_completion_timeout(&conn->recv_done, ULP_TIMEOUT)) {
		pr_info("kqp_ulp: no message %u\n", type);
		return NULL;
	}
	ib_dma_sync_single_for_cpu(conn->id->device, conn->recv_dma,
				   sizeof(*msg), DMA_FROM_DEVICE);
	if (conn->recv_status != IB_WC_SUCCESS ||
	    conn->recv_len != sizeof(*msg) || be32_to_cpu(msg->type) != type) {
		pr_info("kqp_ulp: message %u: status %d, %u bytes, type %u\n",
			type, conn->recv_status, conn->recv_len,
			be32_to_cpu(msg->type));
		return NULL;
	}
	msg->text[sizeof(msg->text) - 1] = 0;
	return msg;
}

/* A passive end, in the listener's CONNECT_REQUEST handler. */
static int ulp_connect_request(struct ulp_conn *listener,
			       struct rdma_cm_id *id)
{
	struct ulp_pair *pair = listener->pair;
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.rnr_retry_count = 7,
	};
	struct ulp_conn *srv;
	int ret;

	srv = kzalloc(sizeof(*srv), GFP_KERNEL);
	if (!srv)
		return -ENOMEM;
	ulp_conn_init(pair, srv);
	srv->id = id;
	id->context = srv;

	mutex_lock(&pair->lock);
	if (pair->server) {
		ret = -EBUSY;
		goto err;
	}
	/* kqp_create_qp() is allowed here, as rdma_accept() is. */
	ret = ulp_conn_setup(srv);
	if (ret)
		goto err;
	ret = rdma_accept(id, &param);
	if (ret)
		goto err;
	pair->server = srv;
	mutex_unlock(&pair->lock);
	return 0;

err:
	mutex_unlock(&pair->lock);
	pr_info("kqp_ulp: connection request refused: %d\n", ret);
	ulp_conn_teardown(srv, id);
	kfree(srv);
	/* Non-zero: rdma_cm destroys the new id. */
	return ret;
}

/*
 * The device is going.  A held pair's end tears down here and has
 * rdma_cm destroy its id, unless its owner is destroying it already; an
 * end in use by a command is left to that command, which rdma_cm waits
 * for.
 */
static int ulp_device_removal(struct ulp_conn *conn)
{
	struct ulp_pair *pair = conn->pair;
	struct rdma_cm_id *id = NULL;

	mutex_lock(&pair->lock);
	if (pair->held) {
		id = conn->id;
		conn->id = NULL;
	}
	mutex_unlock(&pair->lock);
	if (!id)
		return 0;
	ulp_conn_teardown(conn, id);
	atomic_inc(&pair->removed);
	wake_up_all(&pair->wait);
	/* rdma_cm destroys the id; nobody else will. */
	return 1;
}

static int ulp_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *event)
{
	struct ulp_conn *conn = id->context;
	int ret = 0;

	switch (event->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return ulp_connect_request(conn, id);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		ret = ulp_device_removal(conn);
		break;
	default:
		break;
	}
	if (ret)
		return ret;
	WRITE_ONCE(conn->status, event->status);
	set_bit(event->event, &conn->events);
	wake_up_all(&conn->pair->wait);
	return 0;
}

#define ULP_EV(e) BIT(RDMA_CM_EVENT_##e)

/* Wait for @event on @conn; any of @bad, or a timeout, is a failure. */
static int ulp_wait_event(struct ulp_conn *conn, int event,
			  unsigned long bad)
{
	unsigned long want = BIT(event);
	unsigned long seen;

	wait_event_timeout(conn->pair->wait,
			   READ_ONCE(conn->events) & (want | bad),
			   ULP_TIMEOUT);
	seen = READ_ONCE(conn->events);
	if (seen & want)
		return 0;
	pr_info("kqp_ulp: waiting for %s: events %#lx, status %d\n",
		rdma_event_msg(event), seen, READ_ONCE(conn->status));
	return seen & bad ? -ECONNABORTED : -ETIMEDOUT;
}

static struct rdma_cm_id *ulp_create_id(struct ulp_conn *conn)
{
	return rdma_create_id(&init_net, ulp_cm_handler, conn, RDMA_PS_TCP,
			      IB_QPT_RC);
}

static void ulp_sin(struct sockaddr_in *sin, __be32 addr, u16 port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = addr;
	sin->sin_port = htons(port);
}

/* An id bound to @addr, and so to its RDMA device. */
static struct rdma_cm_id *ulp_bound_id(struct ulp_conn *conn, __be32 addr)
{
	struct sockaddr_in sin;
	struct rdma_cm_id *id;
	int ret;

	id = ulp_create_id(conn);
	if (IS_ERR(id))
		return id;
	ulp_sin(&sin, addr, 0);
	ret = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (!ret && !id->device)
		ret = -ENODEV;
	if (ret) {
		rdma_destroy_id(id);
		return ERR_PTR(ret);
	}
	return id;
}

static struct ulp_pair *ulp_pair_alloc(void)
{
	struct ulp_pair *pair = kzalloc(sizeof(*pair), GFP_KERNEL);

	if (!pair)
		return NULL;
	mutex_init(&pair->lock);
	init_waitqueue_head(&pair->wait);
	ulp_conn_init(pair, &pair->listener);
	ulp_conn_init(pair, &pair->client);
	atomic_set(&pair->removed, 0);
	return pair;
}

/* Take an end's id from whoever else might destroy it. */
static struct rdma_cm_id *ulp_conn_take(struct ulp_conn *conn)
{
	struct rdma_cm_id *id;

	mutex_lock(&conn->pair->lock);
	id = conn->id;
	conn->id = NULL;
	mutex_unlock(&conn->pair->lock);
	return id;
}

static void ulp_conn_destroy(struct ulp_conn *conn)
{
	struct rdma_cm_id *id = ulp_conn_take(conn);

	if (!id)
		return;
	ulp_conn_teardown(conn, id);
	rdma_destroy_id(id);
}

/*
 * Destroy whatever of the pair is left.  The listener goes first:
 * destroying it waits for a CONNECT_REQUEST handler in progress, and no
 * server end appears after that.
 */
static void ulp_pair_free(struct ulp_pair *pair)
{
	struct ulp_conn *srv;

	ulp_conn_destroy(&pair->listener);
	mutex_lock(&pair->lock);
	srv = pair->server;
	mutex_unlock(&pair->lock);
	ulp_conn_destroy(&pair->client);
	if (srv) {
		ulp_conn_destroy(srv);
		kfree(srv);
	}
	kfree(pair);
}

/*
 * Connect the resolved client to the listener; the client's QP comes from
 * kqp_create_qp() unless the caller made it already.
 */
static int ulp_pair_connect(struct ulp_pair *pair)
{
	const unsigned long bad = ULP_EV(ADDR_ERROR) | ULP_EV(ROUTE_ERROR) |
				  ULP_EV(CONNECT_ERROR) | ULP_EV(UNREACHABLE) |
				  ULP_EV(REJECTED) | ULP_EV(DISCONNECTED) |
				  ULP_EV(DEVICE_REMOVAL);
	struct rdma_conn_param param = {
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	struct ulp_conn *cl = &pair->client;
	struct ulp_conn *srv;
	int ret;

	ret = cl->has_qp ? ulp_conn_buffers(cl) : ulp_conn_setup(cl);
	if (ret)
		return ret;
	ret = rdma_connect(cl->id, &param);
	if (ret)
		return ret;
	ret = ulp_wait_event(cl, RDMA_CM_EVENT_ESTABLISHED, bad);
	if (ret)
		return ret;
	mutex_lock(&pair->lock);
	srv = pair->server;
	mutex_unlock(&pair->lock);
	if (!srv)
		return -ENOTCONN;
	return ulp_wait_event(srv, RDMA_CM_EVENT_ESTABLISHED, bad);
}

/* The listener, and the client with its route resolved. */
static int ulp_pair_resolve(struct ulp_pair *pair, __be32 addr, u16 port)
{
	const unsigned long bad = ULP_EV(ADDR_ERROR) | ULP_EV(ROUTE_ERROR) |
				  ULP_EV(DEVICE_REMOVAL);
	struct ulp_conn *cl = &pair->client;
	struct sockaddr_in sin;
	struct rdma_cm_id *id;
	int ret;

	id = ulp_create_id(&pair->listener);
	if (IS_ERR(id))
		return PTR_ERR(id);
	pair->listener.id = id;
	ulp_sin(&sin, addr, port);
	ret = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (ret)
		return ret;
	ret = rdma_listen(id, 4);
	if (ret)
		return ret;

	id = ulp_create_id(cl);
	if (IS_ERR(id))
		return PTR_ERR(id);
	cl->id = id;
	ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&sin,
				ULP_RESOLVE_MS);
	if (ret)
		return ret;
	ret = ulp_wait_event(cl, RDMA_CM_EVENT_ADDR_RESOLVED, bad);
	if (ret)
		return ret;
	ret = rdma_resolve_route(id, ULP_RESOLVE_MS);
	if (ret)
		return ret;
	return ulp_wait_event(cl, RDMA_CM_EVENT_ROUTE_RESOLVED, bad);
}

/* kqp_create_qp() on an id bound to no device. */
static void ulp_check_unbound(struct ulp_pair *pair)
{
	struct ib_qp_init_attr attr;
	struct ib_cq *scq = NULL;
	struct rdma_cm_id *id;
	int ret, cqs;

	id = ulp_create_id(&pair->listener);
	if (IS_ERR(id)) {
		ULP_CHECK(false, "unbound id: rdma_create_id: %ld",
			  PTR_ERR(id));
		return;
	}
	ulp_qp_attr(&attr, NULL);
	ret = kqp_create_qp(id, NULL, &attr);
	ULP_CHECK(ret == -EINVAL && !id->qp && !attr.send_cq &&
		  ulp_counts_are(0, 0, 0, 0),
		  "unbound id: kqp_create_qp gives -EINVAL (%d), no QP, nothing allocated",
		  ret);
	cqs = kqp_qp_cqs(id, &scq, NULL);
	ULP_CHECK(cqs == -ENOENT, "kqp_qp_cqs of an id without a QP: -ENOENT (%d)",
		  cqs);
	rdma_destroy_id(id);
}

/* The client's QP, made with a NULL PD and no CQs; checked, not connected. */
static bool ulp_check_create(struct ulp_pair *pair)
{
	struct ulp_conn *cl = &pair->client;
	struct rdma_cm_id *id = cl->id;
	struct ib_cq *scq = NULL, *rcq = NULL;
	struct ib_qp_init_attr attr;
	struct ib_pd *pd;
	int ret;

	ulp_qp_attr(&attr, cl);
	ret = kqp_create_qp(id, NULL, &attr);
	if (!ULP_CHECK(!ret && id->qp,
		       "kqp_create_qp(id, NULL, attr without CQs) succeeds (%d)",
		       ret))
		return false;
	cl->has_qp = true;

	pd = kqp_get_default_pd(id->device);
	ULP_CHECK(!IS_ERR(pd) && id->qp->pd == pd &&
		  ulp_counts_are(1, 2, 2, 1),
		  "NULL pd: the QP has the default PD kqp_get_default_pd gives");
	if (!IS_ERR(pd))
		kqp_put_default_pd(pd);
	ULP_CHECK(ulp_counts_are(1, 1, 2, 1),
		  "kqp_put_default_pd drops the reference; 1 PD, 2 CQs, 1 QP");

	ret = kqp_qp_cqs(id, &scq, &rcq);
	ULP_CHECK(!ret && attr.send_cq && attr.recv_cq &&
		  attr.send_cq != attr.recv_cq &&
		  attr.send_cq == id->qp->send_cq &&
		  attr.recv_cq == id->qp->recv_cq &&
		  scq == attr.send_cq && rcq == attr.recv_cq,
		  "missing CQs: kqp allocates both, writes them into attr, kqp_qp_cqs names them");
	ULP_CHECK(attr.cap.max_send_wr >= ULP_WR &&
		  attr.cap.max_recv_wr >= ULP_WR &&
		  attr.cap.max_send_sge >= 1 && attr.cap.max_recv_sge >= 1,
		  "caps written back (send %u/%u, recv %u/%u)",
		  attr.cap.max_send_wr, attr.cap.max_send_sge,
		  attr.cap.max_recv_wr, attr.cap.max_recv_sge);
	return true;
}

/* A second kqp_create_qp() on the client's id. */
static void ulp_check_second(struct ulp_pair *pair)
{
	struct rdma_cm_id *id = pair->client.id;
	struct ib_qp *qp = id->qp;
	struct ib_qp_init_attr attr;
	int ret;

	ulp_qp_attr(&attr, NULL);
	ret = kqp_create_qp(id, NULL, &attr);
	ULP_CHECK(ret == -EINVAL && id->qp == qp && !attr.send_cq &&
		  !attr.recv_cq && ulp_counts_are(1, 1, 2, 1),
		  "second QP on an id: -EINVAL (%d), QP, PD and CQs unchanged",
		  ret);
}

/* A PD and a CQ of another device, for an id of this one. */
static void ulp_check_other_device(struct ulp_pair *pair, __be32 addr,
				   const __be32 *addr2)
{
	const char *what = "explicit pd of another device: -EINVAL, no QP";
	const char *what_cq = "caller's CQ of another device: -EINVAL, no QP";
	struct rdma_cm_id *other, *id;
	struct ib_qp_init_attr attr;
	struct ib_cq *cq;
	struct ib_pd *pd;
	int ret;

	if (!addr2) {
		ulp_tap(true, "no address of a second RDMA device given", "%s",
			what);
		ulp_tap(true, "no address of a second RDMA device given", "%s",
			what_cq);
		return;
	}
	other = ulp_bound_id(&pair->listener, *addr2);
	if (IS_ERR(other)) {
		ULP_CHECK(false, "%s: binding to the second address: %ld",
			  what, PTR_ERR(other));
		return;
	}
	id = ulp_bound_id(&pair->listener, addr);
	if (IS_ERR(id)) {
		ULP_CHECK(false, "%s: binding to the first address: %ld",
			  what, PTR_ERR(id));
		goto out_other;
	}
	if (!ULP_CHECK(other->device != id->device,
		       "the two addresses are on two RDMA devices (%s, %s)",
		       dev_name(&id->device->dev),
		       dev_name(&other->device->dev)))
		goto out_id;

	pd = kqp_get_default_pd(other->device);
	if (!ULP_CHECK(!IS_ERR(pd) && ulp_counts_are(2, 2, 2, 1),
		       "kqp_get_default_pd of the second device: a second default PD"))
		goto out_id;
	ulp_qp_attr(&attr, NULL);
	ret = kqp_create_qp(id, pd, &attr);
	ULP_CHECK(ret == -EINVAL && !id->qp && !attr.send_cq &&
		  ulp_counts_are(2, 2, 2, 1), "%s (%d)", what, ret);
	kqp_put_default_pd(pd);
	ULP_CHECK(ulp_counts_are(1, 1, 2, 1),
		  "the second device's default PD goes with its last reference");

	cq = ib_alloc_cq(other->device, NULL, ULP_WR, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq)) {
		ULP_CHECK(false, "%s: ib_alloc_cq: %ld", what_cq, PTR_ERR(cq));
		goto out_id;
	}
	ulp_qp_attr(&attr, NULL);
	attr.send_cq = cq;
	ret = kqp_create_qp(id, NULL, &attr);
	ULP_CHECK(ret == -EINVAL && !id->qp && attr.send_cq == cq &&
		  !attr.recv_cq && ulp_counts_are(1, 1, 2, 1),
		  "%s (%d)", what_cq, ret);
	ib_free_cq(cq);
out_id:
	rdma_destroy_id(id);
out_other:
	rdma_destroy_id(other);
}

/*
 * The caller's own CQ: kqp allocates only the other one, frees only that,
 * and the caller's survives, usable, for another QP.
 */
static void ulp_check_own_cq(struct ulp_pair *pair, __be32 addr)
{
	struct ib_cq *cq, *scq = NULL, *rcq = NULL;
	struct ib_qp_init_attr attr;
	struct rdma_cm_id *id;
	int ret, polled;

	id = ulp_bound_id(&pair->listener, addr);
	if (IS_ERR(id)) {
		ULP_CHECK(false, "caller's CQ: binding: %ld", PTR_ERR(id));
		return;
	}
	cq = ib_alloc_cq(id->device, NULL, 2 * ULP_WR, 0, IB_POLL_DIRECT);
	if (IS_ERR(cq)) {
		ULP_CHECK(false, "caller's CQ: ib_alloc_cq: %ld", PTR_ERR(cq));
		goto out_id;
	}

	ulp_qp_attr(&attr, NULL);
	attr.send_cq = cq;
	ret = kqp_create_qp(id, NULL, &attr);
	if (!ULP_CHECK(!ret, "kqp_create_qp with the caller's send CQ (%d)",
		       ret))
		goto out_cq;
	ret = kqp_qp_cqs(id, &scq, &rcq);
	ULP_CHECK(!ret && !scq && rcq && id->qp->send_cq == cq &&
		  id->qp->recv_cq == rcq && attr.recv_cq == rcq &&
		  ulp_counts_are(1, 2, 3, 2),
		  "caller's send CQ kept; kqp allocates only the receive CQ");
	kqp_destroy_qp(id);
	ULP_CHECK(!id->qp && ulp_counts_are(1, 1, 2, 1),
		  "kqp_destroy_qp frees the receive CQ kqp allocated, not the caller's");

	/* Pollable, and good for a QP of its own, on the same id. */
	polled = ib_process_cq_direct(cq, ULP_WR);
	ulp_qp_attr(&attr, NULL);
	attr.send_cq = cq;
	attr.recv_cq = cq;
	ret = kqp_create_qp(id, NULL, &attr);
	ULP_CHECK(polled == 0 && !ret && id->qp &&
		  !kqp_qp_cqs(id, &scq, &rcq) && !scq && !rcq &&
		  ulp_counts_are(1, 2, 2, 2),
		  "caller's CQ usable after kqp_destroy_qp: polled (%d), both CQs of a new QP (%d)",
		  polled, ret);
	kqp_destroy_qp(id);
	ULP_CHECK(!id->qp && ulp_counts_are(1, 1, 2, 1),
		  "kqp_destroy_qp leaves a QP's CQs alone when both were the caller's");
out_cq:
	ib_free_cq(cq);
out_id:
	rdma_destroy_id(id);
}

static void ulp_fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = seed + i * 7;
}

static bool ulp_filled(const u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != (u8)(seed + i * 7))
			return false;
	return true;
}

/*
 * The server registers its buffer with FRWR and tells the client where
 * it is; the client writes it and says so; the server checks it.
 */
static void ulp_rdma_write(struct ulp_conn *cl, struct ulp_conn *srv)
{
	struct ib_device *dev = srv->id->device;
	struct ib_pd *pd = srv->id->qp->pd;
	struct ib_reg_wr reg = {
		.wr.opcode = IB_WR_REG_MR,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE,
	};
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV };
	struct ib_rdma_wr wr = { .wr.opcode = IB_WR_RDMA_WRITE };
	struct ib_sge sge;
	struct ulp_msg *msg;
	int ret;

	srv->mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(srv->mr)) {
		ULP_CHECK(false, "ib_alloc_mr in the default PD: %ld",
			  PTR_ERR(srv->mr));
		srv->mr = NULL;
		return;
	}
	sg_init_one(&srv->sg, srv->buf, ULP_BUF_SIZE);
	if (ib_dma_map_sg(dev, &srv->sg, 1, DMA_FROM_DEVICE) != 1) {
		ULP_CHECK(false, "mapping the server's buffer");
		return;
	}
	srv->sg_mapped = true;
	ret = ib_map_mr_sg(srv->mr, &srv->sg, 1, NULL, PAGE_SIZE);
	if (!ULP_CHECK(ret == 1, "ib_map_mr_sg of the server's buffer (%d)",
		       ret))
		return;
	ib_update_fast_reg_key(srv->mr, ib_inc_rkey(srv->mr->rkey));
	reg.mr = srv->mr;
	reg.key = srv->mr->rkey;
	ret = ulp_post_send_wait(srv, &reg.wr);
	if (!ULP_CHECK(!ret, "FRWR: IB_WR_REG_MR of the server's buffer completes (%d)",
		       ret))
		return;

	ret = ulp_send_msg(srv, ULP_MSG_BUF, "kqp buffer", srv->mr->iova,
			   srv->mr->rkey, ULP_BUF_SIZE);
	msg = ret ? NULL : ulp_recv_msg(cl, ULP_MSG_BUF);
	if (!ULP_CHECK(msg && be32_to_cpu(msg->len) == ULP_BUF_SIZE,
		       "SEND server to client: the buffer's address and rkey (%d)",
		       ret))
		return;

	ulp_fill(cl->buf, ULP_BUF_SIZE, 0x5a);
	cl->buf_dma = ib_dma_map_single(cl->id->device, cl->buf, ULP_BUF_SIZE,
					DMA_TO_DEVICE);
	if (ib_dma_mapping_error(cl->id->device, cl->buf_dma)) {
		cl->buf_dma = 0;
		ULP_CHECK(false, "mapping the client's buffer");
		return;
	}
	sge.addr = cl->buf_dma;
	sge.length = ULP_BUF_SIZE;
	sge.lkey = cl->id->qp->pd->local_dma_lkey;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.remote_addr = be64_to_cpu(msg->addr);
	wr.rkey = be32_to_cpu(msg->rkey);
	ret = ulp_post_recv(cl);
	if (!ret)
		ret = ulp_post_send_wait(cl, &wr.wr);
	if (!ret)
		ret = ulp_send_msg(cl, ULP_MSG_DONE, "kqp written", 0, 0, 0);
	msg = ret ? NULL : ulp_recv_msg(srv, ULP_MSG_DONE);
	if (!ULP_CHECK(msg, "RDMA WRITE client to server with the local_dma_lkey, then SEND (%d)",
		       ret))
		return;

	/* Take the buffer back from the device before reading it. */
	inv.ex.invalidate_rkey = srv->mr->rkey;
	ret = ulp_post_send_wait(srv, &inv);
	ULP_CHECK(!ret, "IB_WR_LOCAL_INV of the server's MR completes (%d)",
		  ret);
	ib_dma_unmap_sg(dev, &srv->sg, 1, DMA_FROM_DEVICE);
	srv->sg_mapped = false;
	ULP_CHECK(ulp_filled(srv->buf, ULP_BUF_SIZE, 0x5a),
		  "RDMA WRITE: the server's buffer holds the client's %d bytes",
		  ULP_BUF_SIZE);
}

static void ulp_exchange(struct ulp_pair *pair)
{
	struct ulp_conn *cl = &pair->client, *srv = pair->server;
	struct ulp_msg *msg;
	int ret;

	ret = ulp_send_msg(cl, ULP_MSG_PING, "kqp ping", 0, 0, 0);
	msg = ret ? NULL : ulp_recv_msg(srv, ULP_MSG_PING);
	ULP_CHECK(msg && !strcmp(msg->text, "kqp ping"),
		  "SEND client to server: data verified (%d)", ret);
	if (!msg)
		return;
	ret = ulp_post_recv(srv);
	if (!ULP_CHECK(!ret, "server reposts its receive (%d)", ret))
		return;

	ulp_rdma_write(cl, srv);

	ret = ulp_post_recv(srv);
	if (!ret)
		ret = ulp_send_msg(srv, ULP_MSG_PONG, "kqp pong", 0, 0, 0);
	msg = ret ? NULL : ulp_recv_msg(cl, ULP_MSG_PONG);
	ULP_CHECK(msg && !strcmp(msg->text, "kqp pong"),
		  "SEND server to client: data verified (%d)", ret);
}

/* Disconnect, then free the QPs one by one, watching the default PD. */
static void ulp_check_teardown(struct ulp_pair *pair)
{
	const unsigned long bad = ULP_EV(DEVICE_REMOVAL);
	struct ulp_conn *cl = &pair->client, *srv = pair->server;
	struct ib_pd *pd;
	int ret;

	/*
	 * The client's DREQ gives the server DISCONNECTED; the server's own
	 * rdma_disconnect() answers it, which gives the client its event.
	 */
	ret = rdma_disconnect(cl->id);
	if (!ret)
		ret = ulp_wait_event(srv, RDMA_CM_EVENT_DISCONNECTED, bad);
	if (!ret)
		ret = rdma_disconnect(srv->id);
	if (!ret)
		ret = ulp_wait_event(cl, RDMA_CM_EVENT_DISCONNECTED, bad);
	ULP_CHECK(!ret, "rdma_disconnect on both ends: both get DISCONNECTED (%d)",
		  ret);

	ulp_conn_teardown(cl, cl->id);
	ULP_CHECK(!cl->id->qp && ulp_counts_are(1, 1, 2, 1),
		  "kqp_destroy_qp of the client: its CQs go, the default PD stays for the server");

	pd = kqp_get_default_pd(srv->id->device);
	ulp_conn_teardown(srv, srv->id);
	ULP_CHECK(!IS_ERR(pd) && !srv->id->qp && ulp_counts_are(1, 1, 0, 0),
		  "a kqp_get_default_pd reference keeps the default PD past the last QP");
	if (!IS_ERR(pd))
		kqp_put_default_pd(pd);
	ULP_CHECK(ulp_counts_are(0, 0, 0, 0),
		  "the default PD is freed with its last user: 0 PDs, 0 CQs, 0 QPs");
}

static int ulp_cmd_run(__be32 addr, u16 port, const __be32 *addr2)
{
	struct ulp_pair *pair;
	int ret;

	pair = ulp_pair_alloc();
	if (!pair)
		return -ENOMEM;
	if (!ULP_CHECK(ulp_counts_are(0, 0, 0, 0),
		       "before: kqp holds no kernel PD, CQ or QP"))
		goto out;
	ulp_check_unbound(pair);

	ret = ulp_pair_resolve(pair, addr, port);
	if (!ULP_CHECK(!ret, "listener on %pI4:%u, client's route resolved (%d)",
		       &addr, port, ret))
		goto out;
	if (!ulp_check_create(pair))
		goto out;
	ulp_check_second(pair);
	ulp_check_other_device(pair, addr, addr2);
	ulp_check_own_cq(pair, addr);

	ret = ulp_pair_connect(pair);
	if (!ULP_CHECK(!ret, "connected; server QP made in CONNECT_REQUEST (%d)",
		       ret))
		goto out;
	ULP_CHECK(pair->server->id->qp->pd == pair->client.id->qp->pd &&
		  ulp_counts_are(1, 2, 4, 2),
		  "two ids on one device share its default PD: 1 PD, 2 users, 4 CQs, 2 QPs");
	ulp_exchange(pair);
	ulp_check_teardown(pair);
out:
	ulp_pair_free(pair);
	ULP_CHECK(ulp_counts_are(0, 0, 0, 0),
		  "after: kqp holds no kernel PD, CQ or QP");
	return 0;
}

static int ulp_cmd_hold(__be32 addr, u16 port)
{
	struct ulp_pair *pair;
	int ret;

	if (ulp_held)
		return -EBUSY;
	pair = ulp_pair_alloc();
	if (!pair)
		return -ENOMEM;
	pair->held = true;
	ret = ulp_pair_resolve(pair, addr, port);
	if (!ret)
		ret = ulp_pair_connect(pair);
	if (!ULP_CHECK(!ret && ulp_counts_are(1, 2, 4, 2),
		       "hold: a connected pair on %pI4:%u, QPs from kqp_create_qp (%d)",
		       &addr, port, ret)) {
		ulp_pair_free(pair);
		return 0;
	}
	ulp_held = pair;
	return 0;
}

static int ulp_cmd_release(void)
{
	struct ulp_pair *pair = ulp_held;
	int removed;

	if (!pair)
		return -ENOENT;
	ulp_held = NULL;
	removed = atomic_read(&pair->removed);
	ULP_CHECK(removed == 3,
		  "device removal: listener and both ends torn down in their DEVICE_REMOVAL handlers (%d of 3)",
		  removed);
	ULP_CHECK(ulp_counts_are(0, 0, 0, 0),
		  "device removal: kqp holds no kernel PD, CQ or QP");
	ulp_pair_free(pair);
	return 0;
}

static ssize_t ulp_run_write(struct file *file, const char __user *ubuf,
			     size_t len, loff_t *ppos)
{
	char buf[96], cmd[16], a1[16], a2[16];
	__be32 addr = 0, addr2 = 0;
	unsigned int port = 0;
	int n, ret;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = 0;
	n = sscanf(buf, "%15s %15s %u %15s", cmd, a1, &port, a2);
	if (n < 1)
		return -EINVAL;
	if (n >= 2 && !in4_pton(a1, -1, (u8 *)&addr, -1, NULL))
		return -EINVAL;
	if (n == 4 && !in4_pton(a2, -1, (u8 *)&addr2, -1, NULL))
		return -EINVAL;
	if (n >= 3 && (!port || port > U16_MAX))
		return -EINVAL;

	mutex_lock(&ulp_cmd_lock);
	if (!strcmp(cmd, "run") && n >= 3)
		ret = ulp_cmd_run(addr, port, n == 4 ? &addr2 : NULL);
	else if (!strcmp(cmd, "hold") && n == 3)
		ret = ulp_cmd_hold(addr, port);
	else if (!strcmp(cmd, "release") && n == 1)
		ret = ulp_cmd_release();
	else
		ret = -EINVAL;
	mutex_unlock(&ulp_cmd_lock);
	return ret ? ret : len;
}

static const struct file_operations ulp_run_fops = {
	.owner = THIS_MODULE,
	.write = ulp_run_write,
	.llseek = noop_llseek,
};

static ssize_t ulp_results_read(struct file *file, char __user *ubuf,
				size_t len, loff_t *ppos)
{
	ssize_t ret;

	mutex_lock(&ulp_results_lock);
	ret = simple_read_from_buffer(ubuf, len, ppos, ulp_results,
				      ulp_results_len);
	mutex_unlock(&ulp_results_lock);
	return ret;
}

static const struct file_operations ulp_results_fops = {
	.owner = THIS_MODULE,
	.read = ulp_results_read,
	.llseek = default_llseek,
};

static int __init ulp_init(void)
{
	ulp_results = kzalloc(ULP_RESULTS_SIZE, GFP_KERNEL);
	if (!ulp_results)
		return -ENOMEM;
	ulp_debugfs = debugfs_create_dir("kqp_ulp", NULL);
	debugfs_create_file("run", 0200, ulp_debugfs, NULL, &ulp_run_fops);
	debugfs_create_file("results", 0444, ulp_debugfs, NULL,
			    &ulp_results_fops);
	return 0;
}

static void __exit ulp_exit(void)
{
	/* Waits for a command in progress. */
	debugfs_remove_recursive(ulp_debugfs);
	if (ulp_held)
		ulp_pair_free(ulp_held);
	kfree(ulp_results);
}

module_init(ulp_init);
module_exit(ulp_exit);

MODULE_DESCRIPTION("Sample kernel ULP on kqp's exported API, and its test");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_IMPORT_KQP();
