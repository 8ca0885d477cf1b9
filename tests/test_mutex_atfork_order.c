/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_atfork_order.c - a child handler that a program registers from a default-priority
 * constructor runs after lk_mutex's own child-side reset, in a statically linked program too (this
 * test links liblocklab.a, where the program's own constructors run before the library's
 * default-priority ones), so it finds no trace of the parent's waiters.
 *
 * The glibc pattern "lock in prepare, unlock in child", registered from a constructor: the prepare
 * handler locks m and waits until one parent thread is parked on m and another spins on it (10 ms
 * budget); the child handler unlocks m and then destroys and re-initialises it (a common way to give
 * the child a fresh lock). In the child nobody holds or waits for m: destroy must return 0. Before
 * the fix lk_mutex's fork handler was registered from a default-priority constructor that ran after
 * the program's, so the program's child handler still saw the parent's PARKED and SPINNING as the
 * child's own and destroy said EBUSY. A round whose fork did not catch the spinner is retried.
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
static _Atomic int forking, stop;
static uint32_t inherited;		/* the child's view of m's word in its handler */
static int child_unlock = -1, child_destroy = -1;

static uint32_t word(void)
{
	return atomic_load_explicit(&m.word, memory_order_relaxed);	/* relaxed: observing bits */
}

static uint32_t queued(void)
{
	return (word() & LK_MUTEX_QUEUED_MASK) >> LK_MUTEX_QUEUED_SHIFT;
}

static void prepare(void)
{
	if (!atomic_load(&forking))
		return;
	lk_mutex_lock(&m);
	/*
	 * one looper parks at once (the other holds S), the other spins (10 ms): fork while it does.
	 * If we miss the spin, both park and S never shows again: fork anyway (the child asks for
	 * another round).
	 */
	for (int i = 0; i < 1000000 && queued() < 2 && !(queued() == 1 && (word() & LK_MUTEX_SPINNING));
	     i++)
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
	inherited = word();
	child_unlock = lk_mutex_unlock(&m);
	child_destroy = lk_mutex_destroy(&m);
	if (child_destroy == 0)
		lk_mutex_init(&m);
}

/* Registered before main(), by a default-priority constructor of the program. */
static __attribute__((constructor)) void register_handlers(void)
{
	pthread_atfork(prepare, parent, child);
}

static void *looper(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		lk_mutex_lock(&m);
		lk_mutex_unlock(&m);
	}
	return NULL;
}

/* Exit status: 0 ok, 3 the fork did not catch a parked and a spinning thread (retry), 10+ failure. */
static int child_main(void)
{
	alarm(30);
	if ((inherited & (LK_MUTEX_PARKED | LK_MUTEX_SPINNING)) != (LK_MUTEX_PARKED | LK_MUTEX_SPINNING))
		return 3;
	if (child_unlock != 0)
		return 10;
	if (child_destroy != 0) {
		fprintf(stderr, "child handler: inherited word %#x; after its unlock lk_mutex_destroy = %d "
			"(word %#x): the parent's waiters were not stale yet\n", inherited, child_destroy, word());
		return 11;
	}
	lk_mutex_lock(&m);
	if (lk_mutex_unlock(&m) != 0 || lk_mutex_destroy(&m) != 0)
		return 12;
	return 0;
}

int main(void)
{
	struct lk_mutex_policy def, p;
	pthread_t t[2];
	int round, status = 0;

	lkt_watchdog(300);
	lk_mutex_get_policy(&def);
	p = def;
	p.spin_min_ns = p.spin_max_ns = LK_MUTEX_SPIN_MAX_NS_LIMIT;	/* 10 ms */
	p.handoff_ns = LK_MUTEX_HANDOFF_NS_LIMIT;			/* nobody becomes owed */
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, looper, NULL), 0);
	for (round = 0; round < 50; round++) {
		atomic_store(&forking, 1);
		pid_t pid = fork();

		if (pid == 0)
			_exit(child_main());
		atomic_store(&forking, 0);
		CHECK(pid > 0);
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
			continue;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fprintf(stderr, "round %d: child status %#x\n", round, status);
		break;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
	if (round == 50)
		fprintf(stderr, "no fork caught a parked and a spinning thread in 50 rounds\n");
	CHECK(round < 50);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	return lkt_done("test_mutex_atfork_order");
}
