/* SPDX-License-Identifier: MIT */
/*
 * tests/test_baselines.c - the baseline adapters are what their names claim.
 *
 * futex3: the three-state word walks exactly 0 -> 1 (uncontended lock) -> 0 (unlock), and under
 *   contention 1 -> 2 (a waiter announces itself before sleeping) -> 0 + wake -> 2 (the woken waiter
 *   re-acquires conservatively as "contended") -> 0. A waiter blocked in lock() really sleeps until
 *   the unlock (it cannot have acquired while the word was held).
 * glibc_*: the mutex kind and protocol were really applied: the adaptive one has glibc's adaptive
 *   kind, the PI one keeps the owner's TID in its lock word (the kernel FUTEX_LOCK_PI protocol), the
 *   normal one does neither. These peek at glibc's pthread_mutex_t internals (__data.__kind/__lock),
 *   stable since glibc 2.3 on Linux; elsewhere the checks are skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab.h"
#include "lktest.h"

static const struct lab_lock_ops *ops_of(const char *name)
{
	const struct lab_alg *a = lab_find("mutex", name);

	CHECK(a != NULL);
	if (!a)
		return NULL;
	CHECK(strcmp(a->opstype, "lock") == 0);
	CHECK(a->ops != NULL);
	return a->ops;
}

static void *new_lock(const struct lab_lock_ops *ops)
{
	void *p = NULL;

	if (posix_memalign(&p, LAB_CACHELINE, (ops->size + LAB_CACHELINE - 1) & ~(size_t)(LAB_CACHELINE - 1)))
		abort();
	memset(p, 0, ops->size);
	CHECK_EQ(ops->init ? ops->init(p) : 0, 0);
	return p;
}

/* ---- futex3 --------------------------------------------------------------------------------- */

struct f3_waiter {
	const struct lab_lock_ops *ops;
	void *lock;
	_Atomic int phase;		/* 1: about to lock, 2: holds the lock, 3: may unlock, 4: done */
	uint32_t seen_while_held;	/* the word observed by the waiter once it owns the lock */
};

static _Atomic uint32_t *f3_word(void *lock)
{
	return lock;	/* struct futex3 { _Atomic uint32_t word; }: the word is at offset 0 */
}

static uint32_t f3_load(void *lock)
{
	/* relaxed: the test only observes the state; ordering comes from the lock itself */
	return atomic_load_explicit(f3_word(lock), memory_order_relaxed);
}

static void *f3_waiter_thread(void *arg)
{
	struct f3_waiter *w = arg;

	/* release: pairs with the main thread's acquire polling of phase */
	atomic_store_explicit(&w->phase, 1, memory_order_release);
	w->ops->lock(w->lock);
	w->seen_while_held = f3_load(w->lock);
	/* release: publishes seen_while_held; pairs with the main thread's acquire poll */
	atomic_store_explicit(&w->phase, 2, memory_order_release);
	/* acquire: pairs with the main thread's release store of 3 */
	while (atomic_load_explicit(&w->phase, memory_order_acquire) != 3)
		sched_yield();
	w->ops->unlock(w->lock);
	/* release: our unlock happens-before the main thread's checks after it sees 4 */
	atomic_store_explicit(&w->phase, 4, memory_order_release);
	return NULL;
}

static void test_futex3(void)
{
	const struct lab_lock_ops *ops = ops_of("futex3");
	struct f3_waiter w = { 0 };
	pthread_t th;

	if (!ops)
		return;
	void *lock = new_lock(ops);

	CHECK_EQ(f3_load(lock), 0);
	ops->lock(lock);
	CHECK_EQ(f3_load(lock), 1);		/* uncontended: 0 -> 1, no waiter announced */
	CHECK_EQ(ops->trylock(lock), EBUSY);
	ops->unlock(lock);
	CHECK_EQ(f3_load(lock), 0);

	/* contended: a waiter turns 1 into 2 before it sleeps, and cannot get in while we hold it */
	w.ops = ops;
	w.lock = lock;
	atomic_init(&w.phase, 0);
	ops->lock(lock);
	pthread_create(&th, NULL, f3_waiter_thread, &w);
	while (f3_load(lock) != 2)
		sched_yield();	/* the waiter's xchg(2) is what we wait for; the watchdog bounds it */
	/* acquire: pairs with the waiter's release stores of phase */
	CHECK(atomic_load_explicit(&w.phase, memory_order_acquire) != 2);	/* not inside yet */
	ops->unlock(lock);			/* 2 -> 0 and FUTEX_WAKE */
	while (atomic_load_explicit(&w.phase, memory_order_acquire) != 2)
		sched_yield();
	CHECK_EQ(w.seen_while_held, 2);		/* the woken waiter re-marks the lock as contended */
	CHECK_EQ(ops->trylock(lock), EBUSY);
	/* release: pairs with the waiter's acquire poll */
	atomic_store_explicit(&w.phase, 3, memory_order_release);
	pthread_join(th, NULL);
	CHECK_EQ(f3_load(lock), 0);
	CHECK_EQ(ops->trylock(lock), 0);
	CHECK_EQ(f3_load(lock), 1);
	ops->unlock(lock);
	free(lock);
	printf("  futex3: 0/1/2 transitions ok\n");
}

/* ---- glibc ---------------------------------------------------------------------------------- */

static void test_glibc(void)
{
#if defined(__GLIBC__) && defined(__linux__)
	static const struct {
		const char *name;
		bool adaptive, pi;
	} kinds[] = {
		{ "glibc_normal", false, false },
		{ "glibc_adaptive", true, false },
		{ "glibc_pi", false, true },
	};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const struct lab_lock_ops *ops = ops_of(kinds[i].name);

		if (!ops)
			continue;
		CHECK_EQ(ops->size, sizeof(pthread_mutex_t));
		pthread_mutex_t *m = new_lock(ops);
		int kind = m->__data.__kind;

		CHECK_EQ((kind & 0x7f) == PTHREAD_MUTEX_ADAPTIVE_NP, kinds[i].adaptive);
		ops->lock(m);
		/* only this thread touches m: a plain read of the word is race-free */
		unsigned word = (unsigned)m->__data.__lock;
		if (kinds[i].pi)
			CHECK_EQ(word & FUTEX_TID_MASK, (unsigned)gettid());
		else
			CHECK_EQ(word, 1);	/* glibc's 0/1/2 word, like futex3 */
		CHECK_EQ(ops->trylock(m), EBUSY);
		ops->unlock(m);
		CHECK_EQ(m->__data.__lock, 0);
		CHECK_EQ(ops->trylock(m), 0);
		ops->unlock(m);
		ops->destroy(m);
		free(m);
		printf("  %s: kind %#x ok\n", kinds[i].name, kind);
	}
#else
	printf("  glibc internals checks skipped (not glibc on Linux)\n");
#endif
}

int main(void)
{
	lkt_watchdog(30);
	test_futex3();
	test_glibc();
	return lkt_done("test_baselines");
}
