/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Dropping root for the tests that must prove an unprivileged user gets
 * nowhere (hostile.c, rings_hostile.c).  Include after kselftest_harness.h.
 */
#ifndef KQP_NOBODY_H
#define KQP_NOBODY_H

#include <grp.h>
#include <unistd.h>

#define NOBODY			65534

static inline void become_nobody(struct __test_metadata *_metadata)
{
	if (geteuid() == 0) {
		/* What only root may read, for the tests (kqp_test.h). */
		kqp_test_keys_reader();
		ASSERT_EQ(0, setgroups(0, NULL));
		ASSERT_EQ(0, setgid(NOBODY));
		ASSERT_EQ(0, setuid(NOBODY));
	}
	/* Everything below would prove nothing with privileges. */
	ASSERT_NE(0, geteuid());
}

#endif /* KQP_NOBODY_H */
