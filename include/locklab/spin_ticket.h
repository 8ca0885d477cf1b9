/* SPDX-License-Identifier: MIT */
/*
 * locklab/spin_ticket.h - ticket spinlock: FIFO, two 16-bit counters.
 *
 * Layout (4 bytes, one line): `next` is the ticket the next arriving thread draws, `owner` the ticket
 * now being served. The lock is free exactly when owner == next; next - owner (mod 2^16) is the number
 * of holders plus waiters, so at most 65535 threads may contend at once.
 *
 *	arrive: t = fetch_add(next, 1)        wait: until owner == t        unlock: owner = t + 1
 *
 *	  owner=5 next=5   --A draws 5-->  owner=5 next=6 (A holds)  --B draws 6-->  owner=5 next=7
 *	  --A unlocks-->  owner=6 next=7 (B holds)  --B unlocks-->  owner=7 next=7 (free)
 *
 * Strict FIFO: a preempted waiter stalls everybody behind it (LAB_LOCK_FIFO). All waiters spin on the
 * same `owner` word, so every release invalidates every waiter's copy (O(N) traffic per handover;
 * MCS and the qspinlock fix that).
 *
 * Misuse: unlock when owner == next (nobody holds it) returns EPERM. Unlock by a non-holder while
 * someone holds it cannot be detected (no owner identity).
 */
#ifndef LOCKLAB_SPIN_TICKET_H
#define LOCKLAB_SPIN_TICKET_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "locklab/test_hooks.h"

struct lk_spin_ticket {
	_Atomic uint16_t owner;	/* ticket being served; written only by the holder */
	_Atomic uint16_t next;	/* next ticket to hand out */
};

#define LK_SPIN_TICKET_INIT { 0, 0 }

static inline void lk_spin_ticket_init(struct lk_spin_ticket *l)
{
	/* relaxed: initialisation, published by whatever hands `l` to other threads */
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
	atomic_store_explicit(&l->next, 0, memory_order_relaxed);
}

void lk_spin_ticket_wait(struct lk_spin_ticket *l, uint16_t ticket);

/* Acquires the lock in arrival order. ACQUIRE (pairs with the previous holder's unlock). */
static inline void lk_spin_ticket_lock(struct lk_spin_ticket *l)
{
	/* relaxed: drawing a ticket orders nothing; the acquire is the load of `owner` below */
	uint16_t t = atomic_fetch_add_explicit(&l->next, 1, memory_order_relaxed);

	/* acquire: pairs with the release store of owner = t in lk_spin_ticket_unlock() */
	if (__builtin_expect(atomic_load_explicit(&l->owner, memory_order_acquire) == t, 1))
		return;
	lk_spin_ticket_wait(l, t);
}

/* Returns 0 with the lock held (ACQUIRE) or EBUSY when anybody holds or waits for it. Never spins. */
static inline int lk_spin_ticket_trylock(struct lk_spin_ticket *l)
{
	/* acquire: pairs with the release store in lk_spin_ticket_unlock() (owner == our ticket) */
	uint16_t o = atomic_load_explicit(&l->owner, memory_order_acquire);
	uint16_t n = o;

	LK_TEST_HOOK("spin_ticket.trylock", l);	/* test builds only: between the read and the CAS */
	/*
	 * next: o -> o+1 only if nobody holds or waits (next == owner). owner cannot move while
	 * next == owner (there is no holder to advance it), so success means our ticket o is served.
	 * relaxed: the acquire load of owner above already ordered us after the last unlock.
	 */
	if (atomic_compare_exchange_strong_explicit(&l->next, &n, (uint16_t)(o + 1), memory_order_relaxed,
						    memory_order_relaxed))
		return 0;
	return EBUSY;
}

/* Passes the lock to the next ticket. RELEASE. Returns 0, or EPERM if the lock was free. */
static inline int lk_spin_ticket_unlock(struct lk_spin_ticket *l)
{
	/* relaxed: owner is written only by the holder (us) */
	uint16_t o = atomic_load_explicit(&l->owner, memory_order_relaxed);

	/* relaxed: next only grows while held; equality with owner means nobody holds the lock */
	if (__builtin_expect(atomic_load_explicit(&l->next, memory_order_relaxed) == o, 0))
		return EPERM;
	/* release: pairs with the acquire load of owner in lock/trylock/wait. owner: t -> t+1 */
	atomic_store_explicit(&l->owner, (uint16_t)(o + 1), memory_order_release);
	return 0;
}

static inline bool lk_spin_ticket_is_locked(struct lk_spin_ticket *l)
{
	/* relaxed: a snapshot that orders nothing */
	return atomic_load_explicit(&l->owner, memory_order_relaxed) !=
	       atomic_load_explicit(&l->next, memory_order_relaxed);
}

#endif /* LOCKLAB_SPIN_TICKET_H */
