/*
 * A thread-per-core program on 2 CPUs: main pins itself to CPU 0 (it is worker 0, as DPDK's main
 * lcore or Seastar's shard 0), worker 1 is pinned to CPU 1. Both hammer one lk_mutex for DUR s.
 * WHO selects which thread makes the first contended lock call (calibration):
 *   main   - main (mask {0}) calibrates: union {0} = 1 CPU -> multi_cpu = 2: no spinning, yields
 *   worker - worker 1 (mask {1}) calibrates: union {0,1} = 2 -> spinning as usual
 *   race   - whoever comes first (what a real program gets)
 * usage: ./percpu_main_first main|worker|race CS_NS OUT_NS DUR
 * Build against the stats library with -DSTATS to see spins/parks/yields.
 */
#define _GNU_SOURCE
#include <locklab/mutex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <stdatomic.h>
#include <time.h>
#ifdef STATS
#include "lockstat.h"
#endif

static lk_mutex_t m = LK_MUTEX_INITIALIZER, m0 = LK_MUTEX_INITIALIZER;
static _Atomic int phase, stop;
static uint64_t cs_ns, out_ns;
static uint64_t ops[2]; static uint64_t st[2][64];
static uint64_t ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
static void busy(uint64_t d) { uint64_t t0 = ns(); while (ns() - t0 < d) ; }
static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); if (pthread_setaffinity_np(pthread_self(), sizeof(s), &s)) abort(); }

static void hammer(int id)
{
#ifdef STATS
	lockstat_reset();
#endif
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lk_mutex_lock(&m);
		busy(cs_ns);
		lk_mutex_unlock(&m);
		ops[id]++;
		busy(out_ns);
	}
#ifdef STATS
	lockstat_read(st[id]);
#endif
}

/* the calibrating call: `me` blocks on m0 held by the other thread */
static void contend_m0(void) { lk_mutex_lock(&m0); lk_mutex_unlock(&m0); }

static const char *who;
static void *worker(void *a)
{
	(void)a;
	pin(1);
	if (!strcmp(who, "main")) {
		lk_mutex_lock(&m0); atomic_store(&phase, 1);
		while (atomic_load(&phase) != 2) ;	/* main is blocked in lock(m0) by now (mostly) */
		busy(2000000);
		lk_mutex_unlock(&m0);
	} else if (!strcmp(who, "worker")) {
		while (atomic_load(&phase) < 1) ;
		contend_m0();	/* main holds m0 for 2 ms after phase 1: this call contends */
		atomic_store(&phase, 2);
	}
	while (atomic_load(&phase) < 3) ;
	hammer(1);
	return NULL;
}

int main(int argc, char **argv)
{
	who = argv[1]; cs_ns = strtoull(argv[2], 0, 0); out_ns = strtoull(argv[3], 0, 0); double dur = atof(argv[4]);
	pin(0);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	if (!strcmp(who, "main")) {
		while (atomic_load(&phase) != 1) ;
		atomic_store(&phase, 2);
		contend_m0();
	} else if (!strcmp(who, "worker")) {
		lk_mutex_lock(&m0); atomic_store(&phase, 1);
		busy(2000000);
		lk_mutex_unlock(&m0);
		while (atomic_load(&phase) < 2) ;
	}
	atomic_store(&phase, 3);
	uint64_t t0 = ns();
	struct timespec d = { (time_t)dur, (long)((dur - (time_t)dur) * 1e9) };
	/* main is a worker too: hammer until the time is up (a helper stops us) */
	pthread_t timer;
	struct timespec *dp = &d;
	void *stopper(void *x) { nanosleep(x, NULL); atomic_store(&stop, 1); return NULL; }
	pthread_create(&timer, NULL, stopper, dp);
	hammer(0);
	pthread_join(t, NULL); pthread_join(timer, NULL);
	double el = (ns() - t0) / 1e9;
	printf("%-6s ops/s %.2fM (main %lu, worker %lu)", who, (ops[0] + ops[1]) / el / 1e6, ops[0], ops[1]);
#ifdef STATS
	printf("  spin_start %lu park %lu wake %lu yield_woken %lu",
	       st[0][LOCKSTAT_mutex_spin_start] + st[1][LOCKSTAT_mutex_spin_start],
	       st[0][LOCKSTAT_mutex_park] + st[1][LOCKSTAT_mutex_park],
	       st[0][LOCKSTAT_mutex_wake] + st[1][LOCKSTAT_mutex_wake],
#ifndef NO_YW
	       st[0][LOCKSTAT_mutex_yield_woken] + st[1][LOCKSTAT_mutex_yield_woken]
#else
	       0ul
#endif
	       );
#endif
	printf("\n");
	return 0;
}
