/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_owed_timeout.c - an OWED waiter whose timedlock deadline comes leaves the queue
 * with its counts: OWED and QUEUED each drop by exactly one, PARKED stays while another thread is
 * queued, and the next unlock still hands the lock to the owed waiter left (src/mutex.c,
 * lock_timed_out() and left_queue(); the model does not cover timeouts).
 *
 * Why a test of its own: the stress tests time owed waiters out by the thousand, but a count left
 * behind does not show there. The next unlock finds OWED with nobody owed queued and clears it (UZ),
 * and the last waiter to leave clears QUEUED and PARKED. So this test reads the word itself, at
 * the moment it must be exact: the main thread holds the lock throughout, so nothing else moves.
 *
 * handoff_ns 1 ms. Main holds the lock; W1 parks (owed 1 ms later), then W2 (owed 2 ms after its
 * park, one thread queued before it); main waits until the word counts both owed and queued. Then
 * the timed one's deadline (300 ms after its call, well after both were owed) passes:
 *   A. W1 timed, W2 not: after W1 returns ETIMEDOUT the word must be L | P | G, OWED 1, QUEUED 1;
 *      main unlocks and W2 must get the lock (a handoff, W2 owed);
 *   B. the same with W2 timed: the waiter leaving is the second in the queue;
 *   C. W1 alone, timed: it was the last queued, so the word must be L alone after it returns.
 * After each, the word must be 0. An attempt in which the timed waiter returned before main saw
 * both counts (a slow machine) proves nothing and is run again, up to 10 times.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <locklab/mutex.h>

#include "lktest.h"

#define HANDOFF_NS	1000000ll
#define DEADLINE_NS	300000000ll
#define ATTEMPTS	10

static lk_mutex_t m = LK_MUTEX_INITIALIZER;

struct waiter {
	bool timed;
	int64_t deadline_ns;	/* timed: relative to the call */
	pthread_t t;
	_Atomic int done;
	int r;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	if (w->timed) {
		struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, w->deadline_ns);

		w->r = lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &dl);
	} else {
		lk_mutex_lock(&m);
		w->r = 0;
	}
	atomic_store(&w->done, 1);
	if (w->r == 0)
		CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

static uint32_t word(void)
{
	return atomic_load_explicit(&m.word, memory_order_relaxed);	/* relaxed: we only look */
}

static unsigned owed(uint32_t v)
{
	return (v & LK_MUTEX_OWED_MASK) >> LK_MUTEX_OWED_SHIFT;
}

static unsigned queued(uint32_t v)
{
	return (v & LK_MUTEX_QUEUED_MASK) >> LK_MUTEX_QUEUED_SHIFT;
}

/* Wait until the word counts n queued and n owed; false if `timed` returned first, or 10 s passed. */
static bool wait_counts(unsigned n, const struct waiter *timed)
{
	uint64_t end = lkt_now_ns(CLOCK_MONOTONIC) + 10000000000ull * lkt_timeout_scale();

	while (queued(word()) != n || owed(word()) != n) {
		if (atomic_load(&timed->done) || lkt_now_ns(CLOCK_MONOTONIC) > end)
			return false;
		struct timespec ts = { 0, 50000 };

		nanosleep(&ts, NULL);
	}
	return !atomic_load(&timed->done);
}

static void wait_queued(unsigned n)
{
	uint64_t end = lkt_now_ns(CLOCK_MONOTONIC) + 10000000000ull * lkt_timeout_scale();

	while (queued(word()) < n && lkt_now_ns(CLOCK_MONOTONIC) < end) {
		struct timespec ts = { 0, 50000 };

		nanosleep(&ts, NULL);
	}
	CHECK(queued(word()) >= n);
}

/*
 * One attempt with `nw` waiters (1 or 2), waiter `which` timed. Returns false if it proved nothing
 * (the timed waiter returned before both counts were seen).
 */
static bool attempt(const char *what, int nw, int which)
{
	struct waiter w[2] = { 0 };
	int64_t deadline = DEADLINE_NS * (int64_t)lkt_timeout_scale();

	lk_mutex_lock(&m);
	for (int i = 0; i < nw; i++) {
		w[i].timed = i == which;
		w[i].deadline_ns = deadline;
		CHECK_EQ(pthread_create(&w[i].t, NULL, waiter_main, &w[i]), 0);
		wait_queued((unsigned)i + 1);	/* W1 queued before W2 starts: the order is known */
	}
	bool seen = wait_counts((unsigned)nw, &w[which]);

	/* the timed waiter's deadline passes; nothing else can change the word while we hold the lock */
	CHECK_EQ(pthread_join(w[which].t, NULL), 0);
	CHECK_EQ(w[which].r, ETIMEDOUT);
	uint32_t v = word();

	if (seen) {
		if (nw == 1) {
			if (v != LK_MUTEX_LOCKED)
				fprintf(stderr, "%s: word %#x after the owed waiter timed out, expected LOCKED\n",
					what, v);
			CHECK_EQ(v, LK_MUTEX_LOCKED);
		} else {
			if (owed(v) != 1 || queued(v) != 1 || !(v & LK_MUTEX_PARKED))
				fprintf(stderr, "%s: word %#x after an owed waiter timed out: OWED %u, QUEUED %u "
					"(expected 1 and 1, PARKED set)\n", what, v, owed(v), queued(v));
			CHECK_EQ(owed(v), 1u);
			CHECK_EQ(queued(v), 1u);
			CHECK(v & LK_MUTEX_PARKED);
			CHECK(v & LK_MUTEX_LOCKED);
			CHECK(!(v & (LK_MUTEX_SPINNING | LK_MUTEX_WOKEN | LK_MUTEX_ASKED)));
		}
	}
	CHECK_EQ(lk_mutex_unlock(&m), 0);	/* hands the lock to the owed waiter left, if any */
	for (int i = 0; i < nw; i++) {
		if (i == which)
			continue;
		CHECK_EQ(pthread_join(w[i].t, NULL), 0);
		CHECK_EQ(w[i].r, 0);
	}
	CHECK_EQ(word(), 0u);
	return seen;
}

static void run(const char *what, int nw, int which)
{
	int tries = 0, before = lkt_failures;

	while (!attempt(what, nw, which)) {
		if (++tries == ATTEMPTS) {
			fprintf(stderr, "%s: in %d attempts the timed waiter never returned after both counts "
				"were seen\n", what, ATTEMPTS);
			CHECK(false);
			return;
		}
	}
	printf("  %-40s %s after %d retried attempt(s)\n", what, lkt_failures == before ? "ok" : "FAILED",
	       tries);
}

int main(void)
{
	struct lk_mutex_policy def, p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	lkt_watchdog(120);
	CHECK_EQ(lk_mutex_get_policy(&def), 0);
	p = def;
	p.handoff_ns = HANDOFF_NS;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);
	run("A: first of two owed waiters times out", 2, 0);
	run("B: second of two owed waiters times out", 2, 1);
	run("C: the only owed waiter times out", 1, 0);
	CHECK_EQ(lk_mutex_set_policy(&def), 0);
	return lkt_done("test_mutex_owed_timeout");
}
