/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_api.c - lk_mutex API semantics: static initializer, init/destroy (EINVAL, EBUSY),
 * trylock (EBUSY), unlock misuse (EPERM), timedlock argument checks (EINVAL) and timeouts
 * (ETIMEDOUT at once for a past deadline, after the deadline for a future one, on both clocks),
 * timedlock success when the owner releases, the policy setter's validation, and mutual exclusion
 * under each policy extreme (no spinning, always-handoff, long spinning).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "lktest.h"
#include "locklab/mutex.h"

static lk_mutex_t smutex = LK_MUTEX_INITIALIZER;

static uint32_t word(lk_mutex_t *m)
{
	return atomic_load_explicit(&m->word, memory_order_relaxed);
}

static void *hold_then_release(void *arg)
{
	lk_mutex_t *m = arg;

	/* the main thread holds m; we wait for it to hand over ownership by a release we can see */
	lk_mutex_lock(m);
	lk_mutex_unlock(m);
	return NULL;
}

/* Holds m until the main thread is visibly waiting for it (spinning or parked), then unlocks. */
static void *unlock_when_waited(void *arg)
{
	lk_mutex_t *m = arg;

	while (!(word(m) & (LK_MUTEX_PARKED | LK_MUTEX_SPINNING)))
		sched_yield();
	CHECK_EQ(lk_mutex_unlock(m), 0);
	return NULL;
}

static void test_basic(void)
{
	lk_mutex_t m;

	CHECK_EQ(word(&smutex), 0);
	lk_mutex_lock(&smutex);
	CHECK_EQ(word(&smutex), LK_MUTEX_LOCKED);
	CHECK_EQ(lk_mutex_trylock(&smutex), EBUSY);
	CHECK_EQ(lk_mutex_destroy(&smutex), EBUSY);
	CHECK_EQ(lk_mutex_unlock(&smutex), 0);
	CHECK_EQ(lk_mutex_unlock(&smutex), EPERM);
	CHECK_EQ(word(&smutex), 0);
	CHECK_EQ(lk_mutex_destroy(&smutex), 0);

	CHECK_EQ(lk_mutex_init(NULL), EINVAL);
	CHECK_EQ(lk_mutex_destroy(NULL), EINVAL);
	CHECK_EQ(lk_mutex_init(&m), 0);
	CHECK_EQ(lk_mutex_trylock(&m), 0);
	CHECK_EQ(lk_mutex_trylock(&m), EBUSY);
	CHECK_EQ(lk_mutex_destroy(&m), EBUSY);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(lk_mutex_unlock(&m), EPERM);
	CHECK_EQ(lk_mutex_destroy(&m), 0);

	/*
	 * a mutex with waiters recorded is busy too; trylock of a free one with stale bits works. PARKED
	 * carries the fork generation that wrote it (GEN): this process never forked, so it is 1.
	 */
	const uint32_t gen1 = 1u << __builtin_ctz(LK_MUTEX_GEN_MASK);

	atomic_store_explicit(&m.word, LK_MUTEX_PARKED | gen1, memory_order_relaxed);
	CHECK_EQ(lk_mutex_destroy(&m), EBUSY);
	CHECK_EQ(lk_mutex_trylock(&m), 0);
	CHECK_EQ(word(&m), LK_MUTEX_LOCKED | LK_MUTEX_PARKED | gen1);
	CHECK_EQ(lk_mutex_unlock(&m), 0);	/* slow path: nobody parked, clears P */
	CHECK_EQ(word(&m), 0);
	/* PARKED of another generation (an ancestor's waiters, after a fork) is stale: nobody waits */
	atomic_store_explicit(&m.word, LK_MUTEX_PARKED | (gen1 << 1), memory_order_relaxed);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	CHECK_EQ(lk_mutex_trylock(&m), 0);
	CHECK_EQ(lk_mutex_unlock(&m), 0);	/* slow path: drops the stale P */
	CHECK_EQ(word(&m), 0);

	/* the ownership passes to another thread and back */
	pthread_t t;
	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&t, NULL, hold_then_release, &m), 0);
	while (!(word(&m) & (LK_MUTEX_PARKED | LK_MUTEX_SPINNING)))
		sched_yield();
	lk_mutex_unlock(&m);
	pthread_join(t, NULL);
	CHECK_EQ(word(&m), 0);
}

static void test_timedlock(clockid_t clock)
{
	lk_mutex_t m = LK_MUTEX_INITIALIZER;
	struct timespec bad[] = { { 0, -1 }, { 0, 1000000000L }, { 5, 2000000000L } };
	struct timespec ts;

	/* EINVAL is checked first, on a free mutex too, and leaves the mutex alone */
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(lk_mutex_timedlock(&m, clock, &bad[i]), EINVAL);
		CHECK_EQ(word(&m), 0);
	}
	ts = lkt_deadline_in(clock, 1000000000);
	CHECK_EQ(lk_mutex_timedlock(NULL, clock, &ts), EINVAL);
	CHECK_EQ(lk_mutex_timedlock(&m, clock, NULL), EINVAL);
	CHECK_EQ(lk_mutex_timedlock(&m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	CHECK_EQ(word(&m), 0);

	/* free: acquired even with a past deadline */
	ts = (struct timespec){ 0, 0 };
	CHECK_EQ(lk_mutex_timedlock(&m, clock, &ts), 0);
	/* held, past deadline: ETIMEDOUT at once (the watchdog catches a hang) */
	CHECK_EQ(lk_mutex_timedlock(&m, clock, &ts), ETIMEDOUT);
	ts = lkt_deadline_in(clock, -1000000);
	CHECK_EQ(lk_mutex_timedlock(&m, clock, &ts), ETIMEDOUT);
	CHECK_EQ(word(&m), LK_MUTEX_LOCKED);

	/* held, future deadline: ETIMEDOUT, not before the deadline */
	ts = lkt_deadline_in(clock, 30000000);
	CHECK_EQ(lk_mutex_timedlock(&m, clock, &ts), ETIMEDOUT);
	CHECK(lkt_now_ns(clock) >= (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	/* the timed-out waiter was the last one: it must not leave PARKED or SPINNING behind */
	CHECK_EQ(word(&m), LK_MUTEX_LOCKED);

	/* released by its owner while we wait: acquired */
	pthread_t t;
	CHECK_EQ(pthread_create(&t, NULL, unlock_when_waited, &m), 0);
	ts = lkt_deadline_in(clock, 60ll * 1000000000);
	CHECK_EQ(lk_mutex_timedlock(&m, clock, &ts), 0);
	pthread_join(t, NULL);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(word(&m), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
}

static void test_policy(void)
{
	struct lk_mutex_policy def, p;

	CHECK_EQ(lk_mutex_get_policy(NULL), EINVAL);
	CHECK_EQ(lk_mutex_set_policy(NULL), EINVAL);
	CHECK_EQ(lk_mutex_get_policy(&def), 0);
	CHECK_EQ(def.handoff_ns, 1000000);
	CHECK(def.spin_min_ns <= def.spin_max_ns);

	p = def;
	p.spin_min_ns = p.spin_max_ns + 1;
	CHECK_EQ(lk_mutex_set_policy(&p), EINVAL);
	p = def;
	p.spin_max_ns = LK_MUTEX_SPIN_MAX_NS_LIMIT + 1;
	CHECK_EQ(lk_mutex_set_policy(&p), EINVAL);
	p = def;
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT + 1;
	CHECK_EQ(lk_mutex_set_policy(&p), EINVAL);
	/* rejected policies change nothing */
	CHECK_EQ(lk_mutex_get_policy(&p), 0);
	CHECK_EQ(p.spin_min_ns, def.spin_min_ns);
	CHECK_EQ(p.spin_max_ns, def.spin_max_ns);
	CHECK_EQ(p.handoff_ns, def.handoff_ns);

	p.spin_min_ns = 0;
	p.spin_max_ns = 0;
	p.handoff_ns = 0;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	CHECK_EQ(lk_mutex_get_policy(&p), 0);
	CHECK_EQ(p.spin_max_ns, 0);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	/* the spinner's ask: off by default; 0 and 1 only, a rejected value changes nothing */
	CHECK_EQ(lk_mutex_get_ask(), 0);
	CHECK_EQ(lk_mutex_set_ask(2), EINVAL);
	CHECK_EQ(lk_mutex_set_ask(-1), EINVAL);
	CHECK_EQ(lk_mutex_get_ask(), 0);
	CHECK_EQ(lk_mutex_set_ask(1), 0);
	CHECK_EQ(lk_mutex_get_ask(), 1);
	CHECK_EQ(lk_mutex_set_ask(0), 0);
	CHECK_EQ(lk_mutex_get_ask(), 0);
}

/* ---- mutual exclusion under each policy extreme ---------------------------------------------- */

struct excl {
	lk_mutex_t m;
	uint64_t counter;	/* plain: protected by m (TSan checks that claim) */
	unsigned iters;
	int threads;
	_Atomic int gate;	/* the workers' common start (lkt_gate_pass) */
};

static void *excl_worker(void *arg)
{
	struct excl *e = arg;

	lkt_gate_pass(&e->gate, e->threads);
	for (unsigned i = 0; i < e->iters; i++) {
		if ((i & 7) == 0 && lk_mutex_trylock(&e->m) == 0) {
			e->counter++;
		} else if ((i & 7) == 1) {
			struct timespec ts = lkt_deadline_in(CLOCK_MONOTONIC, 60ll * 1000000000);

			CHECK_EQ(lk_mutex_timedlock(&e->m, CLOCK_MONOTONIC, &ts), 0);
			e->counter++;
		} else {
			lk_mutex_lock(&e->m);
			e->counter++;
		}
		CHECK_EQ(lk_mutex_unlock(&e->m), 0);
	}
	return NULL;
}

static void test_exclusion(const char *what, const struct lk_mutex_policy *p)
{
	enum { NT = 6 };
	struct excl e = { .m = LK_MUTEX_INITIALIZER, .iters = lkt_sanitized() ? 20000 : 50000,
			  .threads = NT };
	pthread_t t[NT];
	struct lk_mutex_policy def;
	uint64_t expect;
	unsigned tries = 0;

	lk_mutex_get_policy(&def);
	if (p)
		CHECK_EQ(lk_mutex_set_policy(p), 0);
	for (int i = 0; i < NT; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, excl_worker, &e), 0);
	for (int i = 0; i < NT; i++)
		pthread_join(t[i], NULL);
	/* trylocks may fail; every other iteration counts exactly once */
	expect = (uint64_t)NT * e.iters;
	for (unsigned i = 0; i < e.iters; i++)
		tries += (i & 7) == 0;
	CHECK(e.counter <= expect && e.counter >= expect - (uint64_t)NT * tries);
	/* quiescent: no stale bits (a stale PARKED or SPINNING would be a protocol bug) */
	CHECK_EQ(word(&e.m), 0);
	CHECK_EQ(lk_mutex_destroy(&e.m), 0);
	lk_mutex_set_policy(&def);
	if (lkt_failures)
		fprintf(stderr, "  (in exclusion run '%s')\n", what);
}

int main(void)
{
	struct lk_mutex_policy def, p;

	lkt_watchdog(120);
	test_basic();
	test_timedlock(CLOCK_MONOTONIC);
	test_timedlock(CLOCK_REALTIME);
	test_policy();

	lk_mutex_get_policy(&def);
	test_exclusion("default", NULL);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 0;	/* park at once: exercises the sleeping paths */
	test_exclusion("no spinning", &p);
	p = def;
	p.handoff_ns = 0;			/* every wake is a handoff */
	test_exclusion("always handoff", &p);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 1000000;	/* spin long: the spinner nearly always wins */
	test_exclusion("long spin", &p);
	return lkt_done("test_mutex_api");
}
