/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_rhythm.c - issue 12 defect 3, deterministic: lk_mutex's handoff bound
 * against the alternating rhythm, with the spinner held at the mutex.spin pause point.
 *
 * Two threads alternate: the holder keeps the lock until the other one spins for it (SPINNING set);
 * the spinner is held at mutex.spin while the lock is held (its budget counts rounds, so it never
 * runs out), and takes the lock as soon as it is released. So every unlock finds a spinner and no
 * preemption can break the rhythm. Parked waiters must still get the lock:
 *
 *  1. one waiter W, parked before the rhythm starts: it gets the lock before the rhythm completes
 *     CAP acquisitions (the old code: never), and no rhythm acquisition starts after a rhythm
 *     holder has seen W owed a handoff (the lock word's owed count, LK_MUTEX_OWED_MASK) and before W's: W is
 *     the queue head, its bound is the current critical section. Several policies; a run whose
 *     first waiter was served before the rhythm made MIN_RHYTHM acquisitions tested nothing and is
 *     run again (rhythm_until_tested()), except with handoff_ns 0, where the waiters are owed at
 *     their parks, before any rhythm (those runs check the order). (A rhythm thread that parks is
 *     behind W; with handoff_ns 0 it is owed at once too, and served after W.)
 *  2. four waiters parked in order (one of them in timedlock): all get the lock, with no rhythm
 *     acquisition in between once one is owed; with handoff_ns 0 (all owed at once) in their order.
 *  3. an owed waiter whose own deadline passes before it is served: ETIMEDOUT, and the handoff count
 *     drops back to 0 under the bucket lock (the holder checks before it unlocks).
 *  4. an owed waiter that times out as it is handed the lock: at park.timeout (its sleep timed out,
 *     the bucket is not locked yet) the holder unlocks and hands it the lock; the waiter must return
 *     0 owning the lock, never ETIMEDOUT with the lock held.
 */
#define _GNU_SOURCE	/* sched_setaffinity (lkt_place) */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hooklab.h"
#include "locklab/mutex.h"
#include "locklab/relax.h"

#define CAP 1000000ul
#define NW 4

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static _Atomic int stop;
static _Atomic int holder = -1;		/* 0, 1: rhythm threads; 10 + i: waiter i */
static _Atomic unsigned long acq;	/* rhythm acquisitions */
static _Atomic unsigned long served_at;	/* acq when the first waiter got the lock (0: not yet) */
static _Atomic int owed_seen;		/* a rhythm holder saw the handoff count (cleared by a waiter) */
static _Atomic unsigned long after_owed;	/* rhythm acquisitions that started after that */
static _Atomic int order[NW], norder;
static _Atomic int w_tid[NW];
static _Atomic int w_left;		/* waiters not done yet */
static _Atomic int go;			/* rhythm thread 0 may take the lock (rhythm_run()) */
static _Atomic int started;		/* the waiters parked, the policy set: the rhythm may start */
static cpu_set_t cpus;			/* the CPUs the test may run on */
static __thread int role = -1;		/* 0, 1 rhythm; 10 + i waiter i; 20 the timing-out waiter */
static __thread int parked_in_call;	/* a rhythm thread parked in its current lock call */

/* run 4 */
static _Atomic int hold_at_timeout;	/* run 4: the waiter waits at park.timeout for a handoff */
static _Atomic int timing_out;		/* the waiter is at park.timeout */
static _Atomic unsigned long handoffs_at_start;

static uint32_t word(void)
{
	return atomic_load_explicit(&m.word, memory_order_relaxed);	/* relaxed: observing bits */
}

static void on_hook(const char *point, void *arg)
{
	if (arg != &m)
		return;
	if (hk_is(point, "mutex.park") && (role == 0 || role == 1))
		parked_in_call = 1;
	if (hk_is(point, "mutex.spin") && (role == 0 || role == 1)) {
		/* the rhythm's spinner: hold S until the lock is free (or a waiter is owed it) */
		while ((word() & LK_MUTEX_LOCKED) && !(word() & LK_MUTEX_OWED_MASK) && !atomic_load(&stop))
			lk_cpu_relax();
	} else if (hk_is(point, "park.timeout") && role == 20 && atomic_load(&hold_at_timeout) &&
		   (word() & LK_MUTEX_OWED_MASK)) {
		/* run 4: we are owed the lock (the only waiter) and our own deadline passed; let the
		 * holder hand us the lock before we look */
		atomic_store(&timing_out, 1);
		while (hk_count("mutex.handoff") == atomic_load(&handoffs_at_start))
			sched_yield();
	}
}

/*
 * The two rhythm threads start on CPUs of their own (where the test has two) and go back to all of
 * them after 10 acquisitions: the waiters' deadlines (1 ms by default) run from their parks, and
 * when the scheduler put the two on one CPU, the holder's loop kept the spinner off it for a time
 * slice (milliseconds), by which time the waiters were owed and served before the rhythm ran.
 */
static void *rhythm(void *arg)
{
	bool placed = false;

	role = (int)(intptr_t)arg;
	CHECK_EQ(lkt_place(&cpus, role), 0);
	/* thread 0 takes the lock first, thread 1 spins for it once the waiters parked behind it */
	while (!atomic_load(role == 0 ? &go : &started) && !atomic_load(&stop))
		sched_yield();
	while (!atomic_load(&stop)) {
		parked_in_call = 0;
		lk_mutex_lock(&m);
		atomic_store(&holder, role);
		unsigned long n = atomic_fetch_add(&acq, 1) + 1;

		if (n >= CAP)
			atomic_store(&stop, 1);
		if (!placed && n >= 10) {
			CHECK_EQ(lkt_place(&cpus, -1), 0);
			placed = true;
		}
		while (!atomic_load(&started) && !atomic_load(&stop))	/* the first: see rhythm_run() */
			sched_yield();
		/*
		 * (once every waiter W is served, rhythm threads parked with handoff_ns 0 are owed too.) A
		 * rhythm thread that parked in this call took its turn as a queued waiter itself: it may be
		 * owed, and be handed the lock, ahead of a waiter behind it that is not owed yet (its timer
		 * is late on a loaded machine; first owed in queue order, src/mutex.c). Only the rhythm's
		 * own acquisitions - barging, spinning - must not start once a waiter is owed.
		 */
		if (atomic_load(&owed_seen) && atomic_load(&w_left) && !parked_in_call)
			atomic_fetch_add(&after_owed, 1);
		for (;;) {		/* until the other one spins for it, or a waiter is owed it */
			uint32_t v = word();

			if (v & LK_MUTEX_OWED_MASK) {
				atomic_store(&owed_seen, 1);
				break;
			}
			if ((v & LK_MUTEX_SPINNING) || atomic_load(&stop))
				break;
			lk_cpu_relax();
		}
		atomic_store(&holder, -1);
		CHECK_EQ(lk_mutex_unlock(&m), 0);
		while (!atomic_load(&stop)) {	/* lock again only while someone else holds it */
			int h = atomic_load(&holder);

			if (h != -1 && h != role)
				break;
			lk_cpu_relax();
		}
	}
	return NULL;
}

static void *waiter(void *arg)
{
	int i = (int)(intptr_t)arg;

	role = 10 + i;
	atomic_store(&w_tid[i], (int)syscall(SYS_gettid));
	if (i == 1) {		/* one timed waiter, with a deadline it never reaches */
		struct timespec dl = lkt_deadline_in(CLOCK_REALTIME, 3600ll * 1000000000);

		CHECK_EQ(lk_mutex_timedlock(&m, CLOCK_REALTIME, &dl), 0);
	} else {
		lk_mutex_lock(&m);
	}
	atomic_store(&holder, role);
	int k = atomic_fetch_add(&norder, 1);

	if (k == 0)	/* the first waiter served: how far the rhythm got */
		atomic_store(&served_at, atomic_load(&acq));
	atomic_store(&order[k], i);
	atomic_store(&owed_seen, 0);
	atomic_fetch_sub(&w_left, 1);
	atomic_store(&holder, -1);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

/*
 * One run; returns whether it tested the rhythm: the first waiter was served only after MIN_RHYTHM
 * rhythm acquisitions. (Counted by the waiter when it gets the lock: main's own look at acq, once
 * it sees every waiter done, comes thousands of acquisitions later - the rhythm goes on meanwhile -
 * and read 9868 in a run whose waiter was served at the first unlock.)
 */
#define MIN_RHYTHM 20
#define ATTEMPTS 50	/* an inconclusive run costs a few ms */

static bool rhythm_run(const char *what, const struct lk_mutex_policy *pol, int nw)
{
	struct lk_mutex_policy p, def;
	pthread_t rt[2], wt[NW];
	int before = lkt_failures;

	lk_mutex_get_policy(&def);
	atomic_store(&stop, 0);
	atomic_store(&acq, 0);
	atomic_store(&owed_seen, 0);
	atomic_store(&after_owed, 0);
	atomic_store(&norder, 0);
	atomic_store(&served_at, 0);
	atomic_store(&w_left, nw);
	atomic_store(&go, 0);
	atomic_store(&started, 0);
	atomic_store(&holder, -1);
	/*
	 * Rhythm thread 0 takes the lock; the waiters park in order behind it (no spinning: they park
	 * at once); then the policy, and thread 1 spins for the lock (held at mutex.spin): thread 0
	 * sees it and unlocks, waking nobody, and the rhythm runs. Nothing slow between the waiters'
	 * parks and the rhythm: both threads exist before, and this thread only sets the flag. (When
	 * it held the lock itself and created the rhythm threads after the parks, the first waiter was
	 * owed before the rhythm ran in most runs with the 1 ms default, and thread 1, calling lock
	 * before our unlock, parked behind the waiters, so the rhythm broke at once: runs that tested
	 * nothing.)
	 */
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&rt[i], NULL, rhythm, (void *)(intptr_t)i), 0);
	p = *pol;
	p.spin_min_ns = p.spin_max_ns = 0;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	atomic_store(&go, 1);
	while (atomic_load(&holder) != 0)
		sched_yield();
	for (int i = 0; i < nw; i++) {
		int tid;

		atomic_store(&w_tid[i], 0);
		CHECK_EQ(pthread_create(&wt[i], NULL, waiter, (void *)(intptr_t)i), 0);
		while (!(tid = atomic_load(&w_tid[i])) || lkt_thread_state(tid) != 'S')
			sched_yield();
	}
	CHECK_EQ(lk_mutex_set_policy(pol), 0);
	atomic_store(&started, 1);

	while (atomic_load(&w_left) && !atomic_load(&stop))
		sched_yield();
	unsigned long got = atomic_load(&acq);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(rt[i], NULL);
	for (int i = 0; i < nw; i++)
		pthread_join(wt[i], NULL);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	if (got >= CAP)
		fprintf(stderr, "starved: of %d parked waiter(s), not all had the lock after %lu acquisitions by the "
			"alternating threads\n", nw, got);
	CHECK(got < CAP);
	CHECK_EQ(atomic_load(&after_owed), 0);
	unsigned long served = atomic_load(&served_at);
	/*
	 * With handoff_ns 0 every waiter is owed from its first park: strict FIFO. With a deadline, a
	 * waiter can be woken as the spinner before its timer marked it (a late timer on a loaded
	 * machine), and if another waiter became owed meanwhile it parks again behind it (invariant 6
	 * of src/mutex.c), so the order is by the time each became owed, not by arrival.
	 */
	if (pol->handoff_ns == 0)
		for (int i = 0; i < nw; i++)
			CHECK_EQ(atomic_load(&order[i]), i);
	CHECK_EQ(word(), 0);
	printf("  %-34s first of %d waiter(s) served after %lu rhythm acquisitions, %lu once one was owed\n",
	       what, nw, served, atomic_load(&after_owed));
	if (lkt_failures != before)
		fprintf(stderr, "  (in run '%s')\n", what);
	return served >= MIN_RHYTHM;
}

/*
 * Runs until one tested the rhythm: a waiter whose deadline passed during the set-up (a loaded
 * machine: the first waiter was served at the first unlock in 3 of 10 runs of "4 waiters, 2 ms"
 * beside another test) is served before the rhythm runs, and the run proves nothing. Once only with
 * handoff_ns 0 (every waiter is owed at its park: no rhythm can run, the run checks the order), on
 * one CPU, and under an emulator (LOCKLAB_TEST_TIMEOUT_SCALE, set by scripts/check-arm64), where the
 * set-up outlasts a 2 ms deadline: under qemu all 50 runs of "4 waiters, 2 ms" were served at the
 * first unlock.
 */
static void rhythm_until_tested(const char *what, const struct lk_mutex_policy *pol, int nw)
{
	int a = 0;

	if (pol->handoff_ns == 0 || CPU_COUNT(&cpus) < 2 || lkt_timeout_scale() > 1) {
		rhythm_run(what, pol, nw);
		return;
	}
	while (!rhythm_run(what, pol, nw) && ++a < ATTEMPTS)
		;
	if (a == ATTEMPTS)
		fprintf(stderr, "  %s: no run in %d reached the rhythm before the first waiter was owed\n",
			what, ATTEMPTS);
	CHECK(a < ATTEMPTS);
}

/* ---- runs 3 and 4: an owed waiter and its own deadline ------------------------------------------ */

static _Atomic int tw_ret = -1;

static void *timing_waiter(void *arg)
{
	int64_t ns = (int64_t)(intptr_t)arg;
	struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, ns);

	role = 20;
	int r = lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &dl);
	atomic_store(&tw_ret, r);
	if (r == 0)
		CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

static void owed_then_deadline(bool handed_as_it_times_out)
{
	struct lk_mutex_policy def, p;
	pthread_t t;

	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 0;
	p.handoff_ns = 0;		/* owed from its first park on */
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	atomic_store(&tw_ret, -1);
	atomic_store(&timing_out, 0);
	atomic_store(&hold_at_timeout, handed_as_it_times_out);
	atomic_store(&handoffs_at_start, hk_count("mutex.handoff"));
	lk_mutex_lock(&m);
	intptr_t deadline_ns = handed_as_it_times_out ? 50000000 : 20000000;

	CHECK_EQ(pthread_create(&t, NULL, timing_waiter, (void *)deadline_ns), 0);
	while (!(word() & LK_MUTEX_OWED_MASK))		/* it parked and is owed the lock */
		sched_yield();
	if (handed_as_it_times_out) {
		while (!atomic_load(&timing_out))	/* its sleep timed out; it waits at park.timeout */
			sched_yield();
		CHECK_EQ(lk_mutex_unlock(&m), 0);	/* hands the lock over (the waiter is still queued) */
		pthread_join(t, NULL);
		CHECK_EQ(atomic_load(&tw_ret), 0);
	} else {
		while (atomic_load(&tw_ret) == -1)	/* it times out while owed */
			sched_yield();
		CHECK_EQ(atomic_load(&tw_ret), ETIMEDOUT);
		CHECK_EQ(word() & LK_MUTEX_OWED_MASK, 0);	/* its count left with it, under the bucket lock */
		CHECK_EQ(word(), LK_MUTEX_LOCKED);	/* the last waiter: PARKED cleared too */
		CHECK_EQ(lk_mutex_unlock(&m), 0);
		pthread_join(t, NULL);
	}
	CHECK_EQ(word(), 0);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
}

int main(void)
{
	struct lk_mutex_policy def, p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	lkt_watchdog(180);
	CHECK_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	hk_install(on_hook);
	lk_mutex_get_policy(&def);

	p = def;
	p.spin_min_ns = p.spin_max_ns = 10000000;
	rhythm_until_tested("spin 10 ms (the issue's)", &p, 1);
	rhythm_until_tested("default policy", &def, 1);
	p = def;
	p.handoff_ns = 0;
	rhythm_until_tested("handoff_ns 0", &p, 1);
	p = def;
	p.handoff_ns = 50000000;	/* the rhythm runs well before W's deadline */
	rhythm_until_tested("handoff_ns 50 ms", &p, 1);
	p = def;
	p.handoff_ns = 2000000;
	rhythm_until_tested("4 waiters, handoff_ns 2 ms", &p, NW);
	p.handoff_ns = 0;
	rhythm_until_tested("4 waiters, handoff_ns 0", &p, NW);

	owed_then_deadline(false);
	owed_then_deadline(true);
	return lkt_done("test_hook_mutex_rhythm");
}
