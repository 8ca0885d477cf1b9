/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_stress.c - many threads through every pthread entry point of
 * liblocklab-preload.so at once, under every shim lock and under plain glibc, with exact counts.
 *
 * T threads (8; 3 for spinning locks on this 2-CPU machine) share:
 *   - a normal mutex, taken by lock, by a trylock loop, by timedlock and by clocklock (far
 *     deadlines) in turn; one critical section in 32 sleeps 20 us so waiters really queue (park);
 *   - a recursive mutex taken two deep, and an errorcheck mutex;
 *   - a barrier built from a mutex and a condvar (generation counter, broadcast by the last arrival,
 *     every other round a timedwait): R rounds, every thread must see every generation.
 * Each critical section checks that nobody else is inside (a plain `inside` flag) and increments
 * plain counters; after the join every counter equals the sum of the iterations exactly. Under TSan,
 * a lock that does not order the critical sections also shows up as a data race on those fields.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "preload_test.h"

#define MAXT 8

static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t errcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static long c_normal, c_recursive, c_errcheck;	/* plain: the mutexes protect them */
static int in_normal, in_recursive;		/* plain */
static int overlaps;				/* plain, under the mutex that was overlapped */

static pthread_mutex_t bm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bc = PTHREAD_COND_INITIALIZER;
static int b_arrived, b_gen;			/* under bm */
static int nthreads, iters, rounds;
static _Atomic long gens_seen;

static void barrier(int round)
{
	pthread_mutex_lock(&bm);
	int gen = b_gen;
	if (++b_arrived == nthreads) {
		b_arrived = 0;
		b_gen++;
		pthread_cond_broadcast(&bc);
	} else {
		while (b_gen == gen) {
			if (round & 1) {
				struct timespec ts = lkt_deadline_in(CLOCK_REALTIME, 60 * 1000000000LL);
				int r = pthread_cond_timedwait(&bc, &bm, &ts);
				CHECK(r == 0);
			} else {
				CHECK_EQ(pthread_cond_wait(&bc, &bm), 0);
			}
		}
	}
	pthread_mutex_unlock(&bm);
	atomic_fetch_add(&gens_seen, 1);
}

static void lock_normal(int how)
{
	struct timespec ts;

	switch (how) {
	case 0:
		CHECK_EQ(pthread_mutex_lock(&normal), 0);
		break;
	case 1:
		while (pthread_mutex_trylock(&normal) != 0)
			sched_yield();
		break;
	case 2:
		ts = lkt_deadline_in(CLOCK_REALTIME, 60 * 1000000000LL);
		CHECK_EQ(pthread_mutex_timedlock(&normal, &ts), 0);
		break;
	default:
		ts = lkt_deadline_in(CLOCK_MONOTONIC, 60 * 1000000000LL);
		CHECK_EQ(pthread_mutex_clocklock(&normal, CLOCK_MONOTONIC, &ts), 0);
		break;
	}
}

/* ThreadSanitizer (in GCC 12) does not intercept pthread_mutex_clocklock: in the native run it would
 * not see those acquisitions, so that run leaves clocklock out there. */
static int ways = 4;

static void *worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	int round = 0;

	for (int i = 0; i < iters; i++) {
		lock_normal((int)((i + id) % ways));
		if (in_normal)
			overlaps++;
		in_normal = 1;
		long c = c_normal;
		if (((unsigned)i * 7 + id) % 32 == 0) {
			struct timespec d = { 0, 20000 };
			nanosleep(&d, NULL);
		}
		c_normal = c + 1;
		in_normal = 0;
		CHECK_EQ(pthread_mutex_unlock(&normal), 0);

		CHECK_EQ(pthread_mutex_lock(&recursive), 0);
		CHECK_EQ(pthread_mutex_lock(&recursive), 0);
		if (in_recursive)
			overlaps++;
		in_recursive = 1;
		c_recursive++;
		in_recursive = 0;
		CHECK_EQ(pthread_mutex_unlock(&recursive), 0);
		CHECK_EQ(pthread_mutex_unlock(&recursive), 0);

		CHECK_EQ(pthread_mutex_lock(&errcheck), 0);
		c_errcheck++;
		CHECK_EQ(pthread_mutex_unlock(&errcheck), 0);

		if (i % (iters / rounds) == iters / rounds - 1 && round < rounds)
			barrier(round++);
	}
	while (round < rounds)
		barrier(round++);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);
	pthread_t t[MAXT];

	lkt_watchdog(180);
	fprintf(stderr, "test_preload_stress: lock %s\n", lock);
	nthreads = lkp_spins() ? 3 : MAXT;
#if defined(LOCKLAB_SANITIZE_thread)
	if (strcmp(lock, "native") == 0)
		ways = 3;
#endif
	iters = lkt_sanitized() ? 800 : lkp_spins() ? 1500 : 3000;
	rounds = 50;
	for (int i = 0; i < nthreads; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i), 0);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(overlaps, 0);
	CHECK_EQ(c_normal, (long)nthreads * iters);
	CHECK_EQ(c_recursive, (long)nthreads * iters);
	CHECK_EQ(c_errcheck, (long)nthreads * iters);
	CHECK_EQ(atomic_load(&gens_seen), (long)nthreads * rounds);
	CHECK_EQ(b_gen, rounds);
	return lkt_done("test_preload_stress");
}
