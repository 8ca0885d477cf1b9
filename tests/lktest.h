/* SPDX-License-Identifier: MIT */
/*
 * tests/lktest.h - the few helpers every self-contained test program uses. A test exits 0 on success,
 * 1 on failure (after printing file:line and the failed expression), 77 when skipped. A watchdog
 * turns a hang into a failure with a message instead of a CI timeout.
 */
#ifndef LOCKLAB_LKTEST_H
#define LOCKLAB_LKTEST_H

#include <sched.h>
#include <signal.h>
#ifndef __cplusplus
#include <stdatomic.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int lkt_failures;

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		if (!(expr)) {                                                                     \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #expr);  \
			lkt_failures++;                                                            \
		}                                                                                  \
	} while (0)

#define CHECK_EQ(a, b)                                                                             \
	do {                                                                                       \
		long long _a = (long long)(a), _b = (long long)(b);                               \
		if (_a != _b) {                                                                    \
			fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %lld, %s == %lld\n", __FILE__, \
				__LINE__, #a, _a, #b, _b);                                         \
			lkt_failures++;                                                            \
		}                                                                                  \
	} while (0)

static void lkt_watchdog_fire(int sig)
{
	static const char msg[] = "watchdog: test did not finish in time (hang or lost wakeup)\n";
	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0) { /* nothing else to do */ }
	_exit(1);
}

/* LOCKLAB_TEST_TIMEOUT_SCALE (scripts/check-arm64 sets 3 under emulation), else 1. */
static inline unsigned lkt_timeout_scale(void)
{
	const char *s = getenv("LOCKLAB_TEST_TIMEOUT_SCALE");

	return s && atoi(s) > 0 ? (unsigned)atoi(s) : 1;
}

/* Fail the test if it has not finished after `seconds` (scaled by LOCKLAB_TEST_TIMEOUT_SCALE). */
static inline void lkt_watchdog(unsigned seconds)
{
	seconds *= lkt_timeout_scale();
	signal(SIGALRM, lkt_watchdog_fire);
	alarm(seconds);
}

/*
 * A common start for the n threads of a stress round: each calls lkt_gate_pass(&gate, n) before its
 * work and returns once all n have arrived. Without it, where creating a thread is slow (about 1 ms
 * under qemu-user), each thread can finish its bounded work before the next starts, and the stress
 * is gone. The gate starts at 0 and serves one round. Relaxed: an arrival count; the data the
 * threads share is ordered by the locks under test and by pthread_create()/pthread_join(). C only.
 */
#ifndef __cplusplus
static inline void lkt_gate_pass(_Atomic int *gate, int n)
{
	atomic_fetch_add_explicit(gate, 1, memory_order_relaxed);
	while (atomic_load_explicit(gate, memory_order_relaxed) < n)
		sched_yield();
}
#endif

/* Now on `clock`, in nanoseconds. */
static inline uint64_t lkt_now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The absolute deadline `ns` nanoseconds from now on `clock` (ns may be negative: a past deadline). */
static inline struct timespec lkt_deadline_in(clockid_t clock, int64_t ns)
{
	uint64_t t = lkt_now_ns(clock) + (uint64_t)ns;

	return (struct timespec){ .tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull) };
}

/*
 * The scheduler state of thread `tid` of this process, from /proc: 'S' asleep (e.g. parked in a
 * futex), 'R' running or runnable, '?' when unknown. Tests use it to know a thread is parked, never
 * by sleeping and hoping.
 */
static inline char lkt_thread_state(int tid)
{
	char path[64], buf[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');	/* "tid (comm) S ...": the state follows the last ')' */
	return p && p[1] == ' ' ? p[2] : '?';
}

#ifdef CPU_SETSIZE	/* <sched.h> with _GNU_SOURCE */
/*
 * Runs the calling thread on the n-th CPU (from 0) of *cpus, or on all of *cpus again when n < 0:
 * for threads that must start on CPUs of their own. Nothing (0) when *cpus holds fewer than two
 * CPUs or no n-th. Returns sched_setaffinity's result.
 */
static inline int lkt_place(const cpu_set_t *cpus, int n)
{
	cpu_set_t set = *cpus;

	if (CPU_COUNT(cpus) < 2)
		return 0;
	if (n >= 0) {
		int k = 0;

		CPU_ZERO(&set);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, cpus) && k++ == n) {
				CPU_SET(c, &set);
				break;
			}
		if (!CPU_COUNT(&set))
			return 0;
	}
	return sched_setaffinity(0, sizeof(set), &set);
}
#endif

/* 1 under ThreadSanitizer/ASan/UBSan builds (tests shrink iteration counts there), else 0. */
static inline int lkt_sanitized(void)
{
#if defined(LOCKLAB_SANITIZE_thread) || defined(LOCKLAB_SANITIZE_address) || defined(LOCKLAB_SANITIZE_undefined)
	return 1;
#else
	return 0;
#endif
}

static inline int lkt_done(const char *name)
{
	if (lkt_failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", name, lkt_failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}

/*
 * Tests that fork while other threads run define LKT_FORKS_WITH_THREADS before including this
 * header. ThreadSanitizer refuses new threads after a multi-threaded fork unless told otherwise, and
 * even then its thread registry still holds the parent's threads ("dup thread with used id"): under
 * TSan such a child stays single-threaded (CHILD_THREADS 0) and still touches everything the
 * parent's threads were using.
 */
#ifdef LKT_FORKS_WITH_THREADS
#if defined(LOCKLAB_SANITIZE_thread)
const char *__tsan_default_options(void)
{
	return "die_after_fork=0";
}
#define CHILD_THREADS 0
#else
#define CHILD_THREADS 1
#endif
#endif

#endif /* LOCKLAB_LKTEST_H */
