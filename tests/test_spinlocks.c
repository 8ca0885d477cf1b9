/* SPDX-License-Identifier: MIT */
/*
 * tests/test_spinlocks.c - the four spinlocks (TTAS, ticket, MCS, queued): single-thread contract
 * (lock/trylock/unlock results, EPERM on unlocking a free lock - TTAS: 0, the lock left free; its
 * checked unlock is tests/test_spin_ttas_checked.c - is_locked), ticket wrap-around past
 * 2^16, MCS per-thread node errors (EDEADLK, ENOMEM, EPERM), mutual exclusion under contention with a
 * plain (non-atomic) counter and a "two inside" detector, mixed lock/trylock, and qspinlock slot
 * recycling across many short-lived threads. TSan checks every critical section is ordered.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <locklab/qspinlock.h>
#include <locklab/spin_mcs.h>
#include <locklab/spin_ticket.h>
#include <locklab/spin_ttas.h>

#include "lktest.h"

struct any_lock {
	struct lk_spin_ttas ttas;
	struct lk_spin_ticket ticket;
	struct lk_spin_mcs mcs;
	struct lk_qspinlock q;
};

struct kind {
	const char *name;
	void (*lock)(struct any_lock *);
	int (*trylock)(struct any_lock *);
	int (*unlock)(struct any_lock *);
	bool (*is_locked)(struct any_lock *);
	bool fifo;
	int free_unlock;	/* what unlocking a free lock returns: EPERM, or 0 for TTAS (not reported) */
};

static void ttas_lock(struct any_lock *l) { lk_spin_ttas_lock(&l->ttas); }
static int ttas_try(struct any_lock *l) { return lk_spin_ttas_trylock(&l->ttas); }
static int ttas_unlock(struct any_lock *l) { return lk_spin_ttas_unlock(&l->ttas); }
static bool ttas_held(struct any_lock *l) { return lk_spin_ttas_is_locked(&l->ttas); }
static void ticket_lock(struct any_lock *l) { lk_spin_ticket_lock(&l->ticket); }
static int ticket_try(struct any_lock *l) { return lk_spin_ticket_trylock(&l->ticket); }
static int ticket_unlock(struct any_lock *l) { return lk_spin_ticket_unlock(&l->ticket); }
static bool ticket_held(struct any_lock *l) { return lk_spin_ticket_is_locked(&l->ticket); }
static void mcs_lock(struct any_lock *l) { CHECK_EQ(lk_spin_mcs_lock_tls(&l->mcs), 0); }
static int mcs_try(struct any_lock *l) { return lk_spin_mcs_trylock_tls(&l->mcs); }
static int mcs_unlock(struct any_lock *l) { return lk_spin_mcs_unlock_tls(&l->mcs); }
static bool mcs_held(struct any_lock *l) { return lk_spin_mcs_is_locked(&l->mcs); }
static void q_lock(struct any_lock *l) { lk_qspin_lock(&l->q); }
static int q_try(struct any_lock *l) { return lk_qspin_trylock(&l->q); }
static int q_unlock(struct any_lock *l) { return lk_qspin_unlock(&l->q); }
static bool q_held(struct any_lock *l) { return lk_qspin_is_locked(&l->q); }

static const struct kind kinds[] = {
	{ "spin_ttas", ttas_lock, ttas_try, ttas_unlock, ttas_held, false, 0 },
	{ "spin_ticket", ticket_lock, ticket_try, ticket_unlock, ticket_held, true, EPERM },
	{ "spin_mcs", mcs_lock, mcs_try, mcs_unlock, mcs_held, true, EPERM },
	{ "qspinlock", q_lock, q_try, q_unlock, q_held, true, EPERM },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void test_single(void)
{
	for (size_t k = 0; k < NKINDS; k++) {
		const struct kind *kd = &kinds[k];
		struct any_lock l = { LK_SPIN_TTAS_INIT, LK_SPIN_TICKET_INIT, LK_SPIN_MCS_INIT, LK_QSPINLOCK_INIT };

		CHECK(!kd->is_locked(&l));
		CHECK_EQ(kd->unlock(&l), kd->free_unlock);	/* misuse: unlocking a free lock */
		CHECK(!kd->is_locked(&l));		/* ... changed nothing */
		kd->lock(&l);
		CHECK(kd->is_locked(&l));
		if (k != 2)	/* the MCS TLS wrapper reports re-locking by the holder as EDEADLK instead */
			CHECK_EQ(kd->trylock(&l), EBUSY);
		CHECK_EQ(kd->unlock(&l), 0);
		CHECK(!kd->is_locked(&l));
		CHECK_EQ(kd->unlock(&l), kd->free_unlock);
		CHECK(!kd->is_locked(&l));		/* ... changed nothing */
		CHECK_EQ(kd->trylock(&l), 0);
		CHECK(kd->is_locked(&l));
		CHECK_EQ(kd->unlock(&l), 0);
		/* a lock works again after the misuse was rejected */
		kd->lock(&l);
		CHECK_EQ(kd->unlock(&l), 0);
	}
}

static void test_ticket_wrap(void)
{
	struct lk_spin_ticket t = LK_SPIN_TICKET_INIT;

	for (unsigned i = 0; i < 70000; i++) {
		if (i & 1) {
			lk_spin_ticket_lock(&t);
		} else if (lk_spin_ticket_trylock(&t)) {
			lkt_failures++;
			break;
		}
		if (lk_spin_ticket_unlock(&t)) {
			lkt_failures++;
			break;
		}
	}
	CHECK(!lk_spin_ticket_is_locked(&t));
	/* both halves wrapped past 2^16, owner carried nothing into next */
	CHECK_EQ(lk_spin_ticket_next_of(atomic_load_explicit(&t.val, memory_order_relaxed)), 70000 % 65536);
	CHECK_EQ(lk_spin_ticket_owner_of(atomic_load_explicit(&t.val, memory_order_relaxed)), 70000 % 65536);
}

static void test_mcs_tls_errors(void)
{
	struct lk_spin_mcs m[LK_SPIN_MCS_TLS_DEPTH + 1];
	struct lk_mcs_node node;

	for (int i = 0; i <= LK_SPIN_MCS_TLS_DEPTH; i++)
		lk_spin_mcs_init(&m[i]);
	CHECK_EQ(lk_spin_mcs_unlock_tls(&m[0]), EPERM);
	for (int i = 0; i < LK_SPIN_MCS_TLS_DEPTH; i++)
		CHECK_EQ(lk_spin_mcs_lock_tls(&m[i]), 0);
	CHECK_EQ(lk_spin_mcs_lock_tls(&m[0]), EDEADLK);
	CHECK_EQ(lk_spin_mcs_trylock_tls(&m[1]), EDEADLK);
	CHECK_EQ(lk_spin_mcs_lock_tls(&m[LK_SPIN_MCS_TLS_DEPTH]), ENOMEM);
	CHECK(!lk_spin_mcs_is_locked(&m[LK_SPIN_MCS_TLS_DEPTH]));
	/* scrambled unlock order */
	for (int i = LK_SPIN_MCS_TLS_DEPTH - 1; i >= 0; i -= 2)
		CHECK_EQ(lk_spin_mcs_unlock_tls(&m[i]), 0);
	for (int i = LK_SPIN_MCS_TLS_DEPTH - 2; i >= 0; i -= 2)
		CHECK_EQ(lk_spin_mcs_unlock_tls(&m[i]), 0);
	for (int i = 0; i < LK_SPIN_MCS_TLS_DEPTH; i++)
		CHECK(!lk_spin_mcs_is_locked(&m[i]));
	/* explicit-node API */
	lk_spin_mcs_lock(&m[0], &node);
	CHECK_EQ(lk_spin_mcs_trylock_tls(&m[0]), EBUSY);
	CHECK_EQ(lk_spin_mcs_unlock(&m[0], &node), 0);
	CHECK_EQ(lk_spin_mcs_unlock(&m[0], &node), EPERM);
}

/* ---- contention ---------------------------------------------------------------------------------- */

struct shared {
	const struct kind *kd;
	struct any_lock l;
	unsigned iters;
	uint64_t counter;	/* plain: protected by the lock */
	_Atomic int inside;	/* must never exceed 1 */
	_Atomic int overlap;
	_Atomic int ready;
	int nthreads;
};

static void *cs_thread(void *arg)
{
	struct shared *s = arg;

	/* relaxed: a start gate only */
	atomic_fetch_add_explicit(&s->ready, 1, memory_order_relaxed);
	while (atomic_load_explicit(&s->ready, memory_order_relaxed) < s->nthreads)
		sched_yield();
	for (unsigned i = 0; i < s->iters; i++) {
		if ((i & 7) == 7) {
			while (s->kd->trylock(&s->l))
				sched_yield();
		} else {
			s->kd->lock(&s->l);
		}
		/* relaxed: a detector; the lock itself is what orders the counter */
		if (atomic_fetch_add_explicit(&s->inside, 1, memory_order_relaxed) != 0)
			atomic_fetch_add_explicit(&s->overlap, 1, memory_order_relaxed);
		s->counter++;
		atomic_fetch_sub_explicit(&s->inside, 1, memory_order_relaxed);
		if (s->kd->unlock(&s->l))
			atomic_fetch_add_explicit(&s->overlap, 1000, memory_order_relaxed);
	}
	return NULL;
}

static void test_exclusion(void)
{
	static struct shared s;

	for (size_t k = 0; k < NKINDS; k++) {
		/* FIFO spinlocks on an oversubscribed 2-CPU box: keep threads near the CPU count */
		int nthreads = kinds[k].fifo ? 3 : 4;
		pthread_t th[4];

		s = (struct shared){ .kd = &kinds[k], .nthreads = nthreads };
		s.iters = lkt_sanitized() ? 20000 : (kinds[k].fifo ? 100000 : 200000);
		for (int i = 0; i < nthreads; i++)
			CHECK_EQ(pthread_create(&th[i], NULL, cs_thread, &s), 0);
		for (int i = 0; i < nthreads; i++)
			pthread_join(th[i], NULL);
		if (s.counter != (uint64_t)s.iters * nthreads ||
		    atomic_load_explicit(&s.overlap, memory_order_relaxed)) {
			fprintf(stderr, "%s: counter %llu want %llu, overlaps %d\n", kinds[k].name,
				(unsigned long long)s.counter, (unsigned long long)s.iters * nthreads,
				atomic_load_explicit(&s.overlap, memory_order_relaxed));
			lkt_failures++;
		}
		CHECK(!kinds[k].is_locked(&s.l));
	}
}

/* Many short-lived threads contending on one qspinlock: slots are claimed, queued on and recycled. */
static void test_qspin_slots(void)
{
	static struct shared s;
	int rounds = lkt_sanitized() ? 10 : 40;

	s = (struct shared){ .kd = &kinds[3], .nthreads = 3 };
	s.iters = lkt_sanitized() ? 500 : 3000;
	for (int r = 0; r < rounds; r++) {
		pthread_t th[3];

		atomic_store_explicit(&s.ready, 0, memory_order_relaxed);
		for (int i = 0; i < 3; i++)
			CHECK_EQ(pthread_create(&th[i], NULL, cs_thread, &s), 0);
		for (int i = 0; i < 3; i++)
			pthread_join(th[i], NULL);
	}
	CHECK_EQ(s.counter, (uint64_t)s.iters * 3 * (uint64_t)rounds);
	CHECK_EQ(atomic_load_explicit(&s.overlap, memory_order_relaxed), 0);
	CHECK_EQ(atomic_load_explicit(&s.l.q.val, memory_order_relaxed), 0);	/* no tail, pending, lock */
}

int main(void)
{
	lkt_watchdog(60);
	test_single();
	test_ticket_wrap();
	test_mcs_tls_errors();
	test_exclusion();
	test_qspin_slots();
	return lkt_done("test_spinlocks");
}
