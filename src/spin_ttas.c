/* SPDX-License-Identifier: MIT */
/*
 * src/spin_ttas.c - the TTAS spinlock's slow path (the layout and fast path are in
 * include/locklab/spin_ttas.h).
 *
 * Slow path, one iteration:
 *
 *	read word (relaxed, line stays Shared) --1--> lk_spin_wait(), read again
 *	    |0
 *	    v
 *	xchg 1 (acquire) --old 0--> owned, return
 *	    |old 1: lost the race to another waiter
 *	    v
 *	back off: uniform random in [0, window) relaxes, window *= 2 (capped at BACKOFF_MAX)
 *
 * Invariants: the word is 1 exactly while a thread is between a successful xchg and its unlock
 * store; a waiter writes the line only when it has just seen 0 (test-and-TEST-and-set), so a held
 * lock is read-shared by all waiters instead of bouncing between them.
 *
 * The randomisation breaks the lock-step retries of waiters that saw the same release; the cap keeps a
 * waiter from sleeping through many releases once contention drops.
 */
#include <stdint.h>

#include "locklab/relax.h"
#include "locklab/spin_ttas.h"

#define BACKOFF_MIN	4u
#define BACKOFF_MAX	1024u

/* xorshift32 seeded from the stack address: per-thread enough, and needs no shared state */
static inline uint32_t backoff_rand(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*s = x;
	return x;
}

__attribute__((noinline, cold)) void lk_spin_ttas_lock_slow(struct lk_spin_ttas *l)
{
	uint32_t window = BACKOFF_MIN;
	uint32_t seed = (uint32_t)(uintptr_t)&window | 1u;
	unsigned spins = 0;

	for (;;) {
		/* relaxed: only a hint for when to try; the xchg below carries the acquire */
		while (atomic_load_explicit(&l->locked, memory_order_relaxed))
			lk_spin_wait(&spins);
		/* acquire: pairs with the release store in lk_spin_ttas_unlock(). 0 -> 1 */
		if (atomic_exchange_explicit(&l->locked, 1, memory_order_acquire) == 0)
			return;
		for (uint32_t n = backoff_rand(&seed) % window; n; n--)
			lk_cpu_relax();
		if (window < BACKOFF_MAX)
			window <<= 1;
	}
}
