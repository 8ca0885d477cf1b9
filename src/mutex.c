/* SPDX-License-Identifier: MIT */
/*
 * src/mutex.c - lk_mutex slow paths: learned spinning by one awake waiter, parking in the parking
 * lot, and a bounded wait: a parked waiter whose wait passes its handoff deadline - first park +
 * (1 + waiters parked before it) * handoff_ns - becomes OWED the lock, and every unlock then hands
 * the lock to the first owed waiter in the queue until no waiter is owed.
 *
 * Lock word (locklab/mutex.h):
 *
 *   bit  0     L  LOCKED    a thread owns the mutex
 *   bit  1     P  PARKED    threads may be parked on &m->word (an unlock must look)
 *   bit  2     S  SPINNING  one waiter is awake and spinning (it will take the lock when it is free)
 *   bits 3-9   G  GEN       the fork generation in which P, S, A, W, H and Q were written: the
 *                           process's (1..127) while any of them is set, 0 when all are clear
 *   bits 10-20 H  OWED      how many queued waiters are owed a handoff, saturating at HMAX = 2047: a
 *                           waiter whose own handoff deadline passed (it counted itself), or a
 *                           condvar waiter requeued onto the mutex (the requeue counted it)
 *   bit  21    A  ASKED     the spinner asked for the lock: it spun spin_min_ns while nobody else
 *                           waited (no P, W, H, Q), and the next unlock hands it the lock (UA: S
 *                           cleared, L kept); it acknowledges (AK: A cleared) when it sees S gone.
 *                           Set only by the S holder, cleared only by it (AK, SW, SA, SG): while A
 *                           is set nobody claims S, so "S clear and A set" can only mean "handed".
 *   bit  22    W  WOKEN     an unlock woke a waiter that has not run yet (it clears W when it does)
 *   bits 23-31 Q  QUEUED    how many threads are queued on &m->word, never more than the true
 *                           number: +1 at each park (saturating at QMAX = 511), -1 (floored at 0)
 *                           at each dequeue. Only read to compute a new waiter's handoff deadline,
 *                           by the spinner before it asks (A), and in LKM_WAKE_MORE copies by the
 *                           unlock: see there.
 *
 * Threads and roles. The OWNER holds L. At most one SPINNER holds S: a running thread that claimed
 * it (a newcomer, or a woken waiter once it runs: seed 004's "a woken waiter goes back to
 * spinning"); while S is set and nobody is owed, an unlock wakes nobody and the spinner takes the
 * lock (seed 004's "spinners and sleepers use separate locks"). At most one WOKEN waiter is in
 * flight (W: an unlock woke it, TOKEN_WAKE, and it has not run yet): while W is set and nobody is
 * owed, an unlock wakes nobody either - the woken thread will look at the word when it runs - but,
 * unlike S before issue 11 gave W its own bit, W keeps no running thread from spinning: a woken
 * waiter takes tens of µs to run where threads outnumber CPUs, and newcomers that met the held lock
 * in that time all parked, leaving CPUs idle (docs/results/mutex-wakebit-2core/). PARKED waiters
 * sleep in the parking lot, queued on &m->word. A waiter that first parks (in this lock call) when
 * the word says q threads are queued sets its HANDOFF DEADLINE to first park + (q + 1) * h (h = the
 * policy's handoff_ns, read then) and sleeps until it at the latest. If the lock is held when the
 * deadline passes, the waiter becomes OWED: counted in H, park token PARK_OWED, still queued in
 * place, no deadline of its own any more (only the caller's). While H > 0 every unlock goes out of
 * line and hands the lock, never released in between, to the first owed waiter in queue order.
 *
 * Why (q + 1) * h and not h (issue 12 made every waiter owed h after its first park): a lock on
 * which every wait is long only because many threads share few CPUs (256 threads on 2 CPUs) then
 * had every waiter owed and every acquisition was a handoff - a convoy at one wake-up per
 * acquisition, 400x slower. Scaled by the queue, deadlines of waiters parked at about the same time
 * lie h apart, so about one waiter per h becomes owed however many wait (the rate limit of the
 * design before issue 12, "one handoff per h", without its defect: that limiter ran only in unlocks
 * that woke somebody, and two alternating threads could keep every unlock from waking), and each
 * waiter has one timer that fires at most once per lock call: no timer thrash. The bound grows with
 * the number of waiters, as it must for any design that lets the lock run at full speed between
 * handoffs; it is stated below and in docs/mutex.md.
 *
 * The spinner's ask (A; stop 33, docs/results/issue11-2core-ask/; off unless lk_mutex_set_ask(1):
 * it ends owners' streaks, which costs throughput where they keep data in one cache). With two
 * threads and nothing
 * outside the lock the owner re-locks within a few ns of its unlock, and the spinner's reads (up to
 * 800 ns apart) rarely land in that gap: its budget runs out, it parks, and the owner's next unlock
 * wakes it - one wake-up, 10-50 us here, for one acquisition in a hundred: the p99. So a spinner
 * that has spun spin_min_ns asks instead (SK), where spins on this lock lately did not find it free
 * and nobody else waits; the owner's next unlock hands it the lock (UA), and the owner, re-locking,
 * finds it held and becomes the spinner: the two alternate, and no wait lasts much longer than
 * spin_min_ns. Not where a third thread waits: there a forced handover replaces an owner that would
 * have run on while the others were off the CPU, and costs each time (docs/results/
 * issue11-frontier-2core/). Such threads mostly yield rather than park, so the word does not show
 * them: the side table does (struct slot: waiting, others_at). Nor where spins find the lock free
 * (slot.lost): there a handover replaces a role swap that came anyway and ends the owner's streak.
 * An ask lasts at most min(spin_max_ns / 2, ASK_WAIT_MAX_NS); then the spinner withdraws it (SW)
 * and goes on as before (yields, park). An ask that went unanswered, or a handover left
 * unacknowledged, says the owner or the asker is not running (preempted, or the owner yields or
 * sleeps inside the lock): where that happens often, nobody asks on that slot for ASK_QUIET_NS
 * after each (ask_outcome()).
 *
 * Fork (issue 12, defect 5). A child process inherits the word but none of the threads behind P, S,
 * H and Q: a spinner of the parent would hold S forever (every unlock then takes the no-wake path),
 * owed waiters of the parent would keep H > 0, Q would count them, and P would say somebody is
 * parked (with S beside it no unlock ever clears it, and lk_mutex_destroy said EBUSY forever). The
 * child's atfork handler bumps the process's generation (1..127, cyclic); P, S, H and Q whose G
 * differs belong to an ancestor and are STALE (a W too: its woken thread is the parent's): every
 * slow-path transition below first drops them (fresh(v): P, S, W, G, H and Q cleared), in the same
 * CAS, and sets G to the current generation when the result has P, S, W, H or Q, 0 otherwise
 * (retag()). A waiter always runs its loop's first step, N, before it parks, so no thread of the
 * child ever sleeps behind a stale S, and a P it sets (PP, CP) is tagged with the child's
 * generation. The handler is registered by a constructor of priority 101, like the parking lot's
 * reset: in a statically linked program too, both run before any child handler the program
 * registers from main() or a default-priority constructor, so such a handler (the "lock in prepare,
 * unlock in child" pattern) already sees the ancestor's state as stale. No cost without fork: the
 * fast paths never look at G, the slow paths read the generation (a read-mostly global) and write
 * nothing more. Limit: G has 7 bits, so stale state survives unrecognised only in a word nobody
 * contended through 127 nested generations of forks.
 *
 * Transitions, each ONE atomic CAS or RMW on the word. v: the value it replaces; every slow-path one
 * computes its new value from fresh(v) and retags it. Saturating arithmetic: H+n = min(H + n, HMAX),
 * Q+n = min(Q + n, QMAX), Q-1 = max(Q - 1, 0), H-1 = (H == HMAX ? HMAX : H - 1) (a saturated H stays
 * saturated until UH recounts it). "clear(X)" clears bits X; "empty" = clear(P, H, Q).
 *
 *   lock fast path (mutex.h)   F1  fetch_or L                    acquired iff old L clear (acquire)
 *   unlock fast path           F2  CAS L -> 0                    (release)
 *   (mutex.h)                  F3  CAS v -> v & ~L               if !A && !(P && (!(S || W) || H > 0))
 *                                                                (release);
 *                                                                otherwise lk_mutex_unlock_slow,
 *                                                                which returns EPERM (no CAS, nobody
 *                                                                woken) if v has no L, even with P, H.
 *                                                                The first CAS expects L | the thread's
 *                                                                guess (lk_mutex_unlock_hint): 0, or a
 *                                                                v its F3 last released, less L; a hit
 *                                                                is F3 on that v, a miss costs a CAS
 *   lock_slow()                WC  CAS v -> v & ~W               woken with TOKEN_WAKE, first thing it
 *                                                                does (no CAS if W is clear)
 *                              N   CAS v -> fresh(v)             v has stale P, S, W, H or Q (fork)
 *                              B   CAS v -> v | L                barge: v has no L (acquire)
 *                              C   CAS v -> v | S                claim S: v has L, no S, no A,
 *                                                                H == 0, and spinning is allowed
 *                                                                (v with A and no S: a handover to
 *                                                                the spinner is in flight; look
 *                                                                again for up to ASK_ACK_WAIT_NS
 *                                                                for its AK before going on)
 *                              PP  CAS v -> v | P                v has L, no P; then park
 *   spin() (S owned)           SA  CAS v -> (v | L) & ~(S | A)   lock free: take it (acquire)
 *                              SK  CAS v -> v | A                lk_mutex_set_ask(1); v has L, no P,
 *                                                                W, H, Q, A; spin_min_ns spun, the
 *                                                                budget not cut by a deadline, and
 *                                                                the side table agrees (struct
 *                                                                slot): ask
 *                              AK  CAS v -> v & ~A               we asked and v has no S: handed
 *                                                                over (acquire), we own the lock
 *                              SW  CAS v -> v & ~A               we asked, v has S, and the ask's time
 *                                                                is up (ask_rounds()), or H > 0, or
 *                                                                a deadline came: withdraw the ask
 *                              SG  CAS v -> (v & ~(S | A)) | P   v has L, and the budget is spent, or
 *                                                                H > 0, or the spinner's own handoff
 *                                                                deadline came: park
 *   lock_validate (bucket      V   CAS v -> Q+1                  v has L and P: park, at the HEAD if
 *   lock)                                                        this waiter was queued before in
 *                                                                this call and H == 0, else at the
 *                                                                TAIL. Otherwise no CAS: do not park
 *                                                                (and a refused park is no park).
 *   lock_expired (bucket lock; EX  CAS v -> v | L                v has no L: take it (acquire), then
 *   handoff deadline passed,                                     leave the queue (TO, not owed)
 *   still queued, not owed)    EH  CAS v -> H+1                  v has L: owed; stays queued in place,
 *                                                                park token PARK_OWED, no deadline
 *   lock_timed_out (bucket     TO  CAS v -> last ? v with empty  the caller's deadline passed (or EX),
 *   lock; dequeued)                : Q-1, and H-1 if owed        the waiter dequeued itself
 *   lk_mutex_unlock_slow       UA  CAS v -> v & ~S               v has L, A and S, H == 0: HAND OVER
 *   (no bucket lock)                                             to the spinner that asked, L and A
 *                                                                kept (release); nobody woken
 *   unlock_callback (bucket    U0  CAS v -> v with clear(L),     nobody was queued (release)
 *   lock; the filter picked          empty
 *   the thread to unpark)      UH  CAS v -> more ? Q-1, H := (H < HMAX ? H - 1 : owed left)
 *                                         : v with empty        H > 0: HAND OVER, L kept (release),
 *                                                                TOKEN_HANDOFF to the first owed
 *                                                                waiter (the head if H == HMAX)
 *                              UW  CAS v -> (more ? Q-1 : v with empty) & ~L | W
 *                                                                H == 0: release, wake the head;
 *                                                                TOKEN_WAKE if W was clear (it set
 *                                                                W for it), else LK_TOKEN_NORMAL
 *                              UZ  CAS v -> v with clear(H)      H in 1..HMAX-1 but no owed waiter
 *                                                                queued: unreachable (invariant 4);
 *                                                                then unlock again
 *   lk_cond (src/cond.c; both  CP  CAS v -> v | P                v has L (requeue validate)
 *   bucket locks held)         CR  CAS v -> (v | (asked ? P : 0)), H+n, Q+n    n waiters appended
 *   (mutex bucket lock)        CT  as TO, owed                   a requeued waiter timed out there
 *
 * States (L, P, S, H) and the main transitions (- = clear, * = either; G, Q, W, stale state omitted;
 * "S set" in F2/F3 reads "S or W set"):
 *
 *                      F1, B, EX: +L                           C: +S (H = 0)
 *      +---------+ ------------------------> +---------+ -----------------------> +---------+
 *      | -,*,*,0 |                           | L,*,-,0 |                          | L,*,S,0 |
 *      +---------+ <------------------------ +---------+ <----------------------- +---------+
 *             ^      F2/F3: -L (no P,              |       SA (once L is clear):      |
 *             |      or S set and H = 0)           |       +L -S                      |
 *             |                                    | PP: +P, V: park                  | SG: -S +P,
 *             |     U0: -L -P (nobody queued)      v                                  | V: park
 *             +-------------------------------- +---------+ <-------------------------+
 *                   UW: -L, wake the head       | L,P,*,0 |
 *                   (+W if none in flight)      +---------+
 *                                                  |   ^
 *                  EH: H += 1 (a parked waiter's   |   |  UH/TO/CT take H to 0
 *                  deadline passed, L held)        v   |
 *                                               +---------+ --+  UH: hand the lock to the first
 *                                               | L,P,*,H |   |  owed waiter, L kept, H -= 1;
 *                                               +---------+ <-+  every unlock while H > 0
 *
 *   (CR can also requeue onto a free mutex: -,P,*,H; whoever takes the lock next hands it over.)
 *
 * Invariants (the bucket lock: that of &m->word):
 *  1. L is set exactly while some thread owns the mutex; a handoff (UH, UA) never clears it.
 *  2. "!L && P" implies a thread that is awake will take the lock: the spinner (S; it never gives
 *     up while L is clear), the thread an unlock just woke (UW; invariant 9), or a thread whose
 *     park attempt or expired() finds L clear (validate refuses, EX takes it).
 *  3. A waiter sleeps only after validate() saw L and P under the bucket lock; P is cleared only
 *     under that bucket lock, when no thread remains queued on the address (U0, UH/UW with !more,
 *     TO/CT with last). No lost wakeup: an unlock that clears L while P is set either runs its
 *     callback under the bucket lock (F3 not taken) or leaves an awake spinner (F3 with S) or a
 *     woken thread on its way (F3 with W, invariant 9).
 *  4. Whenever the bucket lock is free, with o = the number of queued waiters whose park token is
 *     PARK_OWED or 0 (condvar waiters): H == o if o < HMAX, and H == HMAX otherwise - or after
 *     owed waiters left a saturated count by timeout (H stays HMAX until the next UH recounts).
 *     So o > 0 implies H > 0, and 0 < H < HMAX implies an owed waiter is queued. Every change of H
 *     and of that queue happens under the bucket lock (V, EH, TO, UH, UW, U0, CR, CT). H > 0
 *     implies P. (Stale H - G from an ancestor - counts as 0.)
 *  5. Whenever the bucket lock is free, Q <= the number of threads queued on &m->word, and Q == 0
 *     when none is (V adds one per park, saturating; every dequeue subtracts one, floored at 0, and
 *     the last clears it). Q > 0 implies P.
 *  6. While H > 0, no unlock clears L: F2/F3 are not taken (the inline test sends H > 0 to the
 *     slow path) and the callback hands over (UH). L is clear with H > 0 only if it was already
 *     clear when H became > 0 (CR onto a free mutex, or after an F3 that raced a requeue); then the
 *     next owner (spinner, woken thread, barger) hands over at its unlock. EH requires L.
 *  7. Nobody is queued ahead of an owed waiter after it became owed: while H > 0, V queues at the
 *     tail and requeues append; the threads ahead of it only leave. While H == 0 a waiter parking
 *     again in the same call goes to the head (Go's sync.Mutex does the same), so the longest waiter
 *     stays first.
 *  8. UH serves owed waiters in queue order: the filter unparks the first one whose token is owed
 *     (invariant 4 says there is one); with H == HMAX it unparks the head and recounts the rest.
 *  9. W set (and ours, not stale) implies a thread unparked with TOKEN_WAKE has not yet run WC: only
 *     UW sets W, and only when W was clear, handing that token to the thread it unparks; only that
 *     thread clears it (WC), as the first thing it does when it runs (so at most one such thread
 *     is in flight). After WC the thread reads the word and takes a free lock (B), spins (C, S) or
 *     parks through validate(): it never sleeps past a release it did not see.
 * 10. A set implies S set (the spinner asked, UA not yet done) or, with S clear, L set and owned by
 *     the spinner that asked (UA done, AK not yet). Only the S holder sets A (SK), and only it
 *     clears it (AK, SW, SA, SG); nobody claims S while A is set (C), so S cannot come back
 *     between UA and AK (no ABA: a cleared S with A set always means "handed over"). UA needs H
 *     == 0, so A never takes the lock from an owed waiter (6); a spinner that sees H > 0 withdraws
 *     (SW) or gives up (SG). Stale A (an ancestor's) is dropped with the rest by fresh().
 *
 * The bound (docs/mutex.md). Let W first park at t0 (in this lock call), with q threads queued
 * according to the word it last read, and let n be the largest number of other threads blocked on
 * the mutex (in lock or timedlock, or requeued condvar waiters) at any time of W's wait; q <= n
 * (invariant 5: the word never counts more than are queued, and queued threads are blocked). W's
 * deadline is t0 + (q + 1) * h <= t0 + (n + 1) * h. At it, plus the time its timer needs to wake it
 * ("one wake-up"), W, under the bucket lock and still queued, takes the lock if it is free (EX) or
 * becomes owed (EH) with a waiters queued ahead of it, a <= n. (A waiter that is awake at its
 * deadline - woken as the spinner - stops spinning there, within one backoff wait, parks again and
 * is owed at once.) From
 * then on no unlock clears L (6), nobody is queued ahead of W (7) and every unlock hands the lock
 * to the first owed waiter (8), so W owns the lock after at most a + 1 critical sections and a + 1
 * wake-ups: the current owner's, then those of the owed waiters ahead of W. In all: W owns the
 * lock at most (n + 1) * (h + one critical section + one wake-up) + one wake-up after t0. Counted in
 * events: after W became owed, at most a <= n acquisitions by other threads start before W's - none
 * when W is the first owed waiter (a condvar waiter requeued onto a free mutex: one more, invariant
 * 6). A condvar waiter requeued onto the mutex is owed from the requeue: its bound is the second
 * half, with a = the owed waiters ahead of it.
 *
 * The cost. Between handoffs the lock is in throughput mode (barging, one spinner, one woken waiter
 * at a time). A handoff keeps the lock held by a thread that is still waking up: one wake-up of
 * idle lock per handoff, about once per h per lock where waits are long (deadlines of waiters
 * parked together lie h apart), instead of at every acquisition.
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
#if defined(LKM_CROWD) && LKM_CROWD && !defined(_GNU_SOURCE)
#define _GNU_SOURCE	/* LKM_CROWD only: sched_getaffinity() and CPU_COUNT() for its cap */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "locklab/mutex.h"
#include "locklab/park.h"
#include "locklab/relax.h"
#include "lockstat.h"
#include "test_hooks.h"
#include "mutex_internal.h"
#include "park_internal.h"

#define L LK_MUTEX_LOCKED
#define P LK_MUTEX_PARKED
#define S LK_MUTEX_SPINNING
#define W LK_MUTEX_WOKEN
#define A LK_MUTEX_ASKED
#define H_SHIFT LK_MUTEX_OWED_SHIFT
#define H_ONE LK_MUTEX_OWED_ONE
#define H_MASK LK_MUTEX_OWED_MASK
#define HMAX (H_MASK >> H_SHIFT)
#define Q_SHIFT LK_MUTEX_QUEUED_SHIFT
#define Q_MASK LK_MUTEX_QUEUED_MASK
#define QMAX (Q_MASK >> Q_SHIFT)

/* Unpark tokens (LK_TOKEN_NORMAL: woken, compete for the lock like anybody else) */
#define TOKEN_HANDOFF	((lk_token_t)1)	/* the lock is handed over, still LOCKED, to the woken thread */
#define TOKEN_WAKE	((lk_token_t)2)	/* the unlocker set W for the woken thread: it clears it (WC) */

/* Park tokens: what an unlocker's filter learns about a waiter (0: a requeued condvar waiter) */
#define PARK_QUEUED	((lk_token_t)1)	/* a mutex waiter, not owed */
#define PARK_OWED	((lk_token_t)2)	/* a mutex waiter owed a handoff (counted in H) */
/*
 * A mutex waiter, not owed, of a copy built with LKM_WAKE_MORE: it drops wm_n when it is woken with
 * TOKEN_WAKE_MORE. Such a copy's unlock hands TOKEN_WAKE_MORE only to these: a waiter of the
 * library's own code (PARK_QUEUED; lk_cond relocks a variant's mutex with the library's lock_slow)
 * would never drop it.
 */
#define PARK_QUEUED_WM	((lk_token_t)3)

/* Counted in H: owed mutex waiters and condvar waiters requeued onto the mutex (park token 0). */
static inline bool token_owed(lk_token_t park_token)
{
	return park_token == PARK_OWED || park_token == 0;
}

/* ---- the counts in the word (saturating, see the header comment) ------------------------------ */

static inline uint32_t owed_of(uint32_t v)
{
	return (v & H_MASK) >> H_SHIFT;
}

static inline uint32_t queued_of(uint32_t v)
{
	return (v & Q_MASK) >> Q_SHIFT;
}

static inline uint32_t with_owed(uint32_t v, uint32_t h)
{
	return (v & ~H_MASK) | ((h < HMAX ? h : HMAX) << H_SHIFT);
}

static inline uint32_t with_queued(uint32_t v, uint32_t q)
{
	return (v & ~Q_MASK) | ((q < QMAX ? q : QMAX) << Q_SHIFT);
}

/* One thread left the queue: Q-1 (floored), and H-1 if it was owed (a saturated H stays). */
static inline uint32_t dequeued(uint32_t v, bool owed)
{
	uint32_t h = owed_of(v), q = queued_of(v);

	if (owed && h > 0 && h < HMAX)
		v = with_owed(v, h - 1);
	return with_queued(v, q ? q - 1 : 0);
}

/* Nobody is queued any more: no PARKED, nobody owed, nobody counted. */
static inline uint32_t emptied(uint32_t v)
{
	return v & ~(P | H_MASK | Q_MASK);
}

/*
 * LKM_SPIN_ASK (default 1; 0 compiles the ask out): with lk_mutex_set_ask(1) (off by default), a
 * spinner that has spun spin_min_ns while nobody else waited asks for the lock (SK) and looks at the
 * word every few relaxes (ASK_POLL_MAX) until the next unlock hands it over (UA), or until its ask's
 * time is up (ask_rounds(); then it withdraws, SW, and goes on to its yields and the park).
 * ASK_ACK_WAIT_NS: how long a thread that finds a handover in flight (A without S) looks again for
 * the spinner's AK before it goes on to park; the spinner acknowledges within one ASK_POLL_MAX wait
 * unless it is preempted.
 */
#ifndef LKM_SPIN_ASK
#define LKM_SPIN_ASK 1
#endif
#ifndef ASK_LOST_MIN
#define ASK_LOST_MIN 256
#endif
#ifndef ASK_QUIET_NS
#define ASK_QUIET_NS 10000000
#endif
#ifndef ASK_WAIT_MAX_NS
#define ASK_WAIT_MAX_NS 10000
#endif
#ifndef ASK_POLL_MAX
#define ASK_POLL_MAX 4
#endif
#ifndef ASK_ACK_WAIT_NS
#define ASK_ACK_WAIT_NS 2000
#endif

/*
 * LKM_CROWD (default 0: compiled out; lab variants lk_mutex_v_crowd*): a waiter that would park
 * because another thread holds S spins beside it instead, looking at the word with the spinner's
 * backoff, and barges (B) when it finds the lock free. At most crowd_cap such threads in the process
 * (one counter, crowd_n): LKM_CROWD, and never more than the CPUs this process may run on
 * (sched_getaffinity(), at the first lock call; a cgroup CPU quota is not seen) minus two, the
 * owner and the S holder - so on 2 CPUs nothing changes. It stops when S comes free, when a waiter is
 * owed (H), or when its time is up: spin_max_ns of wall time, cut at the caller's timedlock deadline
 * and at its own handoff deadline. It then goes back to the loop, where it may take a free lock,
 * claim S, or park - without the LKM_WAIT_YIELDS yields if it spun its time out, so that it still
 * parks at most spin_max_ns plus one backoff wait and one yield later than without it (its end is
 * checked at its reads, SPIN_BACKOFF_MAX_NS apart at most). Once per park. No transition of
 * its own: it is a newcomer that looks a while before it parks, so every invariant holds as it is.
 * What for: with CPUs to spare (16 CPUs, 8-32 threads, docs/results/issue11-16core/) the S holder's
 * role is nearly always taken, an unlock wakes a parked waiter only when it is not, and the parked
 * queue drains one wake-up at a time: the 0.9-26 % of acquisitions that park make up a p99 of
 * 0.04-0.8 ms at 8-32 threads. Extra spinners park less. crowd_n: relaxed RMWs (a count, no
 * data), its decrement saturates at 0 (a child forked from a signal handler that interrupted a
 * crowd spinner: the child's reset ran in between), and a fork's child zeroes it (the parent's
 * spinners do not exist there). Counted as mutex_crowd_start / mutex_crowd_success in the
 * statistics build.
 * LKM_CROWD_ANY_CPUS (tests): allow LKM_CROWD extra spinners whatever the CPU count.
 * tests/test_mutex_crowd.c compiles this file with both on: the timedlock cut, the saturating
 * count, exclusion.
 */
#ifndef LKM_CROWD
#define LKM_CROWD 0
#endif
#ifndef LKM_CROWD_ANY_CPUS
#define LKM_CROWD_ANY_CPUS 0
#endif

/*
 * LKM_WAKE_MORE (default 0: compiled out; lab variants lk_mutex_v_wm*): an unlock may wake the head
 * of the queue although a spinner is awake or a woken waiter is on its way (S or W set, nobody
 * owed), when at least LKM_WAKE_MORE_Q threads are queued, fewer than LKM_WAKE_MORE such extra
 * woken waiters of this lock's side-table slot have yet to run, and the slot's record says woken
 * waiters take the lock rather than park again: wm_ok, the EWMA (weight 1/8, x256) of "a waiter
 * unparked without a handoff took the lock before it parked again", at least WM_OK_MIN. The woken
 * thread gets TOKEN_WAKE_MORE (TOKEN_WAKE, setting W, if W was clear; a plain token if it parked
 * through the library's own code, park token PARK_QUEUED, which would not drop wm_n: lk_cond relocks
 * a variant's mutex that way) and competes like a newcomer. The unlocker gives its claim back
 * whenever no TOKEN_WAKE_MORE went out. No new transition: it is UW, which already hands a second
 * woken thread a plain token. Only lkm_wm_unlock() (the variants' unlock, in place of mutex.h's
 * inline one) takes the slow path for it. Why: with CPUs to spare the spinner's role is almost always taken, so the queue drained one
 * wake-up at a time (docs/results/issue11-16core/); on 2 CPUs convoys left a CPU idle
 * (docs/results/issue11-2core-wake2/, where waking more without the record lost where woken
 * threads park again).
 */
#ifndef LKM_WAKE_MORE
#define LKM_WAKE_MORE 0
#endif
#ifndef LKM_WAKE_MORE_Q
#define LKM_WAKE_MORE_Q 2
#endif
#define WM_OK_MIN 192	/* of 256: three woken waiters in four took the lock */
#if LKM_WAKE_MORE
#define TOKEN_WAKE_MORE	((lk_token_t)3)	/* an extra woken thread (LKM_WAKE_MORE): it drops wm_n */
#endif
/* the woken waiters' outcomes: counted in the statistics build, recorded for LKM_WAKE_MORE */
#if LOCKLAB_STATS || LKM_WAKE_MORE
#define WOKEN_TRACK 1
#else
#define WOKEN_TRACK 0
#endif

/* ---- fork generation (defect 5; see the header comment) ---------------------------------------- */

#if LKM_WAKE_MORE
static void wm_reset(void);
#endif
#if LKM_CROWD
static void crowd_reset(void);
#endif
#if LKM_SPIN_ASK
static void ask_reset(void);
#endif

#define G_SHIFT 3
#define G_MASK (0x7fu << G_SHIFT)
#define G_TAGGED (P | S | W | A | H_MASK | Q_MASK)	/* the fields G vouches for */

static _Atomic uint32_t fork_gen = 1;	/* 1..127 */

static void fork_child(void)
{
	/* relaxed: the child is single-threaded while atfork handlers run */
	uint32_t g = atomic_load_explicit(&fork_gen, memory_order_relaxed);

	atomic_store_explicit(&fork_gen, g % 127 + 1, memory_order_relaxed);
#if LKM_CROWD
	crowd_reset();
#endif
#if LKM_WAKE_MORE
	wm_reset();
#endif
#if LKM_SPIN_ASK
	ask_reset();
#endif
}

/*
 * Registered when the library is loaded (before any word of this process can hold P, S, H or Q),
 * with the parking lot's priority (101), so that it runs before any child handler registered from
 * main() or a default-priority constructor of the program - in a statically linked program too,
 * where a default-priority constructor of the program's own objects runs before the library's.
 */
static __attribute__((constructor(101))) void fork_handler_init(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

static inline uint32_t gen_bits(void)
{
	/* relaxed: written only by the child's atfork handler, while the child is single-threaded */
	return atomic_load_explicit(&fork_gen, memory_order_relaxed) << G_SHIFT;
}

/* v with P, S, H and Q of an ancestor process (G is not ours) dropped, and G with them. */
static inline uint32_t fresh(uint32_t v)
{
	if ((v & G_TAGGED) && (v & G_MASK) != gen_bits())
		return v & ~(G_TAGGED | G_MASK);
	return v;
}

/* G follows P, S, H and Q: this process's generation while any is set, 0 when all are clear. */
static inline uint32_t retag(uint32_t v)
{
	v &= ~G_MASK;
	return v & G_TAGGED ? v | gen_bits() : v;
}

/* ---- the unlock's guess (locklab/mutex.h) ------------------------------------------------------- */

/*
 * lk_mutex_unlock()'s first CAS expects LOCKED | this, in code built with LK_MUTEX_UNLOCK_GUESS
 * (mutex.h: a program's, not this library's own). Written only by this thread's inline unlock,
 * and only with 0 or a word its fast path may release less LOCKED (mutex.h says why any such value
 * is safe). Zero in a new thread: the first guess is F2's.
 */
__thread uint32_t lk_mutex_unlock_hint __attribute__((tls_model("initial-exec")));

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

/* lk_mutex_set_ask(): 1 while spinners may ask (off by default: docs/mutex.md "The spinner's ask") */
static _Atomic uint32_t ask_on;

int lk_mutex_set_ask(int on)
{
	if (on != 0 && on != 1)
		return EINVAL;
	/* relaxed: a knob, like the policy's; a slow path may still see the old value once */
	atomic_store_explicit(&ask_on, (uint32_t)on, memory_order_relaxed);
	return 0;
}

int lk_mutex_get_ask(void)
{
	return (int)atomic_load_explicit(&ask_on, memory_order_relaxed);	/* relaxed: a knob */
}

/* LKM_SPIN_ASK copies, with the switch on: spinners may ask, and the side table keeps its inputs. */
static inline bool ask_enabled(void)
{
	/* relaxed: a knob, see lk_mutex_set_ask() */
	return LKM_SPIN_ASK && atomic_load_explicit(&ask_on, memory_order_relaxed);
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
	_Atomic uint16_t wm_ok;		/* LKM_WAKE_MORE: EWMA x256 of woken waiters that took the lock */
	_Atomic uint16_t wm_n;		/* LKM_WAKE_MORE: extra woken waiters (TOKEN_WAKE_MORE) not yet run */
	_Atomic uint64_t s_at;		/* LKM_WAIT_YIELDS: CLOCK_MONOTONIC ns of the last claim of S (C) */
	/*
	 * LKM_SPIN_ASK: threads in lock_slow() that found S held by another thread (at least three
	 * contend) and have not returned yet - parked, yielding, or runnable but preempted - which the
	 * word does not count while they are not queued. A spinner asks only while it is 0, not counting itself. Relaxed
	 * RMWs: a heuristic that orders nothing; a lock sharing the slot only makes asks rarer.
	 */
	_Atomic uint32_t waiting;
	/*
	 * LKM_SPIN_ASK, low 16 bits: EWMA (weight 1/8, x1024) of spins that did not find the lock free:
	 * 1 for a spin that ran out of budget or was handed the lock after asking, 0 for one that took
	 * the free lock. A spinner asks only while it is at least ASK_LOST_MIN: where spins find the
	 * lock free, a handover only replaces a role swap that was coming anyway, at the cost of the
	 * owner's streak. High 16 bits: the same of asks that went wrong (ask_outcome()).
	 */
	_Atomic uint32_t lost;
	/*
	 * LKM_SPIN_ASK: CLOCK_MONOTONIC ns when a thread last found S held by another, or an ask went
	 * wrong while asks often do (ask_outcome()); no spinner asks for ASK_QUIET_NS after
	 */
	_Atomic uint64_t others_at;
} __attribute__((aligned(32)));

static struct slot slots[1u << SLOT_BITS] __attribute__((aligned(64)));

#if LKM_SPIN_ASK
/* The fork's child (single-threaded): none of the parent's waiters exists here. */
static void ask_reset(void)
{
	for (unsigned i = 0; i < (1u << SLOT_BITS); i++)
		atomic_store_explicit(&slots[i].waiting, 0, memory_order_relaxed);	/* single-threaded */
}
#endif

static inline struct slot *slot_of(const lk_mutex_t *m)
{
	uint64_t h = (uint64_t)(uintptr_t)m * 0x9e3779b97f4a7c15ull;

	return &slots[h >> (64 - SLOT_BITS)];
}

/*
 * A waiter unparked without a handoff (*from_wake) took the lock, or is queued again (validate()
 * decided it, under the bucket lock): count it (statistics build) and, for LKM_WAKE_MORE, record it
 * in the slot's wm_ok.
 */
static inline void woken_outcome(struct slot *sl, bool *from_wake, bool took)
{
#if WOKEN_TRACK
	if (!*from_wake)
		return;
	*from_wake = false;
	if (took)
		lockstat_inc(mutex_woken_took);
	else
		lockstat_inc(mutex_woken_repark);
#if LKM_WAKE_MORE
	/* EWMA, weight 1/8, x256; relaxed: a heuristic, a lost update only shifts it a little */
	int ok = atomic_load_explicit(&sl->wm_ok, memory_order_relaxed);

	ok += ((took ? 256 : 0) - ok) / 8;
	atomic_store_explicit(&sl->wm_ok, (uint16_t)ok, memory_order_relaxed);
#else
	(void)sl;
#endif
#else
	(void)sl;
	(void)from_wake;
	(void)took;
#endif
}

#if LKM_WAKE_MORE
/* An extra woken waiter of this slot ran (or was not woken after all): wm_n - 1, floored at 0. */
static void wm_done(struct slot *sl)
{
	/* relaxed: a count only; the floor keeps a child's reset (wm_reset()) from wrapping it */
	uint16_t n = atomic_load_explicit(&sl->wm_n, memory_order_relaxed);

	while (n > 0 && !atomic_compare_exchange_weak_explicit(&sl->wm_n, &n, (uint16_t)(n - 1),
							       memory_order_relaxed, memory_order_relaxed))
		;
}

/* May an unlock of m wake one more waiter (LKM_WAKE_MORE)? If so, wm_n counts it in flight. */
static bool wm_claim(lk_mutex_t *m)
{
	struct slot *sl = slot_of(m);

	/* relaxed: heuristics; the word's transitions order everything */
	if (atomic_load_explicit(&sl->wm_ok, memory_order_relaxed) < WM_OK_MIN)
		return false;
	uint16_t n = atomic_load_explicit(&sl->wm_n, memory_order_relaxed);

	do {
		if (n >= LKM_WAKE_MORE)
			return false;
	} while (!atomic_compare_exchange_weak_explicit(&sl->wm_n, &n, (uint16_t)(n + 1), memory_order_relaxed,
							memory_order_relaxed));
	return true;
}

/* The fork's child (single-threaded): none of the parent's woken threads exists here. */
static void wm_reset(void)
{
	for (unsigned i = 0; i < (1u << SLOT_BITS); i++)
		atomic_store_explicit(&slots[i].wm_n, 0, memory_order_relaxed);	/* single-threaded */
}
#endif


/* ---- time and spin calibration ----------------------------------------------------------------- */

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * SPIN_BACKOFF_MAX_NS (default 800): the longest wait of a spinner between two reads of the word, in
 * ns, turned into relax rounds by the calibration as the budget is (spin_limits(): 62 pauses of
 * 12.8 ns on the Intel guest, 32 of 25 ns on the AMD one). Every read pulls the line from an owner
 * that re-locks at once. It was 16 relaxes until issue 11's stop 24: 205 ns on the Intel guest, 400 on
 * the AMD one. On the Intel guest's whole matrix, 64 relaxes (820 ns) were better by the lab's rule in
 * 13 of 108 cells and worse in none, on throughput, CPU per op and p99 alike: throughput 1.13-1.19x at
 * 2-3 threads / 1 ns, p99 0.11-0.64x at 3-64 threads / 1 ns (docs/results/issue11-frontier-2core/:
 * at 1 ns a late read rarely finds the lock free and mostly costs the owner its line). In time, not
 * relaxes, because a pause lasts 13 ns on one machine and 25-40 on others: the AMD guest's one loss
 * with 64 relaxes (8 threads / 100 ns, 0.86x, docs/results/mutex-tuning.md) was at 1.6 us between
 * reads (800 ns is twice the AMD guest's old 400 ns; not measured there). The 2 us p99 columns are
 * too noisy to judge either way. Costs: the budget is checked at reads only, so a spin may run past
 * it by up to one such wait (800 ns; 205 ns before): a budget of 1 us ends after about 1.6 us (125
 * rounds here) instead of 1.0. And behind holds longer than ~0.8 us the spinner takes the freed lock
 * later (the review measured p50 588 ns from release to owning it, 290 before); on 2 us critical
 * sections throughput stayed level or rose (0.98-1.18x over 7 repeats).
 */
#ifndef SPIN_BACKOFF_MAX_NS
#define SPIN_BACKOFF_MAX_NS 800
#endif
/* SPIN_BACKOFF_MAX (lab variants only): the cap in relaxes instead, whatever a relax lasts. */
#ifdef SPIN_BACKOFF_MAX
_Static_assert(SPIN_BACKOFF_MAX >= 1, "SPIN_BACKOFF_MAX: at least one relax between two reads");
#endif
_Static_assert(SPIN_BACKOFF_MAX_NS >= 0 && SPIN_BACKOFF_MAX_NS <= 1000000,
	       "SPIN_BACKOFF_MAX_NS: 0 (a read every relax) to 1 ms");

/* picoseconds per lk_cpu_relax(), measured once; 0 = not yet */
static _Atomic uint32_t relax_ps;
static _Atomic uint32_t backoff_rounds;	/* SPIN_BACKOFF_MAX_NS in relax rounds, set with relax_ps */
/* 1 when spinning can pay at all (more than one CPU online); 0 unknown, 2 no */
static _Atomic uint32_t multi_cpu;
#if LKM_CROWD
/* how many threads may spin beside the S holder (set by calibrate()) */
static _Atomic uint32_t crowd_cap;
/* how many do (its own line: every extra spinner writes it twice) */
static struct {
	_Atomic uint32_t n;
} __attribute__((aligned(64))) crowd;

/* The fork's child (single-threaded): none of the parent's extra spinners exists here. */
static void crowd_reset(void)
{
	atomic_store_explicit(&crowd.n, 0, memory_order_relaxed);	/* single-threaded */
}
#endif

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
#if LKM_CROWD
	{
		/*
		 * The owner and the S holder run too: at most cpus - 2 more spinners, cpus being those
		 * this process may run on (LKM_CROWD_ANY_CPUS: tests)
		 */
		cpu_set_t set;
		long cpus = n;

		if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) < cpus)
			cpus = CPU_COUNT(&set);
		long c = LKM_CROWD_ANY_CPUS ? LKM_CROWD : cpus - 2 < LKM_CROWD ? cpus - 2 : LKM_CROWD;

		/* relaxed: a cached cap, like relax_ps below; a reader that sees 0 first skips one crowd */
		atomic_store_explicit(&crowd_cap, c > 0 ? (uint32_t)c : 0, memory_order_relaxed);
	}
#endif
	/*
	 * relaxed (both): cached measurements; a reader that sees relax_ps before backoff_rounds reads
	 * 0 and uses 1 (spin_limits()), for one spin
	 */
	atomic_store_explicit(&backoff_rounds, (uint32_t)((uint64_t)SPIN_BACKOFF_MAX_NS * 1000 / r),
			      memory_order_relaxed);
	atomic_store_explicit(&relax_ps, ps == 1000000 ? 0 : r, memory_order_relaxed);
	return r;
}

struct spin_limits {
	uint32_t min, max;	/* relax rounds */
	uint32_t ps;		/* picoseconds per relax */
	uint32_t backoff;	/* relax rounds between two reads of the word, at most (SPIN_BACKOFF_MAX_NS) */
};

static inline struct spin_limits spin_limits(void)
{
	struct spin_limits sl = { 0, 0, 0, 1 };
	/* relaxed: cached measurement, see calibrate() */
	uint32_t ps = atomic_load_explicit(&relax_ps, memory_order_relaxed);

	if (!ps)
		ps = calibrate();
	sl.ps = ps;
#ifdef SPIN_BACKOFF_MAX
	sl.backoff = SPIN_BACKOFF_MAX;	/* lab variants lk_mutex_v_bo*: the cap in relaxes, as before */
#else
	/* relaxed: cached measurement, see calibrate() (no division on the slow path) */
	uint32_t b = atomic_load_explicit(&backoff_rounds, memory_order_relaxed);

	if (b > 1)
		sl.backoff = b;
#endif
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
	struct timespec handoff_at;	/* CLOCK_MONOTONIC: first park + (1 + Q then) * handoff_ns */
	struct timespec abs_mono;	/* park_deadline(): a CLOCK_REALTIME abs, as CLOCK_MONOTONIC */
	bool parked;			/* parked before in this call (handoff_at is set) */
	bool owed;			/* counted in H, park token PARK_OWED */
	bool took;			/* lock_expired() found the lock free and took it */
	bool counted;			/* LKM_SPIN_ASK: counted in slot_of(m)->waiting (lock_waiter_done()) */
	uint32_t counted_gen;		/* LKM_SPIN_ASK: the fork generation it was counted in */
#if WOKEN_TRACK
	bool from_wake;			/* unparked without a handoff, not queued since (woken_outcome()) */
#endif
};

#if WOKEN_TRACK
#define from_wake_of(w) (&(w)->from_wake)
#else
#define from_wake_of(w) ((bool *)NULL)	/* woken_outcome() does nothing */
#endif

/*
 * The deadline to sleep with: the caller's, or the handoff deadline if that comes first. A caller's
 * CLOCK_REALTIME deadline that comes first is slept on converted to CLOCK_MONOTONIC (abs_mono): slept
 * on as it is, a backward step of the realtime clock would stretch the sleep past handoff_at, and the
 * starvation bound with it. lock_expired() judges the caller's deadline on its own clock at wake-up
 * and sleeps on if it has not passed; a forward step is noticed at the latest at handoff_at (the
 * timeout is that late, never later). Once owed (H) the handoff bound is the unlocker's to keep and
 * the caller's deadline is slept on as it is.
 */
static const struct timespec *park_deadline(struct waiter *w, clockid_t *clock)
{
	if (!w->owed && (!w->abs || w->abs->tv_sec > FAR_SEC)) {
		*clock = CLOCK_MONOTONIC;
		return &w->handoff_at;
	}
	if (w->owed) {
		*clock = w->clock;
		return w->abs;
	}
	int64_t left = ts_ns(w->abs) - (int64_t)now_ns(w->clock);
	int64_t mono = (int64_t)now_ns(CLOCK_MONOTONIC);

	*clock = CLOCK_MONOTONIC;
	if (left > ts_ns(&w->handoff_at) - mono)
		return &w->handoff_at;
	if (w->clock == CLOCK_MONOTONIC)
		return w->abs;
	w->abs_mono = ns_ts(mono + left > 0 ? mono + left : 0);	/* passed: expires at once */
	return &w->abs_mono;
}

enum { SPIN_ACQUIRED, SPIN_GAVE_UP };

/*
 * LKM_SPIN_YIELDS (default 4; 0 compiles it out, lab variant lk_mutex_v_noyield; measured in
 * docs/results/mutex-tuning.md): a spinner whose learned budget ran out yields the CPU up to this many
 * times, still holding S and looking at the word after each, before it parks (parking_lot's SpinWait
 * yields too). With threads outnumbering CPUs a preempted owner may run meanwhile; with a few threads
 * and tiny critical sections the yielding spinner stops pulling the line away from an owner that
 * re-locks at once (3-4 threads, 1 ns: 1.3-1.7x, CPU per op -40-60%, in two quiet runs with no cell
 * worse). Not while a waiter is owed (H: it must be served, not kept waiting by our yields) nor when
 * the budget was cut by our own handoff deadline (learned false). No transition of its own: between
 * yields the spinner only looks.
 *
 * A yield takes as long as the threads queued on this CPU run (a time slice each, ~20 ms behind 16
 * CPU hogs, measured by the hostile review), so before each yield, yield_ok() stops them once the
 * spinner has spent spin_max_ns in all (spinning and yielding), or the caller's timedlock deadline or
 * our own handoff deadline has passed: a spinner parks at most spin_max_ns plus the longer of one
 * backoff wait (SPIN_BACKOFF_MAX_NS: the budget is checked at its reads) and one yield after it began,
 * and returns at most that late after its deadline.
 */
#ifndef LKM_SPIN_YIELDS
#define LKM_SPIN_YIELDS 4
#endif

/*
 * LKM_WAIT_YIELDS (default 4; 0 compiles it out, lab variant lk_mutex_v_nowaityield; measured in
 * docs/results/issue11-2core-stale-spinner/): a waiter that would park because S is taken yields the
 * CPU instead, up to this many times per park (looking at the word after each), when the spinner
 * claimed S more than spin_max_ns ago. A spinner gives S up within spin_max_ns and one yield of
 * starting (yield_ok(); its budget counts relax rounds and is checked at its reads, so a running
 * spinner can overrun that by up to one backoff wait, SPIN_BACKOFF_MAX_NS), so an older S usually
 * means the spinner, or the owner it waits for, is not running:
 * threads outnumber CPUs and one of them was preempted. Parking then empties the CPUs: every waiter
 * that arrives while S is stuck parks, the preempted thread's CPU runs it alone, and the parked
 * waiters come back one wake-up at a time (one woken waiter in flight, W), often queued behind a
 * busy CPU for a time slice while the other CPU idles (docs/results/issue11-2core-shared-calib/,
 * utilisation 0.70 at 32-64 threads / 1 ns / 100x outside). A yield instead keeps the waiter
 * runnable and lets the preempted thread run on this CPU. A fresh S (a spinner within its budget:
 * the common case with short critical sections) parks at once, as before, so no yields are spent
 * where the spinner is about to take the lock; an S claimed so recently that its stamp has not landed
 * yet parks after at most STAMP_GRACE_NS (below).
 * Not while a waiter is owed (H: it must be served), nor once our own handoff deadline has passed (we
 * park and become owed), nor once spin_max_ns has passed since the first of these yields since the
 * waiter last parked: a yield lasts a time slice per thread queued on the CPU (tens of ms behind CPU
 * hogs, the hostile review's r1), so, as for the spinner's own yields, time and not the count bounds
 * them. The caller's timedlock deadline is checked before each yield, as before each park. So a
 * waiter parks at most STAMP_GRACE_NS plus spin_max_ns plus one yield later than it would have (this
 * is before its first park, where the starvation bound starts counting, or before it parks again),
 * returns at most STAMP_GRACE_NS plus one yield after its timedlock deadline, and parks at most that
 * long after its handoff deadline; no transition of its own (between yields it only looks), no write
 * to the word. Cost: a claim of S reads the clock once, after C succeeds, and such a waiter reads it
 * before each yield and its park.
 */
#ifndef LKM_WAIT_YIELDS
#define LKM_WAIT_YIELDS 4
#endif

/*
 * STAMP_GRACE_NS (default 2000; 0 in the lab variant lk_mutex_v_grace0): how long a would-be parker
 * that finds S with a claim's time older than spin_max_ns waits for a newer stamp before it takes S
 * for stuck (wait_yield_ok()), looking at the stamp every 8 relaxes and at the end. A claim is
 * stamped just after it is made (stop 26), a clock read and a store: tens to a few hundred ns here.
 * The hostile review's reproducer (docs/results/issue11-stamp-2core/window.c: a lock idle longer
 * than spin_max_ns between bursts of two waiters) counts waiter yields behind a spinner claimed
 * microseconds before: in 3200 bursts, 19 yields in 7 bursts without the wait (1c0394c), none with
 * it, and none with the stamp before the claim (634c3ee) (window.txt there). A spinner held up
 * longer than the wait between its claim and its stamp is as good as stuck. Costs: a would-be
 * parker behind a stuck S yields up to 2 us later, once per park (its handoff deadline is checked
 * first); a timedlock caller may return that much later.
 */
#ifndef STAMP_GRACE_NS
#define STAMP_GRACE_NS 2000
#endif

/*
 * LKM_STAMP_BEFORE_CLAIM (default 0; lab variant lk_mutex_v_stamppre): write the claim's time before
 * each try of C, as before stop 26, instead of once after it succeeds. Before, a waiter could not
 * see a new S with an older claim's time (where stores stay in order, as on x86: the store and the
 * CAS are both relaxed); but the stamp - a clock read (23 ns here) and a store that pulls
 * the slot's line from the thread that last spun - delayed the claim of a thread that had just lost
 * the lock. Where the owner re-locks at once (2 threads / 1 ns) that delay cost 0.85x throughput and
 * 1.18x CPU per op (docs/results/issue11-stamp-2core/; a lab build that stamped before the first try
 * only was as slow, so it is the delay, not the retries). Where the lock is free half the time (2
 * threads / 100 ns / 1x outside) the delay helped: the late claim found the lock free and barged, and
 * a prompt one spins, so there the p99 rises from about 0.5 to 1.4 us (same record).
 */
#ifndef LKM_STAMP_BEFORE_CLAIM
#define LKM_STAMP_BEFORE_CLAIM 0
#endif

#if LKM_SPIN_ASK
/*
 * How long an ask waits for its handover, in relax rounds: half of spin_max_ns (the other half is
 * left to the yields, for an owner preempted on our CPU), at most ASK_WAIT_MAX_NS; and the spin as a
 * whole still ends by spin_max_ns (the caller caps it), so the spinner parks no later than before.
 */
static inline uint64_t ask_rounds(struct spin_limits lim)
{
	uint64_t r = (uint64_t)ASK_WAIT_MAX_NS * 1000 / lim.ps;

	return lim.max / 2 < r ? lim.max / 2 : r;
}
#endif

/*
 * slot.lost holds two EWMAs (weight 1/8, x1024), 16 bits each: the low half, spins that did not
 * find the lock free (1) or did (0); the high half, asks that went wrong - unanswered, or a handover
 * left unacknowledged (1) - or were answered (0).
 */
#define LOST_SPIN(x) ((x) & 0xffffu)
#define LOST_ASK(x) ((x) >> 16)

static inline uint32_t ewma_1024(uint32_t e, unsigned outcome)
{
	return e - e / 8 + (outcome ? 1024 / 8 : 0);
}

/*
 * LKM_SPIN_ASK: one more spin outcome in slot.lost (1: did not find the lock free). Read again here,
 * not at the spin's start: the word's other half may have moved since (ask_outcome()).
 */
static inline void lost_update(struct slot *sl, unsigned outcome)
{
#if LKM_SPIN_ASK
	/* relaxed (both): a heuristic, like est; no store where nothing changes */
	uint32_t lost = atomic_load_explicit(&sl->lost, memory_order_relaxed);
	uint32_t n = (lost & ~0xffffu) | ewma_1024(LOST_SPIN(lost), outcome);

	if (n != lost)
		atomic_store_explicit(&sl->lost, n, memory_order_relaxed);
#else
	(void)sl;
	(void)outcome;
#endif
}

/*
 * LKM_SPIN_ASK: one more ask outcome in slot.lost (1: went wrong). While asks go wrong often (at
 * least ASK_LOST_MIN of them) each one that does silences the slot for ASK_QUIET_NS (others_at):
 * the owner is not running - preempted, or it yields or sleeps inside the lock. A rare one (a
 * preempted vCPU) does not: ten of those in a run kept the ask off for most of it.
 */
static inline void ask_outcome(struct slot *sl, unsigned wrong)
{
#if LKM_SPIN_ASK
	/* relaxed (all): heuristics, like est */
	uint32_t lost = atomic_load_explicit(&sl->lost, memory_order_relaxed);
	uint32_t a = ewma_1024(LOST_ASK(lost), wrong);
	uint32_t n = (a << 16) | LOST_SPIN(lost);

	if (n != lost)
		atomic_store_explicit(&sl->lost, n, memory_order_relaxed);
	if (wrong && a >= ASK_LOST_MIN)
		atomic_store_explicit(&sl->others_at, now_ns(CLOCK_MONOTONIC), memory_order_relaxed);
#else
	(void)sl;
	(void)wrong;
#endif
}

#if LKM_SPIN_YIELDS
/*
 * May the spinner yield (again)? i: relax rounds spun so far; *t0: when the spin began, set at the
 * first yield from i (the spin's own clock, the relax calibration: no clock read on the spin path).
 * No, once spin_max_ns is spent in all, or the caller's deadline or our handoff deadline has passed.
 */
static bool yield_ok(const struct waiter *w, struct spin_limits lim, uint64_t i, unsigned yields, int64_t *t0)
{
	int64_t now = (int64_t)now_ns(CLOCK_MONOTONIC);

	if (yields == 0)
		*t0 = now - (int64_t)(i * lim.ps / 1000);
	if (now - *t0 >= (int64_t)((uint64_t)lim.max * lim.ps / 1000))
		return false;
	if (w && w->abs && deadline_passed(w->clock, w->abs))
		return false;
	return !(w && w->parked && now >= ts_ns(&w->handoff_at));
}
#endif

#if LKM_WAIT_YIELDS
/*
 * Would-be parker w sees v (L held; S taken by someone else, or not): yield instead (LKM_WAIT_YIELDS)?
 * Yes while S was claimed more than spin_max_ns ago (after up to STAMP_GRACE_NS, once per park, for
 * the stamp of a claim too young to carry it yet), nobody is owed, our handoff deadline has not
 * come, and less than spin_max_ns has passed since our first yield since the last park (*t0, set at
 * yields == 0). sl->s_at may belong to another lock sharing the slot: a heuristic.
 */
static bool wait_yield_ok(struct slot *sl, struct spin_limits lim, uint32_t v, const struct waiter *w,
			  unsigned yields, int64_t *t0, bool *graced)
{
	if (!(v & S) || (v & H_MASK) || !lim.max)
		return false;
	int64_t now = (int64_t)now_ns(CLOCK_MONOTONIC);
	int64_t max_ns = (int64_t)((uint64_t)lim.max * lim.ps / 1000);
	/* relaxed: a heuristic timestamp, see struct slot */
	int64_t s_at = (int64_t)atomic_load_explicit(&sl->s_at, memory_order_relaxed);

	if (now - s_at <= max_ns)
		return false;
	if (w->parked && now >= ts_ns(&w->handoff_at))
		return false;	/* park: we are owed at once (checked again below after the wait) */
	if (STAMP_GRACE_NS && yields == 0 && !*graced) {
		/*
		 * A spinner stamps its claim just after making it (see C in lock_slow()), so an S
		 * claimed a moment ago may still carry an older claim's time. Give the stamp
		 * STAMP_GRACE_NS to land before calling S stuck: no yield behind a spinner that is
		 * running; one held up longer than that between its claim and its stamp is as good as
		 * stuck. Once per park (*graced, reset with the yields).
		 */
		uint64_t rounds = (uint64_t)STAMP_GRACE_NS * 1000 / lim.ps;

		*graced = true;
		LK_TEST_HOOK("mutex.stamp_grace", w->m);	/* test builds only: about to wait */
		for (uint64_t k = 1; k <= rounds; k++) {
			lk_cpu_relax();
			/* relaxed: as above; a new stamp is a claim made since we looked */
			if (((k & 7) == 0 || k == rounds) &&
			    (int64_t)atomic_load_explicit(&sl->s_at, memory_order_relaxed) != s_at)
				return false;
		}
		now = (int64_t)now_ns(CLOCK_MONOTONIC);
	}
	/* a yield lasts a time slice per thread queued on this CPU: stop once spin_max_ns is spent */
	if (yields == 0)
		*t0 = now;
	else if (now - *t0 >= max_ns)
		return false;
	return !(w->parked && now >= ts_ns(&w->handoff_at));
}
#endif

/*
 * We own S. Spin until the lock is free and we take it (SA), or it is handed to us after we asked
 * (SK, then UA by the owner, AK), or until we give up (SG, only while L is set: invariant 2): the
 * budget is spent, a waiter is owed the lock (H > 0: it must not be overtaken), or - for a waiter
 * that parked before - its own handoff deadline came (it parks again and becomes owed). *vp: the
 * last value seen, updated.
 */
static int spin(lk_mutex_t *m, struct slot *sl, struct spin_limits lim, uint32_t *vp, const struct waiter *w)
{
	/* relaxed: a heuristic estimate, see the header comment */
	uint32_t est = atomic_load_explicit(&sl->est, memory_order_relaxed);
	bool may_ask = ask_enabled();
	uint32_t lost = may_ask ? atomic_load_explicit(&sl->lost, memory_order_relaxed) : 0;
	uint64_t budget = 2ull * (est >> 4) + lim.min;
	bool learned = true;		/* the budget is the learned one (not cut by a deadline) */
	uint32_t v = *vp;
	uint64_t i;
#ifdef SPIN_DELAY_START_DIV
	/*
	 * Lab variants lk_mutex_v_sd* (stop 34, docs/results/issue11-2core-start-delay/, not the
	 * default): the first look after the claim's only after lim.backoff / DIV relaxes. Where the
	 * owner re-locks at once (2 threads / 1 ns) its streaks grow and throughput with them
	 * (1.4-2.2x); where it works outside the lock as long as inside (2 / 100 ns / 1x) the late look
	 * costs p99 (7-10x)
	 */
	_Static_assert(SPIN_DELAY_START_DIV >= 1, "SPIN_DELAY_START_DIV: 1 (the cap) or more");
	uint32_t delay = lim.backoff / SPIN_DELAY_START_DIV ? lim.backoff / SPIN_DELAY_START_DIV : 1;
#else
	uint32_t delay = 1;
#endif
	unsigned yields = 0;	/* LKM_SPIN_YIELDS */
	int64_t yield_t0 = 0;	/* LKM_SPIN_YIELDS: when the spin began (yield_ok()) */
	bool asked = false;	/* LKM_SPIN_ASK: A is ours (SK done, neither AK nor SW yet) */
	bool ask_done = false;	/* LKM_SPIN_ASK: asked once in this spin already */
	uint64_t ask_end = 0;	/* LKM_SPIN_ASK: the relax round at which an unanswered ask is withdrawn */

	(void)yields;
	(void)yield_t0;
	(void)asked;
	(void)ask_done;
	(void)ask_end;
	lockstat_inc(mutex_spin_start);
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
#if LKM_SPIN_ASK
		if (asked && (v & L) && !(v & S)) {
			/*
			 * AK: UA handed us the lock (S cleared, L and A kept; invariant 10: nobody else
			 * clears S while A is set, and nobody claims it). acquire: pairs with UA's
			 * release CAS in lk_mutex_unlock_slow() (a P set in between by a would-be parker
			 * is an RMW: it continues UA's release sequence). The estimate is left alone: it
			 * learns from spins that found the lock free.
			 */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag(fresh(v) & ~A),
								  memory_order_acquire,
								  memory_order_relaxed)) {
				lost_update(sl, 1);
				ask_outcome(sl, 0);
				lockstat_inc(mutex_spin_success);
				lockstat_inc(mutex_spin_handed);
				lockstat_add(mutex_spin_ns_won, i * lim.ps / 1000);
				return SPIN_ACQUIRED;
			}
			continue;
		}
#endif
		if (!(v & L)) {
			/* SA. acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag((fresh(v) | L) & ~(S | A)),
								  memory_order_acquire,
								  memory_order_relaxed)) {
				/* EWMA, weight 1/8, x16 fixed point; relaxed: heuristic */
				int64_t e = (int64_t)est + (((int64_t)i << 4) - (int64_t)est) / 8;
				atomic_store_explicit(&sl->est, (uint32_t)(e < 0 ? 0 : e),
						      memory_order_relaxed);
				if (may_ask)
					lost_update(sl, 0);
				lockstat_inc(mutex_spin_success);
				lockstat_add(mutex_spin_ns_won, i * lim.ps / 1000);
				return SPIN_ACQUIRED;
			}
			continue;
		}
#if LKM_SPIN_ASK
		if (asked) {
			if ((fresh(v) & H_MASK) || i >= ask_end ||
			    (w && w->abs && deadline_passed(w->clock, w->abs)) ||
			    (w && w->parked && (int64_t)now_ns(CLOCK_MONOTONIC) >= ts_ns(&w->handoff_at))) {
				/*
				 * SW: no handover within the ask's time (ask_end), or a waiter is owed (it
				 * goes first), or the caller's deadline or our own handoff deadline
				 * passed. Then on as before: the yields while spin_max_ns allows, and the
				 * park. relaxed: a role bit; a failed CAS may mean UA came: the loop's
				 * first test sees it
				 */
				if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag(fresh(v) & ~A),
									  memory_order_relaxed,
									  memory_order_relaxed)) {
					v = retag(fresh(v) & ~A);
					asked = false;
					/* unanswered: the owner is not running (ask_outcome()) */
					if (i >= ask_end)
						ask_outcome(sl, 1);
				}
				continue;
			}
			for (uint32_t k = 0; k < delay; k++)
				lk_cpu_relax();
			i += delay - 1;
			delay = delay < ASK_POLL_MAX ? delay << 1 : ASK_POLL_MAX;
			LK_TEST_HOOK("mutex.asked", m);	/* test builds only: A is ours, about to look */
			/* relaxed: we only look; AK above is the acquire */
			v = atomic_load_explicit(&m->word, memory_order_relaxed);
			continue;
		}
		if (may_ask && i >= lim.min && learned && !ask_done && i < lim.max) {
			/*
			 * SK: we spun spin_min_ns, spins on this lock lately did not find it free (at
			 * least ASK_LOST_MIN of them), and nobody else waits (the word counts nobody
			 * parked, woken or owed, no third thread found S taken lately, and asks that
			 * often go wrong did not silence the slot: struct slot): ask the owner to hand
			 * us the lock at its unlock, instead of spinning on until we park (a wake-up,
			 * 10-50 us) while it re-locks. Judged once per spin, when the floor is reached (a
			 * failed CAS judges again). relaxed (CAS and loads): a role bit and heuristics;
			 * UA/AK order the data
			 */
			if (LOST_SPIN(lost) >= ASK_LOST_MIN && !(fresh(v) & (P | W | A | H_MASK | Q_MASK)) &&
			    atomic_load_explicit(&sl->waiting, memory_order_relaxed) <= (uint32_t)(w && w->counted) &&
			    (int64_t)(now_ns(CLOCK_MONOTONIC) -
				      atomic_load_explicit(&sl->others_at, memory_order_relaxed)) > ASK_QUIET_NS) {
				if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag(fresh(v) | A),
									  memory_order_relaxed,
									  memory_order_relaxed)) {
					v = retag(fresh(v) | A);
					asked = true;
					ask_done = true;
					delay = 1;
					ask_end = i + ask_rounds(lim) < lim.max ? i + ask_rounds(lim) : lim.max;
					lockstat_inc(mutex_spin_ask);
				}
				continue;
			}
			ask_done = true;
		}
#endif
#if LKM_SPIN_YIELDS
		if (i >= budget && learned && yields < LKM_SPIN_YIELDS && !(fresh(v) & H_MASK) &&
		    yield_ok(w, lim, i, yields, &yield_t0)) {
			/* the budget is spent: let another thread (a preempted owner?) run, look again */
			yields++;
			lockstat_inc(mutex_spin_yield);
			sched_yield();
			/* relaxed: we only look; the CAS above is the acquire */
			v = atomic_load_explicit(&m->word, memory_order_relaxed);
			continue;
		}
#endif
		if (i >= budget || (fresh(v) & H_MASK)) {
			/* SG. relaxed: only bits change hands; no data is published by giving up */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag((fresh(v) & ~(S | A)) | P),
								  memory_order_relaxed,
								  memory_order_relaxed))
				break;
			continue;
		}
		/*
		 * Exponential backoff between reads, up to lim.backoff relaxes (SPIN_BACKOFF_MAX_NS):
		 * every read pulls the line to shared state and costs the owner a read-for-ownership at
		 * its next RMW; with a tiny critical section that, not the waiting, is what spinning
		 * costs.
		 */
		for (uint32_t k = 0; k < delay; k++)
			lk_cpu_relax();
		i += delay - 1;
		delay = delay < lim.backoff / 2 ? delay << 1 : lim.backoff;
		LK_TEST_HOOK("mutex.spin", m);	/* test builds only: the spinner, S owned, about to look */
		/* relaxed: we only look; the CAS above is the acquire */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
	/* holders stay longer than we were willing to wait: decay by a quarter; relaxed: heuristic */
	if (learned && i >= budget) {
		atomic_store_explicit(&sl->est, est - est / 4, memory_order_relaxed);
		if (may_ask)
			lost_update(sl, 1);
	}
	lockstat_add(mutex_spin_ns_lost, i * lim.ps / 1000);
	*vp = retag((fresh(v) & ~(S | A)) | P);
	return SPIN_GAVE_UP;
}

#if LKM_CROWD
enum { CROWD_FULL = SPIN_GAVE_UP + 1, CROWD_TIME };

/*
 * LKM_CROWD: v has L and S (someone else's) and no H. If fewer than crowd_cap threads spin beside
 * S holders, join them: look at the word with backoff, barge (B) when L is clear, and stop when S
 * comes free, a waiter is owed, or the time is up (spin_max_ns, the caller's deadline, our own
 * handoff deadline: wall time, read at each look). *vp: the last value seen. SPIN_ACQUIRED: we own
 * the lock; SPIN_GAVE_UP: S came free, H appeared or the state is stale (the loop decides);
 * CROWD_TIME: the time is up; CROWD_FULL: not joined.
 */
static int crowd_spin(lk_mutex_t *m, struct spin_limits lim, uint32_t *vp, const struct waiter *w)
{
	/* relaxed (both): a cap and a count of running threads, heuristics that publish no data */
	uint32_t cap = atomic_load_explicit(&crowd_cap, memory_order_relaxed);
	uint32_t n = atomic_load_explicit(&crowd.n, memory_order_relaxed);
	uint32_t v = *vp, delay = 1;
	int r = CROWD_TIME;

	do {
		if (n >= cap)
			return CROWD_FULL;
	} while (!atomic_compare_exchange_weak_explicit(&crowd.n, &n, n + 1, memory_order_relaxed,
						       memory_order_relaxed));
	lockstat_inc(mutex_crowd_start);
#ifdef LKM_CROWD_JOINED
	LKM_CROWD_JOINED();	/* tests/test_mutex_crowd.c only: we joined the crowd */
#endif
	int64_t now = (int64_t)now_ns(CLOCK_MONOTONIC);
	int64_t end = now + (int64_t)((uint64_t)lim.max * lim.ps / 1000);

	if (w->parked && ts_ns(&w->handoff_at) < end)
		end = ts_ns(&w->handoff_at);
	if (w->abs) {
		/* the caller's deadline, on its own clock, as time left from now */
		int64_t left = ts_ns(w->abs) - (int64_t)now_ns(w->clock);

		if (now + left < end)
			end = now + left;
	}
	for (;;) {
		if (fresh(v) != v) {
			r = SPIN_GAVE_UP;	/* stale state (fork): the loop's N drops it */
			break;
		}
		if (!(v & L)) {
			/* B. acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, v | L, memory_order_acquire,
								  memory_order_relaxed)) {
				r = SPIN_ACQUIRED;
				lockstat_inc(mutex_crowd_success);
				break;
			}
			continue;
		}
		if (!(v & S) || (v & H_MASK)) {
			r = SPIN_GAVE_UP;
			break;
		}
		if ((int64_t)now_ns(CLOCK_MONOTONIC) >= end)
			break;
		for (uint32_t k = 0; k < delay; k++)
			lk_cpu_relax();
		delay = delay < lim.backoff / 2 ? delay << 1 : lim.backoff;
		/* relaxed: we only look; the CAS above is the acquire */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
	/*
	 * relaxed: a count only, the lock word orders the data. Saturating at 0: a child forked from a
	 * signal handler that interrupted us has zeroed it meanwhile (crowd_reset()).
	 */
	n = atomic_load_explicit(&crowd.n, memory_order_relaxed);
	while (n > 0 && !atomic_compare_exchange_weak_explicit(&crowd.n, &n, n - 1, memory_order_relaxed,
							       memory_order_relaxed))
		;
	*vp = v;
	return r;
}
#endif

/*
 * validate(), under the bucket lock: sleep only if the lock is held and P still set (V: count
 * ourselves in Q in the same decision); where to queue.
 */
static int lock_validate(void *ctx)
{
	struct waiter *w = ctx;
	/*
	 * relaxed: P is cleared, and H and Q change, only under this bucket lock, which we hold. An
	 * unlock that clears L with P set either runs its callback under this bucket lock (so it sees
	 * us queued, or we see its change) or leaves an awake spinner, whose own unlock will see P
	 * (invariants 2, 3). The CAS below fails if L was cleared meanwhile: we then look again.
	 */
	uint32_t v = atomic_load_explicit(&w->m->word, memory_order_relaxed), nv;

	do {
		/* (no stale state here: this waiter ran N in its loop, and none can appear since) */
		uint32_t fv = fresh(v);

		if ((fv & (L | P)) != (L | P))
			return LKP_PARK_NO;
		/* V. relaxed: bookkeeping under the bucket lock (invariant 5); no data */
		nv = retag(with_queued(fv, queued_of(fv) + 1));
	} while (nv != v && !atomic_compare_exchange_weak_explicit(&w->m->word, &v, nv, memory_order_relaxed,
								   memory_order_relaxed));
	woken_outcome(slot_of(w->m), from_wake_of(w), false);	/* woken, and queued again */
	/* invariant 7: parked before and nobody owed - back to the head, where the longest waiter is */
	return w->parked && !owed_of(nv) ? LKP_PARK_HEAD : LKP_PARK_TAIL;
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
				return false;	/* leave the queue: lock_timed_out() (TO) */
			}
			continue;
		}
		/* EH. relaxed: bookkeeping under the bucket lock (invariant 4); no data */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v,
							  retag(with_owed(fresh(v), owed_of(fresh(v)) + 1)),
							  memory_order_relaxed, memory_order_relaxed))
			break;
	}
	lockstat_inc(mutex_owed);
	LK_TEST_HOOK("mutex.owed", m);	/* test builds only: we are owed (EH), under the bucket lock */
	w->owed = true;
	*park_token = PARK_OWED;
	*deadline = park_deadline(w, clock);
	return true;
}

/* TO/CT, under the bucket lock, the waiter dequeued: P, H and Q follow the queue (invariants 3-5). */
static void left_queue(lk_mutex_t *m, bool owed, bool was_last)
{
	/* relaxed: bit bookkeeping under the bucket lock; no data is published */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed), nv;

	do {
		uint32_t fv = fresh(v);

		nv = retag(was_last ? emptied(fv) : dequeued(fv, owed));
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
 * The contended path. woken: we were unparked with TOKEN_WAKE, i.e. the unlocker set W for us (one
 * woken waiter in flight, as glibc's and Go's mutexes keep it: unlocks wake nobody else until we
 * run). We clear W first (WC) and then compete like a newcomer - spin if nobody does (seed 004
 * patch 3: a woken waiter goes back to spinning), take the lock if it is free, or park again.
 */
#if LKM_SPIN_ASK
/* lock_slow()'s waiter leaves, however it returns: uncount it (slot.waiting). */
static void lock_waiter_done(struct waiter *w)
{
	/*
	 * Not if a fork came in between (this thread forked inside lock_slow(), from a signal
	 * handler): the child's ask_reset() zeroed the count without us. relaxed: a heuristic count
	 */
	if (w->counted && w->counted_gen == gen_bits())
		atomic_fetch_sub_explicit(&slot_of(w->m)->waiting, 1, memory_order_relaxed);
}
#define WAITER_DONE __attribute__((cleanup(lock_waiter_done)))
#else
#define WAITER_DONE
#endif

static int lock_slow(lk_mutex_t *m, clockid_t clock, const struct timespec *abs, bool woken)
{
	struct slot *sl = slot_of(m);
	struct spin_limits lim = spin_limits();
	bool may_spin = lim.max > 0;
	bool own_s = false;	/* we claimed S (C): spin */
	struct waiter w WAITER_DONE = { .m = m, .clock = clock, .abs = abs };
	unsigned wait_yields = 0;	/* LKM_WAIT_YIELDS since our last park */
	bool stamp_waited = false;	/* LKM_WAIT_YIELDS: waited for a young claim's stamp since then */
	int64_t wait_t0 = 0;		/* LKM_WAIT_YIELDS: when the first of them began */
	bool crowded = false;		/* LKM_CROWD: spun beside the S holder since our last park */
	uint64_t ack_waits = 0;		/* looks at a handover to the spinner in flight since our last park */

	(void)wait_yields;
	(void)wait_t0;
	(void)stamp_waited;
	(void)crowded;
#if WOKEN_TRACK
	w.from_wake = woken;
#endif
	/* relaxed: we only look; every transition below is a CAS */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	for (;;) {
		if (woken) {
			/*
			 * WC: W is ours to clear, now that we run; from here on an unlock that finds
			 * threads parked and nobody spinning wakes one again. relaxed: a role bit, no
			 * data. (Invariant 9 says W is set; the check only keeps a word that says
			 * otherwise from looping here.)
			 */
			woken = false;
			LK_TEST_HOOK("mutex.woken", m);	/* test builds only: woken, W not cleared yet */
			for (;;) {
				uint32_t fv = fresh(v);

				if (!(fv & W))
					break;
				if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag(fv & ~W),
									  memory_order_relaxed,
									  memory_order_relaxed)) {
					v = retag(fv & ~W);
					break;
				}
			}
		}
		if (own_s) {
			own_s = false;
			if (spin(m, sl, lim, &v, &w) == SPIN_ACQUIRED) {
				woken_outcome(sl, from_wake_of(&w), true);
				return 0;
			}
			/* gave up: S cleared, P set, L was set; sleep until woken, then spin again */
			may_spin = false;
			if (abs && deadline_passed(clock, abs)) {
				lockstat_inc(mutex_timeout);
				return ETIMEDOUT;
			}
		}
		if (fresh(v) != v) {
			/* N: P, S, H or Q of an ancestor process (fork). relaxed: role bits, no data */
			atomic_compare_exchange_weak_explicit(&m->word, &v, fresh(v), memory_order_relaxed,
							      memory_order_relaxed);
			continue;
		}
		if (!(v & L)) {
			/* B. acquire: pairs with the release of the unlock that freed it */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, v | L, memory_order_acquire,
								  memory_order_relaxed)) {
				woken_outcome(sl, from_wake_of(&w), true);
				return 0;
			}
			continue;
		}
		if (abs && deadline_passed(clock, abs)) {
			lockstat_inc(mutex_timeout);
			return ETIMEDOUT;
		}
		if ((v & A) && !(v & S) && ack_waits <= (uint64_t)ASK_ACK_WAIT_NS * 1000 / lim.ps) {
			if (ack_waits == (uint64_t)ASK_ACK_WAIT_NS * 1000 / lim.ps) {
				/*
				 * The asker has not acknowledged for ASK_ACK_WAIT_NS: it was preempted
				 * holding the lock it was handed (the hostile review's F1): an ask gone
				 * wrong (ask_outcome())
				 */
				ask_outcome(sl, 1);
				ack_waits++;
				continue;
			}
			/*
			 * A handover to the spinner that asked is in flight (UA done, AK not yet;
			 * invariant 10): S must not be claimed until its AK. It comes within a few relaxes
			 * unless the spinner was preempted: look again rather than park (the old owner
			 * re-locking is the usual caller, and it becomes the next spinner).
			 */
			ack_waits++;
			lk_cpu_relax();
			/* relaxed: we only look; every transition is a CAS */
			v = atomic_load_explicit(&m->word, memory_order_relaxed);
			continue;
		}
		if (may_spin && !(v & (S | A | H_MASK))) {
#if LKM_WAIT_YIELDS && LKM_STAMP_BEFORE_CLAIM
			/* lab variant lk_mutex_v_stamppre: the stamp before every try of C, as before stop 26 */
			atomic_store_explicit(&sl->s_at, now_ns(CLOCK_MONOTONIC), memory_order_relaxed);
#endif
			/* C. relaxed: S is a role bit, no data */
			if (!atomic_compare_exchange_weak_explicit(&m->word, &v, retag(v | S),
								   memory_order_relaxed, memory_order_relaxed))
				continue;
			v = retag(v | S);
			own_s = true;
			/* test builds only: S is ours; the default stamps the claim's time just below */
			LK_TEST_HOOK("mutex.claimed", m);
#if LKM_WAIT_YIELDS && !LKM_STAMP_BEFORE_CLAIM
			/*
			 * Stamped once S is ours, not before the claim: the stamp delayed the claim of
			 * a thread that had just lost the lock, and that cost up to 1.18x at 2 threads / 1 ns
			 * (LKM_STAMP_BEFORE_CLAIM). A waiter that reads the slot between our claim and this
			 * store sees an older claim's time; it waits up to STAMP_GRACE_NS for this store
			 * before it takes our S for stuck (wait_yield_ok()). relaxed: a heuristic timestamp,
			 * orders nothing
			 */
			atomic_store_explicit(&sl->s_at, now_ns(CLOCK_MONOTONIC), memory_order_relaxed);
#endif
			continue;
		}
#if LKM_SPIN_ASK
		if ((v & S) && ask_enabled()) {
			/*
			 * Another thread spins while a third owns the lock: at least three contend. No
			 * spinner may ask while we wait (slot.waiting) nor for ASK_QUIET_NS after
			 * (slot.others_at). Relaxed (both): heuristics that order nothing
			 */
			if (!w.counted) {
				atomic_fetch_add_explicit(&sl->waiting, 1, memory_order_relaxed);
				w.counted = true;
				w.counted_gen = gen_bits();
			}
			atomic_store_explicit(&sl->others_at, now_ns(CLOCK_MONOTONIC), memory_order_relaxed);
		}
#endif
#if LKM_CROWD
		if (may_spin && !crowded && (v & S) && !(v & H_MASK)) {
			/* S is someone else's: spin beside it, once per park, if the crowd has room */
			crowded = true;
			int cr = crowd_spin(m, lim, &v, &w);

			if (cr == SPIN_ACQUIRED) {
				woken_outcome(sl, from_wake_of(&w), true);
				return 0;
			}
#if LKM_WAIT_YIELDS
			if (cr == CROWD_TIME)
				wait_yields = LKM_WAIT_YIELDS;	/* spun our time: no yields on top */
#endif
			continue;
		}
#endif
#if LKM_WAIT_YIELDS
		if (wait_yields < LKM_WAIT_YIELDS &&
		    wait_yield_ok(sl, lim, v, &w, wait_yields, &wait_t0, &stamp_waited)) {
			/* S is stuck: let the preempted spinner or owner run here instead of parking */
			wait_yields++;
			LK_TEST_HOOK("mutex.wait_yield", m);	/* test builds only: about to yield */
			sched_yield();
			/* relaxed: we only look; every transition is a CAS */
			v = atomic_load_explicit(&m->word, memory_order_relaxed);
			continue;
		}
#endif
		if (!(v & P)) {
			/* PP. relaxed: bit bookkeeping; validate() re-checks it under the bucket lock */
			if (!atomic_compare_exchange_weak_explicit(&m->word, &v, retag(v | P),
								   memory_order_relaxed, memory_order_relaxed))
				continue;
		}
		if (!w.parked) {
			/*
			 * The first park of this call: the handoff deadline, (1 + q) * h from now with q
			 * the threads queued according to the word (invariant 5: never more than there
			 * are). relaxed: policy knob. h <= 10 s and q <= 511: no overflow.
			 */
			uint64_t h = atomic_load_explicit(&policy.handoff_ns, memory_order_relaxed);
			uint64_t q = queued_of(fresh(v));

			w.handoff_at = ns_ts((int64_t)now_ns(CLOCK_MONOTONIC) + (int64_t)(h * (q + 1)));
		}
		LK_TEST_HOOK("mutex.park", m);	/* test builds only: about to park; validate() not run yet */
		clockid_t pclock;
		const struct timespec *pdl = park_deadline(&w, &pclock);
		lk_token_t token = LK_TOKEN_NORMAL;
		int r = lkp_park_ex(&m->word, &lock_park_ops, &w,
				    w.owed ? PARK_OWED : LKM_WAKE_MORE ? PARK_QUEUED_WM : PARK_QUEUED, pdl, pclock,
				    &token);

		/*
		 * Only a park that queued us counts: a refused one (LK_PARK_INVALID: validate() saw L or
		 * P clear) never waited in the queue, so this thread must not go back to the head
		 * (invariant 7) nor keep a handoff deadline it did not wait for - it is a newcomer still.
		 */
		if (r != LK_PARK_INVALID) {
			w.parked = true;
			lockstat_inc(mutex_park);
		}
		if (r == LK_PARK_UNPARKED) {
			if (token == TOKEN_HANDOFF) {
				/* acquire: pairs with the release CAS in unlock_callback() (UH) */
				(void)atomic_load_explicit(&m->word, memory_order_acquire);
				return 0;
			}
#if LKM_WAKE_MORE
			if (token == TOKEN_WAKE_MORE)
				wm_done(sl);
#endif
			may_spin = lim.max > 0;
			woken = token == TOKEN_WAKE;
#if WOKEN_TRACK
			w.from_wake = true;
#endif
			wait_yields = 0;
			stamp_waited = false;
			crowded = false;
			ack_waits = 0;
		} else if (r == LK_PARK_TIMEDOUT) {
			if (w.took)	/* took the free lock in lock_expired() */
				return 0;
			lockstat_inc(mutex_timeout);	/* the caller's deadline */
			return ETIMEDOUT;
		} else if (r < 0) {
			return -r;
		}
		/* relaxed: we only look */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
}

/*
 * An untimed lock has no error to return, and the only one lock_slow() can meet without a deadline
 * is the parking lot's -EDEADLK: the caller is inside a park already (a before_sleep callback of
 * lk_park that blocks on a mutex), where parking would corrupt its queue record (locklab/park.h).
 * Returning would leave the caller believing it holds the mutex: stop loudly instead.
 */
static __attribute__((noreturn, cold)) void nested_park(const char *fn)
{
	fprintf(stderr, "locklab: %s would block inside a parking-lot before_sleep callback (the thread "
		"is parked already); not supported, see locklab/park.h\n", fn);
	abort();
}

void lk_mutex_lock_slow(lk_mutex_t *m)
{
	if (lock_slow(m, CLOCK_MONOTONIC, NULL, false))
		nested_park("lk_mutex_lock");
}

void lk_mutex_lock_unparked(lk_mutex_t *m, uintptr_t token)
{
	if (token == TOKEN_HANDOFF) {
		/* acquire: pairs with the release CAS in unlock_callback() (UH) that handed L to us */
		(void)atomic_load_explicit(&m->word, memory_order_acquire);
		return;
	}
	if (token == TOKEN_WAKE) {
		if (lock_slow(m, CLOCK_MONOTONIC, NULL, true))
			nested_park("lk_mutex_lock");
		return;
	}
	lk_mutex_lock(m);	/* (never TOKEN_WAKE_MORE: requeued condvar waiters have park token 0) */
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

/* Whom the unlock's filter unparks, chosen from H under the bucket lock (H cannot change there). */
enum unlock_mode {
	MODE_UNSET,
	WAKE_HEAD,		/* H == 0: the head, to wake (UW) */
	HAND_FIRST_OWED,	/* 0 < H < HMAX: the first owed waiter, to hand the lock to (UH) */
	HAND_HEAD_RECOUNT,	/* H == HMAX: the head, to hand to; count the owed ones left (UH) */
};

struct unlock_ctx {
	lk_mutex_t *m;
	enum unlock_mode mode;
	lk_token_t picked;	/* park token of the thread being unparked */
	bool seen;		/* the filter has picked its one thread */
	uint32_t owed_left;	/* HAND_HEAD_RECOUNT: owed tokens among the threads left queued */
	bool called;		/* the callback ran */
	bool again;		/* UZ: nobody was unparked, H cleared: decide again */
	bool woke;		/* somebody was unparked */
	bool extra;		/* LKM_WAKE_MORE: wm_claim() let this unlock wake beside S or W */
	lk_token_t token;	/* what the callback gave the unparked thread */
};

/* Under the bucket lock: pick the thread to unpark (invariant 8), in queue order. */
static enum lk_filter_op unlock_filter(void *ctx, lk_token_t park_token)
{
	struct unlock_ctx *u = ctx;

	if (u->mode == MODE_UNSET) {
		/* relaxed: H changes only under this bucket lock, which we hold (invariant 4) */
		uint32_t h = owed_of(fresh(atomic_load_explicit(&u->m->word, memory_order_relaxed)));

		u->mode = h == 0 ? WAKE_HEAD : h < HMAX ? HAND_FIRST_OWED : HAND_HEAD_RECOUNT;
	}
	if (u->seen) {
		if (u->mode != HAND_HEAD_RECOUNT)
			return LK_FILTER_STOP;
		u->owed_left += token_owed(park_token);
		return LK_FILTER_SKIP;
	}
	if (u->mode == HAND_FIRST_OWED && !token_owed(park_token))
		return LK_FILTER_SKIP;		/* not owed: stays queued in place */
	u->seen = true;
	u->picked = park_token;
	return LK_FILTER_UNPARK;
}

/* Under the bucket lock: U0, UH, UW or UZ (see the header comment). */
static lk_token_t unlock_callback(void *ctx, struct lk_unpark_result r)
{
	struct unlock_ctx *u = ctx;
	lk_mutex_t *m = u->m;
	/* relaxed: the CAS below decides; under the bucket lock only L, S and stale bits move */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed), nv;
	lk_token_t token;

	u->called = true;
	u->again = false;
	u->woke = r.unparked_threads > 0;
	for (;;) {
		uint32_t fv = fresh(v);

		if (!r.unparked_threads && r.have_more_threads) {
			/*
			 * UZ: H said a waiter is owed, and the filter saw every queued one: none is.
			 * Invariant 4 rules this out; should it happen, clear H (relaxed: bookkeeping,
			 * L stays ours) and let lk_mutex_unlock_slow() decide again.
			 */
			nv = retag(with_owed(fv, 0));
			token = LK_TOKEN_NORMAL;
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, nv, memory_order_relaxed,
								  memory_order_relaxed)) {
				u->again = true;
				return token;
			}
			continue;
		}
		if (!r.unparked_threads) {
			/* U0: nobody queued, so nobody owed or counted (invariants 4, 5) */
			nv = retag(emptied(fv) & ~L);
			token = LK_TOKEN_NORMAL;
		} else if (u->mode != WAKE_HEAD) {
			/* UH: hand over, L kept; H and Q follow the queue */
			uint32_t h = u->mode == HAND_HEAD_RECOUNT ? u->owed_left : owed_of(fv) - 1;

			nv = retag(r.have_more_threads ? with_owed(dequeued(fv, false), h) : emptied(fv));
			token = TOKEN_HANDOFF;
		} else {
			/* UW: release; W for the woken thread unless one is already in flight (invariant 2) */
			nv = retag(((r.have_more_threads ? dequeued(fv, false) : emptied(fv)) & ~L) | W);
			token = fv & W ? LK_TOKEN_NORMAL : TOKEN_WAKE;
#if LKM_WAKE_MORE
			if (token == LK_TOKEN_NORMAL && u->extra && u->picked == PARK_QUEUED_WM)
				token = TOKEN_WAKE_MORE;
#endif
		}
		/*
		 * release: pairs with the acquire of whoever owns the lock next - the acquire CAS of a
		 * spinner or barger after U0/UW, the acquire load after lk_park() returns TOKEN_HANDOFF
		 * after UH (the unpark itself goes through the bucket lock too, but we do not rely on the
		 * parking lot's internals).
		 */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, nv, memory_order_release,
							  memory_order_relaxed))
			break;
	}
	u->token = token;
	if (token == TOKEN_HANDOFF)
		LK_TEST_HOOK("mutex.handoff", m);
	return token;
}

/* Threads are parked and either nobody spins or somebody is owed: wake or hand over. */
int lk_mutex_unlock_slow(lk_mutex_t *m, uint32_t v)
{
	struct unlock_ctx u;
	bool extra = false;	/* LKM_WAKE_MORE: wm_claim() counted our wake in wm_n */

	(void)extra;
	for (;;) {
		/*
		 * The state may have moved since the inline path (or UZ) looked: re-check as it does
		 * (F3), with stale P, S, H and Q dropped (after a fork the inline test saw an ancestor's H,
		 * or may keep seeing S).
		 */
		for (;;) {
			uint32_t fv = fresh(v);

			/*
			 * L first: an unlock of a free mutex changes nothing, even when threads are
			 * parked and owed it (a condvar waiter requeued onto the free mutex: P and H
			 * set, L clear) - never wake or hand a free lock to anybody.
			 */
			if (!(v & L))
				return EPERM;
			if ((fv & A) && (fv & S) && !(fv & H_MASK)) {
				/*
				 * UA: the spinner asked; hand it the lock, L kept, S cleared (its cue),
				 * A left for its AK. Nobody is owed (then UH goes first). Compiled in
				 * whatever LKM_SPIN_ASK is: lk_cond relocks any copy's mutex with the
				 * library's lock_slow. release: pairs with the spinner's AK (acquire)
				 */
				if (atomic_compare_exchange_weak_explicit(&m->word, &v, retag(fv & ~S),
									  memory_order_release,
									  memory_order_relaxed))
					return 0;
				continue;
			}
			if ((fv & P) && (!(fv & (S | W)) || (fv & H_MASK)))
				break;
#if LKM_WAKE_MORE
			if ((fv & P) && queued_of(fv) >= LKM_WAKE_MORE_Q && (extra || wm_claim(m))) {
				extra = true;
				break;
			}
#endif
			/* release: publishes the critical section to the next owner's acquire RMW */
			if (atomic_compare_exchange_weak_explicit(&m->word, &v, fv & ~L, memory_order_release,
								  memory_order_relaxed)) {
#if LKM_WAKE_MORE
				if (extra)
					wm_done(slot_of(m));	/* claimed, then the word changed: nobody woken */
#endif
				return 0;
			}
		}
		u = (struct unlock_ctx){ .m = m, .extra = extra };
		LK_TEST_HOOK("mutex.unlock_slow", m);	/* test builds only: decided to wake, not yet unparking */
		int r = lk_unpark_filter(&m->word, unlock_filter, unlock_callback, &u);

		if (r < 0 || !u.called) {	/* cannot happen for a valid mutex; never leave it locked */
			/* release: as in the callback */
			atomic_fetch_and_explicit(&m->word, ~L, memory_order_release);
#if LKM_WAKE_MORE
			if (extra)
				wm_done(slot_of(m));
#endif
			return 0;
		}
		if (!u.again)
			break;
		/* relaxed: we only look; the next CAS decides */
		v = atomic_load_explicit(&m->word, memory_order_relaxed);
	}
#if LKM_WAKE_MORE
	if (extra && u.token != TOKEN_WAKE_MORE)
		wm_done(slot_of(m));	/* a handoff, W's own wake, or nobody: no extra thread in flight */
	if (u.token == TOKEN_WAKE_MORE) {
		lockstat_inc(mutex_wake_more);
#ifdef LKM_WAKE_MORE_WOKE
		LKM_WAKE_MORE_WOKE();	/* tests/test_mutex_wake_more.c only: an extra waiter woken */
#endif
	}
#endif
	if (u.token == TOKEN_HANDOFF)
		lockstat_inc(mutex_handoff);
	else if (u.woke)
		lockstat_inc(mutex_wake);
	return 0;
}

#if LKM_WAKE_MORE
int lkm_wm_unlock(lk_mutex_t *m);

/*
 * The LKM_WAKE_MORE variants' unlock (mutex.h's lk_mutex_unlock with one more reason to go out of
 * line: threads queued, LKM_WAKE_MORE_Q or more, beside S or W, and the slot's record says woken
 * waiters take the lock; lk_mutex_unlock_slow() claims a place in wm_n).
 */
int lkm_wm_unlock(lk_mutex_t *m)
{
	uint32_t v = L;

	/* release (success): publishes the critical section to the next owner's acquire RMW */
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(&m->word, &v, 0, memory_order_release,
								     memory_order_relaxed), 1))
		return 0;
	/* relaxed: a heuristic; the slow path asks again before it claims */
	bool more = atomic_load_explicit(&slot_of(m)->wm_ok, memory_order_relaxed) >= WM_OK_MIN;

	while (!(v & A) &&
	       !((v & P) && (!(v & (S | W)) || (v & H_MASK) || (more && queued_of(v) >= LKM_WAKE_MORE_Q)))) {
		if (!(v & L))
			return EPERM;
		/* release: as above */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, v & ~L, memory_order_release,
							  memory_order_relaxed))
			return 0;
	}
	return lk_mutex_unlock_slow(m, v);
}
#endif

/* ---- for lk_cond (mutex_internal.h) ------------------------------------------------------------- */

bool lkm_mark_parked_if_locked(lk_mutex_t *m)
{
	/* relaxed: we only look; the CAS below decides */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed), nv;

	do {	/* CP */
		uint32_t fv = fresh(v);

		if (!(fv & L))
			return false;
		nv = retag(fv | P);
		/* relaxed: bit bookkeeping under the bucket lock, ordered with validate() by it; no data */
	} while (nv != v && !atomic_compare_exchange_weak_explicit(&m->word, &v, nv, memory_order_relaxed,
								   memory_order_relaxed));
	return true;
}

void lkm_requeued(lk_mutex_t *m, unsigned n, bool set_parked)
{
	/* relaxed: bookkeeping under the mutex's bucket lock (invariant 4); the requeue publishes nothing */
	uint32_t v = atomic_load_explicit(&m->word, memory_order_relaxed);

	uint32_t nv;

	do {	/* CR */
		uint32_t fv = fresh(v) | (set_parked ? P : 0);

		nv = retag(with_queued(with_owed(fv, owed_of(fv) + n), queued_of(fv) + n));
	} while (!atomic_compare_exchange_weak_explicit(&m->word, &v, nv, memory_order_relaxed,
							memory_order_relaxed));
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
