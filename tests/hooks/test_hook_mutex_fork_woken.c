/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_fork_woken.c - fork while WOKEN is set: the woken thread belongs to the
 * parent, so in the child the ancestor's W (with its P and Q) is stale and must neither suppress the
 * child's wakes (a W that survived would make every unlock of the child skip waking, and the child's
 * parked thread would sleep for ever) nor make lk_mutex_destroy() say EBUSY. In the parent nothing
 * changes: the woken thread clears W when it runs and the parked one is woken after it.
 *
 * Deterministic, with the mutex.woken pause point, once with the mutex free at the fork and once held
 * by the forking thread (the "lock in prepare, unlock in the child" pattern):
 *   1. main holds m; T parks, then X parks; main unlocks: UW wakes T (W set), T is held at
 *      mutex.woken. (held: main locks m again.)
 *   2. fork. Child: (held: unlock m, which must not return EPERM nor wake anybody;) destroy says 0;
 *      three rounds of: lock m, a child thread C parks on it, unlock - which must wake C.
 *   3. Parent: (held: unlock;) T goes on, T and X take m, the word ends 0, destroy says 0, and the
 *      child exited 0.
 * Spinning is off and handoff_ns is 10 s: nobody spins or becomes owed, so only wakes can end a wait.
 */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>

#define LKT_FORKS_WITH_THREADS
#include "hooklab.h"
#include "locklab/mutex.h"

enum { ROLE_NONE, ROLE_T, ROLE_X, ROLE_C };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static struct hk_gate t_gate;	/* T held at mutex.woken */
static _Atomic int c_parked;

static uint32_t word(void) { return hk_word(&m); }
static uint32_t queued(void) { return hk_queued(&m); }

static void on_hook(const char *point, void *arg)
{
	if (arg != &m)
		return;
	if (hk_role == ROLE_C && hk_is(point, "mutex.park"))
		atomic_store(&c_parked, 1);
	if (hk_role == ROLE_T && hk_is(point, "mutex.woken"))
		hk_gate_hold(&t_gate);
}

static bool one_queued(void) { return queued() == 1; }
static bool two_queued(void) { return queued() == 2; }
static bool t_is_held(void) { return hk_gate_is_held(&t_gate); }
static bool c_is_parked(void) { return atomic_load(&c_parked) && queued() == 1; }
static bool c_got(void) { return atomic_load(&hk_got[ROLE_C]); }
static bool t_and_x_got(void) { return atomic_load(&hk_got[ROLE_T]) && atomic_load(&hk_got[ROLE_X]); }

static int child(bool held)
{
	/* the ancestor's W, P and Q are set in the word we inherited */
	CHECK(word() & LK_MUTEX_WOKEN);
	if (held)
		CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);	/* nobody of this process holds or waits on it */
	for (int round = 0; round < 3 && CHILD_THREADS; round++) {
		pthread_t c;

		lk_mutex_lock(&m);
		atomic_store(&c_parked, 0);
		atomic_store(&hk_got[ROLE_C], 0);
		hk_start_locker(&c, &m, ROLE_C);
		hk_wait(c_is_parked, "the child's thread parking");
		CHECK_EQ(lk_mutex_unlock(&m), 0);
		hk_wait(c_got, "the child's unlock waking its parked thread (a stale W suppressed the wake?)");
		CHECK_EQ(pthread_join(c, NULL), 0);
	}
	CHECK_EQ(word(), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_failures ? 1 : 0;
}

static void scenario(bool held)
{
	pthread_t t, x;
	int status;

	hk_gate_reset(&t_gate);
	atomic_store(&hk_got[ROLE_T], 0);
	atomic_store(&hk_got[ROLE_X], 0);

	lk_mutex_lock(&m);
	hk_start_locker(&t, &m, ROLE_T);
	hk_wait(one_queued, "T parking");
	hk_start_locker(&x, &m, ROLE_X);
	hk_wait(two_queued, "X parking");
	CHECK_EQ(lk_mutex_unlock(&m), 0);	/* UW: wakes T, sets W */
	hk_wait(t_is_held, "T reaching mutex.woken");
	CHECK(word() & LK_MUTEX_WOKEN);
	if (held)
		lk_mutex_lock(&m);

	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(child(held));
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fprintf(stderr, "the child (mutex %s at the fork) failed: status %#x\n", held ? "held" : "free",
			(unsigned)status);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	if (held)
		CHECK_EQ(lk_mutex_unlock(&m), 0);
	hk_gate_open(&t_gate);
	hk_wait(t_and_x_got, "T and X taking the lock in the parent");
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_join(x, NULL), 0);
	CHECK_EQ(word(), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
}

int main(void)
{
	lkt_watchdog(120);
	hk_install(on_hook);
	hk_mutex_policy(0, LK_MUTEX_HANDOFF_NS_LIMIT);

	scenario(false);
	scenario(true);
	return lkt_done("test_hook_mutex_fork_woken");
}
