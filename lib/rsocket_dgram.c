// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Datagram rsockets: rsocket(SOCK_DGRAM) over a UD QP, on rdma-core's
 * wire (doc/design/rsocket.md has it field by field).
 *
 * An rsocket is a real UDP socket, whose fd is its number, and, from the
 * first rconnect() or send, one UD QP bound to the local address that
 * reaches the first peer, with this rsocket's UDP port.  A datagram to a
 * peer whose QP is not known yet goes over UDP behind a 16 (IPv4) or 28
 * (IPv6) byte header that names this end's QP.  The background thread
 * reads the UDP socket: each such DATA is answered with a CTRL header
 * naming this end's QP, and a DATA or CTRL teaches it the peer's QP
 * number, for which it resolves an address handle from the peer's IP.
 * From then on datagrams to that peer are UD sends: an 8 (IPv4) or 24
 * (IPv6) byte header with the sender's UDP address, then the data.
 *
 * Unlike rdma-core, which loops a datagram that came over UDP through a
 * UD send to itself (with an address handle RoCE refuses: no GRH), this
 * end queues it for rrecvfrom() as it is.  And every length from the wire
 * is checked before it is used: a header that does not fit what arrived,
 * a version or length the protocol does not have, a message longer than
 * a receive slot, and the datagram is dropped, as a bad UDP datagram is.
 * What a peer can make this end do is what any UDP peer can: send it
 * datagrams, and name the QP its own datagrams go to.
 *
 * Locking is the stream rsocket's: the rsocket's mutex, held by every
 * call and by the background thread while it reads the UDP socket.  The
 * thread drops it to resolve a peer's address handle (one per pass over
 * the socket, and a peer whose resolve failed not again for 10 s), so
 * that a sender whose address does not resolve costs the owner nothing;
 * it still holds up the thread for up to 2 s.  The peers' table is
 * bounded and gives up its least recently used entry.
 */
#include <endian.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "kqp_priv.h"
#include "rsocket.h"

#define KRS_DG_TAG		0x55555555u
#define KRS_DG_OP_DATA		0
#define KRS_DG_OP_CTRL		7
#define KRS_DG_UDP_HDR4		16
#define KRS_DG_UDP_HDR6		28
#define KRS_DG_HDR4		8
#define KRS_DG_HDR6		24
#define KRS_DG_GRH		40
/* A message with its header: what rdma-core's receive buffers take. */
#define KRS_DG_MSG		2048
#define KRS_DG_SLOT		(KRS_DG_GRH + KRS_DG_MSG)
#define KRS_DG_QKEY		0x01234567u
#define KRS_DG_MAX_DESTS	1024
/* Datagrams that came over UDP and wait for rrecvfrom(). */
#define KRS_DG_MAX_FWD		64
/*
 * Resolving a peer's address handle holds the background thread: each
 * step waits this long at most, a peer whose resolve failed is not tried
 * again for KRS_DG_RETRY_S seconds, and one pass over the UDP socket
 * resolves one peer at most.
 */
#define KRS_DG_RESOLVE_MS	1000
#define KRS_DG_RETRY_S		10
/* A send's wr_id has this bit clear, a receive's set. */
#define KRS_DG_RECV		(1ull << 63)

/* rdma-core's struct ds_udp_header, as it is on the wire. */
struct krs_dg_udp_hdr {
	uint32_t tag;
	uint8_t version;
	uint8_t op;
	uint8_t length;
	uint8_t reserved;
	uint32_t qpn;		/* big-endian, the low 24 bits */
	uint8_t addr[16];	/* the sender's IP; read by nobody */
} __attribute__((packed));

struct krs_dg_dest {
	struct sockaddr_storage addr;
	struct ibv_ah *ah;
	uint32_t qpn;
	uint64_t used;		/* krs_dg's clock when last used */
	long failed_at;		/* krs_now() of a resolve that failed, or 0 */
};

struct krs_dg_msg {
	struct sockaddr_storage from;
	uint8_t *data;
	uint32_t len;
	int32_t slot;		/* receive slot to post again; -1: malloc'd */
};

/**
 * struct krs_dg - a datagram rsocket's own
 * @dests: the peers sent to or heard from, @ndests of them
 * @conn: rconnect()'s peer in @dests, or -1
 * @hdr: this end's header for UD sends, @hdr_len bytes
 * @msg_max: the longest message, header in: the receive slot's, or the
 *	path MTU's when that is smaller (rxe drops a longer UD send and
 *	reports it sent)
 * @sfree: free send slots, @nfree of them
 * @q: received datagrams not yet read: a ring of @qsize from @qhead
 * @nfwd: of those, how many came over UDP
 * @clock: counts lookups, for the least recently used peer
 * @shut: what rshutdown() shut (1 << SHUT_RD, 1 << SHUT_WR)
 */
struct krs_dg {
	struct krs_dg_dest *dests;
	uint32_t ndests;
	uint64_t clock;
	unsigned int shut;
	int conn;
	uint8_t hdr[KRS_DG_HDR6];
	uint8_t hdr_len;
	uint32_t msg_max;
	uint32_t *sfree;
	uint32_t nfree;
	struct krs_dg_msg *q;
	uint32_t qsize;
	uint32_t qhead;
	uint32_t qcount;
	uint32_t nfwd;
};

static void krs_dg_process(struct krs *rs);

static socklen_t krs_dg_addrlen(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					  sizeof(struct sockaddr_in);
}

/* An address as a key: family, port, IP (and scope) only, the rest zero. */
static void krs_dg_key(struct sockaddr_storage *dst, const struct sockaddr *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->ss_family = src->sa_family;
	if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)src;
		struct sockaddr_in6 *d = (void *)dst;

		d->sin6_port = s->sin6_port;
		d->sin6_addr = s->sin6_addr;
		d->sin6_scope_id = s->sin6_scope_id;
	} else {
		const struct sockaddr_in *s = (const void *)src;
		struct sockaddr_in *d = (void *)dst;

		d->sin_port = s->sin_port;
		d->sin_addr = s->sin_addr;
	}
}

/*
 * The peer @addr names, added when @add; NULL and errno if none.  A full
 * table gives up its least recently used peer (never rconnect()'s): any
 * UDP sender can add peers.  The entry may move when another is added,
 * so a caller that drops the mutex looks it up again.
 */
static struct krs_dg_dest *krs_dg_dest(struct krs *rs,
				       const struct sockaddr *addr, bool add)
{
	struct krs_dg *dg = rs->dg;
	struct sockaddr_storage key;
	struct krs_dg_dest *d;
	uint32_t i, old = 0;

	krs_dg_key(&key, addr);
	for (i = 0; i < dg->ndests; i++) {
		if (!memcmp(&dg->dests[i].addr, &key, sizeof(key))) {
			dg->dests[i].used = ++dg->clock;
			return &dg->dests[i];
		}
	}
	if (!add)
		return kqp_err_ptr(ENOENT);
	if (dg->ndests == KRS_DG_MAX_DESTS) {
		for (i = 1; i < dg->ndests; i++)
			if ((int)old == dg->conn ||
			    ((int)i != dg->conn &&
			     dg->dests[i].used < dg->dests[old].used))
				old = i;
		d = &dg->dests[old];
		if (d->ah)
			ibv_destroy_ah(d->ah);
	} else {
		d = realloc(dg->dests, (dg->ndests + 1) * sizeof(*d));
		if (!d)
			return kqp_err_ptr(ENOMEM);
		dg->dests = d;
		d += dg->ndests++;
	}
	memset(d, 0, sizeof(*d));
	d->addr = key;
	d->used = ++dg->clock;
	return d;
}

int krs_dg_socket(int domain)
{
	int fd = socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0), err;
	struct krs *rs;

	if (fd < 0)
		return -1;
	rs = krs_alloc(NULL, domain);
	if (!rs) {
		close(fd);
		return kqp_err(ENOMEM);
	}
	/* From here krs_free() closes it. */
	rs->index = fd;
	rs->dg = calloc(1, sizeof(*rs->dg));
	if (!rs->dg) {
		close(fd);
		rs->index = -1;
		krs_free(rs);
		return kqp_err(ENOMEM);
	}
	rs->dg->conn = -1;
	if (krs_insert(rs)) {
		err = errno;
		krs_free(rs);
		return kqp_err(err);
	}
	return fd;
}

/* This end's header for UD sends: @src, its address toward its peers. */
static void krs_dg_format_hdr(struct krs_dg *dg, const struct sockaddr *src)
{
	memset(dg->hdr, 0, sizeof(dg->hdr));
	if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)src;

		dg->hdr[0] = 6;
		dg->hdr[1] = KRS_DG_HDR6;
		memcpy(&dg->hdr[2], &s->sin6_port, 2);
		memcpy(&dg->hdr[4], &s->sin6_flowinfo, 4);
		memcpy(&dg->hdr[8], &s->sin6_addr, 16);
		dg->hdr_len = KRS_DG_HDR6;
	} else {
		const struct sockaddr_in *s = (const void *)src;

		dg->hdr[0] = 4;
		dg->hdr[1] = KRS_DG_HDR4;
		memcpy(&dg->hdr[2], &s->sin_port, 2);
		memcpy(&dg->hdr[4], &s->sin_addr, 4);
		dg->hdr_len = KRS_DG_HDR4;
	}
}

static bool krs_dg_any(const struct sockaddr_storage *a)
{
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)a;

		return IN6_IS_ADDR_UNSPECIFIED(&s->sin6_addr) ||
		       IN6_IS_ADDR_LOOPBACK(&s->sin6_addr);
	}
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       htonl(INADDR_ANY) ||
	       (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >>
		24) == 127;
}

/*
 * This end's address toward @to: the UDP socket's, bound first if it is
 * not; its IP, when that is a wildcard, the one the kernel routes to @to
 * from, as rdma-core picks it.
 */
static int krs_dg_src(struct krs *rs, const struct sockaddr *to,
		      struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	struct sockaddr_storage tmp;
	in_port_t port;
	int fd, ret;

	if (getsockname(rs->index, (struct sockaddr *)src, &len))
		return -1;
	if (((struct sockaddr_in *)src)->sin_port == 0) {
		memset(&tmp, 0, sizeof(tmp));
		tmp.ss_family = rs->domain;
		if (bind(rs->index, (struct sockaddr *)&tmp,
			 krs_dg_addrlen(&tmp)))
			return -1;
		len = sizeof(*src);
		if (getsockname(rs->index, (struct sockaddr *)src, &len))
			return -1;
	}
	if (!krs_dg_any(src))
		return 0;
	/* sin_port and sin6_port are at the same place. */
	port = ((struct sockaddr_in *)src)->sin_port;
	fd = socket(to->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	len = sizeof(*src);
	ret = connect(fd, to, to->sa_family == AF_INET6 ?
			      sizeof(struct sockaddr_in6) :
			      sizeof(struct sockaddr_in));
	if (!ret)
		ret = getsockname(fd, (struct sockaddr *)src, &len);
	close(fd);
	((struct sockaddr_in *)src)->sin_port = port;
	return ret;
}

static int krs_dg_post_recv(struct krs *rs, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)rs->rbuf + (size_t)slot * KRS_DG_SLOT,
		.length = KRS_DG_SLOT,
		.lkey = rs->rmr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = KRS_DG_RECV | slot,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return ibv_post_recv(rs->id->qp, &wr, &bad);
}

/* Undo what a krs_dg_init_ep() that failed made; a later one tries again. */
static void krs_dg_drop_ep(struct krs *rs)
{
	struct krs_dg *dg = rs->dg;

	krs_free_ep(rs);
	rs->smr = NULL;
	rs->rmr = NULL;
	rs->sbuf = NULL;
	rs->rbuf = NULL;
	rs->cq = NULL;
	rs->cch = NULL;
	rs->cq_armed = false;
	if (rs->id)
		rdma_destroy_id(rs->id);
	rs->id = NULL;
	free(dg->sfree);
	dg->sfree = NULL;
	dg->nfree = 0;
	free(dg->q);
	dg->q = NULL;
	dg->qsize = 0;
}

/* The UD QP, its CQ and buffers, bound to this end's address toward @to. */
static int krs_dg_init_ep(struct krs *rs, const struct sockaddr *to)
{
	struct krs_dg *dg = rs->dg;
	struct ibv_qp_init_attr attr = {};
	struct sockaddr_storage src;
	struct ibv_port_attr port;
	uint32_t i, mtu;

	if (rs->id)
		return 0;
	if (krs_dg_src(rs, to, &src))
		return -1;
	if (rdma_create_id(NULL, &rs->id, rs, RDMA_PS_UDP)) {
		rs->id = NULL;
		return -1;
	}
	if (rdma_bind_addr(rs->id, (struct sockaddr *)&src))
		goto fail;
	if (!rs->id->verbs)
		goto fail_nodev;
	krs_dg_format_hdr(dg, (struct sockaddr *)&src);
	dg->msg_max = KRS_DG_MSG;
	if (!ibv_query_port(rs->id->verbs, rs->id->port_num, &port)) {
		mtu = port.active_mtu >= IBV_MTU_256 &&
		      port.active_mtu <= IBV_MTU_4096 ?
		      128u << port.active_mtu : KRS_DG_MSG;
		if (mtu < dg->msg_max)
			dg->msg_max = mtu;
	}
	if (rs->sq_size > 512)
		rs->sq_size = 512;
	if (rs->rq_size > 512)
		rs->rq_size = 512;
	if (!rs->sq_size)
		rs->sq_size = 1;
	if (!rs->rq_size)
		rs->rq_size = 1;
	attr.cap.max_send_sge = 1;
	attr.cap.max_recv_sge = 1;
	if (krs_create_qp(rs, IBV_QPT_UD, &attr))
		goto fail;
	/* A slot per WR asked for; the device may have given more. */
	if (attr.cap.max_send_wr < rs->sq_size)
		rs->sq_size = attr.cap.max_send_wr;
	if (attr.cap.max_recv_wr < rs->rq_size)
		rs->rq_size = attr.cap.max_recv_wr;
	rs->sbuf = calloc(rs->sq_size, KRS_DG_MSG);
	rs->rbuf = calloc(rs->rq_size, KRS_DG_SLOT);
	dg->sfree = calloc(rs->sq_size, sizeof(*dg->sfree));
	dg->qsize = rs->rq_size + KRS_DG_MAX_FWD;
	dg->q = calloc(dg->qsize, sizeof(*dg->q));
	if (!rs->sbuf || !rs->rbuf || !dg->sfree || !dg->q) {
		errno = ENOMEM;
		goto fail;
	}
	rs->smr = rdma_reg_msgs(rs->id, rs->sbuf,
				(size_t)rs->sq_size * KRS_DG_MSG);
	rs->rmr = rdma_reg_msgs(rs->id, rs->rbuf,
				(size_t)rs->rq_size * KRS_DG_SLOT);
	if (!rs->smr || !rs->rmr)
		goto fail;
	for (i = 0; i < rs->sq_size; i++)
		dg->sfree[dg->nfree++] = i;
	for (i = 0; i < rs->rq_size; i++)
		if (krs_dg_post_recv(rs, i))
			goto fail;
	if (!ibv_req_notify_cq(rs->cq, 0))
		rs->cq_armed = true;
	return 0;

fail_nodev:
	errno = ENODEV;
fail:
	i = errno;
	krs_dg_drop_ep(rs);
	return kqp_err(i);
}

/*
 * The address handle of the peer at @peer, from its IP's route.  The
 * background thread resolves with @rs's mutex dropped (the caller holds
 * a reference), so that the owner's calls do not wait on the network;
 * the peer's entry is then looked up again.
 */
static void krs_dg_make_ah(struct krs *rs, struct sockaddr_storage *peer)
{
	struct sockaddr_storage src = {};
	struct ibv_ah_attr attr = {};
	struct ibv_sa_path_rec *p;
	struct krs_dg_dest *d;
	struct rdma_cm_id *id;
	struct ibv_ah *ah = NULL;
	union ibv_gid gid;
	int i, ret;

	memcpy(&src, rdma_get_local_addr(rs->id), sizeof(struct sockaddr_in6));
	((struct sockaddr_in *)&src)->sin_port = 0;
	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_UDP))
		return;
	pthread_mutex_unlock(&rs->lock);
	ret = rdma_resolve_addr(id, (struct sockaddr *)&src,
				(struct sockaddr *)peer, KRS_DG_RESOLVE_MS) ||
	      rdma_resolve_route(id, KRS_DG_RESOLVE_MS) ||
	      !id->route.num_paths || !id->route.path_rec;
	pthread_mutex_lock(&rs->lock);
	if (ret || rs->closed)
		goto out;
	p = id->route.path_rec;
	if (p->hop_limit > 1) {
		attr.is_global = 1;
		attr.grh.dgid = p->dgid;
		attr.grh.flow_label = be32toh(p->flow_label);
		attr.grh.hop_limit = p->hop_limit;
		attr.grh.traffic_class = p->traffic_class;
		for (i = 0; i < 16; i++) {
			if (!ibv_query_gid(rs->id->verbs, rs->id->port_num, i,
					   &gid) &&
			    !memcmp(&gid, &p->sgid, sizeof(gid))) {
				attr.grh.sgid_index = i;
				break;
			}
		}
	}
	attr.dlid = be16toh(p->dlid);
	attr.sl = p->sl;
	attr.static_rate = p->rate;
	attr.port_num = rs->id->port_num;
	ah = ibv_create_ah(rs->id->pd, &attr);
out:
	rdma_destroy_id(id);
	d = krs_dg_dest(rs, (struct sockaddr *)peer, false);
	if (d && !d->ah && ah) {
		d->ah = ah;
		return;
	}
	if (ah)
		ibv_destroy_ah(ah);
	if (d && !d->ah)
		d->failed_at = krs_now();
}

/* Bound, it can hear from peers: the background thread reads it. */
int krs_dg_bind(struct krs *rs, const struct sockaddr *addr, socklen_t len)
{
	if (rs->state != KRS_INIT)
		return kqp_err(EINVAL);
	if (bind(rs->index, addr, len))
		return -1;
	rs->state = KRS_BOUND;
	return krs_svc_add(rs, KRS_SVC_DGRAM);
}

/* As connect(2) of a UDP socket; AF_UNSPEC forgets the peer. */
int krs_dg_connect(struct krs *rs, const struct sockaddr *addr,
		   socklen_t len)
{
	struct krs_dg_dest *d;

	if (addr->sa_family == AF_UNSPEC) {
		if (connect(rs->index, addr, len))
			return -1;
		rs->dg->conn = -1;
		return 0;
	}
	if (addr->sa_family != rs->domain)
		return kqp_err(EAFNOSUPPORT);
	d = krs_dg_dest(rs, addr, true);
	if (!d || krs_dg_init_ep(rs, addr) || connect(rs->index, addr, len))
		return -1;
	/* The entry may have moved, not gone: init_ep adds none. */
	rs->dg->conn = d - rs->dg->dests;
	rs->state = KRS_CONNECT_RDWR;
	return krs_svc_add(rs, KRS_SVC_DGRAM);
}

/*
 * rshutdown(): the rsocket's own state, as rdma-core's; the UDP socket
 * is left open (shut, it would poll readable for ever in the thread).
 */
int krs_dg_shutdown(struct krs *rs, int how)
{
	if (how == SHUT_RD || how == SHUT_RDWR)
		rs->dg->shut |= 1u << SHUT_RD;
	if (how == SHUT_WR || how == SHUT_RDWR)
		rs->dg->shut |= 1u << SHUT_WR;
	krs_poll_wake();
	return 0;
}

/*
 * rclose(): what was posted gets a moment to go out (a UDP socket's
 * close sends what it queued), not more.
 */
void krs_dg_close(struct krs *rs)
{
	int i;

	for (i = 0; rs->cq && i < 100 && rs->dg->nfree < rs->sq_size; i++) {
		krs_dg_process(rs);
		if (rs->dg->nfree < rs->sq_size)
			usleep(1000);
	}
}

int krs_dg_setsockopt(struct krs *rs, int level, int optname,
		      const void *optval, socklen_t optlen)
{
	int v;

	if (level != SOL_RDMA)
		return setsockopt(rs->index, level, optname, optval, optlen);
	if (optname != RDMA_SQSIZE && optname != RDMA_RQSIZE)
		return kqp_err(ENOTSUP);
	if (!optval || optlen < sizeof(int))
		return kqp_err(EINVAL);
	memcpy(&v, optval, sizeof(v));
	/* The queues are made with the QP. */
	if (rs->id || v <= 0)
		return kqp_err(EINVAL);
	if (optname == RDMA_SQSIZE)
		rs->sq_size = v > 512 ? 512 : v;
	else
		rs->rq_size = v > 512 ? 512 : v;
	return 0;
}

int krs_dg_getsockopt(struct krs *rs, int level, int optname, void *optval,
		      socklen_t *optlen)
{
	int v;

	if (level != SOL_RDMA)
		return getsockopt(rs->index, level, optname, optval, optlen);
	if (optname != RDMA_SQSIZE && optname != RDMA_RQSIZE)
		return kqp_err(ENOTSUP);
	if (!optval || !optlen || *optlen < sizeof(int))
		return kqp_err(EINVAL);
	v = optname == RDMA_SQSIZE ? rs->sq_size : rs->rq_size;
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(v);
	return 0;
}

/* Everything a datagram rsocket holds beyond what krs_free_ep() frees. */
void krs_dg_free(struct krs *rs)
{
	struct krs_dg *dg = rs->dg;
	uint32_t i;

	for (i = 0; i < dg->ndests; i++)
		if (dg->dests[i].ah)
			ibv_destroy_ah(dg->dests[i].ah);
	for (i = 0; dg->q && i < dg->qcount; i++) {
		struct krs_dg_msg *m = &dg->q[(dg->qhead + i) % dg->qsize];

		if (m->slot < 0)
			free(m->data);
	}
	free(dg->dests);
	free(dg->sfree);
	free(dg->q);
	free(dg);
	rs->dg = NULL;
	if (rs->index >= 0)
		close(rs->index);
}

static struct krs_dg_msg *krs_dg_q_tail(struct krs_dg *dg)
{
	return &dg->q[(dg->qhead + dg->qcount) % dg->qsize];
}

/* One receive completion: queued if its header is whole, else dropped. */
static void krs_dg_recv_done(struct krs *rs, const struct ibv_wc *wc)
{
	struct krs_dg *dg = rs->dg;
	uint32_t slot = (uint32_t)(wc->wr_id & ~KRS_DG_RECV), len, hlen;
	struct krs_dg_msg *m;
	uint8_t *p;

	if (slot >= rs->rq_size)
		return;
	p = rs->rbuf + (size_t)slot * KRS_DG_SLOT + KRS_DG_GRH;
	if (wc->status != IBV_WC_SUCCESS || wc->byte_len < KRS_DG_GRH ||
	    wc->byte_len > KRS_DG_SLOT || dg->qcount == dg->qsize)
		goto drop;
	len = wc->byte_len - KRS_DG_GRH;
	if (len < KRS_DG_HDR4)
		goto drop;
	hlen = p[1];
	if (!((p[0] == 4 && hlen == KRS_DG_HDR4) ||
	      (p[0] == 6 && hlen == KRS_DG_HDR6)) || len < hlen)
		goto drop;
	m = krs_dg_q_tail(dg);
	memset(&m->from, 0, sizeof(m->from));
	if (p[0] == 6) {
		struct sockaddr_in6 *s = (void *)&m->from;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_port, &p[2], 2);
		memcpy(&s->sin6_flowinfo, &p[4], 4);
		memcpy(&s->sin6_addr, &p[8], 16);
	} else {
		struct sockaddr_in *s = (void *)&m->from;

		s->sin_family = AF_INET;
		memcpy(&s->sin_port, &p[2], 2);
		memcpy(&s->sin_addr, &p[4], 4);
	}
	m->data = p + hlen;
	m->len = len - hlen;
	m->slot = slot;
	dg->qcount++;
	return;
drop:
	if (wc->status != IBV_WC_WR_FLUSH_ERR)
		krs_dg_post_recv(rs, slot);
}

/* Every completion the CQ holds, without waiting. */
static void krs_dg_process(struct krs *rs)
{
	struct krs_dg *dg = rs->dg;
	struct ibv_wc wc[8];
	int n, i;

	/*
	 * The CQ's events are rpoll()'s to take, after its sleep: one taken
	 * here, after rpoll() armed the CQ, would leave it sleeping unarmed.
	 */
	if (!rs->cq)
		return;
	while ((n = ibv_poll_cq(rs->cq, 8, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & KRS_DG_RECV)
				krs_dg_recv_done(rs, &wc[i]);
			else if (wc[i].wr_id < rs->sq_size &&
				 dg->nfree < rs->sq_size)
				dg->sfree[dg->nfree++] = (uint32_t)wc[i].wr_id;
		}
	}
}

static bool krs_dg_readable(struct krs *rs)
{
	krs_dg_process(rs);
	return rs->dg->qcount;
}

static bool krs_dg_writable(struct krs *rs)
{
	krs_dg_process(rs);
	return !rs->cq || rs->dg->nfree;
}

/* rpoll()'s revents: a shut direction is ready, as a UDP socket's is. */
short krs_dg_poll(struct krs *rs, short events)
{
	short revents = 0;

	if ((events & POLLIN) &&
	    (krs_dg_readable(rs) || (rs->dg->shut & (1u << SHUT_RD))))
		revents |= POLLIN;
	if ((events & POLLOUT) &&
	    (krs_dg_writable(rs) || (rs->dg->shut & (1u << SHUT_WR))))
		revents |= POLLOUT;
	return revents;
}

/* Wait up to a second for @events on @rs, its mutex dropped meanwhile. */
static int krs_dg_wait(struct krs *rs, short events)
{
	struct pollfd p = { .fd = rs->index, .events = events };

	pthread_mutex_unlock(&rs->lock);
	rpoll(&p, 1, 1000);
	pthread_mutex_lock(&rs->lock);
	return rs->closed ? kqp_err(EBADF) : 0;
}

static ssize_t krs_dg_send_udp(struct krs *rs, struct krs_dg_dest *d,
			       const struct iovec *iov, int iovcnt, int flags)
{
	struct krs_dg_udp_hdr h = {
		.tag = htobe32(KRS_DG_TAG),
		.op = KRS_DG_OP_DATA,
		.qpn = htobe32(rs->id->qp->qp_num & 0xffffff),
	};
	struct iovec *v = calloc(iovcnt + 1, sizeof(*v));
	struct msghdr msg = {
		.msg_name = &d->addr,
		.msg_namelen = krs_dg_addrlen(&d->addr),
		.msg_iov = v,
		.msg_iovlen = iovcnt + 1,
	};
	ssize_t ret;

	if (!v)
		return kqp_err(ENOMEM);
	if (rs->dg->hdr[0] == 6) {
		h.version = 6;
		h.length = KRS_DG_UDP_HDR6;
		memcpy(h.addr, &rs->dg->hdr[8], 16);
	} else {
		h.version = 4;
		h.length = KRS_DG_UDP_HDR4;
		memcpy(h.addr, &rs->dg->hdr[4], 4);
	}
	v[0].iov_base = &h;
	v[0].iov_len = h.length;
	memcpy(&v[1], iov, iovcnt * sizeof(*iov));
	/* Never a wait with the mutex held, which the thread needs. */
	ret = sendmsg(rs->index, &msg,
		      (flags & ~MSG_DONTWAIT) | MSG_DONTWAIT | MSG_NOSIGNAL);
	free(v);
	return ret < 0 ? ret : ret - h.length;
}

ssize_t krs_dg_sendv(struct krs *rs, const struct iovec *iov, int iovcnt,
		     int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct krs_dg *dg = rs->dg;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {}, *bad;
	struct sockaddr_storage peer;
	struct krs_dg_dest *d;
	size_t len = 0, off;
	uint32_t slot;
	uint8_t *p;
	int i, ret;

	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > KRS_DG_MSG ||
		    (iov[i].iov_len && !iov[i].iov_base))
			return kqp_err(iov[i].iov_base ? EMSGSIZE : EFAULT);
		len += iov[i].iov_len;
	}
	if (dg->shut & (1u << SHUT_WR))
		return kqp_err(EPIPE);
	if (to) {
		if (tolen < sizeof(struct sockaddr_in) ||
		    (to->sa_family == AF_INET6 &&
		     tolen < sizeof(struct sockaddr_in6)))
			return kqp_err(EINVAL);
		if (to->sa_family != rs->domain)
			return kqp_err(EAFNOSUPPORT);
		d = krs_dg_dest(rs, to, true);
	} else if (dg->conn >= 0) {
		d = &dg->dests[dg->conn];
	} else {
		return kqp_err(EDESTADDRREQ);
	}
	if (!d)
		return -1;
	peer = d->addr;
	if (krs_dg_init_ep(rs, (struct sockaddr *)&peer) ||
	    krs_svc_add(rs, KRS_SVC_DGRAM))
		return -1;
	if (rs->state == KRS_INIT || rs->state == KRS_BOUND)
		rs->state = KRS_CONNECT_RDWR;
	if (len > dg->msg_max - dg->hdr_len)
		return kqp_err(EMSGSIZE);
	while (!krs_dg_writable(rs)) {
		if (krs_nonblocking(rs, flags))
			return kqp_err(EAGAIN);
		if (krs_dg_wait(rs, POLLOUT))
			return -1;
	}
	/*
	 * Looked up again: while the mutex was dropped the table may have
	 * moved, and the peer lost its handle or its entry.
	 */
	d = krs_dg_dest(rs, (struct sockaddr *)&peer, true);
	if (!d)
		return -1;
	if (!d->ah)
		return krs_dg_send_udp(rs, d, iov, iovcnt, flags);
	slot = dg->sfree[--dg->nfree];
	p = rs->sbuf + (size_t)slot * KRS_DG_MSG;
	memcpy(p, dg->hdr, dg->hdr_len);
	for (i = 0, off = dg->hdr_len; i < iovcnt; i++) {
		memcpy(p + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	sge.addr = (uintptr_t)p;
	sge.length = off;
	sge.lkey = rs->smr->lkey;
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qpn;
	wr.wr.ud.remote_qkey = KRS_DG_QKEY;
	ret = ibv_post_send(rs->id->qp, &wr, &bad);
	if (ret) {
		dg->sfree[dg->nfree++] = slot;
		return kqp_err(ret);
	}
	return len;
}

ssize_t krs_dg_recv(struct krs *rs, void *buf, size_t len, int flags,
		    struct sockaddr *from, socklen_t *fromlen)
{
	struct krs_dg *dg = rs->dg;
	struct krs_dg_msg *m;
	size_t n;

	if (rs->state == KRS_INIT)
		return kqp_err(EINVAL);
	while (!krs_dg_readable(rs)) {
		if (dg->shut & (1u << SHUT_RD))
			return 0;
		if (krs_nonblocking(rs, flags))
			return kqp_err(EAGAIN);
		if (krs_dg_wait(rs, POLLIN))
			return -1;
	}
	m = &dg->q[dg->qhead];
	n = m->len < len ? m->len : len;
	if (n && !buf)
		return kqp_err(EFAULT);
	memcpy(buf, m->data, n);
	if (from && fromlen) {
		socklen_t l = krs_dg_addrlen(&m->from);

		memcpy(from, &m->from, *fromlen < l ? *fromlen : l);
		*fromlen = l;
	}
	if (flags & MSG_PEEK)
		return n;
	if (m->slot >= 0) {
		krs_dg_post_recv(rs, m->slot);
	} else {
		free(m->data);
		dg->nfwd--;
	}
	dg->qhead = (dg->qhead + 1) % dg->qsize;
	dg->qcount--;
	return n;
}

/*
 * One datagram on the UDP socket (the background thread, @rs's mutex
 * held): dropped unless its header is rdma-core's and fits.  A DATA is
 * answered with this end's QP and queued; DATA and CTRL teach the peer's.
 */
static void krs_dg_udp_one(struct krs *rs, const uint8_t *buf, size_t n,
			   const struct sockaddr_storage *from, int *resolves)
{
	struct krs_dg *dg = rs->dg;
	struct krs_dg_udp_hdr h, reply;
	struct krs_dg_dest *d;
	struct krs_dg_msg *m;
	uint32_t qpn;

	if (n < KRS_DG_UDP_HDR4)
		return;
	memset(&h, 0, sizeof(h));
	memcpy(&h, buf, n < sizeof(h) ? n : sizeof(h));
	if (be32toh(h.tag) != KRS_DG_TAG ||
	    !((h.version == 4 && from->ss_family == AF_INET &&
	       h.length == KRS_DG_UDP_HDR4) ||
	      (h.version == 6 && from->ss_family == AF_INET6 &&
	       h.length == KRS_DG_UDP_HDR6)) ||
	    n < h.length ||
	    (h.op != KRS_DG_OP_DATA && h.op != KRS_DG_OP_CTRL))
		return;
	qpn = be32toh(h.qpn) & 0xffffff;
	d = krs_dg_dest(rs, (const struct sockaddr *)from, true);
	if (!d || krs_dg_init_ep(rs, (const struct sockaddr *)from))
		return;
	if (h.op == KRS_DG_OP_DATA) {
		reply = (struct krs_dg_udp_hdr){
			.tag = htobe32(KRS_DG_TAG),
			.version = h.version,
			.op = KRS_DG_OP_CTRL,
			.length = h.length,
			.qpn = htobe32(rs->id->qp->qp_num & 0xffffff),
		};
		memcpy(reply.addr, &dg->hdr[h.version == 6 ? 8 : 4],
		       h.version == 6 ? 16 : 4);
		sendto(rs->index, &reply, reply.length,
		       MSG_DONTWAIT | MSG_NOSIGNAL, (const void *)from,
		       krs_dg_addrlen(from));
	}
	/* The handle is the peer's IP's: a new QP number needs no new one. */
	d->qpn = qpn;
	if (!d->ah && *resolves &&
	    (!d->failed_at || krs_now() - d->failed_at >= KRS_DG_RETRY_S)) {
		struct sockaddr_storage peer = d->addr;

		(*resolves)--;
		krs_dg_make_ah(rs, &peer);
	}
	if (h.op != KRS_DG_OP_DATA || dg->nfwd == KRS_DG_MAX_FWD ||
	    dg->qcount == dg->qsize)
		return;
	m = krs_dg_q_tail(dg);
	m->len = n - h.length;
	m->data = malloc(m->len ? m->len : 1);
	if (!m->data)
		return;
	memcpy(m->data, buf + h.length, m->len);
	m->from = *from;
	m->slot = -1;
	dg->qcount++;
	dg->nfwd++;
	krs_poll_wake();
}

/* The background thread: what the UDP socket holds, a bounded number. */
void krs_dg_svc(struct krs *rs)
{
	uint8_t buf[KRS_DG_UDP_HDR6 + KRS_DG_MSG];
	struct sockaddr_storage from, key;
	int i, resolves = 1;
	socklen_t len;
	ssize_t n;

	for (i = 0; i < 64 && !rs->closed; i++) {
		len = sizeof(from);
		n = recvfrom(rs->index, buf, sizeof(buf),
			     MSG_DONTWAIT | MSG_TRUNC,
			     (struct sockaddr *)&from, &len);
		if (n < 0)
			return;
		/* Longer than any datagram of the protocol: cut, dropped. */
		if ((size_t)n > sizeof(buf) || len < sizeof(struct sockaddr_in) ||
		    from.ss_family != rs->domain)
			continue;
		krs_dg_key(&key, (struct sockaddr *)&from);
		krs_dg_udp_one(rs, buf, n, &key, &resolves);
	}
}
