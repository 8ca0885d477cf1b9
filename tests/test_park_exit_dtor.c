/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_exit_dtor.c - issue 12: a thread that uses the parking lot from a TLS destructor
 * after the lot's own destructor ran (it unregistered the thread) must not leave the live-thread
 * count one too high.
 *
 * The lot counts a thread live from its first lk_park() to its pthread key destructor. A later TLS
 * destructor of the same thread that parks (here: a 1 ms timed park, and a park whose validate
 * fails) must be able to use the lot, but must not register the thread again: in the last
 * destructor round (PTHREAD_DESTRUCTOR_ITERATIONS) nothing would unregister it. Our key's destructor
 * re-arms itself each round and parks in a chosen round; after join the live count must be back
 * where it was.
 */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <locklab/park.h>

#include "lktest.h"

#ifndef PTHREAD_DESTRUCTOR_ITERATIONS
#define PTHREAD_DESTRUCTOR_ITERATIONS 4
#endif

static pthread_key_t key;
static _Atomic uint32_t word;
static unsigned park_round;		/* the destructor round in which to park */
/* atomics: ThreadSanitizer does not order a TLS destructor's writes before pthread_join() */
static _Atomic int dtor_park_ret, dtor_invalid_ret;

static bool never(void *ctx)
{
	(void)ctx;
	return false;
}

static const struct lk_park_ops never_ops = { .validate = never };

static void dtor(void *v)
{
	uintptr_t round = (uintptr_t)v;

	if (round < park_round) {
		pthread_setspecific(key, (void *)(round + 1));
		return;
	}
	struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, 1000000);

	dtor_park_ret = lk_park(&word, NULL, NULL, 0, &dl, CLOCK_MONOTONIC, NULL);
	dtor_invalid_ret = lk_park(&word, &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL);
}

static void *body(void *arg)
{
	(void)arg;
	/* registers this thread with the lot */
	CHECK_EQ(lk_park(&word, &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), LK_PARK_INVALID);
	pthread_setspecific(key, (void *)1);
	return NULL;
}

static size_t live(void)
{
	struct lk_park_stats st;

	lk_park_get_stats(&st);
	return st.live_threads;
}

int main(void)
{
	lkt_watchdog(60);
	/* the lot's key first, ours after: glibc runs destructors in key order within a round, so in
	 * the last round ours runs after the lot's slot was visited and nothing would unregister us */
	CHECK_EQ(lk_park(&word, &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), LK_PARK_INVALID);
	CHECK_EQ(pthread_key_create(&key, dtor), 0);
	size_t base = live();

	CHECK_EQ(base, 1);
	/*
	 * ThreadSanitizer finishes a thread from its own key destructor in the last round, so a TLS
	 * destructor of ours that runs there crashes it: under TSan the last round is left out (the
	 * normal, ASan and UBSan runs cover it).
	 */
	unsigned rounds = PTHREAD_DESTRUCTOR_ITERATIONS;
#if defined(LOCKLAB_SANITIZE_thread)
	rounds--;
#endif
	for (park_round = 1; park_round <= rounds; park_round++) {
		pthread_t t;

		dtor_park_ret = dtor_invalid_ret = -1;
		CHECK_EQ(pthread_create(&t, NULL, body, NULL), 0);
		pthread_join(t, NULL);
		CHECK_EQ(dtor_park_ret, LK_PARK_TIMEDOUT);
		CHECK_EQ(dtor_invalid_ret, LK_PARK_INVALID);
		if (live() != base)
			fprintf(stderr, "parked from a TLS destructor in round %u of %d: live count %zu, "
				"expected %zu\n", park_round, PTHREAD_DESTRUCTOR_ITERATIONS, live(), base);
		CHECK_EQ(live(), base);
		base = live();	/* report each round once */
	}
	return lkt_done("test_park_exit_dtor");
}
