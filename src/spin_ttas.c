/* SPDX-License-Identifier: MIT */
/*
 * src/spin_ttas.c - the TTAS spinlock's slow path (the layout and fast path are in
 * include/locklab/spin_ttas.h).
 *
 * Slow path, entered after the fast path's exchange found the lock held:
 *
 *	back off: delay <= BACKOFF_MAX ? delay x lk_cpu_relax(), delay *= 2 : sched_yield()
 *	    |
 *	    v
 *	look: read word (relaxed; the line stays Shared) --1--> back off again
 *	    |0
 *	    v
 *	xchg 1 (acquire) --old 0--> owned, return
 *	    |old 1: another waiter won the release
 *	    '-----> back off again
 *
 * Invariants: the word is 1 exactly while a thread is between a successful xchg and its unlock
 * store; a waiter writes the line only when it has just read 0 (test-and-TEST-and-set); between two
 * looks a waiter waits at least as long as the previous time (1, 2, 4, 8, 16 relaxes, then a yield),
 * and the delay never resets within one acquisition.
 *
 * Why this shape (docs/spinlocks.md has the measurements and what oneTBB's spin_mutex does):
 *  - Waiting between looks, not only after a lost exchange. Every look pulls the line into the
 *    waiter's cache; when the holder's next operation on the word (its unlock store, or re-locking
 *    at once) finds the line gone, it waits for a cross-core transfer. With an empty critical section
 *    that transfer, not the waiting, is the cost of the lock: a waiter that looks every pause halves
 *    the holder's throughput. Exponential backoff leaves the line with the holder.
 *  - Yielding early, after 31 relaxes (oneTBB's LOOPS_BEFORE_YIELD: about a context switch's worth
 *    of pauses), not after 1024. With more threads than CPUs the holder is often preempted; every
 *    pause a waiter spins then is CPU time the holder needs. On an idle CPU sched_yield() returns at
 *    once, so under no oversubscription a yield is just a longer pause that does not touch the line.
 *  - No randomisation: waiters arrive at different times, and a doubling delay already separates
 *    them; the first design's random backoff after lost exchanges did not help the holder, because
 *    the waiters' reads between exchanges went on pulling the line.
 */
#include <sched.h>
#include <stdint.h>

#include "locklab/relax.h"
#include "locklab/spin_ttas.h"

/* Largest delay between two looks, in relaxes; past it, every look is preceded by a yield. */
#define BACKOFF_MAX	16u

__attribute__((noinline, cold)) void lk_spin_ttas_lock_slow(struct lk_spin_ttas *l)
{
	unsigned delay = 1;

	for (;;) {
		if (delay <= BACKOFF_MAX) {
			for (unsigned n = delay; n; n--)
				lk_cpu_relax();
			delay <<= 1;
		} else {
			sched_yield();
		}
		/* relaxed: only a hint for when to try; the xchg below carries the acquire */
		if (atomic_load_explicit(&l->locked, memory_order_relaxed))
			continue;
		/* acquire: pairs with the release store in lk_spin_ttas_unlock(). 0 -> 1 */
		if (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0)
			return;
	}
}
