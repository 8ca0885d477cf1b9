/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_timed.c - timed mutex and condvar calls through liblocklab-preload.so, under
 * every shim lock and under plain glibc (the same expectations: glibc's).
 *
 *   pthread_mutex_clocklock   EINVAL for a clock other than REALTIME/MONOTONIC, even when free
 *   timedlock/clocklock       free: 0 whatever abstime holds (glibc checks it only when it must wait);
 *                             held: tv_sec < 0 -> ETIMEDOUT (even with a bad tv_nsec), tv_nsec outside
 *                             [0, 1e9) -> EINVAL, a past or near deadline -> ETIMEDOUT on both clocks,
 *                             and no earlier than the deadline; 0 when the holder lets go in time;
 *                             errorcheck relock EDEADLK, recursive relock nests
 *   pthread_cond_timedwait    EINVAL for a bad tv_nsec, with the mutex still held; ETIMEDOUT, not
 *                             early, with the mutex held again, on the condvar's clock (REALTIME by
 *                             default, MONOTONIC by pthread_condattr_setclock); tv_sec < 0 -> ETIMEDOUT
 *   pthread_cond_clockwait    EINVAL for another clock; ETIMEDOUT on both clocks; 0 when signalled
 *
 * "Not early" is a lower bound only (a wait that ends before its deadline is a bug whatever the load);
 * nothing here has an upper time bound except the watchdog.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "preload_test.h"

#if defined(LOCKLAB_SANITIZE_thread)
/* This test misuses mutexes on purpose (and the native run's clocklock is not intercepted by this
 * TSan): its mutex-misuse reports are expected; data races are still reported. */
const char *__tsan_default_options(void)
{
	return "report_mutex_bugs=0:report_destroy_locked=0";
}
#endif

static struct timespec in_ns(clockid_t clock, int64_t ns)
{
	return lkt_deadline_in(clock, ns);
}

struct holder {
	pthread_mutex_t *m;
	_Atomic int held, release;
	long hold_ns;		/* > 0: release by itself after this long */
};

static void *hold_main(void *arg)
{
	struct holder *h = arg;

	pthread_mutex_lock(h->m);
	atomic_store(&h->held, 1);
	if (h->hold_ns > 0) {
		struct timespec d = { h->hold_ns / 1000000000L, h->hold_ns % 1000000000L };
		nanosleep(&d, NULL);
	} else {
		while (!atomic_load(&h->release))
			sched_yield();
	}
	pthread_mutex_unlock(h->m);
	return NULL;
}

static void start_holder(struct holder *h, pthread_t *t)
{
	CHECK_EQ(pthread_create(t, NULL, hold_main, h), 0);
	while (!atomic_load(&h->held))
		sched_yield();
}

/* The mutex is held by the caller: an errorcheck mutex says so by unlocking with 0. */
static void check_mutex_timeouts(pthread_mutex_t *m)
{
	struct timespec ts;
	struct holder h = { .m = m };
	pthread_t t;

	ts = in_ns(CLOCK_REALTIME, 0);
	CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
	/* free: abstime is not looked at */
	ts.tv_nsec = 1000000000L;
	CHECK_EQ(pthread_mutex_timedlock(m, &ts), 0);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	ts.tv_nsec = -1;
	CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), 0);
	CHECK_EQ(pthread_mutex_unlock(m), 0);

	start_holder(&h, &t);
	ts = in_ns(CLOCK_REALTIME, 1000000000LL);
	ts.tv_nsec = 1000000000L;
	CHECK_EQ(pthread_mutex_timedlock(m, &ts), EINVAL);
	ts.tv_nsec = -5;
	CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), EINVAL);
	ts.tv_sec = -1;
	ts.tv_nsec = 0;
	CHECK_EQ(pthread_mutex_timedlock(m, &ts), ETIMEDOUT);
	ts.tv_nsec = 2000000000L;		/* tv_sec < 0 wins over a bad tv_nsec in glibc */
	CHECK_EQ(pthread_mutex_timedlock(m, &ts), ETIMEDOUT);
	ts = in_ns(CLOCK_REALTIME, -1000000);
	CHECK_EQ(pthread_mutex_timedlock(m, &ts), ETIMEDOUT);
	ts = in_ns(CLOCK_MONOTONIC, -1000000);
	CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), ETIMEDOUT);

	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	for (int i = 0; i < 2; i++) {
		uint64_t t0 = lkt_now_ns(clocks[i]);
		ts = in_ns(clocks[i], 30 * 1000000LL);
		int r = i == 0 ? pthread_mutex_timedlock(m, &ts) : pthread_mutex_clocklock(m, clocks[i], &ts);
		CHECK_EQ(r, ETIMEDOUT);
		CHECK(lkt_now_ns(clocks[i]) >= t0 + 30 * 1000000ull);
		ts = in_ns(clocks[i], 30 * 1000000LL);
		r = pthread_mutex_clocklock(m, clocks[i], &ts);
		CHECK_EQ(r, ETIMEDOUT);
		CHECK(lkt_now_ns(clocks[i]) >= t0 + 60 * 1000000ull);
	}
	atomic_store(&h.release, 1);
	pthread_join(t, NULL);

	/* the holder lets go long before the deadline */
	struct holder h2 = { .m = m, .hold_ns = 20 * 1000000L };
	start_holder(&h2, &t);
	ts = in_ns(CLOCK_MONOTONIC, 60 * 1000000000LL);
	CHECK_EQ(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts), 0);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	pthread_join(t, NULL);
}

static void check_typed_relock(void)
{
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_mutex_t r = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
	struct timespec ts = in_ns(CLOCK_REALTIME, 1000000000LL);

	CHECK_EQ(pthread_mutex_lock(&e), 0);
	CHECK_EQ(pthread_mutex_timedlock(&e, &ts), EDEADLK);
	CHECK_EQ(pthread_mutex_clocklock(&e, CLOCK_MONOTONIC, &ts), EDEADLK);
	CHECK_EQ(pthread_mutex_unlock(&e), 0);
	CHECK_EQ(pthread_mutex_lock(&r), 0);
	CHECK_EQ(pthread_mutex_timedlock(&r, &ts), 0);
	CHECK_EQ(pthread_mutex_unlock(&r), 0);
	CHECK_EQ(pthread_mutex_unlock(&r), 0);
	CHECK_EQ(pthread_mutex_unlock(&r), EPERM);
}

/* m is an errorcheck mutex: pthread_mutex_unlock() returning 0 proves the caller held it. */
static void check_cond_timeouts(pthread_cond_t *c, clockid_t cond_clock, pthread_mutex_t *m)
{
	struct timespec ts;

	CHECK_EQ(pthread_mutex_lock(m), 0);
	ts = in_ns(cond_clock, 1000000000LL);
	ts.tv_nsec = 1000000000L;
	CHECK_EQ(pthread_cond_timedwait(c, m, &ts), EINVAL);
	ts.tv_nsec = -1;
	CHECK_EQ(pthread_cond_clockwait(c, m, CLOCK_MONOTONIC, &ts), EINVAL);
	ts = in_ns(CLOCK_REALTIME, 1000000000LL);
	CHECK_EQ(pthread_cond_clockwait(c, m, CLOCK_PROCESS_CPUTIME_ID, &ts), EINVAL);
	CHECK_EQ(pthread_mutex_unlock(m), 0);		/* still ours after every EINVAL */

	CHECK_EQ(pthread_mutex_lock(m), 0);
	ts.tv_sec = -1;
	ts.tv_nsec = 0;
	CHECK_EQ(pthread_cond_timedwait(c, m, &ts), ETIMEDOUT);
	ts = in_ns(cond_clock, -1000000);
	CHECK_EQ(pthread_cond_timedwait(c, m, &ts), ETIMEDOUT);
	uint64_t t0 = lkt_now_ns(cond_clock);
	ts = in_ns(cond_clock, 40 * 1000000LL);
	int r;
	while ((r = pthread_cond_timedwait(c, m, &ts)) == 0)	/* spurious wakeups are allowed */
		;
	CHECK_EQ(r, ETIMEDOUT);
	CHECK(lkt_now_ns(cond_clock) >= t0 + 40 * 1000000ull);	/* on the condvar's clock, not early */
	CHECK_EQ(pthread_mutex_unlock(m), 0);		/* re-acquired before returning */

	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(pthread_mutex_lock(m), 0);
		t0 = lkt_now_ns(clocks[i]);
		ts = in_ns(clocks[i], 30 * 1000000LL);
		while ((r = pthread_cond_clockwait(c, m, clocks[i], &ts)) == 0)
			;
		CHECK_EQ(r, ETIMEDOUT);
		CHECK(lkt_now_ns(clocks[i]) >= t0 + 30 * 1000000ull);
		CHECK_EQ(pthread_mutex_unlock(m), 0);
	}
}

struct sig {
	pthread_mutex_t *m;
	pthread_cond_t *c;
	int flag;
	_Atomic int waiting;
};

static void *signal_main(void *arg)
{
	struct sig *s = arg;

	while (!atomic_load(&s->waiting))
		sched_yield();
	pthread_mutex_lock(s->m);
	s->flag = 1;
	pthread_cond_signal(s->c);
	pthread_mutex_unlock(s->m);
	return NULL;
}

static void check_cond_signalled(pthread_cond_t *c, clockid_t clock, pthread_mutex_t *m, bool clockwait)
{
	struct sig s = { .m = m, .c = c };
	pthread_t t;
	int r = 0;

	CHECK_EQ(pthread_mutex_lock(m), 0);
	CHECK_EQ(pthread_create(&t, NULL, signal_main, &s), 0);
	atomic_store(&s.waiting, 1);
	struct timespec ts = in_ns(clock, 60 * 1000000000LL);
	while (!s.flag && r == 0)
		r = clockwait ? pthread_cond_clockwait(c, m, clock, &ts) : pthread_cond_timedwait(c, m, &ts);
	CHECK_EQ(r, 0);
	CHECK_EQ(s.flag, 1);
	CHECK_EQ(pthread_mutex_unlock(m), 0);
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);

	lkt_watchdog(120);
	fprintf(stderr, "test_preload_timed: lock %s\n", lock);

	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	check_mutex_timeouts(&m);
	pthread_mutex_t e = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	check_mutex_timeouts(&e);
	check_typed_relock();

	pthread_cond_t c_rt = PTHREAD_COND_INITIALIZER, c_mono;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	CHECK_EQ(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
	CHECK_EQ(pthread_cond_init(&c_mono, &ca), 0);
	pthread_condattr_destroy(&ca);
	pthread_mutex_t em = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

	check_cond_timeouts(&c_rt, CLOCK_REALTIME, &em);
	check_cond_timeouts(&c_mono, CLOCK_MONOTONIC, &em);
	check_cond_signalled(&c_rt, CLOCK_REALTIME, &em, false);
	check_cond_signalled(&c_mono, CLOCK_MONOTONIC, &em, false);
	check_cond_signalled(&c_rt, CLOCK_MONOTONIC, &em, true);
	check_cond_signalled(&c_mono, CLOCK_REALTIME, &em, true);
	CHECK_EQ(pthread_cond_destroy(&c_rt), 0);
	CHECK_EQ(pthread_cond_destroy(&c_mono), 0);
	return lkt_done("test_preload_timed");
}
