/* SPDX-License-Identifier: MIT */
/*
 * tests/test_spin_ttas_checked.c - lk_spin_ttas_unlock_checked() (locklab/spin_ttas.h, "Misuse"):
 * it reads the word first, so unlocking a free lock returns EPERM and writes nothing (also the
 * second of two unlocks in a row), and a holder's checked unlock under contention returns 0 every
 * time (the read sees its own 1: only the holder stores 0). The plain lk_spin_ttas_unlock_checked() returns
 * 0 on a free lock and leaves it free (tests/test_spinlocks.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include <locklab/spin_ttas.h>

#include "lktest.h"

static struct lk_spin_ttas lock = LK_SPIN_TTAS_INIT;
static long counter;		/* plain: the lock orders it (TSan checks) */
static _Atomic int bad_unlocks;
static _Atomic int gate;	/* the workers' common start (lkt_gate_pass) */

enum { THREADS = 4, ROUNDS = 20000 };

static void *worker(void *arg)
{
	(void)arg;
	lkt_gate_pass(&gate, THREADS);
	for (int i = 0; i < ROUNDS; i++) {
		lk_spin_ttas_lock(&lock);
		counter++;
		if (lk_spin_ttas_unlock_checked(&lock) != 0)
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
	CHECK_EQ(lk_spin_ttas_unlock_checked(&l), EPERM);
	CHECK(!lk_spin_ttas_is_locked(&l));
	lk_spin_ttas_lock(&l);
	CHECK_EQ(lk_spin_ttas_unlock_checked(&l), 0);
	CHECK_EQ(lk_spin_ttas_unlock_checked(&l), EPERM);	/* the second of two unlocks */
	CHECK(!lk_spin_ttas_is_locked(&l));
	CHECK_EQ(lk_spin_ttas_trylock(&l), 0);
	CHECK_EQ(lk_spin_ttas_unlock_checked(&l), 0);

	/* holders under contention: every unlock succeeds, no increment is lost */
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	CHECK_EQ(atomic_load(&bad_unlocks), 0);
	CHECK_EQ(counter, (long)THREADS * ROUNDS);
	CHECK(!lk_spin_ttas_is_locked(&lock));
	return lkt_done("test_spin_ttas_checked");
}
