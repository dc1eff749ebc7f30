// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * A stream rsocket's data path: its buffers, the messages of rdma-core's
 * rsocket protocol (rsocket.h), credits, and rsend()/rrecv() and their
 * vector forms.  Every function here is called with the rsocket's mutex
 * held.
 */
#include <endian.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <byteswap.h>
#include <limits.h>
#include <sys/uio.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "kqp_priv.h"
#include "rsocket.h"

#define KRS_WR_RECV		(1ull << 63)
#define KRS_CTRL_MSG_SIZE	sizeof(struct krs_sge)

static bool krs_host_is_net(void)
{
	return __BYTE_ORDER == __BIG_ENDIAN;
}

static void *krs_alloc_buf(size_t len)
{
	void *p;

	if (posix_memalign(&p, sysconf(_SC_PAGESIZE), len))
		return NULL;
	memset(p, 0, len);
	return p;
}

/*
 * The QP's buffers, registered: the send buffer with room for the
 * control messages after it, the target SGL the peer writes, and the
 * receive buffer, of which the first half is the area the connection's
 * private data gives.  Receives are posted.  0 or -1 and errno.
 */
int krs_init_bufs(struct krs *rs)
{
	size_t tlen = sizeof(struct krs_sge) * KRS_SGL_SIZE +
		      sizeof(struct krs_iomap) * rs->iomap_size;

	rs->rmsg = calloc(rs->rq_size + 1, sizeof(*rs->rmsg));
	rs->sbuf = krs_alloc_buf(rs->sbuf_size +
				 KRS_CTRL_MSG_SIZE * KRS_CTRL_SIZE);
	rs->rbuf = krs_alloc_buf(rs->rbuf_size);
	rs->tsgl = krs_alloc_buf(tlen);
	if (!rs->rmsg || !rs->sbuf || !rs->rbuf || !rs->tsgl)
		return kqp_err(ENOMEM);
	rs->smr = rdma_reg_msgs(rs->id, rs->sbuf, rs->sbuf_size +
				KRS_CTRL_MSG_SIZE * KRS_CTRL_SIZE);
	if (!rs->smr)
		return -1;
	rs->tmr = rdma_reg_write(rs->id, (void *)rs->tsgl, tlen);
	if (!rs->tmr)
		return -1;
	if (rs->iomap_size)
		rs->tiomap = (volatile struct krs_iomap *)(rs->tsgl +
							   KRS_SGL_SIZE);
	rs->rmr = rdma_reg_write(rs->id, rs->rbuf, rs->rbuf_size);
	if (!rs->rmr)
		return -1;

	rs->sbuf_avail = rs->sbuf_size;
	rs->sbuf_off = 0;
	rs->rbuf_free_off = rs->rbuf_size / 2;
	rs->rbuf_avail = rs->rbuf_size / 2;
	rs->sqe_avail = rs->sq_size - KRS_CTRL_SIZE;
	rs->ctrl_seqno = 0;
	rs->ctrl_max_seqno = KRS_CTRL_SIZE;
	rs->rseq_comp = rs->rq_size / 2;
	/* The first half, given in the private data. */
	rs->adv[0].left = rs->rbuf_size / 2;
	rs->adv_head = 0;
	rs->adv_count = 1;

	return krs_post_recvs(rs, rs->rq_size);
}

/* The QP, its buffers, its CQ and the CQ's channel. */
void krs_free_ep(struct krs *rs)
{
	krs_free_iomaps(rs);
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	if (rs->smr)
		rdma_dereg_mr(rs->smr);
	if (rs->tmr)
		rdma_dereg_mr(rs->tmr);
	if (rs->rmr)
		rdma_dereg_mr(rs->rmr);
	free(rs->sbuf);
	free(rs->rbuf);
	free((void *)rs->tsgl);
	free(rs->rmsg);
	if (rs->cq)
		ibv_destroy_cq(rs->cq);
	if (rs->cch)
		ibv_destroy_comp_channel(rs->cch);
}

static void krs_sge_to_be(struct krs_sge *dst, uint64_t addr, uint32_t key,
			  uint32_t length)
{
	dst->addr = htobe64(addr);
	dst->key = htobe32(key);
	dst->length = htobe32(length);
}

void krs_format_conn_data(const struct krs *rs, struct krs_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = KRS_VERSION;
	c->flags = KRS_CONN_FLAG_IOMAP |
		   (krs_host_is_net() ? KRS_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = (uint8_t)krs_iomap_scale(rs->iomap_size);
	krs_sge_to_be(&c->target_sgl, (uintptr_t)rs->tsgl, rs->tmr->rkey,
		      KRS_SGL_SIZE);
	krs_sge_to_be(&c->data_buf, (uintptr_t)rs->rbuf, rs->rmr->rkey,
		      rs->rbuf_size / 2);
}

/*
 * The peer's private data, from a connect request or reply: 0, or -1
 * with EPROTO when it is not rsocket version 1.  Its addresses and keys
 * are the peer's; only the target SGL's entry count is bounded here, as
 * it is used to step through the peer's SGL.
 */
int krs_save_conn_data(struct krs *rs, const void *data, size_t len)
{
	struct krs_conn_data c;
	uint32_t n;

	if (!data || len < sizeof(c))
		return kqp_err(EPROTO);
	memcpy(&c, data, sizeof(c));
	n = be32toh(c.target_sgl.length);
	if (c.version != KRS_VERSION || !n || n > 256)
		return kqp_err(EPROTO);
	rs->remote_sgl.addr = be64toh(c.target_sgl.addr);
	rs->remote_sgl.key = be32toh(c.target_sgl.key);
	rs->remote_sgl.length = n;
	/* Its first entry was given in this data: the next is ours to write. */
	rs->remote_sge = 1 % n;
	rs->swap = !!(c.flags & KRS_CONN_FLAG_NET) != krs_host_is_net();
	/* The peer's iomap follows its SGL, in the same area. */
	if (c.flags & KRS_CONN_FLAG_IOMAP) {
		rs->remote_iomap.addr = rs->remote_sgl.addr +
					n * sizeof(struct krs_sge);
		rs->remote_iomap.key = rs->remote_sgl.key;
		rs->remote_iomap.length =
			krs_iomap_unscale(c.target_iomap_size);
	}
	rs->tsgl[0].addr = be64toh(c.data_buf.addr);
	rs->tsgl[0].key = be32toh(c.data_buf.key);
	rs->tsgl[0].length = be32toh(c.data_buf.length);
	rs->target_sge = 0;
	rs->sseq_comp = be16toh(c.credits);
	rs->sseq_no = 0;
	return 0;
}

/* The connection broke its protocol: close it. */
static void krs_proto_error(struct krs *rs)
{
	if (!(rs->state & KRS_CONNECTED))
		return;
	rs->state = KRS_ERROR;
	rs->err = EPROTO;
	rdma_disconnect(rs->id);
}

/*
 * One RDMA WRITE of @sgl to the peer's @addr and @rkey, with @msg as its
 * immediate when @imm, and as its wr_id.
 */
static int krs_post_write(struct krs *rs, struct ibv_sge *sgl, int nsge,
			  uint32_t msg, bool imm, int flags, uint64_t addr,
			  uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = msg,
		.sg_list = sgl,
		.num_sge = nsge,
		.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE,
		.send_flags = flags,
		.imm_data = htobe32(msg),
		.wr.rdma.remote_addr = addr,
		.wr.rdma.rkey = rkey,
	}, *bad;
	int ret = ibv_post_send(rs->id->qp, &wr, &bad);

	if (!ret)
		return 0;
	/*
	 * The counts were taken for a message that is not coming: the
	 * connection is done, or shutdown would wait for it for ever.
	 */
	if (rs->state & KRS_CONNECTED) {
		rs->state = KRS_ERROR;
		rs->err = ret;
	}
	return kqp_err(ret);
}

static int krs_post_write_msg(struct krs *rs, struct ibv_sge *sgl, int nsge,
			      uint32_t msg, int flags, uint64_t addr,
			      uint32_t rkey)
{
	return krs_post_write(rs, sgl, nsge, msg, true, flags, addr, rkey);
}

/* A message with no data: a zero-length write, which needs no key. */
static int krs_post_msg(struct krs *rs, uint32_t msg)
{
	return krs_post_write_msg(rs, NULL, 0, msg, 0, rs->remote_sgl.addr,
				  rs->remote_sgl.key);
}

static void *krs_ctrl_buf(struct krs *rs)
{
	return rs->sbuf + rs->sbuf_size +
	       KRS_CTRL_MSG_SIZE * (rs->ctrl_seqno & (KRS_CTRL_SIZE - 1));
}

/*
 * Give the peer credits up to half the receive queue past what was read,
 * and with them the free half of the receive buffer when there is one.
 */
static void krs_send_credits(struct krs *rs)
{
	uint32_t msg, half = rs->rbuf_size / 2;
	struct krs_sge sge;
	struct ibv_sge ib;
	int flags = 0;

	rs->ctrl_seqno++;
	rs->rseq_comp = rs->rseq_no + rs->rq_size / 2;
	msg = KRS_MSG(KRS_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	if (rs->rbuf_avail < half || rs->adv_count == KRS_SGL_SIZE) {
		krs_post_msg(rs, msg);
		return;
	}
	sge.addr = (uintptr_t)&rs->rbuf[rs->rbuf_free_off];
	sge.key = rs->rmr->rkey;
	sge.length = half;
	if (rs->swap) {
		sge.addr = bswap_64(sge.addr);
		sge.key = bswap_32(sge.key);
		sge.length = bswap_32(sge.length);
	}
	ib.length = sizeof(sge);
	if (rs->sq_inline >= sizeof(sge)) {
		ib.addr = (uintptr_t)&sge;
		ib.lkey = 0;
		flags = IBV_SEND_INLINE;
	} else {
		memcpy(krs_ctrl_buf(rs), &sge, sizeof(sge));
		ib.addr = (uintptr_t)krs_ctrl_buf(rs);
		ib.lkey = rs->smr->lkey;
	}
	if (krs_post_write_msg(rs, &ib, 1, msg, flags,
			       rs->remote_sgl.addr +
			       rs->remote_sge * sizeof(struct krs_sge),
			       rs->remote_sgl.key))
		return;
	rs->adv[(rs->adv_head + rs->adv_count++) % KRS_SGL_SIZE].left = half;
	rs->rbuf_avail -= half;
	rs->rbuf_free_off = (rs->rbuf_free_off + half) % rs->rbuf_size;
	if (++rs->remote_sge == rs->remote_sgl.length)
		rs->remote_sge = 0;
}

static bool krs_ctrl_avail(const struct krs *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

/*
 * A keep-alive, as rdma-core's: an RDMA WRITE of no bytes and with no
 * immediate, which the peer's device acknowledges and its process never
 * sees.  A peer that is gone fails it after the QP's retries, and the
 * connection ends with EIO (krs_send_done()).  It takes a control slot;
 * with none free, a control message is in flight and does the same.
 */
void krs_send_keepalive(struct krs *rs)
{
	if (!(rs->state & KRS_CONNECTED) || !krs_ctrl_avail(rs))
		return;
	rs->ctrl_seqno++;
	krs_post_write(rs, NULL, 0, KRS_MSG(KRS_OP_CTRL, KRS_CTRL_KEEPALIVE),
		       false, 0, rs->remote_sgl.addr, rs->remote_sgl.key);
}

static void krs_update_credits(struct krs *rs)
{
	if ((rs->state & KRS_CONNECTED) && krs_ctrl_avail(rs) &&
	    (rs->rbuf_avail >= rs->rbuf_size / 2 ||
	     (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0))
		krs_send_credits(rs);
}

/* A data message of @len arrived: 0, or false when it breaks the rules. */
static bool krs_recv_data(struct krs *rs, uint32_t len)
{
	uint32_t *left = &rs->adv[rs->adv_head].left;

	if (!len || !rs->adv_count || len > *left ||
	    rs->rmsg_count >= rs->rq_size)
		return false;
	*left -= len;
	if (!*left) {
		rs->adv_head = (rs->adv_head + 1) % KRS_SGL_SIZE;
		rs->adv_count--;
	}
	rs->rmsg[rs->rmsg_tail] = len;
	rs->rmsg_tail = (rs->rmsg_tail + 1) % (rs->rq_size + 1);
	rs->rmsg_count++;
	return true;
}

static void krs_recv_msg(struct krs *rs, const struct ibv_wc *wc)
{
	uint32_t msg = be32toh(wc->imm_data);

	if (!(wc->wc_flags & IBV_WC_WITH_IMM)) {
		krs_proto_error(rs);
		return;
	}
	switch (KRS_MSG_OP(msg)) {
	case KRS_OP_DATA:
		if (!krs_recv_data(rs, KRS_MSG_DATA(msg)))
			krs_proto_error(rs);
		break;
	case KRS_OP_SGL:
		rs->sseq_comp = (uint16_t)KRS_MSG_DATA(msg);
		break;
	case KRS_OP_IOMAP_SGL:
		/*
		 * The peer wrote an entry of this end's iomap: riowrite()
		 * reads it there.  One this end does not have is a lie.
		 */
		if (KRS_MSG_DATA(msg) >= rs->iomap_size) {
			krs_proto_error(rs);
			break;
		}
		/*
		 * It took one of the peer's credits: give it back, as a
		 * read message does.  rdma-core's receiver does not, and
		 * its sender stalls after as many riomap()s as credits.
		 */
		rs->rseq_no++;
		break;
	case KRS_OP_CTRL:
		/* After a broken rule, nothing the peer says changes the end. */
		if (!(rs->state & KRS_CONNECTED))
			break;
		switch (KRS_MSG_DATA(msg)) {
		case KRS_CTRL_DISCONNECT:
			rs->state = KRS_DISCONNECTED;
			break;
		case KRS_CTRL_SHUTDOWN:
			if (rs->state & KRS_WRITABLE)
				rs->state &= ~KRS_READABLE;
			else
				rs->state = KRS_DISCONNECTED;
			break;
		default:
			break;
		}
		break;
	default:
		krs_proto_error(rs);
		break;
	}
}

static void krs_send_done(struct krs *rs, const struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (KRS_MSG_OP(msg)) {
	case KRS_OP_SGL:
		rs->ctrl_max_seqno++;
		break;
	case KRS_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (KRS_MSG_DATA(msg) == KRS_CTRL_DISCONNECT)
			rs->state = KRS_DISCONNECTED;
		break;
	case KRS_OP_IOMAP_SGL:
		rs->sqe_avail++;
		rs->sbuf_avail += sizeof(struct krs_iomap);
		break;
	default:
		rs->sqe_avail++;
		rs->sbuf_avail += KRS_MSG_DATA(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && (rs->state & KRS_CONNECTED)) {
		rs->state = KRS_ERROR;
		rs->err = EIO;
	}
}

/*
 * @n receives of no bytes (the data lands by RDMA WRITE; the immediate
 * says what it was), chained a batch at a time: one call per batch.
 */
int krs_post_recvs(struct krs *rs, uint32_t n)
{
	struct ibv_recv_wr wr[64], *bad;
	uint32_t i, k;

	while (n) {
		int ret;

		k = n < 64 ? n : 64;
		for (i = 0; i < k; i++)
			wr[i] = (struct ibv_recv_wr){
				.wr_id = KRS_WR_RECV,
				.next = i + 1 < k ? &wr[i + 1] : NULL,
			};
		ret = ibv_post_recv(rs->id->qp, wr, &bad);
		if (ret)
			return kqp_err(ret);
		n -= k;
	}
	return 0;
}

/* Take what the CQ holds; 0, or -1 and errno if a receive could not be posted. */
static int krs_poll_cq(struct krs *rs)
{
	struct ibv_wc wc[8];
	int i, n, rcnt = 0;

	if (!rs->cq)
		return 0;
	while ((n = ibv_poll_cq(rs->cq, 8, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (!(wc[i].wr_id & KRS_WR_RECV)) {
				krs_send_done(rs, &wc[i]);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* Flushed: the connection is gone. */
				if (rs->state & KRS_CONNECTED)
					rs->state = KRS_DISCONNECTED;
				continue;
			}
			rcnt++;
			krs_recv_msg(rs, &wc[i]);
		}
	}
	if ((rs->state & KRS_CONNECTED) && rcnt && krs_post_recvs(rs, rcnt)) {
		rs->state = KRS_ERROR;
		rs->err = EIO;
		return kqp_err(EIO);
	}
	return 0;
}

/* One event of the CQ's channel, taken without waiting: true if there was one. */
static bool krs_take_cq_event(struct krs *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!rs->cch || ibv_get_cq_event(rs->cch, &cq, &ctx))
		return false;
	ibv_ack_cq_events(cq, 1);
	rs->cq_armed = false;
	return true;
}

void krs_drain_cq_events(struct krs *rs)
{
	while (krs_take_cq_event(rs))
		;
}

bool krs_can_send(struct krs *rs)
{
	return rs->sqe_avail && rs->sbuf_avail >= KRS_SNDLOWAT &&
	       rs->sseq_no != rs->sseq_comp &&
	       rs->tsgl[rs->target_sge].length;
}

bool krs_conn_can_send(struct krs *rs)
{
	return !(rs->state & KRS_WRITABLE) || krs_can_send(rs);
}

bool krs_have_rdata(struct krs *rs)
{
	return rs->rmsg_count;
}

bool krs_conn_have_rdata(struct krs *rs)
{
	return rs->rmsg_count || !(rs->state & KRS_READABLE);
}

bool krs_all_sends_done(struct krs *rs)
{
	return !(rs->state & KRS_CONNECTED) ||
	       (int)(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail ==
		       rs->sq_size;
}

static bool krs_ctrl_ready(struct krs *rs)
{
	return !(rs->state & KRS_CONNECTED) || krs_ctrl_avail(rs);
}

/*
 * Poll the CQ, give credits, and wait (unless @nonblock) until @test
 * holds.  0; -1 with EWOULDBLOCK when @nonblock and it does not; -1 and
 * errno when waiting failed.
 */
int krs_process(struct krs *rs, bool nonblock, bool (*test)(struct krs *rs))
{
	struct pollfd fds[2];
	int ret;

	for (;;) {
		krs_update_credits(rs);
		ret = krs_poll_cq(rs);
		krs_update_credits(rs);
		if (test(rs))
			return 0;
		if (ret)
			return ret;
		if (nonblock)
			return kqp_err(EWOULDBLOCK);
		if (!rs->cq_armed) {
			if (ibv_req_notify_cq(rs->cq, 0))
				return kqp_err(EIO);
			rs->cq_armed = true;
			continue;
		}
		fds[0] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = rs->ch->fd, .events = POLLIN };
		pthread_mutex_unlock(&rs->lock);
		/* A bound on a lost wake-up, not a timeout: go round. */
		ret = poll(fds, 2, 1000);
		pthread_mutex_lock(&rs->lock);
		if (rs->closed)
			return kqp_err(EBADF);
		if (ret < 0 && errno == EINTR)
			return -1;
		/*
		 * Read only what poll() said is there: a CQ is armed once
		 * per wait, so one event is all its channel holds, and each
		 * read that finds nothing is a syscall on the data path.
		 * Another thread may have taken either meanwhile; the reads
		 * do not wait.  After a timeout, or an error, drain both.
		 */
		if (ret <= 0)
			krs_drain_cq_events(rs);
		else if (fds[0].revents)
			krs_take_cq_event(rs);
		if (ret <= 0 || fds[1].revents)
			krs_drain_cm(rs);
	}
}

/*
 * Write @len bytes from @iov at *@off to the peer's @addr and @rkey, with
 * @msg as the wr_id and, when @imm, the immediate: inline when it fits,
 * else copied into the send buffer, in two pieces when it wraps.  The
 * send queue entry and the bytes come back at its completion.
 */
int krs_post_data(struct krs *rs, const struct iovec **iov, size_t *off,
		  uint32_t len, uint32_t msg, bool imm, uint64_t addr,
		  uint32_t rkey)
{
	struct ibv_sge sge[2];
	uint8_t inl[KRS_DEF_INLINE * 4];
	uint32_t done = 0, n;
	int nsge = 1, flags = 0;

	if (len <= rs->sq_inline && len <= sizeof(inl)) {
		while (done < len) {
			n = (*iov)->iov_len - *off;
			if (n > len - done)
				n = len - done;
			memcpy(inl + done, (uint8_t *)(*iov)->iov_base + *off, n);
			done += n;
			*off += n;
			if (*off == (*iov)->iov_len) {
				(*iov)++;
				*off = 0;
			}
		}
		sge[0] = (struct ibv_sge){ (uintptr_t)inl, len, 0 };
		flags = IBV_SEND_INLINE;
	} else {
		uint32_t first = rs->sbuf_size - rs->sbuf_off;

		while (done < len) {
			uint32_t at = (rs->sbuf_off + done) % rs->sbuf_size;
			uint32_t room = rs->sbuf_size - at;

			n = (*iov)->iov_len - *off;
			if (n > len - done)
				n = len - done;
			if (n > room)
				n = room;
			memcpy(rs->sbuf + at, (uint8_t *)(*iov)->iov_base + *off,
			       n);
			done += n;
			*off += n;
			if (*off == (*iov)->iov_len) {
				(*iov)++;
				*off = 0;
			}
		}
		sge[0] = (struct ibv_sge){ (uintptr_t)rs->sbuf + rs->sbuf_off,
					   len, rs->smr->lkey };
		if (len > first) {
			sge[0].length = first;
			sge[1] = (struct ibv_sge){ (uintptr_t)rs->sbuf,
						   len - first, rs->smr->lkey };
			nsge = 2;
		}
		rs->sbuf_off = (rs->sbuf_off + len) % rs->sbuf_size;
	}
	rs->sqe_avail--;
	rs->sbuf_avail -= len;
	return krs_post_write(rs, sge, nsge, msg, imm, flags, addr, rkey);
}

/* rsend()'s one transfer of @len bytes, from @iov at *@off. */
static int krs_write_data(struct krs *rs, const struct iovec **iov,
			  size_t *off, uint32_t len)
{
	volatile struct krs_sge *t = &rs->tsgl[rs->target_sge];
	uint64_t addr = t->addr;
	uint32_t rkey = t->key;

	rs->sseq_no++;
	t->addr = addr + len;
	t->length -= len;
	if (!t->length)
		rs->target_sge = (rs->target_sge + 1) % KRS_SGL_SIZE;
	return krs_post_data(rs, iov, off, len, KRS_MSG(KRS_OP_DATA, len),
			     true, addr, rkey);
}

/*
 * A data call on an rsocket still connecting takes the next steps first;
 * one that would wait is EAGAIN, as rdma-core's.
 */
static int krs_finish_connect(struct krs *rs, int flags)
{
	if (!(rs->state & KRS_OPENING) ||
	    !krs_connect_step(rs, krs_nonblocking(rs, flags)))
		return 0;
	if (errno == EINPROGRESS)
		errno = EAGAIN;
	return -1;
}

static size_t krs_iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * What rsend() and riowrite() first do: take a connection's next steps,
 * and refuse an rsocket that is not connected.  0, or -1 and errno.
 */
int krs_send_start(struct krs *rs, int flags)
{
	if (krs_finish_connect(rs, flags))
		return -1;
	if (!(rs->state & (KRS_CONNECTED | KRS_ERROR)))
		return kqp_err(rs->state & KRS_DISCONNECTED ? ECONNRESET :
							      ENOTCONN);
	return 0;
}

/*
 * The next transfer of the @left bytes to go: rdma-core's overlap, which
 * starts at KRS_OLAP_START and doubles (*@olen) up to KRS_MAX_TRANSFER,
 * within the free send buffer.
 */
uint32_t krs_xfer_size(const struct krs *rs, size_t left, uint32_t *olen)
{
	uint32_t xfer = left > KRS_MAX_TRANSFER ? KRS_MAX_TRANSFER :
						  (uint32_t)left;

	if (*olen < xfer) {
		xfer = *olen;
		*olen <<= 1;
	}
	return xfer > rs->sbuf_avail ? rs->sbuf_avail : xfer;
}

/*
 * Wait, unless @flags or the rsocket say not to, until a message can be
 * sent: 0, or -1 and errno (EWOULDBLOCK, or why the connection ended).
 */
int krs_wait_send(struct krs *rs, int flags)
{
	int ret;

	/* After shutdown(SHUT_WR) nothing more goes, as with TCP. */
	if ((rs->state & KRS_CONNECTED) && !(rs->state & KRS_WRITABLE))
		return kqp_err(EPIPE);
	if (krs_can_send(rs))
		return 0;
	ret = krs_process(rs, krs_nonblocking(rs, flags), krs_conn_can_send);
	if (ret)
		return ret;
	if (!(rs->state & KRS_WRITABLE))
		return kqp_err(rs->state & KRS_ERROR ? rs->err : ECONNRESET);
	return 0;
}

static ssize_t krs_sendv(struct krs *rs, const struct iovec *iov, int iovcnt,
			 int flags)
{
	size_t len = krs_iov_len(iov, iovcnt), left = len, off = 0;
	uint32_t xfer, room, olen = KRS_OLAP_START;
	int ret = 0;

	if (rs->dg)
		return krs_dg_sendv(rs, iov, iovcnt, flags, NULL, 0);
	while (iovcnt && !iov->iov_len) {
		iov++;
		iovcnt--;
	}
	if (krs_send_start(rs, flags))
		return -1;
	ret = krs_send_iomaps(rs, flags);
	if (ret)
		return ret;
	for (; left; left -= xfer) {
		ret = krs_wait_send(rs, flags);
		if (ret)
			break;
		xfer = krs_xfer_size(rs, left, &olen);
		/* The peer writes it: read once, and nothing sent on a 0. */
		room = rs->tsgl[rs->target_sge].length;
		if (xfer > room)
			xfer = room;
		if (!xfer)
			continue;
		ret = krs_write_data(rs, &iov, &off, xfer);
		if (ret)
			break;
	}
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

/* Copy out @len bytes of the receive buffer, from rbuf_off on. */
static void krs_copy_out(struct krs *rs, uint8_t *buf, uint32_t len)
{
	uint32_t end = rs->rbuf_size - rs->rbuf_off;

	if (len > end) {
		memcpy(buf, rs->rbuf + rs->rbuf_off, end);
		buf += end;
		len -= end;
		rs->rbuf_avail += end;
		rs->rbuf_off = 0;
	}
	memcpy(buf, rs->rbuf + rs->rbuf_off, len);
	rs->rbuf_off += len;
	rs->rbuf_avail += len;
}

static size_t krs_peek(struct krs *rs, uint8_t *buf, size_t len)
{
	uint32_t head = rs->rmsg_head, count = rs->rmsg_count;
	uint32_t off = rs->rbuf_off, n, end;
	size_t done = 0;

	while (done < len && count) {
		n = rs->rmsg[head];
		if (n > len - done)
			n = len - done;
		end = rs->rbuf_size - off;
		if (n > end) {
			memcpy(buf + done, rs->rbuf + off, end);
			memcpy(buf + done + end, rs->rbuf, n - end);
			off = n - end;
		} else {
			memcpy(buf + done, rs->rbuf + off, n);
			off += n;
		}
		done += n;
		head = (head + 1) % (rs->rq_size + 1);
		count--;
	}
	return done;
}

static ssize_t krs_recv(struct krs *rs, void *buf, size_t len, int flags)
{
	uint8_t *p = buf;
	size_t left = len;
	uint32_t n;
	int ret = 0;

	if (rs->dg)
		return krs_dg_recv(rs, buf, len, flags, NULL, NULL);
	if (krs_finish_connect(rs, flags))
		return -1;
	if (!(rs->state & (KRS_CONNECTED | KRS_DISCONNECTED | KRS_ERROR)))
		return kqp_err(ENOTCONN);
	if (!len)
		return 0;
	do {
		if (!rs->rmsg_count) {
			ret = krs_process(rs, krs_nonblocking(rs, flags),
					  krs_conn_have_rdata);
			if (ret)
				break;
			if (!rs->rmsg_count && (rs->state & KRS_ERROR)) {
				ret = kqp_err(rs->err);
				break;
			}
		}
		if (flags & MSG_PEEK) {
			left -= krs_peek(rs, p, left);
			break;
		}
		while (left && rs->rmsg_count) {
			uint32_t *head = &rs->rmsg[rs->rmsg_head];

			n = *head;
			if (left < n) {
				n = left;
				*head -= n;
			} else {
				rs->rseq_no++;
				rs->rmsg_head = (rs->rmsg_head + 1) %
						(rs->rq_size + 1);
				rs->rmsg_count--;
			}
			krs_copy_out(rs, p, n);
			p += n;
			left -= n;
		}
		krs_update_credits(rs);
	} while (left && (flags & MSG_WAITALL) && (rs->state & KRS_READABLE));
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

/*
 * rshutdown()'s message: DISCONNECT when neither direction is left,
 * SHUTDOWN when only receiving is; then wait for every send to complete,
 * blocking whatever O_NONBLOCK says, as rdma-core does.
 */
int krs_shutdown(struct krs *rs, int how)
{
	uint32_t ctrl;
	int ret = 0;

	if (rs->state & KRS_CONNECTED) {
		if (how == SHUT_RDWR) {
			ctrl = KRS_CTRL_DISCONNECT;
			rs->state &= ~(KRS_READABLE | KRS_WRITABLE);
		} else if (how == SHUT_WR) {
			rs->state &= ~KRS_WRITABLE;
			ctrl = (rs->state & KRS_READABLE) ? KRS_CTRL_SHUTDOWN :
							    KRS_CTRL_DISCONNECT;
		} else {
			rs->state &= ~KRS_READABLE;
			if (rs->state & KRS_WRITABLE)
				return 0;
			ctrl = KRS_CTRL_DISCONNECT;
		}
		if (!krs_ctrl_avail(rs))
			ret = krs_process(rs, false, krs_ctrl_ready);
		if (!ret && (rs->state & KRS_CONNECTED) && krs_ctrl_avail(rs)) {
			rs->ctrl_seqno++;
			ret = krs_post_msg(rs, KRS_MSG(KRS_OP_CTRL, ctrl));
		}
	}
	if (rs->state & KRS_CONNECTED)
		krs_process(rs, false, krs_all_sends_done);
	if ((rs->state & (KRS_DISCONNECTED | KRS_ERROR)) && rs->id->qp)
		rdma_disconnect(rs->id);
	return ret;
}

/* The calls themselves. */

KQP_EXPORT ssize_t rsend(int s, const void *buf, size_t len, int flags)
{
	struct iovec iov = { (void *)buf, len };
	struct krs *rs = krs_get(s);
	ssize_t ret;

	if (!rs)
		return -1;
	ret = krs_sendv(rs, &iov, 1, flags);
	krs_put(rs);
	return ret;
}

KQP_EXPORT ssize_t rsendto(int s, const void *buf, size_t len, int flags,
			   const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct iovec iov = { (void *)buf, len };
	struct krs *rs;
	ssize_t ret;

	if (!dest_addr && !addrlen)
		return rsend(s, buf, len, flags);
	rs = krs_get(s);
	if (!rs)
		return -1;
	ret = rs->dg ? krs_dg_sendv(rs, &iov, 1, flags, dest_addr, addrlen) :
		       kqp_err(EISCONN);
	krs_put(rs);
	return ret;
}

/* A stream rsocket ignores @to, as a TCP socket does. */
static ssize_t krs_sendv_call(int s, const struct iovec *iov, int iovcnt,
			      int flags, const struct sockaddr *to,
			      socklen_t tolen)
{
	struct krs *rs;
	ssize_t ret;

	if (iovcnt < 0 || iovcnt > IOV_MAX || (iovcnt && !iov))
		return kqp_err(EINVAL);
	rs = krs_get(s);
	if (!rs)
		return -1;
	ret = rs->dg && to ? krs_dg_sendv(rs, iov, iovcnt, flags, to, tolen) :
			     krs_sendv(rs, iov, iovcnt, flags);
	krs_put(rs);
	return ret;
}

KQP_EXPORT ssize_t rsendmsg(int s, const struct msghdr *msg, int flags)
{
	if (!msg)
		return kqp_err(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return kqp_err(ENOTSUP);
	return krs_sendv_call(s, msg->msg_iov, (int)msg->msg_iovlen, flags,
			      msg->msg_name, msg->msg_namelen);
}

KQP_EXPORT ssize_t rwrite(int s, const void *buf, size_t count)
{
	return rsend(s, buf, count, 0);
}

KQP_EXPORT ssize_t rwritev(int s, const struct iovec *iov, int iovcnt)
{
	return krs_sendv_call(s, iov, iovcnt, 0, NULL, 0);
}

KQP_EXPORT ssize_t rrecv(int s, void *buf, size_t len, int flags)
{
	struct krs *rs = krs_get(s);
	ssize_t ret;

	if (!rs)
		return -1;
	ret = krs_recv(rs, buf, len, flags);
	krs_put(rs);
	return ret;
}

KQP_EXPORT ssize_t rrecvfrom(int s, void *buf, size_t len, int flags,
			     struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct krs *rs = krs_get(s);
	ssize_t ret;

	if (!rs)
		return -1;
	if (rs->dg) {
		ret = krs_dg_recv(rs, buf, len, flags, src_addr, addrlen);
		krs_put(rs);
		return ret;
	}
	ret = krs_recv(rs, buf, len, flags);
	krs_put(rs);
	if (ret > 0 && src_addr && addrlen)
		rgetpeername(s, src_addr, addrlen);
	return ret;
}

/* As rdma-core's: only the first buffer is filled. */
KQP_EXPORT ssize_t rrecvmsg(int s, struct msghdr *msg, int flags)
{
	if (!msg || (msg->msg_iovlen && !msg->msg_iov))
		return kqp_err(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return kqp_err(ENOTSUP);
	if (!msg->msg_iovlen)
		return 0;
	return rrecv(s, msg->msg_iov[0].iov_base, msg->msg_iov[0].iov_len,
		     flags);
}

KQP_EXPORT ssize_t rread(int s, void *buf, size_t count)
{
	return rrecv(s, buf, count, 0);
}

KQP_EXPORT ssize_t rreadv(int s, const struct iovec *iov, int iovcnt)
{
	if (iovcnt < 0 || (iovcnt && !iov))
		return kqp_err(EINVAL);
	if (!iovcnt)
		return 0;
	return rrecv(s, iov[0].iov_base, iov[0].iov_len, 0);
}
