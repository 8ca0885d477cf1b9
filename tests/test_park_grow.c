/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_grow.c - the table grows while other threads hammer it (the seed-000 pathology:
 * a resize that waits for the buckets to go idle never completes under load).
 *
 * Hammer threads run futex-hash style waits that never sleep (validate false) over many addresses,
 * and two producer/consumer pairs park and unpark continuously. Meanwhile new threads arrive one by
 * one and park for real on their own address; each arrival may grow the table, and must get through
 * (it signals from before_sleep; a stalled growth trips the watchdog). Then every parked thread -
 * moved between tables while asleep - is unparked by its address with its own token: nothing lost.
 * Thread exit must give the live count back (TLS destructor).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include <locklab/park.h>

#include "lktest.h"

#define MAXIDLE 64
#define NHAMMER 3
#define NPAIRS 2

static _Atomic bool stop;
static _Atomic uint32_t words[256];
static _Atomic uint32_t idle_words[MAXIDLE];
static _Atomic int nparked;
static _Atomic uint64_t hammer_ops;

struct pair {
	_Atomic uint32_t count;
	_Atomic uint64_t posted, taken;
} __attribute__((aligned(64)));
static struct pair pairs[NPAIRS];

static bool never(void *ctx)
{
	(void)ctx;
	return false;
}

static const struct lk_park_ops never_ops = { .validate = never };

static void *hammer(void *arg)
{
	uint64_t rng = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;

	/* relaxed: a stop flag polled in a loop */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		CHECK_EQ(lk_park(&words[rng % 256], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL),
			 LK_PARK_INVALID);
		atomic_fetch_add_explicit(&hammer_ops, 1, memory_order_relaxed);	/* relaxed: a count */
	}
	return NULL;
}

static bool pair_empty(void *ctx)
{
	/* relaxed: under the bucket lock, ordered against the waker by the lot's fences; `stop`
	 * is checked too so that the final lk_unpark_all() in main cannot be missed */
	return atomic_load_explicit(&((struct pair *)ctx)->count, memory_order_relaxed) == 0 &&
	       !atomic_load_explicit(&stop, memory_order_relaxed);
}

static const struct lk_park_ops pair_ops = { .validate = pair_empty };

static void *pair_consumer(void *arg)
{
	struct pair *p = arg;

	for (;;) {
		uint32_t v = atomic_load_explicit(&p->count, memory_order_relaxed);	/* relaxed: hint */

		if (v) {
			/* acquire: pairs with the producer's release increment */
			if (atomic_compare_exchange_weak_explicit(&p->count, &v, v - 1, memory_order_acquire,
								  memory_order_relaxed))
				atomic_fetch_add_explicit(&p->taken, 1, memory_order_relaxed);	/* relaxed: count */
			continue;
		}
		/* acquire: the producer's final post precedes its release of `stop` */
		if (atomic_load_explicit(&stop, memory_order_acquire) &&
		    atomic_load_explicit(&p->count, memory_order_relaxed) == 0)
			return NULL;
		lk_park(&p->count, &pair_ops, p, 0, NULL, CLOCK_MONOTONIC, NULL);
	}
}

static void *pair_producer(void *arg)
{
	struct pair *p = arg;

	/* relaxed: stop flag polling */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		/* release: pairs with the consumer's acquire CAS */
		atomic_fetch_add_explicit(&p->count, 1, memory_order_release);
		atomic_fetch_add_explicit(&p->posted, 1, memory_order_relaxed);	/* relaxed: count */
		lk_unpark_one(&p->count, NULL, NULL);
		while (atomic_load_explicit(&p->count, memory_order_relaxed) != 0 &&	/* relaxed: poll */
		       !atomic_load_explicit(&stop, memory_order_relaxed))
			sched_yield();
	}
	return NULL;
}

struct idle {
	pthread_t th;
	unsigned i;
	int ret;
	lk_token_t tok;
};

static void idle_parked(void *ctx)
{
	(void)ctx;
	atomic_fetch_add_explicit(&nparked, 1, memory_order_release);	/* release: test handshake */
}

static const struct lk_park_ops idle_ops = { .before_sleep = idle_parked };

static void *idle_main(void *arg)
{
	struct idle *d = arg;

	d->ret = lk_park(&idle_words[d->i], &idle_ops, NULL, 0, NULL, CLOCK_MONOTONIC, &d->tok);
	return NULL;
}

static lk_token_t tok_cb(void *ctx, struct lk_unpark_result r)
{
	CHECK_EQ(r.unparked_threads, 1);
	CHECK(!r.have_more_threads);
	return (lk_token_t)(uintptr_t)ctx;
}

int main(void)
{
	pthread_t ht[NHAMMER], pc[NPAIRS], pp[NPAIRS];
	struct idle idle[MAXIDLE];
	struct lk_park_stats s0, s1, s2;
	unsigned nidle = lkt_sanitized() ? 24 : MAXIDLE;

	lkt_watchdog(60);
	/* the main thread registers too, so that the final live count is exactly 1 */
	CHECK_EQ(lk_park(&words[0], &never_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL), LK_PARK_INVALID);
	for (unsigned i = 0; i < NHAMMER; i++)
		pthread_create(&ht[i], NULL, hammer, (void *)(uintptr_t)(i + 1));
	for (unsigned i = 0; i < NPAIRS; i++) {
		pthread_create(&pc[i], NULL, pair_consumer, &pairs[i]);
		pthread_create(&pp[i], NULL, pair_producer, &pairs[i]);
	}
	/* wait until the hammering is really going on */
	while (atomic_load_explicit(&hammer_ops, memory_order_relaxed) < 10000)	/* relaxed: poll */
		sched_yield();
	lk_park_get_stats(&s0);
	for (unsigned i = 0; i < nidle; i++) {
		idle[i] = (struct idle){ .i = i };
		pthread_create(&idle[i].th, NULL, idle_main, &idle[i]);
		while (atomic_load_explicit(&nparked, memory_order_acquire) < (int)i + 1)	/* acquire: handshake */
			sched_yield();
	}
	lk_park_get_stats(&s1);
	CHECK(s1.resizes > s0.resizes);
	CHECK(s1.buckets > s0.buckets);
	CHECK(s1.live_threads >= 1 + NHAMMER + NPAIRS + nidle);	/* producers only unpark: not counted */
	CHECK(s1.buckets >= LK_PARK_BUCKETS_PER_THREAD * s1.live_threads);
	CHECK(s1.retired_bytes < s1.table_bytes);	/* old tables are bounded by the current one */

	/* every idle thread survived the moves: unpark each by its address, with its own token */
	for (unsigned i = 0; i < nidle; i++)
		CHECK_EQ(lk_unpark_one(&idle_words[i], tok_cb, (void *)(uintptr_t)(500 + i)), 1);
	for (unsigned i = 0; i < nidle; i++) {
		pthread_join(idle[i].th, NULL);
		CHECK_EQ(idle[i].ret, LK_PARK_UNPARKED);
		CHECK_EQ(idle[i].tok, 500 + i);
	}

	/* release: pairs with the consumers' acquire of stop (the producers' last posts) */
	atomic_store_explicit(&stop, true, memory_order_release);
	for (unsigned i = 0; i < NPAIRS; i++) {
		pthread_join(pp[i], NULL);
		lk_unpark_all(&pairs[i].count, 0);	/* consumer may be asleep on an empty count */
		pthread_join(pc[i], NULL);
		CHECK_EQ(pairs[i].posted, pairs[i].taken);
	}
	for (unsigned i = 0; i < NHAMMER; i++)
		pthread_join(ht[i], NULL);
	lk_park_get_stats(&s2);
	CHECK_EQ(s2.live_threads, 1);		/* TLS destructors gave the count back */
	CHECK(s2.buckets >= s1.buckets);	/* never shrinks */
	printf("buckets %zu -> %zu, resizes %llu -> %llu, %zu B/bucket, table %zu B, retired %zu B\n",
	       s0.buckets, s1.buckets, (unsigned long long)s0.resizes, (unsigned long long)s1.resizes,
	       s1.bucket_bytes, s1.table_bytes, s1.retired_bytes);
	return lkt_done("test_park_grow");
}
