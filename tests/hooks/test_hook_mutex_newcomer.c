/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_newcomer.c - a thread whose park attempt was refused (validate() saw the
 * lock free or P clear: LK_PARK_INVALID) has not waited in the queue, so it must not be treated as a
 * waiter that parked before: it queues at the TAIL at its first real park, never at the head where
 * lk_mutex puts a waiter parking again in the same lock call (invariant 7 of src/mutex.c).
 *
 * Deterministic, with the mutex.park pause point (the waiter is about to park, validate() not run):
 *   1. main holds m; W parks on m (the only waiter).
 *   2. N calls lock, is held at mutex.park.
 *   3. main unlocks: the unlock wakes W (UW, W the spinner, P cleared: nobody else queued); W takes m.
 *   4. N goes on: validate() sees P clear and refuses (LK_PARK_INVALID); N sets P again and is held
 *      at mutex.park once more.
 *   5. Z locks and parks: queued first (Q = 1).
 *   6. N goes on and parks (Q = 2): it must be queued BEHIND Z.
 *   7. W unlocks: the head is woken and takes m. It must be Z, who waited longer than N.
 * Spinning is off and handoff_ns is 10 s, so nobody spins on its own or becomes owed.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "hooklab.h"
#include "locklab/mutex.h"

enum { ROLE_NONE, ROLE_W, ROLE_N, ROLE_Z };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static __thread int role = ROLE_NONE;
static _Atomic int n_held;		/* times N has been held at mutex.park */
static _Atomic int n_release;		/* times main let N go on */
static _Atomic int w_owns, w_go;
static _Atomic int order[2], norder;

static uint32_t word(void)
{
	return atomic_load_explicit(&m.word, memory_order_relaxed);	/* relaxed: observing bits */
}

static uint32_t queued(void)
{
	return (word() & LK_MUTEX_QUEUED_MASK) >> LK_MUTEX_QUEUED_SHIFT;
}

static void on_hook(const char *point, void *arg)
{
	if (arg != &m || role != ROLE_N || !hk_is(point, "mutex.park"))
		return;
	int k = atomic_fetch_add(&n_held, 1) + 1;

	while (atomic_load(&n_release) < k)
		sched_yield();
}

static void *thread_w(void *arg)
{
	(void)arg;
	role = ROLE_W;
	lk_mutex_lock(&m);
	atomic_store(&w_owns, 1);
	while (!atomic_load(&w_go))
		sched_yield();
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

static void *contender(void *arg)
{
	role = (int)(intptr_t)arg;
	lk_mutex_lock(&m);
	atomic_store(&order[atomic_fetch_add(&norder, 1)], role);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

static void wait_until(_Atomic int *flag, int value)
{
	while (atomic_load(flag) < value)
		sched_yield();
}

int main(void)
{
	struct lk_mutex_policy p;
	pthread_t w, n, z;

	lkt_watchdog(120);
	hk_install(on_hook);
	CHECK_EQ(lk_mutex_get_policy(&p), 0);
	p.spin_min_ns = p.spin_max_ns = 0;
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);

	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&w, NULL, thread_w, NULL), 0);
	while (queued() != 1)			/* 1. W is queued */
		sched_yield();
	CHECK_EQ(pthread_create(&n, NULL, contender, (void *)(intptr_t)ROLE_N), 0);
	wait_until(&n_held, 1);			/* 2. N about to park */
	CHECK_EQ(lk_mutex_unlock(&m), 0);	/* 3. wakes W, P cleared */
	wait_until(&w_owns, 1);
	CHECK_EQ(word() & (LK_MUTEX_LOCKED | LK_MUTEX_PARKED), LK_MUTEX_LOCKED);
	atomic_store(&n_release, 1);		/* 4. N's validate() refuses: P clear */
	wait_until(&n_held, 2);
	CHECK_EQ(queued(), 0);			/* N has not queued yet */
	CHECK_EQ(pthread_create(&z, NULL, contender, (void *)(intptr_t)ROLE_Z), 0);
	while (queued() != 1)			/* 5. Z is queued */
		sched_yield();
	atomic_store(&n_release, 2);		/* 6. N parks, behind Z */
	while (queued() != 2)
		sched_yield();
	atomic_store(&w_go, 1);			/* 7. W unlocks: wakes the head */
	CHECK_EQ(pthread_join(w, NULL), 0);
	CHECK_EQ(pthread_join(n, NULL), 0);
	CHECK_EQ(pthread_join(z, NULL), 0);
	CHECK_EQ(atomic_load(&norder), 2);
	if (atomic_load(&order[0]) != ROLE_Z)
		fprintf(stderr, "newcomer N (whose only park attempt was refused) was queued ahead of Z\n");
	CHECK_EQ(atomic_load(&order[0]), ROLE_Z);	/* Z queued first: Z is woken first */
	CHECK_EQ(atomic_load(&order[1]), ROLE_N);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_done("test_hook_mutex_newcomer");
}
