/* SPDX-License-Identifier: MIT */
/*
 * tests/hooks/test_hook_mutex_ask.c - the spinner's ask (lk_mutex_set_ask(1); src/mutex.c: SK, UA,
 * AK, SW; invariant 10), with its windows held open by the mutex.asked pause point (the spinner owns
 * S and A and is about to look at the word again; a pause there costs none of its rounds).
 *
 * 1. The handover in flight. main holds m; T spins, asks, and is held at mutex.asked. main unlocks:
 *    the unlock hands T the lock (UA: S cleared, L and A kept) and wakes nobody. O (the old owner
 *    coming back, as at 2 threads with nothing outside the lock) locks: it must neither take the
 *    lock nor claim S while A says a handover is in flight - it parks. T goes on: it acknowledges
 *    (AK), owns m, finds nobody else inside, unlocks (waking O), and O gets m.
 *    Mutant check: with C ignoring A (models/mutex.pml ASK_NO_GUARD), O claims S here and T reads
 *    it as "not handed yet".
 * 2. An owed waiter goes first. main holds m; C waits on a condvar with m; T asks and is held.
 *    main signals (C is requeued onto m: owed, H = 1, P, Q = 1, beside T's A and S) and unlocks:
 *    the lock must go to C (UH), not to T (UA needs H == 0). T goes on (it withdraws if it still
 *    sees H, or asks on and is handed m by C's unlock); C runs its critical section first, then T.
 * 3. A timed-out ask. main holds m; T's timedlock (deadline 5 ms ahead, 15 under check-arm64's
 *    emulator) asks and is held until the deadline has passed; it withdraws (SW) and returns
 *    ETIMEDOUT, leaving neither A nor S behind; main's unlock then leaves the word empty. A T that
 *    timed out before it asked (it started late) is tried again, up to 10 times.
 * 4. Asks that go unanswered again and again silence the slot. Three times: main holds m; U spins,
 *    asks, gets no handover within its ask's time (10 us), withdraws and parks; main unlocks, U
 *    takes m and leaves. Then V spins on m, held by main, alone: it must not ask (asks that often go
 *    unanswered say the owner is not running; no ask for ASK_QUIET_NS, 10 ms). A round in which V
 *    parked more than 5 ms after the last U proves nothing (the quiet time may have run out), and
 *    so does one in which V asked (seen under qemu): either is retried; one silenced attempt in 20
 *    is required (without the rule V asks in every one).
 * 5. With the switch off (lk_mutex_set_ask(0), the default) a spinner in round 1's position never
 *    asks: it spins, yields and parks.
 * First, hk_mutex_prime_ask() turns the ask on and teaches m's side-table slot that spins on m do
 * not find it free (a spinner asks only then). The rounds run with spin_min_ns 1 us and spin_max_ns
 * 10 ms, so T asks (after 1 us) long before it would give up on its own. Each round first sleeps
 * 30 ms: an ask of the round before may have silenced the slot. Skipped on one CPU.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "hooklab.h"
#include "locklab/cond.h"
#include "locklab/mutex.h"

#define L LK_MUTEX_LOCKED
#define P LK_MUTEX_PARKED
#define S LK_MUTEX_SPINNING
#define A LK_MUTEX_ASKED

enum { ROLE_NONE, ROLE_T, ROLE_O, ROLE_C };

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static lk_cond_t cv = LK_COND_INITIALIZER;
static __thread int role = ROLE_NONE;
static struct hk_gate gate;		/* T held at its first mutex.asked of a round */
static _Atomic int in_cs;		/* threads inside m's critical section */
static _Atomic int order[8], norder;	/* who entered m, in order (round 4: up to 4 a round) */
static _Atomic int c_waiting, o_started;
static _Atomic int t_result = -1;
static struct timespec t_deadline;

static uint32_t word(void)
{
	return hk_word(&m);
}

static void on_hook(const char *point, void *arg)
{
	if (arg != &m || role != ROLE_T || !hk_is(point, "mutex.asked") || hk_gate_is_held(&gate))
		return;
	hk_gate_hold(&gate);
}

static void critical_section(int who)
{
	CHECK_EQ(atomic_fetch_add(&in_cs, 1), 0);	/* nobody else inside */
	CHECK(word() & L);
	int k = atomic_fetch_add(&norder, 1);

	CHECK(k < 8);
	if (k < 8)
		atomic_store(&order[k], who);
	CHECK_EQ(atomic_fetch_sub(&in_cs, 1), 1);
}

static void *locker(void *arg)
{
	role = (int)(intptr_t)arg;
	if (role == ROLE_O)
		atomic_store(&o_started, 1);
	lk_mutex_lock(&m);
	critical_section(role);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

static void *cond_waiter(void *arg)
{
	(void)arg;
	role = ROLE_C;
	lk_mutex_lock(&m);
	atomic_store(&c_waiting, 1);	/* set under m: main's lock below comes after our wait began */
	CHECK_EQ(lk_cond_wait(&cv, &m), 0);
	critical_section(ROLE_C);
	CHECK_EQ(lk_mutex_unlock(&m), 0);
	return NULL;
}

static void *timed_locker(void *arg)
{
	(void)arg;
	role = ROLE_T;
	atomic_store(&t_result, lk_mutex_timedlock(&m, CLOCK_MONOTONIC, &t_deadline));
	return NULL;
}

static bool t_held(void) { return hk_gate_is_held(&gate); }
static bool o_parked(void) { return atomic_load(&o_started) && hk_queued(&m) == 1; }
static bool c_requeued(void) { return hk_queued(&m) == 1 && (word() & LK_MUTEX_OWED_MASK); }
static bool all_done(void) { return atomic_load(&norder) == 2; }

static void reset_round(void)
{
	/*
	 * An ask of the round before may have gone unanswered (round 2's T, when C takes longer than
	 * its ask to run): that silences the slot for ASK_QUIET_NS (10 ms). Let it pass.
	 */
	struct timespec quiet = { 0, 30000000 };

	nanosleep(&quiet, NULL);
	hk_gate_reset(&gate);
	atomic_store(&norder, 0);
	atomic_store(&o_started, 0);
	atomic_store(&c_waiting, 0);
}

/* 1: the handover in flight */
static void round_handover(void)
{
	pthread_t t, o;

	reset_round();
	lk_mutex_lock(&m);
	CHECK_EQ(pthread_create(&t, NULL, locker, (void *)(intptr_t)ROLE_T), 0);
	hk_wait(t_held, "T's ask (mutex.asked)");
	CHECK_EQ(word() & (L | S | A | P), L | S | A);
	CHECK_EQ(lk_mutex_unlock(&m), 0);		/* UA */
	CHECK_EQ(word() & (L | S | A | P), L | A);	/* handed over, not acknowledged, nobody woken */
	CHECK_EQ(pthread_create(&o, NULL, locker, (void *)(intptr_t)ROLE_O), 0);
	hk_wait(o_parked, "O parking behind the handover");
	CHECK_EQ(word() & (L | S | A | P), L | A | P);	/* O took neither the lock nor S */
	CHECK_EQ(atomic_load(&norder), 0);
	hk_gate_open(&gate);				/* T acknowledges and owns m */
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(pthread_join(o, NULL), 0);
	CHECK_EQ(atomic_load(&norder), 2);
	CHECK_EQ(atomic_load(&order[0]), ROLE_T);
	CHECK_EQ(atomic_load(&order[1]), ROLE_O);
	CHECK_EQ(word(), 0);
}

/* 2: an owed waiter goes first */
static void round_owed(void)
{
	pthread_t c, t;

	reset_round();
	CHECK_EQ(pthread_create(&c, NULL, cond_waiter, NULL), 0);
	while (!atomic_load(&c_waiting))
		sched_yield();
	lk_mutex_lock(&m);				/* C is parked on cv: it released m */
	CHECK_EQ(pthread_create(&t, NULL, locker, (void *)(intptr_t)ROLE_T), 0);
	hk_wait(t_held, "T's ask (mutex.asked)");
	CHECK_EQ(lk_cond_signal(&cv), 0);		/* C requeued onto m, owed */
	hk_wait(c_requeued, "C requeued onto m");
	CHECK_EQ(word() & (L | S | A), L | S | A);
	CHECK_EQ(lk_mutex_unlock(&m), 0);		/* must be UH to C, not UA to T */
	hk_gate_open(&gate);
	hk_wait(all_done, "C and T through m");
	CHECK_EQ(pthread_join(c, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	if (atomic_load(&order[0]) != ROLE_C)
		fprintf(stderr, "the spinner's ask took m past the owed condvar waiter\n");
	CHECK_EQ(atomic_load(&order[0]), ROLE_C);
	CHECK_EQ(atomic_load(&order[1]), ROLE_T);
	CHECK_EQ(word(), 0);
}

static bool t_held_or_done(void) { return t_held() || atomic_load(&t_result) != -1; }

/*
 * 3: a timed-out ask withdraws. An attempt whose T timed out before it asked - it started late,
 * past its deadline (seen under qemu beside other tests) - is run again.
 */
static void round_timeout(void)
{
	int attempt;

	for (attempt = 0; attempt < 10; attempt++) {
		pthread_t t;

		reset_round();
		atomic_store(&t_result, -1);
		lk_mutex_lock(&m);
		t_deadline = lkt_deadline_in(CLOCK_MONOTONIC, 5000000ll * lkt_timeout_scale());
		CHECK_EQ(pthread_create(&t, NULL, timed_locker, NULL), 0);
		hk_wait(t_held_or_done, "T's ask (mutex.asked) or its time-out");
		if (!t_held()) {
			CHECK_EQ(pthread_join(t, NULL), 0);
			CHECK_EQ(atomic_load(&t_result), ETIMEDOUT);
			CHECK_EQ(word() & (L | S | A), L);
			CHECK_EQ(lk_mutex_unlock(&m), 0);
			fprintf(stderr, "round 3, attempt %d: T timed out before it asked; again\n", attempt);
			continue;
		}
		CHECK_EQ(word() & (L | S | A), L | S | A);
		while (lkt_now_ns(CLOCK_MONOTONIC) < (uint64_t)t_deadline.tv_sec * 1000000000ull +
								 (uint64_t)t_deadline.tv_nsec + 1000000)
			sched_yield();
		hk_gate_open(&gate);				/* T sees its deadline passed: SW */
		CHECK_EQ(pthread_join(t, NULL), 0);
		CHECK_EQ(atomic_load(&t_result), ETIMEDOUT);
		CHECK_EQ(word() & (L | S | A), L);		/* no A or S left behind */
		CHECK_EQ(lk_mutex_unlock(&m), 0);
		CHECK_EQ(word(), 0);
		break;
	}
	CHECK(attempt < 10);
}

static bool one_queued(void) { return hk_queued(&m) == 1; }

/* 4: asks that go unanswered again and again silence the slot for ASK_QUIET_NS */
static void round_unanswered(void)
{
	int attempt;

	for (attempt = 0; attempt < 20; attempt++) {
		pthread_t u, v;
		uint64_t t0 = 0;

		reset_round();
		hk_mutex_prime_ask(&m);		/* earlier rounds moved the slot */
		hk_mutex_policy(1000, LK_MUTEX_HANDOFF_NS_LIMIT);
		struct lk_mutex_policy p;
		CHECK_EQ(lk_mutex_get_policy(&p), 0);
		p.spin_max_ns = 10000000;
		CHECK_EQ(lk_mutex_set_policy(&p), 0);
		unsigned long asked0 = hk_count("mutex.asked");
		for (int k = 0; k < 3; k++) {
			lk_mutex_lock(&m);
			CHECK_EQ(pthread_create(&u, NULL, locker, (void *)(intptr_t)ROLE_O), 0);
			hk_wait(one_queued, "U's unanswered ask and park");
			t0 = lkt_now_ns(CLOCK_MONOTONIC);
			CHECK_EQ(lk_mutex_unlock(&m), 0);
			CHECK_EQ(pthread_join(u, NULL), 0);
		}
		unsigned long asked1 = hk_count("mutex.asked");
		CHECK(asked1 > asked0);			/* the U threads asked, and withdrew */
		lk_mutex_lock(&m);
		CHECK_EQ(pthread_create(&v, NULL, locker, (void *)(intptr_t)ROLE_O), 0);
		hk_wait(one_queued, "V's spin and park");
		uint64_t t1 = lkt_now_ns(CLOCK_MONOTONIC);
		unsigned long asked2 = hk_count("mutex.asked");
		CHECK_EQ(word() & (S | A), 0);
		CHECK_EQ(lk_mutex_unlock(&m), 0);
		CHECK_EQ(pthread_join(v, NULL), 0);
		CHECK_EQ(word(), 0);
		if (t1 - t0 > 5000000)
			continue;			/* slow machine: the quiet time may have run out */
		if (asked2 == asked1)
			break;				/* silenced */
		/*
		 * Under an emulator (check-arm64's qemu) an attempt can still see V ask; without the rule
		 * every attempt does, so one silenced attempt in 20 is what this round requires
		 */
		fprintf(stderr, "attempt %d: V asked although three asks had gone unanswered, the last "
			"%llu ns before\n", attempt, (unsigned long long)(t1 - t0));
	}
	CHECK(attempt < 20);
}

int main(void)
{
	lkt_watchdog(120);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "skip: one CPU online, lk_mutex does not spin\n");
		return 77;
	}
	hk_install(on_hook);
	hk_mutex_prime_ask(&m);		/* spins on m did not find it free: T will ask */
	hk_mutex_policy(1000, LK_MUTEX_HANDOFF_NS_LIMIT);
	struct lk_mutex_policy p;
	CHECK_EQ(lk_mutex_get_policy(&p), 0);
	p.spin_max_ns = 10000000;
	CHECK_EQ(lk_mutex_set_policy(&p), 0);

	round_handover();
	round_owed();
	round_timeout();
	round_unanswered();
	CHECK(hk_count("mutex.asked") >= 4);

	/* 5. the switch off (the default): a spinner in the same position never asks */
	CHECK_EQ(lk_mutex_set_ask(0), 0);
	CHECK_EQ(lk_mutex_get_ask(), 0);
	{
		unsigned long before = hk_count("mutex.asked");
		pthread_t t;

		reset_round();
		lk_mutex_lock(&m);
		CHECK_EQ(pthread_create(&t, NULL, locker, (void *)(intptr_t)ROLE_O), 0);
		hk_wait(one_queued, "the spinner's park with the ask off");
		CHECK_EQ(hk_count("mutex.asked"), before);
		CHECK_EQ(lk_mutex_unlock(&m), 0);
		CHECK_EQ(pthread_join(t, NULL), 0);
	}
	CHECK_EQ(atomic_load_explicit(&hk_unknown, memory_order_relaxed), 0);
	CHECK_EQ(lk_mutex_destroy(&m), 0);
	CHECK_EQ(lk_cond_destroy(&cv), 0);
	return lkt_done("test_hook_mutex_ask");
}
