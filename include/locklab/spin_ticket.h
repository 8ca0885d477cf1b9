/* SPDX-License-Identifier: MIT */
/*
 * locklab/spin_ticket.h - ticket spinlock: FIFO, two 16-bit counters in one 32-bit word.
 *
 * Layout (4 bytes, one word, the kernel's head_tail): bits 0-15 `owner`, the ticket now being
 * served; bits 16-31 `next`, the ticket the next arriving thread draws. The lock is free exactly when
 * owner == next; next - owner (mod 2^16) is the number of holders plus waiters, so at most 65535
 * threads may contend at once.
 *
 *	arrive: old = fetch_add(word, 1 << 16); t = next(old)     acquired at once if owner(old) == t
 *	wait:   until owner == t                                   unlock: owner = t + 1 (one RMW)
 *	trylock: CAS word (o, o) -> (o, o + 1): only when free, and only if NEITHER half moved since read
 *
 *	  owner=5 next=5   --A draws 5-->  owner=5 next=6 (A holds)  --B draws 6-->  owner=5 next=7
 *	  --A unlocks-->  owner=6 next=7 (B holds)  --B unlocks-->  owner=7 next=7 (free)
 *
 * Why one word: trylock reads both halves, then takes a ticket. A CAS of `next` alone would succeed
 * after 65536 tickets were drawn in between (next wraps back to the value read) even though the
 * latest holder still holds the lock: two owners (issue 12, tests/hooks/test_hook_ticket_trylock.c).
 * Comparing the whole word catches it, because `owner` has moved. Unlock adds 1 to `owner` with an
 * RMW on the word; when owner is 0xffff it adds 1 - 2^16 instead, so the carry out of the owner half
 * is taken back from `next` (arrivals' fetch_adds commute with it; next's own carry leaves the word).
 *
 * Strict FIFO: a preempted waiter stalls everybody behind it (LAB_LOCK_FIFO). All waiters spin on the
 * same word, so every release invalidates every waiter's copy (O(N) traffic per handover; MCS and the
 * qspinlock fix that).
 *
 * Misuse: unlock when owner == next (nobody holds it) returns EPERM. Unlock by a non-holder while
 * someone holds it cannot be detected (no owner identity), and it can do worse than release the
 * holder's lock: a double unlock racing the holder's can move owner past a ticket whose waiter has
 * not looked yet, and every later lock() then waits for a turn that has gone by while the word
 * reads free (docs/spinlocks.md, "Misuse detection").
 */
#ifndef LOCKLAB_SPIN_TICKET_H
#define LOCKLAB_SPIN_TICKET_H

#include <errno.h>
#include "locklab/atomic-internal.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef LOCKLAB_TEST_HOOKS	/* the hooks build only (src/test_hooks.h, tests/hooks/README.md) */
void lk_test_hook(const char *point, void *arg);
#define LK_SPIN_TICKET_HOOK(l) lk_test_hook("spin_ticket.trylock", (void *)(l))
#else
#define LK_SPIN_TICKET_HOOK(l) ((void)0)
#endif

struct lk_spin_ticket {
	LK_ATOMIC(uint32_t) val;	/* owner (bits 0-15, written only by the holder) | next (bits 16-31) */
};

#define LK_SPIN_TICKET_INIT { 0 }
#define LK_SPIN_TICKET_NEXT_ONE	(1u << 16)	/* one ticket drawn */

static inline uint16_t lk_spin_ticket_owner_of(uint32_t v)
{
	return (uint16_t)v;
}

static inline uint16_t lk_spin_ticket_next_of(uint32_t v)
{
	return (uint16_t)(v >> 16);
}

static inline void lk_spin_ticket_init(struct lk_spin_ticket *l)
{
	/* relaxed: initialisation, published by whatever hands `l` to other threads */
	atomic_store_explicit(&l->val, 0, memory_order_relaxed);
}

void lk_spin_ticket_wait(struct lk_spin_ticket *l, uint16_t ticket);

/* Acquires the lock in arrival order. ACQUIRE (pairs with the previous holder's unlock). */
static inline void lk_spin_ticket_lock(struct lk_spin_ticket *l)
{
	/*
	 * Draw a ticket; the old word also says who is served. acquire: when owner == our ticket we
	 * own the lock from here on; pairs with the release RMW in lk_spin_ticket_unlock().
	 */
	uint32_t old = atomic_fetch_add_explicit(&l->val, LK_SPIN_TICKET_NEXT_ONE, memory_order_acquire);
	uint16_t t = lk_spin_ticket_next_of(old);

	if (__builtin_expect(lk_spin_ticket_owner_of(old) == t, 1))
		return;
	lk_spin_ticket_wait(l, t);
}

/* Returns 0 with the lock held (ACQUIRE) or EBUSY when anybody holds or waits for it. Never spins. */
static inline int lk_spin_ticket_trylock(struct lk_spin_ticket *l)
{
	/* relaxed: only a guess; the CAS below validates both halves and carries the acquire */
	uint32_t v = atomic_load_explicit(&l->val, memory_order_relaxed);

	LK_SPIN_TICKET_HOOK(l);	/* test builds only: between the read and the CAS */
	if (lk_spin_ticket_owner_of(v) != lk_spin_ticket_next_of(v))
		return EBUSY;
	/*
	 * (o, o) -> (o, o + 1): succeeds only if neither owner nor next moved since the read, so the
	 * ticket we take (o) is the one being served. acquire: pairs with the release RMW of the
	 * unlock that made owner == o.
	 */
	if (atomic_compare_exchange_strong_explicit(&l->val, &v, v + LK_SPIN_TICKET_NEXT_ONE,
						    memory_order_acquire, memory_order_relaxed))
		return 0;
	return EBUSY;
}

/* Passes the lock to the next ticket. RELEASE. Returns 0, or EPERM if the lock was free. */
static inline int lk_spin_ticket_unlock(struct lk_spin_ticket *l)
{
	/* relaxed: owner is written only by the holder (us); next only grows while the lock is held */
	uint32_t v = atomic_load_explicit(&l->val, memory_order_relaxed);
	uint16_t o = lk_spin_ticket_owner_of(v);

	if (__builtin_expect(lk_spin_ticket_next_of(v) == o, 0))
		return EPERM;
	/*
	 * owner: o -> o+1 without touching next: at o == 0xffff the +1 carries into next, so add
	 * 1 - 2^16 there (the carry is taken back). release: pairs with the acquire of the next
	 * owner's fetch_add, CAS or wait-loop load.
	 */
	atomic_fetch_add_explicit(&l->val, o == 0xffff ? 1u - LK_SPIN_TICKET_NEXT_ONE : 1u,
				  memory_order_release);
	return 0;
}

static inline bool lk_spin_ticket_is_locked(struct lk_spin_ticket *l)
{
	/* relaxed: a snapshot that orders nothing (both halves from one load) */
	uint32_t v = atomic_load_explicit(&l->val, memory_order_relaxed);

	return lk_spin_ticket_owner_of(v) != lk_spin_ticket_next_of(v);
}

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_SPIN_TICKET_H */
