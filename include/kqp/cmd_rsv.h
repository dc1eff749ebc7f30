/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The reserved column of kqp/cmds.h, member by member:
 * KQP_RSV_EACH(s, (a, b)) is KQP_RSV_ENTRY(s, a), KQP_RSV_ENTRY(s, b),
 * with the includer's KQP_RSV_ENTRY(); "()" is nothing.  The list loses
 * its parentheses behind a placeholder "_" (the GNU ", ##" drops the
 * comma when the list is empty), the placeholder and the members are
 * counted, and the count picks __KQP_RSV0 to __KQP_RSV3: a fourth member
 * fails to build.  Used by the kernel's dispatch table and the ABI
 * selftest.  Not installed.
 */
#ifndef _KQP_CMD_RSV_H
#define _KQP_CMD_RSV_H

#define KQP_RSV_MAX 3

#define __KQP_RSV0(_s, _)
#define __KQP_RSV1(_s, _, a) KQP_RSV_ENTRY(_s, a)
#define __KQP_RSV2(_s, _, a, b) __KQP_RSV1(_s, _, a), KQP_RSV_ENTRY(_s, b)
#define __KQP_RSV3(_s, _, a, b, c)					\
	__KQP_RSV2(_s, _, a, b), KQP_RSV_ENTRY(_s, c)
#define __KQP_RSV_NARGS(_0, _1, _2, _3, n, ...) n
#define __KQP_RSV_PASTE(a, b) a##b
#define __KQP_RSV_CALL(n, _s, ...)					\
	__KQP_RSV_PASTE(__KQP_RSV, n)(_s, __VA_ARGS__)
#define __KQP_RSV_N(_s, ...)						\
	__KQP_RSV_CALL(__KQP_RSV_NARGS(__VA_ARGS__, 3, 2, 1, 0), _s,	\
		       __VA_ARGS__)
#define __KQP_RSV_HEAD(...) _, ##__VA_ARGS__
#define __KQP_RSV_LIST(_s, ...) __KQP_RSV_N(_s, __VA_ARGS__)
#define KQP_RSV_EACH(_s, _list) __KQP_RSV_LIST(_s, __KQP_RSV_HEAD _list)

#endif /* _KQP_CMD_RSV_H */
