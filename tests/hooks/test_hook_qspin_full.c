/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_qspin_full.c - a thread whose qspinlock slot claim found none claims again
 * once a slot comes back.
 *
 * Until stop 36 a thread that once found no free node slot (16383 live threads holding one) never
 * looked again: it spun on trylock, unfair, for the rest of its life, while threads that came later
 * got the slots other threads gave back (the hostile review's reproducer needed 16383 live threads
 * and 35 s). Here the qspin.claim pause point makes X's claim find none, so no thread has to hold a
 * slot for it:
 *   1. X queues (the main thread holds A with the pending bit set: 0,1,1): its claim finds none and
 *      it falls back (qspin.fallback);
 *   2. X queues again, with nothing given back: no new claim (a thread without a slot does not scan
 *      16383 slots at every contended lock), fallback again;
 *   3. Y queues once and exits: its slot comes back;
 *   4. X queues again, the pause point no longer interfering: it claims and queues on a node
 *      (qspin.queued, its own tail in the word). Without the fix: a third fallback.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "hooklab.h"
#include "locklab/qspinlock.h"

static struct lk_qspinlock A = LK_QSPINLOCK_INIT, B = LK_QSPINLOCK_INIT;
static __thread char who;			/* 'X', 'Y', 0 for main */
static _Atomic int force_none = 1;		/* X's claims find no slot */
static _Atomic int x_claims, x_fallbacks, x_queued;
static _Atomic uint32_t x_tail;
static _Atomic int x_round, x_done;		/* main -> X: queue once more; X -> main: done */

static void on_hook(const char *point, void *arg)
{
	if (who != 'X')
		return;
	/* release (all): the main thread polls with acquire */
	if (hk_is(point, "qspin.claim")) {
		atomic_fetch_add_explicit(&x_claims, 1, memory_order_release);
		if (atomic_load_explicit(&force_none, memory_order_acquire))	/* acquire: main's store */
			*(int *)arg = -1;
	} else if (hk_is(point, "qspin.fallback")) {
		atomic_fetch_add_explicit(&x_fallbacks, 1, memory_order_release);
	} else if (hk_is(point, "qspin.queued")) {
		atomic_store_explicit(&x_tail, (uint32_t)(uintptr_t)arg, memory_order_release);
		atomic_fetch_add_explicit(&x_queued, 1, memory_order_release);
	}
}

static void *x_main(void *arg)
{
	(void)arg;
	who = 'X';
	for (int r = 1; r <= 3; r++) {
		/* acquire: pairs with main's release of the round */
		while (atomic_load_explicit(&x_round, memory_order_acquire) < r)
			sched_yield();
		lk_qspin_lock(&A);
		CHECK_EQ(lk_qspin_unlock(&A), 0);
		atomic_store_explicit(&x_done, r, memory_order_release);	/* release: handshake */
	}
	return NULL;
}

static void *y_main(void *arg)
{
	(void)arg;
	who = 'Y';
	lk_qspin_lock(&B);		/* queues: claims a slot; gives it back when it exits */
	CHECK_EQ(lk_qspin_unlock(&B), 0);
	return NULL;
}

/* One round of X against A held with pending: wait until X fell back or queued, then let it in. */
static void x_round_run(int r, int fallbacks_before, int queued_before)
{
	hk_qspin_hold_pending(&A);
	atomic_store_explicit(&x_round, r, memory_order_release);	/* release: handshake */
	while (atomic_load_explicit(&x_fallbacks, memory_order_acquire) == fallbacks_before &&
	       atomic_load_explicit(&x_queued, memory_order_acquire) == queued_before)
		sched_yield();
	hk_qspin_release(&A);
	while (atomic_load_explicit(&x_done, memory_order_acquire) < r)	/* acquire: handshake */
		sched_yield();
}

int main(void)
{
	pthread_t x, y;

	lkt_watchdog(60);
	hk_install(on_hook);
	CHECK_EQ(pthread_create(&x, NULL, x_main, NULL), 0);

	/* 1. the claim finds none: fallback */
	x_round_run(1, 0, 0);
	CHECK_EQ(atomic_load(&x_claims), 1);
	CHECK_EQ(atomic_load(&x_fallbacks), 1);
	CHECK_EQ(atomic_load(&x_queued), 0);

	/* 2. nothing given back since: no new claim, fallback */
	x_round_run(2, 1, 0);
	CHECK_EQ(atomic_load(&x_claims), 1);
	CHECK_EQ(atomic_load(&x_fallbacks), 2);

	/* 3. Y takes a slot and gives it back at exit */
	hk_qspin_hold_pending(&B);
	CHECK_EQ(pthread_create(&y, NULL, y_main, NULL), 0);
	while (!(hk_qval(&B) & LK_QSPIN_TAIL_MASK))	/* Y queued: it holds a slot */
		sched_yield();
	hk_qspin_release(&B);
	CHECK_EQ(pthread_join(y, NULL), 0);	/* its key destructor ran: the slot is free */

	/* 4. X claims again and queues on a node */
	atomic_store_explicit(&force_none, 0, memory_order_release);	/* release: read by X's hook */
	x_round_run(3, 2, 0);
	if (atomic_load(&x_queued) == 0)
		fprintf(stderr, "X fell back again after a slot came back: a thread that once found no slot "
			"never claims again\n");
	CHECK_EQ(atomic_load(&x_claims), 2);
	CHECK_EQ(atomic_load(&x_queued), 1);
	CHECK_EQ(atomic_load(&x_fallbacks), 2);
	CHECK(atomic_load(&x_tail) != 0);

	CHECK_EQ(pthread_join(x, NULL), 0);
	CHECK_EQ(hk_qval(&A), 0);
	CHECK_EQ(hk_qval(&B), 0);
	CHECK_EQ(atomic_load_explicit(&hk_unknown, memory_order_relaxed), 0);
	return lkt_done("test_hook_qspin_full");
}
