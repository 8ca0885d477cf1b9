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
 *   7. The review's F1: a thread that relocks the mutex through the library's own code (C, in
 *      lk_cond_timedwait after its timeout) is at the head when an extra wake is due. It is woken
 *      (it takes the free lock) but with a plain token, and the unlocker gives its claim back: wm_n
 *      is 0 again at once, not left at the cap for good (the library never drops it).
 *   8. The review's F2: a woken waiter whose park is refused (the lock was freed between its look
 *      and validate()) takes the lock without parking again: the record counts a success (wm_ok
 *      rises), not a failure.
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
#include "locklab/cond.h"

enum { ROLE_NONE, ROLE_T, ROLE_X, ROLE_Y, ROLE_C, ROLE_T2, ROLE_R };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static struct hk_gate t_gate;	/* T (then T2) held at mutex.woken */
static struct hk_gate r_woken, r_park;	/* R held at mutex.woken, then at its next mutex.park */
static lk_cond_t cv = LK_COND_INITIALIZER;
static _Atomic int c_waiting, c_rc = -1;

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
	if (arg != &m)
		return;
	if ((hk_role == ROLE_T || hk_role == ROLE_T2) && hk_is(point, "mutex.woken"))
		hk_gate_hold(&t_gate);
	if (hk_role == ROLE_R && hk_is(point, "mutex.woken"))
		hk_gate_hold(&r_woken);
	if (hk_role == ROLE_R && hk_is(point, "mutex.park") && hk_gate_is_held(&r_woken))
		hk_gate_hold(&r_park);
}

/* the library's own lk_mutex_set_policy (this file's name for it is the copy's) */
#undef lk_mutex_set_policy
int lk_mutex_set_policy(const struct lk_mutex_policy *p);
static int lib_set_policy(const struct lk_mutex_policy *p) { return lk_mutex_set_policy(p); }
#define lk_mutex_set_policy LKMV(set_policy)

/* C: waits on cv with m (the variant's lock), times out, and lk_cond relocks m with the library's code. */
static void *cond_waiter(void *arg)
{
	struct timespec ts;

	(void)arg;
	lk_mutex_lock(&m);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += 50000000;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	atomic_store(&c_waiting, 1);
	atomic_store(&c_rc, lk_cond_timedwait(&cv, &m, CLOCK_MONOTONIC, &ts));
	atomic_store(&hk_got[ROLE_C], 1);
	CHECK_EQ(lkm_wm_unlock(&m), 0);
	return NULL;
}

static bool t_is_held(void) { return hk_gate_is_held(&t_gate); }
static bool x_done(void) { return atomic_load(&hk_got[ROLE_X]) && wm_n() == 0; }
static bool t_and_y_done(void) { return atomic_load(&hk_got[ROLE_T]) && atomic_load(&hk_got[ROLE_Y]); }
static bool c_done(void) { return atomic_load(&hk_got[ROLE_C]); }
static bool c_on_cv(void) { return atomic_load(&c_waiting) && !(word() & LK_MUTEX_LOCKED); }
static bool c_queued(void) { return queued() == 1; }
static bool t2_done(void) { return atomic_load(&hk_got[ROLE_T2]); }
static bool r_woken_held(void) { return hk_gate_is_held(&r_woken); }
static bool r_park_held(void) { return hk_gate_is_held(&r_park); }
static bool r_done(void) { return atomic_load(&hk_got[ROLE_R]); }

int main(void)
{
	pthread_t t, x, y;

	lkt_watchdog(120);
	hk_install(on_hook);
	hk_mutex_policy(0, LK_MUTEX_HANDOFF_NS_LIMIT);
	set_wm(0, 0);

	lk_mutex_lock(&m);					/* 1 */
	hk_start_queued(&t, &m, ROLE_T, 1);
	hk_start_queued(&x, &m, ROLE_X, 2);
	hk_start_queued(&y, &m, ROLE_Y, 3);

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

	/* 7. C parks through the library's lock_slow (the library's policy: no spinning either) */
	struct lk_mutex_policy lib = { .spin_min_ns = 0, .spin_max_ns = 0, .handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT };
	pthread_t c, t2;

	CHECK_EQ(lib_set_policy(&lib), 0);			/* lk_cond relocks with the library's code */
	/* T2 woken and held at mutex.woken (W set); C queued behind it, woken as the extra one */
	hk_gate_reset(&t_gate);
	lk_mutex_lock(&m);
	hk_start_queued(&t2, &m, ROLE_T2, 1);
	CHECK_EQ(lkm_wm_unlock(&m), 0);				/* wakes T2, held at mutex.woken (W set) */
	hk_wait(t_is_held, "T2 reaching mutex.woken");
	CHECK_EQ(pthread_create(&c, NULL, cond_waiter, NULL), 0);
	/*
	 * Until C waits on cv, m is C's: a lock here would park behind it, and C's unlock (W set by
	 * T2, held) would wake nobody. So wait for C to be in lk_cond_timedwait, which frees m.
	 */
	hk_wait(c_on_cv, "C waiting on cv, m free");
	lk_mutex_lock(&m);
	hk_wait(c_queued, "C timed out on cv and queued on m");
	set_wm(256, 0);
	slow0 = hk_count("mutex.unlock_slow");
	CHECK_EQ(lkm_wm_unlock(&m), 0);				/* extra wake due: the head is C */
	CHECK_EQ(hk_count("mutex.unlock_slow"), slow0 + 1);
	hk_wait(c_done, "C, woken beside the woken T2, relocking");
	CHECK_EQ(pthread_join(c, NULL), 0);
	CHECK_EQ(wm_n(), 0);					/* C got a plain token: claim given back */
	hk_gate_open(&t_gate);
	hk_wait(t2_done, "T2 taking the lock");
	CHECK_EQ(pthread_join(t2, NULL), 0);
	CHECK_EQ(word(), 0);
	CHECK_EQ(wm_n(), 0);

	/* 8. R woken, then its re-park refused */
	pthread_t r;

	set_wm(WM_OK_MIN, 0);
	lk_mutex_lock(&m);
	hk_start_queued(&r, &m, ROLE_R, 1);
	CHECK_EQ(lkm_wm_unlock(&m), 0);				/* wakes R (TOKEN_WAKE) */
	hk_wait(r_woken_held, "R reaching mutex.woken");
	lk_mutex_lock(&m);					/* R will find it held */
	hk_gate_open(&r_woken);
	hk_wait(r_park_held, "R about to park again");
	CHECK_EQ(lkm_wm_unlock(&m), 0);				/* free again: R's validate() refuses */
	hk_gate_open(&r_park);
	hk_wait(r_done, "R taking the lock without parking again");
	CHECK_EQ(pthread_join(r, NULL), 0);
	CHECK(wm_ok() > WM_OK_MIN);				/* a success, not a failure */
	CHECK_EQ(word(), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_done("test_hook_mutex_wake_more");
}
