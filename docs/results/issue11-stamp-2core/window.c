/*
 * window.c (the hostile review's r1_window.c, stop 26): a waiter that loses the race for S (C)
 * right after an idle period longer than spin_max_ns yields (LKM_WAIT_YIELDS) behind a spinner
 * that claimed S microseconds ago. Each round: main holds the lock 200 us while two threads race
 * for it, then the lock is idle 3 ms (spin_max_ns is 1 ms). run.sh's stage `window` builds it
 * against liblocklab at a given commit; the count that matters is "waiter yields behind an S
 * claimed <100 us ago". Public API only: liblocklab's sched_yield() calls land in the one below.
 */
#define _GNU_SOURCE
#include "locklab/mutex.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static lk_mutex_t mx = LK_MUTEX_INITIALIZER;
static _Atomic int go, done;
static _Atomic long long go_ns;
static __thread int is_worker;
static _Atomic int y_fresh, y_any;	/* waiter yields behind a young S / all yields */
static _Atomic long long y_age_max;
static _Atomic int last_y_round, y_rounds;
static _Atomic int per_round[100001];

static long long mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void note_yield(void)
{
	if (!is_worker)
		return;
	long long age = mono() - atomic_load(&go_ns);
	atomic_fetch_add(&y_any, 1);
	/* the S holder cannot have spent its 1 ms budget 100 us after go: a waiter's yield */
	if (age < 100000 && (atomic_load_explicit(&mx.word, memory_order_relaxed) & LK_MUTEX_SPINNING)) {
		atomic_fetch_add(&y_fresh, 1);
		atomic_fetch_add(&per_round[atomic_load(&go)], 1);
		if (atomic_exchange(&last_y_round, atomic_load(&go)) != atomic_load(&go)) atomic_fetch_add(&y_rounds, 1);
		if (age > y_age_max)
			y_age_max = age;
	}
}

int sched_yield(void)	/* interposed: liblocklab's calls land here */
{
	note_yield();
	return (int)syscall(SYS_sched_yield);
}

static int rounds = 300;

static void *worker(void *arg)
{
	(void)arg;
	is_worker = 1;
	for (int r = 1; r <= rounds; r++) {
		while (atomic_load_explicit(&go, memory_order_acquire) < r)
			__builtin_ia32_pause();
		lk_mutex_lock(&mx);
		lk_mutex_unlock(&mx);
		atomic_fetch_add(&done, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = atoi(argv[1]);
	struct lk_mutex_policy p;
	lk_mutex_get_policy(&p);
	p.spin_min_ns = p.spin_max_ns = 1000000;	/* 1 ms: the S holder outlasts a 200 us hold */
	lk_mutex_set_policy(&p);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	struct timespec hold = { 0, 200000 }, idle = { 0, 3000000 };
	for (int r = 1; r <= rounds; r++) {
		lk_mutex_lock(&mx);
		atomic_store(&go_ns, mono());
		atomic_store_explicit(&go, r, memory_order_release);
		nanosleep(&hold, NULL);
		lk_mutex_unlock(&mx);
		while (atomic_load(&done) < 2 * r)
			sched_yield();
		nanosleep(&idle, NULL);	/* the slot's stamp goes stale (> spin_max_ns) */
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%d rounds: waiter yields behind an S claimed <100 us ago: %d (latest %lld ns after go); "
	       "yields by workers in all: %d; rounds with such yields: %d\n",
	       rounds, y_fresh, (long long)y_age_max, y_any, y_rounds);
	for (int r = 1; r <= rounds; r++)
		if (per_round[r])
			printf("  round %d: %d yields behind the young S\n", r, per_round[r]);
	return 0;
}
