/* SPDX-License-Identifier: MIT */
/*
 * tests/test_park_basic.c - the parking lot's contract, one behaviour at a time: argument errors,
 * validate/before_sleep/timed_out, deadlines on both clocks, FIFO per address, tokens,
 * have_more_threads and waited_ns, unpark_all, every requeue operation (exact counts, order kept),
 * unpark_filter. "Parked" is observed through before_sleep (it runs after the thread is queued),
 * never by sleeping and hoping.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <locklab/park.h>

#include "lktest.h"

#define MAXW 16

static _Atomic uint32_t word_a, word_b, word_c;
static _Atomic int nparked;		/* before_sleep calls */
static _Atomic int order[MAXW];		/* wake order, by id */
#define ORD(i) atomic_load_explicit(&order[i], memory_order_relaxed)	/* after wait_woken()'s acquire */
static _Atomic int nslot;		/* next free slot of order[] */
static _Atomic int norder;		/* slots filled */

struct waiter {
	pthread_t th;
	unsigned id;
	const void *addr;
	lk_token_t park_token;
	int ret;
	lk_token_t got;
	bool validate_result;
	int timed_out_calls;
	bool was_last;
	const void *timed_out_addr;
};

static bool v_cb(void *ctx)
{
	return ((struct waiter *)ctx)->validate_result;
}

static void bs_cb(void *ctx)
{
	(void)ctx;
	atomic_fetch_add_explicit(&nparked, 1, memory_order_release);	/* release: test handshake */
}

static void to_cb(void *ctx, const void *addr, bool was_last)
{
	struct waiter *w = ctx;

	w->timed_out_calls++;
	w->was_last = was_last;
	w->timed_out_addr = addr;
}

static const struct lk_park_ops ops = { .validate = v_cb, .before_sleep = bs_cb, .timed_out = to_cb };

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = lk_park(w->addr, &ops, w, w->park_token, NULL, CLOCK_MONOTONIC, &w->got);
	/* relaxed: slot allocation only; the release increment of norder publishes the slot */
	atomic_store_explicit(&order[atomic_fetch_add_explicit(&nslot, 1, memory_order_relaxed)], (int)w->id,
			      memory_order_relaxed);
	atomic_fetch_add_explicit(&norder, 1, memory_order_release);	/* pairs with wait_woken() */
	return NULL;
}

static void wait_parked(int n)
{
	while (atomic_load_explicit(&nparked, memory_order_acquire) < n)
		sched_yield();
}

static void wait_woken(int n)
{
	while (atomic_load_explicit(&norder, memory_order_acquire) < n)
		sched_yield();
}

/* Park waiters id 0..n-1 on `addr` in that order (each one queued before the next starts). */
static void start_waiters(struct waiter *w, int n, const void *addr)
{
	atomic_store_explicit(&nparked, 0, memory_order_relaxed);
	atomic_store_explicit(&norder, 0, memory_order_relaxed);
	atomic_store_explicit(&nslot, 0, memory_order_relaxed);
	for (int i = 0; i < n; i++) {
		w[i] = (struct waiter){ .id = (unsigned)i, .addr = addr, .park_token = 100 + (lk_token_t)i,
					.validate_result = true };
		pthread_create(&w[i].th, NULL, waiter_main, &w[i]);
		wait_parked(i + 1);
	}
}

static void join_all(struct waiter *w, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(w[i].th, NULL);
}

static struct lk_unpark_result last_r;
static int cb_calls;

static lk_token_t one_cb(void *ctx, struct lk_unpark_result r)
{
	last_r = r;
	cb_calls++;
	return (lk_token_t)(uintptr_t)ctx;
}

static void test_errors(void)
{
	struct waiter w = { .validate_result = true };
	struct timespec ts = { 0, 0 };
	char buf[8] __attribute__((aligned(8)));
	lk_token_t t;

	CHECK_EQ(lk_park(NULL, &ops, &w, 0, NULL, CLOCK_MONOTONIC, &t), -EINVAL);
	CHECK_EQ(lk_park(buf + 1, &ops, &w, 0, NULL, CLOCK_MONOTONIC, &t), -EINVAL);
	CHECK_EQ(lk_park(buf + 2, &ops, &w, 0, NULL, CLOCK_MONOTONIC, &t), -EINVAL);
	ts.tv_nsec = 1000000000L;
	CHECK_EQ(lk_park(&word_a, &ops, &w, 0, &ts, CLOCK_MONOTONIC, &t), -EINVAL);
	ts.tv_nsec = -1;
	CHECK_EQ(lk_park(&word_a, &ops, &w, 0, &ts, CLOCK_REALTIME, &t), -EINVAL);
	ts.tv_nsec = 0;
	CHECK_EQ(lk_park(&word_a, &ops, &w, 0, &ts, CLOCK_PROCESS_CPUTIME_ID, &t), -EINVAL);
	CHECK_EQ(w.timed_out_calls, 0);
	CHECK_EQ(lk_unpark_one(NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(lk_unpark_one(buf + 3, one_cb, NULL), -EINVAL);
	CHECK_EQ(lk_unpark_all(buf + 1, 0), -EINVAL);
	CHECK_EQ(lk_unpark_all(NULL, 0), -EINVAL);
	CHECK_EQ(lk_unpark_filter(NULL, NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(lk_unpark_filter(&word_a, NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(lk_unpark_requeue(&word_a, buf + 1, NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(lk_unpark_requeue(NULL, &word_a, NULL, NULL, NULL), -EINVAL);
	CHECK_EQ(lk_park_reserve(0), -EINVAL);
	/* nothing parked: zero, and the callback still runs (a lock clears its parked bit there) */
	cb_calls = 0;
	CHECK_EQ(lk_unpark_one(&word_a, one_cb, NULL), 0);
	CHECK_EQ(cb_calls, 1);
	CHECK_EQ(last_r.unparked_threads, 0);
	CHECK(!last_r.have_more_threads);
	CHECK_EQ(lk_unpark_all(&word_a, 0), 0);
	CHECK_EQ(lk_unpark_one(&word_a, NULL, NULL), 0);
}

static void test_validate_and_deadlines(void)
{
	struct waiter w = { .validate_result = false };
	struct timespec ts;
	lk_token_t t = 77;
	clockid_t clocks[2] = { CLOCK_MONOTONIC, CLOCK_REALTIME };

	atomic_store_explicit(&nparked, 0, memory_order_relaxed);
	CHECK_EQ(lk_park(&word_a, &ops, &w, 0, NULL, CLOCK_MONOTONIC, &t), LK_PARK_INVALID);
	CHECK_EQ(t, 77);
	CHECK_EQ(atomic_load_explicit(&nparked, memory_order_relaxed), 0);	/* no before_sleep */

	for (int c = 0; c < 2; c++) {
		/* past deadline: immediate timeout, timed_out runs, was the last (only) thread */
		w = (struct waiter){ .validate_result = true };
		clock_gettime(clocks[c], &ts);
		ts.tv_sec -= 1;
		CHECK_EQ(lk_park(&word_a, &ops, &w, 0, &ts, clocks[c], &t), LK_PARK_TIMEDOUT);
		CHECK_EQ(w.timed_out_calls, 1);
		CHECK(w.was_last);
		CHECK(w.timed_out_addr == &word_a);
		/* a negative absolute deadline is in the past too */
		w = (struct waiter){ .validate_result = true };
		ts.tv_sec = -5;
		ts.tv_nsec = 0;
		CHECK_EQ(lk_park(&word_a, &ops, &w, 0, &ts, clocks[c], &t), LK_PARK_TIMEDOUT);
		CHECK_EQ(w.timed_out_calls, 1);

		/* a real sleep of 30 ms on this clock: returns no earlier than the deadline */
		struct timespec now;
		w = (struct waiter){ .validate_result = true };
		clock_gettime(clocks[c], &ts);
		ts.tv_nsec += 30 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		CHECK_EQ(lk_park(&word_a, &ops, &w, 0, &ts, clocks[c], &t), LK_PARK_TIMEDOUT);
		clock_gettime(clocks[c], &now);
		CHECK(now.tv_sec > ts.tv_sec || (now.tv_sec == ts.tv_sec && now.tv_nsec >= ts.tv_nsec));
		CHECK_EQ(w.timed_out_calls, 1);
		CHECK(w.was_last);
	}
	/* the timed-out threads left no trace: nothing to unpark */
	CHECK_EQ(lk_unpark_all(&word_a, 0), 0);
}

/* A timeout while another thread stays parked on the same address: was_last_thread == false. */
static void test_timeout_not_last(void)
{
	struct waiter w[1], me = { .validate_result = true };
	struct timespec ts;
	lk_token_t t;

	start_waiters(w, 1, &word_b);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += 5 * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	CHECK_EQ(lk_park(&word_b, &ops, &me, 0, &ts, CLOCK_MONOTONIC, &t), LK_PARK_TIMEDOUT);
	CHECK_EQ(me.timed_out_calls, 1);
	CHECK(!me.was_last);
	CHECK_EQ(lk_unpark_all(&word_b, 5), 1);
	join_all(w, 1);
	CHECK_EQ(w[0].ret, LK_PARK_UNPARKED);
	CHECK_EQ(w[0].got, 5);
}

static void test_fifo_unpark_one(void)
{
	enum { N = 6 };
	struct waiter w[N];

	start_waiters(w, N, &word_a);
	for (int i = 0; i < N; i++) {
		cb_calls = 0;
		CHECK_EQ(lk_unpark_one(&word_a, one_cb, (void *)(uintptr_t)(1000 + i)), 1);
		CHECK_EQ(cb_calls, 1);
		CHECK_EQ(last_r.unparked_threads, 1);
		CHECK_EQ(last_r.have_more_threads, i < N - 1);
		CHECK(last_r.waited_ns > 0);
		wait_woken(i + 1);
		CHECK_EQ(ORD(i), i);	/* FIFO per address */
	}
	join_all(w, N);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(w[i].ret, LK_PARK_UNPARKED);
		CHECK_EQ(w[i].got, 1000 + i);
	}
	CHECK_EQ(lk_unpark_one(&word_a, one_cb, NULL), 0);
	CHECK(!last_r.have_more_threads);
}

static void test_unpark_all(void)
{
	enum { N = 8 };
	struct waiter w[N], x[2];

	start_waiters(w, N, &word_a);
	/* two more on another address must stay parked */
	for (int i = 0; i < 2; i++) {
		x[i] = (struct waiter){ .id = 50 + (unsigned)i, .addr = &word_c, .validate_result = true };
		pthread_create(&x[i].th, NULL, waiter_main, &x[i]);
		wait_parked(N + i + 1);
	}
	CHECK_EQ(lk_unpark_all(&word_a, 42), N);
	join_all(w, N);
	for (int i = 0; i < N; i++)
		CHECK_EQ(w[i].got, 42);
	CHECK_EQ(lk_unpark_all(&word_a, 0), 0);
	CHECK_EQ(lk_unpark_one(&word_c, NULL, NULL), 1);	/* callback-less (lockless pre-check) path */
	CHECK_EQ(lk_unpark_all(&word_c, 0), 1);
	join_all(x, 2);
}

static enum lk_requeue_op rq_op;
static struct lk_unpark_result rq_r;
static int rq_calls;

static enum lk_requeue_op rq_validate(void *ctx)
{
	(void)ctx;
	return rq_op;
}

static lk_token_t rq_cb(void *ctx, enum lk_requeue_op op, struct lk_unpark_result r)
{
	(void)ctx;
	CHECK_EQ(op, rq_op);
	rq_r = r;
	rq_calls++;
	return 9;
}

/* Every requeue op on 5 waiters: the counts it reports are exactly what moved, order is kept. */
static void test_requeue(void)
{
	enum { N = 5 };
	static const struct {
		enum lk_requeue_op op;
		unsigned unparked, requeued;
	} cases[] = {
		{ LK_REQUEUE_ABORT, 0, 0 },
		{ LK_REQUEUE_UNPARK_ONE_REQUEUE_REST, 1, N - 1 },
		{ LK_REQUEUE_REQUEUE_ALL, 0, N },
		{ LK_REQUEUE_UNPARK_ONE, 1, 0 },
		{ LK_REQUEUE_REQUEUE_ONE, 0, 1 },
	};
	const void *tos[2] = { &word_b, &word_a };	/* another address; the same address */

	for (unsigned tc = 0; tc < 2; tc++) {
		for (unsigned c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			struct waiter w[N];
			unsigned moved = cases[c].unparked + cases[c].requeued;
			int n;

			if (tos[tc] == &word_a && cases[c].op != LK_REQUEUE_REQUEUE_ALL)
				continue;	/* requeue onto itself: only the "all" case is meaningful */
			start_waiters(w, N, &word_a);
			rq_op = cases[c].op;
			rq_calls = 0;
			rq_r = (struct lk_unpark_result){ 0 };
			n = lk_unpark_requeue(&word_a, tos[tc], rq_validate, rq_cb, NULL);
			CHECK_EQ(n, (int)moved);
			CHECK_EQ(rq_calls, cases[c].op == LK_REQUEUE_ABORT ? 0 : 1);
			if (cases[c].op != LK_REQUEUE_ABORT) {
				CHECK_EQ(rq_r.unparked_threads, cases[c].unparked);
				CHECK_EQ(rq_r.requeued_threads, cases[c].requeued);
				CHECK_EQ(rq_r.have_more_threads, moved < N);
			}
			if (cases[c].unparked) {
				wait_woken(1);
				CHECK_EQ(ORD(0), 0);		/* the oldest is the one unparked */
			}
			/* what was requeued is on `to`, in order: drain it one at a time */
			for (unsigned i = 0; i < cases[c].requeued; i++) {
				int before = atomic_load_explicit(&norder, memory_order_acquire);

				CHECK_EQ(lk_unpark_one(tos[tc], one_cb, (void *)1), 1);
				wait_woken(before + 1);
				CHECK_EQ(ORD(before), (int)(cases[c].unparked + i));
			}
			if (tos[tc] != &word_a)
				CHECK_EQ(lk_unpark_all(tos[tc], 0), 0);	/* nothing else went there */
			/* the rest is still on `from` */
			CHECK_EQ(lk_unpark_all(&word_a, 0), (int)(N - moved));
			join_all(w, N);
			if (cases[c].unparked)
				CHECK_EQ(w[0].got, 9);
		}
	}
	rq_op = (enum lk_requeue_op)99;	/* garbage from validate: nothing happens, -EINVAL */
	CHECK_EQ(lk_unpark_requeue(&word_a, &word_b, rq_validate, rq_cb, NULL), -EINVAL);
}

static enum lk_filter_op even_filter(void *ctx, lk_token_t tok)
{
	(void)ctx;	/* shared with the callback: (void *)7 */
	if (tok == 103)
		return LK_FILTER_STOP;
	return (tok % 2 == 0) ? LK_FILTER_UNPARK : LK_FILTER_SKIP;
}

static void test_filter(void)
{
	enum { N = 6 };	/* park tokens 100..105 */
	struct waiter w[N];

	start_waiters(w, N, &word_a);
	last_r = (struct lk_unpark_result){ 0 };
	/* 100 unpark, 101 skip, 102 unpark, 103 stop: 104 and 105 are never looked at */
	CHECK_EQ(lk_unpark_filter(&word_a, even_filter, one_cb, (void *)7), 2);
	CHECK_EQ(last_r.unparked_threads, 2);
	CHECK(last_r.have_more_threads);
	wait_woken(2);
	CHECK((ORD(0) == 0 && ORD(1) == 2) || (ORD(0) == 2 && ORD(1) == 0));
	CHECK_EQ(lk_unpark_all(&word_a, 0), N - 2);
	join_all(w, N);
	CHECK_EQ(w[0].got, 7);
	CHECK_EQ(w[2].got, 7);
	CHECK_EQ(w[1].got, 0);
}

int main(void)
{
	struct lk_park_stats st;

	lkt_watchdog(60);
	test_errors();
	test_validate_and_deadlines();
	test_timeout_not_last();
	test_fifo_unpark_one();
	test_unpark_all();
	test_requeue();
	test_filter();
	lk_park_get_stats(&st);
	CHECK(st.buckets >= LK_PARK_BUCKETS_PER_THREAD * st.live_threads);
	CHECK(st.bucket_bytes >= 64);
	CHECK(st.retired_bytes < st.table_bytes);
	CHECK(st.layout != NULL);
	return lkt_done("test_park_basic");
}
