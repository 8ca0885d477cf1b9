/* common.h - helpers of the hostile review's reproducers (stop 33): clocks, the statistics build's
 * counters, pinning. ASK=1 in the environment turns the spinner's ask on (lk_mutex_set_ask). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>
#include "locklab/mutex.h"
#include "locklab/relax.h"

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
static inline uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}
/* stats build only: the library's per-thread counters (src/lockstat.h) */
#ifdef STATS
#define NEV 64
void lockstat_read(uint64_t *out);
extern const char *const lockstat_names[];
static _Atomic uint64_t g_ask, g_handed, g_park, g_spin;
static int ev_idx(const char *n) { for (int i = 0; i < NEV && lockstat_names[i]; i++) if (!strcmp(lockstat_names[i], n)) return i; return -1; }
static void stats_collect(void)
{
	uint64_t c[NEV] = {0};
	lockstat_read(c);
	atomic_fetch_add(&g_ask, c[ev_idx("mutex_spin_ask")]);
	atomic_fetch_add(&g_handed, c[ev_idx("mutex_spin_handed")]);
	atomic_fetch_add(&g_park, c[ev_idx("mutex_park")]);
	atomic_fetch_add(&g_spin, c[ev_idx("mutex_spin_start")]);
}
static void stats_print(void)
{
	printf("  stats: spin_start=%lu ask=%lu handed=%lu park=%lu\n", (unsigned long)g_spin,
	       (unsigned long)g_ask, (unsigned long)g_handed, (unsigned long)g_park);
}
#else
static void stats_collect(void) {}
static void stats_print(void) {}
#endif
static void pin(int cpu)
{
	cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof(s), &s);
}
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}
