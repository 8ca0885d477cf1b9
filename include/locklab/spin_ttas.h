/* SPDX-License-Identifier: MIT */
/*
 * locklab/spin_ttas.h - test-and-test-and-set spinlock with exponential backoff.
 *
 * Lock word (32 bits): 0 = unlocked, 1 = locked. No owner, no queue, no fairness: whoever's exchange
 * lands first after the release wins (a waiter that just arrived may beat one that waited long).
 *
 *	          xchg 1 returns 0                      store-release 0
 *	  +-------------+ -------------> +-----------+ ----------------> +-------------+
 *	  | 0 UNLOCKED  |                | 1 LOCKED  |                   | 0 UNLOCKED  |
 *	  +-------------+                +-----------+                   +-------------+
 *	        waiters: back off 1, 2, 4, 8, 16 relaxes, then sched_yield(); look; xchg only on a 0
 *
 * Fast path (inline): one exchange. Slow path (out of line): between two looks at the word a waiter
 * waits a doubling number of lk_cpu_relax() and, once that has reached 16 (31 relaxes in all), calls
 * sched_yield() before every further look; it tries the exchange only when the word reads 0. So a
 * waiter leaves the line to the holder instead of pulling it back every few nanoseconds, and on a
 * machine with more threads than CPUs hands its CPU to the holder (docs/spinlocks.md: this is what
 * tbb::spin_mutex does, and what the first design did not). This is also the "TTAS baseline" of the
 * lab.
 *
 * Misuse: lk_spin_ttas_unlock() is one release store of 0, as tbb::spin_mutex's, ck_spinlock_fas's,
 * glibc's pthread_spin_unlock's and the kernel's spin_unlock's are, and it detects nothing. Unlocking
 * a free lock stores 0 over 0, but a second unlock in a row can land after another thread's
 * exchange took the lock and release THAT thread's lock: a double unlock can break mutual
 * exclusion, unreported (the hostile review measured 75-3432 violations in 3 s of back-to-back double
 * unlocks). lk_spin_ttas_unlock_checked() reads the word first and returns EPERM, writing nothing,
 * when it reads 0. Right after this thread's own unlock that read sees its own 0, so a double unlock
 * is nearly always caught, but it costs the holder a cross-core transfer whenever a waiter has
 * pulled the line away: 3-20 % of throughput at 1-8 threads with tiny critical sections
 * (docs/results/issue11-2core-ttas-store/). Before stop 20 it was the only unlock. Unlocking a lock
 * held by *another* thread is never detected (the word has no owner field).
 */
#ifndef LOCKLAB_SPIN_TTAS_H
#define LOCKLAB_SPIN_TTAS_H

#include <errno.h>
#include "locklab/atomic-internal.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lk_spin_ttas {
	LK_ATOMIC(uint32_t) locked;
};

#define LK_SPIN_TTAS_INIT { 0 }

static inline void lk_spin_ttas_init(struct lk_spin_ttas *l)
{
	/* relaxed: initialisation, published by whatever hands `l` to other threads */
	atomic_store_explicit(&l->locked, 0, memory_order_relaxed);
}

void lk_spin_ttas_lock_slow(struct lk_spin_ttas *l);

/*
 * Acquires the lock. ACQUIRE: everything the previous holder did before lk_spin_ttas_unlock()
 * happens-before everything after this returns. Never fails; spins (and, after 31 relaxes, yields
 * the CPU) until acquired. Not recursive: locking a lock the caller holds spins forever.
 */
static inline void lk_spin_ttas_lock(struct lk_spin_ttas *l)
{
	/* acquire: pairs with the release store in lk_spin_ttas_unlock(). 0 -> 1 */
	if (__builtin_expect(atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0, 1))
		return;
	lk_spin_ttas_lock_slow(l);
}

/* Returns 0 with the lock held (ACQUIRE, as lk_spin_ttas_lock) or EBUSY without it. Never spins. */
static inline int lk_spin_ttas_trylock(struct lk_spin_ttas *l)
{
	/* relaxed: a hint only; avoids taking the line exclusive when the lock is visibly held */
	if (atomic_load_explicit(&l->locked, memory_order_relaxed))
		return EBUSY;
	/* acquire: pairs with the release store in lk_spin_ttas_unlock(). 0 -> 1 */
	return atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) ? EBUSY : 0;
}

/*
 * Releases the lock. RELEASE: the critical section happens-before the next acquisition. Returns 0.
 * The caller must hold the lock: nothing is checked (see "Misuse" above).
 */
static inline int lk_spin_ttas_unlock(struct lk_spin_ttas *l)
{
	/* release: pairs with the acquire exchange in lk_spin_ttas_lock()/trylock(). 1 -> 0 */
	atomic_store_explicit(&l->locked, 0, memory_order_release);
	return 0;
}

/*
 * As lk_spin_ttas_unlock(), but returns EPERM, writing nothing, when the lock reads unlocked (see
 * "Misuse" above for what that catches and what it costs).
 */
static inline int lk_spin_ttas_unlock_checked(struct lk_spin_ttas *l)
{
	/* relaxed: only the holder may store 0; a held lock cannot change under its holder's feet */
	if (__builtin_expect(atomic_load_explicit(&l->locked, memory_order_relaxed) == 0, 0))
		return EPERM;
	/* release: pairs with the acquire exchange in lk_spin_ttas_lock()/trylock(). 1 -> 0 */
	atomic_store_explicit(&l->locked, 0, memory_order_release);
	return 0;
}

/* True while some thread holds the lock (relaxed snapshot: a hint for assertions and statistics). */
static inline bool lk_spin_ttas_is_locked(struct lk_spin_ttas *l)
{
	/* relaxed: a snapshot that orders nothing */
	return atomic_load_explicit(&l->locked, memory_order_relaxed) != 0;
}

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_SPIN_TTAS_H */
