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
 * and exits 0; the parent takes it afterwards, in three rounds.
 *
 * Not covered: a child handler that runs before the lot's and lk_mutex's own resets and unlocks a
 * mutex other threads contended at the fork (docs/shim.md, "Limits").
 */
#include "preload_test.h"	/* first: it defines _GNU_SOURCE */

#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

int lkp_atfork_lib_use(void);

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
	return lkt_done("test_preload_atfork_ctor");
}
