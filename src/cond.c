/* SPDX-License-Identifier: MIT */
/*
 * src/cond.c - lk_cond on the parking lot (the parking_lot Condvar design, on lk_mutex).
 *
 * Data: c->mutex = address of the lk_mutex the current waiters passed, or 0 when no thread is parked
 * on &c->mutex. Waiters park on &c->mutex (park token 0); a requeue moves them to &m->word, where the
 * requeue counts them in the mutex's OWED count (transition CR of src/mutex.c): a requeued waiter is
 * handed the lock in queue order (TOKEN_HANDOFF), nobody barges past it, and the mutex's bound holds
 * for it from the requeue on. The mutex's unlock recognises it by its park token 0.
 *
 * Invariants (all changes of c->mutex happen under the bucket lock of &c->mutex):
 *  1. c->mutex != 0 iff threads are parked on &c->mutex (whenever c's bucket lock is free). Set by a
 *     waiter's validate(); cleared by the signal callback when it took the last waiter, by broadcast
 *     (which takes them all), or by the last waiter to time out. A child forked while a parent
 *     thread waited inherits c->mutex but not the waiter; a validate() that finds c->mutex set and
 *     nobody queued on &c->mutex knows it is stale and replaces it (wait) or clears it (signal,
 *     broadcast; destroy checks the queue too) - issue 12, defect 5.
 *  2. A waiter is queued (under the bucket lock) before it releases the mutex (before_sleep), so a
 *     signaller that takes the mutex afterwards, or that changed the predicate under it, finds the
 *     waiter queued: no lost wakeup.
 *  3. A requeued waiter sits on the mutex queue with PARKED set and counted in OWED: signal sets P
 *     with mark_parked_if_locked() in validate (the mutex is held, so its unlock will look) and adds
 *     to OWED in the callback; broadcast does the same, or - when it also unparked one thread, which
 *     runs and will lock and unlock the mutex (lk_mutex invariant 2: "free and PARKED" implies a
 *     running thread that takes the lock) - sets both in the callback (lkm_requeued, one CAS). A
 *     requeued waiter that times out on the mutex queue leaves OWED (lkm_requeued_timed_out).
 *
 *   waiter:   lock m -> park(&c->mutex) [validate: c->mutex = m] -> before_sleep: unlock m -> sleep
 *   signal:   requeue(&c->mutex -> &m->word): m held ? REQUEUE_ONE (+P on m, +1 owed) : UNPARK_ONE
 *   broadcast: c->mutex = 0; m held ? REQUEUE_ALL (+P, +n owed)
 *                                   : UNPARK_ONE_REQUEUE_REST (+P +n owed in callback)
 *   woken:    token HANDOFF ? own m : lock m;  requeued ones are handed m by its unlocks, one at a time
 */
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "locklab/cond.h"
#include "locklab/park.h"
#include "mutex_internal.h"
#include "park_internal.h"

int lk_cond_init(lk_cond_t *c)
{
	if (!c)
		return EINVAL;
	/* relaxed: initialisation; published by whatever hands `c` to other threads */
	atomic_store_explicit(&c->mutex, 0, memory_order_relaxed);
	return 0;
}

int lk_cond_destroy(lk_cond_t *c)
{
	if (!c)
		return EINVAL;
	/* relaxed: waiters set it before releasing the mutex; a destroyer that could race with them is
	 * already a use-after-free bug; this catches the detectable case of parked waiters */
	if (atomic_load_explicit(&c->mutex, memory_order_relaxed) == 0)
		return 0;
	/* recorded, but is anybody queued? (not in a child forked while a parent thread waited) */
	return lkp_park_has_waiters(&c->mutex) ? EBUSY : 0;
}

/* ---- wait --------------------------------------------------------------------------------------- */

struct wait_ctx {
	lk_cond_t *c;
	lk_mutex_t *m;
	bool bad;		/* c is in use with another mutex */
	bool unlocked;		/* before_sleep released m */
	bool requeued;		/* timed out while parked on the mutex: not a timeout for the caller */
};

/* Under c's bucket lock: claim c for m, or refuse a second mutex. */
static bool wait_validate(void *ctx)
{
	struct wait_ctx *w = ctx;
	/* relaxed: every store to c->mutex happens under this bucket lock, which we hold */
	uintptr_t cur = atomic_load_explicit(&w->c->mutex, memory_order_relaxed);

	if (cur == 0) {
		/*
		 * relaxed: signallers read it either under this bucket lock or after acquiring the mutex
		 * that we release (with release ordering) only after this store: invariant 2
		 */
		atomic_store_explicit(&w->c->mutex, (uintptr_t)w->m, memory_order_relaxed);
		return true;
	}
	if (cur != (uintptr_t)w->m) {
		/*
		 * Another mutex - unless nobody is queued here: then c->mutex is stale (invariant 1 holds
		 * under this bucket lock in a process; a child forked while a parent thread waited on c
		 * inherits the record but not the waiter). Claim c for m.
		 */
		if (!lkp_park_has_waiters_locked(&w->c->mutex)) {
			/* relaxed: as above */
			atomic_store_explicit(&w->c->mutex, (uintptr_t)w->m, memory_order_relaxed);
			return true;
		}
		w->bad = true;
		return false;
	}
	return true;
}

/* Bucket unlocked, we are queued: release the mutex (may unpark one of its waiters). */
static void wait_before_sleep(void *ctx)
{
	struct wait_ctx *w = ctx;

	w->unlocked = true;
	lk_mutex_unlock(w->m);
}

/* Under the bucket lock of `addr` (the condvar's, or the mutex's if we had been requeued). */
static void wait_timed_out(void *ctx, const void *addr, bool was_last_thread)
{
	struct wait_ctx *w = ctx;

	w->requeued = addr != (const void *)&w->c->mutex;
	if (w->requeued)
		/* on the mutex's queue we were owed a handoff: leave the count (and PARKED if last) */
		lkm_requeued_timed_out(w->m, was_last_thread);
	else if (was_last_thread)
		/* relaxed: under c's bucket lock (invariant 1) */
		atomic_store_explicit(&w->c->mutex, 0, memory_order_relaxed);
}

static const struct lk_park_ops wait_ops = {
	.validate = wait_validate,
	.before_sleep = wait_before_sleep,
	.timed_out = wait_timed_out,
};

static int do_wait(lk_cond_t *c, lk_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	struct wait_ctx w = { .c = c, .m = m };
	lk_token_t token = LK_TOKEN_NORMAL;

	/* relaxed: a misuse check on our own lock; if we hold it, L is ours and stable */
	if (!(atomic_load_explicit(&m->word, memory_order_relaxed) & LK_MUTEX_LOCKED))
		return EPERM;
	/* park token 0: how the mutex's unlock recognises a requeued condvar waiter (owed) */
	int r = lk_park(&c->mutex, &wait_ops, &w, 0, abs, clock, &token);

	if (r == LK_PARK_INVALID)
		return EINVAL;		/* w.bad: another mutex; m still held */
	if (r < 0)
		return -r;		/* -EDEADLK: called from a park's before_sleep; m still held */
	/*
	 * Cannot happen today: once validate() succeeds the parking lot calls before_sleep (which
	 * releases m) even when the deadline has already passed. Kept so that a change there can never
	 * make us re-lock a mutex we still hold.
	 */
	if (!w.unlocked)
		return r == LK_PARK_TIMEDOUT ? ETIMEDOUT : 0;
	if (r == LK_PARK_UNPARKED) {
		/* woken from the condvar (token normal), or from the mutex queue after a requeue, where
		 * the mutex's unlock may have handed us the lock or set WOKEN for us (TOKEN_WAKE) */
		lk_mutex_lock_unparked(m, token);
		return 0;
	}
	lk_mutex_lock(m);
	return r == LK_PARK_TIMEDOUT && !w.requeued ? ETIMEDOUT : 0;
}

int lk_cond_wait(lk_cond_t *c, lk_mutex_t *m)
{
	if (!c || !m)
		return EINVAL;
	return do_wait(c, m, CLOCK_MONOTONIC, NULL);
}

int lk_cond_timedwait(lk_cond_t *c, lk_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	if (!c || !m || !abs || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) ||
	    abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L)
		return EINVAL;
	return do_wait(c, m, clock, abs);
}

/* ---- signal / broadcast ------------------------------------------------------------------------- */

struct wake_ctx {
	lk_cond_t *c;
	lk_mutex_t *m;		/* the mutex we expect */
	uintptr_t seen;		/* what validate found in c->mutex */
};

/*
 * Under the mutex's bucket lock (validate/callback of a requeue): L,P?,S? -> L,P,S? iff L is set
 * (CP; in src/mutex.c, which tags P with the fork generation and drops an ancestor's stale bits).
 */
static bool mark_parked_if_locked(lk_mutex_t *m)
{
	return lkm_mark_parked_if_locked(m);
}

/* Under c's bucket lock: c records a mutex but nobody waits (a child after fork): forget it. */
static bool stale(struct wake_ctx *k)
{
	if (lkp_park_has_waiters_locked(&k->c->mutex))
		return false;
	/* relaxed: under c's bucket lock (invariant 1) */
	atomic_store_explicit(&k->c->mutex, 0, memory_order_relaxed);
	return true;
}

static enum lk_requeue_op signal_validate(void *ctx)
{
	struct wake_ctx *k = ctx;

	/* relaxed: under c's bucket lock (invariant 1) */
	k->seen = atomic_load_explicit(&k->c->mutex, memory_order_relaxed);
	if (k->seen != (uintptr_t)k->m || stale(k))
		return LK_REQUEUE_ABORT;
	return mark_parked_if_locked(k->m) ? LK_REQUEUE_REQUEUE_ONE : LK_REQUEUE_UNPARK_ONE;
}

static lk_token_t signal_callback(void *ctx, enum lk_requeue_op op, struct lk_unpark_result r)
{
	struct wake_ctx *k = ctx;

	if (op != LK_REQUEUE_ABORT && !r.have_more_threads)
		/* relaxed: under c's bucket lock (invariant 1) */
		atomic_store_explicit(&k->c->mutex, 0, memory_order_relaxed);
	if (r.requeued_threads)		/* REQUEUE_ONE: PARKED set by validate; now owed (invariant 3) */
		lkm_requeued(k->m, r.requeued_threads, false);
	return LK_TOKEN_NORMAL;
}

static enum lk_requeue_op broadcast_validate(void *ctx)
{
	struct wake_ctx *k = ctx;

	/* relaxed: under c's bucket lock (invariant 1) */
	k->seen = atomic_load_explicit(&k->c->mutex, memory_order_relaxed);
	if (k->seen != (uintptr_t)k->m || stale(k))
		return LK_REQUEUE_ABORT;
	/* relaxed: as above; every waiter leaves c's queue in this call */
	atomic_store_explicit(&k->c->mutex, 0, memory_order_relaxed);
	return mark_parked_if_locked(k->m) ? LK_REQUEUE_REQUEUE_ALL : LK_REQUEUE_UNPARK_ONE_REQUEUE_REST;
}

static lk_token_t broadcast_callback(void *ctx, enum lk_requeue_op op, struct lk_unpark_result r)
{
	struct wake_ctx *k = ctx;

	if (r.requeued_threads)		/* owed; PARKED too when validate did not set it (invariant 3) */
		lkm_requeued(k->m, r.requeued_threads, op == LK_REQUEUE_UNPARK_ONE_REQUEUE_REST);
	return LK_TOKEN_NORMAL;
}

static int wake(lk_cond_t *c, bool all)
{
	struct wake_ctx k = { .c = c };

	if (!c)
		return EINVAL;
	/*
	 * relaxed: a waiter stored it before releasing the mutex; a signaller that holds (or held) the
	 * mutex after that sees it through the mutex's acquire. Retry when validate found a different
	 * mutex: all old waiters left and new ones came with another mutex.
	 */
	k.seen = atomic_load_explicit(&c->mutex, memory_order_relaxed);
	while (k.seen) {
		k.m = (lk_mutex_t *)k.seen;
		int r = all ? lk_unpark_requeue(&c->mutex, &k.m->word, broadcast_validate,
						broadcast_callback, &k)
			    : lk_unpark_requeue(&c->mutex, &k.m->word, signal_validate, signal_callback,
						&k);
		if (r < 0)
			return -r;
		if (k.seen == (uintptr_t)k.m)
			break;
	}
	return 0;
}

int lk_cond_signal(lk_cond_t *c)
{
	return wake(c, false);
}

int lk_cond_broadcast(lk_cond_t *c)
{
	return wake(c, true);
}
