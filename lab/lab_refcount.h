/* SPDX-License-Identifier: MIT */
/*
 * lab/lab_refcount.h - opstype `refcount`: struct lab_refcount_ops, what a registry entry of family
 * `refcount` provides (lab/adapters/refcount.c: refcount_fast, refcount_full, refcount_atomic).
 *
 * The per-operation pointers are for tests and workloads that mix operations; `timing` runs the whole
 * LKDTM REFCOUNT_TIMING loop with the operations inlined, so a timing measures the refcount and not an
 * indirect call per operation.
 */
#ifndef LOCKLAB_LAB_REFCOUNT_H
#define LOCKLAB_LAB_REFCOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "locklab/refcount.h"

struct lab_refcount_ops {
	const char *impl;				/* "fast", "full", "atomic" */
	bool saturates;					/* false for the plain atomic baseline */
	void (*inc)(struct lk_refcount *r);
	bool (*inc_not_zero)(struct lk_refcount *r);
	void (*dec)(struct lk_refcount *r);
	bool (*dec_and_test)(struct lk_refcount *r);
	/*
	 * With *r == 1: n increments, then n + 1 dec_and_tests (LKDTM: n = INT_MAX - 1). Returns how
	 * many dec_and_tests returned true (1 when the implementation is correct). n <= INT_MAX - 1.
	 */
	uint64_t (*timing)(struct lk_refcount *r, uint64_t n);
};


/*
 * Failures-per-operation histogram shared by the seed-002 workloads (lockref, cas-storm): exact counts
 * for 0..LAB_FHIST_MAX-1 failures, one overflow bucket, exact max. Per thread, merged after join.
 */
#define LAB_FHIST_MAX 4096

struct lab_fhist {
	uint64_t n[LAB_FHIST_MAX + 1];
	uint64_t ops, failures, max;
};

struct lab_json;
static inline void lab_fhist_add(struct lab_fhist *h, uint64_t failures)
{
	h->n[failures < LAB_FHIST_MAX ? failures : LAB_FHIST_MAX]++;
	h->ops++;
	h->failures += failures;
	if (failures > h->max)
		h->max = failures;
}
void lab_fhist_merge(struct lab_fhist *into, const struct lab_fhist *from);
/* {"ops","failures","mean","p50","p90","p99","p999","max","hist":[[failures,count],...]} under key */
void lab_fhist_emit(struct lab_json *j, const char *key, const struct lab_fhist *h);

#endif /* LOCKLAB_LAB_REFCOUNT_H */
