// SPDX-License-Identifier: MIT
/*
 * tests/cxx/test_cxx_layout.cc - the C headers in C++: every public struct has the same size,
 * alignment and field offsets in C and in C++ (layout.def; the C half is test_cxx_layout.c), so
 * objects cross the language boundary; the inline functions of every header run in C++ and agree
 * with the C compiler's on shared objects: a mutex locked in C is busy and unlockable in C++ and the
 * other way round, a refcount and a lockref changed in C++ read the same in C, a ticket lock taken in
 * C++ is busy in C. (The header compile test checks that each header compiles in C++17 and C++20; this
 * checks that what compiles also means the same thing.)
 */
#include <cstddef>
#include <cstring>

#include <locklab/locklab.h>

#include "cxxtest.h"
#include "test_cxx_layout.h"

static const lkt_layout cxx_layout[] = {
#define LAYOUT_TYPE(T) {#T, "sizeof", sizeof(T)}, {#T, "alignof", alignof(T)},
#define LAYOUT_FIELD(T, f) {#T, #f, offsetof(T, f)},
#include "layout.def"
#undef LAYOUT_TYPE
#undef LAYOUT_FIELD
};

static void test_layout()
{
	size_t n = 0;
	const lkt_layout *c = lkt_c_layout(&n);
	CHECK_EQ(n, sizeof(cxx_layout) / sizeof(cxx_layout[0]));
	for (size_t i = 0; i < n && i < sizeof(cxx_layout) / sizeof(cxx_layout[0]); i++) {
		const lkt_layout &x = cxx_layout[i];
		if (std::strcmp(c[i].type, x.type) || std::strcmp(c[i].what, x.what) || c[i].value != x.value) {
			std::fprintf(stderr, "layout differs: C %s %s = %zu, C++ %s %s = %zu\n", c[i].type,
				     c[i].what, c[i].value, x.type, x.what, x.value);
			lkt_failures++;
		}
	}
	std::printf("layout: %zu sizes, alignments and offsets agree\n", n);
}

static void test_shared_objects()
{
	lk_mutex_t m = LK_MUTEX_INITIALIZER;
	lkt_c_mutex_lock(&m);
	CHECK_EQ(lk_mutex_trylock(&m), EBUSY);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(lkt_c_mutex_unlock(&m), EPERM);
	lk_mutex_lock(&m);
	CHECK_EQ(lkt_c_mutex_trylock(&m), EBUSY);
	CHECK_EQ(lkt_c_mutex_unlock(&m), 0);
	CHECK_EQ(lk_mutex_unlock(&m), EPERM);

	struct lk_refcount r = LK_REFCOUNT_INIT(1);
	lk_refcount_inc(&r);
	lk_refcount_full_inc(&r);
	lk_refcount_add(&r, 3);
	CHECK(lk_refcount_inc_not_zero(&r));
	CHECK_EQ(lkt_c_refcount_read(&r), 7);
	lk_refcount_full_dec(&r);
	CHECK(!lk_refcount_full_sub_and_test(&r, 4));
	CHECK(!lk_refcount_dec_and_test(&r));
	CHECK(lkt_c_refcount_dec_and_test(&r));
	CHECK_EQ(lk_refcount_read(&r), 0);
	CHECK(!lk_refcount_is_saturated(&r));

	struct lk_lockref lr;
	lk_lockref_init(&lr, 2);
	lk_lockref_get(&lr);
	CHECK(lk_lockref_put_not_zero(&lr));
	CHECK_EQ(lkt_c_lockref_count(&lr), 2);

	struct lk_spin_ticket t = LK_SPIN_TICKET_INIT;
	lk_spin_ticket_lock(&t);
	CHECK_EQ(lkt_c_ticket_trylock(&t), EBUSY);
	CHECK_EQ(lkt_c_ticket_unlock(&t), 0);
	CHECK_EQ(lk_spin_ticket_trylock(&t), 0);
	CHECK_EQ(lk_spin_ticket_unlock(&t), 0);

	struct lk_spin_ttas s = LK_SPIN_TTAS_INIT;
	lk_spin_ttas_lock(&s);
	CHECK(lk_spin_ttas_is_locked(&s));
	CHECK_EQ(lk_spin_ttas_unlock(&s), 0);
	struct lk_qspinlock q = LK_QSPINLOCK_INIT;
	CHECK_EQ(lk_qspin_trylock(&q), 0);
	CHECK_EQ(lk_qspin_unlock(&q), 0);
	struct lk_spin_mcs mcs = LK_SPIN_MCS_INIT;
	struct lk_mcs_node node;
	lk_spin_mcs_lock(&mcs, &node);
	CHECK(lk_spin_mcs_is_locked(&mcs));
	CHECK_EQ(lk_spin_mcs_unlock(&mcs, &node), 0);

	unsigned spins = 0;
	lk_cpu_relax();
	lk_spin_wait(&spins);
	CHECK_EQ(spins, 1);
	CHECK(std::strlen(lk_version()) > 0);
}

int main()
{
	lkt_watchdog(60);
	test_layout();
	test_shared_objects();
	return lkt_done("test_cxx_layout");
}
