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
 *    word (the OWED count, LK_MUTEX_OWED_MASK); from the first time a rhythm thread sees that count in its
 *    critical section, at most 2 acquisitions by A or B may start before W's (0 when W is the queue
 *    head; A and B can be queued ahead of W only after a broken rhythm). Timing decides only when
 *    W records itself (its deadline and its wake-up), never how many others pass it afterwards.
 *
 * Set-up: the main thread holds the lock while W calls lock with spinning disabled, so W parks at
 * once (confirmed: its /proc state is S, asleep in the futex). A then spins for the lock (S set),
 * the main thread unlocks - no wake, A takes it - and the rhythm runs: A and B hand the lock to
 * each other through S. Policies: the spin_min = spin_max = 10 ms (the rhythm then survives
 * preemptions shorter than 10 ms), the default, handoff_ns = 0 and a 50 ms handoff_ns (the rhythm runs
 * long before W's deadline). Preemptions long enough to make a spinner give up are bridged by reserve
 * threads (see rhythm()); tests/hooks/test_hook_mutex_rhythm.c holds the spinner at a pause point
 * instead, which no preemption can break.
 */
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

	if (me >= 2) {			/* a reserve thread; its summoner counted it in r.outside */
		sem_wait(&r.standby);
		if (done())
			return NULL;
		counted = true;
	}
	while (!done()) {
		if (counted)
			atomic_fetch_sub(&r.outside, 1);
		counted = false;
		lk_mutex_lock(&r.m);
		atomic_store(&r.holder, me);
		if (atomic_fetch_add(&r.acq, 1) + 1 >= CAP)
			atomic_store(&r.stop, 1);
		if (atomic_load(&r.h_seen) && !atomic_load(&r.w_done))
			atomic_fetch_add(&r.after_h, 1);
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

static void run(const char *what, const struct lk_mutex_policy *pol)
{
	struct lk_mutex_policy park_now = *pol, def;
	struct lk_mutex_policy set_up = { .spin_min_ns = 10000000, .spin_max_ns = 10000000 };
	pthread_t rt[2 + NSTANDBY], tw;
	int before = lkt_failures, tid;

	lk_mutex_get_policy(&def);
	memset(&r, 0, sizeof(r));
	atomic_store(&r.holder, NONE);
	CHECK_EQ(sem_init(&r.standby, 0, 0), 0);
	/* W parks at once (no spinning), its handoff_ns the policy's */
	park_now.spin_min_ns = park_now.spin_max_ns = 0;
	CHECK_EQ(lk_mutex_set_policy(&park_now), 0);
	lk_mutex_lock(&r.m);
	CHECK_EQ(pthread_create(&tw, NULL, waiter, NULL), 0);
	while (!(tid = atomic_load(&r.w_tid)) || !(word() & LK_MUTEX_PARKED) || lkt_thread_state(tid) != 'S')
		sched_yield();
	/*
	 * Rhythm thread 0 spins for the lock (10 ms budget, so that it still spins when we look); our
	 * unlock then wakes nobody and it takes the lock: the rhythm starts. Then the policy under test.
	 */
	set_up.handoff_ns = pol->handoff_ns;
	CHECK_EQ(lk_mutex_set_policy(&set_up), 0);
	CHECK_EQ(pthread_create(&rt[0], NULL, rhythm, (void *)(intptr_t)0), 0);
	while (!(word() & LK_MUTEX_SPINNING) && !(word() & LK_MUTEX_OWED_MASK))
		sched_yield();
	for (int i = 1; i < 2 + NSTANDBY; i++)
		CHECK_EQ(pthread_create(&rt[i], NULL, rhythm, (void *)(intptr_t)i), 0);
	CHECK_EQ(lk_mutex_unlock(&r.m), 0);
	while (atomic_load(&r.acq) < 10 && !done())
		sched_yield();
	CHECK_EQ(lk_mutex_set_policy(pol), 0);

	pthread_join(tw, NULL);
	atomic_store(&r.stop, 1);
	for (int i = 0; i < NSTANDBY; i++)
		sem_post(&r.standby);
	for (int i = 0; i < 2 + NSTANDBY; i++)
		pthread_join(rt[i], NULL);
	sem_destroy(&r.standby);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	if (!atomic_load(&r.w_done))
		fprintf(stderr, "W starved: parked through %lu acquisitions by the alternating threads "
			"(%lu reserve threads called in, %lu broken rhythms)\n", atomic_load(&r.acq),
			atomic_load(&r.summoned), atomic_load(&r.breaks));
	CHECK(atomic_load(&r.w_done));
	CHECK(r.w_waited < CAP);
	CHECK(atomic_load(&r.after_h) <= 2);
	CHECK_EQ(word(), 0);
	printf("  %-28s W got the lock after %lu rhythm acquisitions, %lu after it was owed a handoff "
	       "(%lu reserves called in, %lu broken rhythms)\n", what, r.w_waited, atomic_load(&r.after_h),
	       atomic_load(&r.summoned), atomic_load(&r.breaks));
	if (lkt_failures != before)
		fprintf(stderr, "  (in run '%s')\n", what);
}

int main(void)
{
	struct lk_mutex_policy def, p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	lkt_watchdog(lkt_sanitized() ? 240 : 120);
	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 10000000;
	run("spin 10 ms (the issue's)", &p);
	run("default policy", &def);
	p = def;
	p.handoff_ns = 0;
	run("handoff_ns 0", &p);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 10000000;
	p.handoff_ns = 50000000;	/* the rhythm runs well before W's deadline */
	run("spin 10 ms, handoff 50 ms", &p);
	return lkt_done("test_mutex_starvation");
}
