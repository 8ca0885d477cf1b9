/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_unlock_eperm.c - lk_mutex_unlock() of a mutex that is not locked returns EPERM and
 * changes nothing (mutex.h), also when the word says threads are parked on it - the unlock must
 * look at L before it decides to wake or hand over, never hand a free lock to a parked waiter.
 *
 * 1. A word with PARKED set and LOCKED clear and a thread queued on its address (a stand-in parked
 *    through the public parking-lot API; its validate sets P with this process's fork generation,
 *    as a mutex waiter's PP does): unlock
 *    must return EPERM, leave the word as it was and unpark nobody.
 * 2. The state lk_cond reaches for real (src/mutex.c invariant 6: "CR onto a free mutex"): waiters A
 *    and B on c with m; A is held in a signal handler (still queued on c, its sleep interrupted);
 *    a broadcast with m free unparks A and requeues B onto m, owed (word = P | owed, L clear). Then
 *    the misuse: main unlocks m. It must return EPERM and leave the word alone; before the fix the
 *    unlock handed the free mutex to B (B returned from lk_cond_wait while the word said free, and
 *    main could lock m too: two owners). A then takes m and its unlock hands m over to B.
 *    Not under ThreadSanitizer: it delivers the signal only when A leaves its futex sleep.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lktest.h"
#include "locklab/cond.h"
#include "locklab/mutex.h"
#include "locklab/park.h"

static uint32_t word(lk_mutex_t *mx)
{
	return atomic_load_explicit(&mx->word, memory_order_relaxed);	/* relaxed: observing bits */
}

/* ---- 1: a parked stand-in, the mutex not locked -------------------------------------------------- */

static lk_mutex_t m1 = LK_MUTEX_INITIALIZER;
static _Atomic int x_queued;
/* PARKED carries the fork generation that set it (GEN): this process never forked, so it is 1 */
#define GEN1 (1u << __builtin_ctz(LK_MUTEX_GEN_MASK))

static bool x_validate(void *ctx)
{
	(void)ctx;
	/* relaxed: bit bookkeeping under the bucket lock, as the mutex's own PP/validate */
	atomic_fetch_or_explicit(&m1.word, LK_MUTEX_PARKED | GEN1, memory_order_relaxed);
	return true;
}

static void x_before_sleep(void *ctx)
{
	(void)ctx;
	atomic_store(&x_queued, 1);
}

static const struct lk_park_ops x_ops = { .validate = x_validate, .before_sleep = x_before_sleep };
static _Atomic lk_token_t x_token = 12345;

static void *parked_x(void *arg)
{
	lk_token_t tok = 0;

	(void)arg;
	CHECK_EQ(lk_park(&m1.word, &x_ops, NULL, 0, NULL, CLOCK_MONOTONIC, &tok), LK_PARK_UNPARKED);
	atomic_store(&x_token, tok);
	return NULL;
}

static void part1(void)
{
	pthread_t x;

	CHECK_EQ(pthread_create(&x, NULL, parked_x, NULL), 0);
	while (!atomic_load(&x_queued))
		sched_yield();
	uint32_t before = word(&m1);

	CHECK_EQ(before, LK_MUTEX_PARKED | GEN1);
	CHECK_EQ(lk_mutex_unlock(&m1), EPERM);
	CHECK_EQ(word(&m1), before);
	/* X is still queued: our unpark finds it; the unlock above woke nobody */
	CHECK_EQ(lk_unpark_all(&m1.word, 77), 1);
	CHECK_EQ(pthread_join(x, NULL), 0);
	CHECK_EQ(atomic_load(&x_token), 77);
	atomic_store_explicit(&m1.word, 0, memory_order_relaxed);	/* relaxed: nobody else uses m1 */
	CHECK_EQ(lk_mutex_destroy(&m1), 0);
}

/* ---- 2: a condvar waiter requeued onto a free mutex ------------------------------------------------ */

#if !defined(LOCKLAB_SANITIZE_thread)
static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static lk_cond_t c = LK_COND_INITIALIZER;
static _Atomic int tid_a, tid_b, in_handler, release_a, inside, overlaps, done;

static void hold(int s)
{
	(void)s;
	atomic_store(&in_handler, 1);
	while (!atomic_load(&release_a))
		sched_yield();
}

static void critical_section(void)
{
	if (atomic_fetch_add(&inside, 1) != 0)
		atomic_fetch_add(&overlaps, 1);
	for (int i = 0; i < 1000; i++)
		sched_yield();
	atomic_fetch_sub(&inside, 1);
}

static void *cond_waiter(void *arg)
{
	_Atomic int *tid = arg;

	lk_mutex_lock(&m);
	atomic_store(tid, (int)syscall(SYS_gettid));
	CHECK_EQ(lk_cond_wait(&c, &m), 0);
	critical_section();
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	atomic_fetch_add(&done, 1);
	return NULL;
}

static void part2(void)
{
	struct sigaction sa = { .sa_handler = hold };
	pthread_t a, b;

	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	CHECK_EQ(pthread_create(&a, NULL, cond_waiter, (void *)&tid_a), 0);
	while (!atomic_load(&tid_a) || lkt_thread_state(tid_a) != 'S' || word(&m) != 0)
		sched_yield();
	CHECK_EQ(pthread_create(&b, NULL, cond_waiter, (void *)&tid_b), 0);
	while (!atomic_load(&tid_b) || lkt_thread_state(tid_b) != 'S' || word(&m) != 0)
		sched_yield();
	/* A, B asleep on c, m free. A into the handler: it stays queued on c */
	CHECK_EQ(syscall(SYS_tgkill, getpid(), tid_a, SIGUSR1), 0);
	while (!atomic_load(&in_handler))
		sched_yield();
	CHECK_EQ(lk_cond_broadcast(&c), 0);	/* m free: A unparked, B requeued onto m, owed */
	uint32_t before = word(&m);

	if (!(before & LK_MUTEX_PARKED) || (before & LK_MUTEX_LOCKED) || !(before & LK_MUTEX_OWED_MASK)) {
		fprintf(stderr, "part 2: broadcast did not requeue B onto the free mutex (word %#x)\n", before);
		CHECK(0);
	}
	int r = lk_mutex_unlock(&m);		/* the misuse: m is not locked */

	if (r != EPERM)
		fprintf(stderr, "part 2: unlock of the unlocked mutex (word %#x) returned %d, word now %#x\n",
			before, r, word(&m));
	CHECK_EQ(r, EPERM);
	CHECK_EQ(word(&m), before);
	/* nobody owns m: it is free for us (B, requeued, waits to be handed m by the next unlock) */
	if (lk_mutex_trylock(&m) == 0) {
		critical_section();
		CHECK_EQ(lk_mutex_unlock(&m), 0);	/* hands m to B */
	} else {
		CHECK(0);	/* somebody owns m: the misuse handed it to B */
	}
	atomic_store(&release_a, 1);	/* A leaves the handler and takes m as its wait returns */
	CHECK_EQ(pthread_join(a, NULL), 0);
	CHECK_EQ(pthread_join(b, NULL), 0);
	CHECK_EQ(atomic_load(&done), 2);
	CHECK_EQ(atomic_load(&overlaps), 0);
	CHECK_EQ(word(&m), 0u);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	CHECK_EQ(lk_cond_destroy(&c), 0);
}
#endif

int main(void)
{
	lkt_watchdog(120);
	part1();
#if !defined(LOCKLAB_SANITIZE_thread)
	part2();
#endif
	return lkt_done("test_mutex_unlock_eperm");
}
