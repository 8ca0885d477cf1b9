/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/refcount.c - registry entries of family `refcount` (opstype refcount, see
 * lab/lab_refcount.h): lk_refcount's two implementations and, for comparison, a plain atomic counter
 * with no checks at all (the kernel's atomic_t, the "atomic_t" row of Kees Cook's LKDTM table).
 *
 * The atomic baseline's dec_and_test is acq_rel: the kernel's atomic_dec_and_test() is fully ordered,
 * and for one RMW that is only ever paired with other RMWs on the same counter acq_rel gives the same
 * guarantees (on x86 both are one `lock xadd`).
 */
#include <stdint.h>

#include "lab.h"
#include "lab_refcount.h"

/* ---- plain atomic ---------------------------------------------------------------------------------- */

static inline void atomic_rc_inc(struct lk_refcount *r)
{
	/* relaxed: as refcount inc; no checks */
	atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
}

static inline bool atomic_rc_dec_and_test(struct lk_refcount *r)
{
	/* acq_rel: see the file comment */
	return atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1;
}

static bool atomic_rc_inc_not_zero(struct lk_refcount *r)
{
	/* relaxed: the cmpxchg validates */
	int old = atomic_load_explicit(&r->refs, memory_order_relaxed);

	do {
		if (!old)
			return false;
		/* relaxed: as inc; wraps silently (unsigned add), like atomic_t */
	} while (!atomic_compare_exchange_weak_explicit(&r->refs, &old, (int)((unsigned)old + 1u),
							memory_order_relaxed, memory_order_relaxed));
	return true;
}

static void atomic_rc_dec(struct lk_refcount *r)
{
	/* release: as refcount dec; no checks */
	atomic_fetch_sub_explicit(&r->refs, 1, memory_order_release);
}

/* ---- the timing loop, instantiated per implementation with the operations inlined ------------------ */

#define TIMING_FN(name, INC, DEC_AND_TEST)                                                          \
	static __attribute__((noinline)) uint64_t name(struct lk_refcount *r, uint64_t n)          \
	{                                                                                           \
		uint64_t zero = 0;                                                                  \
		for (uint64_t i = 0; i < n; i++)                                                    \
			INC(r);                                                                     \
		for (uint64_t i = 0; i <= n; i++)                                                   \
			zero += DEC_AND_TEST(r);                                                    \
		return zero;                                                                        \
	}

TIMING_FN(timing_fast, lk_refcount_fast_inc, lk_refcount_fast_dec_and_test)
TIMING_FN(timing_full, lk_refcount_full_inc, lk_refcount_full_dec_and_test)
TIMING_FN(timing_atomic, atomic_rc_inc, atomic_rc_dec_and_test)

static void fast_inc(struct lk_refcount *r) { lk_refcount_fast_inc(r); }
static bool fast_inc_nz(struct lk_refcount *r) { return lk_refcount_fast_inc_not_zero(r); }
static void fast_dec(struct lk_refcount *r) { lk_refcount_fast_dec(r); }
static bool fast_dec_t(struct lk_refcount *r) { return lk_refcount_fast_dec_and_test(r); }
static void full_inc(struct lk_refcount *r) { lk_refcount_full_inc(r); }
static bool full_inc_nz(struct lk_refcount *r) { return lk_refcount_full_inc_not_zero(r); }
static void full_dec(struct lk_refcount *r) { lk_refcount_full_dec(r); }
static bool full_dec_t(struct lk_refcount *r) { return lk_refcount_full_dec_and_test(r); }
static void atomic_inc_fn(struct lk_refcount *r) { atomic_rc_inc(r); }
static bool atomic_dec_t_fn(struct lk_refcount *r) { return atomic_rc_dec_and_test(r); }

const struct lab_refcount_ops lab_refcount_fast_ops = {
	"fast", true, fast_inc, fast_inc_nz, fast_dec, fast_dec_t, timing_fast,
};

const struct lab_refcount_ops lab_refcount_full_ops = {
	"full", true, full_inc, full_inc_nz, full_dec, full_dec_t, timing_full,
};

const struct lab_refcount_ops lab_refcount_atomic_ops = {
	"atomic", false, atomic_inc_fn, atomic_rc_inc_not_zero, atomic_rc_dec, atomic_dec_t_fn, timing_atomic,
};
