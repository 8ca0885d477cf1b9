/* SPDX-License-Identifier: MIT */
/*
 * src/spin_ticket.c - the ticket lock's wait loop (layout and fast path: include/locklab/spin_ticket.h).
 *
 * A waiter holding ticket t spins reading the word until its `owner` half equals t. Proportional
 * back-off: a waiter that is d = t - owner places from the head relaxes about d times between reads,
 * so waiters far back in the queue do not pull the line on every handover (they cannot be served
 * before d releases have happened anyway). The head (d == 1) reads in a tight relax loop.
 */
#include <stdint.h>

#include "locklab/relax.h"
#include "locklab/spin_ticket.h"

__attribute__((noinline)) void lk_spin_ticket_wait(struct lk_spin_ticket *l, uint16_t t)
{
	unsigned spins = 0;

	for (;;) {
		/* acquire: pairs with the release RMW that made owner == t in lk_spin_ticket_unlock() */
		uint16_t o = lk_spin_ticket_owner_of(atomic_load_explicit(&l->val, memory_order_acquire));
		uint16_t d = (uint16_t)(t - o);

		if (d == 0)
			return;
		for (unsigned n = d > 64 ? 64 : d; n > 1; n--)
			lk_cpu_relax();
		lk_spin_wait(&spins);
	}
}
