/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_grow_unlocked.c - issue 12: the parking lot's grow() must allocate and clear
 * the new table before it locks the old buckets, so that nobody waits on a bucket lock for a
 * malloc + memset of the whole new table.
 *
 * At the park.grow pause point (the grower is about to allocate) the hook parks and unparks on a
 * few addresses from the grower's own thread. If the grower held the old bucket locks there, the
 * first of these would block on a lock its own thread holds: the test hangs and the watchdog fails
 * it. Done for a growth through lk_park_reserve() and for one triggered by new threads registering.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "hooklab.h"
#include "locklab/park.h"

static _Atomic uint32_t words[8];
static __thread int in_hook;
static _Atomic int probes;

static bool never(void *ctx)
{
	(void)ctx;
	return false;
}

static const struct lk_park_ops never_ops = { .validate = never };

static void at_grow(const char *point, void *arg)
{
	(void)arg;
	if (!hk_is(point, "park.grow") || in_hook)
		return;
	in_hook = 1;
	for (unsigned i = 0; i < 8; i++) {
		/* each takes the bucket lock of words[i] in the current (old) table */
		CHECK_EQ(lk_park(&words[i], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), LK_PARK_INVALID);
		CHECK_EQ(lk_unpark_one(&words[i], NULL, NULL), 0);
	}
	atomic_fetch_add_explicit(&probes, 1, memory_order_relaxed);	/* relaxed: a count */
	in_hook = 0;
}

static pthread_barrier_t alive;

static void *newcomer(void *arg)
{
	(void)arg;
	/* registering (first use of the lot) grows the table once the live threads need more buckets */
	CHECK_EQ(lk_park(&words[0], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), LK_PARK_INVALID);
	pthread_barrier_wait(&alive);	/* stay alive (and counted) until all have registered */
	return NULL;
}

#define NEW 24

int main(void)
{
	struct lk_park_stats st;
	pthread_t t[NEW];

	lkt_watchdog(60);
	hk_install(at_grow);
	CHECK_EQ(lk_park(&words[0], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), LK_PARK_INVALID);

	/* growth by reservation, in this thread */
	lk_park_get_stats(&st);
	CHECK_EQ(lk_park_reserve(st.buckets * 2), 0);
	CHECK_EQ(atomic_load_explicit(&probes, memory_order_relaxed), 1);

	/* growth by registration, in the newcomers' threads: 25 live threads x 3 > 32 buckets */
	lk_park_get_stats(&st);
	CHECK(st.buckets < LK_PARK_BUCKETS_PER_THREAD * (NEW + 1));
	CHECK_EQ(pthread_barrier_init(&alive, NULL, NEW + 1), 0);
	for (unsigned i = 0; i < NEW; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, newcomer, NULL), 0);
	pthread_barrier_wait(&alive);
	for (unsigned i = 0; i < NEW; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&alive);
	lk_park_get_stats(&st);
	CHECK(st.buckets >= LK_PARK_BUCKETS_PER_THREAD * (NEW + 1));
	CHECK(atomic_load_explicit(&probes, memory_order_relaxed) >= 2);
	printf("buckets %zu, resizes %llu, growths probed %d\n", st.buckets, (unsigned long long)st.resizes,
	       atomic_load_explicit(&probes, memory_order_relaxed));
	return lkt_done("test_hook_grow_unlocked");
}
