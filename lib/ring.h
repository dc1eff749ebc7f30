/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * The consumer side of a CQ ring (the kernel is the producer; see
 * kqp-abi.h and kernel/cq.c).  Hot path: everything here is inline.
 */
#ifndef KQP_RING_H
#define KQP_RING_H

#include <stdint.h>

/*
 * Pairs with the kernel's smp_store_release() of the tail after writing
 * the entries it covers: entries below the tail read here are complete.
 */
static inline uint32_t kqp_ring_load_tail(const uint32_t *tail)
{
	return __atomic_load_n(tail, __ATOMIC_ACQUIRE);
}

/*
 * Pairs with the kernel's smp_load_acquire() of the head: the entries
 * below it were read and the kernel may overwrite them.
 */
static inline void kqp_ring_store_head(uint32_t *head, uint32_t v)
{
	__atomic_store_n(head, v, __ATOMIC_RELEASE);
}

/*
 * Arm, then a full barrier before the caller looks at the tail again.
 * Pairs with the kernel's smp_mb() between storing the tail and reading
 * the arm word: either we see its new entries, or it sees this arm.
 */
static inline void kqp_ring_arm(uint32_t *arm, uint32_t v)
{
	__atomic_store_n(arm, v, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Written by the kernel; a plain load is enough for a hint. */
static inline uint32_t kqp_ring_flags(const uint32_t *flags)
{
	return __atomic_load_n(flags, __ATOMIC_RELAXED);
}

#endif /* KQP_RING_H */
