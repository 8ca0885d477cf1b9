/*
 * fifo_yield: SCHED_FIFO (all priority 10) on one CPU, the pattern of an RT control loop.
 *   A: every iteration: lock; sleep 50 us holding it (an I/O under the lock); busy 1 ms; unlock
 *      (timed); busy 200 us of its own work without the lock (timed with the unlock: "A's unlock-to-
 *      done latency"); sleep 500 us.
 *   B: lock; unlock; sleep 10 us  (so that B is often parked on the mutex when A unlocks)
 *   H: an equal-priority CPU-bound thread: wakes every 7 ms and burns 3 ms.
 * With glibc semantics (and f7405ef) A's unlock never gives the CPU away: A finishes its 200 us of work
 * unless H preempts... H cannot (same priority, FIFO): A keeps the CPU until it sleeps. With the yield,
 * A's unlock that wakes B puts A behind B and behind H when H is runnable: A waits up to H's 3 ms.
 * usage: taskset -c 0 ./fifo_yield SECONDS        (needs CAP_SYS_NICE)
 */
#define _GNU_SOURCE
#include <locklab/mutex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdatomic.h>
#include <time.h>

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static _Atomic int stop;
static uint64_t ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static void busy(uint64_t d) { uint64_t t0 = ns(); while (ns() - t0 < d) ; }
static void snooze(long d) { struct timespec t = { 0, d }; nanosleep(&t, NULL); }
static uint64_t worst, over1ms, iters;

static void *a_fn(void *x)
{
	(void)x;
	while (!atomic_load(&stop)) {
		lk_mutex_lock(&m);
		snooze(50000);
		busy(1000000);
		uint64_t t0 = ns();
		lk_mutex_unlock(&m);
		busy(200000);
		uint64_t d = ns() - t0 - 200000;
		if (d > worst) worst = d;
		if (d > 1000000) over1ms++;
		iters++;
		snooze(500000);
	}
	return NULL;
}
static void *b_fn(void *x)
{
	(void)x;
	while (!atomic_load(&stop)) { lk_mutex_lock(&m); lk_mutex_unlock(&m); snooze(10000); }
	return NULL;
}
static void *h_fn(void *x)
{
	(void)x;
	while (!atomic_load(&stop)) { busy(3000000); snooze(7000000); }
	return NULL;
}

int main(int argc, char **argv)
{
	double dur = argc > 1 ? atof(argv[1]) : 3;
	pthread_attr_t at; struct sched_param sp = { .sched_priority = 10 }, mp = { .sched_priority = 20 };
	pthread_attr_init(&at);
	pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&at, SCHED_FIFO);
	pthread_attr_setschedparam(&at, &sp);
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &mp)) { perror("SCHED_FIFO"); return 1; }
	/* main calibrates first (lock contention from main once, so the one-CPU decision is made) */
	pthread_t a, b, h;
	pthread_create(&b, &at, b_fn, NULL);
	pthread_create(&h, &at, h_fn, NULL);
	pthread_create(&a, &at, a_fn, NULL);
	struct timespec d = { (time_t)dur, (long)((dur - (time_t)dur) * 1e9) };
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	pthread_join(a, NULL); pthread_join(b, NULL); pthread_join(h, NULL);
	printf("A: %lu iterations, unlock+200us work exceeded its 200 us by > 1 ms %lu times, worst excess %.2f ms\n",
	       iters, over1ms, worst / 1e6);
	return 0;
}
