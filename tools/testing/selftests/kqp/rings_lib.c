// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * The submission ring tests' helpers (rings_test.h says what they do),
 * built into rings, rings_hostile and poller.  Those that report through
 * the harness (rt_expect_*()) stay inline in the header.
 */
#define KQP_TEST_LIB
#include "rings_test.h"

long long rt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int rt_is_pow2(uint32_t x)
{
	return x && !(x & (x - 1));
}

int rt_pd(int fd, uint32_t dev, uint32_t *pd)
{
	struct kqp_alloc_pd a = { .size = sizeof(a), .device_index = dev };
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_ALLOC_PD, &a);

	*pd = a.out_pd;
	return ret;
}

int rt_dereg(int fd, uint32_t mr)
{
	struct kqp_dereg_mr d = { .size = sizeof(d), .mr = mr };

	return kqp_test_ioctl(fd, KQP_IOCTL_DEREG_MR, &d);
}

int rt_cq_make(int fd, uint32_t dev, uint32_t cqe, struct rt_cq *cq)
{
	int ret;

	memset(cq, 0, sizeof(*cq));
	cq->fd = fd;
	cq->c.size = sizeof(cq->c);
	cq->c.device_index = dev;
	cq->c.cqe = cqe;
	cq->c.channel_fd = -1;
	ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_CQ, &cq->c);
	if (ret)
		return ret;
	cq->map = mmap(NULL, cq->c.out_ring.mmap_size, PROT_READ | PROT_WRITE,
		       MAP_SHARED, fd, cq->c.out_ring.mmap_offset);
	if (cq->map == MAP_FAILED) {
		cq->map = NULL;
		return errno;
	}
	return 0;
}

void rt_cq_free(struct rt_cq *cq)
{
	struct kqp_destroy_cq d = { .size = sizeof(d), .cq = cq->c.out_cq };

	if (cq->map)
		munmap(cq->map, cq->c.out_ring.mmap_size);
	if (cq->c.out_cq)
		kqp_test_ioctl(cq->fd, KQP_IOCTL_DESTROY_CQ, &d);
	memset(cq, 0, sizeof(*cq));
}

int rt_cq_poll(struct rt_cq *cq, struct kqp_cqe *out, int n, int ms)
{
	const struct kqp_ring_info *ri = &cq->c.out_ring;
	uint32_t *head = (uint32_t *)(cq->map + ri->off_head);
	uint32_t *tail = (uint32_t *)(cq->map + ri->off_tail);
	uint32_t *flags = (uint32_t *)(cq->map + ri->off_flags);
	const struct kqp_cqe *cqes = (const void *)(cq->map + ri->off_cqes);
	long long end = rt_now_ms() + ms;
	int got = 0;

	for (;;) {
		uint32_t t = __atomic_load_n(tail, __ATOMIC_ACQUIRE);
		uint32_t h = __atomic_load_n(head, __ATOMIC_RELAXED);

		while (h != t && got < n) {
			if (out)
				out[got] = cqes[h & (ri->entries - 1)];
			got++;
			h++;
		}
		__atomic_store_n(head, h, __ATOMIC_RELEASE);
		if (__atomic_load_n(flags, __ATOMIC_ACQUIRE) &
		    KQP_CQ_RING_OVERFLOW) {
			struct kqp_flush_cq f = { .size = sizeof(f),
						  .cq = cq->c.out_cq };

			kqp_test_ioctl(cq->fd, KQP_IOCTL_FLUSH_CQ, &f);
		}
		if (got >= n || rt_now_ms() > end)
			return got;
		if (h == t)
			usleep(200);
	}
}

void rt_qp_req(struct kqp_create_qp *c, uint32_t pd, uint32_t scq, uint32_t rcq)
{
	kqp_test_rc_req(c, 16, 2);
	c->flags = KQP_CREATE_QP_RINGS;
	c->pd = pd;
	c->send_cq = scq;
	c->recv_cq = rcq;
	c->cap.max_inline_data = 64;
}

int rt_qp_map(struct rt_qp *q)
{
	q->map = mmap(NULL, q->c.out_rings.mmap_size, PROT_READ | PROT_WRITE,
		      MAP_SHARED, q->fd, q->c.out_rings.mmap_offset);
	if (q->map == MAP_FAILED) {
		q->map = NULL;
		return errno;
	}
	return 0;
}

int rt_qp_make(int fd, const struct kqp_create_qp *req, struct rt_qp *q)
{
	int ret;

	memset(q, 0, sizeof(*q));
	q->fd = fd;
	q->c = *req;
	ret = kqp_test_ioctl(fd, KQP_IOCTL_CREATE_QP, &q->c);
	if (ret) {
		q->c.out_qp = 0;
		return ret;
	}
	if (!(req->flags & KQP_CREATE_QP_RINGS))
		return 0;
	return rt_qp_map(q);
}

int rt_qp_destroy(struct rt_qp *q)
{
	struct kqp_destroy_qp d = { .size = sizeof(d), .qp = q->c.out_qp };
	int ret = 0;

	if (q->map)
		munmap(q->map, q->c.out_rings.mmap_size);
	q->map = NULL;
	if (q->c.out_qp)
		ret = kqp_test_ioctl(q->fd, KQP_IOCTL_DESTROY_QP, &d);
	q->c.out_qp = 0;
	return ret;
}

struct kqp_wq_ring_hdr *rt_sq_hdr(const struct rt_qp *q)
{
	return (void *)(q->map + q->c.out_rings.sq.off_hdr);
}

struct kqp_wq_ring_hdr *rt_rq_hdr(const struct rt_qp *q)
{
	return (void *)(q->map + q->c.out_rings.rq.off_hdr);
}

void *rt_sq_slot(const struct rt_qp *q, uint32_t i)
{
	const struct kqp_wq_ring_info *r = &q->c.out_rings.sq;

	return q->map + r->off_entries + (size_t)(i & (r->entries - 1)) *
					 r->entry_size;
}

void *rt_rq_slot(const struct rt_qp *q, uint32_t i)
{
	const struct kqp_wq_ring_info *r = &q->c.out_rings.rq;

	return q->map + r->off_entries + (size_t)(i & (r->entries - 1)) *
					 r->entry_size;
}

uint32_t rt_head(const struct kqp_wq_ring_hdr *h)
{
	return __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
}

void rt_set_tail(struct kqp_wq_ring_hdr *h, uint32_t tail)
{
	__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
}

uint32_t rt_sq_put(struct rt_qp *q, const void *wr, size_t len)
{
	void *e = rt_sq_slot(q, q->sq_tail);

	memset(e, 0, q->c.out_rings.sq.entry_size);
	memcpy(e, wr, len);
	return q->sq_tail++;
}

uint32_t rt_rq_put(struct rt_qp *q, const void *wr, size_t len)
{
	void *e = rt_rq_slot(q, q->rq_tail);

	memset(e, 0, q->c.out_rings.rq.entry_size);
	memcpy(e, wr, len);
	return q->rq_tail++;
}

void rt_sq_publish(struct rt_qp *q)
{
	rt_set_tail(rt_sq_hdr(q), q->sq_tail);
}

void rt_rq_publish(struct rt_qp *q)
{
	rt_set_tail(rt_rq_hdr(q), q->rq_tail);
}

struct rt_send rt_send1(uint64_t wr_id, uint32_t opcode,
			uint64_t addr, uint32_t len,
			uint32_t lkey)
{
	struct rt_send s = {
		.wr = { .wr_id = wr_id, .opcode = opcode, .num_sge = 1,
			.send_flags = KQP_SEND_FLAG_SIGNALED },
		.sge[0] = { .addr = addr, .length = len, .lkey = lkey },
	};

	return s;
}

struct rt_recv rt_recv1(uint64_t wr_id, uint64_t addr,
			uint32_t len, uint32_t lkey)
{
	struct rt_recv r = {
		.wr = { .wr_id = wr_id, .num_sge = 1 },
		.sge[0] = { .addr = addr, .length = len, .lkey = lkey },
	};

	return r;
}

int rt_doorbell(int fd, struct kqp_doorbell_entry *e,
		uint32_t n, uint32_t *done)
{
	struct kqp_doorbell d = {
		.size = sizeof(d), .count = n, .entry_size = sizeof(*e),
		.entries = (uintptr_t)e, .out_done = ~0U,
	};
	int ret = kqp_test_ioctl(fd, KQP_IOCTL_DOORBELL, &d);

	if (done)
		*done = d.out_done;
	return ret;
}

int rt_ring(const struct rt_qp *q, uint32_t flags)
{
	struct kqp_doorbell_entry e = {
		.qp = q->c.out_qp, .flags = flags, .out_errno = -1,
	};
	int ret = rt_doorbell(q->fd, &e, 1, NULL);

	return ret ? ret : e.out_errno;
}

int rt_gid_index(int fd, uint32_t dev, uint8_t gid[16])
{
	const char *s = getenv("KQP_TEST_ADDR");
	int i, any = -1;

	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	inet_pton(AF_INET, s ? s : "192.0.2.1", gid + 12);
	for (i = 0; i < 256; i++) {
		struct kqp_query_gid q = {
			.size = sizeof(q), .device_index = dev, .port_num = 1,
			.index = i,
		};

		if (kqp_test_ioctl(fd, KQP_IOCTL_QUERY_GID, &q))
			break;
		if (memcmp(q.out_gid, gid, 16))
			continue;
		if (q.out_gid_type == 2)	/* IBV_GID_TYPE_ROCE_V2 */
			return i;
		if (any < 0)
			any = i;
	}
	return any;
}

int rt_modify(int fd, uint32_t qp, uint32_t mask, const struct kqp_qp_attr *a)
{
	struct kqp_modify_qp m = {
		.size = sizeof(m), .qp = qp, .attr_mask = mask, .attr = *a,
	};

	return kqp_test_ioctl(fd, KQP_IOCTL_MODIFY_QP, &m);
}

int rt_to_err(const struct rt_qp *q)
{
	struct kqp_qp_attr a = { .qp_state = KQP_QPS_ERR };

	return rt_modify(q->fd, q->c.out_qp, KQP_QP_ATTR_STATE, &a);
}

int rt_qp_state(const struct rt_qp *q, uint32_t *rq_psn)
{
	struct kqp_query_qp c = {
		.size = sizeof(c), .qp = q->c.out_qp,
		.attr_mask = KQP_QP_ATTR_STATE | KQP_QP_ATTR_RQ_PSN,
	};

	if (kqp_test_ioctl(q->fd, KQP_IOCTL_QUERY_QP, &c))
		return -1;
	if (rq_psn)
		*rq_psn = c.out_attr.rq_psn;
	return (int)c.out_attr.qp_state;
}

int rt_qp_connect(const struct rt_qp *q, uint32_t dest,
		  const uint8_t gid[16], int sgid, int rnr_retry)
{
	return rt_qp_connect_psn(q, dest, gid, sgid, rnr_retry, 0x100, 0x100);
}

int rt_qp_connect_psn(const struct rt_qp *q, uint32_t dest,
		      const uint8_t gid[16], int sgid,
		      int rnr_retry, uint32_t rq_psn,
		      uint32_t sq_psn)
{
	struct kqp_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = KQP_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = RT_ACCESS_ALL;
	ret = rt_modify(q->fd, q->c.out_qp, KQP_TEST_RC_INIT, &a);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = KQP_QPS_RTR;
	a.path_mtu = 3;			/* IBV_MTU_1024 */
	a.dest_qp_num = dest;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	memcpy(a.ah_attr.dgid, gid, 16);
	a.ah_attr.is_global = 1;
	a.ah_attr.sgid_index = (uint8_t)sgid;
	a.ah_attr.hop_limit = 64;
	a.ah_attr.port_num = 1;
	ret = rt_modify(q->fd, q->c.out_qp, KQP_TEST_RC_RTR, &a);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = KQP_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = (uint8_t)rnr_retry;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	return rt_modify(q->fd, q->c.out_qp, KQP_TEST_RC_RTS, &a);
}

int rt_pair_build(struct rt_pair *p,
		 const struct kqp_create_qp *req, int rnr_retry)
{
	struct kqp_create_qp c;
	uint8_t gid[16];
	int sgid;

	memset(p, 0, sizeof(*p));
	p->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	if (p->fd < 0)
		return 1;
	p->dev = kqp_test_rxe_index(p->fd);
	if (p->dev == KQP_NO_DEVICE)
		return 2;
	{
		struct kqp_alloc_pd a = { .size = sizeof(a),
					  .device_index = p->dev };

		if (kqp_test_ioctl(p->fd, KQP_IOCTL_ALLOC_PD, &a))
			return 2;
		p->pd = a.out_pd;
	}
	if (rt_cq_make(p->fd, p->dev, 64, &p->ascq) ||
	    rt_cq_make(p->fd, p->dev, 64, &p->arcq) ||
	    rt_cq_make(p->fd, p->dev, 64, &p->bscq) ||
	    rt_cq_make(p->fd, p->dev, 64, &p->brcq))
		return 3;
	if (req)
		c = *req;
	else
		rt_qp_req(&c, 0, 0, 0);
	c.pd = p->pd;
	c.send_cq = p->ascq.c.out_cq;
	c.recv_cq = p->arcq.c.out_cq;
	if (rt_qp_make(p->fd, &c, &p->a))
		return 4;
	c.send_cq = p->bscq.c.out_cq;
	c.recv_cq = p->brcq.c.out_cq;
	if (rt_qp_make(p->fd, &c, &p->b))
		return 5;
	sgid = rt_gid_index(p->fd, p->dev, gid);
	if (sgid < 0)
		return 6;
	if (rt_qp_connect(&p->a, p->b.c.out_qp_num, gid, sgid, rnr_retry))
		return 7;
	if (rt_qp_connect(&p->b, p->a.c.out_qp_num, gid, sgid, rnr_retry))
		return 8;
	p->buf = aligned_alloc(4096, RT_BUF);
	if (!p->buf)
		return 9;
	memset(p->buf, 0, RT_BUF);
	if (kqp_test_reg_mr(p->fd, p->pd, p->buf, RT_BUF, RT_ACCESS_ALL,
			    &p->mr))
		return 10;
	return 0;
}

int rt_a_reconnect(struct rt_pair *p)
{
	struct kqp_qp_attr r = { .qp_state = KQP_QPS_RESET };
	uint32_t a_psn, b_psn;
	uint8_t gid[16];
	int sgid;

	if (rt_qp_state(&p->a, &a_psn) < 0 || rt_qp_state(&p->b, &b_psn) < 0)
		return 1;
	sgid = rt_gid_index(p->fd, p->dev, gid);
	if (sgid < 0)
		return 2;
	if (rt_modify(p->fd, p->a.c.out_qp, KQP_QP_ATTR_STATE, &r))
		return 3;
	if (rt_qp_connect_psn(&p->a, p->b.c.out_qp_num, gid, sgid, 7, a_psn,
			      b_psn))
		return 4;
	return 0;
}

void rt_pair_free(struct rt_pair *p)
{
	if (p->fd <= 0)
		return;
	rt_qp_destroy(&p->a);
	rt_qp_destroy(&p->b);
	if (p->mr.out_mr)
		rt_dereg(p->fd, p->mr.out_mr);
	rt_cq_free(&p->ascq);
	rt_cq_free(&p->arcq);
	rt_cq_free(&p->bscq);
	rt_cq_free(&p->brcq);
	close(p->fd);
	free(p->buf);
	memset(p, 0, sizeof(*p));
}

uint64_t rt_abuf(const struct rt_pair *p, uint32_t off)
{
	return (uintptr_t)p->buf + off;
}

uint64_t rt_bbuf(const struct rt_pair *p, uint32_t off)
{
	return (uintptr_t)p->buf + RT_HALF + off;
}

void rt_b_recvs(struct rt_pair *p, uint64_t first, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct rt_recv r = rt_recv1(first + i,
					    rt_bbuf(p, (uint32_t)(i * 256)),
					    256, p->mr.out_lkey);

		rt_rq_put(&p->b, &r, RT_RECV1_LEN);
	}
	rt_rq_publish(&p->b);
}

void rt_a_sends(struct rt_pair *p, uint64_t first, int n, uint32_t len)
{
	int i;

	for (i = 0; i < n; i++) {
		struct rt_send s = rt_send1(first + i, KQP_WR_OP_SEND,
					    rt_abuf(p, (uint32_t)(i * 256)),
					    len, p->mr.out_lkey);

		memset(p->buf + i * 256, (int)((first + i) & 0x7f) | 1, len);
		rt_sq_put(&p->a, &s, RT_SEND1_LEN);
	}
	rt_sq_publish(&p->a);
}

uint32_t rt_flags(const struct kqp_wq_ring_hdr *h)
{
	return __atomic_load_n(&h->flags, __ATOMIC_RELAXED);
}

bool rt_flags_become(const struct kqp_wq_ring_hdr *h,
		     uint32_t mask, uint32_t want, int ms)
{
	long long end = rt_now_ms() + ms;

	while ((rt_flags(h) & mask) != want) {
		if (rt_now_ms() >= end)
			return false;
		usleep(500);
	}
	return true;
}

void rt_a_write_put(struct rt_pair *p, uint64_t wr_id, bool signaled)
{
	struct rt_send s = rt_send1(wr_id, KQP_WR_OP_RDMA_WRITE,
				    rt_abuf(p, 0), 64, p->mr.out_lkey);

	s.wr.wr.rdma.remote_addr = rt_bbuf(p, 0);
	s.wr.wr.rdma.rkey = p->mr.out_rkey;
	if (!signaled)
		s.wr.send_flags = 0;
	rt_sq_put(&p->a, &s, RT_SEND1_LEN);
}
