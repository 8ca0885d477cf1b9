/* SPDX-License-Identifier: MIT */
/*
 * tests/test_stress_registry.c - a torture test generated from the algorithm registry.
 *
 * Every available registry entry of opstype `lock` (locklab's mutexes and spinlocks, the baselines, the
 * peers) goes through the same phases, so a lock added to lab/registry.def is covered without touching
 * this file:
 *
 *   trylock   (entries with ops->trylock) trylock on a free lock succeeds; on a lock held by another
 *             thread it returns EBUSY, whether that thread took it with lock() or trylock(); after the
 *             holder's unlock it succeeds again.
 *   pair      2 threads x N iterations; with a trylock, every other acquisition is a trylock loop
 *             (falling back to lock() after 64 failures), so trylock's acquire ordering is exercised.
 *   crowd     64 threads (8 for LAB_LOCK_SPINS entries: spinners under oversubscription crawl; 4 for
 *             FIFO spinners, whose every hand-off may wait for a preempted waiter) on this 2-core
 *             machine: lock holders get preempted, waiters pile up.
 *   sleepy    16 threads (4 for spinners, 3 for FIFO spinners); one critical section in 16 sleeps
 *             ~50 us, so waiters really queue up and sleeping locks go through their slow path.
 *
 * Every critical section reads a plain counter, marks a plain `owner` field, spins or sleeps, checks
 * that `owner` is still itself and writes counter + 1. After the phase the counter must equal the sum of
 * every thread's completed iterations exactly, and no thread may have seen a foreign owner. Under TSan
 * a broken lock also shows up as a data race on these plain fields.
 *
 * Time: a whole-test budget (12 s, 40 s sanitized) is divided among the phases; a phase that reaches
 * its share stops its threads after their current iteration (the exact-count check still applies to
 * what they did). A hang still fails through the watchdog. LOCKLAB_STRESS_ONLY=name[,name...]
 * restricts the run to some entries.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab.h"
#include "lktest.h"
#include "locklab/relax.h"

struct stress {
	const struct lab_lock_ops *ops;
	void *lock;
	uint64_t counter;		/* plain: only the lock protects it */
	unsigned owner;			/* plain: who is inside the critical section */
	unsigned iters;
	unsigned sleep_every;		/* 0: never sleep inside the critical section */
	bool mix_trylock;
	_Atomic bool stop;		/* the phase's time share is used up */
	_Atomic unsigned foreign;	/* critical sections that saw another owner */
	_Atomic unsigned bad_trylock;	/* trylock results other than 0 and EBUSY */
	pthread_barrier_t start;
	pthread_mutex_t mu;		/* finished/cv: the main thread's timed wait for the workers */
	pthread_cond_t cv;
	unsigned finished;
};

struct worker {
	struct stress *s;
	pthread_t th;
	unsigned id;
	uint64_t done;			/* written by the worker, read after pthread_join */
};

static void acquire(struct stress *s, unsigned i)
{
	const struct lab_lock_ops *ops = s->ops;
	int tries = 0, r;

	if (!s->mix_trylock || !(i & 1)) {
		ops->lock(s->lock);
		return;
	}
	while ((r = ops->trylock(s->lock)) != 0) {
		if (r != EBUSY)
			/* relaxed: a statistic read after pthread_join */
			atomic_fetch_add_explicit(&s->bad_trylock, 1, memory_order_relaxed);
		if (++tries == 64) {
			ops->lock(s->lock);
			return;
		}
		lk_cpu_relax();
	}
}

static void *stress_worker(void *arg)
{
	struct worker *w = arg;
	struct stress *s = w->s;
	struct timespec nap = { 0, 50000 };

	pthread_barrier_wait(&s->start);
	for (unsigned i = 0; i < s->iters; i++) {
		/*
		 * relaxed: a stop request only has to arrive eventually; the join orders everything else.
		 * Checked from the 16th iteration on, so every thread completes some even on a machine so
		 * loaded that it first runs after the phase's time share is over.
		 */
		if ((i & 15) == 15 && atomic_load_explicit(&s->stop, memory_order_relaxed))
			break;
		acquire(s, i);
		uint64_t v = s->counter;
		s->owner = w->id;
		if (s->sleep_every && i % s->sleep_every == w->id % s->sleep_every)
			nanosleep(&nap, NULL);
		else
			for (int k = 0; k < 8; k++)
				lk_cpu_relax();	/* asm with a memory clobber: `owner` is re-read below */
		if (s->owner != w->id)
			/* relaxed: a statistic read after pthread_join */
			atomic_fetch_add_explicit(&s->foreign, 1, memory_order_relaxed);
		s->counter = v + 1;
		s->ops->unlock(s->lock);
		w->done++;
	}
	pthread_mutex_lock(&s->mu);
	s->finished++;
	pthread_cond_signal(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void *alloc_lock(const struct lab_lock_ops *ops)
{
	size_t size = (ops->size + LAB_CACHELINE - 1) / LAB_CACHELINE * LAB_CACHELINE;
	void *p = NULL;

	if (posix_memalign(&p, LAB_CACHELINE, size ? size : LAB_CACHELINE) != 0)
		return NULL;
	memset(p, 0, size ? size : LAB_CACHELINE);
	return p;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One phase: nthreads x iters critical sections, stopped early after cap_ns. */
static void run_phase(const struct lab_alg *a, const char *phase, unsigned nthreads, unsigned iters,
		      unsigned sleep_every, bool mix_trylock, uint64_t cap_ns)
{
	const struct lab_lock_ops *ops = a->ops;
	struct stress s = { .ops = ops, .iters = iters, .sleep_every = sleep_every,
			    .mix_trylock = mix_trylock && ops->trylock };
	struct worker *w = calloc(nthreads, sizeof(*w));
	pthread_condattr_t ca;
	struct timespec dl;
	uint64_t t0 = mono_ns(), total = 0;
	unsigned created = 0;
	bool capped = false;
	int err;

	s.lock = alloc_lock(ops);
	CHECK(w != NULL && s.lock != NULL);
	if (!w || !s.lock)
		goto out;
	err = ops->init ? ops->init(s.lock) : 0;
	CHECK_EQ(err, 0);
	if (err) {
		fprintf(stderr, "  %s: init failed: %s\n", a->name, strerror(err));
		goto out;
	}
	atomic_init(&s.stop, false);
	atomic_init(&s.foreign, 0);
	atomic_init(&s.bad_trylock, 0);
	pthread_barrier_init(&s.start, NULL, nthreads + 1);
	pthread_mutex_init(&s.mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s.cv, &ca);
	pthread_condattr_destroy(&ca);

	for (; created < nthreads; created++) {
		w[created] = (struct worker){ .s = &s, .id = created };
		if (pthread_create(&w[created].th, NULL, stress_worker, &w[created]) != 0)
			break;
	}
	CHECK_EQ(created, nthreads);
	if (created < nthreads) {
		/* cannot happen at these counts; bail out without deadlocking on the barrier */
		fprintf(stderr, "  %s: could only start %u of %u threads\n", a->name, created, nthreads);
		exit(1);
	}
	pthread_barrier_wait(&s.start);

	dl.tv_sec = (time_t)((t0 + cap_ns) / 1000000000ull);
	dl.tv_nsec = (long)((t0 + cap_ns) % 1000000000ull);
	pthread_mutex_lock(&s.mu);
	while (s.finished < nthreads) {
		if (pthread_cond_timedwait(&s.cv, &s.mu, &dl) == ETIMEDOUT && s.finished < nthreads) {
			/* relaxed: workers poll it; pthread_join below orders what they did */
			atomic_store_explicit(&s.stop, true, memory_order_relaxed);
			capped = true;
			break;
		}
	}
	pthread_mutex_unlock(&s.mu);
	for (unsigned i = 0; i < created; i++) {
		pthread_join(w[i].th, NULL);
		total += w[i].done;
	}

	/* the checks: exact count, nobody saw a foreign owner, trylock said only 0 or EBUSY */
	CHECK_EQ(s.counter, total);
	CHECK_EQ(atomic_load_explicit(&s.foreign, memory_order_relaxed), 0);
	CHECK_EQ(atomic_load_explicit(&s.bad_trylock, memory_order_relaxed), 0);
	CHECK(total >= (uint64_t)nthreads * (iters < 15 ? iters : 15));
	if (!capped)
		CHECK_EQ(total, (uint64_t)nthreads * iters);
	if (s.counter != total)
		fprintf(stderr, "  %s/%s: LOST UPDATES: counter %llu, iterations %llu\n", a->name, phase,
			(unsigned long long)s.counter, (unsigned long long)total);
	printf("  %-22s %-8s T=%-3u %8llu/%-8llu ops %7.1f ms%s\n", a->name, phase, nthreads,
	       (unsigned long long)total, (unsigned long long)nthreads * iters,
	       (double)(mono_ns() - t0) / 1e6, capped ? " (time share used up)" : "");
	fflush(stdout);

	pthread_barrier_destroy(&s.start);
	pthread_mutex_destroy(&s.mu);
	pthread_cond_destroy(&s.cv);
	if (ops->destroy)
		ops->destroy(s.lock);
out:
	free(s.lock);
	free(w);
}

/* ---- trylock semantics ---------------------------------------------------------------------- */

struct holder {
	const struct lab_lock_ops *ops;
	void *lock;
	bool use_trylock;
	_Atomic int state;		/* 0 start, 1 holding, 2 may unlock, 3 released */
	int got;			/* the holder's trylock result */
};

static void wait_state(_Atomic int *st, int want)
{
	/* acquire: pairs with the release store of `want`, so what was done before it is visible */
	while (atomic_load_explicit(st, memory_order_acquire) != want)
		sched_yield();
}

static void *holder_thread(void *arg)
{
	struct holder *h = arg;

	if (h->use_trylock) {
		h->got = h->ops->trylock(h->lock);
		if (h->got != 0) {
			/* release: pairs with wait_state in the main thread; publishes h->got */
			atomic_store_explicit(&h->state, 3, memory_order_release);
			return NULL;
		}
	} else {
		h->ops->lock(h->lock);
	}
	/* release: pairs with wait_state(1) in the main thread */
	atomic_store_explicit(&h->state, 1, memory_order_release);
	wait_state(&h->state, 2);
	h->ops->unlock(h->lock);
	/* release: pairs with wait_state(3): our unlock happened before the main thread's trylock */
	atomic_store_explicit(&h->state, 3, memory_order_release);
	return NULL;
}

static void *try_once_thread(void *arg)
{
	struct holder *h = arg;

	h->got = h->ops->trylock(h->lock);
	if (h->got == 0)
		h->ops->unlock(h->lock);
	return NULL;
}

static void check_trylock(const struct lab_alg *a)
{
	const struct lab_lock_ops *ops = a->ops;
	struct holder h = { .ops = ops };
	pthread_t th;
	int err;

	h.lock = alloc_lock(ops);
	CHECK(h.lock != NULL);
	if (!h.lock)
		return;
	err = ops->init ? ops->init(h.lock) : 0;
	CHECK_EQ(err, 0);
	if (err)
		goto out;

	/* free: trylock succeeds */
	CHECK_EQ(ops->trylock(h.lock), 0);
	/* held by us: another thread's trylock says EBUSY */
	h.got = -1;
	pthread_create(&th, NULL, try_once_thread, &h);
	pthread_join(th, NULL);
	CHECK_EQ(h.got, EBUSY);
	ops->unlock(h.lock);
	/* released: another thread's trylock succeeds (and that thread unlocks) */
	h.got = -1;
	pthread_create(&th, NULL, try_once_thread, &h);
	pthread_join(th, NULL);
	CHECK_EQ(h.got, 0);

	/* held by another thread via lock(), then via trylock(): our trylock says EBUSY */
	for (int mode = 0; mode < 2; mode++) {
		h.use_trylock = mode;
		h.got = 0;
		atomic_init(&h.state, 0);
		pthread_create(&th, NULL, holder_thread, &h);
		/* acquire: pairs with the holder's release store of 1 (or 3 if its trylock failed) */
		while (atomic_load_explicit(&h.state, memory_order_acquire) == 0)
			sched_yield();
		CHECK_EQ(h.got, 0);
		if (atomic_load_explicit(&h.state, memory_order_acquire) == 1) {
			CHECK_EQ(ops->trylock(h.lock), EBUSY);
			/* release: pairs with the holder's wait_state(2) */
			atomic_store_explicit(&h.state, 2, memory_order_release);
			wait_state(&h.state, 3);
			CHECK_EQ(ops->trylock(h.lock), 0);
			ops->unlock(h.lock);
		}
		pthread_join(th, NULL);
	}
	printf("  %-22s trylock  ok\n", a->name);
	if (ops->destroy)
		ops->destroy(h.lock);
out:
	free(h.lock);
}

static bool selected(const char *name)
{
	const char *only = getenv("LOCKLAB_STRESS_ONLY");
	size_t n = strlen(name);

	if (!only || !*only)
		return true;
	for (const char *p = only; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

int main(void)
{
	const bool san = lkt_sanitized();
	const uint64_t budget_ns = (san ? 40ull : 12ull) * 1000000000ull;
	const unsigned scale = san ? 4 : 1;
	unsigned nlocks = 0, tested = 0;
	uint64_t share;

	lkt_watchdog(san ? 300 : 120);
	for (size_t i = 0; i < lab_registry_len; i++)
		if (strcmp(lab_registry[i].opstype, "lock") == 0 && lab_registry[i].ops &&
		    selected(lab_registry[i].name))
			nlocks++;
	if (!nlocks) {
		printf("test_stress_registry: no available lock entries: skipped\n");
		return 77;
	}
	/* three threaded phases per lock share the budget; at least 100 ms each */
	share = budget_ns / (3 * nlocks);
	if (share < 100000000ull)
		share = 100000000ull;
	printf("test_stress_registry: %u lock entries, %.0f ms per phase at most%s\n", nlocks,
	       (double)share / 1e6, san ? " (sanitized: iterations / 4)" : "");

	for (size_t i = 0; i < lab_registry_len; i++) {
		const struct lab_alg *a = &lab_registry[i];
		const struct lab_lock_ops *ops = a->ops;

		if (strcmp(a->opstype, "lock") != 0 || !selected(a->name))
			continue;
		if (!ops) {
			printf("  %-22s skipped: %s\n", a->name, a->missing ? a->missing : "no ops");
			continue;
		}
		bool spins = ops->flags & LAB_LOCK_SPINS;
		/*
		 * FIFO spinners hand the lock to one particular waiter, which on 2 busy cores is usually
		 * preempted: every hand-off can cost a scheduler tick, so they get fewer threads still.
		 */
		bool fifo_spins = spins && (ops->flags & LAB_LOCK_FIFO);

		CHECK(ops->lock != NULL && ops->unlock != NULL);
		CHECK(ops->size > 0);
		if (!ops->lock || !ops->unlock)
			continue;
		if (ops->trylock)
			check_trylock(a);
		run_phase(a, "pair", 2, 100000 / scale, 0, true, share);
		run_phase(a, "crowd", fifo_spins ? 4 : spins ? 8 : 64, 4000 / scale, 0, true, share);
		run_phase(a, "sleepy", fifo_spins ? 3 : spins ? 4 : 16, 160 / scale, 16, false, share);
		tested++;
	}
	CHECK(tested > 0);
	return lkt_done("test_stress_registry");
}
