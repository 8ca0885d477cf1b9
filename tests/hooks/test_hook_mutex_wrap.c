/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_wrap.c - issue 12 defect 4: the handoff decision must never come from
 * a wrapped clock difference.
 *
 * The old unlocker read the clock before it took the bucket lock, then handed the lock over when
 * (now - the head's park time) >= handoff_ns, in unsigned arithmetic. A waiter that parked after
 * that read had a later start, the difference wrapped to a huge value, and a waiter that had waited
 * microseconds was handed the lock as if it had waited too long (the same wrap defeated the rate
 * limiter). At the mutex.unlock_slow pause point (the unlocker decided to wake, the bucket is not
 * locked yet) the only parked waiter times out and a new one parks; with handoff_ns = 10 s nobody
 * has waited long enough, so the unlock must not hand the lock over (mutex.handoff must not fire).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hooklab.h"
#include "locklab/mutex.h"

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static _Atomic int w1_ret = -1, w2_tid, armed;
static pthread_t w2;

static void *first(void *arg)
{
	(void)arg;
	struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, 30000000);

	atomic_store(&w1_ret, lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &dl));
	return NULL;
}

static void *second(void *arg)
{
	(void)arg;
	atomic_store(&w2_tid, (int)syscall(SYS_gettid));
	lk_mutex_lock(&m);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

static void on_hook(const char *point, void *arg)
{
	int tid;

	if (arg != &m || !hk_is(point, "mutex.unlock_slow") || !atomic_exchange(&armed, 0))
		return;
	/* the unlocker decided to wake W1; W1 times out, W2 parks: W2's wait starts after this point */
	while (atomic_load(&w1_ret) == -1)
		sched_yield();
	CHECK_EQ(atomic_load(&w1_ret), ETIMEDOUT);
	CHECK_EQ(pthread_create(&w2, NULL, second, NULL), 0);
	while (!(tid = atomic_load(&w2_tid)) || lkt_thread_state(tid) != 'S')
		sched_yield();
}

int main(void)
{
	struct lk_mutex_policy def, p;
	pthread_t w1;

	lkt_watchdog(60);
	hk_install(on_hook);
	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 0;
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;	/* 10 s: no waiter here waits that long */
	CHECK_EQ(lk_mutex_set_policy(&p), 0);

	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&w1, NULL, first, NULL), 0);
	/* W1 parked: PARKED set by it (it sleeps, or is about to, until its 30 ms deadline) */
	while (!(atomic_load_explicit(&m.word, memory_order_relaxed) & LK_MUTEX_PARKED))
		sched_yield();
	atomic_store(&armed, 1);
	unsigned long h0 = hk_count("mutex.handoff");
	CHECK_EQ(lk_mutex_unlock(&m), 0);	/* the hook runs inside */
	pthread_join(w1, NULL);
	pthread_join(w2, NULL);
	unsigned long handoffs = hk_count("mutex.handoff") - h0;
	if (handoffs)
		fprintf(stderr, "the lock was handed to a waiter that had waited microseconds (handoff_ns 10 s)\n");
	CHECK_EQ(handoffs, 0);
	CHECK_EQ(atomic_load_explicit(&m.word, memory_order_relaxed), 0);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
	return lkt_done("test_hook_mutex_wrap");
}
