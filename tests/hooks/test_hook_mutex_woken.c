/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_woken.c - while a woken waiter is on its way (W set, it has not run
 * yet), unlocks wake nobody else, but a running newcomer may still claim S, spin and take the lock
 * without parking (issue 11: before W had its own bit, the woken thread held S from the unlock on,
 * and every newcomer in that window parked). Once the woken thread runs it clears W (WC), and the
 * next unlock that finds threads parked and nobody spinning wakes one again: nobody sleeps for ever.
 *
 * Deterministic, with the mutex.woken pause point (the woken thread runs, W not cleared yet):
 *   1. main holds m; T parks, then X parks (T at the head). Spinning is off for both (their lock
 *      calls read the policy at entry), handoff_ns is 10 s: nobody becomes owed.
 *   2. main unlocks: UW wakes T with TOKEN_WAKE and sets W; T is held at mutex.woken.
 *   3. main locks again (the free lock, barging); spinning on (10 ms budget); N locks: it must claim
 *      S and spin (mutex.spin fires for it), never park.
 *   4. main unlocks: S set, so no wake; N takes the lock. N unlocks: W set, so no wake either - X
 *      stays queued, W stays set, mutex.unlock_slow has not fired.
 *   5. T goes on: clears W, takes the free lock, unlocks - now the unlock wakes X, who takes it.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "hooklab.h"
#include "locklab/mutex.h"

enum { ROLE_NONE, ROLE_T, ROLE_X, ROLE_N };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static struct hk_gate t_gate;	/* T held at mutex.woken */
static _Atomic int n_spun, n_parked;

static uint32_t word(void) { return hk_word(&m); }
static uint32_t queued(void) { return hk_queued(&m); }

static void on_hook(const char *point, void *arg)
{
	if (arg != &m)
		return;
	if (hk_role == ROLE_N && hk_is(point, "mutex.spin"))
		atomic_store(&n_spun, 1);
	if (hk_role == ROLE_N && hk_is(point, "mutex.park"))
		atomic_store(&n_parked, 1);
	if (hk_role == ROLE_T && hk_is(point, "mutex.woken"))
		hk_gate_hold(&t_gate);
}

static bool t_is_held(void) { return hk_gate_is_held(&t_gate); }
static bool n_decided(void) { return atomic_load(&n_spun) || atomic_load(&n_parked); }
static bool t_and_x_done(void) { return atomic_load(&hk_got[ROLE_T]) && atomic_load(&hk_got[ROLE_X]); }

int main(void)
{
	pthread_t t, x, n;

	lkt_watchdog(120);
	hk_install(on_hook);
	hk_mutex_policy(0, LK_MUTEX_HANDOFF_NS_LIMIT);

	lk_mutex_lock(&m);					/* 1 */
	hk_start_queued(&t, &m, ROLE_T, 1);
	hk_start_queued(&x, &m, ROLE_X, 2);

	CHECK_EQ(lk_mutex_unlock(&m), 0);			/* 2: wakes T (the head) */
	hk_wait(t_is_held, "the woken thread reaching mutex.woken (woken with TOKEN_WAKE)");
	CHECK_EQ(queued(), 1);					/* X */
	CHECK(word() & LK_MUTEX_WOKEN);
	CHECK(!(word() & LK_MUTEX_SPINNING));			/* the woken thread got no S */

	lk_mutex_lock(&m);					/* 3 */
	hk_mutex_policy(LK_MUTEX_SPIN_MAX_NS_LIMIT, LK_MUTEX_HANDOFF_NS_LIMIT);
	hk_start_locker(&n, &m, ROLE_N);
	hk_wait(n_decided, "the newcomer spinning or parking");
	if (atomic_load(&n_parked))
		fprintf(stderr, "a newcomer parked while the woken thread was on its way (W set)\n");
	CHECK_EQ(atomic_load(&n_parked), 0);
	CHECK(word() & LK_MUTEX_SPINNING);
	unsigned long slow0 = hk_count("mutex.unlock_slow");

	CHECK_EQ(lk_mutex_unlock(&m), 0);			/* 4: S set: no wake; N takes it */
	CHECK_EQ(pthread_join(n, NULL), 0);
	CHECK_EQ(atomic_load(&n_parked), 0);
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0);	/* neither unlock woke anybody */
	CHECK_EQ(queued(), 1);					/* X still parked */
	CHECK(word() & LK_MUTEX_WOKEN);				/* T still on its way */
	CHECK_EQ(atomic_load(&hk_got[ROLE_X]), 0);

	hk_gate_open(&t_gate);				/* 5 */
	hk_wait(t_and_x_done, "T and then X (woken by T's unlock) taking the lock");
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_join(x, NULL), 0);
	CHECK_EQ(atomic_load(&hk_got[ROLE_T]), 1);
	CHECK_EQ(atomic_load(&hk_got[ROLE_X]), 1);
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0 + 1);	/* T's unlock woke X */
	CHECK_EQ(word(), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_done("test_hook_mutex_woken");
}
