/* SPDX-License-Identifier: MIT */
/*
 * tests/test_lockstat.c - the statistics build's slow-path counters (src/lockstat.h) and the lab's
 * report of them, in whichever build this is: the normal build (counting compiled out) or the
 * statistics build (cmake -DLOCKLAB_STATS=ON; `make test-stats` runs this test there).
 *
 *  1. lockstat_enabled() says what was built, and every event has a distinct lower-case name.
 *  2. Counters are per thread: each of 4 threads counts a different number of one event, reads back
 *     exactly its own count (statistics build) or zeros (normal build), and reset zeroes them.
 *  3. The mutex workload, run in-process on lk_mutex (a lock flagged LAB_LOCK_STATS), reports
 *     "lock_stats" with "enabled" matching the build and, when enabled, every event by name and the
 *     run's operation count; a lock that does not count (glibc_normal) reports no "lock_stats".
 *  4. Woken waiters' outcomes: with spinning off and no handoff due, a waiter that parks is unparked
 *     only by an unlock's plain wake, so every one of its parks but the first follows a wake that
 *     did not get it the lock (mutex_woken_repark), and its one acquisition follows the last wake
 *     (mutex_woken_took: exactly 1). The owner re-locks at once after each unlock and waits for the
 *     waiter to park again, so the woken waiter usually finds the lock taken and parks again; the
 *     rounds must see that outcome (statistics build; zeros in the normal build).
 *  5. The mutex workload run in-process with --cpus first pins its threads to one CPU (it reports
 *     usable_cpus 1) and gives the calling thread its affinity back when it returns.
 *  6. Spin time: a waiter whose one spin gives up counts at least spin_min_ns of relax loop as
 *     mutex_spin_ns_lost and 1-4 spinner yields; one whose spin takes the lock after the owner's
 *     5 ms counts at least 0.5 ms as mutex_spin_ns_won, no yield and no park; both at most 4x the
 *     lock call's wall time (statistics build; zeros in the normal build).
 */
#define _GNU_SOURCE	/* sched_getaffinity(), CPU_COUNT() */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "lab_inproc.h"
#include "lktest.h"
#include "lockstat.h"
#include "locklab/mutex.h"

extern const struct lab_workload lab_wl_mutex;

#if LOCKLAB_STATS
#define BUILT_WITH_STATS 1
#else
#define BUILT_WITH_STATS 0
#endif

static void check_names(void)
{
	CHECK_EQ(lockstat_enabled(), BUILT_WITH_STATS);
	CHECK(LOCKSTAT_NR >= 6);
	for (unsigned i = 0; i < LOCKSTAT_NR; i++) {
		const char *n = lockstat_names[i];

		CHECK(n && *n && strspn(n, "abcdefghijklmnopqrstuvwxyz_") == strlen(n));
		CHECK(lockstat_descs[i] && *lockstat_descs[i]);
		for (unsigned k = 0; k < i; k++)
			CHECK(strcmp(lockstat_names[k], n) != 0);
	}
	CHECK_EQ(strcmp(lockstat_names[LOCKSTAT_mutex_handoff], "mutex_handoff"), 0);
}

struct counter_arg {
	unsigned n;
	uint64_t seen[LOCKSTAT_NR], after_reset[LOCKSTAT_NR];
	pthread_barrier_t *bar;
};

static void *counter_thread(void *p)
{
	struct counter_arg *a = p;

	/* everybody counts at once, so a shared counter would show the others' events */
	pthread_barrier_wait(a->bar);
	for (unsigned i = 0; i < a->n; i++)
		lockstat_inc(mutex_park);
	lockstat_inc(mutex_wake);
	pthread_barrier_wait(a->bar);
	lockstat_read(a->seen);
	lockstat_reset();
	lockstat_read(a->after_reset);
	return NULL;
}

static void check_per_thread(void)
{
	enum { N = 4 };
	struct counter_arg a[N];
	pthread_t t[N];
	pthread_barrier_t bar;

	pthread_barrier_init(&bar, NULL, N);
	for (unsigned i = 0; i < N; i++) {
		memset(&a[i], 0xff, sizeof(a[i].seen) * 2);	/* read must overwrite every slot */
		a[i].n = 1000 * (i + 1);
		a[i].bar = &bar;
		CHECK_EQ(pthread_create(&t[i], NULL, counter_thread, &a[i]), 0);
	}
	for (unsigned i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	for (unsigned i = 0; i < N; i++) {
		for (unsigned e = 0; e < LOCKSTAT_NR; e++) {
			uint64_t want = 0;

			if (BUILT_WITH_STATS && e == LOCKSTAT_mutex_park)
				want = a[i].n;
			if (BUILT_WITH_STATS && e == LOCKSTAT_mutex_wake)
				want = 1;
			CHECK_EQ(a[i].seen[e], want);
			CHECK_EQ(a[i].after_reset[e], 0);
		}
	}
}

/* Runs the mutex workload in this process with `args` (name=value pairs, the rest defaulted) and
 * returns its result object as text (malloc'd), or NULL. */
static char *run_mutex(const char *const *args)
{
	char *buf;
	int rc = lab_run_inproc(&lab_wl_mutex, args, &buf, NULL, 0);

	CHECK_EQ(rc, 0);
	if (rc) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void check_lab_report(void)
{
	const char *lk[] = { "lock", "lk_mutex", "threads", "2", "duration", "0.05", "warmup", "0", NULL };
	const char *gn[] = { "lock", "glibc_normal", "threads", "2", "duration", "0.05", "warmup", "0", NULL };
	char *out = run_mutex(lk), key[128];

	if (out) {
		char *ls = strstr(out, "\"lock_stats\":{");

		CHECK(ls != NULL);
		if (ls) {
			CHECK(strncmp(ls, BUILT_WITH_STATS ? "\"lock_stats\":{\"enabled\":true"
							   : "\"lock_stats\":{\"enabled\":false",
				      strlen("\"lock_stats\":{\"enabled\":") + 4) == 0);
			for (unsigned e = 0; BUILT_WITH_STATS && e < LOCKSTAT_NR; e++) {
				snprintf(key, sizeof(key), "\"%s\":", lockstat_names[e]);
				CHECK(strstr(ls, key) != NULL);
			}
			/* the counters are normalised by the run's every operation, warm-up included: the
			 * same count the exclusion check uses */
			const char *ex = strstr(out, "\"exclusion_expected\":");
			CHECK(ex != NULL);
			if (BUILT_WITH_STATS && ex) {
				snprintf(key, sizeof(key), "\"ops\":%llu,",
					 strtoull(ex + strlen("\"exclusion_expected\":"), NULL, 10));
				CHECK(strstr(ls, key) != NULL);
			}
		}
		free(out);
	}
	out = run_mutex(gn);
	if (out) {
		CHECK(strstr(out, "\"lock_stats\"") == NULL);
		CHECK(strstr(out, "\"exclusion_ok\":true") != NULL);
		free(out);
	}
}

struct woken_arg {
	lk_mutex_t *m;
	_Atomic int done;
	uint64_t seen[LOCKSTAT_NR];
};

static void *woken_thread(void *p)
{
	struct woken_arg *a = p;

	lockstat_reset();
	lk_mutex_lock(a->m);
	lockstat_read(a->seen);
	lk_mutex_unlock(a->m);
	atomic_store_explicit(&a->done, 1, memory_order_release);	/* pairs with the main loop's acquire */
	return NULL;
}

static void check_woken_outcomes(void)
{
	struct lk_mutex_policy old, p = { .spin_min_ns = 0, .spin_max_ns = 0, .handoff_ns = 10000000000ull };
	uint64_t parks = 0, reparks = 0;

	CHECK_EQ(lk_mutex_get_policy(&old), 0);
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	for (int round = 0; round < 50; round++) {
		lk_mutex_t m = LK_MUTEX_INITIALIZER;
		struct woken_arg a = { .m = &m };
		pthread_t t;

		lk_mutex_lock(&m);
		CHECK_EQ(pthread_create(&t, NULL, woken_thread, &a), 0);
		/* relaxed: we only wait for the waiter to be queued (Q = 1); the lock orders the rest */
		while (!(atomic_load_explicit(&m.word, memory_order_relaxed) & LK_MUTEX_QUEUED_MASK))
			sched_yield();
		/*
		 * Wake it and take the lock back at once, a few times; each time it may lose the race
		 * (then wait until it has parked again) or win it (then it is done).
		 */
		for (int i = 0; i < 3 && !atomic_load_explicit(&a.done, memory_order_relaxed); i++) {
			lk_mutex_unlock(&m);
			lk_mutex_lock(&m);
			/* relaxed: only waiting for the next park or the end; the lock orders the data */
			while (!atomic_load_explicit(&a.done, memory_order_relaxed) &&
			       !(atomic_load_explicit(&m.word, memory_order_relaxed) & LK_MUTEX_QUEUED_MASK))
				sched_yield();
		}
		lk_mutex_unlock(&m);
		/* acquire: pairs with the release store in woken_thread(), after its lockstat_read() */
		while (!atomic_load_explicit(&a.done, memory_order_acquire))
			sched_yield();
		pthread_join(t, NULL);
		CHECK_EQ(a.seen[LOCKSTAT_mutex_woken_took], BUILT_WITH_STATS ? 1 : 0);
		if (BUILT_WITH_STATS) {
			CHECK(a.seen[LOCKSTAT_mutex_park] >= 1);
			CHECK_EQ(a.seen[LOCKSTAT_mutex_woken_repark], a.seen[LOCKSTAT_mutex_park] - 1);
		} else {
			CHECK_EQ(a.seen[LOCKSTAT_mutex_woken_repark], 0);
		}
		CHECK_EQ(a.seen[LOCKSTAT_mutex_handoff], 0);
		parks += a.seen[LOCKSTAT_mutex_park];
		reparks += a.seen[LOCKSTAT_mutex_woken_repark];
		lk_mutex_destroy(&m);
	}
	if (BUILT_WITH_STATS)
		CHECK(reparks > 0);
	if (BUILT_WITH_STATS)
		printf("woken outcomes: %llu parks, %llu of them again after a wake, in 50 rounds\n",
		       (unsigned long long)parks, (unsigned long long)reparks);
	CHECK_EQ(lk_mutex_set_policy(&old), 0);
}

struct spin_arg {
	lk_mutex_t *m;
	_Atomic int started, done;
	uint64_t elapsed_ns;		/* the lock call's wall time */
	uint64_t seen[LOCKSTAT_NR];
};

static void *spin_thread(void *p)
{
	struct spin_arg *a = p;

	lockstat_reset();
	atomic_store_explicit(&a->started, 1, memory_order_relaxed);	/* relaxed: a progress flag */
	uint64_t t0 = lkt_now_ns(CLOCK_MONOTONIC);
	lk_mutex_lock(a->m);
	a->elapsed_ns = lkt_now_ns(CLOCK_MONOTONIC) - t0;
	lockstat_read(a->seen);
	lk_mutex_unlock(a->m);
	atomic_store_explicit(&a->done, 1, memory_order_release);	/* pairs with the acquire in spin_case() */
	return NULL;
}

/* the won case's spin budget, and how long the main thread holds the lock after seeing the spinner */
#define WON_BUDGET_NS	LK_MUTEX_SPIN_MAX_NS_LIMIT	/* 10 ms, the most a policy allows */
#define WON_HOLD_NS	1000000

/*
 * One waiter behind the main thread's lock. lost: the default spin budget (spin_min_ns 1 µs), and
 * the main thread unlocks only once the waiter has parked, so its one spin gives up. won: the budget
 * is 10 ms and the main thread unlocks 1 ms after it sees the waiter's SPINNING claim, so the spin
 * usually takes the lock. It may still spend its budget first: the budget is relax rounds of an
 * estimated length, and a busy machine or an emulator can make them shorter than estimated, or
 * keep the main thread from running. Then the main thread sees QUEUED instead of SPINNING, or
 * SPINNING gone by the time it unlocks; it waits for either, never for SPINNING alone (which would
 * hang once the spinner has parked), and check_spin_time() tries again. Returns the waiter's
 * counters and its lock call's wall time.
 */
static void spin_case(bool won, struct spin_arg *a)
{
	struct lk_mutex_policy old, p = { .spin_min_ns = WON_BUDGET_NS, .spin_max_ns = WON_BUDGET_NS,
					  .handoff_ns = 10000000000ull };
	lk_mutex_t m = LK_MUTEX_INITIALIZER;
	pthread_t t;

	CHECK_EQ(lk_mutex_get_policy(&old), 0);
	if (won)
		CHECK_EQ(lk_mutex_set_policy(&p), 0);
	a->m = &m;
	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&t, NULL, spin_thread, a), 0);
	/* relaxed (all loops): we only wait for the waiter's progress; the lock orders the data */
	while (!atomic_load_explicit(&a->started, memory_order_relaxed))
		sched_yield();
	uint32_t until = won ? LK_MUTEX_SPINNING | LK_MUTEX_QUEUED_MASK : LK_MUTEX_QUEUED_MASK;

	while (!(atomic_load_explicit(&m.word, memory_order_relaxed) & until))
		sched_yield();
	if (won && (atomic_load_explicit(&m.word, memory_order_relaxed) & LK_MUTEX_SPINNING))
		nanosleep(&(struct timespec){ .tv_nsec = WON_HOLD_NS }, NULL);
	lk_mutex_unlock(&m);
	/* acquire: pairs with the release store in spin_thread(), after its lockstat_read() */
	while (!atomic_load_explicit(&a->done, memory_order_acquire))
		sched_yield();
	pthread_join(t, NULL);
	lk_mutex_destroy(&m);
	CHECK_EQ(lk_mutex_set_policy(&old), 0);
}

/*
 * The spin-time counters: ns in the relax loop of spins that won or gave up, and the spinner's
 * yields. They are relax rounds times the calibrated relax, so they are checked against what the
 * code guarantees (a spin that gives up has spun its budget, at least spin_min_ns) and against the
 * wall time of the lock call (a spinner preempted mid-spin counts less, never more, but the
 * calibration is an estimate: 4x slack). The won case is tried up to 10 times for a spin that
 * wins with its time in that range; each try that loses must have spent its whole budget, as the
 * lost case does.
 */
static void check_spin_time(void)
{
	struct spin_arg lost = { 0 }, won = { 0 };
	struct lk_mutex_policy pol;
	int tries = 0;

	CHECK_EQ(lk_mutex_get_policy(&pol), 0);
	spin_case(false, &lost);
	for (;;) {
		memset(&won, 0, sizeof(won));
		spin_case(true, &won);
		if (!BUILT_WITH_STATS || ++tries == 10)
			break;
		if (won.seen[LOCKSTAT_mutex_spin_success]) {
			/* its relax rounds stop while it is off the CPU, and run faster than
			 * calibrated on a host that speeds up: try again outside the range below */
			if (won.seen[LOCKSTAT_mutex_spin_ns_won] >= WON_HOLD_NS / 10 &&
			    won.seen[LOCKSTAT_mutex_spin_ns_won] <= 4 * won.elapsed_ns + 100000)
				break;
			continue;
		}
		/* it gave up: only once its budget was spent (less a relax of rounding) */
		CHECK_EQ(won.seen[LOCKSTAT_mutex_spin_start], 1);
		CHECK(won.seen[LOCKSTAT_mutex_spin_ns_lost] + 200 >= WON_BUDGET_NS);
	}
	if (!BUILT_WITH_STATS) {
		CHECK_EQ(lost.seen[LOCKSTAT_mutex_spin_ns_lost] + won.seen[LOCKSTAT_mutex_spin_ns_won], 0);
		return;
	}
	printf("spin time: gave up after %llu ns (%llu yields; lock call %llu ns), took it after %llu ns "
	       "(lock call %llu ns; %d earlier tries)\n",
	       (unsigned long long)lost.seen[LOCKSTAT_mutex_spin_ns_lost],
	       (unsigned long long)lost.seen[LOCKSTAT_mutex_spin_yield],
	       (unsigned long long)lost.elapsed_ns, (unsigned long long)won.seen[LOCKSTAT_mutex_spin_ns_won],
	       (unsigned long long)won.elapsed_ns, tries);
	/* lost: one spin, given up after its budget (at least spin_min_ns, less a relax of rounding) */
	CHECK_EQ(lost.seen[LOCKSTAT_mutex_spin_start], 1);
	CHECK_EQ(lost.seen[LOCKSTAT_mutex_spin_success], 0);
	CHECK_EQ(lost.seen[LOCKSTAT_mutex_spin_ns_won], 0);
	CHECK(lost.seen[LOCKSTAT_mutex_spin_ns_lost] + 200 >= pol.spin_min_ns);
	CHECK(lost.seen[LOCKSTAT_mutex_spin_ns_lost] <= 4 * lost.elapsed_ns + 100000);
	/* its budget spent, it yields before it parks: at least once (its own spin clock is under
	 * spin_max_ns then), at most LKM_SPIN_YIELDS (4) times */
	CHECK(lost.seen[LOCKSTAT_mutex_spin_yield] >= 1 && lost.seen[LOCKSTAT_mutex_spin_yield] <= 4);
	CHECK(lost.seen[LOCKSTAT_mutex_park] >= 1);
	/* won: one spin that took the lock after the main thread's 1 ms, no yield, no park */
	CHECK_EQ(won.seen[LOCKSTAT_mutex_spin_start], 1);
	CHECK_EQ(won.seen[LOCKSTAT_mutex_spin_success], 1);
	CHECK_EQ(won.seen[LOCKSTAT_mutex_spin_ns_lost], 0);
	CHECK_EQ(won.seen[LOCKSTAT_mutex_spin_yield], 0);
	CHECK_EQ(won.seen[LOCKSTAT_mutex_park], 0);
	/* at least a tenth of the 1 ms (the spinner may be preempted for the rest), at most 4x its call */
	CHECK(won.seen[LOCKSTAT_mutex_spin_ns_won] >= WON_HOLD_NS / 10);
	CHECK(won.seen[LOCKSTAT_mutex_spin_ns_won] <= 4 * won.elapsed_ns + 100000);
}

static void check_cpus_restored(void)
{
	const char *pinned[] = { "lock", "lk_mutex", "threads", "2", "duration", "0.02", "warmup", "0",
				 "cpus", "first", NULL };
	cpu_set_t before, after;

	CHECK_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
	char *out = run_mutex(pinned);

	if (out) {
		CHECK(strstr(out, "\"usable_cpus\":1,") != NULL);
		free(out);
	}
	CHECK_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
	CHECK(CPU_EQUAL(&before, &after));
}

int main(void)
{
	lkt_watchdog(120);
	check_names();
	check_per_thread();
	check_lab_report();
	check_woken_outcomes();
	check_spin_time();
	check_cpus_restored();
	return lkt_done(BUILT_WITH_STATS ? "test_lockstat (statistics build)" : "test_lockstat");
}
