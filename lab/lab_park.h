/* SPDX-License-Identifier: MIT */
/*
 * lab/lab_park.h - the lab's view of the parking lot and of the kernel futex, for the futex
 * workloads (futex-hash, futex-wake, wake-parallel, requeue).
 *
 * opstype `layout` (registry family `layout`): one parking-lot instance with its own table, built
 * from src/park_impl.h with a given bucket layout (lab/adapters/park_layouts.c). Entries:
 *	packed    lock, waiter count, queue head/tail and back pointer in one 64-byte line
 *	split     the queue and back pointer on a line of their own (the seed-000 patch), 128 bytes
 *	lean      one line, no back-pointer load before the lock (the fix that landed)
 *	lk_park   the library's own instance (include/locklab/park.h), for cross-checking
 *
 * The workloads' `--lock` parameter is a string: `kernel` (futex(2), private) or one of the
 * layout names above; lab_fx_resolve() turns it into a struct lab_fx.
 *
 * The waiter pool (lab/workloads/futex_wake.c) is shared by the three wake workloads: N threads
 * wait on pool->gen while it holds the round's value, through the kernel futex or a layout's
 * park(); lab_fxpool_wait_asleep() confirms each one really sleeps (its announce for the round,
 * for the lot also its before_sleep(), and state 'S' in /proc/self/task/<tid>/stat) before any
 * timing starts, instead of sleeping and hoping.
 */
#ifndef LOCKLAB_LAB_PARK_H
#define LOCKLAB_LAB_PARK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include <locklab/park.h>

#include "lab.h"

struct lab_layout_ops {
	const char *name;
	int (*park)(const void *addr, const struct lk_park_ops *ops, void *ctx, lk_token_t park_token,
		    const struct timespec *deadline, clockid_t clock, lk_token_t *unpark_token);
	int (*unpark_one)(const void *addr, lk_token_t (*callback)(void *ctx, struct lk_unpark_result r),
			  void *ctx);
	int (*unpark_all)(const void *addr, lk_token_t token);
	int (*unpark_requeue)(const void *from, const void *to, enum lk_requeue_op (*validate)(void *ctx),
			      lk_token_t (*callback)(void *ctx, enum lk_requeue_op op, struct lk_unpark_result r),
			      void *ctx);
	int (*unpark_filter)(const void *addr, enum lk_filter_op (*filter)(void *ctx, lk_token_t park_token),
			     lk_token_t (*callback)(void *ctx, struct lk_unpark_result r), void *ctx);
	void (*get_stats)(struct lk_park_stats *st);
	int (*reserve)(size_t nbuckets);
};

/* Choices of every futex workload's --lock, the compared dimension. */
#define LAB_FX_CHOICES "kernel,packed,split,lean,lk_park"

struct lab_fx {
	const char *name;
	const struct lab_layout_ops *lot;	/* NULL: the kernel futex */
};

/* 0, or the bad-input exit status 2 after a message naming --lock. */
int lab_fx_resolve(const char *name, struct lab_fx *fx);
/* Emits "lock", and for a layout its bucket bytes, buckets, table/retired bytes and resizes. */
void lab_fx_emit(struct lab_json *j, const struct lab_fx *fx);

#define LAB_FXPOOL_STOP 0xffffffffu

struct lab_fxpool {
	struct lab_fx fx;
	unsigned n;
	_Atomic uint32_t gen __attribute__((aligned(LAB_CACHELINE)));	/* waiters wait while == round */
	_Atomic uint32_t f2 __attribute__((aligned(LAB_CACHELINE)));	/* requeue target */
	_Atomic uint64_t announced __attribute__((aligned(LAB_CACHELINE)));	/* cumulative */
	_Atomic uint64_t lot_sleeping;						/* cumulative before_sleep */
	_Atomic uint64_t woken;							/* cumulative returns */
	pthread_t *th;
	_Atomic pid_t *tid;
};

/* Starts n waiters (round 0: they wait on gen == 0). 0 or an errno value. */
int lab_fxpool_start(struct lab_fxpool *p, const struct lab_fx *fx, unsigned n);	/* prints why it failed */
/* Waits until every waiter announced round `round` and sleeps; 0, or ETIMEDOUT after 10 s. */
int lab_fxpool_wait_asleep(struct lab_fxpool *p, uint32_t round);
/* Waits until all n waiters of the round have returned from their wait (after a wake). */
int lab_fxpool_wait_woken(struct lab_fxpool *p, uint32_t round);
/* Wakes every waiter on gen and f2 for good and joins them. */
void lab_fxpool_stop(struct lab_fxpool *p);

/* The round's samples: emits {"n","median_ns","min_ns","max_ns","mean_ns","p90_ns","samples_ns":[...]}. */
void lab_fx_emit_samples(struct lab_json *j, const char *key, uint64_t *ns, size_t n);

uint64_t lab_fx_median(const uint64_t *ns, size_t n);

/*
 * Wakes `share` waiters on addr, `nwake` per call (0 = broadcast calls), until `share` were woken
 * (or a million calls in a row woke nobody); returns how many were woken, *calls how many calls.
 * Kernel: FUTEX_WAKE(nwake); lot: unpark_one (1), unpark_all (0), unpark_filter stopping at nwake.
 */
unsigned lab_fx_wake_n(const struct lab_fx *fx, _Atomic uint32_t *addr, unsigned share, unsigned nwake,
		       unsigned *calls);

#endif /* LOCKLAB_LAB_PARK_H */
