/* SPDX-License-Identifier: MIT */
/*
 * tests/test_lockref.c - lk_lockref semantics, table-driven over every operation x start state
 * (0, 1, 5, dead) x retry mode (lock only, 1, default, unbounded, per-lockref override): results and
 * counts must be identical in every mode, as the kernel's are with and without CMPXCHG_LOCKREF.
 * Plus: put_or_lock returning with the lock held, mark_dead/set_count need the lock, EINVAL/EPERM
 * errors, statistics (fallback on a held lock, lockless disabled), a concurrent get/put stress that
 * must not lose a count in any mode, and a forced-fallback test (retry limit 1 under contention:
 * fallbacks must be counted).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <locklab/lockref.h>

#include "lktest.h"

enum op { GET, GET_NZ, GET_ND, PUT_NZ, PUT_RET, PUT_OR_LOCK };
static const char *const op_name[] = { "get", "get_not_zero", "get_not_dead", "put_not_zero", "put_return",
				       "put_or_lock" };

struct tcase {
	int start;
	enum op op;
	int ret;	/* bool ops: 0/1; put_return: the value; put_or_lock: 1, or 0 = returned locked */
	int end;
};

#define DEAD LK_LOCKREF_DEAD
static const struct tcase cases[] = {
	{ 0, GET, 0, 1 },	{ 1, GET, 0, 2 },	{ 5, GET, 0, 6 },	{ DEAD, GET, 0, DEAD + 1 },
	{ 0, GET_NZ, 0, 0 },	{ 1, GET_NZ, 1, 2 },	{ 5, GET_NZ, 1, 6 },	{ DEAD, GET_NZ, 0, DEAD },
	{ 0, GET_ND, 1, 1 },	{ 1, GET_ND, 1, 2 },	{ 5, GET_ND, 1, 6 },	{ DEAD, GET_ND, 0, DEAD },
	{ 0, PUT_NZ, 0, 0 },	{ 1, PUT_NZ, 0, 1 },	{ 5, PUT_NZ, 1, 4 },	{ DEAD, PUT_NZ, 0, DEAD },
	{ 0, PUT_RET, -1, 0 },	{ 1, PUT_RET, 0, 0 },	{ 5, PUT_RET, 4, 4 },	{ DEAD, PUT_RET, -1, DEAD },
	{ 0, PUT_OR_LOCK, 0, 0 }, { 1, PUT_OR_LOCK, 0, 1 }, { 5, PUT_OR_LOCK, 1, 4 },
	{ DEAD, PUT_OR_LOCK, 0, DEAD },
};

static int run_op(struct lk_lockref *lr, enum op op)
{
	switch (op) {
	case GET: lk_lockref_get(lr); return 0;
	case GET_NZ: return lk_lockref_get_not_zero(lr);
	case GET_ND: return lk_lockref_get_not_dead(lr);
	case PUT_NZ: return lk_lockref_put_not_zero(lr);
	case PUT_RET: return lk_lockref_put_return(lr);
	case PUT_OR_LOCK: {
		bool r = lk_lockref_put_or_lock(lr);

		if (!r)	/* must have returned with the lock held: unlock succeeds exactly then */
			CHECK_EQ(lk_lockref_unlock(lr), 0);
		CHECK_EQ(lk_lockref_unlock(lr), EPERM);
		return r;
	}
	}
	return -2;
}

/* retry modes: global limit to set, per-lockref limit (-1 = none) */
static const struct { const char *name; int global, local; } modes[] = {
	{ "lock only", 0, -1 },
	{ "limit 1", 1, -1 },
	{ "default", LK_LOCKREF_RETRY_DEFAULT, -1 },
	{ "unbounded", LK_LOCKREF_RETRY_UNBOUNDED, -1 },
	{ "per-lockref 0 over global 100", 100, 0 },
	{ "per-lockref 7 over global 0", 0, 7 },
};

static void test_table(void)
{
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		CHECK_EQ(lk_lockref_set_global_retry_limit(modes[m].global), 0);
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			const struct tcase *c = &cases[i];
			struct lk_lockref lr;
			int ret;

			lk_lockref_init(&lr, c->start);
			if (modes[m].local >= 0)
				CHECK_EQ(lk_lockref_set_retry_limit(&lr, modes[m].local), 0);
			int want_ret = c->ret, want_end = c->end;

			/* without a lockless path put_return always says "take the lock" (the kernel
			 * without CMPXCHG_LOCKREF does the same) */
			if (c->op == PUT_RET && lk_lockref_retry_limit(&lr) == 0) {
				want_ret = -1;
				want_end = c->start;
			}
			ret = run_op(&lr, c->op);
			if (ret != want_ret || lk_lockref_count(&lr) != want_end) {
				fprintf(stderr, "%s: %s from %d: ret %d want %d, count %d want %d\n", modes[m].name,
					op_name[c->op], c->start, ret, want_ret, lk_lockref_count(&lr), want_end);
				lkt_failures++;
			}
		}
	}
	CHECK_EQ(lk_lockref_set_global_retry_limit(LK_LOCKREF_RETRY_DEFAULT), 0);
}

static void test_errors_and_dead(void)
{
	struct lk_lockref lr = LK_LOCKREF_INIT(3);

	CHECK_EQ(lk_lockref_count(&lr), 3);
	CHECK_EQ(lk_lockref_retry_limit(&lr), LK_LOCKREF_RETRY_DEFAULT);
	CHECK_EQ(lk_lockref_set_retry_limit(&lr, -1), EINVAL);
	CHECK_EQ(lk_lockref_retry_limit(&lr), LK_LOCKREF_RETRY_DEFAULT);
	CHECK_EQ(lk_lockref_set_global_retry_limit(-5), EINVAL);
	CHECK_EQ(lk_lockref_global_retry_limit(), LK_LOCKREF_RETRY_DEFAULT);
	CHECK_EQ(lk_lockref_set_retry_limit(&lr, 15), 0);
	CHECK_EQ(lk_lockref_retry_limit(&lr), 15);
	CHECK_EQ(lk_lockref_set_global_retry_limit(50), 0);
	CHECK_EQ(lk_lockref_retry_limit(&lr), 15);	/* the override wins */
	lk_lockref_use_global_retry_limit(&lr);
	CHECK_EQ(lk_lockref_retry_limit(&lr), 50);
	CHECK_EQ(lk_lockref_set_global_retry_limit(LK_LOCKREF_RETRY_DEFAULT), 0);

	CHECK_EQ(lk_lockref_unlock(&lr), EPERM);	/* not held */
	CHECK_EQ(lk_lockref_mark_dead(&lr), EPERM);	/* needs the lock */
	CHECK_EQ(lk_lockref_set_count_locked(&lr, 9), EPERM);
	CHECK(!lk_lockref_is_dead(&lr));
	CHECK_EQ(lk_lockref_count(&lr), 3);

	lk_lockref_lock(&lr);
	CHECK_EQ(lk_lockref_set_count_locked(&lr, 9), 0);
	CHECK_EQ(lk_lockref_count(&lr), 9);
	CHECK_EQ(lk_lockref_mark_dead(&lr), 0);
	CHECK_EQ(lk_lockref_unlock(&lr), 0);
	CHECK(lk_lockref_is_dead(&lr));
	CHECK_EQ(lk_lockref_count(&lr), LK_LOCKREF_DEAD);
	CHECK(!lk_lockref_get_not_dead(&lr));
	CHECK(!lk_lockref_get_not_zero(&lr));
	CHECK_EQ(lk_lockref_put_return(&lr), -1);
	CHECK_EQ(lk_lockref_count(&lr), LK_LOCKREF_DEAD);
}

static void test_stats_single(void)
{
	struct lk_lockref lr = LK_LOCKREF_INIT(4);
	struct lk_lockref_stats s;

	lk_lockref_stats_reset();
	/* lock held: the lockless path must not run; put_return reports failure without locking */
	lk_lockref_lock(&lr);
	CHECK_EQ(lk_lockref_put_return(&lr), -1);
	CHECK_EQ(lk_lockref_count(&lr), 4);
	lk_lockref_stats_get(&s);
	CHECK_EQ(s.fallback_locked, 1);
	CHECK_EQ(s.cas_failures, 0);
	CHECK_EQ(lk_lockref_unlock(&lr), 0);

	/* retry limit 0: straight to the lock, counted */
	CHECK_EQ(lk_lockref_set_retry_limit(&lr, 0), 0);
	lk_lockref_get(&lr);
	CHECK_EQ(lk_lockref_put_return(&lr), -1);	/* no lockless path: the caller must lock */
	lk_lockref_stats_get(&s);
	CHECK_EQ(s.lockless_disabled, 2);
	CHECK_EQ(lk_lockref_count(&lr), 5);
	CHECK(lk_lockref_stats_self()->lockless_disabled == 2);

	/* uncontended lockless ops count nothing */
	lk_lockref_stats_reset();
	lk_lockref_use_global_retry_limit(&lr);
	lk_lockref_get(&lr);
	CHECK_EQ(lk_lockref_put_return(&lr), 5);
	lk_lockref_stats_get(&s);
	CHECK_EQ(s.cas_failures + s.fallback_locked + s.fallback_retry + s.lockless_disabled, 0);
}

/* ---- concurrency --------------------------------------------------------------------------------- */

struct shared {
	struct lk_lockref lr;
	unsigned iters;
	_Atomic bool stop;
	_Atomic uint64_t fallbacks;	/* sum of fallback_retry over threads */
	_Atomic uint64_t failures;
	_Atomic int ready;		/* start gate: threads overlap instead of running one after another */
};

static void start_gate(struct shared *s, int n)
{
	/* relaxed: only a rendezvous; nothing is published through it */
	atomic_fetch_add_explicit(&s->ready, 1, memory_order_relaxed);
	while (atomic_load_explicit(&s->ready, memory_order_relaxed) < n)
		sched_yield();
}

/* One reference taken and dropped through a rotating choice of operations; the base count is 1. */
static void get_put(struct lk_lockref *lr, unsigned i)
{
	switch (i % 3) {
	case 0: lk_lockref_get(lr); break;
	case 1: CHECK(lk_lockref_get_not_zero(lr)); break;
	default: CHECK(lk_lockref_get_not_dead(lr)); break;
	}
	switch (i % 4) {
	case 0:
		if (lk_lockref_put_return(lr) < 0) {	/* lockless path refused: do it under the lock */
			lk_lockref_lock(lr);
			CHECK(lk_lockref_count(lr) >= 2);
			lk_lockref_set_count_locked(lr, lk_lockref_count(lr) - 1);
			lk_lockref_unlock(lr);
		}
		break;
	case 1:
		CHECK(lk_lockref_put_not_zero(lr));
		break;
	case 2:
		CHECK(lk_lockref_put_or_lock(lr));	/* count >= 2 while we hold a reference */
		break;
	default:
		lk_lockref_lock(lr);	/* a locked-path user, as dput's slow path */
		lk_lockref_set_count_locked(lr, lk_lockref_count(lr) - 1);
		lk_lockref_unlock(lr);
		break;
	}
}

static void *stress_thread(void *arg)
{
	struct shared *s = arg;
	struct lk_lockref_stats st;

	lk_lockref_stats_reset();
	start_gate(s, 4);
	for (unsigned i = 0; i < s->iters; i++)
		get_put(&s->lr, i);
	lk_lockref_stats_get(&st);
	/* relaxed: read after join */
	atomic_fetch_add_explicit(&s->failures, st.cas_failures, memory_order_relaxed);
	return NULL;
}

static void *fallback_thread(void *arg)
{
	struct shared *s = arg;
	const struct lk_lockref_stats *st = lk_lockref_stats_self();
	unsigned i = 0;

	lk_lockref_stats_reset();
	/* relaxed: a stop flag; the counts are read after join */
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		lk_lockref_get(&s->lr);
		CHECK(lk_lockref_put_not_zero(&s->lr));
		if (st->fallback_retry && !(i++ & 63)) {
			atomic_fetch_add_explicit(&s->fallbacks, st->fallback_retry, memory_order_relaxed);
			atomic_store_explicit(&s->stop, true, memory_order_relaxed);
		}
	}
	return NULL;
}

static void test_stress(void)
{
	static const int limits[] = { 0, 1, 15, LK_LOCKREF_RETRY_DEFAULT, LK_LOCKREF_RETRY_UNBOUNDED };
	static struct shared s;
	unsigned iters = lkt_sanitized() ? 60000 : 200000;

	for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
		pthread_t th[4];

		lk_lockref_init(&s.lr, 1);
		CHECK_EQ(lk_lockref_set_retry_limit(&s.lr, limits[k]), 0);
		s.iters = iters;
		atomic_store_explicit(&s.failures, 0, memory_order_relaxed);
		atomic_store_explicit(&s.ready, 0, memory_order_relaxed);
		for (int i = 0; i < 4; i++)
			CHECK_EQ(pthread_create(&th[i], NULL, stress_thread, &s), 0);
		for (int i = 0; i < 4; i++)
			pthread_join(th[i], NULL);
		if (lk_lockref_count(&s.lr) != 1) {
			fprintf(stderr, "stress, retry limit %d: count %d, want 1\n", limits[k],
				lk_lockref_count(&s.lr));
			lkt_failures++;
		}
		CHECK_EQ(lk_lockref_unlock(&s.lr), EPERM);	/* nobody left it locked */
		if (limits[k] == 0)	/* no lockless attempts at all */
			CHECK_EQ(atomic_load_explicit(&s.failures, memory_order_relaxed), 0);
		if (getenv("LKT_VERBOSE"))
			printf("stress limit %d: cas failures %llu\n", limits[k],
			       (unsigned long long)atomic_load_explicit(&s.failures, memory_order_relaxed));
	}
}

/* Retry limit 1 under contention: some operation must give up and fall back (watchdog bounds it). */
static void test_forced_fallback(void)
{
	static struct shared s;
	pthread_t th[3];

	lk_lockref_init(&s.lr, 1);
	CHECK_EQ(lk_lockref_set_retry_limit(&s.lr, 1), 0);
	atomic_store_explicit(&s.stop, false, memory_order_relaxed);
	atomic_store_explicit(&s.fallbacks, 0, memory_order_relaxed);
	for (int i = 0; i < 3; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, fallback_thread, &s), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	CHECK(atomic_load_explicit(&s.fallbacks, memory_order_relaxed) > 0);
	CHECK_EQ(lk_lockref_count(&s.lr), 1);
}

int main(void)
{
	lkt_watchdog(60);
	test_table();
	test_errors_and_dead();
	test_stats_single();
	test_stress();
	test_forced_fallback();
	return lkt_done("test_lockref");
}
