/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_handoff.c - lk_mutex liveness.
 *
 * 1. No starvation: "hog" threads re-lock in a tight loop, holding the lock almost all the time; a
 *    waiter calls lk_mutex_lock() once. Without the handoff a waiter can lose every race for the
 *    lock; with it, once it has waited past handoff_ns the unlocker hands the lock over. We assert
 *    the waiter gets in at all (the watchdog turns "never" into a failure), over many rounds, with
 *    the default policy and with spinning disabled. Most rounds do not need the handoff: the waiter
 *    finds the lock free or is woken by a plain unlock and wins (measured with the statistics
 *    build: the waiter was owed in 6-19 of 50 default rounds and 3-12 of 50 without spinning, and
 *    in 1 of 170 one-hog rounds). So the hogs count the rounds in which they saw a waiter owed
 *    (LK_MUTEX_OWED_MASK) while holding the lock (fewer than there were: a waiter owed between two
 *    critical sections is served at the next unlock unseen), and each policy runs more rounds (up
 *    to STARVE_ROUNDS_MAX) until there was one: otherwise the handoff was not exercised at all.
 * 2. No lost wakeup: many threads, few CPUs, lock/unlock in a loop with tiny critical sections so
 *    that threads park and are unparked constantly; exact count, no hang, no stale bits at the end.
 *    Run with several policies (default, no spinning, long spinning, always handing off).
 * 3. Timed waiters mixed with untimed ones: timeouts clean up PARKED, nobody is left asleep.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lktest.h"
#include "locklab/mutex.h"
#include "locklab/relax.h"

static uint32_t word(lk_mutex_t *m)
{
	return atomic_load_explicit(&m->word, memory_order_relaxed);
}

/* ---- 1. starvation ----------------------------------------------------------------------------- */

struct starve {
	lk_mutex_t m;
	atomic_bool stop;
	atomic_uint hogs_in;		/* hogs that have taken the lock at least once this round */
	uint64_t hog_ops;		/* protected by m */
	atomic_bool owed_seen;		/* a hog saw a waiter owed the lock */
};

static void *hog(void *arg)
{
	struct starve *s = arg;
	bool counted = false;

	/* relaxed: a stop flag; the join orders everything that matters */
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		lk_mutex_lock(&s->m);
		if (!counted) {
			counted = true;
			/* relaxed: a progress counter polled by the main thread */
			atomic_fetch_add_explicit(&s->hogs_in, 1, memory_order_relaxed);
		}
		s->hog_ops++;
		/* relaxed (both): observing a bit; a count read after the join */
		if (atomic_load_explicit(&s->m.word, memory_order_relaxed) & LK_MUTEX_OWED_MASK)
			atomic_store_explicit(&s->owed_seen, true, memory_order_relaxed);
		for (int i = 0; i < 50; i++)	/* hold it: the lock is free only between unlock and lock */
			lk_cpu_relax();
		lk_mutex_unlock(&s->m);
	}
	return NULL;
}

/* One round; returns whether a hog saw a waiter owed the lock (the handoff was exercised). */
static bool starvation_round(unsigned nhogs)
{
	struct starve s = { .m = LK_MUTEX_INITIALIZER };
	pthread_t t[4];

	for (unsigned i = 0; i < nhogs; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, hog, &s), 0);
	/* relaxed: progress polling */
	while (atomic_load_explicit(&s.hogs_in, memory_order_relaxed) < nhogs)
		sched_yield();
	lk_mutex_lock(&s.m);		/* must return: the watchdog fails the test otherwise */
	uint64_t seen = s.hog_ops;
	CHECK(seen > 0);
	atomic_store_explicit(&s.stop, true, memory_order_relaxed);
	lk_mutex_unlock(&s.m);
	for (unsigned i = 0; i < nhogs; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(word(&s.m), 0);
	return atomic_load_explicit(&s.owed_seen, memory_order_relaxed);	/* relaxed: after join */
}

#define STARVE_ROUNDS_MAX 1000

/* `rounds` rounds, and more until one of them exercised the handoff. */
static void starvation_rounds(const char *what, unsigned rounds)
{
	unsigned r, owed = 0;

	for (r = 0; r < rounds || (!owed && r < STARVE_ROUNDS_MAX); r++)
		owed += starvation_round(1 + r % 3);
	if (!owed)
		fprintf(stderr, "starvation (%s): no waiter was owed the lock in %u rounds\n", what, r);
	CHECK(owed > 0);
	printf("  starvation, %s: %u rounds, a waiter owed the lock in %u\n", what, r, owed);
}

static void test_starvation(void)
{
	struct lk_mutex_policy def, p;
	unsigned rounds = lkt_sanitized() ? 10 : 50;

	lk_mutex_get_policy(&def);
	starvation_rounds("default policy", rounds);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 0;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	starvation_rounds("no spinning", rounds);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
}

/* ---- 2. no lost wakeup -------------------------------------------------------------------------- */

struct churn {
	lk_mutex_t m;
	uint64_t counter;		/* protected by m */
	unsigned iters;
	bool timed;
	_Atomic uint64_t timeouts;
	atomic_uint ready;		/* start barrier: everybody contends from the first iteration */
	unsigned nthreads;
};

static void *churn_worker(void *arg)
{
	struct churn *c = arg;
	uint64_t mine = 0;

	/* relaxed: a start barrier for overlap only; the mutex orders the data */
	atomic_fetch_add_explicit(&c->ready, 1, memory_order_relaxed);
	while (atomic_load_explicit(&c->ready, memory_order_relaxed) < c->nthreads)
		sched_yield();
	for (unsigned i = 0; i < c->iters; i++) {
		if (c->timed && (i & 3) == 0) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 20000;	/* 20 us: often times out while parked */
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			int r = lk_mutex_timedlock(&c->m, CLOCK_MONOTONIC, &ts);
			if (r == ETIMEDOUT) {
				mine++;
				continue;
			}
			CHECK_EQ(r, 0);
		} else {
			lk_mutex_lock(&c->m);
		}
		c->counter++;
		if ((i & 15) == 0)
			for (int k = 0; k < 20; k++)
				lk_cpu_relax();
		CHECK_EQ(lk_mutex_unlock(&c->m), 0);
	}
	/* relaxed: summed after join */
	atomic_fetch_add_explicit(&c->timeouts, mine, memory_order_relaxed);
	return NULL;
}

static void churn(const char *what, const struct lk_mutex_policy *p, unsigned nthreads, bool timed,
		  unsigned iters)
{
	struct churn c = {
		.m = LK_MUTEX_INITIALIZER,
		.iters = lkt_sanitized() ? iters / 3 : iters,
		.timed = timed,
		.nthreads = nthreads,
	};
	pthread_t t[32];
	struct lk_mutex_policy def;
	int before = lkt_failures;

	lk_mutex_get_policy(&def);
	if (p)
		CHECK_EQ(lk_mutex_set_policy(p), 0);
	for (unsigned i = 0; i < nthreads; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, churn_worker, &c), 0);
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	/* exactly one increment per successful acquisition */
	CHECK_EQ(c.counter + atomic_load_explicit(&c.timeouts, memory_order_relaxed), (uint64_t)nthreads * c.iters);
	CHECK_EQ(word(&c.m), 0);
	CHECK_EQ(lk_mutex_destroy(&c.m), 0);
	lk_mutex_set_policy(&def);
	if (lkt_failures != before)
		fprintf(stderr, "  (in churn run '%s', %u threads%s)\n", what, nthreads, timed ? ", timed" : "");
}

int main(void)
{
	struct lk_mutex_policy def, p;
	unsigned many = lkt_sanitized() ? 8 : 24;

	lkt_watchdog(lkt_sanitized() ? 150 : 60);
	test_starvation();

	lk_mutex_get_policy(&def);
	churn("default", NULL, many, false, 30000);
	churn("default", NULL, many, true, 30000);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 0;
	churn("no spinning", &p, many, false, 30000);
	churn("no spinning", &p, many, true, 30000);
	p = def;
	p.handoff_ns = 0;
	churn("always handoff", &p, many, false, 2000);
	churn("always handoff", &p, many, true, 2000);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 1000000;	/* spin long: unlocks skip the wake all the time */
	churn("long spin", &p, many, true, 30000);
	return lkt_done("test_mutex_handoff");
}
