/* SPDX-License-Identifier: MIT */
/*
 * tests/preload_atfork_lib.c - a shared library with the classic fork-safety pattern, for
 * tests/test_preload_atfork_ctor.c: a static mutex, and a constructor that registers "lock it in
 * prepare, unlock it in parent and child". The test links it, so its constructor runs before the
 * preloaded shim's, and its handlers are registered before the shim's: its prepare handler runs
 * after the shim's, and its child handler before the shim's. Not a test itself (no test_ prefix).
 */
#include <pthread.h>

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static int lib_uses;	/* guarded by lib_lock */

static void lib_prepare(void)
{
	pthread_mutex_lock(&lib_lock);
}

static void lib_after(void)
{
	pthread_mutex_unlock(&lib_lock);
}

__attribute__((constructor)) static void lib_init(void)
{
	pthread_atfork(lib_prepare, lib_after, lib_after);
}

/*
 * Under the library's lock, makes a mutex's first use and destroys it: under the shim's out-of-line
 * locks that allocates and frees a block. A thread doing this while another forks deadlocked fork()
 * when the shim held its block allocator across the prepare phase (the library's prepare handler
 * waits for this lock, this thread for the allocator).
 */
void lkp_atfork_lib_churn(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&lib_lock);
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
	pthread_mutex_destroy(&m);
	pthread_mutex_unlock(&lib_lock);
}

/* Takes and releases the library's lock; returns how many times it was taken this way. */
int lkp_atfork_lib_use(void)
{
	int n;

	pthread_mutex_lock(&lib_lock);
	n = ++lib_uses;
	pthread_mutex_unlock(&lib_lock);
	return n;
}
