/* SPDX-License-Identifier: MIT */
/*
 * src/refcount.c - the out-of-line parts of lk_refcount: the saturation reporter and its handler,
 * dec_not_one and the dec_and_lock family. The count layout, the saturation state diagram and the
 * per-function ordering are in include/locklab/refcount.h; both implementations are inline there.
 *
 * Handler: one pointer, swapped with acq_rel (release publishes whatever the new handler reads;
 * acquire hands the caller the previous one's state), loaded with acquire by the reporter.
 */
#include <stdio.h>

#include "locklab/mutex.h"
#include "locklab/qspinlock.h"
#include "locklab/refcount.h"
#include "locklab/spin_ttas.h"

static void default_handler(struct lk_refcount *r, enum lk_refcount_event ev, const char *op)
{
	if (ev == LK_REFCOUNT_BAD_ARG)
		fprintf(stderr, "locklab: refcount %p: %s: %s\n", (void *)r, op, lk_refcount_event_str(ev));
	else
		fprintf(stderr, "locklab: refcount %p: %s: %s (count pinned at INT_MIN/2)\n", (void *)r, op,
			lk_refcount_event_str(ev));
}

static _Atomic(lk_refcount_handler_t) handler = default_handler;

lk_refcount_handler_t lk_refcount_set_handler(lk_refcount_handler_t h)
{
	/* acq_rel: see the file comment */
	lk_refcount_handler_t old = atomic_exchange_explicit(&handler, h ? h : default_handler,
							      memory_order_acq_rel);

	return old == default_handler ? NULL : old;
}

const char *lk_refcount_event_str(enum lk_refcount_event ev)
{
	switch (ev) {
	case LK_REFCOUNT_ADD_OVF:
	case LK_REFCOUNT_ADD_NOT_ZERO_OVF:
		return "saturated; leaking memory";
	case LK_REFCOUNT_ADD_UAF:
		return "addition on 0; use-after-free";
	case LK_REFCOUNT_SUB_UAF:
		return "underflow; use-after-free";
	case LK_REFCOUNT_DEC_LEAK:
		return "decrement hit 0; leaking memory";
	case LK_REFCOUNT_BAD_ARG:
		return "amount must be > 0; count unchanged";
	}
	return "unknown";
}

__attribute__((noinline, cold)) void lk_refcount_report(struct lk_refcount *r, enum lk_refcount_event ev,
							 const char *op)
{
	/* acquire: pairs with the acq_rel exchange in lk_refcount_set_handler() */
	lk_refcount_handler_t h = atomic_load_explicit(&handler, memory_order_acquire);

	h(r, ev, op);
}

bool lk_refcount_dec_not_one(struct lk_refcount *r)
{
	/* relaxed: the cmpxchg validates */
	int old = atomic_load_explicit(&r->refs, memory_order_relaxed);

	for (;;) {
		if (old < 0)
			return true;
		if (old == 1)
			return false;
		if (old == 0) {
			/* relaxed: the count is dead either way */
			if (lk_refcount_full_try_(r, &old, LK_REFCOUNT_SATURATED, memory_order_relaxed,
						  LK_REFCOUNT_SUB_UAF, __func__))
				return true;
			continue;
		}
		/* release: our accesses to the object happen-before the free by the last holder */
		if (lk_refcount_full_try_(r, &old, old - 1, memory_order_release, 0, __func__))
			return true;
	}
}

bool lk_refcount_dec_and_lock_fn(struct lk_refcount *r, void (*lock)(void *), void (*unlock)(void *),
				 void *arg)
{
	if (lk_refcount_dec_not_one(r))
		return false;
	lock(arg);
	/* the count may have gone up again (a lookup under the lock found it): only 1 -> 0 keeps the lock */
	if (!lk_refcount_full_dec_and_test(r)) {
		unlock(arg);
		return false;
	}
	return true;
}

static void ttas_lock(void *l) { lk_spin_ttas_lock(l); }
static void ttas_unlock(void *l) { lk_spin_ttas_unlock(l); }
static void qspin_lock(void *l) { lk_qspin_lock(l); }
static void qspin_unlock(void *l) { lk_qspin_unlock(l); }
static void mutex_lock(void *l) { lk_mutex_lock(l); }
static void mutex_unlock(void *l) { lk_mutex_unlock(l); }

bool lk_refcount_dec_and_lock_spin(struct lk_refcount *r, struct lk_spin_ttas *lock)
{
	return lk_refcount_dec_and_lock_fn(r, ttas_lock, ttas_unlock, lock);
}

bool lk_refcount_dec_and_lock_qspin(struct lk_refcount *r, struct lk_qspinlock *lock)
{
	return lk_refcount_dec_and_lock_fn(r, qspin_lock, qspin_unlock, lock);
}

bool lk_refcount_dec_and_lock_mutex(struct lk_refcount *r, struct lk_mutex *lock)
{
	return lk_refcount_dec_and_lock_fn(r, mutex_lock, mutex_unlock, lock);
}
