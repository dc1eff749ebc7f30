// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ABI conformance: every kqp ioctl against the errno contract written in
 * kqp-abi.h.  The table has one slot per command number, so a command added
 * to the uapi enum without an entry here fails table_complete.
 */
#include <stddef.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>

#include <kqp/cmd_rsv.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

#define ARGBUF 1024

struct abi_rsv {
	size_t off;
	size_t len;
};

struct abi_case {
	const char *name;
	unsigned long ioctl_num;
	size_t size;		/* sizeof the structure */
	size_t min_size;	/* end of the first version's last field */
	long reserved_off;	/* a __reserved field, or -1 */
	size_t reserved_size;
	/* The reserved members kqp/cmds.h lists, up to one of len 0. */
	const struct abi_rsv *listed_rsv;
	long uptr_off;		/* a user pointer the command uses, or -1 */
	uint32_t valid_flags;
	/*
	 * Fill @arg with an argument that passes every generic check on
	 * @fd.  Commands on an id name handle 0, which a file never hands
	 * out, so their answer is ENOENT: distinct from every errno the
	 * generic checks give, and reached only after all of them.
	 */
	void (*prep)(int fd, void *arg);
	int expect;		/* the errno @prep's argument gets, or 0 */
	bool writes;		/* on success, the answer is copied back */
};

static struct kqp_device_info query_devs[8];

static void prep_query(int fd, void *arg)
{
	struct kqp_query *q = arg;

	(void)fd;
	q->size = sizeof(*q);
	q->num_devices = 8;
	q->device_info_size = sizeof(query_devs[0]);
	q->devices = (uintptr_t)query_devs;
}

static uint8_t pdata[8];

static void prep_create_id(int fd, void *arg)
{
	struct kqp_create_id *c = arg;

	(void)fd;
	c->port_space = KQP_PS_TCP;
	c->qp_type = KQP_QPT_RC;
}

static void set_sin(struct __kernel_sockaddr_storage *ss, const char *ip)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	inet_pton(AF_INET, ip, &sin.sin_addr);
	memcpy(ss, &sin, sizeof(sin));
}

static void prep_id0(int fd, void *arg)
{
	(void)fd;
	(void)arg;	/* id 0: nothing else to fill */
}

static void prep_bind(int fd, void *arg)
{
	(void)fd;
	set_sin(&((struct kqp_bind_addr *)arg)->addr, "192.0.2.1");
}

static void prep_resolve_addr(int fd, void *arg)
{
	(void)fd;
	set_sin(&((struct kqp_resolve_addr *)arg)->dst_addr, "192.0.2.1");
	((struct kqp_resolve_addr *)arg)->timeout_ms = 1000;
}

static void prep_conn_param(struct kqp_conn_param *p)
{
	p->private_data = (uintptr_t)pdata;
	p->private_data_len = sizeof(pdata);
}

static void prep_connect(int fd, void *arg)
{
	(void)fd;
	prep_conn_param(&((struct kqp_connect *)arg)->param);
}

static void prep_accept(int fd, void *arg)
{
	(void)fd;
	prep_conn_param(&((struct kqp_accept *)arg)->param);
}

static void prep_reject(int fd, void *arg)
{
	struct kqp_reject *r = arg;

	(void)fd;
	r->private_data = (uintptr_t)pdata;
	r->private_data_len = sizeof(pdata);
}

static void prep_set_option(int fd, void *arg)
{
	struct kqp_set_option *o = arg;

	(void)fd;
	o->level = KQP_OPTION_ID;
	o->optname = KQP_OPTION_ID_TOS;
	o->optlen = 1;
	o->optval = (uintptr_t)pdata;
}

static void prep_join(int fd, void *arg)
{
	(void)fd;
	set_sin(&((struct kqp_join_mcast *)arg)->addr, "239.1.1.1");
}

static void prep_migrate(int fd, void *arg)
{
	((struct kqp_migrate_id *)arg)->fd = fd;
}

/* A device index nothing has: commands naming a device get ENODEV. */
#define NO_DEVICE 0xfffffff0u

static void prep_no_device(int fd, void *arg)
{
	(void)fd;
	/* Every device command has device_index right after flags. */
	((uint32_t *)arg)[2] = NO_DEVICE;
}

static void prep_attach(int fd, void *arg)
{
	(void)fd;
	((struct kqp_attach *)arg)->fd = -1;
}

static void prep_create_cq(int fd, void *arg)
{
	struct kqp_create_cq *c = arg;

	(void)fd;
	c->device_index = NO_DEVICE;
	c->cqe = 16;
	c->channel_fd = -1;
}

static void prep_create_qp(int fd, void *arg)
{
	struct kqp_create_qp *c = arg;

	(void)fd;
	c->qp_type = KQP_QPT_RC;
	c->pd = 0x7ffffff0;	/* no such PD */
}

static void prep_create_srq(int fd, void *arg)
{
	struct kqp_create_srq *c = arg;

	(void)fd;
	c->pd = 0x7ffffff0;	/* no such PD */
	c->attr.max_wr = 4;
}

static uint64_t post_buf[8];

static void prep_post(int fd, void *arg)
{
	struct kqp_post *p = arg;

	(void)fd;
	p->count = 1;
	p->wrs = (uintptr_t)post_buf;
	p->wrs_len = sizeof(post_buf);
}

/* A doorbell for handle 0: the call succeeds, the entry gets ENOENT. */
static struct kqp_doorbell_entry db_entry;

static void prep_doorbell(int fd, void *arg)
{
	struct kqp_doorbell *d = arg;

	(void)fd;
	db_entry = (struct kqp_doorbell_entry){ .flags = KQP_DB_SEND };
	d->count = 1;
	d->entry_size = sizeof(db_entry);
	d->entries = (uintptr_t)&db_entry;
}

/*
 * An idle time past the largest: EINVAL, on every kernel, so that the
 * table never gets a poller here (a second one would be EBUSY).
 */
static void prep_create_poller(int fd, void *arg)
{
	struct kqp_create_poller *c = arg;

	(void)fd;
	c->idle_us = KQP_POLLER_IDLE_US_MAX + 1;
}

static uint8_t mr_buf[4096];

static void prep_reg_mr(int fd, void *arg)
{
	struct kqp_reg_mr *r = arg;

	(void)fd;
	r->addr = (uintptr_t)mr_buf;
	r->length = sizeof(mr_buf);
	r->iova = r->addr;
}

/*
 * Each command's argument, the end of its first version, its flags and
 * its reserved members, from the one list (include/kqp/cmds.h):
 * abi_NAME_t, abi_NAME_min, abi_NAME_flags and abi_NAME_listed.
 */
#define KQP_RSV_ENTRY(_s, _m) { offsetof(_s, _m), sizeof(((_s *)0)->_m) }
#define KQP_CMD(_name, _fn, _struct, _last, _known, _kind, _rsv)	\
	typedef _struct abi_##_name##_t;				\
	enum {								\
		abi_##_name##_min = offsetofend(_struct, _last),	\
		abi_##_name##_flags = _known,				\
	};								\
	static const struct abi_rsv abi_##_name##_listed[KQP_RSV_MAX + 1] = { \
		KQP_RSV_EACH(_struct, _rsv)				\
	};
#include <kqp/cmds.h>

/*
 * ABI_CASE(NAME, reserved, user pointer, prep, errno, writes back): the
 * test's own facts about command NAME.  The reserved field is named by
 * RSV (__reserved), RSV2 (__reserved2) or NORSV (none), each applied to
 * the command's argument from the list.
 */
#define ABI_CASE(_name, _rsv, _uptr, _prep, _expect, _writes)		\
	[KQP_CMD_##_name - KQP_CMD_BASE] = {				\
		.name = "KQP_IOCTL_" #_name,				\
		.ioctl_num = KQP_IOCTL_##_name,				\
		.size = sizeof(abi_##_name##_t),			\
		.min_size = abi_##_name##_min,				\
		_rsv(abi_##_name##_t),					\
		.listed_rsv = abi_##_name##_listed,			\
		.uptr_off = _uptr,					\
		.valid_flags = abi_##_name##_flags,			\
		.prep = _prep,						\
		.expect = _expect,					\
		.writes = _writes,					\
	}
#define RSV(_struct) .reserved_off = offsetof(_struct, __reserved),	\
	.reserved_size = sizeof(((_struct *)0)->__reserved)
#define RSV2(_struct) .reserved_off = offsetof(_struct, __reserved2), \
	.reserved_size = sizeof(((_struct *)0)->__reserved2)
#define NORSV(_struct) .reserved_off = -1
#define NONE (-1)

static const struct abi_case cases[KQP_CMD_MAX - KQP_CMD_BASE] = {
	ABI_CASE(QUERY, RSV, offsetof(struct kqp_query, devices), prep_query, 0,
		 true),
	ABI_CASE(CREATE_ID, RSV, NONE, prep_create_id, 0, true),
	ABI_CASE(DESTROY_ID, NORSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(BIND_ADDR, RSV, NONE, prep_bind, ENOENT, false),
	ABI_CASE(RESOLVE_ADDR, NORSV, NONE, prep_resolve_addr, ENOENT, false),
	ABI_CASE(RESOLVE_ROUTE, NORSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(QUERY_ID, NORSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(LISTEN, NORSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(CONNECT, RSV, offsetof(struct kqp_connect, param.private_data),
		 prep_connect, ENOENT, false),
	ABI_CASE(ACCEPT, RSV, offsetof(struct kqp_accept, param.private_data),
		 prep_accept, ENOENT, false),
	ABI_CASE(REJECT, NORSV, offsetof(struct kqp_reject, private_data),
		 prep_reject, ENOENT, false),
	ABI_CASE(DISCONNECT, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(SET_OPTION, NORSV, offsetof(struct kqp_set_option, optval),
		 prep_set_option, ENOENT, false),
	ABI_CASE(INIT_QP_ATTR, RSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(NOTIFY, NORSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(ESTABLISH, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(JOIN_MCAST, RSV, NONE, prep_join, ENOENT, true),
	ABI_CASE(LEAVE_MCAST, RSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(MIGRATE_ID, NORSV, NONE, prep_migrate, ENOENT, true),
	ABI_CASE(GET_EVENT, RSV, NONE, prep_id0, EAGAIN, true),
	ABI_CASE(ATTACH, RSV, NONE, prep_attach, EBADF, false),
	ABI_CASE(CTX_INFO, RSV, NONE, prep_id0, 0, true),
	ABI_CASE(QUERY_DEVICE, RSV, NONE, prep_no_device, ENODEV, true),
	ABI_CASE(QUERY_PORT, RSV, NONE, prep_no_device, ENODEV, true),
	ABI_CASE(QUERY_GID, NORSV, NONE, prep_no_device, ENODEV, true),
	ABI_CASE(QUERY_PKEY, NORSV, NONE, prep_no_device, ENODEV, true),
	ABI_CASE(ALLOC_PD, RSV, NONE, prep_no_device, ENODEV, true),
	ABI_CASE(DEALLOC_PD, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(CREATE_COMP_CHANNEL, RSV, NONE, prep_id0, 0, true),
	ABI_CASE(CREATE_CQ, NORSV, NONE, prep_create_cq, ENODEV, true),
	ABI_CASE(DESTROY_CQ, RSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(FLUSH_CQ, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(CREATE_QP, RSV2, NONE, prep_create_qp, ENOENT, true),
	ABI_CASE(DESTROY_QP, NORSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(MODIFY_QP, NORSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(QUERY_QP, NORSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(POST_SEND, NORSV, offsetof(struct kqp_post, wrs), prep_post,
		 ENOENT, true),
	ABI_CASE(POST_RECV, NORSV, offsetof(struct kqp_post, wrs), prep_post,
		 ENOENT, true),
	ABI_CASE(CREATE_ASYNC_FD, RSV, NONE, prep_id0, EBUSY, true),
	ABI_CASE(REG_MR, RSV, NONE, prep_reg_mr, ENOENT, true),
	ABI_CASE(DEREG_MR, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(CREATE_AH, RSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(DESTROY_AH, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(ATTACH_MCAST, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(DETACH_MCAST, RSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(CREATE_SRQ, RSV, NONE, prep_create_srq, ENOENT, true),
	ABI_CASE(DESTROY_SRQ, NORSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(MODIFY_SRQ, NORSV, NONE, prep_id0, ENOENT, false),
	ABI_CASE(QUERY_SRQ, RSV, NONE, prep_id0, ENOENT, true),
	ABI_CASE(POST_SRQ_RECV, NORSV, offsetof(struct kqp_post, wrs),
		 prep_post, ENOENT, true),
	ABI_CASE(DOORBELL, RSV, offsetof(struct kqp_doorbell, entries),
		 prep_doorbell, 0, true),
	ABI_CASE(CREATE_POLLER, RSV, NONE, prep_create_poller, EINVAL, false),
};

#define for_each_case(c) \
	for (c = cases; c < cases + sizeof(cases) / sizeof(cases[0]); c++)

FIXTURE(abi) {
	int fd;
	uint8_t *page;		/* two pages, the second PROT_NONE */
	long pagesz;
};

FIXTURE_SETUP(abi)
{
	struct kqp_create_async_fd afd = { .size = sizeof(afd) };

	self->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", KQP_DEV, strerror(errno));
	ASSERT_EQ(0, kqp_test_ioctl(self->fd, KQP_IOCTL_CREATE_ASYNC_FD, &afd));
	self->pagesz = sysconf(_SC_PAGESIZE);
	self->page = mmap(NULL, 2 * self->pagesz, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->page);
	ASSERT_EQ(0, mprotect(self->page + self->pagesz, self->pagesz,
			      PROT_NONE));
}

FIXTURE_TEARDOWN(abi)
{
	munmap(self->page, 2 * self->pagesz);
	close(self->fd);
}

/* Run @c with a prepared argument whose size field says @size. */
static int run(int fd, const struct abi_case *c, uint8_t *buf, uint32_t size)
{
	memcpy(buf, &size, sizeof(size));
	return kqp_test_ioctl(fd, c->ioctl_num, buf);
}

static void prep(int fd, const struct abi_case *c, uint8_t *buf)
{
	memset(buf, 0, ARGBUF);
	c->prep(fd, buf);
}

TEST_F(abi, table_complete)
{
	const struct abi_case *c;

	for_each_case(c) {
		unsigned int nr = KQP_CMD_BASE + (c - cases);

		ASSERT_NE(NULL, c->name) TH_LOG("command 0x%x has no entry", nr);
		ASSERT_EQ(nr, _IOC_NR(c->ioctl_num));
		ASSERT_EQ(KQP_IOCTL_TYPE, _IOC_TYPE(c->ioctl_num));
		ASSERT_GE(c->size, c->min_size);
		ASSERT_GE(c->min_size, 8);
		ASSERT_GE(ARGBUF - 64, c->size);
	}
}

TEST_F(abi, prepared_arg_baseline)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;

	for_each_case(c) {
		prep(self->fd, c, buf);
		EXPECT_EQ(c->expect, run(self->fd, c, buf, c->size))
			TH_LOG("%s", c->name);
		prep(self->fd, c, buf);
		EXPECT_EQ(c->expect, run(self->fd, c, buf, c->min_size))
			TH_LOG("%s at min_size", c->name);
	}
}

TEST_F(abi, too_short_einval)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;
	uint32_t sizes[] = { 0, 4, 8 };
	unsigned int i;

	for_each_case(c) {
		prep(self->fd, c, buf);
		EXPECT_EQ(EINVAL, run(self->fd, c, buf, c->min_size - 1))
			TH_LOG("%s", c->name);
		for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			if (sizes[i] >= c->min_size)
				continue;
			prep(self->fd, c, buf);
			EXPECT_EQ(EINVAL, run(self->fd, c, buf, sizes[i]))
				TH_LOG("%s size %u", c->name, sizes[i]);
		}
	}
}

TEST_F(abi, zero_tail_accepted)
{
	const struct abi_case *c;
	uint8_t *buf;

	/* A whole page of zero tail: a much newer caller on this kernel. */
	buf = self->page;
	for_each_case(c) {
		memset(buf, 0, self->pagesz);
		c->prep(self->fd, buf);
		EXPECT_EQ(c->expect, run(self->fd, c, buf, c->size + 8))
			TH_LOG("%s", c->name);
		memset(buf, 0, self->pagesz);
		c->prep(self->fd, buf);
		EXPECT_EQ(c->expect, run(self->fd, c, buf, self->pagesz))
			TH_LOG("%s page-sized", c->name);
	}
}

TEST_F(abi, nonzero_tail_e2big)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;

	for_each_case(c) {
		prep(self->fd, c, buf);
		buf[c->size + 7] = 1;
		EXPECT_EQ(E2BIG, run(self->fd, c, buf, c->size + 8))
			TH_LOG("%s last tail byte", c->name);
		prep(self->fd, c, buf);
		buf[c->size] = 0x80;
		EXPECT_EQ(E2BIG, run(self->fd, c, buf, c->size + 1))
			TH_LOG("%s first tail byte", c->name);
	}
}

TEST_F(abi, unknown_flags_eopnotsupp)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;
	unsigned int bit;

	for_each_case(c) {
		for (bit = 0; bit < 32; bit++) {
			uint32_t flags = 1u << bit;

			if (c->valid_flags & flags)
				continue;
			prep(self->fd, c, buf);
			memcpy(buf + 4, &flags, sizeof(flags));
			EXPECT_EQ(EOPNOTSUPP, run(self->fd, c, buf, c->size))
				TH_LOG("%s flag bit %u", c->name, bit);
		}
	}
}

TEST_F(abi, reserved_nonzero_eopnotsupp)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;
	size_t byte;

	for_each_case(c) {
		if (c->reserved_off < 0)
			continue;
		/* Its first and its last byte, one at a time. */
		for (byte = 0; byte < c->reserved_size;
		     byte += c->reserved_size > 1 ? c->reserved_size - 1 : 1) {
			prep(self->fd, c, buf);
			buf[c->reserved_off + byte] = 0x80;
			EXPECT_EQ(EOPNOTSUPP, run(self->fd, c, buf, c->size))
				TH_LOG("%s reserved byte %zu", c->name, byte);
		}
	}
}

/*
 * Every reserved member the one list names, nested ones included, is
 * refused when it is not zero, whatever the command: the dispatcher
 * checks them before any command runs.
 */
TEST_F(abi, listed_reserved_nonzero_eopnotsupp)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;
	const struct abi_rsv *r;
	size_t byte;
	int members = 0;

	for_each_case(c) {
		for (r = c->listed_rsv; r->len; r++) {
			members++;
			ASSERT_LE(r->off + r->len, c->size);
			for (byte = 0; byte < r->len;
			     byte += r->len > 1 ? r->len - 1 : 1) {
				prep(self->fd, c, buf);
				buf[r->off + byte] = 0x80;
				EXPECT_EQ(EOPNOTSUPP,
					  run(self->fd, c, buf, c->size))
					TH_LOG("%s reserved at %zu, byte %zu",
					       c->name, r->off, byte);
			}
		}
	}
	/* The list has them: a table built wrong would have none. */
	EXPECT_LT(30, members);
}

TEST_F(abi, bad_arg_pointer_efault)
{
	const struct abi_case *c;
	uint8_t *end;

	for_each_case(c) {
		EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, c->ioctl_num, NULL))
			TH_LOG("%s NULL", c->name);
		EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, c->ioctl_num,
						 self->page + self->pagesz))
			TH_LOG("%s unmapped", c->name);
		EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, c->ioctl_num,
						 (void *)-4096L))
			TH_LOG("%s kernel address", c->name);

		/* Valid start, but @size reaches into the PROT_NONE page. */
		end = self->page + self->pagesz - c->size;
		memset(end, 0, c->size);
		c->prep(self->fd, end);
		EXPECT_EQ(EFAULT, run(self->fd, c, end, c->size + 64))
			TH_LOG("%s straddling", c->name);
	}
}

TEST_F(abi, readonly_arg_efault)
{
	const struct abi_case *c;

	for_each_case(c) {
		/* Only an answer that is copied back can fault. */
		if (c->expect || !c->writes)
			continue;
		memset(self->page, 0, self->pagesz);
		c->prep(self->fd, self->page);
		memcpy(self->page, &(uint32_t){ c->size }, sizeof(uint32_t));
		ASSERT_EQ(0, mprotect(self->page, self->pagesz, PROT_READ));
		EXPECT_EQ(EFAULT, kqp_test_ioctl(self->fd, c->ioctl_num,
						 self->page))
			TH_LOG("%s", c->name);
		ASSERT_EQ(0, mprotect(self->page, self->pagesz,
				      PROT_READ | PROT_WRITE));
	}
}

TEST_F(abi, bad_embedded_pointer_efault)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;
	uint64_t bad[] = {
		0,
		(uintptr_t)(self->page + self->pagesz),
		(uint64_t)-4096,
	};
	unsigned int i;

	for_each_case(c) {
		if (c->uptr_off < 0)
			continue;
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			prep(self->fd, c, buf);
			memcpy(buf + c->uptr_off, &bad[i], sizeof(bad[i]));
			EXPECT_EQ(EFAULT, run(self->fd, c, buf, c->size))
				TH_LOG("%s pointer 0x%llx", c->name,
				       (unsigned long long)bad[i]);
		}
	}
}

TEST_F(abi, unknown_ioctl_enotty)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	unsigned long bad[] = {
		_IO(KQP_IOCTL_TYPE, KQP_CMD_BASE - 1),
		_IO(KQP_IOCTL_TYPE, KQP_CMD_MAX),
		_IO(KQP_IOCTL_TYPE, 0xff),
		_IO(KQP_IOCTL_TYPE, 0),
		_IO(KQP_IOCTL_TYPE + 1, KQP_CMD_BASE),
		_IOWR(KQP_IOCTL_TYPE, KQP_CMD_QUERY, struct kqp_query),
		_IOR(KQP_IOCTL_TYPE, KQP_CMD_QUERY, struct kqp_query),
		_IOW(KQP_IOCTL_TYPE, KQP_CMD_QUERY, struct kqp_query),
		FIONREAD,
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(buf, 0, sizeof(buf));
		prep_query(self->fd, buf);
		EXPECT_EQ(ENOTTY, kqp_test_ioctl(self->fd, bad[i], buf))
			TH_LOG("ioctl 0x%lx", bad[i]);
	}
}

TEST_HARNESS_MAIN
