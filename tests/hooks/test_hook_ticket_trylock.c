/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_ticket_trylock.c - issue 12 defect 1: lk_spin_ticket_trylock must never
 * return 0 while another thread holds the lock.
 *
 * The window: trylock reads the lock word, then takes a ticket with a CAS. If 65536 tickets are
 * drawn in between and the latest holder still holds the lock, the 16-bit `next` is back at the
 * value trylock saw; a CAS of `next` alone then succeeds and two threads own the lock. The pause
 * point spin_ticket.trylock sits in that window: the hook draws the tickets (each lock/unlock is
 * immediate: nobody else contends) and keeps the last one, deterministically. The fix CASes owner
 * and next together (the kernel's head_tail), so the CAS sees that owner moved.
 *
 * Second case: the hook draws 65536 tickets and releases them all: the lock is free again with the
 * same word, so trylock may (and does) succeed - and the lock must then be in a consistent state.
 */
#include <errno.h>

#include "hooklab.h"
#include "locklab/spin_ticket.h"

static struct lk_spin_ticket lock = LK_SPIN_TICKET_INIT;
static int mode;		/* 0: do nothing, 1: draw 65536 keeping the last, 2: draw 65536 releasing all */
static unsigned long drawn;

static void in_window(const char *point, void *arg)
{
	int m = mode;

	if (!hk_is(point, "spin_ticket.trylock") || arg != (void *)&lock || !m)
		return;
	mode = 0;		/* the hook's own tickets do not re-enter (lock() has no hook), but be safe */
	for (unsigned i = 0; i < 65535; i++) {
		lk_spin_ticket_lock(&lock);
		CHECK_EQ(lk_spin_ticket_unlock(&lock), 0);
		drawn++;
	}
	lk_spin_ticket_lock(&lock);	/* ticket 65536 */
	drawn++;
	if (m == 2)
		CHECK_EQ(lk_spin_ticket_unlock(&lock), 0);
}

int main(void)
{
	lkt_watchdog(60);
	hk_install(in_window);

	/* held by "the latest holder" when the trylocker's CAS runs: must fail */
	mode = 1;
	int r = lk_spin_ticket_trylock(&lock);
	CHECK_EQ(drawn, 65536);
	if (r == 0)
		fprintf(stderr, "trylock returned 0 while the holder of ticket 65535 holds the lock: two owners\n");
	CHECK_EQ(r, EBUSY);
	CHECK(lk_spin_ticket_is_locked(&lock));
	CHECK_EQ(lk_spin_ticket_unlock(&lock), 0);	/* the hook's holder releases */
	CHECK(!lk_spin_ticket_is_locked(&lock));
	CHECK_EQ(lk_spin_ticket_unlock(&lock), EPERM);

	/* all 65536 released: the lock is free, trylock may take it, and the state stays consistent */
	drawn = 0;
	mode = 2;
	r = lk_spin_ticket_trylock(&lock);
	CHECK_EQ(drawn, 65536);
	CHECK(r == 0 || r == EBUSY);
	if (r == 0) {
		CHECK(lk_spin_ticket_is_locked(&lock));
		CHECK_EQ(lk_spin_ticket_trylock(&lock), EBUSY);
		CHECK_EQ(lk_spin_ticket_unlock(&lock), 0);
	}
	CHECK(!lk_spin_ticket_is_locked(&lock));
	CHECK_EQ(lk_spin_ticket_trylock(&lock), 0);
	CHECK_EQ(lk_spin_ticket_unlock(&lock), 0);
	CHECK_EQ(lk_spin_ticket_unlock(&lock), EPERM);
	return lkt_done("test_hook_ticket_trylock");
}
