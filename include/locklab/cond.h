/* SPDX-License-Identifier: MIT */
/*
 * locklab/cond.h - lk_cond: a condition variable for lk_mutex, built on the parking lot.
 *
 * State: one word holding the address of the lk_mutex that current waiters use, or 0 when nobody
 * waits. Waiters park on the condvar's own address. lk_cond_signal moves one waiter straight onto the
 * mutex's queue when the mutex is held (it would only block on it), else wakes it; lk_cond_broadcast
 * wakes one waiter and requeues all the others onto the mutex (no thundering herd: they are woken one
 * at a time by mutex unlocks). See src/cond.c for the invariants.
 *
 * Semantics are POSIX's: wait atomically releases the mutex and sleeps; it returns with the mutex
 * held again. Spurious wakeups are possible (callers re-check their predicate in a loop); a signal or
 * broadcast issued after a waiter released the mutex inside wait is never lost. Ordering: everything a
 * signaller did before releasing the mutex is visible to the woken waiter once wait returns (the
 * mutex provides it).
 *
 * Misuse: waiting with a mutex the caller does not hold - EPERM when the mutex is unlocked (a mutex
 * held by another thread cannot be told apart); waiting on one condvar with two different mutexes at
 * the same time - EINVAL (the second waiter returns at once, still holding its mutex).
 *
 * Fork: a child forked while a parent thread waited on c can use c with any mutex (the record of the
 * parent waiter's mutex is recognised as stale: nobody is queued on c in the child).
 */
#ifndef LOCKLAB_COND_H
#define LOCKLAB_COND_H

#include "locklab/atomic-internal.h"
#include <stdint.h>
#include <sys/types.h>	/* clockid_t (<time.h> has it only with POSIX feature macros) */
#include <time.h>

#include "locklab/mutex.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lk_cond {
	LK_ATOMIC(uintptr_t) mutex;	/* the waiters' lk_mutex, 0 = no waiters */
} lk_cond_t;

/* A statically initialised condvar; equivalent to lk_cond_init(). */
#define LK_COND_INITIALIZER { 0 }

/* Returns 0, or EINVAL when c is NULL. Allocates nothing. */
int lk_cond_init(lk_cond_t *c);

/* Returns 0, EINVAL when c is NULL, or EBUSY when threads are waiting on c (nothing changes). */
int lk_cond_destroy(lk_cond_t *c);

/*
 * Releases m (which the caller holds), sleeps until signalled, and re-acquires m before returning.
 * Returns 0 (possibly spuriously), EINVAL (c or m NULL, or c is in use with another mutex; m still
 * held, no sleep), EPERM (m is not locked), or EDEADLK (called from a before_sleep callback of lk_park,
 * where the thread is parked already: locklab/park.h; m still held, no sleep).
 */
int lk_cond_wait(lk_cond_t *c, lk_mutex_t *m);

/*
 * As lk_cond_wait, but gives up when the absolute deadline *abs on `clock` (CLOCK_MONOTONIC or
 * CLOCK_REALTIME) passes: returns ETIMEDOUT, with m held again. EINVAL also for abs NULL, another
 * clock, or abs->tv_nsec outside [0, 1e9) (checked first; m stays held). A deadline already past
 * returns ETIMEDOUT after releasing and re-acquiring m, as POSIX allows.
 */
int lk_cond_timedwait(lk_cond_t *c, lk_mutex_t *m, clockid_t clock, const struct timespec *abs);

/*
 * Wakes (or moves onto the mutex) one waiter, if any. Returns 0, or EINVAL when c is NULL. May be
 * called with or without the mutex held; a waiter that released the mutex before the signaller took
 * it is always seen.
 */
int lk_cond_signal(lk_cond_t *c);

/* Wakes one waiter and requeues the rest onto the mutex. Returns 0, or EINVAL when c is NULL. */
int lk_cond_broadcast(lk_cond_t *c);

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_COND_H */
