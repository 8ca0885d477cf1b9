/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_realtime_step.c - a CLOCK_REALTIME timedlock waiter's sleep is bounded in
 * CLOCK_MONOTONIC time, so a step of the realtime clock cannot stretch it past the waiter's handoff
 * deadline (the starvation bound of docs/mutex.md) or past its own timeout.
 *
 * The step is simulated without touching the machine's clock: this program defines clock_gettime(),
 * which the statically linked library binds to, and reports CLOCK_REALTIME one hour ahead of the
 * kernel's. To the library that is a realtime clock that, seen from the kernel's futex timer, stepped
 * back one hour just before the waiter parked. The waiter asks for a 150 ms realtime deadline (on the
 * library's clock) with handoff_ns at its maximum, so its own deadline comes first. Before the fix
 * the waiter slept on that deadline as it was (FUTEX_CLOCK_REALTIME): the kernel's timer fired one
 * hour late and the watchdog ended the test. Now it sleeps on the deadline converted to
 * CLOCK_MONOTONIC and times out after ~150 ms of monotonic time.
 *
 * Also: with the fake clock behind the kernel's instead (a forward step), a deadline the kernel sees
 * as long passed is not taken as passed by the library: the call still returns ETIMEDOUT only once the
 * library's own clock reaches it, and the lock taken later still works.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include <locklab/mutex.h>

#include "lktest.h"

static _Atomic long long realtime_offset_ns;	/* added to the kernel's CLOCK_REALTIME */

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	long r = syscall(SYS_clock_gettime, clock, ts);

	if (r == 0 && clock == CLOCK_REALTIME) {
		long long ns = (long long)ts->tv_sec * 1000000000ll + ts->tv_nsec +
			       atomic_load_explicit(&realtime_offset_ns, memory_order_relaxed);
		ts->tv_sec = (time_t)(ns / 1000000000ll);
		ts->tv_nsec = (long)(ns % 1000000000ll);
	}
	return (int)r;
}

static lk_mutex_t m = LK_MUTEX_INITIALIZER;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct result {
	int rc;
	uint64_t waited_ns;
};

static void *waiter(void *arg)
{
	struct result *res = arg;
	struct timespec abs;

	clock_gettime(CLOCK_REALTIME, &abs);	/* the library's (fake) realtime */
	abs.tv_nsec += 150000000l;
	if (abs.tv_nsec >= 1000000000l) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000l;
	}
	uint64_t t0 = mono_ns();
	res->rc = lk_mutex_timedlock(&m, CLOCK_REALTIME, &abs);
	res->waited_ns = mono_ns() - t0;
	if (res->rc == 0)
		lk_mutex_unlock(&m);
	return NULL;
}

static void one(long long offset_ns, const char *what)
{
	pthread_t t;
	struct result res = { -1, 0 };

	atomic_store_explicit(&realtime_offset_ns, offset_ns, memory_order_relaxed);
	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&t, NULL, waiter, &res), 0);
	pthread_join(t, NULL);		/* the watchdog catches an overslept waiter */
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	if (res.rc != ETIMEDOUT || res.waited_ns < 140000000ull)
		fprintf(stderr, "%s: timedlock returned %d after %.1f ms (want ETIMEDOUT after >= 150 ms)\n",
			what, res.rc, res.waited_ns / 1e6);
	CHECK_EQ(res.rc, ETIMEDOUT);
	CHECK(res.waited_ns >= 140000000ull);	/* never early: judged on the library's clock */
	CHECK_EQ(lk_mutex_trylock(&m), 0);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
}

int main(void)
{
	struct lk_mutex_policy p;

	lkt_watchdog(20);
	CHECK_EQ(lk_mutex_get_policy(&p), 0);
	p.handoff_ns = 10000000000ull;	/* the maximum: the caller's deadline comes first */
	CHECK_EQ(lk_mutex_set_policy(&p), 0);

	one(3600ll * 1000000000ll, "realtime stepped back one hour (as the kernel's timer sees it)");
	one(-3600ll * 1000000000ll, "realtime stepped forward one hour");
	one(0, "no step");
	return lkt_failures ? 1 : 0;
}
