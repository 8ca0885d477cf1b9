/* SPDX-License-Identifier: MIT */
/*
 * tests/test_qspin_slot_leak.c - qspinlock node slots claimed by a thread in its LAST TLS destructor
 * round are not lost for good (review of issue 12, finding 2).
 *
 * A thread claims a node slot the first time it queues and registers a pthread key destructor that
 * gives it back at thread exit. A thread whose first queueing happens in the last destructor round,
 * from a key that comes after the qspinlock's in key order, registers that destructor too late: it
 * never runs, and the slot stays claimed after the thread is gone. There is no portable way for the
 * thread to see that it is in that round (src/qspinlock.c), so the library instead recognises such
 * slots by their owner being dead, and takes them back when no free slot is left. Before, each such
 * thread leaked one of the LK_QSPIN_MAX_THREADS (16383) slots forever, and once they were gone every
 * thread fell back to spinning on trylock (unfair: no queue, no FIFO).
 *
 * The test makes LK_QSPIN_MAX_THREADS + EXTRA threads each queue once, from their last destructor
 * round, one after the other, and checks that every one of them queued: its tail (slot + 1) appears
 * in the lock word while the main thread holds the lock with the pending bit set (0,1,1: the next
 * arrival must queue; main sets the bit itself, so no pending thread has to spin meanwhile). A
 * thread that found no slot spins on trylock instead and never publishes a tail; it is recognised by
 * the CPU time it burns without publishing one (a queueing thread publishes after microseconds of
 * CPU), never by wall-clock time.
 *
 * Skipped under ThreadSanitizer: it finishes the thread from its own key destructor in the last round,
 * so a TLS destructor of ours cannot run there (tests/test_park_exit_dtor.c leaves that round out too).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include <locklab/qspinlock.h>

#include "lktest.h"

#ifndef PTHREAD_DESTRUCTOR_ITERATIONS
#define PTHREAD_DESTRUCTOR_ITERATIONS 4
#endif

#define EXTRA 64			/* queueings after the pool would be exhausted */
#define NO_TAIL_CPU_NS 2000000000ull	/* CPU a thread may burn before publishing its tail */

static struct lk_qspinlock L = LK_QSPINLOCK_INIT;
static pthread_key_t key;
static pthread_attr_t small_stack;	/* glibc caches small stacks: 16k threads cost no mmap each */

static uint32_t word(void)
{
	return atomic_load_explicit(&L.val, memory_order_relaxed);	/* relaxed: polling the word */
}

/* ---- the threads that queue from their last destructor round ------------------------------------ */

static void dtor(void *v)
{
	uintptr_t round = (uintptr_t)v;

	if (round < PTHREAD_DESTRUCTOR_ITERATIONS) {
		pthread_setspecific(key, (void *)(round + 1));	/* run again in the next round */
		return;
	}
	/* the last round: ours runs after the qspinlock's key (created first), so the slot this
	 * queueing claims registers a destructor that will never run */
	lk_qspin_lock(&L);
	lk_qspin_unlock(&L);
}

static void *leaker(void *arg)
{
	(void)arg;
	pthread_setspecific(key, (void *)1);
	return NULL;
}

static void *queue_once(void *arg)
{
	(void)arg;
	lk_qspin_lock(&L);
	lk_qspin_unlock(&L);
	return NULL;
}

static uint64_t cpu_ns(pthread_t t)
{
	clockid_t c;
	struct timespec ts;

	if (pthread_getcpuclockid(t, &c) || clock_gettime(c, &ts))
		return 0;	/* the thread is gone already: it cannot be spinning */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Main holds L and sets the pending bit itself (0,1,1: the word as if a pending waiter spun on it,
 * so that the next arrival must queue); start `fn` and wait until its tail shows in the word. Returns
 * the slot it queued with, or -1 if it burned NO_TAIL_CPU_NS of CPU without queueing (no slot).
 */
static long queue_round(void *(*fn)(void *))
{
	pthread_t t;
	uint32_t v;
	long slot = -1;

	lk_qspin_lock(&L);
	/* relaxed: the lock is ours; the bit only makes arrivals queue (no data behind it) */
	atomic_fetch_or_explicit(&L.val, LK_QSPIN_PENDING, memory_order_relaxed);
	CHECK_EQ(pthread_create(&t, &small_stack, fn, NULL), 0);
	for (unsigned polls = 0;; polls++) {
		v = word();
		if (v & LK_QSPIN_TAIL_MASK) {
			slot = (long)(v >> LK_QSPIN_TAIL_SLOT_SHIFT) - 1;
			break;
		}
		if (polls % 64 == 63 && cpu_ns(t) > NO_TAIL_CPU_NS)
			break;	/* spinning on trylock: it found no slot */
		sched_yield();
	}
	/* relaxed: as above; the queue head waits for pending and locked to clear, unlock releases */
	atomic_fetch_and_explicit(&L.val, ~LK_QSPIN_PENDING, memory_order_relaxed);
	CHECK_EQ(lk_qspin_unlock(&L), 0);
	pthread_join(t, NULL);
	return slot;
}

int main(void)
{
	unsigned queued = 0;
	long slot, max_slot = -1;

#if defined(LOCKLAB_SANITIZE_thread)
	printf("test_qspin_slot_leak: skipped under ThreadSanitizer (it owns the last destructor round)\n");
	return 77;
#endif
	lkt_watchdog(900);
	CHECK_EQ(pthread_attr_init(&small_stack), 0);
	CHECK_EQ(pthread_attr_setstacksize(&small_stack, 256 * 1024), 0);

	/* a thread queues and exits normally: creates the qspinlock's key (before ours) and gives its
	 * slot back */
	slot = queue_round(queue_once);
	CHECK(slot >= 0);
	CHECK_EQ(pthread_key_create(&key, dtor), 0);

	for (unsigned i = 0; i < LK_QSPIN_MAX_THREADS + EXTRA; i++) {
		slot = queue_round(leaker);
		if (slot < 0) {
			fprintf(stderr, "thread %u, queueing in its last TLS destructor round after %u others did, "
				"found no node slot and spins on trylock: slots of dead threads were never "
				"given back\n", i + 1, i);
			CHECK(slot >= 0);
			break;
		}
		CHECK(slot < (long)LK_QSPIN_MAX_THREADS);
		queued++;
		if (slot > max_slot)
			max_slot = slot;
	}
	printf("%u threads queued from their last destructor round; highest slot used %ld of %u\n",
	       queued, max_slot, LK_QSPIN_MAX_THREADS);

	/* and a thread that exits normally still queues (the pool is not left exhausted) */
	slot = queue_round(queue_once);
	CHECK(slot >= 0);

	CHECK_EQ(word(), 0);
	return lkt_done("test_qspin_slot_leak");
}
