/* SPDX-License-Identifier: MIT */
/*
 * locklab/park.h - the parking lot: a userspace futex.
 *
 * Threads park on an *address* (any 4-byte aligned address, usually the lock word of the primitive
 * they wait for) in a hashed table of wait-queue buckets; another thread unparks them by the same
 * address. Each parked thread sleeps on its own per-thread futex word, so locklab's locks never pile
 * onto one kernel futex hash bucket, and the primitive built on top decides everything else through
 * the callbacks below, run under the bucket lock (as the kernel's futex value check is):
 *
 *   lk_park(addr, ops, ctx, park_token, deadline, clock, &unpark_token)
 *     locks addr's bucket; calls ops->validate(ctx) (NULL = true); if false unlocks and returns
 *     LK_PARK_INVALID. Otherwise enqueues the caller (FIFO per address), unlocks, calls
 *     ops->before_sleep(ctx) (may be NULL), and sleeps until unparked (LK_PARK_UNPARKED, with the
 *     token the unparker chose) or until the absolute deadline on `clock` (CLOCK_MONOTONIC or
 *     CLOCK_REALTIME; NULL = none) passes: then, with the bucket locked and the caller removed,
 *     ops->timed_out(ctx, addr, was_last_thread) runs and LK_PARK_TIMEDOUT is returned. A deadline
 *     already past returns LK_PARK_TIMEDOUT at once (after validate, and calling timed_out).
 *     Spurious wakeups of the underlying futex never surface: lk_park returns only for the three
 *     reasons above, or with -EDEADLK at once when the calling thread is inside lk_park already
 *     (its before_sleep callback, or something that callback calls, parks: see below).
 *
 *   lk_unpark_one(addr, callback, ctx)
 *     dequeues the oldest thread parked on addr (if any), then, still under the bucket lock, calls
 *     callback(ctx, result) whose return value becomes that thread's unpark token; result tells how
 *     many threads were unparked (0 or 1), whether others remain on addr (so a lock can clear its
 *     "parked" bit atomically with the last wakeup), and how long the unparked thread had waited
 *     (so a lock can hand itself over to a waiter that waited too long).
 *   lk_unpark_all(addr, token)         unparks every thread on addr; returns how many.
 *   lk_unpark_requeue(from, to, validate, callback, ctx)
 *     under both buckets' locks: validate(ctx) picks an operation (abort, unpark one and requeue the
 *     rest, requeue all, ...); the chosen threads move to `to` keeping their order; callback(ctx, op,
 *     result) runs before unlocking and returns the token for the unparked thread, if any.
 *   lk_unpark_filter(addr, filter, callback, ctx)
 *     walks addr's queue in order, asking filter(ctx, park_token) to unpark, skip or stop.
 *
 * Every function returns -EINVAL for a NULL or unaligned (not 4-byte aligned) address, and lk_park
 * returns -EINVAL for a deadline whose tv_nsec is outside [0, 1e9) or a clock other than the two above.
 *
 * Callbacks run under a bucket lock - validate, timed_out, lk_unpark_one's callback, lk_unpark_requeue's
 * validate and callback, lk_unpark_filter's filter and callback - must not call into the parking lot:
 * no lk_park, lk_unpark_*, lk_park_reserve, and nothing built on it (lk_mutex_lock/unlock, lk_cond_*),
 * on any address. On an address of the same bucket (the same address, or any that hashes there) the
 * thread waits for the bucket lock it holds itself: a self-deadlock. On another bucket it takes a
 * second bucket lock out of the index order that table growth and the two-bucket operations follow:
 * an AB-BA deadlock with a concurrent grow() or another such callback. (parking_lot documents the same
 * rule.) They also must not block or run long: every park and unpark of the bucket waits for them.
 * Decide under the lock, act after: record what to wake in ctx and call lk_unpark_* once the call that
 * ran the callback has returned. before_sleep runs with the bucket unlocked and may unpark through the
 * lot (lk_cond unlocks its mutex there, which may unpark), but must not park: the thread is queued
 * already, and it has one queue record. A park there returns -EDEADLK and changes nothing; so do
 * lk_mutex_timedlock and lk_cond_wait/timedwait (EDEADLK, m still held) when they would sleep, and
 * lk_mutex_lock, which has no error to return, aborts with a message (a free mutex is taken without
 * parking, as anywhere). parking_lot has the same rule. Nothing here is async-signal-safe: a signal
 * handler must not call into the lot. lk_park_get_stats takes no lock and may be called anywhere.
 *
 * The table keeps at least LK_PARK_BUCKETS_PER_THREAD buckets per live thread (a power of two) and
 * grows as threads appear; growth never waits for the table to go idle (see src/park.c).
 */
#ifndef LOCKLAB_PARK_H
#define LOCKLAB_PARK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>	/* clockid_t (<time.h> has it only with POSIX feature macros) */
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uintptr_t lk_token_t;
#define LK_TOKEN_NORMAL ((lk_token_t)0)	/* the default token: nothing special is handed over */

enum lk_park_status {
	LK_PARK_UNPARKED = 0,	/* woken by an unpark; *unpark_token holds the unparker's token */
	LK_PARK_INVALID = 1,	/* validate() returned false: the caller did not sleep */
	LK_PARK_TIMEDOUT = 2,	/* the deadline passed; timed_out() ran under the bucket lock */
};

/* Callbacks "under the bucket lock" must not call into the parking lot (see the top of this file). */
struct lk_park_ops {
	bool (*validate)(void *ctx);				/* under the bucket lock */
	void (*before_sleep)(void *ctx);			/* bucket unlocked, before sleeping */
	void (*timed_out)(void *ctx, const void *addr, bool was_last_thread);	/* under the bucket lock */
};

struct lk_unpark_result {
	unsigned unparked_threads;	/* threads unparked by this call */
	unsigned requeued_threads;	/* threads moved by lk_unpark_requeue */
	bool have_more_threads;		/* threads remain parked on the address after this call */
	uint64_t waited_ns;		/* how long the (first) unparked thread had been parked, else 0 */
};

int lk_park(const void *addr, const struct lk_park_ops *ops, void *ctx, lk_token_t park_token,
	    const struct timespec *deadline, clockid_t clock, lk_token_t *unpark_token);

int lk_unpark_one(const void *addr, lk_token_t (*callback)(void *ctx, struct lk_unpark_result r), void *ctx);

int lk_unpark_all(const void *addr, lk_token_t token);	/* >= 0: threads unparked */

enum lk_requeue_op {
	LK_REQUEUE_ABORT = 0,		/* do nothing */
	LK_REQUEUE_UNPARK_ONE_REQUEUE_REST,
	LK_REQUEUE_REQUEUE_ALL,
	LK_REQUEUE_UNPARK_ONE,
	LK_REQUEUE_REQUEUE_ONE,
};

/* >= 0: threads unparked + requeued (the split is in the callback's result). */
int lk_unpark_requeue(const void *from, const void *to, enum lk_requeue_op (*validate)(void *ctx),
		      lk_token_t (*callback)(void *ctx, enum lk_requeue_op op, struct lk_unpark_result r),
		      void *ctx);

enum lk_filter_op { LK_FILTER_UNPARK, LK_FILTER_SKIP, LK_FILTER_STOP };

/* >= 0: threads unparked. callback may be NULL (token LK_TOKEN_NORMAL). */
int lk_unpark_filter(const void *addr, enum lk_filter_op (*filter)(void *ctx, lk_token_t park_token),
		     lk_token_t (*callback)(void *ctx, struct lk_unpark_result r), void *ctx);

/* Introspection for the lab and tests. */
struct lk_park_stats {
	size_t buckets;			/* buckets in the current table */
	size_t bucket_bytes;		/* bytes per bucket of the compiled layout */
	size_t table_bytes;		/* buckets * bucket_bytes + header, current table */
	size_t retired_bytes;		/* old tables still held (bounded; see src/park.c) */
	size_t live_threads;		/* threads that have used the parking lot and not exited */
	uint64_t resizes;		/* tables installed since start */
	const char *layout;		/* "packed", "split" or "lean" */
};
void lk_park_get_stats(struct lk_park_stats *st);

/*
 * Grow the table now to at least `nbuckets` buckets (rounded up to a power of two), as
 * PR_FUTEX_HASH_SET_SLOTS does for the kernel's private hash; the table still grows with the thread
 * count afterwards and never shrinks. 0, -EINVAL (nbuckets 0 or above 2^24), or -ENOMEM (the new table
 * could not be allocated; the old one keeps working).
 */
int lk_park_reserve(size_t nbuckets);

#define LK_PARK_BUCKETS_PER_THREAD 3

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_PARK_H */
