/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_atfork_ctor.c - fork() in a program linked with a library whose constructor
 * registered "lock in prepare, unlock in parent and child" on a static mutex it has not used yet
 * (tests/preload_atfork_lib.c), on every shim lock and natively.
 *
 * That constructor runs before the preloaded shim's, so the library's prepare handler runs after
 * the shim's, which holds the shim's block allocator; the mutex's first use there allocates its
 * out-of-line lock. The hostile review of stop 36 found that every such program hung at its first
 * fork() under the six out-of-line locks (the forking thread waited for the allocator lock it held
 * itself). Checks: fork() returns in the parent; the child takes and releases the library's mutex
 * and exits 0; the parent takes it afterwards, in three rounds. Then 100 more forks while another
 * thread, holding the library's lock, makes mutexes' first uses and destroys them: the shim used to
 * hold its allocator through the prepare phase, and that thread then waited for it while the
 * library's prepare handler waited for the thread (the re-review: 24 of 24 runs hung under the
 * out-of-line locks). Each child also makes a mutex's first use and destroys it, which takes over
 * an allocator lock a parent thread held at the fork. The child does not take the library's lock:
 * the library's child handler unlocked it before the shim's own child handler ran, and under the
 * queued locks (spin_ticket, qspinlock) that unlock can hand it to the churning thread, which does
 * not exist in the child (docs/shim.md, "Limits").
 *
 * Not covered: a child handler that runs before the lot's and lk_mutex's own resets and unlocks a
 * mutex other threads contended at the fork (docs/shim.md, "Limits").
 */
#include "preload_test.h"	/* first: it defines _GNU_SOURCE */

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

int lkp_atfork_lib_use(void);
void lkp_atfork_lib_churn(void);

static _Atomic int stop;
static _Atomic unsigned long churns;

static void *churner(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {	/* relaxed: a flag */
		lkp_atfork_lib_churn();
		atomic_fetch_add_explicit(&churns, 1, memory_order_relaxed);	/* relaxed: a count */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);

	lkt_watchdog(30);
	fprintf(stderr, "test_preload_atfork_ctor: lock %s\n", lock);
	for (int round = 0; round < 3; round++) {
		int status;
		pid_t pid = fork();	/* the library's prepare handler makes its mutex's first use here */

		CHECK(pid >= 0);
		if (pid == 0) {
			alarm(10);
			_exit(lkp_atfork_lib_use() == round + 1 ? 0 : 3);
		}
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		CHECK_EQ(lkp_atfork_lib_use(), round + 1);
	}

	pthread_t th;

	CHECK_EQ(pthread_create(&th, NULL, churner, NULL), 0);
	for (int round = 0; round < 100; round++) {
		int status;
		pid_t pid = fork();

		CHECK(pid >= 0);
		if (pid == 0) {
			pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

			alarm(10);
			pthread_mutex_lock(&m);	/* a first use and a destroy in the child */
			pthread_mutex_unlock(&m);
			pthread_mutex_destroy(&m);
			_exit(0);
		}
		CHECK_EQ(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);	/* relaxed: a flag */
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK(atomic_load(&churns) > 0);
	return lkt_done("test_preload_atfork_ctor");
}
