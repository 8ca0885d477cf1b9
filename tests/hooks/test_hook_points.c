/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_points.c - every pause point listed in tests/hooks/README.md fires where the
 * table says, so that a refactoring cannot silently remove the window another hook test opens.
 * (qspin.fallback needs a thread without a queue node; test_hook_qspin_exit.c reaches it.)
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "hooklab.h"
#include "locklab/mutex.h"
#include "locklab/park.h"
#include "locklab/qspinlock.h"
#include "locklab/spin_ticket.h"

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static struct lk_qspinlock q = LK_QSPINLOCK_INIT;
static _Atomic int qs_in;

static void *mutex_waiter(void *arg)
{
	(void)arg;
	lk_mutex_lock(&m);
	lk_mutex_unlock(&m);
	return NULL;
}

/* Hold m, let a waiter queue on it, unlock (waking or handing over to it), join it. */
static void unlock_to_a_parked_waiter(void)
{
	unsigned long q0 = hk_count("park.queued");
	pthread_t th;

	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&th, NULL, mutex_waiter, NULL), 0);
	while (hk_count("park.queued") == q0)	/* the waiter is queued on the mutex */
		sched_yield();
	lk_mutex_unlock(&m);
	pthread_join(th, NULL);
}

static void *qs_waiter(void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&qs_in, 1, memory_order_relaxed);	/* relaxed: progress flag */
	lk_qspin_lock(&q);
	lk_qspin_unlock(&q);
	return NULL;
}

int main(void)
{
	struct lk_spin_ticket t = LK_SPIN_TICKET_INIT;
	struct lk_mutex_policy def, p;
	_Atomic uint32_t w = 0;
	pthread_t th[2];

	lkt_watchdog(120);
	hk_install(NULL);

	/* spin_ticket.trylock */
	CHECK_EQ(lk_spin_ticket_trylock(&t), 0);
	CHECK_EQ(lk_spin_ticket_unlock(&t), 0);
	CHECK(hk_count("spin_ticket.trylock") >= 1);

	/* park.queued, park.timeout: a 1 ms sleep nobody ends */
	struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, 1000000);
	CHECK_EQ(lk_park(&w, NULL, NULL, 0, &dl, CLOCK_MONOTONIC, NULL), LK_PARK_TIMEDOUT);
	CHECK(hk_count("park.queued") >= 1);
	CHECK(hk_count("park.timeout") >= 1);

	/* park.grow */
	struct lk_park_stats st;
	lk_park_get_stats(&st);
	CHECK_EQ(lk_park_reserve(st.buckets * 2), 0);
	CHECK(hk_count("park.grow") >= 1);

	/* mutex.unlock_slow, .handoff, .owed: no spinning, owed at once; a parked waiter, unlock */
	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 0;
	p.handoff_ns = 0;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	for (int round = 0; round < 1000 && !hk_count("mutex.handoff"); round++)
		unlock_to_a_parked_waiter();
	CHECK(hk_count("mutex.park") >= 1);
	CHECK(hk_count("mutex.unlock_slow") >= 1);
	CHECK(hk_count("mutex.handoff") >= 1);
	CHECK(hk_count("mutex.owed") >= 1);	/* handoff_ns 0: owed at its first park */
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	/* mutex.woken: no spinning, no handoff; a parked waiter woken by the unlock (UW) */
	p = def;
	p.spin_min_ns = p.spin_max_ns = 0;
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	for (int round = 0; round < 1000 && !hk_count("mutex.woken"); round++)
		unlock_to_a_parked_waiter();
	CHECK(hk_count("mutex.woken") >= 1);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	/* mutex.spin: a spinner while we hold the lock */
	p = def;
	p.spin_min_ns = p.spin_max_ns = 1000000;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&th[0], NULL, mutex_waiter, NULL), 0);
	while (!hk_count("mutex.spin"))
		sched_yield();
	CHECK(hk_count("mutex.claimed") >= 1);	/* the spinner claimed S on its way there */
	lk_mutex_unlock(&m);
	pthread_join(th[0], NULL);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);

	/* mutex.asked: the ask on, a spinner alone behind us asks after spin_min_ns (1 us) of its 10 ms */
	hk_mutex_prime_ask(&m);		/* turns the ask on */
	p = def;
	p.spin_min_ns = 1000;
	p.spin_max_ns = 10000000;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&th[0], NULL, mutex_waiter, NULL), 0);
	while (!hk_count("mutex.asked"))
		sched_yield();
	lk_mutex_unlock(&m);
	pthread_join(th[0], NULL);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
	CHECK_EQ(lk_mutex_set_ask(0), 0);

	/* qspin.queued: owner (us), a pending waiter and a queued one */
	lk_qspin_lock(&q);
	CHECK_EQ(pthread_create(&th[0], NULL, qs_waiter, NULL), 0);
	while (!(atomic_load_explicit(&q.val, memory_order_relaxed) & LK_QSPIN_PENDING_MASK))
		sched_yield();
	CHECK_EQ(pthread_create(&th[1], NULL, qs_waiter, NULL), 0);
	while (!hk_count("qspin.queued"))
		sched_yield();
	CHECK(hk_count("qspin.claim") >= 1);	/* the queued waiter claimed its node slot first */
	CHECK(hk_count("qspin.claim_enter") >= 1);
	lk_qspin_unlock(&q);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	CHECK_EQ(atomic_load_explicit(&q.val, memory_order_relaxed), 0);

	CHECK_EQ(atomic_load_explicit(&hk_unknown, memory_order_relaxed), 0);
	for (unsigned i = 0; i < HK_NPOINTS; i++)
		printf("  %-20s %lu\n", hk_points[i], hk_count(hk_points[i]));
	return lkt_done("test_hook_points");
}
