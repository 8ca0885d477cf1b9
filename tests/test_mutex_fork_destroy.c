/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_fork_destroy.c - a fork child can destroy a mutex that parent threads were parked
 * and spinning on at the fork (mutex.h: EBUSY only "when the mutex is held or a thread is waiting for
 * it"; the parent's waiters do not exist in the child).
 *
 * The parent holds m; W parks on m (PARKED, QUEUED 1); B spins on m (SPINNING; 10 ms budget) when
 * the process forks. In the child nobody waits for m: after the child's own unlock (the inline path
 * sees P with S and H = 0, so it only clears L, leaving the parent's P and S behind) lk_mutex_destroy
 * must return 0, and again after a lock/unlock round. Before the fix the parent's PARKED bit was not
 * recognised as stale (fresh() dropped S, H and Q but not P) and destroy said EBUSY forever. A round
 * whose child did not see B spinning (its budget ran out first) is retried. Single-threaded child:
 * runs under every sanitizer.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lktest.h"
#include "locklab/mutex.h"

static lk_mutex_t m = LK_MUTEX_INITIALIZER;

static uint32_t word(void)
{
	return atomic_load_explicit(&m.word, memory_order_relaxed);	/* relaxed: observing bits */
}

static uint32_t queued(void)
{
	return (word() & LK_MUTEX_QUEUED_MASK) >> LK_MUTEX_QUEUED_SHIFT;
}

static void *locker(void *arg)
{
	(void)arg;
	lk_mutex_lock(&m);
	lk_mutex_unlock(&m);
	return NULL;
}

/* Exit status: 0 ok, 3 B was not spinning at the fork (retry), 10+ a failure. */
static int child_main(uint32_t inherited)
{
	alarm(30);		/* the parent's watchdog is not inherited */
	if ((inherited & (LK_MUTEX_LOCKED | LK_MUTEX_PARKED | LK_MUTEX_SPINNING)) !=
	    (LK_MUTEX_LOCKED | LK_MUTEX_PARKED | LK_MUTEX_SPINNING))
		return 3;
	if (lk_mutex_destroy(&m) != EBUSY)	/* held (by us: the forking thread held it) */
		return 10;
	if (lk_mutex_unlock(&m) != 0)
		return 11;
	int r1 = lk_mutex_destroy(&m);

	lk_mutex_lock(&m);
	if (lk_mutex_unlock(&m) != 0)
		return 12;
	int r2 = lk_mutex_destroy(&m);

	if (r1 || r2) {
		fprintf(stderr, "child: inherited word %#x; destroy after the child's unlock = %d, after a "
			"lock/unlock = %d (word %#x): nobody holds or waits for m in the child\n", inherited,
			r1, r2, word());
		return 13;
	}
	return 0;
}

int main(void)
{
	struct lk_mutex_policy def, p;
	int round, status = 0;

	lkt_watchdog(300);
	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = LK_MUTEX_SPIN_MAX_NS_LIMIT;	/* 10 ms: B spins while we fork */
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;			/* nobody becomes owed */
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	for (round = 0; round < 50; round++) {
		pthread_t w, b;

		lk_mutex_lock(&m);
		CHECK_EQ(pthread_create(&w, NULL, locker, NULL), 0);
		while (queued() != 1 || (word() & LK_MUTEX_SPINNING))	/* W spun, gave up, parked */
			sched_yield();
		CHECK_EQ(pthread_create(&b, NULL, locker, NULL), 0);
		while (!(word() & LK_MUTEX_SPINNING) && queued() < 2)	/* B spins (or gave up already) */
			sched_yield();
		uint32_t at_fork = word();
		pid_t pid = fork();

		if (pid == 0)
			_exit(child_main(word()));
		CHECK(pid > 0);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		lk_mutex_unlock(&m);
		CHECK_EQ(pthread_join(w, NULL), 0);
		CHECK_EQ(pthread_join(b, NULL), 0);
		CHECK_EQ(lk_mutex_destroy(&m), 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
			continue;	/* B's spin ended before the fork: try again */
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fprintf(stderr, "round %d: word at fork %#x, child status %#x\n", round, at_fork, status);
		break;
	}
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
	if (round == 50)
		fprintf(stderr, "no child inherited a spinning B in 50 forks\n");
	CHECK(round < 50);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	return lkt_done("test_mutex_fork_destroy");
}
