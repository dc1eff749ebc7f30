// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * ABI conformance: every kqp ioctl against the errno contract written in
 * kqp-abi.h.  The table has one slot per command number, so a command added
 * to the uapi enum without an entry here fails table_complete.
 */
#include <stddef.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "kqp_test.h"

#define ARGBUF 512

struct abi_case {
	const char *name;
	unsigned long ioctl_num;
	size_t size;		/* sizeof the structure */
	size_t min_size;	/* end of the first version's last field */
	long reserved_off;	/* a __u32 that must be zero, or -1 */
	long uptr_off;		/* a user pointer the command uses, or -1 */
	uint32_t valid_flags;
	/* Fill @arg with an argument the command accepts on @fd. */
	void (*prep)(int fd, void *arg);
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

#define ABI_CASE(_cmd, _ioctl, _struct, _last, _rsv, _uptr, _flags, _prep) \
	[_cmd - KQP_CMD_BASE] = {					\
		.name = #_ioctl,					\
		.ioctl_num = _ioctl,					\
		.size = sizeof(_struct),				\
		.min_size = offsetofend(_struct, _last),		\
		.reserved_off = _rsv,					\
		.uptr_off = _uptr,					\
		.valid_flags = _flags,					\
		.prep = _prep,						\
	}

static const struct abi_case cases[KQP_CMD_MAX - KQP_CMD_BASE] = {
	ABI_CASE(KQP_CMD_QUERY, KQP_IOCTL_QUERY, struct kqp_query, __reserved,
		 offsetof(struct kqp_query, __reserved),
		 offsetof(struct kqp_query, devices), 0, prep_query),
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
	self->fd = open(KQP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", KQP_DEV, strerror(errno));
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

TEST_F(abi, prepared_arg_accepted)
{
	uint8_t buf[ARGBUF] __attribute__((aligned(8)));
	const struct abi_case *c;

	for_each_case(c) {
		prep(self->fd, c, buf);
		EXPECT_EQ(0, run(self->fd, c, buf, c->size)) TH_LOG("%s", c->name);
		prep(self->fd, c, buf);
		EXPECT_EQ(0, run(self->fd, c, buf, c->min_size))
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
		EXPECT_EQ(0, run(self->fd, c, buf, c->size + 8))
			TH_LOG("%s", c->name);
		memset(buf, 0, self->pagesz);
		c->prep(self->fd, buf);
		EXPECT_EQ(0, run(self->fd, c, buf, self->pagesz))
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
	uint32_t v;

	for_each_case(c) {
		if (c->reserved_off < 0)
			continue;
		for (v = 1; v; v <<= 31) {
			prep(self->fd, c, buf);
			memcpy(buf + c->reserved_off, &v, sizeof(v));
			EXPECT_EQ(EOPNOTSUPP, run(self->fd, c, buf, c->size))
				TH_LOG("%s reserved = 0x%x", c->name, v);
		}
	}
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
		memset(self->page, 0, self->pagesz);
		c->prep(self->fd, self->page);
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
