/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_wake_more.c - LKM_WAKE_MORE (src/mutex.c), which no library build
 * enables: a copy of src/mutex.c compiled into this file with LKM_WAKE_MORE 1 and LKM_WAKE_MORE_Q 1
 * (lab/adapters/lk_mutex_renamed.h: symbols renamed, statics visible). Its unlock, lkm_wm_unlock(),
 * may wake the head of the queue while a woken waiter is on its way (W set), but only when the
 * slot's record says woken waiters take the lock (wm_ok >= WM_OK_MIN) and fewer than LKM_WAKE_MORE
 * extra woken waiters are in flight (wm_n). Deterministic, with the mutex.woken pause point:
 *
 *   1. main holds m; T, X and Y park in that order. Spinning is off, handoff_ns is 10 s.
 *   2. main unlocks: P and nobody awake, so the plain wake: T gets TOKEN_WAKE (W set) and is held
 *      at mutex.woken. main takes the free lock again.
 *   3. Record says no (wm_ok 0): main's unlock wakes nobody - X and Y stay queued, the unlock's slow
 *      path (mutex.unlock_slow) does not fire, wm_n stays 0.
 *   4. Record says yes but wm_n is at the cap (set by hand): still nobody woken.
 *   5. Record says yes, wm_n 0: the unlock wakes X (an extra woken waiter, W untouched) although
 *      T is still on its way; X takes the free lock and leaves; wm_n is back to 0 once X ran, and
 *      X's success raised wm_ok.
 *   6. T goes on: clears W, takes the lock; its unlock wakes Y. Everything ends free and empty.
 */
#define LKM_VARIANT wmhook
#define LKM_WAKE_MORE 1
#define LKM_WAKE_MORE_Q 1
#include "../../lab/adapters/lk_mutex_renamed.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "hooklab.h"

enum { ROLE_NONE, ROLE_T, ROLE_X, ROLE_Y };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static struct hk_gate t_gate;	/* T held at mutex.woken */

static uint32_t word(void) { return hk_word(&m); }
static uint32_t queued(void) { return hk_queued(&m); }
static struct slot *sl(void) { return slot_of(&m); }
/* relaxed: test-only reads and writes of the slot's heuristics */
static unsigned wm_n(void) { return atomic_load_explicit(&sl()->wm_n, memory_order_relaxed); }
static unsigned wm_ok(void) { return atomic_load_explicit(&sl()->wm_ok, memory_order_relaxed); }
static void set_wm(unsigned ok, unsigned n)
{
	atomic_store_explicit(&sl()->wm_ok, (uint16_t)ok, memory_order_relaxed);
	atomic_store_explicit(&sl()->wm_n, (uint16_t)n, memory_order_relaxed);
}

static void on_hook(const char *point, void *arg)
{
	if (arg == &m && hk_role == ROLE_T && hk_is(point, "mutex.woken"))
		hk_gate_hold(&t_gate);
}

static bool t_is_held(void) { return hk_gate_is_held(&t_gate); }
static bool x_done(void) { return atomic_load(&hk_got[ROLE_X]) && wm_n() == 0; }
static bool t_and_y_done(void) { return atomic_load(&hk_got[ROLE_T]) && atomic_load(&hk_got[ROLE_Y]); }

int main(void)
{
	pthread_t t, x, y;

	lkt_watchdog(120);
	hk_install(on_hook);
	hk_mutex_policy(0, LK_MUTEX_HANDOFF_NS_LIMIT);
	set_wm(0, 0);

	lk_mutex_lock(&m);					/* 1 */
	hk_start_locker(&t, &m, ROLE_T);
	while (queued() != 1)
		sched_yield();
	hk_start_locker(&x, &m, ROLE_X);
	while (queued() != 2)
		sched_yield();
	hk_start_locker(&y, &m, ROLE_Y);
	while (queued() != 3)
		sched_yield();

	CHECK_EQ(lkm_wm_unlock(&m), 0);				/* 2: the plain wake of T */
	hk_wait(t_is_held, "the woken thread reaching mutex.woken (woken with TOKEN_WAKE)");
	CHECK(word() & LK_MUTEX_WOKEN);
	CHECK_EQ(queued(), 2);
	CHECK_EQ(wm_n(), 0);
	lk_mutex_lock(&m);

	unsigned long slow0 = hk_count("mutex.unlock_slow");
	CHECK_EQ(lkm_wm_unlock(&m), 0);				/* 3: no record: no extra wake */
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0);
	CHECK_EQ(queued(), 2);
	CHECK_EQ(wm_n(), 0);
	CHECK_EQ(atomic_load(&hk_got[ROLE_X]), 0);

	lk_mutex_lock(&m);					/* 4: the cap */
	set_wm(256, LKM_WAKE_MORE);
	CHECK_EQ(lkm_wm_unlock(&m), 0);
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0);
	CHECK_EQ(queued(), 2);
	CHECK_EQ(wm_n(), LKM_WAKE_MORE);

	lk_mutex_lock(&m);					/* 5: the extra wake */
	set_wm(WM_OK_MIN, 0);
	CHECK_EQ(lkm_wm_unlock(&m), 0);
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0 + 1);
	hk_wait(x_done, "X, woken beside the woken T, taking the lock and dropping wm_n");
	CHECK_EQ(pthread_join(x, NULL), 0);
	CHECK(t_is_held());
	CHECK(word() & LK_MUTEX_WOKEN);				/* still T's: the extra wake left W alone */
	CHECK_EQ(queued(), 1);					/* Y */
	CHECK(wm_ok() > WM_OK_MIN);				/* X took the lock */
	CHECK_EQ(atomic_load(&hk_got[ROLE_Y]), 0);

	hk_gate_open(&t_gate);					/* 6 */
	hk_wait(t_and_y_done, "T and then Y (woken by T's unlock) taking the lock");
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_join(y, NULL), 0);
	CHECK_EQ(word(), 0);
	CHECK_EQ(wm_n(), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_done("test_hook_mutex_wake_more");
}
