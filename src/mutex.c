/* SPDX-License-Identifier: MIT */
/*
 * src/mutex.c - lk_mutex slow paths: learned spinning by one awake waiter, parking in the parking
 * lot, and a bounded wait: a parked waiter whose wait passes handoff_ns becomes OWED the lock, and
 * from then on every unlock hands the lock to the head of the queue until no waiter is owed.
 *
 * Lock word (locklab/mutex.h):
 *
 *   bit  0     L  LOCKED    a thread owns the mutex
 *   bit  1     P  PARKED    threads may be parked on &m->word (an unlock must look)
 *   bit  2     S  SPINNING  one waiter is awake and spinning (it will take the lock when it is free)
 *   bits 3-9   G  GEN       the fork generation in which S and H were written: the process's
 *                           (1..127) while S or H is set, 0 when both are clear
 *   bits 10-31 H  OWED      how many parked waiters are owed a handoff: a waiter whose own handoff
 *                           deadline passed (it counted itself), or a condvar waiter requeued onto
 *                           the mutex (the requeue counted it)
 *
 * Threads and roles. The OWNER holds L. At most one SPINNER holds S: a newcomer that claimed it, or
 * a parked waiter an unlock woke and gave S to (TOKEN_SPIN: seed 004's "a woken waiter goes back to
 * spinning"); while S is set an unlock wakes nobody, the spinner takes the lock (seed 004's
 * "spinners and sleepers use separate locks"). PARKED waiters sleep in the parking lot, queue on
 * &m->word; each one that parked for the first time in this lock call sleeps with a deadline: its
 * first park + handoff_ns (the policy's, read at that first park). A parked waiter is OWED once its
 * deadline passed while the lock was held; owed waiters no longer have a handoff deadline.
 *
 * Fork (issue 12, defect 5). A child process inherits the word but none of the threads behind S
 * and H: a spinner of the parent would hold S forever (every unlock then takes the no-wake path),
 * owed waiters of the parent would keep H > 0. The child's atfork handler bumps the process's
 * generation (1..127, cyclic); S and H whose G differs belong to an ancestor and are STALE: every
 * slow-path transition below first drops them (fresh(v): S, G and H cleared), in the same CAS, and
 * sets G to the current generation when the result has S or H, 0 otherwise (retag()). A waiter
 * always runs its loop's first step, N, before it parks, so no thread of the child ever sleeps
 * behind a stale S. No cost without fork: the fast paths never look at G, the slow paths read the
 * generation (a read-mostly global) and write nothing more. Limit: G has 7 bits, so stale state
 * survives unrecognised only in a word nobody contended through 127 nested generations of forks.
 *
 * Transitions, each ONE atomic CAS or RMW on the word (v: the value it replaces; every slow-path
 * one computes its new value from fresh(v) and retags it):
 *
 *   lock fast path (mutex.h)     F1  fetch_or L                     acquired iff old L clear (acquire)
 *   unlock fast path (mutex.h)   F2  CAS L -> 0                     (release)
 *                                F3  CAS v -> v & ~L                if !(P && (!S || H)) (release)
 *                                    otherwise lk_mutex_unlock_slow (below)
 *   lock_slow()                  N   CAS v -> fresh(v)              v has stale S or H (fork only)
 *                                B   CAS v -> v | L                 barge: v has no L (acquire)
 *                                C   CAS v -> v | S                 claim S: v has L, no S, H == 0,
 *                                                                   and spinning is allowed
 *                                PP  CAS v -> v | P                 v has L, no P; then park
 *   spin() (S owned)             SA  CAS v -> (v | L) & ~S          lock free: take it (acquire)
 *                                SG  CAS v -> (v & ~S) | P          v has L, and the budget is spent,
 *                                                                   or H > 0, or the spinner's own
 *                                                                   handoff deadline came: park
 *   park validate (bucket lock)      (reads)                        park iff v has L and P; queue at
 *                                                                   the HEAD if this waiter parked
 *                                                                   before in this call and H == 0,
 *                                                                   else at the TAIL
 *   lock_expired (bucket lock;   EX  CAS v -> v | L                 v has no L: take it, leave the
 *   still queued, own handoff                                       queue (acquire)
 *   deadline passed, not owed)   EH  CAS v -> v + H_ONE             v has L: owed; stays queued in
 *                                                                   place, park token PARK_OWED
 *   lock_timed_out (bucket lock; TO  CAS v -> (v - (owed ? H_ONE : 0)) & ~(last ? P : 0)
 *   dequeued at a deadline)
 *   unlock_callback (bucket lock, U0  CAS v -> v & ~(L|P|H)         nobody was queued (release)
 *   the queue's head unparked)   UH  CAS v -> (v - (head owed ? H_ONE : 0)) & ~(more ? 0 : P)
 *                                    H > 0: HAND OVER, L kept (release), TOKEN_HANDOFF
 *                                UW  CAS v -> (v & ~L & ~(more ? 0 : P)) | (S ? 0 : S)
 *                                    H == 0: release, wake the head; TOKEN_SPIN if it set S for it
 *   lk_cond (src/cond.c; both    CP  CAS v -> v | P                 v has L (requeue validate)
 *   bucket locks held)           CR  CAS v -> (v | (asked ? P : 0)) + n * H_ONE   n waiters requeued
 *   (mutex bucket lock)          CT  as TO, owed                    a requeued waiter timed out there
 *
 * States (L, P, S, H) and the main transitions (- = clear, * = either; G and stale state omitted):
 *
 *                      F1, B, EX: +L                           C: +S (H = 0)
 *      +---------+ ------------------------> +---------+ -----------------------> +---------+
 *      | -,*,*,0 |                           | L,*,-,0 |                          | L,*,S,0 |
 *      +---------+ <------------------------ +---------+ <----------------------- +---------+
 *             ^      F2/F3: -L (no P,              |       SA (once L is clear):      |
 *             |      or S set and H = 0)           |       +L -S                      |
 *             |                                    | PP: +P, park                     | SG: -S +P,
 *             |     U0: -L -P (nobody queued)      v                                  | park
 *             +-------------------------------- +---------+ <-------------------------+
 *                   UW: -L, wake the head       | L,P,*,0 |
 *                   (+S for it if none: spins)  +---------+
 *                                                  |   ^
 *                  EH: H += 1 (a parked waiter's   |   |  UH/TO/CT take H to 0
 *                  deadline passed, L held)        v   |
 *                                               +---------+ --+  UH: hand the lock to the head,
 *                                               | L,P,*,H |   |  L kept (H -= 1 if it was owed);
 *                                               +---------+ <-+  every unlock while H > 0
 *
 *   (CR can also requeue onto a free mutex: -,P,*,H; whoever takes the lock next hands it over.)
 *
 * Invariants:
 *  1. L is set exactly while some thread owns the mutex; a handoff (UH) never clears it.
 *  2. "!L && P" implies a thread that is awake will take the lock: the spinner (S; it never gives
 *     up while L is clear), the thread an unlock just woke (UW), or a thread whose park attempt or
 *     expired() finds L clear (validate refuses, EX takes it).
 *  3. A waiter sleeps only after validate() saw L and P under the bucket lock; P is cleared only
 *     under that bucket lock, when no thread remains queued on the address (U0, UH/UW with !more,
 *     TO/CT with last). No lost wakeup: an unlock that clears L while P is set either runs its
 *     callback under the bucket lock (F3 not taken) or leaves an awake spinner (F3 with S).
 *  4. H == the number of queued waiters whose park token is PARK_OWED or 0 (condvar waiters), at
 *     every moment the bucket lock of &m->word is free: every change of H and of that queue
 *     happens under it (EH, TO, UH, CR, CT). Hence H > 0 implies P. (Stale H - G from an
 *     ancestor - counts as 0.)
 *  5. While H > 0, no unlock clears L: F2/F3 are not taken (the inline test sends H > 0 to the
 *     slow path) and the callback hands over (UH). L is clear with H > 0 only if it was already
 *     clear when H became > 0 (CR onto a free mutex, or after an F3 that raced a requeue); then the
 *     next owner (spinner, woken thread, barger) hands over at its unlock. EH requires L.
 *  6. Nobody is queued ahead of a waiter while H > 0: newcomers and waiters parking again then go
 *     to the tail (validate), requeues append. While H == 0 a waiter parking again in the same call
 *     goes to the head (Go's sync.Mutex does the same), so the longest waiter stays first.
 *
 * The bound (docs/mutex.md). Let W park first at t0 (handoff_ns = h). At t0 + h, plus the time its
 * timer needs to wake it, W either takes the free lock itself (EX) or becomes owed (EH) at some
 * position k of the queue (k = 1: the head). From then on every unlock hands the lock to the head
 * and nobody is queued ahead of W (5, 6), so W owns the lock after at most k critical sections and
 * k wake-ups: the current owner's and those of the k - 1 waiters ahead of it, who are handed the
 * lock first. For the queue head: h + one critical section + two wake-ups (its timer's, the
 * handoff's). A waiter awake at its deadline (woken as the spinner) stops spinning there, parks
 * again at the head (or the tail if H > 0 already) and becomes owed at once. Counted in events:
 * after W became owed, at most k - 1 acquisitions by other threads start before W's (a condvar
 * waiter requeued onto a free mutex: k; see invariant 5). The price is
 * a convoy (one wake-up per acquisition) while waiters are owed: a lock on which every waiter
 * waits longer than h (many threads per CPU) is handed over on every unlock.
 *
 * Learned spin budget: 4 bytes have no room for statistics, so a 512-slot side table hashed by lock
 * address keeps, per slot, the EWMA of how many relax rounds successful spinners waited (relaxed
 * loads and stores: it is a heuristic, a lost update only costs a slightly different budget; two
 * locks sharing a slot share an estimate). Budget = clamp(2 * estimate + min, min, max) rounds; a
 * spinner that runs out decays the estimate by a quarter, so a lock whose holders stay long quickly
 * stops being spun on, and one whose waits shrink grows its budget again through successful spins.
 * Spinning is disabled on a single-CPU machine.
 *
 * What 4 bytes cannot do: know whether the owner is running (the kernel's and seed 004's spinners
 * stop when the owner sleeps; ours stops at its budget instead), or who the owner is (an unlock by a
 * non-owner is not detected).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "locklab/mutex.h"
#include "locklab/park.h"
#include "locklab/relax.h"
#include "test_hooks.h"
#include "mutex_internal.h"
#include "park_internal.h"

#define L LK_MUTEX_LOCKED
#define P LK_MUTEX_PARKED
#define S LK_MUTEX_SPINNING
#define H_ONE LK_MUTEX_OWED_ONE
#define H_MASK LK_MUTEX_OWED_MASK

/* Unpark tokens (LK_TOKEN_NORMAL: woken, compete for the lock like anybody else) */
#define TOKEN_HANDOFF	((lk_token_t)1)	/* the lock is handed over, still LOCKED, to the woken thread */
#define TOKEN_SPIN	((lk_token_t)2)	/* the unlocker set S for the woken thread: it is the spinner */

/* Park tokens: what an unlocker's filter learns about the head (0: a requeued condvar waiter) */
#define PARK_QUEUED	((lk_token_t)1)	/* a mutex waiter, not owed */
#define PARK_OWED	((lk_token_t)2)	/* a mutex waiter owed a handoff (counted in H) */

/* Counted in H: owed mutex waiters and condvar waiters requeued onto the mutex (park token 0). */
static inline bool token_owed(lk_token_t park_token)
{
	return park_token != PARK_QUEUED;
}

/* ---- fork generation (defect 5; see the header comment) ---------------------------------------- */

#define G_SHIFT 3
#define G_MASK (0x7fu << G_SHIFT)

static _Atomic uint32_t fork_gen = 1;	/* 1..127 */

static void fork_child(void)
{
	/* relaxed: the child is single-threaded while atfork handlers run */
	uint32_t g = atomic_load_explicit(&fork_gen, memory_order_relaxed);

	atomic_store_explicit(&fork_gen, g % 127 + 1, memory_order_relaxed);
}

/* Registered when the library is loaded: before any word of this process can hold S or H. */
static __attribute__((constructor)) void fork_handler_init(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

static inline uint32_t gen_bits(void)
{
	/* relaxed: written only by the child's atfork handler, while the child is single-threaded */
	return atomic_load_explicit(&fork_gen, memory_order_relaxed) << G_SHIFT;
}

/* v with S and H of an ancestor process (G is not ours) dropped, and G with them. */
static inline uint32_t fresh(uint32_t v)
{
	if ((v & (S | H_MASK)) && (v & G_MASK) != gen_bits())
		return v & ~(S | G_MASK | H_MASK);
	return v;
}

/* G follows S and H: this process's generation while either is set, 0 when both are clear. */
static inline uint32_t retag(uint32_t v)
{
	v &= ~G_MASK;
	return v & (S | H_MASK) ? v | gen_bits() : v;
}
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

/* ---- side table: learned spin estimate, hashed by lock address ------------------------------------ */

#define SLOT_BITS 9

struct slot {
	_Atomic uint32_t est;		/* EWMA of relax rounds a successful spinner waited, x16 fixed point */
	uint32_t pad[3];		/* 16 bytes a slot, the layout the tuning record measured */
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
	uint32_t ps;		/* picoseconds per relax */
};

static inline struct spin_limits spin_limits(void)
{
	struct spin_limits sl = { 0, 0, 0 };
	/* relaxed: cached measurement, see calibrate() */
	uint32_t ps = atomic_load_explicit(&relax_ps, memory_order_relaxed);

	if (!ps)
		ps = calibrate();
	sl.ps = ps;
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

/* ---- time ------------------------------------------------------------------------------------- */

static inline int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000ll + t->tv_nsec;
}

static inline struct timespec ns_ts(int64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ll), .tv_nsec = (long)(ns % 1000000000ll) };
}

/* Beyond this an absolute deadline counts as "never" (year 2286+; no overflow in ts_ns()). */
#define FAR_SEC 9000000000ll

static inline bool deadline_passed(clockid_t clock, const struct timespec *abs)
{
	if (abs->tv_sec < 0)
		return true;
	if (abs->tv_sec > FAR_SEC)
		return false;
	return (int64_t)now_ns(clock) >= ts_ns(abs);
}

/* ---- lock --------------------------------------------------------------------------------------- */

/* A waiter's state across its parks in one lock call; the park callbacks' context. */
struct waiter {
	lk_mutex_t *m;
	clockid_t clock;		/* of abs */
	const struct timespec *abs;	/* the caller's deadline, or NULL */
	struct timespec handoff_at;	/* CLOCK_MONOTONIC: first park + handoff_ns */
	bool parked;			/* parked before in this call (handoff_at is set) */
	bool owed;			/* counted in H, park token PARK_OWED */
	bool took;			/* lock_expired() found the lock free and took it */
};

/* The deadline to sleep with: the caller's, or the handoff deadline if that comes first. */
static const struct timespec *park_deadline(const struct waiter *w, clockid_t *clock)
{
	if (!w->owed && (!w->abs || w->abs->tv_sec > FAR_SEC)) {
		*clock = CLOCK_MONOTONIC;
		return &w->handoff_at;
	}
	if (w->owed || ts_ns(w->abs) - (int64_t)now_ns(w->clock) <=
			       ts_ns(&w->handoff_at) - (int64_t)now_ns(CLOCK_MONOTONIC)) {
		*clock = w->clock;
		return w->abs;
	}
	*clock = CLOCK_MONOTONIC;
	return &w->handoff_at;
}

enum { SPIN_ACQUIRED, SPIN_GAVE_UP };

#ifndef SPIN_BACKOFF_MAX
#define SPIN_BACKOFF_MAX 16	/* relaxes between two reads of the word, at most (~0.5 us here) */
#endif

/*
 * We own S. Spin until the lock is free and we take it (SA), or until we give up (SG, only while L
 * is set: invariant 2): the budget is spent, a waiter is owed the lock (H > 0: it must not be
 * overtaken), or - for a waiter that parked before - its own handoff deadline came (it parks again
 * and becomes owed). *vp: the last value seen, updated.
 */
static int spin(lk_mutex_t *m, struct slot *sl, struct spin_limits lim, uint32_t *vp, const struct waiter *w)
{
	/* relaxed: a heuristic estimate, see the header comment */
	uint32_t est = atomic_load_explicit(&sl->est, memory_order_relaxed);
	uint64_t budget = 2ull * (est >> 4) + lim.min;
	bool learned = true;		/* the budget is the learned one (not cut by a deadline) */
	uint32_t v = *vp;
	uint64_t i;
	uint32_t delay = 1;

	if (budget > lim.max)
		budget = lim.max;
	if (w && w->parked) {
		int64_t left = ts_ns(&w->handoff_at) - (int64_t)now_ns(CLOCK_MONOTONIC);
		uint64_t rounds = left <= 0 ? 0 : (uint64_t)left * 1000 / lim.ps;

		if (rounds < budget) {
			budget = rounds;
			learned = false;
		}
	}
	for (i = 0;; i++) {
		if (!(v & L)) {
			/* SA. acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag((fresh(v) | L) & ~S),
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
		if (i >= budget || (fresh(v) & H_MASK)) {
			/* SG. relaxed: only bits change hands; no data is published by giving up */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag((fresh(v) & ~S) | P),
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
	/* holders stay longer than we were willing to wait: decay by a quarter; relaxed: heuristic */
	if (learned && i >= budget)
		atomic_store_explicit(&sl->est, est - est / 4, memory_order_relaxed);
	*vp = retag((fresh(v) & ~S) | P);
	return SPIN_GAVE_UP;
}

/* validate(), under the bucket lock: sleep only if the lock is held and P still set; where to queue. */
static int lock_validate(void *ctx)
{
	struct waiter *w = ctx;
	/*
	 * relaxed: P is cleared, and H changes, only under this bucket lock, which we hold. An unlock
	 * that clears L with P set either runs its callback under this bucket lock (so it sees us
	 * queued, or we see its change) or leaves an awake spinner, whose own unlock will see P
	 * (invariants 2, 3).
	 */
	uint32_t v = fresh(atomic_load_explicit(&w->m->word, memory_order_relaxed));

	/* (no stale S here: this waiter ran N in its loop, and no new stale state can appear) */
	if ((v & (L | P)) != (L | P))
		return LKP_PARK_NO;
	/* invariant 6: parked before and nobody owed - back to the head, where the longest waiter is */
	return w->parked && !(v & H_MASK) ? LKP_PARK_HEAD : LKP_PARK_TAIL;
}

/*
 * expired(), under the bucket lock: our deadline passed and we are still queued. The caller's
 * deadline: time out. Our handoff deadline: take the lock if it is free (EX), else become owed in
 * place (EH) and sleep on (until handed the lock, or the caller's deadline).
 */
static bool lock_expired(void *ctx, const void *addr, lk_token_t *park_token,
			 const struct timespec **deadline, clockid_t *clock)
{
	struct waiter *w = ctx;
	lk_mutex_t *m = w->m;
	uint32_t v;

	if (w->abs && deadline_passed(w->clock, w->abs))
		return false;
	if (w->owed || (int64_t)now_ns(CLOCK_MONOTONIC) < ts_ns(&w->handoff_at)) {
		*deadline = park_deadline(w, clock);	/* neither passed (CLOCK_REALTIME moved): sleep on */
		return true;
	}
	/* relaxed: we only look; the CAS decides */
	v = atomic_load_explicit(&m->word, memory_order_relaxed);
	for (;;) {
		if (!(v & L)) {
			/* EX. acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag(fresh(v) | L),
								  memory_order_acquire, memory_order_relaxed)) {
				w->took = true;
				return false;	/* leave the queue; lock_timed_out() clears P if we were last */
			}
			continue;
		}
		/* EH. relaxed: bookkeeping under the bucket lock (invariant 4); no data */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag(fresh(v) + H_ONE),
							  memory_order_relaxed, memory_order_relaxed))
			break;
	}
	w->owed = true;
	*park_token = PARK_OWED;
	*deadline = park_deadline(w, clock);
	return true;
}

/* TO/CT, under the bucket lock, the waiter dequeued: H and P follow the queue (invariants 3, 4). */
static void left_queue(lk_mutex_t *m, bool owed, bool was_last)
{
	/* relaxed: bit bookkeeping under the bucket lock; no data is published */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed), nv;

	do {
		nv = retag((fresh(v) - (owed ? H_ONE : 0)) & ~(was_last ? P : 0));
		if (nv == v)
			return;
	} while (!atomic_compare_exchange_weak_explicit(&m->word, &v, nv, memory_order_relaxed,
							memory_order_relaxed));
}

static void lock_timed_out(void *ctx, const void *addr, bool was_last_thread)
{
	struct waiter *w = ctx;

	left_queue(w->m, w->owed, was_last_thread);
	w->owed = false;
}

static const struct lkp_park_ops lock_park_ops = {
	.validate = lock_validate,
	.expired = lock_expired,
	.timed_out = lock_timed_out,
};

/*
 * The contended path. own_s: we were unparked with TOKEN_SPIN, i.e. the unlocker set S for us and we
 * are the spinner (seed 004 patch 3: a woken waiter goes back to spinning), so unlocks skip waking
 * anyone else while we run (one woken waiter in flight, as glibc's and Go's mutexes do).
 */
static int lock_slow(lk_mutex_t *m, clockid_t clock, const struct timespec *abs, bool own_s)
{
	struct slot *sl = slot_of(m);
	struct spin_limits lim = spin_limits();
	bool may_spin = lim.max > 0;
	struct waiter w = { .m = m, .clock = clock, .abs = abs };
	/* relaxed: we only look; every transition below is a CAS */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	for (;;) {
		if (own_s) {
			own_s = false;
			if (spin(m, sl, lim, &v, &w) == SPIN_ACQUIRED)
				return 0;
			/* gave up: S cleared, P set, L was set; sleep until woken, then spin again */
			may_spin = false;
			if (abs && deadline_passed(clock, abs))
				return ETIMEDOUT;
		}
		if (fresh(v) != v) {
			/* N: S or H of an ancestor process (fork). relaxed: role bits, no data */
			atomic_compare_exchange_weak_explicit(&m->word, &v, fresh(v), memory_order_relaxed,
							      memory_order_relaxed);
			continue;
		}
		if (!(v & L)) {
			/* B. acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, v | L, memory_order_acquire,
								  memory_order_relaxed))
				return 0;
			continue;
		}
		if (abs && deadline_passed(clock, abs))
			return ETIMEDOUT;
		if (may_spin && !(v & (S | H_MASK))) {
			/* C. relaxed: S is a role bit, no data */
			if (!atomic_compare_exchange_weak_explicit(&m->word, &v, retag(v | S),
								   memory_order_relaxed, memory_order_relaxed))
				continue;
			v = retag(v | S);
			own_s = true;
			continue;
		}
		if (!(v & P)) {
			/* PP. relaxed: bit bookkeeping; validate() re-checks it under the bucket lock */
			if (!atomic_compare_exchange_weak_explicit(&m->word, &v, v | P, memory_order_relaxed,
								   memory_order_relaxed))
				continue;
		}
		if (!w.parked) {	/* the first park of this call: the handoff deadline */
			/* relaxed: policy knob */
			uint64_t h = atomic_load_explicit(&policy.handoff_ns, memory_order_relaxed);

			w.handoff_at = ns_ts((int64_t)now_ns(CLOCK_MONOTONIC) + (int64_t)h);
		}
		clockid_t pclock;
		const struct timespec *pdl = park_deadline(&w, &pclock);
		lk_token_t token = LK_TOKEN_NORMAL;
		int r = lkp_park_ex(&m->word, &lock_park_ops, &w, w.owed ? PARK_OWED : PARK_QUEUED, pdl, pclock,
				    &token);

		w.parked = true;
		if (r == LK_PARK_UNPARKED) {
			if (token == TOKEN_HANDOFF) {
				/* acquire: pairs with the release CAS in unlock_callback() (UH) */
				(void)atomic_load_explicit(&m->word, memory_order_acquire);
				return 0;
			}
			may_spin = lim.max > 0;
			own_s = token == TOKEN_SPIN;
		} else if (r == LK_PARK_TIMEDOUT) {
			return w.took ? 0 : ETIMEDOUT;	/* took the free lock in lock_expired(), or the
							 * caller's deadline */
		} else if (r < 0) {
			return -r;
		}
		/* relaxed: we only look */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
}

void lk_mutex_lock_slow(lk_mutex_t *m)
{
	lock_slow(m, CLOCK_MONOTONIC, NULL, false);
}

void lk_mutex_lock_unparked(lk_mutex_t *m, uintptr_t token)
{
	if (token == TOKEN_HANDOFF) {
		/* acquire: pairs with the release CAS in unlock_callback() (UH) that handed L to us */
		(void)atomic_load_explicit(&m->word, memory_order_acquire);
		return;
	}
	if (token == TOKEN_SPIN) {
		lock_slow(m, CLOCK_MONOTONIC, NULL, true);
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
		return lock_slow(m, clock, abs, false);
	return 0;
}

/* ---- unlock ------------------------------------------------------------------------------------- */

struct unlock_ctx {
	lk_mutex_t *m;
	lk_token_t head;	/* park token of the thread being unparked */
	bool seen;		/* the filter has picked its one thread */
	bool called;		/* the callback ran */
};

/* Unpark exactly the head of the queue (FIFO), remembering its park token. */
static enum lk_filter_op unlock_filter(void *ctx, lk_token_t park_token)
{
	struct unlock_ctx *u = ctx;

	if (u->seen)
		return LK_FILTER_STOP;
	u->seen = true;
	u->head = park_token;
	return LK_FILTER_UNPARK;
}

/* Under the bucket lock: U0, UH or UW (see the header comment). */
static lk_token_t unlock_callback(void *ctx, struct lk_unpark_result r)
{
	struct unlock_ctx *u = ctx;
	lk_mutex_t *m = u->m;
	/* relaxed: the CAS below decides; under the bucket lock only L, S and stale bits move */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed), nv;
	lk_token_t token;

	u->called = true;
	do {
		uint32_t fv = fresh(v);

		if (!r.unparked_threads) {
			/* U0: nobody queued, so nobody owed (invariant 4) */
			nv = retag(fv & ~(L | P | H_MASK));
			token = LK_TOKEN_NORMAL;
		} else if (fv & H_MASK) {
			/* UH: hand over to the head, L kept; it leaves the owed count if it was in it */
			nv = retag((fv - (token_owed(u->head) ? H_ONE : 0)) & ~(r.have_more_threads ? 0 : P));
			token = TOKEN_HANDOFF;
		} else {
			/* UW: release; make the woken thread the spinner when there is none (invariant 2) */
			nv = retag((fv & ~L & ~(r.have_more_threads ? 0 : P)) | (fv & S ? 0 : S));
			token = fv & S ? LK_TOKEN_NORMAL : TOKEN_SPIN;
		}
		/*
		 * release: pairs with the acquire of whoever owns the lock next - the acquire CAS of a
		 * spinner or barger after U0/UW, the acquire load after lk_park() returns TOKEN_HANDOFF
		 * after UH (the unpark itself goes through the bucket lock too, but we do not rely on the
		 * parking lot's internals).
		 */
	} while (!atomic_compare_exchange_weak_explicit(&m->word, &v, nv, memory_order_release,
							memory_order_relaxed));
	if (token == TOKEN_HANDOFF)
		LK_TEST_HOOK("mutex.handoff", m);
	return token;
}

/* Threads are parked and either nobody spins or somebody is owed: wake or hand over. */
int lk_mutex_unlock_slow(lk_mutex_t *m, uint32_t v)
{
	/*
	 * The state may have moved since the inline path looked: re-check as it does (F3), with stale
	 * S and H dropped (after a fork the inline test saw an ancestor's H, or may keep seeing S).
	 */
	for (;;) {
		uint32_t fv = fresh(v);

		if ((fv & P) && (!(fv & S) || (fv & H_MASK)))
			break;
		if (!(v & L))
			return EPERM;
		/* release: publishes the critical section to the next owner's acquire RMW */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, fv & ~L, memory_order_release,
							  memory_order_relaxed))
			return 0;
	}
	struct unlock_ctx u = { .m = m };

	LK_TEST_HOOK("mutex.unlock_slow", m);	/* test builds only: decided to wake, not yet unparking */
	int r = lk_unpark_filter(&m->word, unlock_filter, unlock_callback, &u);

	if (r < 0 || !u.called)	/* cannot happen for a valid mutex; never leave it locked */
		/* release: as in the callback */
		atomic_fetch_and_explicit(&m->word, ~L, memory_order_release);
	return 0;
}

/* ---- for lk_cond (mutex_internal.h) ------------------------------------------------------------- */

void lkm_requeued(lk_mutex_t *m, unsigned n, bool set_parked)
{
	/* relaxed: bookkeeping under the mutex's bucket lock (invariant 4); the requeue publishes nothing */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	/* CR */
	while (!atomic_compare_exchange_weak_explicit(&m->word, &v,
						      retag((fresh(v) | (set_parked ? P : 0)) + n * H_ONE),
						      memory_order_relaxed, memory_order_relaxed))
		;
}

void lkm_requeued_timed_out(lk_mutex_t *m, bool was_last_thread)
{
	left_queue(m, true, was_last_thread);	/* CT */
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
	if (fresh(atomic_load_explicit(&m->word, memory_order_acquire)) != 0)
		return EBUSY;	/* (an ancestor's spinner or owed waiters do not count) */
	return 0;
}
