/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_wake_more.c - LKM_WAKE_MORE (src/mutex.c) under stress, in every test build
 * (normal, TSan, ASan, UBSan): a copy of src/mutex.c compiled into this file with LKM_WAKE_MORE 2
 * and LKM_WAKE_MORE_Q 1 (lab/adapters/lk_mutex_renamed.h). A helper thread keeps the slot's record
 * at "woken waiters take the lock" (wm_ok = 256), so every unlock that finds a waiter queued beside
 * a spinner or a woken waiter goes out of line and may wake one more. 6 threads on one mutex mix
 * lock, timedlock with deadlines of 0-200 us and trylock, unlocking with lkm_wm_unlock(), for 0.5 s,
 * and again (up to 20 times) until at least one unlock woke an extra waiter (counted at the
 * test-only LKM_WAKE_MORE_WOKE point): beside another test, 7 of 17 half-second runs woke none, and
 * 6 of them parked nobody at all - runs that tested nothing of LKM_WAKE_MORE. Not on one CPU (make
 * test-pinned), where no unlock woke one in 20 runs of 0.5 s: one run there, nothing required:
 *
 *  - mutual exclusion: a counter incremented in two halves inside the critical section;
 *  - no lost wake-up: every thread finishes (the watchdog fails the test otherwise);
 *  - timedlock returns 0 or ETIMEDOUT only;
 *  - the end state: the word is 0 (nothing parked, spinning, woken or owed), and wm_n, the count of
 *    extra woken waiters in flight, is 0 (every claim was given back).
 *
 * The deterministic cases (the record, the cap, W left to its owner) are in
 * tests/hooks/test_hook_mutex_wake_more.c.
 */
#define _GNU_SOURCE	/* sched_getaffinity */
#define LKM_VARIANT wmstress
#define LKM_WAKE_MORE 2
#define LKM_WAKE_MORE_Q 1
/* relaxed: a count, read by main after it joined the unlockers */
static _Atomic unsigned long extra_wakes;
#define LKM_WAKE_MORE_WOKE() atomic_fetch_add_explicit(&extra_wakes, 1, memory_order_relaxed)
#include "../lab/adapters/lk_mutex_renamed.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "lktest.h"

enum { THREADS = 6 };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static long half_a, half_b;	/* guarded by m */
static _Atomic int stop;
static _Atomic unsigned bad_rc, seen_in_flight;

static void *worker(void *arg)
{
	long *mine = arg;
	unsigned seed = (unsigned)(uintptr_t)arg * 2654435761u;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		seed = seed * 1103515245u + 12345u;
		unsigned how = (seed >> 16) % 8;
		int rc = 0;

		if (how == 0) {
			rc = lk_mutex_trylock(&m);
			if (rc == EBUSY)
				continue;
		} else if (how <= 2) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += (long)((seed >> 8) % 200000);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			rc = lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &ts);
			if (rc == ETIMEDOUT)
				continue;
		} else {
			lk_mutex_lock(&m);
		}
		if (rc != 0) {
			atomic_fetch_add_explicit(&bad_rc, 1, memory_order_relaxed);	/* relaxed: a count */
			continue;
		}
		long a = half_a;

		for (volatile int i = 0; i < (int)(seed % 64); i++)
			;
		half_a = a + 1;
		half_b++;
		if (lkm_wm_unlock(&m) != 0)
			atomic_fetch_add_explicit(&bad_rc, 1, memory_order_relaxed);	/* relaxed: a count */
		(*mine)++;
		if ((seed & 15) == 0)
			sched_yield();	/* let the queue build up */
	}
	return NULL;
}

static void *record_keeper(void *arg)
{
	struct slot *s = slot_of(&m);

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* relaxed: the slot's heuristics, test-only */
		atomic_store_explicit(&s->wm_ok, 256, memory_order_relaxed);
		if (atomic_load_explicit(&s->wm_n, memory_order_relaxed))
			atomic_fetch_add_explicit(&seen_in_flight, 1, memory_order_relaxed);
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS], keeper;
	long ops[THREADS] = { 0 };
	struct timespec half = { 0, 500000000 };
	long total = 0;
	int run, runs = 20;
	cpu_set_t cpus;

	lkt_watchdog(120);
	CHECK_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	if (CPU_COUNT(&cpus) < 2)
		runs = 1;	/* one CPU: see the top */
	for (run = 0; run < runs && !atomic_load(&extra_wakes); run++) {
		atomic_store(&stop, 0);
		CHECK_EQ(pthread_create(&keeper, NULL, record_keeper, NULL), 0);
		for (int i = 0; i < THREADS; i++)
			CHECK_EQ(pthread_create(&t[i], NULL, worker, &ops[i]), 0);
		nanosleep(&half, NULL);
		atomic_store(&stop, 1);
		for (int i = 0; i < THREADS; i++)
			CHECK_EQ(pthread_join(t[i], NULL), 0);
		CHECK_EQ(pthread_join(keeper, NULL), 0);
	}
	for (int i = 0; i < THREADS; i++)
		total += ops[i];
	if (!atomic_load(&extra_wakes) && runs > 1)
		fprintf(stderr, "no unlock woke an extra waiter in %d runs of 0.5 s\n", run);
	CHECK(atomic_load(&extra_wakes) > 0 || runs == 1);
	CHECK_EQ(atomic_load(&bad_rc), 0u);
	CHECK_EQ(half_a, total);
	CHECK_EQ(half_b, total);
	CHECK(total > 0);
	CHECK_EQ(atomic_load_explicit(&m.word, memory_order_relaxed), 0u);
	CHECK_EQ(atomic_load_explicit(&slot_of(&m)->wm_n, memory_order_relaxed), 0u);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	printf("test_mutex_wake_more: %ld acquisitions in %d run(s), %lu extra waiters woken; the keeper saw "
	       "extra woken waiters in flight %u times\n", total, run, atomic_load(&extra_wakes),
	       atomic_load(&seen_in_flight));
	return lkt_done("test_mutex_wake_more");
}
