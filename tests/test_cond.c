/* SPDX-License-Identifier: MIT */
/*
 * tests/test_cond.c - lk_cond with lk_mutex.
 *
 *  - API: EINVAL (NULLs, bad deadline, two mutexes at once), EPERM (mutex not held), EBUSY (destroy
 *    with waiters), ETIMEDOUT on both clocks (past deadline: at once; future: not before it), the
 *    mutex held again after every return.
 *  - Producer/consumer over a bounded ring with many producers and consumers: exact item count and
 *    checksum (a lost wakeup hangs: the watchdog fails it).
 *  - Broadcast: N waiters for a flag, one broadcast (with and without the mutex held) wakes them all;
 *    with the mutex held the waiters are requeued onto it.
 *  - Ping-pong: two threads alternating turns through one condvar, many rounds (no lost wakeup).
 *  - Timed waiters racing signals: every waiter ends, the condvar and mutex end quiescent.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "lktest.h"
#include "locklab/cond.h"
#include "locklab/mutex.h"

static bool held(lk_mutex_t *m)
{
	return atomic_load_explicit(&m->word, memory_order_relaxed) & LK_MUTEX_LOCKED;
}

static uintptr_t cond_state(lk_cond_t *c)
{
	return atomic_load_explicit(&c->mutex, memory_order_relaxed);
}

/* ---- API ---------------------------------------------------------------------------------------- */

struct two {
	lk_cond_t c;
	lk_mutex_t m1, m2;
	bool go;		/* protected by m1 */
	int rc;
};

static void *wait_on_m1(void *arg)
{
	struct two *t = arg;

	lk_mutex_lock(&t->m1);
	while (!t->go)
		CHECK_EQ(lk_cond_wait(&t->c, &t->m1), 0);
	lk_mutex_unlock(&t->m1);
	return NULL;
}

static void test_api(clockid_t clock)
{
	lk_cond_t c = LK_COND_INITIALIZER;
	lk_mutex_t m = LK_MUTEX_INITIALIZER;
	struct timespec ts;

	CHECK_EQ(lk_cond_init(NULL), EINVAL);
	CHECK_EQ(lk_cond_destroy(NULL), EINVAL);
	CHECK_EQ(lk_cond_init(&c), 0);
	CHECK_EQ(lk_cond_signal(NULL), EINVAL);
	CHECK_EQ(lk_cond_broadcast(NULL), EINVAL);
	CHECK_EQ(lk_cond_signal(&c), 0);	/* nobody waits: nothing happens */
	CHECK_EQ(lk_cond_broadcast(&c), 0);

	/* mutex not held */
	CHECK_EQ(lk_cond_wait(&c, &m), EPERM);
	ts = lkt_deadline_in(clock, 1000000);
	CHECK_EQ(lk_cond_timedwait(&c, &m, clock, &ts), EPERM);
	CHECK(!held(&m));

	lk_mutex_lock(&m);
	CHECK_EQ(lk_cond_wait(NULL, &m), EINVAL);
	CHECK_EQ(lk_cond_wait(&c, NULL), EINVAL);
	ts = (struct timespec){ 0, 1000000000L };
	CHECK_EQ(lk_cond_timedwait(&c, &m, clock, &ts), EINVAL);
	ts = (struct timespec){ 0, -1 };
	CHECK_EQ(lk_cond_timedwait(&c, &m, clock, &ts), EINVAL);
	CHECK_EQ(lk_cond_timedwait(&c, &m, clock, NULL), EINVAL);
	ts = lkt_deadline_in(clock, 1000000);
	CHECK_EQ(lk_cond_timedwait(&c, &m, CLOCK_THREAD_CPUTIME_ID, &ts), EINVAL);
	CHECK(held(&m));

	/* past deadline: ETIMEDOUT at once, mutex held again, condvar left idle */
	ts = (struct timespec){ 0, 0 };
	CHECK_EQ(lk_cond_timedwait(&c, &m, clock, &ts), ETIMEDOUT);
	CHECK(held(&m));
	CHECK_EQ(cond_state(&c), 0);
	/* future deadline: not before it */
	ts = lkt_deadline_in(clock, 20000000);
	CHECK_EQ(lk_cond_timedwait(&c, &m, clock, &ts), ETIMEDOUT);
	CHECK(lkt_now_ns(clock) >= (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	CHECK(held(&m));
	CHECK_EQ(cond_state(&c), 0);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	CHECK_EQ(lk_cond_destroy(&c), 0);
}

static void test_two_mutexes(void)
{
	struct two t = { .c = LK_COND_INITIALIZER, .m1 = LK_MUTEX_INITIALIZER, .m2 = LK_MUTEX_INITIALIZER };
	pthread_t th;
	struct timespec ts;

	CHECK_EQ(pthread_create(&th, NULL, wait_on_m1, &t), 0);
	/* wait until the thread is parked on c with m1 (c records m1) */
	while (cond_state(&t.c) != (uintptr_t)&t.m1)
		sched_yield();
	CHECK_EQ(lk_cond_destroy(&t.c), EBUSY);
	lk_mutex_lock(&t.m2);
	CHECK_EQ(lk_cond_wait(&t.c, &t.m2), EINVAL);
	ts = lkt_deadline_in(CLOCK_MONOTONIC, 1000000000);
	CHECK_EQ(lk_cond_timedwait(&t.c, &t.m2, CLOCK_MONOTONIC, &ts), EINVAL);
	CHECK(held(&t.m2));	/* refused: the mutex was never released */
	lk_mutex_unlock(&t.m2);

	lk_mutex_lock(&t.m1);
	t.go = true;
	CHECK_EQ(lk_cond_signal(&t.c), 0);
	/* m1 is held: the waiter was moved onto m1's queue, not woken to block on it */
	CHECK(atomic_load_explicit(&t.m1.word, memory_order_relaxed) & LK_MUTEX_PARKED);
	CHECK_EQ(cond_state(&t.c), 0);
	lk_mutex_unlock(&t.m1);
	pthread_join(th, NULL);
	CHECK_EQ(cond_state(&t.c), 0);
	CHECK_EQ(lk_cond_destroy(&t.c), 0);
}

/* ---- producer / consumer ----------------------------------------------------------------------- */

#define RING 8

struct pc {
	lk_mutex_t m;
	lk_cond_t not_full, not_empty;
	uint64_t ring[RING];	/* all below protected by m */
	unsigned head, count;
	uint64_t consumed, sum;
	unsigned producers_left;
	unsigned per_producer;
};

static void *producer(void *arg)
{
	struct pc *q = arg;

	for (unsigned i = 0; i < q->per_producer; i++) {
		lk_mutex_lock(&q->m);
		while (q->count == RING)
			CHECK_EQ(lk_cond_wait(&q->not_full, &q->m), 0);
		q->ring[(q->head + q->count) % RING] = i + 1;
		q->count++;
		lk_cond_signal(&q->not_empty);
		lk_mutex_unlock(&q->m);
	}
	lk_mutex_lock(&q->m);
	if (--q->producers_left == 0)
		lk_cond_broadcast(&q->not_empty);	/* consumers blocked on an empty ring: done */
	lk_mutex_unlock(&q->m);
	return NULL;
}

static void *consumer(void *arg)
{
	struct pc *q = arg;

	lk_mutex_lock(&q->m);
	for (;;) {
		while (q->count == 0 && q->producers_left)
			CHECK_EQ(lk_cond_wait(&q->not_empty, &q->m), 0);
		if (q->count == 0)
			break;
		uint64_t v = q->ring[q->head];
		q->head = (q->head + 1) % RING;
		q->count--;
		q->consumed++;
		q->sum += v;
		lk_cond_signal(&q->not_full);
		/* let others in now and then with the ring non-empty */
		if ((q->consumed & 7) == 0) {
			lk_mutex_unlock(&q->m);
			lk_mutex_lock(&q->m);
		}
	}
	lk_mutex_unlock(&q->m);
	return NULL;
}

static void test_producer_consumer(unsigned np, unsigned nc)
{
	struct pc q = {
		.m = LK_MUTEX_INITIALIZER,
		.not_full = LK_COND_INITIALIZER,
		.not_empty = LK_COND_INITIALIZER,
		.producers_left = np,
		.per_producer = lkt_sanitized() ? 8000 : 20000,
	};
	pthread_t t[32];

	for (unsigned i = 0; i < nc; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, consumer, &q), 0);
	for (unsigned i = 0; i < np; i++)
		CHECK_EQ(pthread_create(&t[nc + i], NULL, producer, &q), 0);
	for (unsigned i = 0; i < np + nc; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(q.consumed, (uint64_t)np * q.per_producer);
	CHECK_EQ(q.sum, (uint64_t)np * q.per_producer * (q.per_producer + 1) / 2);
	CHECK_EQ(q.count, 0);
	CHECK_EQ(lk_cond_destroy(&q.not_full), 0);
	CHECK_EQ(lk_cond_destroy(&q.not_empty), 0);
	CHECK_EQ(lk_mutex_destroy(&q.m), 0);
}

/* ---- broadcast ---------------------------------------------------------------------------------- */

struct bc {
	lk_mutex_t m;
	lk_cond_t c;
	unsigned generation;	/* protected by m */
	unsigned waiting;	/* protected by m */
	unsigned woken;		/* protected by m */
};

struct bc_arg {
	struct bc *b;
	unsigned rounds;
};

static void *bc_waiter(void *arg)
{
	struct bc_arg *a = arg;
	struct bc *b = a->b;

	lk_mutex_lock(&b->m);
	for (unsigned r = 0; r < a->rounds; r++) {
		unsigned gen = b->generation;

		b->waiting++;
		while (b->generation == gen)
			CHECK_EQ(lk_cond_wait(&b->c, &b->m), 0);
		b->woken++;
	}
	lk_mutex_unlock(&b->m);
	return NULL;
}

static void test_broadcast(unsigned n, bool hold_mutex)
{
	struct bc b = { .m = LK_MUTEX_INITIALIZER, .c = LK_COND_INITIALIZER };
	struct bc_arg a = { .b = &b, .rounds = lkt_sanitized() ? 150 : 300 };
	pthread_t t[32];

	for (unsigned i = 0; i < n; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, bc_waiter, &a), 0);
	for (unsigned r = 0; r < a.rounds; r++) {
		/* wait until all n are waiting in round r (they count themselves in under m) */
		lk_mutex_lock(&b.m);
		while (b.waiting < (r + 1) * n) {
			lk_mutex_unlock(&b.m);
			sched_yield();
			lk_mutex_lock(&b.m);
		}
		b.generation++;
		if (hold_mutex) {
			CHECK_EQ(lk_cond_broadcast(&b.c), 0);
			/*
			 * All n were parked on c (each released m inside wait before we got it): with m
			 * held they are all requeued onto m, none woken (REQUEUE_ALL sets PARKED).
			 */
			CHECK(atomic_load_explicit(&b.m.word, memory_order_relaxed) & LK_MUTEX_PARKED);
			CHECK_EQ(cond_state(&b.c), 0);
			lk_mutex_unlock(&b.m);
		} else {
			lk_mutex_unlock(&b.m);
			CHECK_EQ(lk_cond_broadcast(&b.c), 0);
		}
	}
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(b.woken, a.rounds * n);
	CHECK_EQ(cond_state(&b.c), 0);
	CHECK_EQ(lk_mutex_destroy(&b.m), 0);
}

/* ---- ping-pong ---------------------------------------------------------------------------------- */

struct pp {
	lk_mutex_t m;
	lk_cond_t c;
	unsigned turn;		/* protected by m */
	unsigned rounds;
};

struct pp_arg {
	struct pp *p;
	unsigned me;
};

static void *pp_player(void *arg)
{
	struct pp_arg *a = arg;
	struct pp *p = a->p;

	lk_mutex_lock(&p->m);
	for (unsigned r = 0; r < p->rounds; r++) {
		while (p->turn % 2 != a->me)
			CHECK_EQ(lk_cond_wait(&p->c, &p->m), 0);
		p->turn++;
		lk_cond_signal(&p->c);
	}
	lk_mutex_unlock(&p->m);
	return NULL;
}

static void test_ping_pong(void)
{
	struct pp p = { .m = LK_MUTEX_INITIALIZER, .c = LK_COND_INITIALIZER,
			.rounds = lkt_sanitized() ? 20000 : 50000 };
	struct pp_arg a[2] = { { &p, 0 }, { &p, 1 } };
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, pp_player, &a[i]), 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(p.turn, 2 * p.rounds);
}

/* ---- timed waiters racing signals --------------------------------------------------------------- */

struct tw {
	lk_mutex_t m;
	lk_cond_t c;
	unsigned tokens;	/* protected by m: signalled "items" */
	unsigned taken, timeouts;
	unsigned per_thread;
	bool stop;
};

static void *tw_waiter(void *arg)
{
	struct tw *w = arg;

	lk_mutex_lock(&w->m);
	for (unsigned i = 0; i < w->per_thread; i++) {
		struct timespec ts = lkt_deadline_in(i & 1 ? CLOCK_REALTIME : CLOCK_MONOTONIC, 50000);
		int r = 0;

		while (w->tokens == 0 && r != ETIMEDOUT)
			r = lk_cond_timedwait(&w->c, &w->m, i & 1 ? CLOCK_REALTIME : CLOCK_MONOTONIC, &ts);
		CHECK(held(&w->m));
		if (w->tokens) {
			w->tokens--;
			w->taken++;
		} else {
			w->timeouts++;
		}
	}
	lk_mutex_unlock(&w->m);
	return NULL;
}

static void *tw_signaller(void *arg)
{
	struct tw *w = arg;

	for (;;) {
		lk_mutex_lock(&w->m);
		if (w->stop) {
			lk_mutex_unlock(&w->m);
			break;
		}
		w->tokens++;
		lk_cond_signal(&w->c);
		lk_mutex_unlock(&w->m);
		sched_yield();
	}
	return NULL;
}

static void test_timed_race(void)
{
	enum { NW = 6 };
	struct tw w = { .m = LK_MUTEX_INITIALIZER, .c = LK_COND_INITIALIZER,
			.per_thread = lkt_sanitized() ? 1000 : 3000 };
	pthread_t t[NW + 1];

	for (int i = 0; i < NW; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, tw_waiter, &w), 0);
	CHECK_EQ(pthread_create(&t[NW], NULL, tw_signaller, &w), 0);
	for (int i = 0; i < NW; i++)
		pthread_join(t[i], NULL);
	lk_mutex_lock(&w.m);
	w.stop = true;
	lk_mutex_unlock(&w.m);
	pthread_join(t[NW], NULL);
	CHECK_EQ(w.taken + w.timeouts, NW * w.per_thread);
	CHECK_EQ(cond_state(&w.c), 0);
	CHECK_EQ(lk_cond_destroy(&w.c), 0);
	CHECK_EQ(lk_mutex_destroy(&w.m), 0);
}

int main(void)
{
	lkt_watchdog(lkt_sanitized() ? 150 : 60);
	test_api(CLOCK_MONOTONIC);
	test_api(CLOCK_REALTIME);
	test_two_mutexes();
	test_producer_consumer(1, 1);
	test_producer_consumer(4, 4);
	test_producer_consumer(8, 3);
	test_broadcast(8, true);
	test_broadcast(8, false);
	test_broadcast(24, true);
	test_ping_pong();
	test_timed_race();
	return lkt_done("test_cond");
}
