/*
 * cond_queue: bounded queue (capacity CAP) on one lk_mutex + two lk_conds, P producers, C consumers,
 * DUR seconds; items/s and the consumers' share. Pinned to one CPU the cond waits release the mutex
 * through lk_mutex_unlock (before_sleep) and may yield there.
 * usage: taskset -c 0 ./cond_queue P C CAP DUR
 */
#include <locklab/mutex.h>
#include <locklab/cond.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdatomic.h>
#include <time.h>
#include <sys/resource.h>
#ifdef STATS
#include "lockstat.h"
static _Atomic uint64_t s_yw, s_wake, s_park;
static void collect(void) { uint64_t c[LOCKSTAT_NR]; lockstat_read(c); atomic_fetch_add(&s_wake, c[LOCKSTAT_mutex_wake]); atomic_fetch_add(&s_park, c[LOCKSTAT_mutex_park]);
#ifndef NO_YW
 atomic_fetch_add(&s_yw, c[LOCKSTAT_mutex_yield_woken]);
#endif
}
#else
static void collect(void) {}
#endif

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static lk_cond_t nonempty = LK_COND_INITIALIZER, nonfull = LK_COND_INITIALIZER;
static int cap, count; static _Atomic int stop; static uint64_t got[64];

static void *prod(void *a)
{
	(void)a;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lk_mutex_lock(&m);
		while (count == cap && !atomic_load(&stop)) lk_cond_wait(&nonfull, &m);
		count++;
		lk_cond_signal(&nonempty);
		lk_mutex_unlock(&m);
	}
	collect();
	return NULL;
}
static void *cons(void *a)
{
	int id = (int)(intptr_t)a;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		lk_mutex_lock(&m);
		while (count == 0 && !atomic_load(&stop)) lk_cond_wait(&nonempty, &m);
		if (count) { count--; got[id]++; }
		lk_cond_signal(&nonfull);
		lk_mutex_unlock(&m);
	}
	collect();
	return NULL;
}
int main(int argc, char **argv)
{
	int p = atoi(argv[1]), c = atoi(argv[2]); cap = atoi(argv[3]); double dur = atof(argv[4]);
	pthread_t t[128];
	for (int i = 0; i < p; i++) pthread_create(&t[i], NULL, prod, NULL);
	for (int i = 0; i < c; i++) pthread_create(&t[p + i], NULL, cons, (void *)(intptr_t)i);
	struct timespec d = { (time_t)dur, (long)((dur - (time_t)dur) * 1e9) };
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	lk_mutex_lock(&m); lk_cond_broadcast(&nonempty); lk_cond_broadcast(&nonfull); lk_mutex_unlock(&m);
	for (int i = 0; i < p + c; i++) pthread_join(t[i], NULL);
	uint64_t tot = 0, mn = UINT64_MAX; for (int i = 0; i < c; i++) { tot += got[i]; if (got[i] < mn) mn = got[i]; }
	struct rusage ru; getrusage(RUSAGE_SELF, &ru);
	printf("items/s %.3fM  min consumer share %.3f  ctx switches/item %.2f", tot / dur / 1e6, mn * c / (double)tot, (ru.ru_nvcsw + ru.ru_nivcsw) / (double)tot);
#ifdef STATS
	printf("  mutex parks/item %.2f wakes/item %.2f yield_woken/item %.2f", s_park / (double)tot, s_wake / (double)tot, s_yw / (double)tot);
#endif
	printf("\n");
	return 0;
}
