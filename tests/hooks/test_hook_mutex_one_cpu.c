/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_one_cpu.c - lk_mutex on one usable CPU (issue 11): no spinning, and an
 * unlock that woke a waiter with TOKEN_WAKE (it set W for it) yields the CPU to it once
 * (mutex.yield_woken). Compiled twice: HK_CPUS 1 here, pinned to the first CPU the process may use;
 * HK_CPUS 2 in test_hook_mutex_two_cpus.c, pinned to two (skipped with fewer): there neither change
 * may show. The pin comes before the first lock call, whose calibration reads the usable CPUs once.
 *
 * Deterministic, with pause points (spin policy 10 ms; handoff_ns 10 s, then 0):
 *   1. main holds m; T, pinned to one CPU of the process's, locks (the first lock call to
 *      calibrate: with two CPUs it counts the union of main's mask and its own, 2). One CPU: T parks without claiming S (mutex.spin never fires, the word
 *      never shows S). Two CPUs: T claims S and spins (mutex.spin fires), then parks after 10 ms.
 *   2. main unlocks: UW wakes T with TOKEN_WAKE. One CPU: mutex.yield_woken fires once, in main's
 *      unlock (after mutex.unlock_slow), before lk_mutex_unlock returns. Two CPUs: never.
 *      T is held at mutex.woken (W still set).
 *   3. main locks the free lock again; X locks and queues. main unlocks with P and W set: no slow
 *      path, no yield (the counts do not move). T goes on, takes the lock, unlocks: it wakes X with
 *      TOKEN_WAKE, and on one CPU yields (the count is 2, the second from T's thread).
 *   4. handoff_ns 0: a waiter is owed at its first park; main's unlock hands over (TOKEN_HANDOFF),
 *      which does not yield: the count does not move, mutex.handoff fires.
 * Throughout, on one CPU mutex.spin never fires.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* cpu_set_t, sched_setaffinity() */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "hooklab.h"
#include "locklab/mutex.h"

#ifndef HK_CPUS
#define HK_CPUS 1
#define HK_NAME "test_hook_mutex_one_cpu"
#endif

enum { ROLE_NONE, ROLE_T, ROLE_X, ROLE_Y };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static struct hk_gate t_gate;	/* T held at mutex.woken */
static _Atomic int yield_role = -1;	/* the role of the last thread that passed mutex.yield_woken */
static _Atomic unsigned long slow_at_yield;	/* mutex.unlock_slow's count when it did */
static _Atomic int saw_s;	/* a thread about to park saw S in the word */

static void on_hook(const char *point, void *arg)
{
	if (arg != &m)
		return;
	if (hk_is(point, "mutex.yield_woken")) {
		atomic_store(&yield_role, hk_role);
		atomic_store(&slow_at_yield, hk_count("mutex.unlock_slow"));
	}
	if (hk_is(point, "mutex.park") && (hk_word(&m) & LK_MUTEX_SPINNING))
		atomic_store(&saw_s, 1);
	if (hk_role == ROLE_T && hk_is(point, "mutex.woken"))
		hk_gate_hold(&t_gate);
}

static bool t_is_held(void) { return hk_gate_is_held(&t_gate); }
static bool x_done(void) { return atomic_load(&hk_got[ROLE_X]); }
static unsigned long owed0;
static bool y_owed(void) { return hk_count("mutex.owed") > owed0; }

/*
 * hk_start_queued() for T, with T pinned to the first CPU of the process's: the first lock call to
 * calibrate is T's, and with two CPUs it must still count two (the union of main's mask and its own:
 * a program that pins its threads one to a CPU keeps spinning).
 */
static void start_t_pinned(pthread_t *th)
{
	cpu_set_t allowed, one_set;
	pthread_attr_t a;

	CHECK_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	CPU_ZERO(&one_set);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed)) {
			CPU_SET(c, &one_set);
			break;
		}
	CHECK_EQ(pthread_attr_init(&a), 0);
	CHECK_EQ(pthread_attr_setaffinity_np(&a, sizeof(one_set), &one_set), 0);
	hk_locker_args[ROLE_T] = (struct hk_locker_arg){ &m, ROLE_T };
	CHECK_EQ(pthread_create(th, &a, hk_locker, &hk_locker_args[ROLE_T]), 0);
	CHECK_EQ(pthread_attr_destroy(&a), 0);
	uint64_t end = lkt_now_ns(CLOCK_MONOTONIC) + 10000000000ull;

	while (hk_queued(&m) != 1) {
		if (lkt_now_ns(CLOCK_MONOTONIC) >= end) {
			fprintf(stderr, "FAILED: T did not queue within 10 s\n");
			_exit(1);
		}
		sched_yield();
	}
}

/* Pin the process (this thread, before any other exists) to its first `want` allowed CPUs. */
static int pin(int want)
{
	cpu_set_t allowed, set;
	int got = 0;

	CHECK_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
	CPU_ZERO(&set);
	for (int c = 0; c < CPU_SETSIZE && got < want; c++)
		if (CPU_ISSET(c, &allowed)) {
			CPU_SET(c, &set);
			got++;
		}
	if (got < want)
		return got;
	CHECK_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
	return got;
}

int main(void)
{
	pthread_t t, x, y;
	const bool one = HK_CPUS == 1;

	lkt_watchdog(120);
	if (pin(HK_CPUS) < HK_CPUS) {
		fprintf(stderr, "%s: fewer than %d usable CPUs: skipped\n", HK_NAME, HK_CPUS);
		return 77;
	}
	CHECK_EQ(lkt_usable_cpus(), HK_CPUS);
	hk_install(on_hook);
	hk_mutex_policy(10000000, LK_MUTEX_HANDOFF_NS_LIMIT);

	/* 1. T (pinned to one of the CPUs, the first to calibrate) waits: spins first on two, never on one */
	lk_mutex_lock(&m);
	start_t_pinned(&t);
	CHECK_EQ(hk_count("mutex.spin") > 0, !one);
	CHECK_EQ(atomic_load(&saw_s), 0);	/* whoever spun gave S back before parking */

	/* 2. main's unlock wakes T with W: one CPU yields, in this unlock */
	unsigned long slow0 = hk_count("mutex.unlock_slow");

	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0 + 1);
	CHECK_EQ(hk_count("mutex.yield_woken"), one ? 1ul : 0ul);
	if (one) {
		CHECK_EQ(atomic_load(&yield_role), ROLE_NONE);
		CHECK_EQ(atomic_load(&slow_at_yield), slow0 + 1);	/* after the decision to wake */
	}
	hk_wait(t_is_held, "T at mutex.woken");
	CHECK(hk_word(&m) & LK_MUTEX_WOKEN);

	/* 3. W in flight: an unlock with P and W set takes the inline path; T's own wake yields */
	lk_mutex_lock(&m);	/* free: T has not taken it */
	hk_start_queued(&x, &m, ROLE_X, 1);
	slow0 = hk_count("mutex.unlock_slow");
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0);
	CHECK_EQ(hk_count("mutex.yield_woken"), one ? 1ul : 0ul);
	hk_gate_open(&t_gate);
	hk_wait(x_done, "X to take the lock after T");
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_join(x, NULL), 0);
	CHECK_EQ(hk_count("mutex.yield_woken"), one ? 2ul : 0ul);
	if (one)
		CHECK_EQ(atomic_load(&yield_role), ROLE_T);
	CHECK_EQ(hk_word(&m), 0);

	/* 4. a handoff does not yield */
	hk_mutex_policy(10000000, 0);
	unsigned long y0 = hk_count("mutex.yield_woken"), h0 = hk_count("mutex.handoff");

	owed0 = hk_count("mutex.owed");
	lk_mutex_lock(&m);
	hk_start_queued(&y, &m, ROLE_Y, 1);
	hk_wait(y_owed, "Y owed (handoff_ns 0)");
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(hk_count("mutex.handoff"), h0 + 1);
	CHECK_EQ(hk_count("mutex.yield_woken"), y0);
	CHECK_EQ(pthread_join(y, NULL), 0);
	CHECK_EQ(hk_word(&m), 0);

	if (one)
		CHECK_EQ(hk_count("mutex.spin"), 0ul);
	CHECK_EQ(atomic_load_explicit(&hk_unknown, memory_order_relaxed), 0);
	return lkt_done(HK_NAME);
}
