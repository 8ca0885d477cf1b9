/* SPDX-License-Identifier: MIT */
/*
 * src/mutex.c - lk_mutex slow paths: learned spinning by one waiter, parking in the parking lot,
 * wake-skipping while a spinner is on the word, and handoff to a waiter that waited too long.
 *
 * Lock word (see locklab/mutex.h): L = LOCKED, P = PARKED, S = SPINNING.
 *
 *   L  a thread owns the mutex.
 *   P  threads may be parked on &m->word. Set by a waiter (CAS, lock held) before it parks, cleared
 *      only under the address's bucket lock (unlock's unpark callback when no thread remains, a
 *      timed-out last waiter), so a waiter's validate() - which re-checks "L and P" under the same
 *      bucket lock - can never sleep after the wakeup that was meant for it: no lost wakeup.
 *   S  exactly one waiter, the spinner, is spinning on the word. Others see S and park instead of
 *      spinning (seed 004: "spinners and sleepers use separate locks"; here the word is the spinner
 *      slot and the parking lot is the sleeper queue). The spinner clears S when it takes the lock
 *      (one CAS: L set, S cleared) or when it gives up (one CAS, only while L is set: S cleared, P
 *      set, then it parks).
 *
 * States (L,P,S) and the transitions that matter:
 *
 *                 lock: CAS 0->L                       waiter: CAS +S, spin
 *    +---------+ -------------> +---------+ ----------------------------------> +---------+
 *    | 0,0,0   |                | L,0,0   |                                     | L,*,S   |
 *    +---------+ <------------- +---------+ <---------------------------------- +---------+
 *         ^       unlock: CAS L->0     |      spinner takes it: CAS -L... +L -S      |    |
 *         |                            | waiter: CAS +P, park      give up: CAS -S +P |    | unlock:
 *         |                            v                                            |    | CAS -L
 *         |                       +---------+ <-------------------------------------+    v (no wake,
 *         |      last one woken:  | L,P,0   |                                    +---------+  if skips
 *         +---------------------- +---------+ ---------------------------------> | 0,P,S   |  left)
 *           unpark cb: -L -P           |  unpark cb, more parked: -L           +---------+
 *                                      |  waited > handoff_ns: L kept, token HANDOFF
 *                                      v
 *                               (the woken waiter owns the lock / spins / barges / parks again)
 *
 * Invariants:
 *  1. L is set exactly while some thread owns the mutex; only the owner clears it (unlock), or the
 *     unpark callback on the owner's behalf; a handoff never clears it.
 *  2. "!L && P" implies some thread is running that will take the lock: the thread just unparked
 *     (the callback cleared L and left P), or the spinner (S set: an unlock skipped the wake because
 *     of it). The spinner therefore never clears S while L is clear: if it finds the lock free it
 *     takes it instead of giving up. Whoever takes the lock with P set will unpark at unlock.
 *  3. A waiter parks only after validate() saw L and P under the bucket lock; an unlock that clears
 *     L while P is set always either unparks (under the bucket lock) or leaves a running spinner.
 *  4. At most wake_skip_max consecutive unlocks skip the wake, so parked threads keep reaching the
 *     head of the FIFO queue, and the head is handed the lock once its total wait exceeds
 *     handoff_ns: no parked waiter starves, even against a thread that re-locks in a tight loop.
 *
 * Learned spin budget: 4 bytes have no room for statistics, so a 512-slot side table hashed by lock
 * address keeps, per slot, the EWMA of how many relax rounds successful spinners waited (relaxed
 * loads and stores: it is a heuristic, a lost update only costs a slightly different budget; two
 * locks sharing a slot share an estimate). Budget = clamp(2 * estimate + min, min, max) rounds; a
 * failed spin decays the estimate by a quarter, so a lock whose holders stay long quickly stops
 * being spun on, and one whose waits shrink grows its budget again through successful spins.
 *
 * Spinning is disabled on a single-CPU machine (the holder cannot run while we spin).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "locklab/mutex.h"
#include "locklab/park.h"
#include "locklab/relax.h"

#define L LK_MUTEX_LOCKED
#define P LK_MUTEX_PARKED
#define S LK_MUTEX_SPINNING

/* Unpark token: the lock is handed over, still LOCKED, to the unparked thread. */
#define TOKEN_HANDOFF ((lk_token_t)1)

/* ---- policy ------------------------------------------------------------------------------------ */

static struct {
	_Atomic uint32_t spin_min_ns;
	_Atomic uint32_t spin_max_ns;
	_Atomic uint64_t handoff_ns;
	_Atomic uint32_t wake_skip_max;
} policy = {
	.spin_min_ns = 1000,
	.spin_max_ns = 20000,
	.handoff_ns = 1000000,
	.wake_skip_max = 8,
};

int lk_mutex_get_policy(struct lk_mutex_policy *p)
{
	if (!p)
		return EINVAL;
	/* relaxed: independent tuning knobs, no data is published through them */
	p->spin_min_ns = atomic_load_explicit(&policy.spin_min_ns, memory_order_relaxed);
	p->spin_max_ns = atomic_load_explicit(&policy.spin_max_ns, memory_order_relaxed);
	p->handoff_ns = atomic_load_explicit(&policy.handoff_ns, memory_order_relaxed);
	p->wake_skip_max = atomic_load_explicit(&policy.wake_skip_max, memory_order_relaxed);
	return 0;
}

int lk_mutex_set_policy(const struct lk_mutex_policy *p)
{
	if (!p || p->spin_min_ns > p->spin_max_ns || p->spin_max_ns > LK_MUTEX_SPIN_MAX_NS_LIMIT ||
	    p->handoff_ns > LK_MUTEX_HANDOFF_NS_LIMIT || p->wake_skip_max > LK_MUTEX_WAKE_SKIP_LIMIT)
		return EINVAL;
	/* relaxed: see lk_mutex_get_policy; a slow path may see a mix of old and new (documented) */
	atomic_store_explicit(&policy.spin_min_ns, p->spin_min_ns, memory_order_relaxed);
	atomic_store_explicit(&policy.spin_max_ns, p->spin_max_ns, memory_order_relaxed);
	atomic_store_explicit(&policy.handoff_ns, p->handoff_ns, memory_order_relaxed);
	atomic_store_explicit(&policy.wake_skip_max, p->wake_skip_max, memory_order_relaxed);
	return 0;
}

/* ---- side table: learned spin estimate and wake-skip count, hashed by lock address -------------- */

#define SLOT_BITS 9

struct slot {
	_Atomic uint32_t est;	/* EWMA of relax rounds a successful spinner waited, x16 fixed point */
	_Atomic uint32_t skips;	/* consecutive unlocks that skipped the wake */
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
	/* relaxed: a cached measurement; racing threads store similar values */
	atomic_store_explicit(&relax_ps, ps == 1000000 ? 0 : r, memory_order_relaxed);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	atomic_store_explicit(&multi_cpu, n > 1 ? 1 : 2, memory_order_relaxed);
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
	uint32_t i;

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
		lk_cpu_relax();
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
	/* relaxed: P is cleared only under this bucket lock, which we hold; L clearing with P set is
	 * followed by an unpark that needs this bucket lock, so either we see it or it sees us queued */
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

static __attribute__((noinline)) int lock_slow(lk_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	struct slot *sl = slot_of(m);
	struct spin_limits lim = spin_limits();
	bool may_spin = lim.max > 0;
	lk_token_t start = 0;
	/* relaxed: we only look; every transition below is a CAS */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	for (;;) {
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
			if (spin(m, sl, lim, &v) == SPIN_ACQUIRED)
				return 0;
			/* gave up: S cleared, P set, L was set; sleep until woken, then spin again */
			may_spin = false;
			if (abs && deadline_passed(clock, abs))
				return ETIMEDOUT;
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
		if (r == LK_PARK_UNPARKED)
			may_spin = lim.max > 0;	/* a woken waiter goes back to spinning (seed 004 #3) */
		/* relaxed: we only look */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
}

void lk_mutex_lock_slow(lk_mutex_t *m)
{
	lock_slow(m, CLOCK_MONOTONIC, NULL);
}

int lk_mutex_trylock_slow(lk_mutex_t *m)
{
	/* relaxed: we only look; the CAS is the acquire */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	while (!(v & L)) {
		/* acquire: pairs with the release of the unlock that freed it */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, v | L, memory_order_acquire,
							  memory_order_relaxed))
			return 0;
	}
	return EBUSY;
}

int lk_mutex_timedlock(lk_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	uint32_t v = 0;

	if (!m || !abs || (clock != CLOCK_MONOTONIC && clock != CLOCK_REALTIME) || abs->tv_nsec < 0 ||
	    abs->tv_nsec >= 1000000000L)
		return EINVAL;
	/* acquire: pairs with the release of the previous owner's unlock */
	if (atomic_compare_exchange_strong_explicit(&m->word, &v, L, memory_order_acquire,
						    memory_order_relaxed))
		return 0;
	return lock_slow(m, clock, abs);
}

/* ---- unlock ------------------------------------------------------------------------------------- */

struct unlock_ctx {
	lk_mutex_t *m;
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
	if (r.unparked_threads && u->head != 0 && (uintptr_t)(u->now - u->head) >= u->handoff_ns) {
		/*
		 * Handoff: L stays set, the unparked thread owns the lock when it returns. release:
		 * pairs with the acquire load after lk_park() returns TOKEN_HANDOFF; the unpark itself
		 * goes through the bucket lock too, but we do not rely on the parking lot's internals.
		 */
		atomic_fetch_and_explicit(&m->word, r.have_more_threads ? ~0u : ~P, memory_order_release);
		return TOKEN_HANDOFF;
	}
	/* release: pairs with the acquire CAS of whoever takes the lock next */
	atomic_fetch_and_explicit(&m->word, r.have_more_threads ? ~L : ~(L | P), memory_order_release);
	return LK_TOKEN_NORMAL;
}

int lk_mutex_unlock_slow(lk_mutex_t *m, uint32_t v)
{
	struct slot *sl = slot_of(m);

	for (;;) {
		if (!(v & L))
			return EPERM;
		if (!(v & P)) {
			/* release: publishes the critical section to the next owner's acquire CAS */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, v & ~L, memory_order_release,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (!(v & S))
			break;
		/*
		 * A spinner is on the word and will take the lock (invariant 2): skip the wake, at most
		 * wake_skip_max times in a row. relaxed (both): a heuristic counter; a lost update only
		 * moves the next forced wake by one unlock.
		 */
		uint32_t n = atomic_load_explicit(&sl->skips, memory_order_relaxed);
		if (n >= atomic_load_explicit(&policy.wake_skip_max, memory_order_relaxed))
			break;
		/* release: publishes the critical section to the spinner's (or a barger's) acquire CAS */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, v & ~L, memory_order_release,
							  memory_order_relaxed)) {
			atomic_store_explicit(&sl->skips, n + 1, memory_order_relaxed);
			return 0;
		}
	}
	/* relaxed: see above */
	atomic_store_explicit(&sl->skips, 0, memory_order_relaxed);

	struct unlock_ctx u = {
		.m = m,
		.now = now_ns(CLOCK_MONOTONIC),
		/* relaxed: policy knob */
		.handoff_ns = atomic_load_explicit(&policy.handoff_ns, memory_order_relaxed),
	};
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
