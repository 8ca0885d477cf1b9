/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_qspin_signal.c - a signal handler that queues on a qspinlock while its thread
 * is about to claim a node slot: one slot for the thread, whoever claims it.
 *
 * Handlers may queue on a qspinlock (they take the thread's next node). The re-review of stop 36
 * placed a signal, with gdb, just after the thread decided to claim and before its "claiming" flag
 * was set: the handler claimed a slot and queued with it, then the interrupted claim took a second
 * slot, and the first stayed claimed by a live thread, never given back. Now the claim sees the
 * handler's slot and keeps it. Here the signal is raised at the qspin.claim_enter pause point:
 *   X queues on A (held by main with the pending bit set: 0,1,1), decides to claim, and is
 *   interrupted; its handler queues on B (held the same way) and claims; main lets B go once the
 *   handler's tail is in B; the handler returns; X queues on A. Both tails must name one slot.
 * Without the fix: two slots (the handler's and X's).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>

#include "hooklab.h"
#include "locklab/qspinlock.h"

static struct lk_qspinlock A = LK_QSPINLOCK_INIT, B = LK_QSPINLOCK_INIT;
static __thread char who;			/* 'X' on the thread under test */
static __thread volatile sig_atomic_t in_handler;
static _Atomic int raised, handler_done;
static _Atomic uint32_t tail_a, tail_b;

static void on_hook(const char *point, void *arg)
{
	(void)arg;
	if (who != 'X')
		return;
	if (hk_is(point, "qspin.claim_enter") && !in_handler &&
	    !atomic_exchange_explicit(&raised, 1, memory_order_relaxed))	/* relaxed: once */
		raise(SIGUSR1);		/* runs the handler here, on this thread, before we return */
	else if (hk_is(point, "qspin.queued"))	/* release: main polls with acquire */
		atomic_store_explicit(in_handler ? &tail_b : &tail_a, (uint32_t)(uintptr_t)arg,
				      memory_order_release);
}

static void on_usr1(int sig)
{
	(void)sig;
	in_handler = 1;
	lk_qspin_lock(&B);		/* contended: queues, claiming a slot of its own */
	CHECK_EQ(lk_qspin_unlock(&B), 0);
	in_handler = 0;
	atomic_store_explicit(&handler_done, 1, memory_order_release);	/* release: main polls */
}

static void *x_main(void *arg)
{
	(void)arg;
	who = 'X';
	lk_qspin_lock(&A);
	CHECK_EQ(lk_qspin_unlock(&A), 0);
	return NULL;
}

static unsigned slot_of(uint32_t tail)
{
	return (tail >> LK_QSPIN_TAIL_SLOT_SHIFT) - 1;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t x;

	lkt_watchdog(60);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	hk_install(on_hook);
	hk_qspin_hold_pending(&A);
	hk_qspin_hold_pending(&B);
	CHECK_EQ(pthread_create(&x, NULL, x_main, NULL), 0);
	while (!atomic_load_explicit(&tail_b, memory_order_acquire))	/* acquire: on_hook */
		sched_yield();
	hk_qspin_release(&B);
	while (!atomic_load_explicit(&handler_done, memory_order_acquire))	/* acquire: on_usr1 */
		sched_yield();
	while (!atomic_load_explicit(&tail_a, memory_order_acquire))	/* acquire: on_hook */
		sched_yield();
	hk_qspin_release(&A);
	CHECK_EQ(pthread_join(x, NULL), 0);

	uint32_t ta = atomic_load(&tail_a), tb = atomic_load(&tail_b);

	if (slot_of(ta) != slot_of(tb))
		fprintf(stderr, "the handler queued with slot %u and its thread with slot %u: two slots for "
			"one thread, the handler's never given back\n", slot_of(tb), slot_of(ta));
	CHECK_EQ(slot_of(ta), slot_of(tb));	/* (node 0 both times: the handler was done first) */
	CHECK_EQ(hk_qval(&A), 0);
	CHECK_EQ(hk_qval(&B), 0);
	CHECK_EQ(atomic_load_explicit(&hk_unknown, memory_order_relaxed), 0);
	return lkt_done("test_hook_qspin_signal");
}
