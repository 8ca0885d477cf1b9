/* SPDX-License-Identifier: MIT */
/* uncontended.c - lock+unlock pairs on one thread: mutex.h's unlock (with the guess) against a copy of the unlock before it; see run.sh. */
#include <stdio.h>
#include <time.h>
#include <errno.h>
#include "locklab/mutex.h"
static inline int old_unlock(lk_mutex_t *m)
{
	uint32_t v = LK_MUTEX_LOCKED;
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(&m->word, &v, 0, memory_order_release, memory_order_relaxed), 1))
		return 0;
	while (!((v & LK_MUTEX_PARKED) && (!(v & (LK_MUTEX_SPINNING | LK_MUTEX_WOKEN)) || (v & LK_MUTEX_OWED_MASK)))) {
		if (!(v & LK_MUTEX_LOCKED)) return EPERM;
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, v & ~LK_MUTEX_LOCKED, memory_order_release, memory_order_relaxed)) return 0;
	}
	return lk_mutex_unlock_slow(m, v);
}
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1e9+t.tv_nsec;}
__attribute__((noinline)) static double run_new(lk_mutex_t *m, long n){double t=now(); for(long i=0;i<n;i++){lk_mutex_lock(m); lk_mutex_unlock(m);} return (now()-t)/n;}
__attribute__((noinline)) static double run_old(lk_mutex_t *m, long n){double t=now(); for(long i=0;i<n;i++){lk_mutex_lock(m); old_unlock(m);} return (now()-t)/n;}
int main(void){ lk_mutex_t m = LK_MUTEX_INITIALIZER; double bn=1e9,bo=1e9;
 for(int r=0;r<15;r++){ double a=run_new(&m,2000000), b=run_old(&m,2000000); if(a<bn)bn=a; if(b<bo)bo=b; }
 printf("guess %.2f ns  old %.2f ns (best of 15 x 2M pairs)\n", bn, bo); return 0;}
