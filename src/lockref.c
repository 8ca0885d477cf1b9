/* SPDX-License-Identifier: MIT */
/*
 * src/lockref.c - lockref operations (word layout, invariants and ordering: include/locklab/lockref.h).
 *
 * Every operation is the same two-stage shape (the kernel's CMPXCHG_LOOP):
 *
 *	old = word                                   (relaxed)
 *	limit = retry limit; 0 -> stage 2
 *	while old.lock == 0:
 *		new = old with the count changed     (or: the condition fails -> return at once)
 *		cmpxchg(word, old, new) ok -> return (old is refreshed on failure: no re-read)
 *		cas_failures++; --limit == 0 -> fallback_retry++, stage 2
 *	fallback_locked++ (the loop ended because the lock was seen held)
 *	stage 2: take the spinlock, do the change on a stable count, release
 *
 * No lk_cpu_relax() between attempts: the failed cmpxchg returned the current value with the line
 * owned, and relaxing only gives the line away again (seed 002; the kernel dropped its cpu_relax()
 * from this loop in 2023). The retry limit, not a delay, is what bounds the damage under contention.
 *
 * The spinlock is a test-and-test-and-set on bit 0 of the same word (a separate lock object could not
 * be compared-and-swapped together with the count), acquired by cmpxchg from an unlocked value and
 * released by a store, which is safe because nobody else writes the word while it is held.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>

#include "locklab/lockref.h"
#include "locklab/relax.h"

#define LR_LOCKED	1ull

static _Atomic int global_retry = LK_LOCKREF_RETRY_DEFAULT;
static __thread struct lk_lockref_stats lr_stats;

static inline int32_t lr_count(uint64_t w)
{
	return (int32_t)(uint32_t)(w >> 32);
}

static inline uint64_t lr_word(uint32_t count, uint64_t lock)
{
	return ((uint64_t)count << 32) | lock;
}

static inline int lr_limit(const struct lk_lockref *lr)
{
	/* relaxed (both): a tuning knob; no other memory is published with it */
	uint32_t p = atomic_load_explicit(&lr->retry_plus1, memory_order_relaxed);

	return p ? (int)(p - 1) : atomic_load_explicit(&global_retry, memory_order_relaxed);
}

/*
 * The lockless stage. CODE computes `cnt` (uint32_t, the new count) from `c` (int32_t, the old
 * count) and may `return` at once; SUCCESS runs after a successful cmpxchg with the given order.
 * Falls through to the caller's locked stage when it gives up.
 */
#define CMPXCHG_LOOP(lr, ORDER, CODE, SUCCESS)                                                      \
	do {                                                                                        \
		int limit_ = lr_limit(lr);                                                          \
		/* relaxed: the cmpxchg validates the value we compute from */                      \
		uint64_t old_ = atomic_load_explicit(&(lr)->lock_count, memory_order_relaxed);      \
		if (limit_ == 0) {                                                                  \
			lr_stats.lockless_disabled++;                                               \
			break;                                                                      \
		}                                                                                   \
		while (!(old_ & LR_LOCKED)) {                                                       \
			int32_t c = lr_count(old_);                                                 \
			uint32_t cnt;                                                               \
			(void)c;                                                                    \
			CODE;                                                                       \
			if (__builtin_expect(atomic_compare_exchange_strong_explicit(               \
				&(lr)->lock_count, &old_, lr_word(cnt, 0), ORDER,                   \
				memory_order_relaxed), 1)) {                                        \
				SUCCESS;                                                            \
			}                                                                           \
			lr_stats.cas_failures++;                                                    \
			if (limit_ != LK_LOCKREF_RETRY_UNBOUNDED && !--limit_) {                    \
				lr_stats.fallback_retry++;                                          \
				break;                                                              \
			}                                                                           \
		}                                                                                   \
		if (old_ & LR_LOCKED)                                                               \
			lr_stats.fallback_locked++;                                                 \
	} while (0)

/* ACQUIRE after the count reached zero; TSan does not model fences (see lk_refcount's twin). */
static inline void lr_acquire_after_zero(struct lk_lockref *lr)
{
#if defined(__SANITIZE_THREAD__)
	/* acquire: pairs with the release cmpxchgs of the other puts (release sequence on the word) */
	(void)atomic_load_explicit(&lr->lock_count, memory_order_acquire);
#else
	(void)lr;
	/* acquire: pairs with the release cmpxchgs of the other puts */
	atomic_thread_fence(memory_order_acquire);
#endif
}

void lk_lockref_init(struct lk_lockref *lr, int count)
{
	/* relaxed: initialisation, published by whatever hands `lr` to other threads */
	atomic_store_explicit(&lr->lock_count, lr_word((uint32_t)count, 0), memory_order_relaxed);
	atomic_store_explicit(&lr->retry_plus1, 0, memory_order_relaxed);
}

void lk_lockref_lock(struct lk_lockref *lr)
{
	/* relaxed: the cmpxchg validates */
	uint64_t old = atomic_load_explicit(&lr->lock_count, memory_order_relaxed);
	unsigned spins = 0;

	for (;;) {
		if (!(old & LR_LOCKED)) {
			/* acquire: pairs with the release store in lk_lockref_unlock(). 0 -> 1 */
			if (atomic_compare_exchange_weak_explicit(&lr->lock_count, &old, old | LR_LOCKED,
								  memory_order_acquire, memory_order_relaxed))
				return;
			continue;
		}
		lk_spin_wait(&spins);
		/* relaxed: test before test-and-set; the cmpxchg above carries the acquire */
		old = atomic_load_explicit(&lr->lock_count, memory_order_relaxed);
	}
}

int lk_lockref_unlock(struct lk_lockref *lr)
{
	/* relaxed: while held only the holder writes the word, so this is the current value */
	uint64_t w = atomic_load_explicit(&lr->lock_count, memory_order_relaxed);

	if (!(w & LR_LOCKED))
		return EPERM;
	/*
	 * release: pairs with the acquire cmpxchg in lk_lockref_lock() and with the lockless
	 * cmpxchgs' reads of the word (they compute the next count from the value we publish).
	 */
	atomic_store_explicit(&lr->lock_count, w & ~LR_LOCKED, memory_order_release);
	return 0;
}

/* Holder-only count update: nobody else writes the word while it is held. */
static inline void lr_set_locked(struct lk_lockref *lr, uint32_t count)
{
	/* relaxed: the word is ours until unlock, whose release store publishes this */
	atomic_store_explicit(&lr->lock_count, lr_word(count, LR_LOCKED), memory_order_relaxed);
}

static inline int32_t lr_locked_count(struct lk_lockref *lr)
{
	/* relaxed: stable while we hold the lock */
	return lr_count(atomic_load_explicit(&lr->lock_count, memory_order_relaxed));
}

void lk_lockref_get(struct lk_lockref *lr)
{
	/* relaxed: taking a reference publishes nothing */
	CMPXCHG_LOOP(lr, memory_order_relaxed, cnt = (uint32_t)c + 1, return);
	lk_lockref_lock(lr);
	lr_set_locked(lr, (uint32_t)lr_locked_count(lr) + 1);
	lk_lockref_unlock(lr);
}

bool lk_lockref_get_not_zero(struct lk_lockref *lr)
{
	bool ret = false;

	CMPXCHG_LOOP(lr, memory_order_relaxed,
		     if (c <= 0) return false; cnt = (uint32_t)c + 1,
		     return true);
	lk_lockref_lock(lr);
	if (lr_locked_count(lr) > 0) {
		lr_set_locked(lr, (uint32_t)lr_locked_count(lr) + 1);
		ret = true;
	}
	lk_lockref_unlock(lr);
	return ret;
}

bool lk_lockref_get_not_dead(struct lk_lockref *lr)
{
	bool ret = false;

	CMPXCHG_LOOP(lr, memory_order_relaxed,
		     if (c < 0) return false; cnt = (uint32_t)c + 1,
		     return true);
	lk_lockref_lock(lr);
	if (lr_locked_count(lr) >= 0) {
		lr_set_locked(lr, (uint32_t)lr_locked_count(lr) + 1);
		ret = true;
	}
	lk_lockref_unlock(lr);
	return ret;
}

bool lk_lockref_put_not_zero(struct lk_lockref *lr)
{
	bool ret = false;

	/* release: our accesses to the object happen-before whoever drops the last reference */
	CMPXCHG_LOOP(lr, memory_order_release,
		     if (c <= 1) return false; cnt = (uint32_t)c - 1,
		     return true);
	lk_lockref_lock(lr);
	if (lr_locked_count(lr) > 1) {
		lr_set_locked(lr, (uint32_t)lr_locked_count(lr) - 1);
		ret = true;
	}
	lk_lockref_unlock(lr);
	return ret;
}

int lk_lockref_put_return(struct lk_lockref *lr)
{
	/* release: as put_not_zero; the acquire fence on reaching 0 pairs with the other puts' release */
	CMPXCHG_LOOP(lr, memory_order_release,
		     if (c <= 0) return -1; cnt = (uint32_t)c - 1,
		     if (cnt == 0) lr_acquire_after_zero(lr); return (int)cnt);
	return -1;
}

bool lk_lockref_put_or_lock(struct lk_lockref *lr)
{
	/* release: as put_not_zero */
	CMPXCHG_LOOP(lr, memory_order_release,
		     if (c <= 1) break; cnt = (uint32_t)c - 1,
		     return true);
	lk_lockref_lock(lr);
	if (lr_locked_count(lr) <= 1)
		return false;	/* with the lock held */
	lr_set_locked(lr, (uint32_t)lr_locked_count(lr) - 1);
	lk_lockref_unlock(lr);
	return true;
}

int lk_lockref_mark_dead(struct lk_lockref *lr)
{
	return lk_lockref_set_count_locked(lr, LK_LOCKREF_DEAD);
}

bool lk_lockref_is_dead(const struct lk_lockref *lr)
{
	return lk_lockref_count(lr) < 0;
}

int lk_lockref_count(const struct lk_lockref *lr)
{
	/* relaxed: a snapshot; stable only under the lock */
	return lr_count(atomic_load_explicit(&((struct lk_lockref *)lr)->lock_count, memory_order_relaxed));
}

int lk_lockref_set_count_locked(struct lk_lockref *lr, int count)
{
	/* relaxed: only checks that *somebody* holds the lock; the caller is supposed to be that one */
	if (!(atomic_load_explicit(&lr->lock_count, memory_order_relaxed) & LR_LOCKED))
		return EPERM;
	lr_set_locked(lr, (uint32_t)count);
	return 0;
}

int lk_lockref_set_retry_limit(struct lk_lockref *lr, int limit)
{
	if (limit < 0)
		return EINVAL;
	/* relaxed: a tuning knob (see lr_limit) */
	atomic_store_explicit(&lr->retry_plus1, (uint32_t)limit + 1, memory_order_relaxed);
	return 0;
}

void lk_lockref_use_global_retry_limit(struct lk_lockref *lr)
{
	/* relaxed: a tuning knob (see lr_limit) */
	atomic_store_explicit(&lr->retry_plus1, 0, memory_order_relaxed);
}

int lk_lockref_retry_limit(const struct lk_lockref *lr)
{
	return lr_limit(lr);
}

int lk_lockref_set_global_retry_limit(int limit)
{
	if (limit < 0)
		return EINVAL;
	/* relaxed: a tuning knob (see lr_limit) */
	atomic_store_explicit(&global_retry, limit, memory_order_relaxed);
	return 0;
}

int lk_lockref_global_retry_limit(void)
{
	/* relaxed: a tuning knob */
	return atomic_load_explicit(&global_retry, memory_order_relaxed);
}

void lk_lockref_stats_get(struct lk_lockref_stats *out)
{
	*out = lr_stats;
}

void lk_lockref_stats_reset(void)
{
	lr_stats = (struct lk_lockref_stats){ 0 };
}

const struct lk_lockref_stats *lk_lockref_stats_self(void)
{
	return &lr_stats;
}
