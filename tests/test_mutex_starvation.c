/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_starvation.c - issue 12 defect 3: the anti-starvation bound of lk_mutex must
 * hold against the rhythm that defeated it.
 *
 * The rhythm: two threads A and B alternate; each calls lock only while the other holds the lock,
 * and holds it until the other is spinning for it (SPINNING set). So at every unlock a spinner owns
 * S, and an unlock that wakes only when no spinner is awake never wakes anybody. W, parked before
 * the rhythm starts, must still get the lock:
 *
 *  - liveness: W acquires before A and B complete CAP acquisitions (the old code: never, while the
 *    rhythm holds; a watchdog backs it);
 *  - the bound, counted in events: once W's wait passed handoff_ns it records itself in the lock
 *    word (the OWED count, LK_MUTEX_OWED_MASK); from the first time a rhythm thread sees that count
 *    in its critical section, no acquisition by A or B may start before W's. W is the only thread
 *    that can be owed: the rhythm threads run with the longest handoff_ns there is (10 s), W with
 *    the policy's; so W is the first owed waiter in the queue, and invariants 6-8 of src/mutex.c
 *    say the unlock after the sighting hands W the lock. (Before, the rhythm ran with the
 *    policy's handoff_ns too, and the test allowed 2: a rhythm thread that parked - a preempted
 *    spinner, see below - could be owed before W, when W's timer had fired but W had not run yet,
 *    and be handed the lock within the bound; it then counted as if the rhythm had passed W, and
 *    made this test fail once under `ctest -j 2`.) Timing decides only when W records itself (its
 *    deadline and its wake-up), never how many others pass it afterwards.
 *
 * Set-up (run()): A holds the lock while W calls lock with spinning disabled, so W parks at once
 * (confirmed: its /proc state is S, asleep in the futex). B then spins for the lock (S set), A
 * unlocks - no wake, B takes it - and the rhythm runs: A and B hand the lock to each other through
 * S. Policies: the spin_min = spin_max = 10 ms (the rhythm then survives preemptions
 * shorter than 10 ms), the default, and a 50 ms handoff_ns (the rhythm runs long before W's
 * deadline); a run whose W was served before the rhythm made MIN_RHYTHM acquisitions tested nothing
 * and is run again (run_until_tested()). And handoff_ns = 0, where W is owed at its park, before
 * any rhythm: that run checks only that the next unlock serves it. Preemptions long enough to make a spinner give up are bridged by reserve
 * threads (see rhythm()); tests/hooks/test_hook_mutex_rhythm.c holds the spinner at a pause point
 * instead, which no preemption can break.
 */
#define _GNU_SOURCE	/* sched_setaffinity */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lktest.h"
#include "locklab/mutex.h"
#include "locklab/relax.h"

#define CAP 1000000ul			/* acquisitions by the rhythm while W waits: starvation */
#define NSTANDBY 30			/* reserve rhythm threads (see below) */
#define SUMMON_POLLS (1u << 14)		/* every other one parked this long: summon a reserve */
#define BREAK_POLLS (1u << 20)		/* ... and none left: give up, unlock (rhythm broken) */
#define GIVE_UP_POLLS (1u << 27)	/* a thread on its way to lock() stalled for seconds */

enum { NONE = -1, W = 99 };

static struct {
	lk_mutex_t m;
	_Atomic int stop;
	_Atomic int holder;		/* rhythm thread index, W, or NONE */
	_Atomic int outside;		/* active rhythm threads between their unlock and their lock */
	_Atomic int w_tid, w_done;
	_Atomic unsigned long acq;	/* acquisitions by rhythm threads (W is parked before the first) */
	_Atomic int h_seen;		/* a rhythm holder saw the handoff count while W waited */
	_Atomic unsigned long after_h;	/* rhythm acquisitions that started after that */
	_Atomic unsigned long summoned;	/* reserve threads called in because a spinner had parked */
	_Atomic unsigned long breaks;	/* critical sections that ended without a spinner */
	unsigned long w_waited;		/* acq when W got the lock */
	sem_t standby;			/* reserve threads wait here */
	sem_t go;			/* rhythm thread 0 waits here for the set-up */
	_Atomic int started;		/* W parked, the spin policy set: the rhythm may start */
} r;

static uint32_t word(void)
{
	return atomic_load_explicit(&r.m.word, memory_order_relaxed);	/* relaxed: observing bits */
}

static bool done(void)
{
	/* seq_cst (all atomics here without an explicit order): test bookkeeping, not under test */
	return atomic_load(&r.stop) || atomic_load(&r.w_done);
}

static cpu_set_t cpus;		/* the CPUs the test may run on */

/*
 * Rhythm threads 0 and 1 start on CPUs of their own (where the test has two): W's deadline (1 ms by
 * default) runs from its park, and when the scheduler put the two on one CPU the one that spun kept
 * the other off it for a time slice (milliseconds), by which time W was owed the lock and got it
 * before the rhythm ran: a run that tested nothing (half the runs of the policy). Once the
 * rhythm runs they go back to all the CPUs, preemptions and all.
 */
static void place(int me, bool start)
{
	CHECK_EQ(lkt_place(&cpus, start ? me : -1), 0);
}

/*
 * A rhythm thread: lock; hold until another rhythm thread spins for the lock (S set); unlock; call
 * lock again only once another thread holds it. Two are active at a time. When a spinner gives up
 * (its budget ran out while the holder was preempted) it parks - behind W - and the holder calls in
 * a reserve thread to spin instead, still without unlocking: an unlock with nobody spinning would
 * wake W and end the rhythm (what a preemption did in the measurement). Reserve threads
 * start on the semaphore.
 */
static void *rhythm(void *arg)
{
	int me = (int)(intptr_t)arg;
	bool counted = false;		/* counted in r.outside */
	bool placed = me >= 2;		/* back on all CPUs (see place()) */

	if (me >= 2) {			/* a reserve thread; its summoner counted it in r.outside */
		sem_wait(&r.standby);
		if (done())
			return NULL;
		counted = true;
	} else if (me == 0) {		/* the first holder: see run() */
		place(me, true);
		sem_wait(&r.go);
	} else {			/* the first spinner: see run() */
		place(me, true);
		while (!atomic_load(&r.started) && !done())
			sched_yield();
	}
	while (!done()) {
		if (counted)
			atomic_fetch_sub(&r.outside, 1);
		counted = false;
		lk_mutex_lock(&r.m);
		atomic_store(&r.holder, me);
		unsigned long n = atomic_fetch_add(&r.acq, 1) + 1;

		if (n >= CAP)
			atomic_store(&r.stop, 1);
		if (me < 2 && !placed && n >= 10) {
			place(me, false);
			placed = true;
		}
		if (atomic_load(&r.h_seen) && !atomic_load(&r.w_done))
			atomic_fetch_add(&r.after_h, 1);
		/* the first critical section: W parks behind us meanwhile (see run()) */
		while (!atomic_load(&r.started) && !done())
			sched_yield();
		/* the critical section: until another rhythm thread spins for the lock */
		for (unsigned polls = 0, stuck = 0;; polls++) {
			uint32_t v = word();

			if (v & LK_MUTEX_OWED_MASK) {		/* W is owed the lock: unlock now */
				atomic_store(&r.h_seen, 1);
				break;
			}
			if ((v & LK_MUTEX_SPINNING) || done())
				break;
			/* nobody on the way to lock() and nobody spinning: they parked */
			if (atomic_load(&r.outside) == 0 && ++stuck == SUMMON_POLLS &&
			    atomic_load(&r.summoned) < NSTANDBY) {
				atomic_fetch_add(&r.summoned, 1);
				atomic_fetch_add(&r.outside, 1);
				sem_post(&r.standby);
				stuck = 0;
			}
			/* nobody can come (no reserve left), or a thread on its way stalled for seconds */
			if ((stuck >= BREAK_POLLS && atomic_load(&r.summoned) == NSTANDBY) ||
			    polls == GIVE_UP_POLLS) {
				atomic_fetch_add(&r.breaks, 1);
				break;
			}
			lk_cpu_relax();
		}
		atomic_store(&r.holder, NONE);
		atomic_fetch_add(&r.outside, 1);
		counted = true;
		CHECK_EQ(lk_mutex_unlock(&r.m), 0);
		/* call lock again only once another thread holds it */
		for (unsigned polls = 0; !done(); polls++) {
			int h = atomic_load(&r.holder);

			if (h != NONE && h != me)
				break;
			if (polls >= GIVE_UP_POLLS)	/* nobody took it (all others parked) */
				break;
			lk_cpu_relax();
		}
	}
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	atomic_store(&r.w_tid, (int)syscall(SYS_gettid));
	lk_mutex_lock(&r.m);
	atomic_store(&r.holder, W);
	r.w_waited = atomic_load(&r.acq);
	atomic_store(&r.w_done, 1);
	CHECK_EQ(lk_mutex_unlock(&r.m), 0);
	return NULL;
}

/*
 * Returns whether the run tested the rhythm: W was served only after MIN_RHYTHM acquisitions by the
 * rhythm threads. One in which W was owed and served before that (its deadline passed during the
 * set-up: a loaded machine, a sanitizer; beside another test, W was served at the first acquisition
 * in 6 of 10 TSan runs of the policy) proves nothing about the rhythm: it is run again.
 */
#define MIN_RHYTHM 20
#define ATTEMPTS 50	/* an inconclusive run costs a few ms */

static bool run(const char *what, const struct lk_mutex_policy *pol)
{
	struct lk_mutex_policy park_now = *pol, rhythm_pol, def;
	struct lk_mutex_policy set_up = { .spin_min_ns = 10000000, .spin_max_ns = 10000000 };
	pthread_t rt[2 + NSTANDBY], tw;
	int before = lkt_failures, tid;

	lk_mutex_get_policy(&def);
	memset(&r, 0, sizeof(r));
	atomic_store(&r.holder, NONE);
	CHECK_EQ(sem_init(&r.standby, 0, 0), 0);
	CHECK_EQ(sem_init(&r.go, 0, 0), 0);
	for (int i = 0; i < 2 + NSTANDBY; i++)
		CHECK_EQ(pthread_create(&rt[i], NULL, rhythm, (void *)(intptr_t)i), 0);
	/*
	 * Rhythm thread 0 takes the lock; W parks behind it at once (no spinning), its handoff_ns the
	 * policy's; then the spin policy (10 ms, so that a spinner still spins when the holder looks)
	 * and thread 1 spins for the lock: thread 0 sees it, unlocks without waking anybody, thread 1
	 * takes it, and the rhythm runs. Then the policy under test. W's deadline (1 ms by default)
	 * runs from its park, so nothing slow may come between the park and the rhythm: all threads
	 * exist before, and this thread, which a spinner on its CPU can keep off it for milliseconds,
	 * only sets the flag. (When it held the lock itself, W was owed before the rhythm ran in most
	 * runs of the default policy, and got the lock at its unlock: a run that tested nothing.)
	 */
	park_now.spin_min_ns = park_now.spin_max_ns = 0;
	CHECK_EQ(lk_mutex_set_policy(&park_now), 0);
	CHECK_EQ(sem_post(&r.go), 0);
	while (atomic_load(&r.holder) != 0)
		sched_yield();
	CHECK_EQ(pthread_create(&tw, NULL, waiter, NULL), 0);
	while (!(tid = atomic_load(&r.w_tid)) || !(word() & LK_MUTEX_PARKED) || lkt_thread_state(tid) != 'S')
		sched_yield();
	set_up.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;	/* only W is ever owed (see the top) */
	CHECK_EQ(lk_mutex_set_policy(&set_up), 0);
	atomic_store(&r.started, 1);
	while (atomic_load(&r.acq) < 10 && !done())
		sched_yield();
	rhythm_pol = *pol;
	rhythm_pol.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;
	CHECK_EQ(lk_mutex_set_policy(&rhythm_pol), 0);

	pthread_join(tw, NULL);
	atomic_store(&r.stop, 1);
	for (int i = 0; i < NSTANDBY; i++)
		sem_post(&r.standby);
	for (int i = 0; i < 2 + NSTANDBY; i++)
		pthread_join(rt[i], NULL);
	sem_destroy(&r.standby);
	sem_destroy(&r.go);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	if (!atomic_load(&r.w_done))
		fprintf(stderr, "W starved: parked through %lu acquisitions by the alternating threads "
			"(%lu reserve threads called in, %lu broken rhythms)\n", atomic_load(&r.acq),
			atomic_load(&r.summoned), atomic_load(&r.breaks));
	CHECK(atomic_load(&r.w_done));
	CHECK(r.w_waited < CAP);
	CHECK_EQ(atomic_load(&r.after_h), 0);
	CHECK_EQ(word(), 0);
	printf("  %-28s W got the lock after %lu rhythm acquisitions, %lu after it was owed a handoff "
	       "(%lu reserves called in, %lu broken rhythms)\n", what, r.w_waited, atomic_load(&r.after_h),
	       atomic_load(&r.summoned), atomic_load(&r.breaks));
	if (lkt_failures != before)
		fprintf(stderr, "  (in run '%s')\n", what);
	return r.w_waited >= MIN_RHYTHM;
}

/*
 * The policy's runs until one tested the rhythm. One run only with handoff_ns 0 (W is owed at its
 * park, no rhythm), on one CPU (the two rhythm threads cannot alternate) and under an emulator
 * (LOCKLAB_TEST_TIMEOUT_SCALE, set by scripts/check-arm64: its set-up can outlast W's deadline in
 * every run, as it did in test_hook_mutex_rhythm's).
 */
static void run_until_tested(const char *what, const struct lk_mutex_policy *pol)
{
	int a = 0;

	if (pol->handoff_ns == 0 || CPU_COUNT(&cpus) < 2 || lkt_timeout_scale() > 1) {
		run(what, pol);
		return;
	}
	while (!run(what, pol) && ++a < ATTEMPTS)
		fprintf(stderr, "  %s: W was served before the rhythm ran %d acquisitions: again\n", what,
			MIN_RHYTHM);
	if (a == ATTEMPTS)
		fprintf(stderr, "  %s: no run in %d reached the rhythm before W was owed\n", what, ATTEMPTS);
	CHECK(a < ATTEMPTS);
}

int main(void)
{
	struct lk_mutex_policy def, p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
	lkt_watchdog(lkt_sanitized() ? 240 : 120);
	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 10000000;
	run_until_tested("spin 10 ms (the issue's)", &p);
	run_until_tested("default policy", &def);
	p = def;
	p.handoff_ns = 0;
	run_until_tested("handoff_ns 0", &p);	/* W owed at its park: the next unlock must serve it */
	p = def;
	p.spin_min_ns = p.spin_max_ns = 10000000;
	p.handoff_ns = 50000000;	/* the rhythm runs well before W's deadline */
	run_until_tested("spin 10 ms, handoff 50 ms", &p);
	return lkt_done("test_mutex_starvation");
}
