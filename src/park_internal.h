/* SPDX-License-Identifier: MIT */
/*
 * src/park_internal.h - what lk_mutex and lk_cond use of the parking lot beyond locklab/park.h.
 * Internal header: not installed, not exported from the shared library (src/locklab.map exports
 * lk_* only; these are lkp_*).
 *
 * lkp_park_ex() is lk_park() with two additions, both decided under the bucket lock:
 *
 *   validate(ctx) returns WHERE to queue: LKP_PARK_NO (do not park: LK_PARK_INVALID), LKP_PARK_TAIL
 *     (FIFO, as lk_park) or LKP_PARK_HEAD (in front of every thread queued in the bucket - so in
 *     front of every thread parked on the same address). lk_mutex queues a waiter that parks again
 *     in the same lock call at the head (Go's sync.Mutex does the same: the longest waiter stays
 *     first).
 *
 *   expired(ctx, addr, &park_token, &deadline, &clock), when the deadline passed and the thread is
 *     STILL queued: return true to stay queued where it is, with the deadline and clock replaced (NULL: no
 *     deadline) and *park_token possibly changed (unparkers' filters see the new one); false to
 *     time out as lk_park does (dequeued, then timed_out(ctx, addr, was_last_thread)). lk_mutex
 *     uses it to record "this waiter is owed a handoff" at its handoff deadline without losing its
 *     place. A thread already unparked when it takes the bucket lock returns LK_PARK_UNPARKED and
 *     expired() is not called.
 *
 * lkp_park_has_waiters_locked(addr): is any thread queued on addr? Only from a callback that runs
 *   under addr's bucket lock (validate, timed_out, expired, an unpark/requeue callback or validate).
 * lkp_park_has_waiters(addr): the same, taking the bucket lock itself.
 */
#ifndef LOCKLAB_SRC_PARK_INTERNAL_H
#define LOCKLAB_SRC_PARK_INTERNAL_H

#include <stdbool.h>
#include <time.h>

#include "locklab/park.h"

enum { LKP_PARK_NO = 0, LKP_PARK_TAIL = 1, LKP_PARK_HEAD = 2 };

struct lkp_park_ops {
	int (*validate)(void *ctx);					/* under the bucket lock */
	void (*before_sleep)(void *ctx);				/* bucket unlocked */
	bool (*expired)(void *ctx, const void *addr, lk_token_t *park_token,
			const struct timespec **deadline, clockid_t *clock);	/* under the bucket lock */
	void (*timed_out)(void *ctx, const void *addr, bool was_last_thread);	/* under the bucket lock */
};

/* The library's instance (src/park.c); park_impl.h defines one per instance with its own prefix. */
int lkp_park_ex(const void *addr, const struct lkp_park_ops *ops, void *ctx, lk_token_t park_token,
		const struct timespec *deadline, clockid_t clock, lk_token_t *unpark_token);
bool lkp_park_has_waiters_locked(const void *addr);
bool lkp_park_has_waiters(const void *addr);

#endif /* LOCKLAB_SRC_PARK_INTERNAL_H */
