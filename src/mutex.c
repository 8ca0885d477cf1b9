/* SPDX-License-Identifier: MIT */
/*
 * src/mutex.c - lk_mutex slow paths: learned spinning by one awake waiter, parking in the parking
 * lot, and handoff to a waiter that waited too long.
 *
 * Lock word (see locklab/mutex.h): L = LOCKED, P = PARKED, S = SPINNING.
 *
 *   L  a thread owns the mutex. Set by fetch_or (lock, trylock: one RMW, it keeps P and S) or by the
 *      spinner's CAS; cleared by unlock, or by the unpark callback on the unlocker's behalf.
 *   P  threads may be parked on &m->word. Set by a waiter (CAS, lock held) before it parks; cleared
 *      only under the address's bucket lock (the unpark callback when no thread remains, a timed-out
 *      last waiter), so a waiter's validate() - which re-checks "L and P" under the same bucket lock
 *      - can never sleep after the wakeup that was meant for it: no lost wakeup.
 *   S  exactly one waiter is awake and spinning on the word: a newcomer that claimed it, or the
 *      thread an unlock just woke (the unlocker sets S for it and says so with TOKEN_SPIN - seed 004
 *      patch 3, "a woken waiter goes back to spinning"). Others see S and park instead of spinning
 *      (seed 004: "spinners and sleepers use separate locks": the word is the spinner slot, the
 *      parking lot the sleeper queue). While S is set an unlock wakes nobody: the spinner takes the
 *      lock. The spinner clears S when it takes the lock (one CAS: +L -S) or gives up (one CAS, only
 *      while L is set: -S +P, then it parks).
 *
 * States (L,P,S) and the transitions that matter:
 *
 *                 lock: fetch_or L                     waiter: CAS +S, spin
 *    +---------+ -------------> +---------+ ----------------------------------> +---------+
 *    | 0,0,0   |                | L,0,0   |                                     | L,*,S   |
 *    +---------+ <------------- +---------+ <---------------------------------- +---------+
 *         ^       unlock: CAS -L       |      spinner takes it: CAS +L -S        |      |
 *         |                            | waiter: CAS +P, park    give up: CAS -S +P |      | unlock: CAS -L
 *         |                            v                                          |      v (no wake)
 *         |                       +---------+ <-----------------------------------+ +---------+
 *         |      last one woken:  | L,P,0   |                                       | 0,P,S   |
 *         +---------------------- +---------+ ------------------------------------> +---------+
 *           unpark cb: -L -P           |       unpark cb, one woken: -L +S, TOKEN_SPIN
 *                                      |
 *                                      +--> waited > handoff_ns (rate-limited): L kept, TOKEN_HANDOFF
 *
 * Invariants:
 *  1. L is set exactly while some thread owns the mutex; a handoff never clears it.
 *  2. "!L && P" implies a thread that is awake will take the lock: the spinner (S), or a thread
 *     just unparked with S already held by another spinner. The spinner never clears S while L is
 *     clear: if it finds the lock free it takes it instead of giving up. Whoever takes the lock
 *     with P set and S clear wakes one at unlock.
 *  3. A waiter parks only after validate() saw L and P under the bucket lock; an unlock that clears
 *     L while P is set either unparks (under the bucket lock) or leaves an awake spinner (S).
 *  4. At most one thread is woken per "spinner round": an unlock wakes only when S is clear, and the
 *     woken thread holds S until it gets the lock or parks again (Go's mutexWoken, glibc's one
 *     wake per contended unlock). Parked waiters rotate through S in FIFO order, and the head is
 *     handed the lock (lock never released in between) once its total wait, counted from its
 *     first park (its park token), exceeds handoff_ns - at most once per handoff_ns per side-table
 *     slot, or every wake would be a handoff once many threads wait (a convoy).
 *
 * Learned spin budget: 4 bytes have no room for statistics, so a 512-slot side table hashed by lock
 * address keeps, per slot, the EWMA of how many relax rounds successful spinners waited (relaxed
 * loads and stores: it is a heuristic, a lost update only costs a slightly different budget; two
 * locks sharing a slot share an estimate) and the time of the last handoff. Budget = clamp(2 *
 * estimate + min, min, max) rounds; a failed spin decays the estimate by a quarter, so a lock whose
 * holders stay long quickly stops being spun on, and one whose waits shrink grows its budget again
 * through successful spins. Spinning is disabled on a single-CPU machine.
 *
 * What 4 bytes cannot do: know whether the owner is running (the kernel's and seed 004's spinners
 * stop when the owner sleeps; ours stops at its budget instead), or who the owner is (an unlock by a
 * non-owner is not detected).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "locklab/mutex.h"
#include "locklab/park.h"
#include "locklab/relax.h"
#include "locklab/test_hooks.h"

#define L LK_MUTEX_LOCKED
#define P LK_MUTEX_PARKED
#define S LK_MUTEX_SPINNING

/* Unpark tokens (LK_TOKEN_NORMAL: woken, compete for the lock like anybody else) */
#define TOKEN_HANDOFF	((lk_token_t)1)	/* the lock is handed over, still LOCKED, to the woken thread */
#define TOKEN_SPIN	((lk_token_t)2)	/* the unlocker set S for the woken thread: it is the spinner */

/* ---- policy ------------------------------------------------------------------------------------ */

static struct {
	_Atomic uint32_t spin_min_ns;
	_Atomic uint32_t spin_max_ns;
	_Atomic uint64_t handoff_ns;
} policy = {
	.spin_min_ns = 1000,
	.spin_max_ns = 20000,
	.handoff_ns = 1000000,
};

int lk_mutex_get_policy(struct lk_mutex_policy *p)
{
	if (!p)
		return EINVAL;
	/* relaxed: independent tuning knobs, no data is published through them */
	p->spin_min_ns = atomic_load_explicit(&policy.spin_min_ns, memory_order_relaxed);
	p->spin_max_ns = atomic_load_explicit(&policy.spin_max_ns, memory_order_relaxed);
	p->handoff_ns = atomic_load_explicit(&policy.handoff_ns, memory_order_relaxed);
	return 0;
}

int lk_mutex_set_policy(const struct lk_mutex_policy *p)
{
	if (!p || p->spin_min_ns > p->spin_max_ns || p->spin_max_ns > LK_MUTEX_SPIN_MAX_NS_LIMIT ||
	    p->handoff_ns > LK_MUTEX_HANDOFF_NS_LIMIT)
		return EINVAL;
	/* relaxed: see lk_mutex_get_policy; a slow path may see a mix of old and new (documented) */
	atomic_store_explicit(&policy.spin_min_ns, p->spin_min_ns, memory_order_relaxed);
	atomic_store_explicit(&policy.spin_max_ns, p->spin_max_ns, memory_order_relaxed);
	atomic_store_explicit(&policy.handoff_ns, p->handoff_ns, memory_order_relaxed);
	return 0;
}

/* ---- side table: learned spin estimate and last handoff, hashed by lock address ----------------- */

#define SLOT_BITS 9

struct slot {
	_Atomic uint32_t est;		/* EWMA of relax rounds a successful spinner waited, x16 fixed point */
	_Atomic uint64_t last_handoff;	/* CLOCK_MONOTONIC ns of the last handoff, rate limit */
};

static struct slot slots[1u << SLOT_BITS] __attribute__((aligned(64)));

static inline struct slot *slot_of(const lk_mutex_t *m)
{
	uint64_t h = (uint64_t)(uintptr_t)m * 0x9e3779b97f4a7c15ull;

	return &slots[h >> (64 - SLOT_BITS)];
}

/* ---- time and spin calibration ----------------------------------------------------------------- */

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* picoseconds per lk_cpu_relax(), measured once; 0 = not yet */
static _Atomic uint32_t relax_ps;
/* 1 when spinning can pay at all (more than one CPU online); 0 unknown, 2 no */
static _Atomic uint32_t multi_cpu;

static __attribute__((cold, noinline)) uint32_t calibrate(void)
{
	uint64_t best = UINT64_MAX;

	for (int round = 0; round < 3; round++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		for (int i = 0; i < 256; i++)
			lk_cpu_relax();
		uint64_t dt = now_ns(CLOCK_MONOTONIC) - t0;
		if (dt < best)
			best = dt;
	}
	uint64_t ps = best * 1000 / 256;
	if (ps < 100)
		ps = 100;	/* a compiler barrier or a nop: count it as 0.1 ns */
	if (ps > 1000000)
		ps = 1000000;	/* preempted while measuring: assume 1 us, the next call remeasures */
	uint32_t r = (uint32_t)ps;
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	/*
	 * relaxed (both): cached measurements; racing threads store similar values, and a reader that
	 * sees relax_ps before multi_cpu merely skips spinning once
	 */
	atomic_store_explicit(&multi_cpu, n > 1 ? 1 : 2, memory_order_relaxed);
	atomic_store_explicit(&relax_ps, ps == 1000000 ? 0 : r, memory_order_relaxed);
	return r;
}

struct spin_limits {
	uint32_t min, max;	/* relax rounds */
};

static inline struct spin_limits spin_limits(void)
{
	struct spin_limits sl = { 0, 0 };
	/* relaxed: cached measurement, see calibrate() */
	uint32_t ps = atomic_load_explicit(&relax_ps, memory_order_relaxed);

	if (!ps)
		ps = calibrate();
	/* relaxed: cached measurement, see calibrate() */
	if (atomic_load_explicit(&multi_cpu, memory_order_relaxed) != 1)
		return sl;
	/* relaxed: policy knobs, see lk_mutex_get_policy */
	sl.min = (uint32_t)((uint64_t)atomic_load_explicit(&policy.spin_min_ns, memory_order_relaxed) *
			    1000 / ps);
	sl.max = (uint32_t)((uint64_t)atomic_load_explicit(&policy.spin_max_ns, memory_order_relaxed) *
			    1000 / ps);
	return sl;
}

/* ---- lock --------------------------------------------------------------------------------------- */

enum { SPIN_ACQUIRED, SPIN_GAVE_UP };

#ifndef SPIN_BACKOFF_MAX
#define SPIN_BACKOFF_MAX 16	/* relaxes between two reads of the word, at most (~0.5 us here) */
#endif

/*
 * We own S. Spin until the lock is free and we take it (L set, S cleared in one CAS), or until the
 * budget runs out: then clear S and set P in one CAS while L is set (invariant 2). *vp: the last
 * value seen, updated.
 */
static int spin(lk_mutex_t *m, struct slot *sl, struct spin_limits lim, uint32_t *vp)
{
	/* relaxed: a heuristic estimate, see the header comment */
	uint32_t est = atomic_load_explicit(&sl->est, memory_order_relaxed);
	uint64_t budget = 2ull * (est >> 4) + lim.min;
	uint32_t v = *vp;
	uint64_t i;
	uint32_t delay = 1;

	if (budget > lim.max)
		budget = lim.max;
	for (i = 0;; i++) {
		if (!(v & L)) {
			/* acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, (v | L) & ~S,
								  memory_order_acquire,
								  memory_order_relaxed)) {
				/* EWMA, weight 1/8, x16 fixed point; relaxed: heuristic */
				int64_t e = (int64_t)est + (((int64_t)i << 4) - (int64_t)est) / 8;
				atomic_store_explicit(&sl->est, (uint32_t)(e < 0 ? 0 : e),
						      memory_order_relaxed);
				return SPIN_ACQUIRED;
			}
			continue;
		}
		if (i >= budget) {
			/* relaxed: only bits change hands; no data is published by giving up */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, (v & ~S) | P,
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
			continue;
		}
		/*
		 * Exponential backoff between reads, up to SPIN_BACKOFF_MAX relaxes: every read pulls
		 * the line to shared state and costs the owner a read-for-ownership at its next RMW;
		 * with a tiny critical section that, not the waiting, is what spinning costs.
		 */
		for (uint32_t k = 0; k < delay; k++)
			lk_cpu_relax();
		i += delay - 1;
		if (delay < SPIN_BACKOFF_MAX)
			delay <<= 1;
		LK_TEST_HOOK("mutex.spin", m);	/* test builds only: the spinner, S owned, about to look */
		/* relaxed: we only look; the CAS above is the acquire */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
	/* decay by a quarter: holders stay longer than we were willing to wait; relaxed: heuristic */
	atomic_store_explicit(&sl->est, est - est / 4, memory_order_relaxed);
	*vp = (v & ~S) | P;
	return SPIN_GAVE_UP;
}

/* validate(): under the bucket lock, sleep only if the lock is held and P is still set. */
static bool lock_validate(void *ctx)
{
	lk_mutex_t *m = ctx;
	/*
	 * relaxed: P is cleared only under this bucket lock, which we hold. An unlock that clears L
	 * with P set either unparks under this bucket lock (so it sees us queued, or we see its
	 * change) or leaves an awake spinner, whose own unlock will see P (invariants 2 and 3).
	 */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	return (v & (L | P)) == (L | P);
}

/* timed_out(): under the bucket lock; the last waiter to leave clears P. */
static void lock_timed_out(void *ctx, const void *addr, bool was_last_thread)
{
	lk_mutex_t *m = ctx;

	if (was_last_thread)
		/* relaxed: bit bookkeeping under the bucket lock; no data is published */
		atomic_fetch_and_explicit(&m->word, ~P, memory_order_relaxed);
}

static const struct lk_park_ops lock_park_ops = {
	.validate = lock_validate,
	.timed_out = lock_timed_out,
};

static inline bool deadline_passed(clockid_t clock, const struct timespec *abs)
{
	if (abs->tv_sec < 0)
		return true;
	if (abs->tv_sec > 10000000000ll)	/* year 2286+: never (and no overflow below) */
		return false;
	return now_ns(clock) >= (uint64_t)abs->tv_sec * 1000000000ull + (uint64_t)abs->tv_nsec;
}

/*
 * The contended path. own_s: we were unparked with TOKEN_SPIN, i.e. the unlocker set S for us and we
 * are the spinner (seed 004 patch 3: a woken waiter goes back to spinning), so unlocks skip waking
 * anyone else while we run (one woken waiter in flight, as glibc's and Go's mutexes do).
 */
static int lock_slow(lk_mutex_t *m, clockid_t clock, const struct timespec *abs, bool own_s,
		     lk_token_t start)
{
	struct slot *sl = slot_of(m);
	struct spin_limits lim = spin_limits();
	bool may_spin = lim.max > 0;
	/* relaxed: we only look; every transition below is a CAS */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	for (;;) {
		if (own_s) {
			own_s = false;
			if (spin(m, sl, lim, &v) == SPIN_ACQUIRED)
				return 0;
			/* gave up: S cleared, P set, L was set; sleep until woken, then spin again */
			may_spin = false;
			if (abs && deadline_passed(clock, abs))
				return ETIMEDOUT;
		}
		if (!(v & L)) {
			/* barge. acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, v | L, memory_order_acquire,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (abs && deadline_passed(clock, abs))
			return ETIMEDOUT;
		if (may_spin && !(v & S)) {
			/* become the spinner. relaxed: S is a role bit, no data */
			if (!atomic_compare_exchange_weak_explicit(&m->word, &v, v | S, memory_order_relaxed,
								   memory_order_relaxed))
				continue;
			v |= S;
			own_s = true;
			continue;
		}
		if (!(v & P)) {
			/* relaxed: bit bookkeeping; validate() re-checks it under the bucket lock */
			if (!atomic_compare_exchange_weak_explicit(&m->word, &v, v | P, memory_order_relaxed,
								   memory_order_relaxed))
				continue;
		}
		if (!start)	/* the park token: when we first parked, for the handoff decision */
			start = (lk_token_t)now_ns(CLOCK_MONOTONIC) | 1;
		lk_token_t token = LK_TOKEN_NORMAL;
		int r = lk_park(m, &lock_park_ops, m, start, abs, clock, &token);

		if (r == LK_PARK_UNPARKED && token == TOKEN_HANDOFF) {
			/* acquire: pairs with the release RMW in unlock_callback() that handed L to us */
			(void)atomic_load_explicit(&m->word, memory_order_acquire);
			return 0;
		}
		if (r == LK_PARK_TIMEDOUT)
			return ETIMEDOUT;
		if (r < 0)
			return -r;
		if (r == LK_PARK_UNPARKED) {
			may_spin = lim.max > 0;
			own_s = token == TOKEN_SPIN;
		}
		/* relaxed: we only look */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
}

void lk_mutex_lock_slow(lk_mutex_t *m)
{
	lock_slow(m, CLOCK_MONOTONIC, NULL, false, 0);
}

void lk_mutex_lock_unparked(lk_mutex_t *m, uintptr_t token)
{
	if (token == TOKEN_HANDOFF) {
		/* acquire: pairs with the release RMW in unlock_callback() that handed L to us */
		(void)atomic_load_explicit(&m->word, memory_order_acquire);
		return;
	}
	if (token == TOKEN_SPIN) {
		lock_slow(m, CLOCK_MONOTONIC, NULL, true, 0);
		return;
	}
	lk_mutex_lock(m);
}

int lk_mutex_timedlock(lk_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	if (!m || !abs || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) || abs->tv_nsec < 0 ||
	    abs->tv_nsec >= 1000000000L)
		return EINVAL;
	/* acquire: pairs with the release of the previous owner's unlock (see lk_mutex_lock) */
	if (__builtin_expect(atomic_fetch_or_explicit(&m->word, L, memory_order_acquire) & L, 0))
		return lock_slow(m, clock, abs, false, 0);
	return 0;
}

/* ---- unlock ------------------------------------------------------------------------------------- */

struct unlock_ctx {
	lk_mutex_t *m;
	struct slot *sl;
	uint64_t now;		/* CLOCK_MONOTONIC, taken before the bucket lock */
	uint64_t handoff_ns;
	lk_token_t head;	/* park token of the thread being unparked */
	bool seen;		/* the filter has picked its one thread */
	bool called;		/* the callback ran */
};

/*
 * Unpark exactly the oldest waiter, remembering its park token: when it first parked (| 1), or 0 for
 * a condvar waiter requeued onto the mutex (start unknown: never handed the lock on time).
 */
static enum lk_filter_op unlock_filter(void *ctx, lk_token_t park_token)
{
	struct unlock_ctx *u = ctx;

	if (u->seen)
		return LK_FILTER_STOP;
	u->seen = true;
	u->head = park_token;
	return LK_FILTER_UNPARK;
}

/* Under the bucket lock. L (ours) -> handed over, or released with P kept iff others remain. */
static lk_token_t unlock_callback(void *ctx, struct lk_unpark_result r)
{
	struct unlock_ctx *u = ctx;
	lk_mutex_t *m = u->m;

	u->called = true;
	/* truncation of the token on 32-bit: the modular difference stays right for waits < 4 s */
	/*
	 * Hand over when the woken thread has waited past the bound, at most once per bound per slot:
	 * with many waiters every head has waited that long, and handing over every time would turn
	 * the lock into a convoy (one context switch per acquisition). relaxed: a heuristic rate.
	 */
	if (r.unparked_threads && u->head != 0 && (uintptr_t)(u->now - u->head) >= u->handoff_ns &&
	    u->now - atomic_load_explicit(&u->sl->last_handoff, memory_order_relaxed) >= u->handoff_ns) {
		atomic_store_explicit(&u->sl->last_handoff, u->now, memory_order_relaxed);
		LK_TEST_HOOK("mutex.handoff", m);
		/*
		 * Handoff: L stays set, the unparked thread owns the lock when it returns. release:
		 * pairs with the acquire load after lk_park() returns TOKEN_HANDOFF; the unpark itself
		 * goes through the bucket lock too, but we do not rely on the parking lot's internals.
		 */
		atomic_fetch_and_explicit(&m->word, r.have_more_threads ? ~0u : ~P, memory_order_release);
		return TOKEN_HANDOFF;
	}
	/*
	 * Release L (and P when nobody remains); make the woken thread the spinner when there is none,
	 * so that unlocks skip waking others while it runs (invariant 2). release: pairs with the
	 * acquire CAS of whoever takes the lock next.
	 */
	/* relaxed: the CAS below decides; under the bucket lock only bits move concurrently */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed), nv;
	bool give_s;

	do {
		give_s = r.unparked_threads && !(v & S);
		nv = (v & ~(L | (r.have_more_threads ? 0 : P))) | (give_s ? S : 0);
	} while (!atomic_compare_exchange_weak_explicit(&m->word, &v, nv, memory_order_release,
							memory_order_relaxed));
	return give_s ? TOKEN_SPIN : LK_TOKEN_NORMAL;
}

/* L,P,0 -> woken thread spins (L released, S set for it) or owns the lock (handoff). */
int lk_mutex_unlock_slow(lk_mutex_t *m, uint32_t v)
{
	struct slot *sl = slot_of(m);

	/* the state may have moved since the inline path looked: re-check as it does */
	while ((v & (L | P | S)) != (L | P)) {
		if (!(v & L))
			return EPERM;
		/* release: publishes the critical section to the next owner's acquire RMW */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, v & ~L, memory_order_release,
							  memory_order_relaxed))
			return 0;
	}

	struct unlock_ctx u = {
		.m = m,
		.sl = sl,
		.now = now_ns(CLOCK_MONOTONIC),
		/* relaxed: policy knob */
		.handoff_ns = atomic_load_explicit(&policy.handoff_ns, memory_order_relaxed),
	};
	LK_TEST_HOOK("mutex.unlock_slow", m);	/* test builds only: decided to wake, not yet unparking */
	int r = lk_unpark_filter(m, unlock_filter, unlock_callback, &u);

	if (r < 0 || !u.called)	/* cannot happen for a valid mutex; never leave it locked */
		/* release: as in the callback */
		atomic_fetch_and_explicit(&m->word, ~L, memory_order_release);
	return 0;
}

/* ---- init / destroy ----------------------------------------------------------------------------- */

int lk_mutex_init(lk_mutex_t *m)
{
	if (!m)
		return EINVAL;
	/* relaxed: initialisation; the mutex is published by whatever hands `m` to other threads */
	atomic_store_explicit(&m->word, 0, memory_order_relaxed);
	return 0;
}

int lk_mutex_destroy(lk_mutex_t *m)
{
	if (!m)
		return EINVAL;
	/* acquire: if the last unlock happened in another thread, order it before a free() */
	if (atomic_load_explicit(&m->word, memory_order_acquire) != 0)
		return EBUSY;
	return 0;
}
