/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * kqp's tracepoints: the points of the data path that no function entry
 * marks, for make bench-breakdown (tools/bench/bench-breakdown.sh) and for
 * anyone asking where a completion's time went.  Disabled, each costs a
 * static branch.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM kqp

#if !defined(_KQP_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _KQP_TRACE_H

#include <linux/tracepoint.h>

/*
 * Completions became visible in a CQ's ring: the store-release of its
 * tail was made.  @cq is the CQ's handle in its table, @tail the new
 * tail, @count the entries it covers, @recv how many of them are
 * receive completions.
 */
TRACE_EVENT(kqp_cq_publish,
	TP_PROTO(u32 cq, u32 tail, u32 count, u32 recv),
	TP_ARGS(cq, tail, count, recv),
	TP_STRUCT__entry(
		__field(u32, cq)
		__field(u32, tail)
		__field(u32, count)
		__field(u32, recv)
	),
	TP_fast_assign(
		__entry->cq = cq;
		__entry->tail = tail;
		__entry->count = count;
		__entry->recv = recv;
	),
	TP_printk("cq=%u tail=%u count=%u recv=%u", __entry->cq,
		  __entry->tail, __entry->count, __entry->recv)
);

#endif /* _KQP_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
