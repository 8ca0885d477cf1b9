/* SPDX-License-Identifier: MIT */
/*
 * locklab/lockref.h - a reference count and a spinlock in one 64-bit word (the kernel's lockref):
 * while the lock is free, the count is changed by a lockless cmpxchg on the whole word; anything more
 * complicated takes the lock, under which the count is stable.
 *
 * Word (lock_count, 64 bits):
 *
 *	 63                              32 31                               0
 *	+----------------------------------+----------------------------------+
 *	|        count (int32_t)           |   lock: 0 = free, 1 = held       |
 *	+----------------------------------+----------------------------------+
 *
 *	             lockless cmpxchg: count +/- 1, only from lock == 0
 *	          +--------------------------------------------------------+
 *	          v                                                        |
 *	  [ free, count=n ] --lk_lockref_lock()--> [ held, count=n ] --unlock--> [ free, count=n' ]
 *	                                             holder may change count (set_count_locked, mark_dead)
 *
 * Invariants: the count changes only by a cmpxchg that saw the lock free, or by the lock holder; a
 * lockless cmpxchg never succeeds while the lock is held (it compares the whole word), so the holder
 * sees a stable count. A count < 0 means dead (lk_lockref_mark_dead sets -128, as the kernel does).
 *
 * Bounded retries (seed 002): the lockless loop gives up after `retry limit` cmpxchg attempts and takes
 * the spinlock instead; once one thread holds the lock, every other thread sees it held and falls back
 * too (Linus: "the retry value probably isn't all that important"). The limit is settable at run time,
 * globally (lk_lockref_set_global_retry_limit, default LK_LOCKREF_RETRY_DEFAULT = 100, the kernel's
 * value) or per lockref (lk_lockref_set_retry_limit). A limit of 0 disables the lockless path (every
 * operation takes the spinlock: what "disable lockref" did at compile time, now per object and at run
 * time); LK_LOCKREF_RETRY_UNBOUNDED restores the pre-2019 unbounded loop.
 *
 * Statistics: per-thread counters (lk_lockref_stats_get) of cmpxchg failures and fallbacks. They are
 * only touched on a failed cmpxchg or a fallback, so the uncontended path pays nothing for them.
 *
 * Memory: 16 bytes (8 for the word, 4 for the per-lockref retry limit, 4 padding); the kernel's is 8.
 *
 * Ordering: gets are RELAXED (taking a reference orders nothing: the caller already has a way to reach
 * the object, like refcount_inc). Puts are RELEASE, and a put that observes the count reaching zero
 * (put_return returning 0) is followed by an ACQUIRE fence, so the caller that frees sees every other
 * holder's accesses. Whatever happens under the lock is ordered by the lock (ACQUIRE/RELEASE).
 *
 * No overflow checking (as the kernel's lockref): the count wraps as an unsigned 32-bit value at
 * 2^31 references. Use lk_refcount where saturation matters.
 */
#ifndef LOCKLAB_LOCKREF_H
#define LOCKLAB_LOCKREF_H

#include <limits.h>
#include "locklab/atomic-internal.h"
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lk_lockref {
	LK_ATOMIC(uint64_t) lock_count;
	LK_ATOMIC(uint32_t) retry_plus1;	/* 0 = use the global limit, else limit + 1 */
};

#define LK_LOCKREF_INIT(count) { (uint64_t)(uint32_t)(count) << 32, 0 }
#define LK_LOCKREF_RETRY_DEFAULT	100
#define LK_LOCKREF_RETRY_UNBOUNDED	INT_MAX
#define LK_LOCKREF_DEAD			(-128)

/* Per-thread counters, cumulative since the thread started (or the last lk_lockref_stats_reset). */
struct lk_lockref_stats {
	uint64_t cas_failures;		/* lockless cmpxchg attempts that lost to another update */
	uint64_t fallback_retry;	/* operations that gave up after `retry limit` failed attempts */
	uint64_t fallback_locked;	/* operations that found the spinlock held and took it (or failed) */
	uint64_t lockless_disabled;	/* operations that went straight to the lock (retry limit 0) */
};

/* Initialises count, lock free, retry limit = global. Not atomic w.r.t. concurrent users. */
void lk_lockref_init(struct lk_lockref *lr, int count);

/* Takes / releases the embedded spinlock. lock: ACQUIRE; unlock: RELEASE, 0 or EPERM if not held. */
void lk_lockref_lock(struct lk_lockref *lr);
int lk_lockref_unlock(struct lk_lockref *lr);

/* count + 1, unconditionally (also on a dead lockref, as the kernel's lockref_get). RELAXED. */
void lk_lockref_get(struct lk_lockref *lr);
/* count + 1 if count > 0; returns whether it did. RELAXED. */
bool lk_lockref_get_not_zero(struct lk_lockref *lr);
/* count + 1 if count >= 0 (not dead); returns whether it did. RELAXED. */
bool lk_lockref_get_not_dead(struct lk_lockref *lr);
/* count - 1 if count > 1; returns whether it did (false: the caller must take the lock). RELEASE. */
bool lk_lockref_put_not_zero(struct lk_lockref *lr);
/*
 * Lockless count - 1 if count > 0: returns the new count, or -1 when the count was <= 0 or the
 * lockless path could not be used (lock held, retry limit reached or 0); the caller then takes the
 * lock and decides. RELEASE; ACQUIRE fence when it returns 0.
 */
int lk_lockref_put_return(struct lk_lockref *lr);
/*
 * count - 1 if count > 1 and returns true; otherwise returns false WITH THE LOCK HELD and the count
 * unchanged (the caller drops the last reference under the lock). RELEASE; the false case is ACQUIRE.
 */
bool lk_lockref_put_or_lock(struct lk_lockref *lr);
/* Marks a lockref dead (count = -128). The caller must hold the lock: EPERM if it is not held. */
int lk_lockref_mark_dead(struct lk_lockref *lr);
/* count < 0 (relaxed snapshot) */
bool lk_lockref_is_dead(const struct lk_lockref *lr);
/* The count now (relaxed snapshot; stable while the caller holds the lock). */
int lk_lockref_count(const struct lk_lockref *lr);
/* Sets the count; the caller must hold the lock (EPERM otherwise). */
int lk_lockref_set_count_locked(struct lk_lockref *lr, int count);

/*
 * Retry limits: the number of lockless cmpxchg attempts before falling back to the spinlock. 0
 * disables the lockless path, LK_LOCKREF_RETRY_UNBOUNDED never gives up. Negative: EINVAL (nothing
 * changes). Changes apply to operations that start afterwards (relaxed: a limit is a tuning knob,
 * not something other memory depends on).
 */
int lk_lockref_set_retry_limit(struct lk_lockref *lr, int limit);
void lk_lockref_use_global_retry_limit(struct lk_lockref *lr);
int lk_lockref_retry_limit(const struct lk_lockref *lr);	/* the effective limit */
int lk_lockref_set_global_retry_limit(int limit);
int lk_lockref_global_retry_limit(void);

void lk_lockref_stats_get(struct lk_lockref_stats *out);	/* the calling thread's counters */
void lk_lockref_stats_reset(void);
/* Cheap pointer to the calling thread's counters (for per-operation sampling in benchmarks). */
const struct lk_lockref_stats *lk_lockref_stats_self(void);

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_LOCKREF_H */
