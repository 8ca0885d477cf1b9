/* SPDX-License-Identifier: MIT */
/*
 * yieldcs.c - the loop of stress-ng's mutex stressor (stress-mutex.c), rebuilt on plain pthreads so
 * that it runs on any lock through the LD_PRELOAD shim, without root and without stress-ng.
 *
 *	yieldcs THREADS MODE SECONDS [LOCKS]
 *
 * THREADS threads share LOCKS pthread mutexes (default 1; thread i takes mutex i mod LOCKS, each on
 * its own cache line); each loops until SECONDS have passed:
 *
 *	[sched]  lock  [sched]  count++  sched_yield()  unlock
 *
 * MODE says what [sched] is:
 *	0  nothing;
 *	1  pthread_setschedparam(SCHED_FIFO) with a priority that is always refused (0: EINVAL): the
 *	   two system calls of stress-ng's loop as an unprivileged user runs them (EPERM there), with
 *	   no change of policy;
 *	2  stress-ng's calls as root makes them: SCHED_FIFO at a random priority before the lock, at
 *	   the lowest one after it (needs CAP_SYS_NICE; fails with a message otherwise).
 *
 * Prints one line: acquisitions per second (all threads), the fewest and the most of one thread.
 * The threads count until they see the stop flag, a little after SECONDS, and the rate divides by
 * SECONDS: it reads high by that little, for every lock alike.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_LOCKS 16

static struct {
	pthread_mutex_t m;
} __attribute__((aligned(64))) mus[MAX_LOCKS];
static int nlocks = 1;
static atomic_int stop;
static int mode;
static long counts[MAX_THREADS];

static void set_fifo(int prio)
{
	struct sched_param p = { .sched_priority = prio };

	(void)pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);	/* refused in mode 1 */
}

static void *run(void *arg)
{
	long id = (long)arg, n = 0;
	pthread_mutex_t *mu = &mus[id % nlocks].m;
	unsigned seed = (unsigned)id * 7919u + 1u;
	int hi = sched_get_priority_max(SCHED_FIFO) * 7 / 8, lo = sched_get_priority_min(SCHED_FIFO);

	/* relaxed: a stop flag; the join below orders the counts */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (mode)
			set_fifo(mode == 1 ? 0 : 1 + (int)(rand_r(&seed) % (unsigned)hi));
		pthread_mutex_lock(mu);
		if (mode)
			set_fifo(mode == 1 ? 0 : lo);
		n++;
		sched_yield();
		pthread_mutex_unlock(mu);
	}
	counts[id] = n;
	return NULL;
}

static long arg(const char *s, const char *what, long lo, long hi)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "yieldcs: %s: expected an integer in %ld..%ld, got '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: yieldcs THREADS MODE(0|1|2) SECONDS [LOCKS]\n");
		return 2;
	}
	int t = (int)arg(argv[1], "THREADS", 1, MAX_THREADS);
	mode = (int)arg(argv[2], "MODE", 0, 2);
	long secs = arg(argv[3], "SECONDS", 1, 3600);
	if (argc == 5)
		nlocks = (int)arg(argv[4], "LOCKS", 1, MAX_LOCKS);
	for (int i = 0; i < nlocks; i++)
		pthread_mutex_init(&mus[i].m, NULL);

	if (mode == 2) {
		struct sched_param p = { .sched_priority = sched_get_priority_min(SCHED_FIFO) };
		int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);

		if (e) {
			fprintf(stderr, "yieldcs: MODE 2 needs SCHED_FIFO: %s\n", strerror(e));
			return 2;
		}
		p.sched_priority = 0;
		pthread_setschedparam(pthread_self(), SCHED_OTHER, &p);
	}
	for (long i = 0; i < t; i++) {
		int e = pthread_create(&th[i], NULL, run, (void *)i);

		if (e) {
			fprintf(stderr, "yieldcs: pthread_create: %s\n", strerror(e));
			return 1;
		}
	}
	sleep((unsigned)secs);
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	long total = 0, fewest = -1, most = 0;
	for (int i = 0; i < t; i++) {
		pthread_join(th[i], NULL);
		total += counts[i];
		if (fewest < 0 || counts[i] < fewest)
			fewest = counts[i];
		if (counts[i] > most)
			most = counts[i];
	}
	printf("%.0f %ld %ld\n", (double)total / (double)secs, fewest, most);
	return 0;
}
