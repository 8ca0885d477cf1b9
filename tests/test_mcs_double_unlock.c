/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mcs_double_unlock.c - a repeated lk_spin_mcs_unlock() with a node whose last use handed
 * the lock to a successor must return EPERM and write nothing (review of issue 12, finding 1).
 *
 * A correct contended unlock reads node->next (the successor) and stores next->locked = 1. If it
 * leaves `next` set, a second unlock with the same node (the misuse spin_mcs.h promises to detect)
 * takes the slow path, finds the stale successor and stores 1 into *its* node - which by then may be
 * queued on another MCS lock: that thread enters the other lock's critical section while its holder
 * is still inside. Every step below is ordered by the lock word or a node, never by sleeping:
 *
 *   1. main holds `l` with nA; B queues behind it (nA.next = &nB); main unlocks (handover to B).
 *   2. B unlocks `l` (free now) and queues on `l2` with the same node nB behind main, which holds l2
 *      with nC (main sees nC.next == &nB: B is spinning on nB.locked).
 *   3. main unlocks `l` again with nA: must be EPERM, and nB.locked must still be 0 (nobody but main,
 *      l2's holder, may hand l2 to B).
 *   4. B holds `l` (handed over from main), and a helper thread repeats main's unlock with nA while B
 *      is inside: it must not return 0 (it returns EPERM once it sees the lock free) and B's
 *      critical section must not be entered by anybody else.
 * Then both locks must still work.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include <locklab/spin_mcs.h>

#include "lktest.h"

static struct lk_spin_mcs l = LK_SPIN_MCS_INIT, l2 = LK_SPIN_MCS_INIT;
static struct lk_mcs_node nA, nB, nC;
static _Atomic int step;		/* handshakes between main and B */
static _Atomic int b_in_l2;		/* B is inside l2's critical section */

static void wait_step(int s)
{
	while (atomic_load_explicit(&step, memory_order_acquire) != s)	/* acquire: handshake */
		sched_yield();
}

static void set_step(int s)
{
	atomic_store_explicit(&step, s, memory_order_release);	/* release: handshake */
}

static struct lk_mcs_node *next_of(struct lk_mcs_node *n)
{
	return atomic_load_explicit(&n->next, memory_order_acquire);	/* acquire: polling a link */
}

static void *thread_b(void *arg)
{
	(void)arg;
	lk_spin_mcs_lock(&l, &nB);		/* 1: queues behind main, nA.next = &nB */
	CHECK_EQ(lk_spin_mcs_unlock(&l, &nB), 0);
	set_step(1);
	wait_step(2);
	lk_spin_mcs_lock(&l2, &nB);		/* 2: queues behind main (holds l2 with nC) */
	atomic_store_explicit(&b_in_l2, 1, memory_order_relaxed);	/* relaxed: read after join */
	CHECK_EQ(lk_spin_mcs_unlock(&l2, &nB), 0);
	return NULL;
}

static _Atomic int helper_ret = -1;
static _Atomic int helper_started;	/* the helper is about to make its repeated unlock */

static void *repeat_unlock(void *arg)
{
	(void)arg;
	/* misuse: nA released `l` long ago; B holds `l` now */
	atomic_store_explicit(&helper_started, 1, memory_order_release);	/* release: handshake */
	atomic_store_explicit(&helper_ret, lk_spin_mcs_unlock(&l, &nA), memory_order_release);
	return NULL;
}

static _Atomic int in_l;

static void *thread_b2(void *arg)
{
	(void)arg;
	lk_spin_mcs_lock(&l, &nB);		/* 4: queues behind main */
	CHECK_EQ(atomic_fetch_add_explicit(&in_l, 1, memory_order_relaxed), 0);	/* relaxed: a count */
	set_step(3);
	wait_step(4);
	CHECK_EQ(atomic_fetch_sub_explicit(&in_l, 1, memory_order_relaxed), 1);
	CHECK_EQ(lk_spin_mcs_unlock(&l, &nB), 0);
	return NULL;
}

int main(void)
{
	pthread_t b, h;

	lkt_watchdog(60);

	/* 1 */
	lk_spin_mcs_lock(&l, &nA);
	CHECK_EQ(pthread_create(&b, NULL, thread_b, NULL), 0);
	while (next_of(&nA) != &nB)
		sched_yield();
	CHECK_EQ(lk_spin_mcs_unlock(&l, &nA), 0);	/* contended: hands `l` to B */
	wait_step(1);
	CHECK(!lk_spin_mcs_is_locked(&l));

	/* 2 */
	lk_spin_mcs_lock(&l2, &nC);
	set_step(2);
	while (next_of(&nC) != &nB)
		sched_yield();

	/* 3: the repeated unlock, while B spins on nB.locked for l2 */
	int r = lk_spin_mcs_unlock(&l, &nA);
	if (r != EPERM)
		fprintf(stderr, "repeated unlock of a free lock with a node that had a successor returned %d, "
			"expected EPERM (%d)\n", r, EPERM);
	CHECK_EQ(r, EPERM);
	/* relaxed: only main (l2's holder) writes nB.locked while B is queued on l2 */
	uint32_t bl = atomic_load_explicit(&nB.locked, memory_order_relaxed);
	if (bl)
		fprintf(stderr, "the repeated unlock stored locked = 1 into B's node, queued on another lock: "
			"B enters l2 while its holder is inside\n");
	CHECK_EQ(bl, 0);
	CHECK(!lk_spin_mcs_is_locked(&l));
	CHECK_EQ(lk_spin_mcs_unlock(&l2, &nC), 0);	/* hands l2 to B */
	pthread_join(b, NULL);
	CHECK_EQ(atomic_load_explicit(&b_in_l2, memory_order_relaxed), 1);
	CHECK(!lk_spin_mcs_is_locked(&l2));

	/* 4: the repeated unlock while another thread holds the lock */
	set_step(0);
	lk_spin_mcs_lock(&l, &nA);
	CHECK_EQ(pthread_create(&b, NULL, thread_b2, NULL), 0);
	while (next_of(&nA) != &nB)
		sched_yield();
	CHECK_EQ(lk_spin_mcs_unlock(&l, &nA), 0);	/* hands `l` to B */
	wait_step(3);					/* B is inside */
	CHECK_EQ(pthread_create(&h, NULL, repeat_unlock, NULL), 0);
	/*
	 * Until the helper makes its unlock call, and a little longer (it waits to see the lock free):
	 * B stays inside meanwhile. Without waiting for the call, beside another test the helper had
	 * not started it when B left in 4 of 20 runs, and step 4 repeated step 3.
	 */
	while (!atomic_load_explicit(&helper_started, memory_order_acquire))	/* acquire: handshake */
		sched_yield();
	for (int i = 0; i < 100; i++)
		sched_yield();
	/* acquire: the helper's result; it cannot have one before B unlocks (the lock is held) */
	CHECK_EQ(atomic_load_explicit(&helper_ret, memory_order_acquire), -1);
	CHECK_EQ(atomic_load_explicit(&in_l, memory_order_relaxed), 1);
	CHECK(lk_spin_mcs_is_locked(&l));
	set_step(4);
	pthread_join(b, NULL);
	pthread_join(h, NULL);
	r = atomic_load_explicit(&helper_ret, memory_order_acquire);
	if (r != EPERM)
		fprintf(stderr, "repeated unlock while another thread held the lock returned %d, expected EPERM\n",
			r);
	CHECK_EQ(r, EPERM);
	CHECK(!lk_spin_mcs_is_locked(&l));

	/* both locks still work, uncontended and with the nodes used above */
	lk_spin_mcs_lock(&l, &nA);
	lk_spin_mcs_lock(&l2, &nB);
	CHECK_EQ(lk_spin_mcs_unlock(&l2, &nB), 0);
	CHECK_EQ(lk_spin_mcs_unlock(&l, &nA), 0);
	CHECK_EQ(lk_spin_mcs_unlock(&l, &nA), EPERM);
	CHECK(!lk_spin_mcs_is_locked(&l));
	CHECK(!lk_spin_mcs_is_locked(&l2));
	return lkt_done("test_mcs_double_unlock");
}
