/* SPDX-License-Identifier: MIT */
/*
 * tests/cxx/test_cxx_layout.c - the C half of test_cxx_layout: the layout of every public struct as
 * the C compiler sees it (layout.def), and C functions that operate on objects the C++ half owns.
 */
#include <stddef.h>

#include <locklab/locklab.h>

#include "test_cxx_layout.h"

static const struct lkt_layout c_layout[] = {
#define LAYOUT_TYPE(T) { #T, "sizeof", sizeof(T) }, { #T, "alignof", _Alignof(T) },
#define LAYOUT_FIELD(T, f) { #T, #f, offsetof(T, f) },
#include "layout.def"
#undef LAYOUT_TYPE
#undef LAYOUT_FIELD
};

const struct lkt_layout *lkt_c_layout(size_t *n)
{
	*n = sizeof(c_layout) / sizeof(c_layout[0]);
	return c_layout;
}

void lkt_c_mutex_lock(lk_mutex_t *m) { lk_mutex_lock(m); }
int lkt_c_mutex_trylock(lk_mutex_t *m) { return lk_mutex_trylock(m); }
int lkt_c_mutex_unlock(lk_mutex_t *m) { return lk_mutex_unlock(m); }
int lkt_c_refcount_read(const struct lk_refcount *r) { return lk_refcount_read(r); }
bool lkt_c_refcount_dec_and_test(struct lk_refcount *r) { return lk_refcount_dec_and_test(r); }
int lkt_c_ticket_trylock(struct lk_spin_ticket *l) { return lk_spin_ticket_trylock(l); }
int lkt_c_ticket_unlock(struct lk_spin_ticket *l) { return lk_spin_ticket_unlock(l); }
int lkt_c_lockref_count(const struct lk_lockref *lr) { return lk_lockref_count(lr); }
