/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/hooklab.h - helpers shared by the hook tests: a per-point hit counter and a dispatcher
 * that routes each LK_TEST_HOOK() call to the test's own handler. Built only with LOCKLAB_TEST_HOOKS.
 */
#ifndef LOCKLAB_HOOKLAB_H
#define LOCKLAB_HOOKLAB_H

#ifndef LOCKLAB_TEST_HOOKS
#error "tests/hooks/ is built only by the hooks build (cmake -DLOCKLAB_TEST_HOOKS=ON)"
#endif

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "locklab/mutex.h"
#include "locklab/qspinlock.h"
#include "test_hooks.h"
#include "lktest.h"

static const char *const hk_points[] = {
	"spin_ticket.trylock", "mutex.spin", "mutex.park", "mutex.unlock_slow", "mutex.handoff", "mutex.owed",
	"mutex.woken", "mutex.wait_yield", "mutex.claimed", "mutex.stamp_grace", "mutex.asked",
	"park.queued", "park.timeout", "park.grow", "qspin.queued", "qspin.fallback", "qspin.claim",
	"qspin.claim_enter",
};
#define HK_NPOINTS (sizeof(hk_points) / sizeof(hk_points[0]))

static _Atomic unsigned long hk_hits[HK_NPOINTS];

/* Index of a point name; -1 for a name this list does not know (a test fails on that). */
static inline int hk_index(const char *point)
{
	for (unsigned i = 0; i < HK_NPOINTS; i++)
		if (strcmp(point, hk_points[i]) == 0)
			return (int)i;
	return -1;
}

static inline unsigned long hk_count(const char *point)
{
	int i = hk_index(point);

	/* relaxed: a counter polled by the test; what it waits for is ordered by its own handshakes */
	return i < 0 ? 0 : atomic_load_explicit(&hk_hits[i], memory_order_relaxed);
}

static void (*hk_handler)(const char *point, void *arg);
static _Atomic int hk_unknown;

static void hk_dispatch(const char *point, void *arg)
{
	int i = hk_index(point);

	if (i < 0) {
		atomic_fetch_add_explicit(&hk_unknown, 1, memory_order_relaxed);	/* relaxed: a count */
		return;
	}
	atomic_fetch_add_explicit(&hk_hits[i], 1, memory_order_relaxed);	/* relaxed: a count */
	if (hk_handler)
		hk_handler(point, arg);
}

/* Route every hook to fn (NULL: count only). Call before starting the test's threads. */
static inline void hk_install(void (*fn)(const char *point, void *arg))
{
	hk_handler = fn;
	lk_test_hook_set(hk_dispatch);	/* its release publishes hk_handler */
}

static inline int hk_is(const char *point, const char *name)
{
	return strcmp(point, name) == 0;
}

/* The mutex's word and its QUEUED count, for watching its bookkeeping (relaxed: no data rides on it). */
static inline uint32_t hk_word(lk_mutex_t *m)
{
	return atomic_load_explicit(&m->word, memory_order_relaxed);
}

static inline uint32_t hk_queued(lk_mutex_t *m)
{
	return (hk_word(m) & LK_MUTEX_QUEUED_MASK) >> LK_MUTEX_QUEUED_SHIFT;
}

/* The mutex policy with spin_min_ns = spin_max_ns = spin_ns and the given handoff_ns. */
static inline void hk_mutex_policy(uint32_t spin_ns, uint64_t handoff_ns)
{
	struct lk_mutex_policy p;

	CHECK_EQ(lk_mutex_get_policy(&p), 0);
	p.spin_min_ns = p.spin_max_ns = spin_ns;
	p.handoff_ns = handoff_ns;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
}

/*
 * Wait (yielding) until cond() holds. After 10 s, fail at once with `what` in the message, instead of
 * hanging until the watchdog fires: the threads involved are stuck, so nothing is joined.
 */
static inline void hk_wait(bool (*cond)(void), const char *what)
{
	uint64_t end = lkt_now_ns(CLOCK_MONOTONIC) + 10000000000ull;

	while (!cond()) {
		if (lkt_now_ns(CLOCK_MONOTONIC) >= end) {
			fprintf(stderr, "FAILED: %s did not happen within 10 s\n", what);
			_exit(1);
		}
		sched_yield();
	}
}

/*
 * A gate a hook holds a thread at: the hook calls hk_gate_hold(), which marks the gate held and
 * yields until the test calls hk_gate_open(). hk_gate_reset() closes it again for the next round.
 * seq_cst (the default) throughout: test-only handshakes, no cost worth reasoning about.
 */
struct hk_gate {
	_Atomic int held, open;
};

static inline void hk_gate_hold(struct hk_gate *g)
{
	atomic_store(&g->held, 1);
	while (!atomic_load(&g->open))
		sched_yield();
}

static inline bool hk_gate_is_held(struct hk_gate *g) { return atomic_load(&g->held); }
static inline void hk_gate_open(struct hk_gate *g) { atomic_store(&g->open, 1); }

static inline void hk_gate_reset(struct hk_gate *g)
{
	atomic_store(&g->held, 0);
	atomic_store(&g->open, 0);
}

/*
 * Threads with roles, for tests whose hooks must tell their threads apart. hk_role is the calling
 * thread's role (0, ROLE_NONE in the tests: main and threads without one); hk_got[r] is set once the
 * thread of role r has taken the lock. hk_start_locker(&t, m, r) starts a thread that takes role r,
 * locks m once, records it in hk_got and unlocks (the unlock must succeed).
 */
#define HK_ROLES 8
static __thread int hk_role __attribute__((unused));
static _Atomic int hk_got[HK_ROLES] __attribute__((unused));
static struct hk_locker_arg { lk_mutex_t *m; int role; } hk_locker_args[HK_ROLES] __attribute__((unused));

static inline void *hk_locker(void *arg)
{
	struct hk_locker_arg *a = arg;

	hk_role = a->role;
	lk_mutex_lock(a->m);
	atomic_store(&hk_got[a->role], 1);
	CHECK_EQ(lk_mutex_unlock(a->m), 0);
	return NULL;
}

static inline void hk_start_locker(pthread_t *t, lk_mutex_t *m, int role)
{
	hk_locker_args[role] = (struct hk_locker_arg){ m, role };
	CHECK_EQ(pthread_create(t, NULL, hk_locker, &hk_locker_args[role]), 0);
}

/*
 * hk_start_locker(), then wait (yielding) until the word counts `queued` threads parked on m; after
 * 10 s fail at once, as hk_wait() does.
 */
static inline void hk_start_queued(pthread_t *t, lk_mutex_t *m, int role, uint32_t queued)
{
	uint64_t end = lkt_now_ns(CLOCK_MONOTONIC) + 10000000000ull;

	hk_start_locker(t, m, role);
	while (hk_queued(m) != queued) {
		if (lkt_now_ns(CLOCK_MONOTONIC) >= end) {
			fprintf(stderr, "FAILED: role %d did not queue (%u queued, %u expected) within 10 s\n",
				role, hk_queued(m), queued);
			_exit(1);
		}
		sched_yield();
	}
}

/*
 * Teach m's side-table slot that spins on it do not find it free (slot.lost in src/mutex.c), so that
 * a spinner alone behind the owner asks for the lock (SK) - a fresh slot says spins succeed, and a
 * spinner then never asks. Turns the ask on (lk_mutex_set_ask(1): the slot learns only then), then
 * six rounds in which a waiter (role HK_ROLES - 1) spins 1 us on m, held by us, gives up and parks;
 * the policy is restored, the ask left on. Call with m free and no thread on it.
 */
static inline void hk_mutex_prime_ask(lk_mutex_t *m)
{
	struct lk_mutex_policy saved, p;
	pthread_t t;

	CHECK_EQ(lk_mutex_get_policy(&saved), 0);
	p = saved;
	p.spin_min_ns = p.spin_max_ns = 1000;	/* min == max: it never asks, it gives up */
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	CHECK_EQ(lk_mutex_set_ask(1), 0);
	for (int round = 0; round < 6; round++) {
		lk_mutex_lock(m);
		hk_start_queued(&t, m, HK_ROLES - 1, 1);
		CHECK_EQ(lk_mutex_unlock(m), 0);
		CHECK_EQ(pthread_join(t, NULL), 0);
	}
	CHECK_EQ(lk_mutex_set_policy(&saved), 0);
}

/* A qspinlock's word (relaxed: polled by the test; what it waits for is ordered by its handshakes). */
static inline uint32_t hk_qval(struct lk_qspinlock *l)
{
	return atomic_load_explicit(&l->val, memory_order_relaxed);
}

/*
 * 0,0,0 -> 0,1,1: held by the caller, the pending bit set by the caller too, so that the next arrival
 * queues without a pending waiter having to spin meanwhile. hk_qspin_release() undoes it, once the
 * arrival is in.
 */
static inline void hk_qspin_hold_pending(struct lk_qspinlock *l)
{
	lk_qspin_lock(l);
	atomic_fetch_or_explicit(&l->val, LK_QSPIN_PENDING, memory_order_relaxed);	/* relaxed: a shape */
}

static inline void hk_qspin_release(struct lk_qspinlock *l)
{
	atomic_fetch_and_explicit(&l->val, ~LK_QSPIN_PENDING, memory_order_relaxed);	/* relaxed: as above */
	CHECK_EQ(lk_qspin_unlock(l), 0);
}

#endif /* LOCKLAB_HOOKLAB_H */
