/* SPDX-License-Identifier: MIT */
/*
 * tests/test_spin_ttas_debug.c - spin_ttas built with LK_SPIN_TTAS_DEBUG (locklab/spin_ttas.h,
 * "Misuse"): the unlock reads the word first, so unlocking a free lock returns EPERM and writes
 * nothing, and a holder's unlock under contention still returns 0 every time (the read sees its own
 * 1: only the holder stores 0). Without the macro the same unlock returns 0 and leaves the lock free
 * (tests/test_spinlocks.c).
 */
#define LK_SPIN_TTAS_DEBUG 1

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include <locklab/spin_ttas.h>

#include "lktest.h"

static struct lk_spin_ttas lock = LK_SPIN_TTAS_INIT;
static long counter;		/* plain: the lock orders it (TSan checks) */
static _Atomic int bad_unlocks;

enum { THREADS = 4, ROUNDS = 20000 };

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		lk_spin_ttas_lock(&lock);
		counter++;
		if (lk_spin_ttas_unlock(&lock) != 0)
			atomic_fetch_add_explicit(&bad_unlocks, 1, memory_order_relaxed);	/* relaxed: a count */
	}
	return NULL;
}

int main(void)
{
	struct lk_spin_ttas l = LK_SPIN_TTAS_INIT;
	pthread_t t[THREADS];

	lkt_watchdog(lkt_sanitized() ? 150 : 60);

	/* a free lock: EPERM, still free, and it works afterwards */
	CHECK_EQ(lk_spin_ttas_unlock(&l), EPERM);
	CHECK(!lk_spin_ttas_is_locked(&l));
	lk_spin_ttas_lock(&l);
	CHECK_EQ(lk_spin_ttas_unlock(&l), 0);
	CHECK_EQ(lk_spin_ttas_unlock(&l), EPERM);	/* the second of two unlocks */
	CHECK(!lk_spin_ttas_is_locked(&l));
	CHECK_EQ(lk_spin_ttas_trylock(&l), 0);
	CHECK_EQ(lk_spin_ttas_unlock(&l), 0);

	/* holders under contention: every unlock succeeds, no increment is lost */
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	CHECK_EQ(atomic_load(&bad_unlocks), 0);
	CHECK_EQ(counter, (long)THREADS * ROUNDS);
	CHECK(!lk_spin_ttas_is_locked(&lock));
	return lkt_done("test_spin_ttas_debug");
}
