/* SPDX-License-Identifier: MIT */
/*
 * tests/test_mutex_ask_stress.c - the spinner's ask (lk_mutex_set_ask(1)) under stress, in every
 * build variant (normal, TSan, ASan, UBSan): two threads alternate on one mutex with critical
 * sections long enough that spins do not find it free (so the spinner asks and unlocks hand it
 * over, UA/AK), while a third thread disturbs them with trylock, timedlock (deadlines of 0-20 us,
 * so that some asks are withdrawn at the caller's deadline) and a condvar it signals and waits on
 * with a short timeout (requeues add owed waiters beside a pending ask). The condvar waits are a
 * fourth thread's: with the disturber waiting itself, its own signals never found a waiter, and no
 * requeue ever happened (0 in 28 measured runs).
 *
 * Checks: a non-atomic counter incremented inside every critical section equals the number of
 * acquisitions (mutual exclusion; TSan also sees any missing happens-before from UA to AK), the
 * word is 0 at the end, and the handover really ran: owners saw ASKED in the word at the end of
 * ASKS_MIN critical sections, and the condvar waiter was requeued onto m at least once (a round
 * short of either is run again, up to ROUNDS times, then the test fails). The first rounds teach
 * the side table that spins do not find the lock free; where another process takes the pair's
 * CPUs, their asks go wrong and the side table silences them (by design) until it stops: beside
 * test_mutex_handoff a TSan run saw 0-1 sightings in each of 10 rounds of about 50 ms, hence
 * ROUNDS. One sighting was not enough: beside another test a round passed with 3 sightings and
 * not one handover to the pair (its asks withdrawn).
 * Skipped on one CPU (no spinning there) and when pinned to one (make test-pinned).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <locklab/cond.h>
#include <locklab/mutex.h>

#include "lktest.h"

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static lk_cond_t cv = LK_COND_INITIALIZER;
static unsigned long counter;			/* guarded by m */
static _Atomic unsigned long acquisitions;
static _Atomic int stop;
static _Atomic unsigned long seen_ask, requeued;	/* ASKED sightings; condvar waits ended by a signal */
#define ASKS_MIN 100
#define ROUNDS 100		/* 50-100 ms each */

static void busy_ns(uint64_t ns)
{
	uint64_t end = lkt_now_ns(CLOCK_MONOTONIC) + ns;

	while (lkt_now_ns(CLOCK_MONOTONIC) < end)
		;
}

static void critical_section(void)
{
	counter++;
	busy_ns(1000);		/* longer than the owner's gap: spins do not find the lock free */
	/* the other thread asked while we hold it: our unlock hands it over. relaxed: observing a bit */
	if (atomic_load_explicit(&m.word, memory_order_relaxed) & LK_MUTEX_ASKED)
		atomic_fetch_add_explicit(&seen_ask, 1, memory_order_relaxed);	/* relaxed: a count */
	atomic_fetch_add_explicit(&acquisitions, 1, memory_order_relaxed);	/* relaxed: a count */
}

static void *pair_thread(void *arg)
{
	unsigned long n = (unsigned long)(uintptr_t)arg;

	for (unsigned long i = 0; i < n; i++) {
		lk_mutex_lock(&m);
		critical_section();
		CHECK_EQ(lk_mutex_unlock(&m), 0);
	}
	return NULL;
}

/*
 * The condvar waiter: waits up to 20 ms, so that the disturber's signals (every ~15 ms) find it and
 * requeue it onto m, owed (beside a pending ask when one is pending: tests/hooks/test_hook_mutex_ask.c
 * round 2 makes sure of that case). It waits again at once: parked on cv it does not disturb the
 * pair, but each of its lock calls that finds S taken keeps the pair from asking for 10 ms.
 */
static void *cond_waiter(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {	/* relaxed: a flag */
		struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, 20000000);

		lk_mutex_lock(&m);
		critical_section();
		int e = lk_cond_timedwait(&cv, &m, CLOCK_MONOTONIC, &dl);	/* re-acquires m */

		CHECK(e == 0 || e == ETIMEDOUT);
		if (e == 0)
			/* relaxed: a count */
			atomic_fetch_add_explicit(&requeued, 1, memory_order_relaxed);
		critical_section();
		CHECK_EQ(lk_mutex_unlock(&m), 0);
	}
	return NULL;
}

static void *disturber(void *arg)
{
	unsigned r = 12345, op = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {	/* relaxed: a flag */
		r = r * 1103515245u + 12345u;
		switch (op++ % 3) {	/* in turn: a signal every ~15 ms (TSan rounds are short) */
		case 0:
			if (lk_mutex_trylock(&m) == 0) {
				critical_section();
				CHECK_EQ(lk_mutex_unlock(&m), 0);
			}
			break;
		case 1: {
			struct timespec dl = lkt_deadline_in(CLOCK_MONOTONIC, (r >> 8) % 20000);
			int e = lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &dl);

			CHECK(e == 0 || e == ETIMEDOUT);
			if (e == 0) {
				critical_section();
				CHECK_EQ(lk_mutex_unlock(&m), 0);
			}
			break;
		}
		default:
			lk_mutex_lock(&m);
			CHECK_EQ(lk_cond_signal(&cv), 0);	/* a waiter requeued onto m, owed */
			critical_section();
			CHECK_EQ(lk_mutex_unlock(&m), 0);
		}
		/*
		 * Seldom: a thread that finds S taken keeps the pair from asking for 10 ms (a third
		 * thread; ASK_QUIET_NS), so most of the run is the pair's handovers
		 */
		usleep(5000);
	}
	return NULL;
}

int main(void)
{
	unsigned long n = lkt_sanitized() ? 10000 : 50000;
	int round;

	lkt_watchdog(300);
	cpu_set_t cpus;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "skip: one CPU online, lk_mutex does not spin\n");
		return 77;
	}
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 && CPU_COUNT(&cpus) < 2) {
		/* make test-pinned: an owner always shares the asker's CPU, so no ask is answered */
		fprintf(stderr, "skip: pinned to one CPU, the pair cannot run side by side\n");
		return 77;
	}
	CHECK_EQ(lk_mutex_set_ask(1), 0);
	for (round = 0; round < ROUNDS; round++) {
		pthread_t a, b, d, c;

		atomic_store(&stop, 0);
		atomic_store(&seen_ask, 0);
		atomic_store(&requeued, 0);
		atomic_store(&acquisitions, 0);
		counter = 0;
		CHECK_EQ(pthread_create(&d, NULL, disturber, NULL), 0);
		CHECK_EQ(pthread_create(&c, NULL, cond_waiter, NULL), 0);
		CHECK_EQ(pthread_create(&a, NULL, pair_thread, (void *)(uintptr_t)n), 0);
		CHECK_EQ(pthread_create(&b, NULL, pair_thread, (void *)(uintptr_t)n), 0);
		CHECK_EQ(pthread_join(a, NULL), 0);
		CHECK_EQ(pthread_join(b, NULL), 0);
		atomic_store(&stop, 1);
		CHECK_EQ(pthread_join(d, NULL), 0);
		CHECK_EQ(pthread_join(c, NULL), 0);
		CHECK_EQ(counter, atomic_load(&acquisitions));	/* no increment lost: mutual exclusion */
		CHECK_EQ(atomic_load_explicit(&m.word, memory_order_relaxed), 0);
		if (atomic_load(&seen_ask) >= ASKS_MIN && atomic_load(&requeued))
			break;
		fprintf(stderr, "round %d: ASKED seen %lu times, %lu condvar waits requeued; again\n", round,
			atomic_load(&seen_ask), atomic_load(&requeued));
	}
	CHECK(round < ROUNDS);
	printf("test_mutex_ask_stress: round %d: ASKED seen %lu times, %lu condvar waits requeued\n", round,
	       atomic_load(&seen_ask), atomic_load(&requeued));
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	CHECK_EQ(lk_cond_destroy(&cv), 0);
	return lkt_done("test_mutex_ask_stress");
}
