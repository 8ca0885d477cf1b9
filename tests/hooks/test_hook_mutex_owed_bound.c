/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_owed_bound.c - lk_mutex's bound with many waiters past handoff_ns,
 * counted in events at the moment each waiter becomes owed.
 *
 * The documented bound (docs/mutex.md, src/mutex.c): once a waiter W is owed (its handoff deadline,
 * first park + (1 + queued) * handoff_ns, passed with the lock held), no unlock releases the lock,
 * nobody queues ahead of W, and every unlock hands the lock to the first owed waiter; so at most as
 * many acquisitions by other threads start before W's as there are threads queued ahead of W. And W
 * is owed at the latest (n + 1) * handoff_ns (plus the wake-up of its timer) after it first parked,
 * n = the other threads blocked on the mutex.
 *
 * NT threads on 2 CPUs each do NCALLS lock calls (a quarter of them timedlock with a short deadline,
 * so owed waiters also time out), with a short critical section and nothing outside it: nearly all
 * threads are parked at any time and, with a short handoff_ns, waiters keep becoming owed. At the
 * mutex.owed pause point (in W's thread, under the bucket lock, just after it counted itself owed)
 * the test records the number of acquisitions so far and the word's QUEUED count, exact there
 * (nothing changes it without that bucket lock). When W then acquires it checks
 *
 *	acquisitions started since  <=  QUEUED - 1 (the threads queued ahead of W)
 *	                               + 1 (the holder at that moment may count its own after we read)
 *
 * and, when it times out instead, nothing: the owed waiters behind it are still checked as above.
 * (Whether it left the word's counts exact does not show here: the next unlock clears an OWED nobody
 * holds, and the last waiter out clears the rest; tests/test_mutex_owed_timeout.c reads them.) It
 * also checks that W became owed within NT * handoff_ns of its lock call plus a generous wake-up
 * allowance (1 s: a busy machine), and that the run is not vacuous: a round is repeated, up to 20
 * times, until some waiter was owed and some owed waiter timed out (under an emulator,
 * LOCKLAB_TEST_TIMEOUT_SCALE > 1, only the first is required).
 * Policies: handoff_ns 20 us and 50 us with the default and the 10 ms spinning; handoff_ns 0
 * without spinning (every parked waiter owed at once: strict FIFO among parked waiters).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "hooklab.h"
#include "locklab/mutex.h"

#define NT 32
#define NCALLS 300
#define WAKE_ALLOWANCE_NS 1000000000ll	/* one wake-up on a busy machine, generously */
#define ROUNDS_MAX 20			/* rounds of NCALLS per thread, until somebody was owed */

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static _Atomic unsigned long acq;		/* acquisitions so far (counted by each owner) */
static _Atomic unsigned long owed_events, checked, timeouts, owed_timeouts, worst_others, worst_allowed;
static _Atomic long long worst_owed_after_ns;
static uint64_t handoff_ns;			/* of the run (read by the threads after the start) */
static pthread_barrier_t start;			/* the workers of a round start together */

static __thread int counting;			/* this thread is one of the test's */
static __thread long long owed_acq = -1;	/* acq when this lock call became owed, or -1 */
static __thread unsigned owed_queued;		/* QUEUED at that moment */
static __thread uint64_t owed_at_ns;

static void on_hook(const char *point, void *arg)
{
	if (arg != &m || !counting || !hk_is(point, "mutex.owed"))
		return;
	/* relaxed: under the bucket lock QUEUED does not change; acq is a counter */
	uint32_t v = atomic_load_explicit(&m.word, memory_order_relaxed);

	owed_acq = (long long)atomic_load(&acq);
	owed_queued = (v & LK_MUTEX_QUEUED_MASK) >> LK_MUTEX_QUEUED_SHIFT;
	owed_at_ns = lkt_now_ns(CLOCK_MONOTONIC);
	atomic_fetch_add(&owed_events, 1);
}

static void max_into(_Atomic unsigned long *x, unsigned long v)
{
	unsigned long o = atomic_load(x);

	while (o < v && !atomic_compare_exchange_weak(x, &o, v))
		;
}

static void busy_ns(uint64_t ns)
{
	uint64_t t0 = lkt_now_ns(CLOCK_MONOTONIC);

	while (lkt_now_ns(CLOCK_MONOTONIC) - t0 < ns)
		;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	unsigned seed = (unsigned)id * 2654435761u;

	counting = 1;
	/* thread creation is slow under qemu-user: without this, each thread was nearly done with
	 * its calls before the next started, few waiters parked, and 20 rounds could pass unowed */
	pthread_barrier_wait(&start);
	for (int i = 0; i < NCALLS; i++) {
		uint64_t t_call = lkt_now_ns(CLOCK_MONOTONIC);
		int r = 0;

		owed_acq = -1;
		if (id % 4 == 3) {	/* a timed waiter: 0-2 ms */
			seed = seed * 1103515245u + 12345u;
			struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, (seed >> 8) % 2000000);

			r = lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &dl);
		} else {
			lk_mutex_lock(&m);
		}
		if (owed_acq >= 0) {
			long long after = (long long)(owed_at_ns - t_call);
			long long old = atomic_load(&worst_owed_after_ns);

			while (old < after && !atomic_compare_exchange_weak(&worst_owed_after_ns, &old, after))
				;
			CHECK(after <= (long long)(NT * handoff_ns) + WAKE_ALLOWANCE_NS);
		}
		if (r == ETIMEDOUT) {
			atomic_fetch_add(&timeouts, 1);
			if (owed_acq >= 0)	/* owed, then its deadline came first: it left the queue */
				atomic_fetch_add(&owed_timeouts, 1);
			continue;
		}
		CHECK_EQ(r, 0);
		unsigned long now = atomic_fetch_add(&acq, 1);

		if (owed_acq >= 0) {
			unsigned long others = now - (unsigned long)owed_acq;

			atomic_fetch_add(&checked, 1);
			max_into(&worst_others, others);
			max_into(&worst_allowed, owed_queued);
			if (others > owed_queued)
				fprintf(stderr, "owed waiter passed by %lu acquisitions, %u threads were queued\n",
					others, owed_queued);
			CHECK(others <= owed_queued);
		}
		busy_ns(2000);
		CHECK_EQ(lk_mutex_unlock(&m), 0);
	}
	return NULL;
}

static void run(const char *what, uint64_t h, uint32_t spin_min_ns, uint32_t spin_max_ns)
{
	struct lk_mutex_policy def, p;
	pthread_t t[NT];
	int before = lkt_failures;

	lk_mutex_get_policy(&def);
	p = def;
	p.handoff_ns = h;
	p.spin_min_ns = spin_min_ns;
	p.spin_max_ns = spin_max_ns;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	handoff_ns = h;
	atomic_store(&acq, 0);
	atomic_store(&owed_events, 0);
	atomic_store(&checked, 0);
	atomic_store(&timeouts, 0);
	atomic_store(&owed_timeouts, 0);
	atomic_store(&worst_others, 0);
	atomic_store(&worst_allowed, 0);
	atomic_store(&worst_owed_after_ns, 0);
	/* rounds until waiters have become owed and one timed out (in one round: up to the scheduler) */
	int rounds = 0;

	CHECK_EQ(pthread_barrier_init(&start, NULL, NT), 0);
	do {
		for (int i = 0; i < NT; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
		for (int i = 0; i < NT; i++)
			pthread_join(t[i], NULL);
	} while (++rounds < ROUNDS_MAX &&
		 (!atomic_load(&owed_events) || (!atomic_load(&owed_timeouts) && lkt_timeout_scale() <= 1)));
	pthread_barrier_destroy(&start);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	CHECK_EQ(atomic_load(&acq) + atomic_load(&timeouts), (unsigned long)rounds * NT * NCALLS);
	CHECK(atomic_load(&owed_events) > 0);	/* the bound was exercised */
	if (lkt_timeout_scale() <= 1)
		CHECK(atomic_load(&owed_timeouts) > 0);	/* and an owed waiter's timeout */
	CHECK_EQ(atomic_load_explicit(&m.word, memory_order_relaxed), 0);
	printf("  %-26s %d round(s), %lu owed waiters (%lu acquired, %lu timed out); %lu timeouts in all; "
	       "passed by at most %lu acquisitions (%lu queued at most); owed at most %.2f ms after the "
	       "lock call\n",
	       what, rounds, atomic_load(&owed_events), atomic_load(&checked), atomic_load(&owed_timeouts),
	       atomic_load(&timeouts),
	       atomic_load(&worst_others), atomic_load(&worst_allowed), atomic_load(&worst_owed_after_ns) / 1e6);
	if (lkt_failures != before)
		fprintf(stderr, "  (in run '%s')\n", what);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	lkt_watchdog(240);
	hk_install(on_hook);
	run("handoff 20 us", 20000, 1000, 20000);
	run("handoff 50 us, spin 10 ms", 50000, 10000000, 10000000);
	run("handoff 0, no spinning", 0, 0, 0);
	return lkt_done("test_hook_mutex_owed_bound");
}
