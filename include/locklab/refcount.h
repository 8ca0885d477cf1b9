/* SPDX-License-Identifier: MIT */
/*
 * locklab/refcount.h - saturating reference counts with the kernel's refcount_t semantics, in two
 * implementations with the same API and the same observable semantics:
 *
 *   lk_refcount_full_*  compare-and-swap loop that checks BEFORE it stores: an illegal value is never
 *                       written (the pre-5.5 REFCOUNT_FULL; Will Deacon's "check inline" wish).
 *   lk_refcount_fast_*  one fetch_add/fetch_sub, then checks the old value (the kernel's current
 *                       refcount.h, after Ard Biesheuvel's arm64 and Kees Cook's x86 work in seed 002).
 *   lk_refcount_*       the default: the fast implementation.
 *
 * Count (one int):
 *
 *	        0          1 ..................... INT_MAX        INT_MIN ...... INT_MIN/2 ...... -1
 *	      freed        live: valid counts                   |<------- saturated: pinned, never ------>|
 *	                                                          used again; every op keeps it saturated
 *
 *	  n --inc--> n+1          INT_MAX --inc--> SATURATED (report "saturated; leaking memory")
 *	  0 --inc--> SATURATED (report "addition on 0; use-after-free")
 *	  1 --dec--> SATURATED (report "decrement hit 0; leaking memory": a plain dec must not free;
 *	             0 --dec--> the same report, as the kernel's refcount_dec gives for every old <= 1)
 *	  k --sub(i>k)--> SATURATED (report "underflow; use-after-free")
 *	  1 --dec_and_test--> 0, returns true: the caller frees the object
 *
 * Saturation value LK_REFCOUNT_SATURATED = INT_MIN/2: half the negative range away from both wrap
 * points, so racing increments and decrements on a saturated count (the fast variant adds before it
 * checks) stay negative - a saturated count can never come back to a valid value. (The fast variant
 * moves at most LK_REFCOUNT_FAST_MAX_AMOUNT per unchecked RMW, and a larger add or sub goes through
 * the full variant's loop: one add of 2^30 would otherwise reach a valid value by itself.) The `fast` variant
 * stores an unchecked value first and pins the count afterwards, so racing operations can see
 * transient values, and NOT all of them are negative: an increment that overflows INT_MAX leaves
 * INT_MIN until its repair stores the saturation value, and a decrement racing into that window
 * takes INT_MIN to INT_MAX - a positive, valid-looking count - until its own repair (old < 1) pins
 * it. In such a window another operation may act on a valid-looking count (a dec succeed, an inc
 * report a second "saturated"); the count still ends pinned, because every operation that saw an
 * out-of-range old value stores LK_REFCOUNT_SATURATED after its RMW and every later one starts from
 * there. The kernel's refcount_t behaves the same (it accepts the race rather than a cmpxchg loop
 * in every operation, and places the saturation value half-way so that undoing it would take some
 * INT_MAX/2 racing operations). `full` never stores anything but a valid count or
 * LK_REFCOUNT_SATURATED.
 *
 * Reporting: the operation that *moves* a count into saturation calls the handler once
 * (lk_refcount_set_handler; default: one line on stderr naming the operation). Operations on an
 * already saturated count keep it saturated and report nothing. An amount i <= 0 passed to add/sub is
 * a caller bug: it is reported as LK_REFCOUNT_BAD_ARG and the count is left alone.
 *
 * Ordering (both implementations):
 *   inc, add, inc_not_zero, add_not_zero   RELAXED (a new reference is obtained from an existing one,
 *                                          whose publication already ordered the object)
 *   dec, sub_and_test, dec_and_test        RELEASE (our accesses to the object happen-before the free)
 *                                          plus ACQUIRE when they return true (the freeing thread sees
 *                                          every other holder's accesses)
 *   dec_and_lock                           as dec; the true case also holds the lock (ACQUIRE)
 *   read, set                              RELAXED
 */
#ifndef LOCKLAB_REFCOUNT_H
#define LOCKLAB_REFCOUNT_H

#include <limits.h>
#include "locklab/atomic-internal.h"
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lk_refcount {
	LK_ATOMIC(int) refs;
};

#define LK_REFCOUNT_INIT(n)	{ (n) }
#define LK_REFCOUNT_MAX		INT_MAX
#define LK_REFCOUNT_SATURATED	(INT_MIN / 2)

enum lk_refcount_event {
	LK_REFCOUNT_ADD_OVF = 1,	/* add/inc past INT_MAX: "saturated; leaking memory" */
	LK_REFCOUNT_ADD_NOT_ZERO_OVF,	/* add_not_zero/inc_not_zero past INT_MAX */
	LK_REFCOUNT_ADD_UAF,		/* add/inc on 0: "addition on 0; use-after-free" */
	LK_REFCOUNT_SUB_UAF,		/* sub/dec_and_test below 0: "underflow; use-after-free" */
	LK_REFCOUNT_DEC_LEAK,		/* plain dec from 1 or 0: "decrement hit 0; leaking memory" */
	LK_REFCOUNT_BAD_ARG,		/* add/sub with an amount <= 0; the count is left unchanged */
};

/*
 * Called once per saturation event (never for operations on an already saturated count), from the
 * thread whose operation caused it. `op` names the public function ("lk_refcount_fast_inc"; the
 * implementation's, for the default lk_refcount_* names), also where fast hands a large amount to
 * full's loop.
 */
typedef void (*lk_refcount_handler_t)(struct lk_refcount *r, enum lk_refcount_event ev, const char *op);

/* Installs `h` (NULL: the default stderr reporter); returns the previous one (NULL = default). ACQ_REL. */
lk_refcount_handler_t lk_refcount_set_handler(lk_refcount_handler_t h);
/* The kernel's message for `ev` ("saturated; leaking memory", ...), or "unknown". */
const char *lk_refcount_event_str(enum lk_refcount_event ev);

/* Out-of-line, cold: call the handler. Public only because the inline functions need it. */
void lk_refcount_report(struct lk_refcount *r, enum lk_refcount_event ev, const char *op);

static inline void lk_refcount_set(struct lk_refcount *r, int n)
{
	/* relaxed: initialisation or reuse; publication is the caller's business */
	atomic_store_explicit(&r->refs, n, memory_order_relaxed);
}

static inline int lk_refcount_read(const struct lk_refcount *r)
{
	/* relaxed: a snapshot */
	return atomic_load_explicit(&((struct lk_refcount *)r)->refs, memory_order_relaxed);
}

static inline bool lk_refcount_is_saturated(const struct lk_refcount *r)
{
	return lk_refcount_read(r) < 0;
}

/*
 * The ACQUIRE after a decrement that reached zero (the kernel's smp_acquire__after_ctrl_dep()): an
 * acquire fence. ThreadSanitizer does not model fences, so its builds use an acquire load of the
 * counter instead, which synchronises with the same release sequence of decrements.
 */
static inline void lk_refcount_acquire_after_zero_(struct lk_refcount *r)
{
#if defined(__SANITIZE_THREAD__)
	/* acquire: pairs with the release decrements of every other holder (release sequence) */
	(void)atomic_load_explicit(&r->refs, memory_order_acquire);
#else
	(void)r;
	/* acquire: pairs with the release decrements of every other holder */
	atomic_thread_fence(memory_order_acquire);
#endif
}

/* ------------------------------------------------------------------------------------------------ */
/* fast: one atomic RMW, check afterwards                                                            */

/*
 * The largest amount the fast variant moves with one unchecked RMW; add, add_not_zero and
 * sub_and_test take the full variant's cmpxchg loop for more. The saturation value lies 2^30 from
 * both wraps, so at most 128 an operation takes more than 2^23 operations caught between their RMW
 * and their repair at once to undo it: more threads than Linux allows (PID_MAX_LIMIT is 2^22), the
 * kernel's own argument for inc and dec. With any amount, one add of 2^30 + 1 made a saturated count
 * 1 for a moment, and a racing dec_and_test returned true: a free of a pinned object (the hostile
 * review's reproducer, 4-5 times in each of 3 runs; the kernel's refcount.h leaves "batched
 * refcounting operations" out of the same argument). An amount known at compile time costs nothing.
 */
#define LK_REFCOUNT_FAST_MAX_AMOUNT 128

static inline void lk_refcount_full_add_op_(struct lk_refcount *r, int i, const char *op);
static inline bool lk_refcount_full_add_not_zero_op_(struct lk_refcount *r, int i, const char *op);
static inline bool lk_refcount_full_sub_and_test_op_(struct lk_refcount *r, int i, const char *op);

/* The fast variant's repair: pin the count, report unless it was already saturated (old < 0). */
static inline void lk_refcount_fast_fix_(struct lk_refcount *r, int old, enum lk_refcount_event ev,
					 const char *op)
{
	/* relaxed: pins a value no valid operation can move back; the report orders nothing */
	atomic_store_explicit(&r->refs, LK_REFCOUNT_SATURATED, memory_order_relaxed);
	if (old >= 0)
		lk_refcount_report(r, ev, op);
}

static inline void lk_refcount_fast_add_op_(struct lk_refcount *r, int i, const char *op)
{
	int old;

	if (__builtin_expect(i <= 0, 0)) {
		lk_refcount_report(r, LK_REFCOUNT_BAD_ARG, op);
		return;
	}
	if (__builtin_expect(i > LK_REFCOUNT_FAST_MAX_AMOUNT, 0)) {
		lk_refcount_full_add_op_(r, i, op);
		return;
	}
	/* relaxed: see "Ordering" above */
	old = atomic_fetch_add_explicit(&r->refs, i, memory_order_relaxed);
	if (__builtin_expect(old <= 0 || (int)((unsigned)old + (unsigned)i) < 0, 0))
		lk_refcount_fast_fix_(r, old, old == 0 ? LK_REFCOUNT_ADD_UAF : LK_REFCOUNT_ADD_OVF, op);
}

static inline void lk_refcount_fast_add(struct lk_refcount *r, int i)
{
	lk_refcount_fast_add_op_(r, i, __func__);
}

static inline void lk_refcount_fast_inc(struct lk_refcount *r)
{
	/* relaxed: see "Ordering" above */
	int old = atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);

	if (__builtin_expect(old <= 0 || old == INT_MAX, 0))
		lk_refcount_fast_fix_(r, old, old == 0 ? LK_REFCOUNT_ADD_UAF : LK_REFCOUNT_ADD_OVF, __func__);
}

static inline bool lk_refcount_fast_add_not_zero_op_(struct lk_refcount *r, int i, const char *op)
{
	/* relaxed: the cmpxchg validates */
	int old = atomic_load_explicit(&r->refs, memory_order_relaxed);

	if (__builtin_expect(i <= 0, 0)) {
		lk_refcount_report(r, LK_REFCOUNT_BAD_ARG, op);
		return false;
	}
	if (__builtin_expect(i > LK_REFCOUNT_FAST_MAX_AMOUNT, 0))
		return lk_refcount_full_add_not_zero_op_(r, i, op);
	do {
		if (!old)
			return false;
		/* relaxed: see "Ordering" above; unsigned add: a wrap is detected below, not UB */
	} while (!atomic_compare_exchange_weak_explicit(&r->refs, &old, (int)((unsigned)old + (unsigned)i),
							memory_order_relaxed, memory_order_relaxed));
	if (__builtin_expect(old < 0 || (int)((unsigned)old + (unsigned)i) < 0, 0))
		lk_refcount_fast_fix_(r, old, LK_REFCOUNT_ADD_NOT_ZERO_OVF, op);
	return true;
}

static inline bool lk_refcount_fast_add_not_zero(struct lk_refcount *r, int i)
{
	return lk_refcount_fast_add_not_zero_op_(r, i, __func__);
}

static inline bool lk_refcount_fast_inc_not_zero(struct lk_refcount *r)
{
	return lk_refcount_fast_add_not_zero_op_(r, 1, __func__);
}

static inline bool lk_refcount_fast_sub_and_test_op_(struct lk_refcount *r, int i, const char *op)
{
	int old;

	if (__builtin_expect(i <= 0, 0)) {
		lk_refcount_report(r, LK_REFCOUNT_BAD_ARG, op);
		return false;
	}
	if (__builtin_expect(i > LK_REFCOUNT_FAST_MAX_AMOUNT, 0))
		return lk_refcount_full_sub_and_test_op_(r, i, op);
	/* release: our accesses to the object happen-before the free by whoever reaches zero */
	old = atomic_fetch_sub_explicit(&r->refs, i, memory_order_release);
	if (old == i) {
		lk_refcount_acquire_after_zero_(r);
		return true;
	}
	if (__builtin_expect(old < i, 0))
		lk_refcount_fast_fix_(r, old, LK_REFCOUNT_SUB_UAF, op);
	return false;
}

static inline bool lk_refcount_fast_sub_and_test(struct lk_refcount *r, int i)
{
	return lk_refcount_fast_sub_and_test_op_(r, i, __func__);
}

static inline bool lk_refcount_fast_dec_and_test(struct lk_refcount *r)
{
	/* release: as sub_and_test */
	int old = atomic_fetch_sub_explicit(&r->refs, 1, memory_order_release);

	if (old == 1) {
		lk_refcount_acquire_after_zero_(r);
		return true;
	}
	if (__builtin_expect(old < 1, 0))
		lk_refcount_fast_fix_(r, old, LK_REFCOUNT_SUB_UAF, __func__);
	return false;
}

static inline void lk_refcount_fast_dec(struct lk_refcount *r)
{
	/* release: as sub_and_test (a plain dec must never be the last one) */
	int old = atomic_fetch_sub_explicit(&r->refs, 1, memory_order_release);

	if (__builtin_expect(old <= 1, 0))
		lk_refcount_fast_fix_(r, old, LK_REFCOUNT_DEC_LEAK, __func__);	/* the kernel's, for 1 and 0 */
}

/* ------------------------------------------------------------------------------------------------ */
/* full: cmpxchg loop, check before store                                                            */

/*
 * One step of a full-variant loop: try old -> want; on success report `ev` (0 = none: an int, because
 * C++ does not convert 0 to an enum). Returns true when done, false with `*old` refreshed. `order` is
 * the success order.
 */
static inline bool lk_refcount_full_try_(struct lk_refcount *r, int *old, int want, memory_order order,
					 int ev, const char *op)
{
	/* failure relaxed: the loop recomputes from the fresh value */
	if (!atomic_compare_exchange_weak_explicit(&r->refs, old, want, order, memory_order_relaxed))
		return false;
	if (__builtin_expect(ev != 0, 0))
		lk_refcount_report(r, (enum lk_refcount_event)ev, op);
	return true;
}

static inline void lk_refcount_full_add_op_(struct lk_refcount *r, int i, const char *op)
{
	/* relaxed: the cmpxchg validates */
	int old = atomic_load_explicit(&r->refs, memory_order_relaxed), want;

	if (__builtin_expect(i <= 0, 0)) {
		lk_refcount_report(r, LK_REFCOUNT_BAD_ARG, op);
		return;
	}
	for (;;) {
		if (old < 0)
			return;		/* saturated stays saturated; nothing to write */
		/* relaxed (all three): see "Ordering" above */
		if (old == 0) {
			if (lk_refcount_full_try_(r, &old, LK_REFCOUNT_SATURATED, memory_order_relaxed,
						  LK_REFCOUNT_ADD_UAF, op))
				return;
		} else if (__builtin_add_overflow(old, i, &want)) {
			if (lk_refcount_full_try_(r, &old, LK_REFCOUNT_SATURATED, memory_order_relaxed,
						  LK_REFCOUNT_ADD_OVF, op))
				return;
		} else if (lk_refcount_full_try_(r, &old, want, memory_order_relaxed, 0, op)) {
			return;
		}
	}
}

static inline void lk_refcount_full_add(struct lk_refcount *r, int i)
{
	lk_refcount_full_add_op_(r, i, __func__);
}

static inline void lk_refcount_full_inc(struct lk_refcount *r)
{
	lk_refcount_full_add_op_(r, 1, __func__);
}

static inline bool lk_refcount_full_add_not_zero_op_(struct lk_refcount *r, int i, const char *op)
{
	/* relaxed: the cmpxchg validates */
	int old = atomic_load_explicit(&r->refs, memory_order_relaxed), want;

	if (__builtin_expect(i <= 0, 0)) {
		lk_refcount_report(r, LK_REFCOUNT_BAD_ARG, op);
		return false;
	}
	for (;;) {
		if (old == 0)
			return false;
		if (old < 0)
			return true;	/* saturated: a reference is "taken", the count stays pinned */
		/* relaxed (both): see "Ordering" above */
		if (__builtin_add_overflow(old, i, &want)) {
			if (lk_refcount_full_try_(r, &old, LK_REFCOUNT_SATURATED, memory_order_relaxed,
						  LK_REFCOUNT_ADD_NOT_ZERO_OVF, op))
				return true;
		} else if (lk_refcount_full_try_(r, &old, want, memory_order_relaxed, 0, op)) {
			return true;
		}
	}
}

static inline bool lk_refcount_full_add_not_zero(struct lk_refcount *r, int i)
{
	return lk_refcount_full_add_not_zero_op_(r, i, __func__);
}

static inline bool lk_refcount_full_inc_not_zero(struct lk_refcount *r)
{
	return lk_refcount_full_add_not_zero_op_(r, 1, __func__);
}

static inline bool lk_refcount_full_sub_and_test_op_(struct lk_refcount *r, int i, const char *op)
{
	/* relaxed: the cmpxchg validates */
	int old = atomic_load_explicit(&r->refs, memory_order_relaxed);

	if (__builtin_expect(i <= 0, 0)) {
		lk_refcount_report(r, LK_REFCOUNT_BAD_ARG, op);
		return false;
	}
	for (;;) {
		if (old < 0)
			return false;
		if (old < i) {
			/* relaxed: the count is dead either way; nothing to publish */
			if (lk_refcount_full_try_(r, &old, LK_REFCOUNT_SATURATED, memory_order_relaxed,
						  LK_REFCOUNT_SUB_UAF, op))
				return false;
			continue;
		}
		/* release: our accesses to the object happen-before the free */
		if (lk_refcount_full_try_(r, &old, old - i, memory_order_release, 0, op)) {
			if (old != i)
				return false;
			lk_refcount_acquire_after_zero_(r);
			return true;
		}
	}
}

static inline bool lk_refcount_full_sub_and_test(struct lk_refcount *r, int i)
{
	return lk_refcount_full_sub_and_test_op_(r, i, __func__);
}

static inline bool lk_refcount_full_dec_and_test(struct lk_refcount *r)
{
	return lk_refcount_full_sub_and_test_op_(r, 1, __func__);
}

static inline void lk_refcount_full_dec(struct lk_refcount *r)
{
	/* relaxed: the cmpxchg validates */
	int old = atomic_load_explicit(&r->refs, memory_order_relaxed);

	for (;;) {
		if (old < 0)
			return;
		/* relaxed: the count is dead either way; nothing to publish */
		if (old <= 1) {
			if (lk_refcount_full_try_(r, &old, LK_REFCOUNT_SATURATED, memory_order_relaxed,
						  LK_REFCOUNT_DEC_LEAK, __func__))	/* as fast */
				return;
			continue;
		}
		/* release: as sub_and_test */
		if (lk_refcount_full_try_(r, &old, old - 1, memory_order_release, 0, __func__))
			return;
	}
}

/*
 * Decrements unless the count is 1; returns false (count unchanged) when it is 1. Saturated: true,
 * count unchanged. Underflow (0): saturates, reports, returns true. RELEASE. Used by dec_and_lock.
 */
bool lk_refcount_dec_not_one(struct lk_refcount *r);

/*
 * dec_and_lock: decrements; if the count reached 0, returns true with the lock held (ACQUIRE), else
 * false without it. The lock is taken only for the 1 -> 0 transition (the kernel's
 * refcount_dec_and_lock), so a lookup structure protected by that lock cannot find the object with a
 * zero count. Same for both implementations (the dec-not-one step is always a cmpxchg loop).
 */
struct lk_spin_ttas;
struct lk_qspinlock;
struct lk_mutex;
bool lk_refcount_dec_and_lock_spin(struct lk_refcount *r, struct lk_spin_ttas *lock);
bool lk_refcount_dec_and_lock_qspin(struct lk_refcount *r, struct lk_qspinlock *lock);
bool lk_refcount_dec_and_lock_mutex(struct lk_refcount *r, struct lk_mutex *lock);
/* Any lock: lock(arg) / unlock(arg). */
bool lk_refcount_dec_and_lock_fn(struct lk_refcount *r, void (*lock)(void *), void (*unlock)(void *),
				 void *arg);

/* ------------------------------------------------------------------------------------------------ */
/* the default: fast                                                                                 */

static inline void lk_refcount_inc(struct lk_refcount *r) { lk_refcount_fast_inc(r); }
static inline void lk_refcount_add(struct lk_refcount *r, int i) { lk_refcount_fast_add(r, i); }
static inline bool lk_refcount_inc_not_zero(struct lk_refcount *r) { return lk_refcount_fast_inc_not_zero(r); }
static inline bool lk_refcount_add_not_zero(struct lk_refcount *r, int i) { return lk_refcount_fast_add_not_zero(r, i); }
static inline void lk_refcount_dec(struct lk_refcount *r) { lk_refcount_fast_dec(r); }
static inline bool lk_refcount_dec_and_test(struct lk_refcount *r) { return lk_refcount_fast_dec_and_test(r); }
static inline bool lk_refcount_sub_and_test(struct lk_refcount *r, int i) { return lk_refcount_fast_sub_and_test(r, i); }

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_REFCOUNT_H */
