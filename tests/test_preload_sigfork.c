/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_sigfork.c - fork() from a signal handler that interrupted a thread inside
 * pthread_mutex_lock, through liblocklab-preload.so under every shim lock and natively: the parent's
 * fork must return (the shim's own atfork handlers must not wait for something the interrupted thread
 * holds), and the child must be able to _exit.
 *
 * POSIX lists fork() among the async-signal-safe functions; glibc marks it AS-Unsafe because of
 * what atfork handlers may do. This test is about the handlers the shim adds. The window is absl's:
 * main holds M, W1 queues on it, then W2 queues behind W1. W2 joins a non-empty absl::Mutex queue,
 * so inside W2's pthread_mutex_lock absl measures the CPU frequency for ~3 ms under a call-once
 * (preload/absl_mode.cc). SIGUSR1 to W2 after DELAY, and its handler forks. The shim's prepare
 * handler reads that frequency for the child's sake, and on W2 itself that read waited for W2's own
 * call-once forever: the parent hung (hostile review 16, repro16/sigfork.c). Now the prepare handler
 * skips the read on a thread that is inside the shim's lock call. Each delay runs in a process of its
 * own, because only a process's first measurement opens the window: a fresh program (this one, with
 * --scenario DELAY), started by posix_spawn, which runs no atfork handler. A fork() would not do: the
 * shim's prepare handler would measure in the parent first and the window would be closed for good. A
 * hang ends in the scenario's watchdog (exit 1). For the other locks the same rhythm shows that
 * their handlers do not block in this case either.
 *
 * Skipped under ASan and TSan: their runtimes do not support fork() from a signal handler that
 * interrupted a thread holding their own locks. Skipped under an emulator (LOCKLAB_TEST_EMULATOR,
 * the arm64 cross builds): under qemu-user the qspinlock run hung in 4 of 6 ctest runs (its scenario's
 * watchdog, delay 600 us), while natively the spinlocks passed 30 of 30. qemu-user's fork() from a
 * signal handler of a multi-threaded guest was not investigated further.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "preload_test.h"

static pthread_mutex_t M = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int w_started;		/* waiters that have started (W1, then W2) */
static _Atomic int fork_rc = -2;	/* the handler's fork: 1 returned in the parent, -1 failed, -2 not yet */
static _Atomic int fork_status = -1;	/* the child's wait status */

static void on_usr1(int sig)
{
	int saved = errno, st = 0;
	pid_t p;

	(void)sig;
	p = fork();
	if (p == 0)
		_exit(0);
	if (p > 0) {
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		atomic_store(&fork_status, st);
	}
	atomic_store(&fork_rc, p > 0 ? 1 : -1);
	errno = saved;
}

static void *waiter(void *arg)
{
	(void)arg;
	atomic_fetch_add(&w_started, 1);
	CHECK_EQ(pthread_mutex_lock(&M), 0);
	CHECK_EQ(pthread_mutex_unlock(&M), 0);
	return NULL;
}

static void sleep_us(long us)
{
	struct timespec d = { us / 1000000, (us % 1000000) * 1000 };

	while (nanosleep(&d, &d) < 0 && errno == EINTR)
		;
}

/* One delay, in this process: exit 0 when the handler's fork returned and its child exited 0. */
static int scenario(long delay_us)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	pthread_t w1, w2;

	lkt_watchdog(30);
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(pthread_mutex_lock(&M), 0);
	CHECK_EQ(pthread_create(&w1, NULL, waiter, NULL), 0);
	sleep_us(5000);			/* W1 queued (or spinning): W2 joins a non-empty queue */
	CHECK_EQ(pthread_create(&w2, NULL, waiter, NULL), 0);
	while (atomic_load(&w_started) < 2)	/* W2 too (W1 started 5 ms ago) */
		sched_yield();
	sleep_us(delay_us);		/* W2 inside pthread_mutex_lock */
	CHECK_EQ(pthread_kill(w2, SIGUSR1), 0);
	while (atomic_load(&fork_rc) == -2)
		sleep_us(1000);		/* a parent stuck in the handler's fork never gets past here */
	CHECK_EQ(atomic_load(&fork_rc), 1);
	CHECK(WIFEXITED(atomic_load(&fork_status)) && WEXITSTATUS(atomic_load(&fork_status)) == 0);
	CHECK_EQ(pthread_mutex_unlock(&M), 0);
	pthread_join(w1, NULL);
	pthread_join(w2, NULL);
	_exit(lkt_failures ? 1 : 0);
}

/* This program again with --scenario DELAY, under the same shim, lock and harness variables. */
static int run_scenario(long delay_us)
{
	static const char *const keep[] = { "LD_PRELOAD", "LOCKLAB_LOCK", "LKP_NATIVE", "LKP_SPINS" };
	char self[4096], d[32], vars[4][8400];
	const char *extra[5];
	char *argv[] = { self, "--scenario", d, NULL };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int e = 0;

	self[n > 0 ? n : 0] = 0;
	snprintf(d, sizeof(d), "%ld", delay_us);
	for (unsigned i = 0; i < 4; i++) {
		const char *v = getenv(keep[i]);
		if (v) {
			snprintf(vars[e], sizeof(vars[e]), "%s=%s", keep[i], v);
			extra[e] = vars[e];
			e++;
		}
	}
	extra[e] = NULL;
	return lkp_spawn(argv, extra, NULL, 0, NULL, 0);
}

int main(int argc, char **argv)
{
	static const long delays_us[] = { 300, 600, 1000, 2000 };
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);

#if defined(LOCKLAB_SANITIZE_address) || defined(LOCKLAB_SANITIZE_thread)
	printf("test_preload_sigfork: skipped under this sanitizer (fork from a signal handler)\n");
	return 77;
#endif
	const char *emu = getenv("LOCKLAB_TEST_EMULATOR");
	if (emu && *emu) {
		printf("test_preload_sigfork: skipped under an emulator (see the header comment)\n");
		return 77;
	}
	if (argc == 3 && strcmp(argv[1], "--scenario") == 0)
		scenario(atol(argv[2]));
	fprintf(stderr, "test_preload_sigfork: lock %s\n", lock);
	for (unsigned i = 0; i < sizeof(delays_us) / sizeof(delays_us[0]); i++) {
		int st = run_scenario(delays_us[i]);

		if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "test_preload_sigfork [%s]: delay %ld us: %s %d\n", lock, delays_us[i],
				st < 0 ? "could not start" : WIFEXITED(st) ? "exited with" : "killed by signal",
				st < 0 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			lkt_failures++;
		}
	}
	return lkt_done("test_preload_sigfork");
}
