/* SPDX-License-Identifier: MIT */
/* tests/cxx/test_cxx_layout.h - what test_cxx_layout.c (C) offers test_cxx_layout.cc (C++). */
#ifndef LOCKLAB_TEST_CXX_LAYOUT_H
#define LOCKLAB_TEST_CXX_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>

#include <locklab/locklab.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lkt_layout {
	const char *type;
	const char *what;	/* "sizeof", "alignof" or a field name (its offset) */
	size_t value;
};

const struct lkt_layout *lkt_c_layout(size_t *n);
void lkt_c_mutex_lock(lk_mutex_t *m);
int lkt_c_mutex_trylock(lk_mutex_t *m);
int lkt_c_mutex_unlock(lk_mutex_t *m);
int lkt_c_refcount_read(const struct lk_refcount *r);
bool lkt_c_refcount_dec_and_test(struct lk_refcount *r);
int lkt_c_ticket_trylock(struct lk_spin_ticket *l);
int lkt_c_ticket_unlock(struct lk_spin_ticket *l);
int lkt_c_lockref_count(const struct lk_lockref *lr);

#ifdef __cplusplus
}
#endif
#endif
