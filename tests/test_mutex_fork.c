/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_fork.c - issue 12 defect 5: fork() while another thread of the parent spins on an
 * lk_mutex, or waits on an lk_cond.
 *
 * 1. The pattern glibc mutexes survive: a pthread_atfork prepare handler locks m, the parent and
 *    child handlers unlock it. Here a parent thread B spins on m (SPINNING set: the prepare handler
 *    waits for that, with a 10 ms spin budget) when the process forks. The child inherits S, but no
 *    thread of the child will ever clear it: every unlock then takes the no-wake path. The child must
 *    still run contended: a holder releases m 200 times, each time once a contender is parked on it
 *    (spinning off, handoff_ns 10 s: a waiter stuck behind the dead spinner would wait 10 s per
 *    handover, and the child's 30 s watchdog fails it). A round whose child did not inherit S (B's
 *    budget ran out first) is retried.
 * 2. lk_cond: a parent thread waits on c with m1 when the process forks. In the child nobody waits
 *    on c, but c still records m1: a wait with another mutex must not fail with EINVAL, and destroy
 *    must not say EBUSY.
 *
 * Under ThreadSanitizer the child stays single-threaded (TSan cannot create threads after a
 * multi-threaded fork, see test_park_fork.c): it checks that its first contended lock attempt (a
 * timedlock with a past deadline while it holds m) drops the inherited S from the word.
 */
#define LKT_FORKS_WITH_THREADS	/* lktest.h: TSan options, CHILD_THREADS */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lktest.h"
#include "locklab/cond.h"
#include "locklab/mutex.h"


#define HANDOVERS 200

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static _Atomic int stop_b, forking;
static _Atomic uint32_t inherited;	/* the child's view of m's word when it started */

static uint32_t word(lk_mutex_t *mx)
{
	return atomic_load_explicit(&mx->word, memory_order_relaxed);	/* relaxed: observing bits */
}

/* B: lock/unlock m until told to stop; while the main thread forks it spins on m */
static void *spinner_b(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_b)) {
		lk_mutex_lock(&m);
		lk_mutex_unlock(&m);
		sched_yield();
	}
	return NULL;
}

static void prepare(void)
{
	if (!atomic_load(&forking))
		return;
	lk_mutex_lock(&m);
	/*
	 * B will try again and spin (10 ms budget): fork while it does. If we miss the spin (a slow
	 * machine, an emulator), B parks and S never shows again: fork anyway, and the child, which
	 * inherits no S, asks for another round.
	 */
	while (!(word(&m) & (LK_MUTEX_SPINNING | LK_MUTEX_QUEUED_MASK)))
		sched_yield();
}

static void parent(void)
{
	if (atomic_load(&forking))
		CHECK_EQ(lk_mutex_unlock(&m), 0);
}

static void child(void)
{
	if (!atomic_load(&forking))
		return;
	atomic_store(&inherited, word(&m));
	lk_mutex_unlock(&m);	/* the child's unlock: must work, whatever B left in the word */
}

static unsigned long handed;		/* under m */
static _Atomic int contending;		/* the contender is inside lk_mutex_lock */

static void *holder(void *arg)
{
	(void)arg;
	/* hold m until the contender is parked on it (no spinning in the child), HANDOVERS times */
	for (int i = 0; i < HANDOVERS; i++) {
		lk_mutex_lock(&m);
		handed++;
		while (!atomic_load(&contending) || !(word(&m) & LK_MUTEX_PARKED))
			sched_yield();
		lk_mutex_unlock(&m);	/* must wake it */
		while (atomic_load(&contending))
			sched_yield();
	}
	return NULL;
}

static void *contender(void *arg)
{
	(void)arg;
	for (int i = 0; i < HANDOVERS; i++) {
		while (!(word(&m) & LK_MUTEX_LOCKED))	/* the holder holds it: contend */
			sched_yield();
		atomic_store(&contending, 1);
		lk_mutex_lock(&m);
		atomic_store(&contending, 0);
		handed++;
		lk_mutex_unlock(&m);
	}
	return NULL;
}

/* Exit status: 0 ok, 3 S was not inherited (retry), 10+ a failure. */
static int child_main(void)
{
	struct lk_mutex_policy p;

	alarm(30);		/* the parent's watchdog is not inherited */
	if (!(atomic_load(&inherited) & LK_MUTEX_SPINNING))
		return 3;
	lk_mutex_get_policy(&p);
	p.spin_min_ns = p.spin_max_ns = 0;		/* waiters park: every handover needs a wake */
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;	/* 10 s: a waiter stuck behind a dead spinner waits */
	if (lk_mutex_set_policy(&p))
		return 10;
	if (!CHILD_THREADS) {
		struct timespec past = { 0, 0 };

		lk_mutex_lock(&m);
		if (lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &past) != ETIMEDOUT)
			return 11;
		if (word(&m) & LK_MUTEX_SPINNING)	/* nobody spins in this process */
			return 12;
		lk_mutex_unlock(&m);
		return word(&m) == 0 ? 0 : 13;
	}
	pthread_t t1, t2;

	/* a holder that releases only once the contender is parked: every handover is a wake-up */
	if (pthread_create(&t1, NULL, holder, NULL) || pthread_create(&t2, NULL, contender, NULL))
		return 14;
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	if (handed != 2 * HANDOVERS)
		return 15;
	return word(&m) == 0 ? 0 : 18;
}

static void test_spinner_at_fork(void)
{
	struct lk_mutex_policy def, p;
	pthread_t b;
	int round, status = 0;

	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = 10000000;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	CHECK_EQ(pthread_atfork(prepare, parent, child), 0);
	CHECK_EQ(pthread_create(&b, NULL, spinner_b, NULL), 0);
	for (round = 0; round < 50; round++) {
		atomic_store(&forking, 1);
		pid_t pid = fork();
		if (pid == 0)
			_exit(child_main());
		atomic_store(&forking, 0);
		CHECK(pid > 0);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
			continue;	/* B's spin ended before the snapshot: try again */
		break;
	}
	atomic_store(&stop_b, 1);
	pthread_join(b, NULL);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
	if (round == 50) {
		fprintf(stderr, "no child inherited a spinning B in 50 forks\n");
		CHECK(round < 50);
		return;
	}
	if (WIFSIGNALED(status))
		fprintf(stderr, "child (forked while B spun, round %d) killed by signal %d: a contended lock "
			"hung behind the dead spinner\n", round, WTERMSIG(status));
	CHECK(WIFEXITED(status));
	if (WIFEXITED(status))
		CHECK_EQ(WEXITSTATUS(status), 0);
	CHECK_EQ(word(&m), 0);
	if (CHILD_THREADS)
		printf("  child forked while B spun (round %d): %d contended handovers\n", round, HANDOVERS);
	else
		printf("  child forked while B spun (round %d): the inherited S dropped (single-threaded child)\n",
		       round);
}

/* ---- lk_cond ------------------------------------------------------------------------------------ */

static lk_cond_t c = LK_COND_INITIALIZER;
static lk_mutex_t m1 = LK_MUTEX_INITIALIZER, m2 = LK_MUTEX_INITIALIZER;
static bool go;		/* under m1 */

static void *cond_waiter(void *arg)
{
	(void)arg;
	lk_mutex_lock(&m1);
	while (!go)
		CHECK_EQ(lk_cond_wait(&c, &m1), 0);
	lk_mutex_unlock(&m1);
	return NULL;
}

static int cond_child(void)
{
	struct timespec dl;

	alarm(30);
	/* nobody waits on c in this process */
	lk_mutex_lock(&m2);
	dl = lkt_deadline_in(CLOCK_MONOTONIC, 10000000);
	int r = lk_cond_timedwait(&c, &m2, CLOCK_MONOTONIC, &dl);
	lk_mutex_unlock(&m2);
	if (r != ETIMEDOUT)
		return r == EINVAL ? 20 : 21;
	if (lk_cond_signal(&c) || lk_cond_broadcast(&c))
		return 22;
	return lk_cond_destroy(&c) == 0 ? 0 : 23;
}

static void test_cond_at_fork(void)
{
	pthread_t w;
	int status = 0;

	CHECK_EQ(pthread_create(&w, NULL, cond_waiter, NULL), 0);
	while (atomic_load_explicit(&c.mutex, memory_order_relaxed) != (uintptr_t)&m1)
		sched_yield();
	pid_t pid = fork();
	if (pid == 0)
		_exit(cond_child());
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 20)
		fprintf(stderr, "child: lk_cond_timedwait with another mutex returned EINVAL: c still "
			"recorded the parent's waiter's mutex\n");
	if (WIFEXITED(status))
		CHECK_EQ(WEXITSTATUS(status), 0);
	lk_mutex_lock(&m1);
	go = true;
	lk_cond_broadcast(&c);
	lk_mutex_unlock(&m1);
	pthread_join(w, NULL);
	CHECK_EQ(lk_cond_destroy(&c), 0);
}

int main(void)
{
	lkt_watchdog(120);
	test_cond_at_fork();
	test_spinner_at_fork();
	return lkt_done("test_mutex_fork");
}
