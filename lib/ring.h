/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * Every access libkqp makes to a ring's shared header: the consumer side
 * of a CQ ring (kernel/cq.c produces) and the producer side of a QP's
 * submission rings (kernel/ring.c consumes).  Hot path: everything here
 * is inline.
 *
 * Every access is an atomic one, so that none is torn or merged by the
 * compiler; each says what it pairs with in the kernel and why its
 * ordering is enough.  The protocol as a whole, with a table of the
 * pairs: doc/design/rings.md.
 */
#ifndef KQP_RING_H
#define KQP_RING_H

#include <stdint.h>

/*
 * Pairs with kqp_cq_produce()'s smp_store_release() of the tail after
 * writing the entries it covers: entries below the tail read here are
 * complete.
 */
static inline uint32_t kqp_ring_load_tail(const uint32_t *tail)
{
	return __atomic_load_n(tail, __ATOMIC_ACQUIRE);
}

/*
 * The head is ours: the kernel only reads it.  Reading back our own last
 * store needs no ordering against anything, only an untorn access, so
 * relaxed is enough (the kernel's smp_load_acquire() of it pairs with
 * kqp_ring_store_head(), not with this).
 */
static inline uint32_t kqp_ring_load_head(const uint32_t *head)
{
	return __atomic_load_n(head, __ATOMIC_RELAXED);
}

/*
 * Pairs with kqp_cq_produce()'s smp_load_acquire() of the head: the
 * entries below it were read and the kernel may overwrite them.
 */
static inline void kqp_ring_store_head(uint32_t *head, uint32_t v)
{
	__atomic_store_n(head, v, __ATOMIC_RELEASE);
}

/*
 * Arm, then a full barrier before the caller looks at the tail again.
 * Pairs with kqp_cq_produce()'s smp_mb() between storing the tail and
 * READ_ONCE() of the arm word: either we see its new entries, or it sees
 * this arm.  The store itself can be relaxed: the fence orders it.
 */
static inline void kqp_ring_arm(uint32_t *arm, uint32_t v)
{
	__atomic_store_n(arm, v, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/*
 * The flags are the kernel's: kqp_cq_drain() sets KQP_CQ_RING_OVERFLOW and
 * kqp_flush_cq() clears it, with WRITE_ONCE(), under the CQ's lock.  A
 * relaxed load pairs with those: it is untorn, and it needs no ordering,
 * because the flag guards no data we then read; it only says to call
 * KQP_IOCTL_FLUSH_CQ, which takes that lock.  A stale value costs one
 * needless ioctl, or defers the flush to the next poll.
 */
static inline uint32_t kqp_ring_flags(const uint32_t *flags)
{
	return __atomic_load_n(flags, __ATOMIC_RELAXED);
}

/*
 * The submission rings (kernel/ring.c is the consumer).  Pairs with
 * kqp_ring_drain()'s smp_load_acquire() of the tail: the entries below
 * @v are written before the kernel can see @v.
 */
static inline void kqp_wq_publish(uint32_t *tail, uint32_t v)
{
	__atomic_store_n(tail, v, __ATOMIC_RELEASE);
}

/*
 * Pairs with kqp_ring_drain()'s smp_store_release() of the head: the
 * device has every request below it (a receive is in its queue), and the
 * kernel copied their entries, which we may now overwrite.
 */
static inline uint32_t kqp_wq_consumed(const uint32_t *head)
{
	return __atomic_load_n(head, __ATOMIC_ACQUIRE);
}

/*
 * Pairs with the smp_store_release() of a ring's retired index, in
 * kqp_qp_retire_sends() (send ring) or kqp_rq_retired() (asynchronous
 * receive ring), or kqp_qp_reset() (both): the kernel's slots below it
 * are free, so it has one for every entry up to the queue's depth past
 * it.
 */
static inline uint32_t kqp_wq_retired(const uint32_t *retired)
{
	return __atomic_load_n(retired, __ATOMIC_ACQUIRE);
}

/*
 * After kqp_wq_publish(): must we ring?  The fence orders our store of
 * the tail before the load of the flags.  It pairs with the smp_mb() in
 * kqp_sq_settle() and kqp_sq_retired() (kernel/ring.c), or for a receive
 * ring kqp_rq_settle() and kqp_rq_retired(), between the kernel's store
 * of NEED_DOORBELL and its load of the tail: a store-buffering pair, so
 * either the kernel sees our tail and drains it, or we see the flag and
 * ring.  A clear flag means the kernel committed to drain again (a
 * signaled send is outstanding, the device holds half the receive
 * queue, or the poller serves the ring, and then KQP_WQ_RING_POLLED is
 * set).  The poller's last look before it sleeps
 * (kqp_qp_poll()) is a settle too, so the same pair covers it.  The load
 * itself can be relaxed: the flags guard no data we read.
 */
static inline int kqp_wq_need_doorbell(const uint32_t *flags,
				       uint32_t need)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(flags, __ATOMIC_RELAXED) & need;
}

#endif /* KQP_RING_H */
