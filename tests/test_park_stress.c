/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_stress.c - no lost wakeups under stress.
 *
 * K counting semaphores built on the lot (wait: take a token or park while the count is 0; post:
 * count++ then wake somebody). Producers post exactly as many tokens as the consumers' quotas add
 * up to and wake with a random method each time: unpark_one with and without a callback (the
 * locked and the lockless pre-check paths), unpark_all, unpark_requeue onto an overflow address
 * followed by unpark_all there, unpark_filter (then unpark_one, so a post always wakes someone).
 * Some consumers park with short deadlines, so timeouts race with unparks. A lost wakeup leaves a
 * consumer asleep with tokens available: the watchdog fails the test. Accounting checks that every
 * requeued thread was later unparked or timed out from the overflow address, exactly.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <locklab/park.h>

#include "lktest.h"

#define K 3			/* semaphores */
#define CONS_PER_SEM 3

struct sem {
	_Atomic uint32_t count;
	_Atomic uint32_t overflow;	/* the requeue target (only its address is used) */
	_Atomic uint64_t requeued, overflow_woken, overflow_timeouts;
} __attribute__((aligned(64)));

static struct sem sems[K];
static unsigned quota;

struct cons {
	struct sem *s;
	unsigned id;
	bool timed;
};

static bool sem_validate(void *ctx)
{
	struct cons *c = ctx;

	/* relaxed: runs under the bucket lock; the lot's fences order it against the poster */
	return atomic_load_explicit(&c->s->count, memory_order_relaxed) == 0;
}

static void sem_timed_out(void *ctx, const void *addr, bool was_last)
{
	struct cons *c = ctx;

	(void)was_last;
	if (addr == &c->s->overflow)	/* relaxed: a statistic read after join */
		atomic_fetch_add_explicit(&c->s->overflow_timeouts, 1, memory_order_relaxed);
}

static const struct lk_park_ops sem_ops = { .validate = sem_validate, .timed_out = sem_timed_out };

static void *consumer(void *arg)
{
	struct cons *c = arg;
	uint64_t rng = c->id * 2654435761u + 1;

	for (unsigned q = 0; q < quota; q++) {
		for (;;) {
			/* relaxed: only a hint for the CAS below */
			uint32_t v = atomic_load_explicit(&c->s->count, memory_order_relaxed);

			if (v) {
				/* acquire: pairs with the poster's release increment */
				if (atomic_compare_exchange_weak_explicit(&c->s->count, &v, v - 1, memory_order_acquire,
									  memory_order_relaxed))
					break;
				continue;
			}
			if (c->timed) {
				struct timespec ts;

				rng ^= rng << 13;
				rng ^= rng >> 7;
				rng ^= rng << 17;
				clock_gettime((rng & 1) ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
				ts.tv_nsec += (long)(rng % 200000);	/* up to 200 us */
				if (ts.tv_nsec >= 1000000000L) {
					ts.tv_sec++;
					ts.tv_nsec -= 1000000000L;
				}
				lk_park(&c->s->count, &sem_ops, c, c->id, &ts,
					(rng & 1) ? CLOCK_REALTIME : CLOCK_MONOTONIC, NULL);
			} else {
				lk_park(&c->s->count, &sem_ops, c, c->id, NULL, CLOCK_MONOTONIC, NULL);
			}
		}
	}
	return NULL;
}

static enum lk_requeue_op rq_validate(void *ctx)
{
	return (enum lk_requeue_op)(uintptr_t)ctx;
}

static enum lk_filter_op parity_filter(void *ctx, lk_token_t tok)
{
	return (tok & 1) == (uintptr_t)ctx ? LK_FILTER_UNPARK : LK_FILTER_SKIP;
}

static lk_token_t noop_cb(void *ctx, struct lk_unpark_result r)
{
	(void)ctx;
	(void)r;
	return LK_TOKEN_NORMAL;
}

static lk_token_t rq_cb(void *ctx, enum lk_requeue_op op, struct lk_unpark_result r)
{
	(void)ctx;
	(void)op;
	(void)r;
	return LK_TOKEN_NORMAL;
}

static void *producer(void *arg)
{
	struct sem *s = arg;
	uint64_t rng = (uintptr_t)arg | 1;
	unsigned total = quota * CONS_PER_SEM;

	for (unsigned i = 0; i < total; i++) {
		int n;

		/* release: pairs with the consumer's acquire CAS */
		atomic_fetch_add_explicit(&s->count, 1, memory_order_release);
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		switch (rng % 6) {
		case 0:
			lk_unpark_one(&s->count, NULL, NULL);
			break;
		case 1:
			lk_unpark_one(&s->count, noop_cb, NULL);
			break;
		case 2:
			lk_unpark_all(&s->count, LK_TOKEN_NORMAL);
			break;
		case 3:
		case 4: {
			enum lk_requeue_op op = (rng & 8) ? LK_REQUEUE_UNPARK_ONE_REQUEUE_REST : LK_REQUEUE_REQUEUE_ALL;

			n = lk_unpark_requeue(&s->count, &s->overflow, rq_validate, rq_cb, (void *)(uintptr_t)op);
			CHECK(n >= 0);
			if (op == LK_REQUEUE_UNPARK_ONE_REQUEUE_REST && n > 0)
				n--;	/* one of them was unparked, not requeued */
			/* relaxed: statistics read after join */
			atomic_fetch_add_explicit(&s->requeued, (uint64_t)n, memory_order_relaxed);
			n = lk_unpark_all(&s->overflow, LK_TOKEN_NORMAL);
			atomic_fetch_add_explicit(&s->overflow_woken, (uint64_t)n, memory_order_relaxed);
			break;
		}
		default:
			lk_unpark_filter(&s->count, parity_filter, NULL, (void *)(uintptr_t)((rng >> 5) & 1));
			lk_unpark_one(&s->count, NULL, NULL);
			break;
		}
		/* mostly let the consumers drain the count first, so that they really park */
		if (rng & 0x30)
			/* relaxed: progress polling only */
			while (atomic_load_explicit(&s->count, memory_order_relaxed) != 0)
				sched_yield();
	}
	return NULL;
}

int main(void)
{
	pthread_t pt[K], ct[K * CONS_PER_SEM];
	struct cons cs[K * CONS_PER_SEM];

	lkt_watchdog(120);
	quota = lkt_sanitized() ? 1000 : 5000;
	for (unsigned i = 0; i < K * CONS_PER_SEM; i++) {
		/* one timed consumer per semaphore (i % 3 == 2 put all three on sems[2]: audit) */
		cs[i] = (struct cons){ .s = &sems[i % K], .id = i, .timed = (i / K == CONS_PER_SEM - 1) };
		pthread_create(&ct[i], NULL, consumer, &cs[i]);
	}
	for (unsigned i = 0; i < K; i++)
		pthread_create(&pt[i], NULL, producer, &sems[i]);
	for (unsigned i = 0; i < K; i++)
		pthread_join(pt[i], NULL);
	for (unsigned i = 0; i < K * CONS_PER_SEM; i++)
		pthread_join(ct[i], NULL);
	for (unsigned i = 0; i < K; i++) {
		struct sem *s = &sems[i];

		/* relaxed: after join */
		CHECK_EQ(atomic_load_explicit(&s->count, memory_order_relaxed), 0);
		CHECK_EQ(atomic_load_explicit(&s->requeued, memory_order_relaxed),
			 atomic_load_explicit(&s->overflow_woken, memory_order_relaxed) +
				 atomic_load_explicit(&s->overflow_timeouts, memory_order_relaxed));
		/* nobody is left anywhere */
		CHECK_EQ(lk_unpark_all(&s->count, 0), 0);
		CHECK_EQ(lk_unpark_all(&s->overflow, 0), 0);
	}
	printf("requeued %llu %llu %llu\n", (unsigned long long)sems[0].requeued,
	       (unsigned long long)sems[1].requeued, (unsigned long long)sems[2].requeued);
	return lkt_done("test_park_stress");
}
