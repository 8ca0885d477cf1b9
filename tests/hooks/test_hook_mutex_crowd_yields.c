/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_crowd_yields.c - LKM_CROWD (src/mutex.c; no library build enables it),
 * the hostile review's F4 (docs/results/issue11-crowd-2core/): a waiter that spun beside the S
 * holder until its time ran out parks then, without the LKM_WAIT_YIELDS yields on top. Before the
 * fix it went on to yield four times behind the S holder that had by then held S past spin_max_ns
 * (a "stale" spinner): a waiter parked 26 ms after it arrived, with spin_max_ns 10 ms.
 *
 * A copy of src/mutex.c with LKM_CROWD 2 and LKM_CROWD_ANY_CPUS (lab/adapters/lk_mutex_renamed.h),
 * deterministic with the mutex.spin pause point:
 *   1. spin_min_ns = spin_max_ns = 1 ms, handoff_ns 10 s. main holds m.
 *   2. S locks: it claims S and is held at its first mutex.spin (S stays set, and goes stale).
 *   3. C locks: S is taken, so C spins beside it until its 1 ms is spent (it parks at least 1 ms
 *      after it started; without the crowd it would have parked at once: S was fresh), then parks.
 *      At C's mutex.park: C has not reached mutex.wait_yield once, and S has been held past
 *      spin_max_ns (so without the fix C would have yielded).
 *   4. S is let go; main unlocks; S and C each take the lock once. The word ends 0, the count 0.
 */
#define LKM_VARIANT crowdyields
#define LKM_CROWD 2
#define LKM_CROWD_ANY_CPUS 1
#include "../../lab/adapters/lk_mutex_renamed.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "hooklab.h"

enum { ROLE_NONE, ROLE_S, ROLE_C };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static struct hk_gate s_gate;		/* S held at its first mutex.spin */
static _Atomic int c_yields, c_parked;
static _Atomic long long c_start_ns, c_park_ns;	/* C's start, C's first mutex.park */
static _Atomic long long c_park_stale_ns;	/* at C's park: how long S had been claimed */

static uint32_t word(void) { return hk_word(&m); }
/* relaxed: test-only reads of heuristics */
static uint32_t crowd_n(void) { return atomic_load_explicit(&crowd.n, memory_order_relaxed); }

static void on_hook(const char *point, void *arg)
{
	if (arg != &m)
		return;
	if (hk_role == ROLE_S && hk_is(point, "mutex.spin") && !hk_gate_is_held(&s_gate))
		hk_gate_hold(&s_gate);
	if (hk_role == ROLE_C && hk_is(point, "mutex.wait_yield"))
		atomic_fetch_add(&c_yields, 1);
	if (hk_role == ROLE_C && hk_is(point, "mutex.park") && !atomic_load(&c_parked)) {
		uint64_t s_at = atomic_load_explicit(&slot_of(&m)->s_at, memory_order_relaxed);

		uint64_t now = now_ns(CLOCK_MONOTONIC);

		atomic_store(&c_park_stale_ns, (long long)(now - s_at));
		atomic_store(&c_park_ns, (long long)now);
		atomic_store(&c_parked, 1);
	}
}

static bool s_is_held(void) { return hk_gate_is_held(&s_gate); }
static bool c_parked_now(void) { return atomic_load(&c_parked); }
static bool both_done(void) { return atomic_load(&hk_got[ROLE_S]) && atomic_load(&hk_got[ROLE_C]); }

int main(void)
{
	pthread_t s, c;

	lkt_watchdog(120);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "test_hook_mutex_crowd_yields: one CPU: spinning is off, nothing to test\n");
		return 77;
	}
	hk_install(on_hook);
	hk_mutex_policy(1000000, LK_MUTEX_HANDOFF_NS_LIMIT);	/* 1 */

	lk_mutex_lock(&m);
	hk_start_locker(&s, &m, ROLE_S);			/* 2 */
	hk_wait(s_is_held, "S claiming S and reaching mutex.spin");
	CHECK(word() & LK_MUTEX_SPINNING);

	atomic_store(&c_start_ns, (long long)now_ns(CLOCK_MONOTONIC));
	hk_start_locker(&c, &m, ROLE_C);			/* 3 */
	hk_wait(c_parked_now, "C spinning beside S, then parking");
	CHECK(atomic_load(&c_park_ns) - atomic_load(&c_start_ns) >= 1000000);	/* it spun its 1 ms */
	CHECK_EQ(atomic_load(&c_yields), 0);
	CHECK(atomic_load(&c_park_stale_ns) > 1000000);		/* S was stale: the yields were due */
	CHECK(word() & LK_MUTEX_SPINNING);			/* S still held at the gate */

	hk_gate_open(&s_gate);					/* 4 */
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	hk_wait(both_done, "S and C taking the lock");
	CHECK_EQ(pthread_join(s, NULL), 0);
	CHECK_EQ(pthread_join(c, NULL), 0);
	CHECK_EQ(word(), 0);
	CHECK_EQ(crowd_n(), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_done("test_hook_mutex_crowd_yields");
}
