/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_confirm.c - LKM_SPIN_CONFIRM_NS / LKM_SPIN_HOT_NS (src/mutex.c): a
 * spinner whose look finds the lock free looks once more before it takes it; if the owner re-locked
 * in between, the spinner leaves it alone and from then on looks only every LKM_SPIN_HOT_NS.
 *
 * Deterministic, with the mutex.confirm pause point (the spinner saw the lock free, waited, and is
 * about to look again) and mutex.spin (about to look, each round):
 *   A. Hot owner. main holds m; thread S spins on it (spin budget 10 ms). main unlocks; S reaches
 *      mutex.confirm and waits there until main has locked m again. S's confirming look then finds
 *      m held: S must not take it, and its next looks must come at least LKM_SPIN_HOT_NS / 2 apart
 *      (a lower bound: the spinner relaxes at least that long between them, whatever else delays
 *      it; without the hot interval they come every 16 relaxes, ~0.2 us here). main then unlocks
 *      for good: S confirms once more and takes m. So S passes mutex.confirm exactly twice.
 *   B. Free lock. main holds m, S spins, main unlocks and leaves m alone: S takes it after exactly
 *      one confirmation (with the confirmation compiled out: none).
 * handoff_ns is 10 s, so nobody becomes owed; spin_max_ns 10 ms, so S keeps spinning throughout.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "hooklab.h"
#include "locklab/mutex.h"

#ifndef LKM_SPIN_HOT_NS
#define LKM_SPIN_HOT_NS 800	/* src/mutex.c's default */
#endif

enum { GAPS = 6 };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static __thread int is_s;
static _Atomic int hot_round;		/* A: hold S at its first confirmation until main re-locked */
static _Atomic int s_confirms;		/* S's passes through mutex.confirm */
static _Atomic int s_at_confirm;	/* S waits at its first confirmation */
static _Atomic int relocked;		/* main locked m again: S may look */
static _Atomic int s_spins;		/* S's passes through mutex.spin */
static _Atomic int s_acquired;
static _Atomic uint64_t after_hot[GAPS + 1];	/* S's mutex.spin times after the hot confirmation */
static _Atomic int n_after_hot;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_hook(const char *point, void *arg)
{
	if (arg != &m || !is_s)
		return;
	if (hk_is(point, "mutex.confirm")) {
		if (atomic_fetch_add(&s_confirms, 1) == 0 && atomic_load(&hot_round)) {
			atomic_store(&s_at_confirm, 1);
			while (!atomic_load(&relocked))
				sched_yield();
		}
	} else if (hk_is(point, "mutex.spin")) {
		atomic_fetch_add(&s_spins, 1);
		if (atomic_load(&relocked) && atomic_load(&s_confirms) == 1) {
			int n = atomic_load(&n_after_hot);

			if (n <= GAPS) {
				atomic_store(&after_hot[n], mono_ns());
				atomic_store(&n_after_hot, n + 1);
			}
		}
	}
}

static void *spinner(void *arg)
{
	(void)arg;
	is_s = 1;
	lk_mutex_lock(&m);
	atomic_store(&s_acquired, 1);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

/* waits until *flag >= want, at most 10 s (a missing pause point fails the test instead of hanging it) */
static int wait_for(_Atomic int *flag, int want)
{
	uint64_t t0 = mono_ns();

	while (atomic_load(flag) < want) {
		if (mono_ns() - t0 > 10000000000ull)
			return 0;
		sched_yield();
	}
	return 1;
}

static void reset(int hot)
{
	CHECK_EQ(lk_mutex_init(&m), 0);
	atomic_store(&hot_round, hot);
	atomic_store(&s_confirms, 0);
	atomic_store(&s_at_confirm, 0);
	atomic_store(&relocked, 0);
	atomic_store(&s_spins, 0);
	atomic_store(&s_acquired, 0);
	atomic_store(&n_after_hot, 0);
}

/* main holds m and starts S; returns once S spins on it (S owns SPINNING and is looking) */
static pthread_t start_spinner(void)
{
	pthread_t t;

	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&t, NULL, spinner, NULL), 0);
	while (atomic_load(&s_spins) == 0)
		sched_yield();
	return t;
}

static void hot_owner(void)
{
	reset(1);
	pthread_t t = start_spinner();

	CHECK_EQ(lk_mutex_unlock(&m), 0);	/* S's next look finds m free */
	if (!wait_for(&s_at_confirm, 1)) {
		fprintf(stderr, "the spinner found m free and never reached mutex.confirm\n");
		CHECK(0);
		atomic_store(&relocked, 1);
		CHECK_EQ(pthread_join(t, NULL), 0);
		return;
	}
	lk_mutex_lock(&m);			/* the owner re-locks before S looks again */
	atomic_store(&relocked, 1);
	CHECK(wait_for(&n_after_hot, GAPS + 1));	/* S looks, every LKM_SPIN_HOT_NS or more */
	CHECK_EQ(atomic_load(&s_acquired), 0);	/* S left the re-locked m alone */
	CHECK_EQ(atomic_load(&s_confirms), 1);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(atomic_load(&s_acquired), 1);
	CHECK_EQ(atomic_load(&s_confirms), 2);	/* the hot one, and the one before taking m */

	uint64_t min_gap = UINT64_MAX;

	for (int i = 0; i < GAPS; i++) {
		uint64_t g = atomic_load(&after_hot[i + 1]) - atomic_load(&after_hot[i]);

		if (g < min_gap)
			min_gap = g;
	}
	if (min_gap < LKM_SPIN_HOT_NS / 2)
		fprintf(stderr, "after a hot owner the spinner looked again after %lu ns (hot interval %d ns)\n",
			(unsigned long)min_gap, LKM_SPIN_HOT_NS);
	CHECK(min_gap >= LKM_SPIN_HOT_NS / 2);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
}

static void free_lock(void)
{
	reset(0);
	pthread_t t = start_spinner();

	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(atomic_load(&s_acquired), 1);
	CHECK_EQ(atomic_load(&s_confirms), 1);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
}

int main(void)
{
	struct lk_mutex_policy p;

	lkt_watchdog(120);
	hk_install(on_hook);
	CHECK_EQ(lk_mutex_get_policy(&p), 0);
	p.spin_min_ns = p.spin_max_ns = LK_MUTEX_SPIN_MAX_NS_LIMIT;
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	hot_owner();
	free_lock();
	return lkt_done("test_hook_mutex_confirm");
}
