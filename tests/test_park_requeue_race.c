/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_requeue_race.c - issue 12 defect 2: lk_unpark_requeue against the lockless
 * "nobody waits here" check of the target address.
 *
 * X parks on `from`. A requeuer moves it to `to`; its validate() reads `to`'s state ("not ready":
 * X must go on waiting, now on `to`) and then holds its window open while a waker makes `to` ready
 * and calls lk_unpark_all(to) (or a callback-less lk_unpark_one(to)). Those two read the bucket's
 * waiter count without the lock and return at once when it is 0. If the requeued waiter were counted
 * on `to` only after validate(), the waker would see 0 and leave: X sleeps on `to` forever, though
 * `to` became ready after X was queued there. Counting it before validate() (as the kernel's
 * futex_requeue does, futex_hb_waiters_inc(hb2) before double_lock_hb) makes the waker either take
 * the bucket lock - and find X once the requeue is done - or be seen by validate().
 *
 * Deterministic: validate() waits until the waker has returned, or, when the waker blocks on the
 * bucket lock (the fixed behaviour), gives it 200 ms and carries on. Afterwards the test asks
 * `to` directly: a thread still parked there is a lost wakeup. `from` and `to` are chosen in
 * different buckets (a shared bucket would make the waker lock, hiding the window).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <locklab/park.h>

#include "lktest.h"

#define NCAND 64

static _Atomic uint32_t from_w;
static _Atomic uint32_t cand[NCAND];
static _Atomic uint32_t *to_w;
static _Atomic int to_ready;		/* the state of `to` */
static _Atomic int parked;		/* X is queued on `from` (before_sleep) */
static _Atomic int go, waker_done;
static int waker_kind;			/* 0: unpark_all, 1: unpark_one without callback */
static lk_token_t x_token;
static int x_ret;

static void x_parked(void *ctx)
{
	(void)ctx;
	atomic_store_explicit(&parked, 1, memory_order_release);	/* release: handshake */
}

static const struct lk_park_ops x_ops = { .before_sleep = x_parked };

static void *x_main(void *arg)
{
	(void)arg;
	x_ret = lk_park(&from_w, &x_ops, NULL, 0, NULL, CLOCK_MONOTONIC, &x_token);
	return NULL;
}

static void *waker_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&go, memory_order_acquire))	/* acquire: handshake */
		sched_yield();
	/* seq_cst: the state change, then the parking lot's own fence and its waiter-count read */
	atomic_store_explicit(&to_ready, 1, memory_order_seq_cst);
	if (waker_kind == 0)
		lk_unpark_all(to_w, 7);
	else
		lk_unpark_one(to_w, NULL, NULL);
	atomic_store_explicit(&waker_done, 1, memory_order_release);	/* release: handshake */
	return NULL;
}

/* Under both bucket locks. */
static enum lk_requeue_op rq_validate(void *ctx)
{
	(void)ctx;
	/* seq_cst: pairs with the waker's store; the lot fences between its count and this read */
	if (atomic_load_explicit(&to_ready, memory_order_seq_cst))
		return LK_REQUEUE_UNPARK_ONE;	/* `to` is ready already: wake X instead */
	/* `to` not ready: X must wait on it. Hold the window open while the waker runs. */
	atomic_store_explicit(&go, 1, memory_order_release);	/* release: handshake */
	uint64_t t0 = lkt_now_ns(CLOCK_MONOTONIC);
	while (!atomic_load_explicit(&waker_done, memory_order_acquire) &&
	       lkt_now_ns(CLOCK_MONOTONIC) - t0 < 200000000ull)
		sched_yield();
	return LK_REQUEUE_REQUEUE_ALL;
}

static size_t bucket_of(const void *addr, size_t nbuckets)
{
	unsigned lg = 0;

	while (((size_t)1 << lg) < nbuckets)
		lg++;
	/* the parking lot's Fibonacci hash (src/park_impl.h, hash_addr) */
	return (size_t)(((uint64_t)(uintptr_t)addr * 0x9E3779B97F4A7C15ull) >> (64 - lg));
}

static void round_(int kind)
{
	pthread_t x, wk;
	struct lk_park_stats st;

	atomic_store(&to_ready, 0);
	atomic_store(&parked, 0);
	atomic_store(&go, 0);
	atomic_store(&waker_done, 0);
	waker_kind = kind;
	x_token = 0;

	CHECK_EQ(pthread_create(&x, NULL, x_main, NULL), 0);
	CHECK_EQ(pthread_create(&wk, NULL, waker_main, NULL), 0);
	while (!atomic_load_explicit(&parked, memory_order_acquire))
		sched_yield();
	/* `to` in another bucket of the table in use now (the table only changes when it grows) */
	lk_park_get_stats(&st);
	to_w = NULL;
	for (unsigned i = 0; i < NCAND && !to_w; i++)
		if (bucket_of(&cand[i], st.buckets) != bucket_of(&from_w, st.buckets))
			to_w = &cand[i];
	CHECK(to_w != NULL);

	int n = lk_unpark_requeue(&from_w, to_w, rq_validate, NULL, NULL);
	CHECK_EQ(n, 1);
	pthread_join(wk, NULL);
	/* X was requeued onto `to` before `to` became ready and was woken: nobody may be left there */
	int left = lk_unpark_all(to_w, 99);
	if (left)
		fprintf(stderr, "lost wakeup (%s): the requeued thread still slept on `to` after the waker "
			"made it ready and woke it\n", kind ? "unpark_one" : "unpark_all");
	CHECK_EQ(left, 0);
	pthread_join(x, NULL);
	CHECK_EQ(x_ret, LK_PARK_UNPARKED);
	if (kind == 0)
		CHECK_EQ(x_token, left ? 99 : 7);
}

int main(void)
{
	lkt_watchdog(60);
	CHECK_EQ(lk_park_reserve(1024), 0);	/* a fixed table for the whole test (3 threads at most) */
	for (int r = 0; r < 3; r++) {
		round_(0);
		round_(1);
	}
	return lkt_done("test_park_requeue_race");
}
