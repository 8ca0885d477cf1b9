/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_qspin_exit.c - issue 12 defect 6: a qspinlock node slot must not be used
 * after the thread's TLS destructor gave it back.
 *
 * T claims a slot by queueing once. When T exits, the qspinlock's pthread key destructor returns the
 * slot; a later TLS destructor of T (ours, in the second destructor round) then takes a contended
 * qspinlock. Meanwhile U, a new thread, queues on another lock and claims the lowest free slot -
 * T's. If T still used its old slot, T and U would share one MCS node: both tails name the same
 * (slot, idx). The pause points qspin.queued (a thread published its tail) and qspin.fallback (a
 * thread without a node spins on trylock) tell the test, deterministically, which path T took.
 *
 * Each lock is made "contended enough to queue": the main thread holds it and a pending waiter spins
 * on it (0,1,1), so the next arrival queues.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "hooklab.h"
#include "locklab/qspinlock.h"

static struct lk_qspinlock A = LK_QSPINLOCK_INIT, B = LK_QSPINLOCK_INIT, C = LK_QSPINLOCK_INIT;
static __thread char who;		/* 'T', 'U', 'p' (pending waiters), 0 main */
static __thread int in_dtor;		/* T: inside the TLS destructor */
static _Atomic uint32_t tail_T, tail_T_dtor, tail_U;
static _Atomic int T_dtor_path;		/* 0 not yet, 1 queued, 2 fallback */
static _Atomic int T_in_dtor;
static _Atomic int B_ready;		/* main holds B and a pending waiter spins on it */
static pthread_key_t key;

static void on_hook(const char *point, void *arg)
{
	if (hk_is(point, "qspin.queued")) {
		uint32_t tail = (uint32_t)(uintptr_t)arg;

		/* release (all): the main thread polls these with acquire */
		if (who == 'T' && in_dtor) {
			atomic_store_explicit(&tail_T_dtor, tail, memory_order_release);
			atomic_store_explicit(&T_dtor_path, 1, memory_order_release);
		} else if (who == 'T') {
			atomic_store_explicit(&tail_T, tail, memory_order_release);
		} else if (who == 'U') {
			atomic_store_explicit(&tail_U, tail, memory_order_release);
		}
	} else if (hk_is(point, "qspin.fallback") && who == 'T' && in_dtor) {
		atomic_store_explicit(&T_dtor_path, 2, memory_order_release);
	}
}

static void *pending(void *arg)
{
	struct lk_qspinlock *l = arg;

	who = 'p';
	lk_qspin_lock(l);
	lk_qspin_unlock(l);
	return NULL;
}

static void t_dtor(void *v)
{
	uintptr_t round = (uintptr_t)v;

	if (round < 2) {	/* round 1: the qspinlock's own destructor may not have run yet */
		pthread_setspecific(key, (void *)(round + 1));
		return;
	}
	in_dtor = 1;
	atomic_store_explicit(&T_in_dtor, 1, memory_order_release);	/* release: handshake */
	while (!atomic_load_explicit(&B_ready, memory_order_acquire))	/* acquire: handshake */
		sched_yield();
	lk_qspin_lock(&B);		/* contended: main holds B, a pending waiter spins on it */
	lk_qspin_unlock(&B);
}

static void *t_main(void *arg)
{
	(void)arg;
	who = 'T';
	lk_qspin_lock(&A);		/* queues (main holds A, a pending waiter spins): claims a slot */
	lk_qspin_unlock(&A);
	pthread_setspecific(key, (void *)1);
	return NULL;			/* destructors: the slot goes back, then t_dtor takes B */
}

static void *u_main(void *arg)
{
	(void)arg;
	who = 'U';
	lk_qspin_lock(&C);		/* queues: claims the lowest free slot */
	lk_qspin_unlock(&C);
	return NULL;
}

static uint32_t qval(struct lk_qspinlock *l)
{
	return atomic_load_explicit(&l->val, memory_order_relaxed);	/* relaxed: polling */
}

static void hold_with_pending(struct lk_qspinlock *l, pthread_t *p)
{
	lk_qspin_lock(l);
	CHECK_EQ(pthread_create(p, NULL, pending, l), 0);
	while (!(qval(l) & LK_QSPIN_PENDING_MASK))
		sched_yield();
}

int main(void)
{
	pthread_t t, u, p1, p2, p3;

	lkt_watchdog(60);
	hk_install(on_hook);
	CHECK_EQ(pthread_key_create(&key, t_dtor), 0);

	/* 1. T queues once on A: it owns a slot */
	hold_with_pending(&A, &p1);
	CHECK_EQ(pthread_create(&t, NULL, t_main, NULL), 0);
	while (!atomic_load_explicit(&tail_T, memory_order_acquire))
		sched_yield();
	lk_qspin_unlock(&A);
	pthread_join(p1, NULL);

	/* 2. B held with a pending waiter; T exits and, in its second destructor round, takes B */
	hold_with_pending(&B, &p2);
	atomic_store_explicit(&B_ready, 1, memory_order_release);	/* release: handshake */
	while (!atomic_load_explicit(&T_in_dtor, memory_order_acquire) ||
	       !atomic_load_explicit(&T_dtor_path, memory_order_acquire))
		sched_yield();

	/* 3. U queues on C while T still waits for B */
	hold_with_pending(&C, &p3);
	CHECK_EQ(pthread_create(&u, NULL, u_main, NULL), 0);
	while (!atomic_load_explicit(&tail_U, memory_order_acquire))
		sched_yield();

	uint32_t td = atomic_load_explicit(&tail_T_dtor, memory_order_acquire);
	uint32_t tu = atomic_load_explicit(&tail_U, memory_order_acquire);
	if (td && td == tu)
		fprintf(stderr, "T (exiting, slot given back) and U both queued with tail 0x%08x: one MCS node, "
			"two threads\n", tu);
	CHECK(!(td && td == tu));
	/* T gave its slot back: from then on it must not queue on a node at all */
	CHECK_EQ(atomic_load_explicit(&T_dtor_path, memory_order_acquire), 2);

	lk_qspin_unlock(&B);
	pthread_join(p2, NULL);
	pthread_join(t, NULL);
	lk_qspin_unlock(&C);
	pthread_join(p3, NULL);
	pthread_join(u, NULL);
	CHECK_EQ(qval(&A), 0);
	CHECK_EQ(qval(&B), 0);
	CHECK_EQ(qval(&C), 0);
	return lkt_done("test_hook_qspin_exit");
}
