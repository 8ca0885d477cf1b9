/* SPDX-License-Identifier: MIT */
/*
 * tests/test_qspin_double_unlock.c - a qspinlock double unlock racing the holder's unlock leaves the
 * word well formed.
 *
 * Unlocking a qspinlock one does not hold is misuse the header documents: on a free lock it returns
 * EPERM; while another thread holds it, it cannot be told apart and releases that thread's lock. What
 * it must never do is corrupt the word. The unlock used to be a load (EPERM if the locked byte was
 * clear) and then a fetch_sub of 1: a double unlock and the holder's unlock could both pass the load,
 * and the second subtraction borrowed into the pending bit and the tail, so a queueing thread then
 * followed a garbage tail (the hostile review's reproducer: SIGSEGV or a corrupted word in 6 of 9
 * runs of 20 s). The unlock is now one fetch_and of the locked bit.
 *
 * Two threads lock and unlock; a third locks, unlocks and unlocks again; for 1 s (0.3 s under a
 * sanitizer). Every thread that holds the lock checks the word: locked byte 0 or 1 (0 when the double
 * unlock released its lock), bits 9-15 clear. At the end the word is 0, and the second unlock said
 * EPERM at least once (the lock was free) - the misuse was seen. Then a deterministic case: the
 * second unlock of a lock whose word carries a pending bit and a tail leaves both as they were.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include <locklab/qspinlock.h>

#include "lktest.h"

static struct lk_qspinlock l = LK_QSPINLOCK_INIT;
static _Atomic int stop;
static _Atomic unsigned long bad_words, eperm_second, ops;

static void check_word(void)
{
	/* relaxed: a structural check of the word, nothing else is read through it */
	uint32_t v = atomic_load_explicit(&l.val, memory_order_relaxed);

	if ((v & LK_QSPIN_LOCKED_MASK) > 1 || (v & 0xfe00u))
		atomic_fetch_add_explicit(&bad_words, 1, memory_order_relaxed);	/* relaxed: a count */
}

static void *holder(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {	/* relaxed: a flag */
		lk_qspin_lock(&l);
		check_word();
		int e = lk_qspin_unlock(&l);	/* EPERM when the double unlock released our lock */

		CHECK(e == 0 || e == EPERM);
		atomic_fetch_add_explicit(&ops, 1, memory_order_relaxed);	/* relaxed: a count */
	}
	return NULL;
}

static void *doubler(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {	/* relaxed: a flag */
		lk_qspin_lock(&l);
		check_word();
		int e1 = lk_qspin_unlock(&l);
		int e2 = lk_qspin_unlock(&l);	/* misuse */

		CHECK(e1 == 0 || e1 == EPERM);
		CHECK(e2 == 0 || e2 == EPERM);
		if (e2 == EPERM)	/* relaxed: a count */
			atomic_fetch_add_explicit(&eperm_second, 1, memory_order_relaxed);
	}
	return NULL;
}

int main(void)
{
	pthread_t th[3];
	uint64_t end = lkt_now_ns(CLOCK_MONOTONIC) + (lkt_sanitized() ? 300000000 : 1000000000);

	lkt_watchdog(60);
	CHECK_EQ(pthread_create(&th[0], NULL, holder, NULL), 0);
	CHECK_EQ(pthread_create(&th[1], NULL, holder, NULL), 0);
	CHECK_EQ(pthread_create(&th[2], NULL, doubler, NULL), 0);
	while (lkt_now_ns(CLOCK_MONOTONIC) < end) {
		check_word();
		usleep(1000);
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);	/* relaxed: a flag */
	for (int i = 0; i < 3; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
	CHECK_EQ(atomic_load(&bad_words), 0);
	CHECK_EQ(atomic_load_explicit(&l.val, memory_order_relaxed), 0);
	CHECK(atomic_load(&eperm_second) > 0);
	CHECK(atomic_load(&ops) > 0);

	/* deterministic: held, pending set, a tail recorded; the second unlock changes nothing */
	uint32_t shape = LK_QSPIN_LOCKED | LK_QSPIN_PENDING | (3u << LK_QSPIN_TAIL_SLOT_SHIFT) |
			 (1u << LK_QSPIN_TAIL_IDX_SHIFT);

	atomic_store_explicit(&l.val, shape, memory_order_relaxed);	/* relaxed: one thread */
	CHECK_EQ(lk_qspin_unlock(&l), 0);
	CHECK_EQ(atomic_load_explicit(&l.val, memory_order_relaxed), shape & ~LK_QSPIN_LOCKED);
	CHECK_EQ(lk_qspin_unlock(&l), EPERM);
	CHECK_EQ(atomic_load_explicit(&l.val, memory_order_relaxed), shape & ~LK_QSPIN_LOCKED);
	return lkt_done("test_qspin_double_unlock");
}
