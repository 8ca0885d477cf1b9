/* SPDX-License-Identifier: MIT */
/*
 * locklab/qspinlock.h - 4-byte queued spinlock: locked byte, pending bit, MCS tail (the kernel's
 * qspinlock design, for userspace threads instead of CPUs).
 *
 * Lock word (32 bits):
 *
 *	 31                     18 17  16 15       9   8    7          0
 *	+-------------------------+------+----------+-----+-------------+
 *	|  tail slot + 1 (14 bit) | idx  |  unused  | pnd |   locked    |
 *	+-------------------------+------+----------+-----+-------------+
 *
 *  locked  1 while a thread holds the lock.
 *  pending the first waiter spins here, on the lock word itself, without a queue node: the common
 *          one-waiter case costs no node and no extra line.
 *  tail    the last queued waiter: (thread slot + 1, nesting idx) names a node in the per-thread node
 *          array (4 nodes per thread, like the kernel's 4 per-CPU nodes for task/softirq/hardirq/nmi;
 *          a thread needs a second node only when a signal handler queues for a qspinlock while the
 *          thread itself is queued for another). 0 = no queue.
 *
 * State transitions (tail, pending, locked), as in kernel/locking/qspinlock.c:
 *
 *	fast:    0,0,0 -> 0,0,1                                            cas, acquire
 *	pending: 0,0,1 -> 0,1,1 ; wait 0,1,1 -> 0,1,0 ; 0,1,0 -> 0,0,1      fetch_or, then fetch_add
 *	queue:   p,*,* -> n,*,*  (xchg tail);  wait for the MCS handover;  wait *,0,0 (owner + pending
 *	         gone); then n,0,0 -> 0,0,1 if we are the last (cas) else *,0,0 -> *,0,1 and hand the
 *	         head-of-queue position to node->next
 *	unlock:  *,*,1 -> *,*,0                                            fetch_and, release
 *
 * Why: under contention only the head of the queue and the pending waiter touch the lock word; the rest
 * spin on their own node (MCS), so a release costs O(1) cache traffic. 4 bytes, so it fits anywhere a
 * plain spinlock does (seed 002: 2.5x the unbounded lockref loop on 224 CPUs).
 *
 * Thread slots: a thread gets a slot (0..LK_QSPIN_MAX_THREADS-1) the first time it queues and gives
 * it back when it exits (a pthread key destructor); nodes are only in use inside the slow path, so a
 * recycled slot is never referenced by a stale tail. After giving its slot back a thread never
 * queues again: a TLS destructor that runs later and takes a contended qspinlock spins on trylock.
 * A thread whose first queueing happens in its last TLS destructor round registers the destructor
 * too late (it never runs, and the thread cannot tell that the round is the last): its slot stays
 * claimed after it exits, until a thread that finds no free slot reclaims the slots of threads that
 * no longer exist (src/qspinlock.c). Beyond LK_QSPIN_MAX_THREADS live queueing threads, or nesting
 * deeper than 4, a thread falls back to spinning on trylock (correct, unfair; the kernel does the
 * same past 4 nesting levels).
 *
 * Differences from the kernel: the unlock is a fetch_and on the whole word instead of a byte store
 * (C11 has no mixed-size atomics; an RMW also lets us detect misuse); no paravirt hooks; long waits
 * yield the CPU (lk_spin_wait, see relax.h) because userspace cannot see that a holder was preempted.
 *
 * Misuse: unlock of a lock whose locked byte is 0 returns EPERM. Unlock by a non-holder while someone
 * holds it cannot be detected (no owner identity in 4 bytes).
 */
#ifndef LOCKLAB_QSPINLOCK_H
#define LOCKLAB_QSPINLOCK_H

#include <errno.h>
#include "locklab/atomic-internal.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LK_QSPIN_LOCKED		1u
#define LK_QSPIN_LOCKED_MASK	0xffu
#define LK_QSPIN_PENDING	(1u << 8)
#define LK_QSPIN_PENDING_MASK	0xff00u
#define LK_QSPIN_TAIL_IDX_SHIFT	16
#define LK_QSPIN_TAIL_SLOT_SHIFT 18
#define LK_QSPIN_TAIL_MASK	0xffff0000u
#define LK_QSPIN_MAX_THREADS	((1u << 14) - 1)
#define LK_QSPIN_MAX_NODES	4

struct lk_qspinlock {
	LK_ATOMIC(uint32_t) val;
};

#define LK_QSPINLOCK_INIT { 0 }

static inline void lk_qspin_init(struct lk_qspinlock *l)
{
	/* relaxed: initialisation, published by whatever hands `l` to other threads */
	atomic_store_explicit(&l->val, 0, memory_order_relaxed);
}

void lk_qspin_lock_slow(struct lk_qspinlock *l, uint32_t val);

/* Acquires the lock. ACQUIRE: pairs with the previous holder's lk_qspin_unlock(). */
static inline void lk_qspin_lock(struct lk_qspinlock *l)
{
	uint32_t val = 0;

	/* acquire: pairs with the release fetch_and in lk_qspin_unlock(). 0,0,0 -> 0,0,1 */
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(&l->val, &val, LK_QSPIN_LOCKED,
								     memory_order_acquire,
								     memory_order_relaxed), 1))
		return;
	lk_qspin_lock_slow(l, val);
}

/* 0 with the lock held (ACQUIRE), or EBUSY when anybody holds, pends on or queues for it. */
static inline int lk_qspin_trylock(struct lk_qspinlock *l)
{
	/* relaxed: a hint; the cas carries the acquire */
	uint32_t val = atomic_load_explicit(&l->val, memory_order_relaxed);

	if (val)
		return EBUSY;
	/* acquire: pairs with the release fetch_and in lk_qspin_unlock(). 0,0,0 -> 0,0,1 */
	return atomic_compare_exchange_strong_explicit(&l->val, &val, LK_QSPIN_LOCKED, memory_order_acquire,
						       memory_order_relaxed) ? 0 : EBUSY;
}

/*
 * Releases the lock. RELEASE. Returns 0, or EPERM if the locked byte was clear (nothing changed).
 *
 * One RMW that clears the locked bit and reports whether it was set: the locked byte only ever holds
 * 0 or 1 (no paravirt slow value here), so clearing bit 0 is the kernel's byte store. It was a load
 * then a fetch_sub: a second unlock racing the holder's could pass the check with it, and the two
 * subtractions borrowed into the pending bit and the tail, after which a queueing thread followed a
 * garbage tail (the hostile review's reproducer crashed in 6 of 9 runs; tests/test_qspin_double_unlock.c).
 * Now one of the two sees the bit already clear and says EPERM. (gcc emits x86 `lock btr` for it; the
 * misuse still breaks mutual exclusion when the lock was re-taken in between, as the header says.)
 */
static inline bool lk_qspin_clear_locked_(struct lk_qspinlock *l)
{
	/*
	 * release: pairs with the acquire loads/RMWs of the next owner (fast cas, pending or queue
	 * head). Returned as a bool, which is what lets gcc use `lock btr` (an int result made it a
	 * cmpxchg loop).
	 */
	return atomic_fetch_and_explicit(&l->val, ~LK_QSPIN_LOCKED, memory_order_release) & LK_QSPIN_LOCKED;
}

static inline int lk_qspin_unlock(struct lk_qspinlock *l)
{
	return __builtin_expect(lk_qspin_clear_locked_(l), 1) ? 0 : EPERM;
}

static inline bool lk_qspin_is_locked(struct lk_qspinlock *l)
{
	/* relaxed: a snapshot that orders nothing */
	return atomic_load_explicit(&l->val, memory_order_relaxed) & LK_QSPIN_LOCKED_MASK;
}

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_QSPINLOCK_H */
