/*
 * fair1cpu: N threads, lock / busy CS_NS / unlock, for DUR seconds; per thread: ops, CPU time,
 * voluntary/involuntary context switches, and (stats build, -DSTATS) parks, wakes, yield_woken.
 * usage: taskset -c 0 ./fair1cpu N CS_NS DUR_S
 */
#define _GNU_SOURCE
#include <locklab/mutex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/resource.h>
#ifdef STATS
#include "lockstat.h"
#endif

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static _Atomic int go, stop;
static uint64_t cs_ns;
static volatile uint64_t shared;

struct res { uint64_t ops, cpu_ns; long vcsw, ivcsw; uint64_t park, wake, yw, took, handoff, owed; } r[4096];

static uint64_t ns(clockid_t c) { struct timespec t; clock_gettime(c, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }

static void *worker(void *a)
{
	struct res *me = a;
	while (!atomic_load(&go)) ;
#ifdef STATS
	lockstat_reset();
#endif
	uint64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID);
	struct rusage ru0, ru1; getrusage(RUSAGE_THREAD, &ru0);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lk_mutex_lock(&m);
		uint64_t t0 = ns(CLOCK_MONOTONIC);
		while (ns(CLOCK_MONOTONIC) - t0 < cs_ns) ;
		shared++;
		lk_mutex_unlock(&m);
		me->ops++;
	}
	getrusage(RUSAGE_THREAD, &ru1);
	me->cpu_ns = ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	me->vcsw = ru1.ru_nvcsw - ru0.ru_nvcsw; me->ivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
#ifdef STATS
	uint64_t c[LOCKSTAT_NR]; lockstat_read(c);
	me->park = c[LOCKSTAT_mutex_park]; me->wake = c[LOCKSTAT_mutex_wake]; 
#ifndef NO_YW
	me->yw = c[LOCKSTAT_mutex_yield_woken];
#endif

	me->took = c[LOCKSTAT_mutex_woken_took]; me->handoff = c[LOCKSTAT_mutex_handoff]; me->owed = c[LOCKSTAT_mutex_owed];
#endif
	return NULL;
}

int main(int argc, char **argv)
{
	int n = atoi(argv[1]); cs_ns = strtoull(argv[2], 0, 0); double dur = atof(argv[3]);
	pthread_t t[4096];
	for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, &r[i]);
	atomic_store(&go, 1);
	struct timespec d = { (time_t)dur, (long)((dur - (time_t)dur) * 1e9) };
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	uint64_t tot = 0; double s1 = 0, s2 = 0;
	for (int i = 0; i < n; i++) { pthread_join(t[i], NULL); tot += r[i].ops; s1 += r[i].ops; s2 += (double)r[i].ops * r[i].ops; }
	for (int i = 0; i < n && n <= 32; i++)
		printf("t%-3d ops %8lu cpu %6.1f ms vcsw %5ld ivcsw %5ld park %5lu wake %5lu yield_woken %5lu woken_took %5lu handoff %lu owed %lu\n", i,
		       r[i].ops, r[i].cpu_ns / 1e6, r[i].vcsw, r[i].ivcsw, r[i].park, r[i].wake, r[i].yw, r[i].took, r[i].handoff, r[i].owed);
	uint64_t mn = UINT64_MAX; for (int i = 0; i < n; i++) if (r[i].ops < mn) mn = r[i].ops;
	printf("total %lu ops/s %.2fM jain %.3f min_share %.3f\n", tot, tot / dur / 1e6, s1 * s1 / (n * s2), mn * n / (double)tot);
	return 0;
}
