/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_crowd.c - LKM_CROWD, the extra spinners beside the S holder (src/mutex.c), which
 * no library build enables: a copy of src/mutex.c compiled into this file with LKM_CROWD 2 and
 * LKM_CROWD_ANY_CPUS (lab/adapters/lk_mutex_renamed.h: its symbols renamed, its statics visible
 * here), so that the bounds the hostile review broke stay fixed:
 *
 *  1. A timedlock caller that joins the crowd returns ETIMEDOUT at its deadline, not when the S
 *     holder gives up: the spinner holds S for 10 ms (spin_min = spin_max = 10 ms behind an owner
 *     that holds the lock 200 ms), the caller arrives with a 3 ms deadline, joins the crowd
 *     (counted by the test-only LKM_CROWD_JOINED point), and must return within 2 ms of it (times
 *     LOCKLAB_TEST_TIMEOUT_SCALE: 6 ms under check-arm64's emulation). Before
 *     the fix the crowd spin counted spin_max_ns of relax rounds and ignored the deadline: 7 ms
 *     late or more.
 *  2. The count saturates at 0: a fork's child zeroes it (crowd_reset()) while a spinner of the
 *     parent is in the crowd; here the reset runs while a crowd spinner of this process spins, and
 *     when that spinner leaves the count must be 0, not 2^32 - 1 (the review's signal-handler
 *     fork).
 *  3. Mutual exclusion and the word's end state with the crowd busy: 4 threads, short critical
 *     sections, a shared counter.
 *  4. The cap is one count for the process, not one per lock (the review's F2: 3 locks let 6 extra
 *     spinners in with a cap of 2): main holds 3 mutexes, each gets an S holder and then 2 more
 *     waiters; while they wait, the count must reach the cap and never pass it.
 *
 * Each timed case is tried up to 5 times (case 4: 10) and passes if one try does (a loaded machine
 * can delay a try; the defect shows in every try; case 4 checks the cap in every try). Needs 2
 * CPUs (spinning is off on one): skipped otherwise. Case 1 also needs 2 usable CPUs, and is
 * skipped in a run pinned to one (a caller that shares its CPU with the spinner is late by a
 * time slice).
 */
#define _GNU_SOURCE
#define LKM_VARIANT crowdtest
#define LKM_CROWD 2
#define LKM_CROWD_ANY_CPUS 1
/*
 * case 1 counts the joins (a look at crowd.n can miss a whole crowd spin on a loaded machine).
 * relaxed: main reads it after pthread_join() of the joiner, which orders the increment before.
 */
static _Atomic int crowd_joins;
#define LKM_CROWD_JOINED() atomic_fetch_add_explicit(&crowd_joins, 1, memory_order_relaxed)
#include "../lab/adapters/lk_mutex_renamed.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "lktest.h"

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static _Atomic int owner_locked;
static _Atomic long long timed_late_ns;
static _Atomic int timed_rc;
static _Atomic int waiter_done;	/* case 2's crowd candidate has returned from its lock */

static long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void sleep_ns(long long ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll) };

	nanosleep(&ts, NULL);
}

static uint32_t word(void)
{
	return atomic_load_explicit(&m.word, memory_order_relaxed);
}

static uint32_t crowd_count(void)
{
	return atomic_load_explicit(&crowd.n, memory_order_relaxed);
}

static void *owner(void *arg)
{
	long long hold_ns = *(long long *)arg;

	lk_mutex_lock(&m);
	atomic_store(&owner_locked, 1);
	sleep_ns(hold_ns);
	lk_mutex_unlock(&m);
	return NULL;
}

/* Locks and unlocks the mutex `arg` once. */
static void *lock_unlock(void *arg)
{
	lk_mutex_lock(arg);
	lk_mutex_unlock(arg);
	return NULL;
}

static void *timed(void *arg)
{
	long long rel_ns = *(long long *)arg;
	struct timespec abs;

	clock_gettime(CLOCK_MONOTONIC, &abs);
	long long dl = (long long)abs.tv_sec * 1000000000ll + abs.tv_nsec + rel_ns;

	abs.tv_sec = (time_t)(dl / 1000000000ll);
	abs.tv_nsec = (long)(dl % 1000000000ll);
	int r = lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &abs);

	atomic_store(&timed_late_ns, mono_ns() - dl);
	atomic_store(&timed_rc, r);
	if (r == 0)
		lk_mutex_unlock(&m);
	return NULL;
}

/* Case 2's crowd candidate: lock_unlock, then says so. */
static void *lock_unlock_done(void *arg)
{
	lock_unlock(arg);
	atomic_store(&waiter_done, 1);
	return NULL;
}

/* An owner holding the lock hold_ns, and a spinner holding S behind it; false if S never showed. */
static bool start_owner_and_spinner(pthread_t *o, pthread_t *s, long long *hold_ns)
{
	atomic_store(&owner_locked, 0);
	pthread_create(o, NULL, owner, hold_ns);
	while (!atomic_load(&owner_locked))
		sched_yield();
	pthread_create(s, NULL, lock_unlock, &m);
	for (long long t0 = mono_ns(); !(word() & LK_MUTEX_SPINNING);) {
		if (mono_ns() - t0 > 100000000ll)
			return false;
		sched_yield();
	}
	return true;
}

/* Case 1: the timedlock deadline ends a crowd spin. */
static bool try_deadline(void)
{
	pthread_t o, s, c;
	long long hold = 200000000ll, rel = 3000000ll;
	bool seen = false;

	if (!start_owner_and_spinner(&o, &s, &hold)) {
		pthread_join(o, NULL);
		pthread_join(s, NULL);
		return false;
	}
	atomic_store(&timed_rc, -1);
	atomic_store(&crowd_joins, 0);
	pthread_create(&c, NULL, timed, &rel);
	pthread_join(c, NULL);
	/* the caller is the only thread that can join: the S holder spins, the owner sleeps */
	seen = atomic_load(&crowd_joins) == 1;
	long long late = atomic_load(&timed_late_ns);
	int r = atomic_load(&timed_rc);

	pthread_join(o, NULL);
	pthread_join(s, NULL);
	fprintf(stderr, "deadline: crowd seen %d, rc %d, %.2f ms after the deadline\n", seen, r,
		(double)late / 1e6);
	CHECK(r == ETIMEDOUT || r == 0);	/* 0 only if the try was so late the owner had let go */
	/* 2 ms natively; under emulation (check-arm64) as much more as the watchdogs get: qemu-user
	 * returned 3.4-5.3 ms late on the AMD guest (stop 30) */
	return seen && r == ETIMEDOUT && late < 2000000ll * (long long)lkt_timeout_scale();
}

/* Case 2: a reset under a crowd spinner leaves the count at 0 when it leaves, not 2^32 - 1. */
static bool try_saturation(void)
{
	pthread_t o, s, c;
	long long hold = 30000000ll;
	bool seen = false;

	if (!start_owner_and_spinner(&o, &s, &hold)) {
		pthread_join(o, NULL);
		pthread_join(s, NULL);
		return false;
	}
	atomic_store(&waiter_done, 0);
	pthread_create(&c, NULL, lock_unlock_done, &m);
	/* until the candidate is back (it may start late on a loaded machine), as in case 1 */
	while (!seen && !atomic_load(&waiter_done)) {
		seen = crowd_count() == 1;
		if (!seen)
			sched_yield();
	}
	if (seen)
		crowd_reset();	/* what a fork's child does */
	pthread_join(c, NULL);
	pthread_join(o, NULL);
	pthread_join(s, NULL);
	uint32_t n = crowd_count();

	fprintf(stderr, "saturation: crowd seen %d, count after %u\n", seen, n);
	CHECK_EQ(n, 0u);
	return seen;
}

/* Case 4: one cap for all locks. */
static lk_mutex_t ms[3] = { LK_MUTEX_INITIALIZER, LK_MUTEX_INITIALIZER, LK_MUTEX_INITIALIZER };
static pthread_barrier_t go_cr;

/* a waiter of case 4: created early, it locks only when main lets the crowd go */
static void *crowd_waiter(void *arg)
{
	pthread_barrier_wait(&go_cr);
	return lock_unlock(arg);
}

static bool try_cap(void)
{
	pthread_t sp[3], cr[6];
	uint32_t max = 0;
	bool spinners = true;

	for (int i = 0; i < 3; i++)
		lk_mutex_lock(&ms[i]);
	/*
	 * The waiters exist before the S holders start their 10 ms: creating 6 threads can take
	 * longer than that under qemu-user, and a waiter that arrives after its S holder gave up
	 * claims S itself instead of spinning beside it. Before the barrier, 10 tries all missed the
	 * cap in 14 runs of 30 there; with it, in none of 30.
	 */
	pthread_barrier_init(&go_cr, NULL, 7);
	for (int i = 0; i < 6; i++)
		pthread_create(&cr[i], NULL, crowd_waiter, &ms[i / 2]);
	for (int i = 0; i < 3; i++) {
		pthread_create(&sp[i], NULL, lock_unlock, &ms[i]);
		/* relaxed: a test-only look at the word */
		for (long long t0 = mono_ns(); !(atomic_load_explicit(&ms[i].word, memory_order_relaxed) &
						  LK_MUTEX_SPINNING);) {
			if (mono_ns() - t0 > 100000000ll) {
				spinners = false;
				break;
			}
			sched_yield();
		}
	}
	pthread_barrier_wait(&go_cr);
	/* look every 20 us for 20 ms, sleeping between looks: the waiters need both CPUs */
	for (long long t0 = mono_ns(); mono_ns() - t0 < 20000000ll && max < LKM_CROWD + 1;) {
		uint32_t n = crowd_count();

		if (n > max)
			max = n;
		sleep_ns(20000);
	}
	for (int i = 0; i < 3; i++)
		lk_mutex_unlock(&ms[i]);
	for (int i = 0; i < 3; i++)
		pthread_join(sp[i], NULL);
	for (int i = 0; i < 6; i++)
		pthread_join(cr[i], NULL);
	pthread_barrier_destroy(&go_cr);
	fprintf(stderr, "cap: spinners %d, at most %u extra spinners seen (cap %u)\n", spinners, max,
		atomic_load_explicit(&crowd_cap, memory_order_relaxed));
	CHECK(max <= LKM_CROWD);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(atomic_load_explicit(&ms[i].word, memory_order_relaxed), 0u);
	return spinners && max == LKM_CROWD;
}

/* Case 3: exclusion with the crowd at work. */
static long counter;
static _Atomic int stop;

static void *hammer(void *arg)
{
	long *mine = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lk_mutex_lock(&m);
		long c = counter;

		for (volatile int i = 0; i < 50; i++)
			;
		counter = c + 1;
		lk_mutex_unlock(&m);
		(*mine)++;
	}
	return NULL;
}

int main(void)
{
	lkt_watchdog(120);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "test_mutex_crowd: one CPU: spinning is off, nothing to test\n");
		return 77;
	}
	struct lk_mutex_policy p;

	lk_mutex_get_policy(&p);
	p.spin_min_ns = p.spin_max_ns = 10000000;	/* the S holder spins 10 ms */
	CHECK_EQ(lk_mutex_set_policy(&p), 0);

	bool ok = false;
	cpu_set_t cpus;

	/*
	 * Case 1 bounds lateness at 2 ms, which the scheduler must allow: pinned to one CPU (make
	 * test-pinned) the caller shares it with the spinner, in slices of several ms, and a try
	 * is late for that alone. The other cases do not time anything.
	 */
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < 2) {
		fprintf(stderr, "deadline: skipped, one usable CPU\n");
	} else {
		for (int i = 0; i < 5 && !ok; i++)
			ok = try_deadline();
		CHECK(ok);
	}
	ok = false;
	for (int i = 0; i < 5 && !ok; i++)
		ok = try_saturation();
	CHECK(ok);
	ok = false;
	for (int i = 0; i < 10 && !ok; i++)
		ok = try_cap();
	CHECK(ok);
	CHECK_EQ(crowd_count(), 0u);

	lk_mutex_get_policy(&p);
	p.spin_min_ns = 1000;
	p.spin_max_ns = 20000;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	pthread_t t[4];
	long ops[4] = { 0 };

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, hammer, &ops[i]);
	sleep_ns(300000000ll);
	atomic_store(&stop, 1);
	long total = 0;

	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		total += ops[i];
	}
	CHECK_EQ(counter, total);
	CHECK_EQ(word(), 0u);
	CHECK_EQ(crowd_count(), 0u);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_done("test_mutex_crowd");
}
