/* SPDX-License-Identifier: MIT */
/*
 * locklab/mutex.h - lk_mutex: a 4-byte adaptive mutex that spins only while spinning pays and
 * otherwise parks in the parking lot (locklab/park.h).
 *
 * Lock word (32 bits, the whole state of the lock):
 *
 *	bit  0     LOCKED    a thread owns the mutex
 *	bit  1     PARKED    threads may be parked in the parking lot on &m->word (the unlocker must look)
 *	bit  2     SPINNING  one waiter is awake and spinning on the word (a running thread that claimed
 *	                     it); every other waiter sleeps, and unlocks wake nobody else
 *	bits 3-9   GEN       the fork generation that wrote PARKED, SPINNING, ASKED, WOKEN, OWED and
 *	                     QUEUED (0 when all are clear): a child process treats an ancestor's
 *	                     spinner, woken thread and waiters as gone
 *	bits 10-20 OWED      how many parked waiters are owed a handoff (their handoff deadline passed,
 *	                     or they are condvar waiters requeued onto the mutex), saturating at 2047;
 *	                     while it is not 0 every unlock hands the lock to the first owed waiter
 *	bit  21    ASKED     the spinner asked for the lock: the next unlock hands it over (SPINNING
 *	                     cleared, LOCKED kept), and the spinner clears ASKED when it sees that
 *	bit  22    WOKEN     an unlock woke a waiter that has not run yet: unlocks wake nobody else
 *	                     until it does (one woken waiter in flight), but running threads may spin
 *	bits 23-31 QUEUED    how many threads are parked on the mutex (never more than the true number;
 *	                     saturates at 511): a new waiter's handoff deadline grows with it
 *
 * Lock is one atomic RMW (fetch_or LOCKED) when the mutex is free, whether or not waiters are
 * recorded; unlock is one CAS, LOCKED -> 0, or, where this thread's last unlock found a spinner
 * waiting, LOCKED|SPINNING|GEN -> SPINNING|GEN (a second CAS when the guess is wrong), and
 * calls out of line only when threads are parked and either no spinner is awake and no woken waiter
 * is on its way to take the lock, or a waiter is owed it. Both are inline below; neither reads a
 * clock or writes anything but the word and, for unlock in a program's code, one thread-local
 * guess (lk_mutex_unlock_hint, LK_MUTEX_UNLOCK_GUESS).
 * Everything else (spinning, parking, waking, handing the lock over) is out of line in src/mutex.c,
 * whose header comment has every transition, the invariants and the proof of the bound.
 *
 * Policy (process-wide, see struct lk_mutex_policy and docs/mutex.md): a waiter spins for a budget
 * learned from how long recent spinners had to wait for this lock (kept in a small hashed side table,
 * because 4 bytes leave no room), bounded by [spin_min_ns, spin_max_ns]; only one waiter spins at a
 * time, and the others park (after up to four yields, for spin_max_ns at most, when the spinner has
 * held its role for longer than spin_max_ns: it, or the owner, was preempted). Anti-starvation
 * (handoff_ns = h, default 1 ms): a waiter that first parks while q others are
 * parked on the mutex sleeps with the deadline first park + (q + 1) * h; if the lock is still held
 * then, it becomes owed, and from then on every unlock hands the lock directly to the first owed
 * waiter in queue order (never released in between, nobody barges, nobody queues ahead of it) until
 * no waiter is owed. The bound, in every interleaving: if at most n other threads are blocked on the
 * mutex while W waits, W owns it at most (n + 1) * (h + one critical section + one wake-up) + one
 * wake-up after it first parked; counted in events, once W is owed at most n other acquisitions
 * start before W's (none when W is the first owed waiter). Owed waiters are therefore made about one
 * per h, and the lock stays in throughput mode (barging, one spinner, one woken waiter at a time)
 * between them: no convoy where waits are long only because many threads share few CPUs.
 *
 * Ordering: a successful lock/trylock/timedlock is an acquire operation and unlock a release
 * operation: everything the previous owner did inside its critical section happens-before everything
 * the next owner does in its own.
 *
 * Fork: a child may unlock a mutex its forking thread held (lock in a pthread_atfork prepare
 * handler, unlock in the parent and child handlers, as with glibc); another thread of the parent
 * spinning on it or waiting for it at the fork does not hold up the child (GEN above). A
 * mutex held at the fork by another thread of the parent stays held forever in the child (POSIX).
 *
 * Misuse: unlocking an unlocked mutex returns EPERM; destroying a mutex that is held or waited on
 * returns EBUSY. An unlock by a thread that does NOT own a held mutex cannot be detected - the word has
 * no room for an owner id - and simply releases the lock (as glibc's PTHREAD_MUTEX_NORMAL does). The
 * mutex is not recursive: locking it twice from one thread deadlocks.
 */
#ifndef LOCKLAB_MUTEX_H
#define LOCKLAB_MUTEX_H

#include <errno.h>
#include "locklab/atomic-internal.h"
#include <stdint.h>
#include <sys/types.h>	/* clockid_t (<time.h> has it only with POSIX feature macros) */
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LK_MUTEX_LOCKED		0x1u
#define LK_MUTEX_PARKED		0x2u
#define LK_MUTEX_SPINNING	0x4u
#define LK_MUTEX_GEN_MASK	0x3f8u	/* bits 3-9 */
#define LK_MUTEX_OWED_SHIFT	10
#define LK_MUTEX_OWED_ONE	(1u << LK_MUTEX_OWED_SHIFT)	/* one waiter owed a handoff */
#define LK_MUTEX_OWED_MASK	(0x7ffu << LK_MUTEX_OWED_SHIFT)	/* bits 10-20 */
#define LK_MUTEX_ASKED		(1u << 21)	/* the spinner asked: the next unlock hands it the lock */
#define LK_MUTEX_WOKEN		(1u << 22)	/* an unlock woke a waiter that has not run yet */
#define LK_MUTEX_QUEUED_SHIFT	23
#define LK_MUTEX_QUEUED_ONE	(1u << LK_MUTEX_QUEUED_SHIFT)	/* one parked thread */
#define LK_MUTEX_QUEUED_MASK	(0x1ffu << LK_MUTEX_QUEUED_SHIFT)	/* bits 23-31 */

typedef struct lk_mutex {
	LK_ATOMIC(uint32_t) word;
} lk_mutex_t;

/* A statically initialised, unlocked mutex; equivalent to lk_mutex_init(). */
#define LK_MUTEX_INITIALIZER { 0 }

/*
 * Process-wide policy; every field is read with relaxed loads at the start of each slow path, so a
 * change applies to the next contended acquisition of every mutex. Defaults (and why) in the
 * comments and in docs/mutex.md.
 */
struct lk_mutex_policy {
	/*
	 * Lower bound of a spinner's budget, ns. Default 1000: a short critical section on a busy lock
	 * is usually over within a microsecond, and a park/unpark round trip costs several (two
	 * futex syscalls and two context switches, 5-20 us on this class of machine), so the first
	 * microsecond of spinning nearly always pays even when the learned estimate says otherwise.
	 */
	uint32_t spin_min_ns;
	/*
	 * Upper bound of a spinner's budget, ns. Default 20000: about the cost of sleeping and being
	 * woken; spinning longer than the work it saves can never pay. 0 disables spinning.
	 */
	uint32_t spin_max_ns;
	/*
	 * h. A waiter that first parks (in this lock call) while q other threads are parked on the
	 * mutex is owed the lock once it has waited (q + 1) * h: from then on unlocks hand it over, in
	 * queue order among owed waiters, until no waiter is owed (the bound is in the header comment
	 * above and in docs/mutex.md). Read at a waiter's first park. Default 1000000 (1 ms, as
	 * parking_lot's eventual fairness and Go's starvation mode): long enough that barging keeps its
	 * throughput win, short enough that no waiter starves. Scaling by the queue makes waiters owed
	 * about one per h however many wait, so a handoff (one wake-up) costs at most one acquisition
	 * per h instead of every acquisition on a lock where all waits are long (many threads per CPU).
	 * 0 = every parked waiter is owed at once (FIFO for parked waiters).
	 */
	uint64_t handoff_ns;
};

/* Limits checked by lk_mutex_set_policy(). */
#define LK_MUTEX_SPIN_MAX_NS_LIMIT	10000000u		/* 10 ms */
#define LK_MUTEX_HANDOFF_NS_LIMIT	(10ull * 1000000000ull)	/* 10 s */

/* Fills *p with the current policy. Returns 0, or EINVAL when p is NULL. */
int lk_mutex_get_policy(struct lk_mutex_policy *p);

/*
 * Replaces the process-wide policy. Returns 0, or EINVAL (policy unchanged) when p is NULL,
 * spin_min_ns > spin_max_ns, spin_max_ns > LK_MUTEX_SPIN_MAX_NS_LIMIT, handoff_ns >
 * LK_MUTEX_HANDOFF_NS_LIMIT. Safe to call while mutexes
 * are in use (each field is updated atomically; a slow path may see a mix of old and new fields).
 */
int lk_mutex_set_policy(const struct lk_mutex_policy *p);

/*
 * The spinner's ask (stop 33; docs/mutex.md "The spinner's ask"), process-wide, OFF by default.
 * On, a spinner that has spun spin_min_ns while it is alone with the owner, on a lock where spins
 * lately did not find it free, asks for the lock, and the owner's next unlock hands it over: two
 * threads alternate instead of one waiting out a park and a wake-up. That bounds the wait of the
 * second of two threads (2 threads, 100 ns critical sections on 2 CPUs: p99 0.13x), but it ends
 * the owner's streaks, which costs throughput wherever streaks keep data in one cache (7-50% in
 * the hostile review's two-thread shapes; the numbers are in the doc). lk_mutex_set_ask(1) turns
 * it on, (0) off (EINVAL for any other value); safe while mutexes are in use. lk_mutex_get_ask()
 * returns 1 or 0.
 */
int lk_mutex_set_ask(int on);
int lk_mutex_get_ask(void);

/* Initialises *m unlocked. Returns 0, or EINVAL when m is NULL. No memory is allocated. */
int lk_mutex_init(lk_mutex_t *m);

/*
 * Returns 0 (the mutex may then be freed or re-initialised), EINVAL when m is NULL, or EBUSY when
 * the mutex is held or a waiter is recorded in it (spinning or parked; the mutex is left untouched).
 * A thread that has called lk_mutex_lock() but not yet recorded itself leaves no trace in the word:
 * destroying a mutex that other threads may still be locking is undefined, as in POSIX.
 */
int lk_mutex_destroy(lk_mutex_t *m);

/* Out of line slow paths; not for direct use. */
void lk_mutex_lock_slow(lk_mutex_t *m);
int lk_mutex_unlock_slow(lk_mutex_t *m, uint32_t v);

/*
 * Not for direct use: lk_mutex_unlock's guess at the word it will find, less LOCKED. It is 0, or
 * the word this thread's last unlock released with its second CAS, less LOCKED: SPINNING and GEN
 * when a spinner was waiting, as it nearly always is on a busy lock. The next unlock's first CAS
 * expects LOCKED | the guess, so an unlock beside a waiting spinner is one RMW, not two (issue 11,
 * stop 25: docs/results/issue11-unlock-guess-2core/). Every value it takes is a word the fast path
 * may release (the loop's condition held for it), so a stale guess - another lock's, a signal
 * handler's, an ancestor process's - is only a wrong guess: its CAS fails and the unlock goes on as
 * without a guess, at the cost of that failed CAS.
 *
 * initial-exec: one fs-relative load, no __tls_get_addr call. A module that reads a variable of
 * another with that model needs the other's whole TLS block in the static TLS area, which a library
 * dlopen()ed late gets only from glibc's small surplus. So the inline unlock guesses only where
 * LK_MUTEX_UNLOCK_GUESS is 1: by default in code compiled for a program (__PIE__, or no __PIC__),
 * where liblocklab is loaded at startup because the program links it; not in code compiled for a
 * shared library (__PIC__ without __PIE__: liblocklab's own code, a plugin), whose unlock expects
 * LOCKED alone, as before stop 25. A library that is always loaded at startup (linked by its
 * program, or LD_PRELOADed, as locklab's shim is) may define LK_MUTEX_UNLOCK_GUESS 1.
 */
#ifndef LK_MUTEX_UNLOCK_GUESS
#if defined(__PIC__) && !defined(__PIE__)
#define LK_MUTEX_UNLOCK_GUESS 0
#else
#define LK_MUTEX_UNLOCK_GUESS 1
#endif
#endif
extern __thread uint32_t lk_mutex_unlock_hint __attribute__((tls_model("initial-exec")));

static inline uint32_t lk_mutex_guess_(void)
{
#if LK_MUTEX_UNLOCK_GUESS
	return lk_mutex_unlock_hint;
#else
	return 0;
#endif
}

static inline void lk_mutex_set_guess_(uint32_t guess)
{
#if LK_MUTEX_UNLOCK_GUESS
	lk_mutex_unlock_hint = guess;
#else
	(void)guess;
#endif
}

/*
 * For lk_cond: acquire m after being unparked from m's queue with `token` (handoff; wake: clear
 * WOKEN first; plain).
 */
void lk_mutex_lock_unparked(lk_mutex_t *m, uintptr_t token);

/*
 * Acquires m, sleeping as long as needed. Acquire ordering (pairs with the release in
 * lk_mutex_unlock of the previous owner). m must be a valid, initialised mutex.
 */
static inline void lk_mutex_lock(lk_mutex_t *m)
{
	/*
	 * One RMW whether or not waiters are recorded: setting L in a free word (keeping P/S) is an
	 * acquisition, setting it in a held word changes nothing. acquire: pairs with the release
	 * RMW of the previous owner's unlock. (Written so that gcc emits x86 `lock bts`: one
	 * read-for-ownership of the line, no separate load.)
	 */
	if (__builtin_expect(atomic_fetch_or_explicit(&m->word, LK_MUTEX_LOCKED, memory_order_acquire) &
			     LK_MUTEX_LOCKED, 0))
		lk_mutex_lock_slow(m);
}

/*
 * Acquires m if it is free right now, never waits. Returns 0 (acquired, acquire ordering as
 * lk_mutex_lock) or EBUSY (held by someone; no ordering). A free mutex with waiters queued may be
 * taken (barging), as pthread_mutex_trylock does.
 */
static inline int lk_mutex_trylock(lk_mutex_t *m)
{
	/* acquire: pairs with the release of the previous owner's unlock (see lk_mutex_lock) */
	if (__builtin_expect(atomic_fetch_or_explicit(&m->word, LK_MUTEX_LOCKED, memory_order_acquire) &
			     LK_MUTEX_LOCKED, 0))
		return EBUSY;
	return 0;
}

/*
 * Acquires m, giving up when the absolute deadline *abs on `clock` (CLOCK_MONOTONIC or
 * CLOCK_REALTIME) has passed. Returns 0 (acquired, ordering as lk_mutex_lock), ETIMEDOUT (not
 * acquired; at once when the deadline is already past and the mutex is held), EINVAL (m or abs
 * NULL, another clock, or abs->tv_nsec outside [0, 1e9); checked before anything else), or EDEADLK
 * (it would sleep, and the caller is parked already: called from a before_sleep callback of lk_park,
 * locklab/park.h; there lk_mutex_lock aborts). A spinner
 * notices the deadline only when it stops spinning, so it may return up to spin_max_ns late (and up to
 * one backoff wait more: the spinner checks its budget when it reads the word, at most 800 ns apart
 * by the relax calibration), plus
 * one sched_yield() (a spinner whose budget ran out yields before it parks, checking the deadline and
 * the time it has spent before each yield; so does a waiter behind a spinner stuck past spin_max_ns,
 * checking the deadline and its time before each yield, and before its first yield waiting up to
 * 2 us for the spinner's stamp). One yield lasts as long as the threads queued on the CPU run: tens
 * of ms behind CPU hogs.
 */
int lk_mutex_timedlock(lk_mutex_t *m, clockid_t clock, const struct timespec *abs);

/*
 * Releases m. Returns 0, or EPERM when m was not locked (nothing changes). Release ordering: pairs
 * with the acquire of the next owner's lock. No syscall unless a thread is parked and either no
 * spinner is awake to take the lock or a waiter is owed it (then it is handed the lock).
 */
static inline int lk_mutex_unlock(lk_mutex_t *m)
{
	/* the word this thread's last unlock released, if it was more than LOCKED (see above) */
	uint32_t v = LK_MUTEX_LOCKED | lk_mutex_guess_(), e = v;

	/*
	 * One CAS, expecting the guess, without a preceding load: it takes the line for ownership
	 * once. A hit is F2 (no guess: LOCKED -> 0) or F3 (a word the loop below released before:
	 * keeps its other bits). release (success): publishes the critical section to the next
	 * owner's acquire RMW.
	 */
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(&m->word, &v, e & ~LK_MUTEX_LOCKED,
								     memory_order_release, memory_order_relaxed), 1))
		return 0;
	/*
	 * the slow path only when the spinner asked for the lock (it is handed over), or threads are
	 * parked and either nobody awake will take the lock (no spinner, no woken waiter on its way)
	 * or a waiter is owed a handoff (then it must get the lock, not the spinner)
	 */
	while (!(v & LK_MUTEX_ASKED) &&
	       !((v & LK_MUTEX_PARKED) &&
		 (!(v & (LK_MUTEX_SPINNING | LK_MUTEX_WOKEN)) || (v & LK_MUTEX_OWED_MASK)))) {
		if (!(v & LK_MUTEX_LOCKED))
			return EPERM;
		/* the next unlock's guess: only ever a word this loop may release */
		lk_mutex_set_guess_(v & ~LK_MUTEX_LOCKED);
		/* release: as above */
		if (atomic_compare_exchange_weak_explicit(&m->word, &v, v & ~LK_MUTEX_LOCKED,
							  memory_order_release, memory_order_relaxed))
			return 0;
	}
	lk_mutex_set_guess_(0);
	return lk_mutex_unlock_slow(m, v);
}

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_MUTEX_H */
