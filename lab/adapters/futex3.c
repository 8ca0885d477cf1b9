/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/futex3.c - the plain wait-wake futex mutex: the baseline every adaptive mutex must beat.
 *
 * This is the "waiting futex" of the seed-004 series ("mutex 2"/"mutex 3" in Drepper's "Futexes Are
 * Tricky"): one 32-bit word with three states, no spinning at all, waiters sleep in the kernel.
 *
 * Lock word:
 *
 *	0  UNLOCKED
 *	1  LOCKED, no thread sleeps (or is about to sleep) on the word
 *	2  LOCKED, there may be sleepers: the unlocker must FUTEX_WAKE one
 *
 *	         lock: cas 0->1               contended lock: xchg 1->2, then sleep while 2
 *	   +-----------+ -----------> +----------+ ----------------------> +-------------+
 *	   | 0 UNLOCKD |              | 1 LOCKED |                         | 2 CONTENDED |
 *	   +-----------+ <----------- +----------+                         +-------------+
 *	     |     ^      unlock: xchg 0 (no wake)                           ^    |
 *	     |     +---------------------------------------------------------|----+
 *	     |                     unlock: xchg 0, then FUTEX_WAKE(1)        |
 *	     +---------------------------------------------------------------+
 *	          woken (or newly arriving slow-path) thread: xchg 0->2 = acquired
 *
 * Invariants:
 *  - The word is nonzero exactly while some thread owns the lock: an xchg(2) that returns 0 is an
 *    acquisition, one that returns 1 or 2 merely marks somebody else's lock contended.
 *  - A thread sleeps only after having stored 2 itself (xchg) and the kernel re-checks "word == 2"
 *    under its hash-bucket lock, so an unlock that stores 0 between our xchg and the sleep makes
 *    FUTEX_WAIT return EAGAIN: no lost wakeup.
 *  - A woken thread does not know whether others still sleep, so it re-acquires with xchg(2), never
 *    with cas(0->1): the lock is conservatively marked contended, which costs at most one useless
 *    FUTEX_WAKE at the next unlock (Drepper's "mutex 3" trade-off).
 *
 * No fairness: a running thread may steal the lock from a woken one (barging). That is deliberate; it
 * is what glibc's normal mutex does too and what makes this a fair baseline for throughput.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "futex.h"
#include "lab.h"

enum {
	F3_UNLOCKED = 0,
	F3_LOCKED = 1,
	F3_CONTENDED = 2,
};

struct futex3 {
	_Atomic uint32_t word;
};

static int futex3_init(void *l)
{
	struct futex3 *m = l;

	/* relaxed: initialisation; the lock is published to other threads by whatever hands them `l` */
	atomic_store_explicit(&m->word, F3_UNLOCKED, memory_order_relaxed);
	return 0;
}

/* The slow path: mark the lock contended and sleep until an xchg finds it unlocked.  1|2 -> 2 */
static __attribute__((noinline, cold)) void futex3_lock_slow(struct futex3 *m, uint32_t c)
{
	/*
	 * acquire (both xchgs): when the old value is 0 we own the lock; pairs with the release xchg in
	 * futex3_unlock, so the previous owner's critical section happens-before ours.
	 */
	if (c != F3_CONTENDED)
		c = atomic_exchange_explicit(&m->word, F3_CONTENDED, memory_order_acquire);
	while (c != F3_UNLOCKED) {
		/* EAGAIN (word changed), EINTR and spurious wakeups all just retry the xchg */
		lk_futex_wait(&m->word, F3_CONTENDED, NULL, CLOCK_MONOTONIC);
		c = atomic_exchange_explicit(&m->word, F3_CONTENDED, memory_order_acquire);
	}
}

/* Fast path: one CAS.  0 -> 1 */
static void futex3_lock(void *l)
{
	struct futex3 *m = l;
	uint32_t c = F3_UNLOCKED;

	/*
	 * acquire on success: pairs with the release xchg in futex3_unlock. relaxed on failure: we only
	 * learn the current state, the slow path's xchg does the acquiring.
	 */
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(&m->word, &c, F3_LOCKED,
								     memory_order_acquire,
								     memory_order_relaxed), 1))
		return;
	futex3_lock_slow(m, c);
}

static int futex3_trylock(void *l)
{
	struct futex3 *m = l;
	uint32_t c = F3_UNLOCKED;

	/* acquire on success: pairs with the release xchg in futex3_unlock; relaxed on failure: no access */
	if (atomic_compare_exchange_strong_explicit(&m->word, &c, F3_LOCKED, memory_order_acquire,
						    memory_order_relaxed))
		return 0;
	return EBUSY;
}

/* 1 -> 0, or 2 -> 0 and wake one sleeper. */
static void futex3_unlock(void *l)
{
	struct futex3 *m = l;

	/*
	 * release: publishes our critical section to the next owner; pairs with the acquire cas in
	 * futex3_lock/futex3_trylock and the acquire xchg in futex3_lock_slow. A plain store of 0 would
	 * not do: we must learn atomically whether somebody set 2 meanwhile.
	 */
	if (__builtin_expect(atomic_exchange_explicit(&m->word, F3_UNLOCKED, memory_order_release) ==
			     F3_CONTENDED, 0))
		lk_futex_wake(&m->word, 1);
}

const struct lab_lock_ops lab_futex3_ops = {
	.size = sizeof(struct futex3),
	.init = futex3_init,
	.destroy = NULL,
	.lock = futex3_lock,
	.trylock = futex3_trylock,
	.unlock = futex3_unlock,
	.flags = 0,
};
