/* SPDX-License-Identifier: MIT */
/*
 * src/qspinlock.c - the queued spinlock's slow path and the per-thread node array (lock-word layout,
 * state transitions and fast paths: include/locklab/qspinlock.h).
 *
 * Node array: nodes[slot] points to LK_QSPIN_MAX_NODES nodes of the thread that owns `slot`; it is
 * allocated the first time the slot is claimed and kept (reused by the slot's next owner) so that a
 * tail value always decodes to valid memory. A thread's nodes are in use only inside its slow path:
 * once that returns, no tail names them and no other thread touches them.
 *
 * Slots. slot_map has a bit per slot (set = claimed); slot_owner[slot] = (epoch, generation, tid) of
 * the claimer (16, 16 and 32 bits), tid 0 while the slot is free; epoch = the process's fork epoch
 * (slot_epoch, bumped in every fork child). A thread claims a slot the first time it queues and
 * registers a pthread key destructor that gives it back when the thread exits. Per slot:
 *
 *   free (bit 0, tid 0) --claim: fetch_or bit, owner = (E, g+1, tid)--> owned (bit 1, tid)
 *   owned --key destructor: owner = (e, g, 0), fetch_and ~bit--> free
 *   owned by a dead thread of this process (e == E) --reclaim: cas owner (E, g, dead) -> (E, g+1, tid);
 *   bit stays 1--> owned
 *
 * After its destructor gave the slot back the thread has no slot (QS_SLOT_GONE): a later TLS
 * destructor of it that takes a contended qspinlock spins on trylock, never on the nodes another
 * thread may have claimed with the slot. A thread whose FIRST queueing happens in its last
 * destructor round (from a key that comes after ours in key order) registers our destructor too late:
 * it never runs, and the slot stays claimed after the thread is gone. There is no portable way to
 * see, in the thread, that this round is the last, so such slots are recognised from outside instead:
 * a claimer that finds no free bit reclaims a slot whose owner no longer exists (tgkill(pid, tid, 0)
 * fails with ESRCH). A live owner never looks dead: the tid is the kernel's and cannot change while the
 * thread lives, and a fork child re-tags the forking thread's slot with its new tid and the new epoch
 * (atfork handler). A fork child never reclaims a slot of an earlier epoch (a parent thread's): such a
 * thread may have been queued at the fork, its node still linked from a lock word the child inherited,
 * so those slots stay claimed in the child, as they always did. A dead owner can look alive only when
 * its tid was reused by a new thread of the process: the slot is then skipped, not taken. The
 * generation makes a reclaim CAS that raced with a give-back and a new claim fail even if the tid
 * came back.
 *
 * Who spins where (tail, pending, locked):
 *   pending waiter  the lock word, until locked == 0           then *,1,0 -> *,0,1
 *   queue head      the lock word, until locked == pending == 0  then takes the lock
 *   other queued    its own node's `locked` flag, set by its predecessor when that becomes head
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "locklab/qspinlock.h"
#include "locklab/relax.h"
#include "test_hooks.h"

struct qs_node {
	struct qs_node *_Atomic next;
	_Atomic uint32_t locked;	/* 1: our predecessor made us the queue head */
	uint32_t pad;
};

#define SLOT_WORDS ((LK_QSPIN_MAX_THREADS + 63) / 64)

static _Atomic uint64_t slot_map[SLOT_WORDS];			/* bit set = slot claimed */
static struct qs_node *_Atomic slot_nodes[LK_QSPIN_MAX_THREADS];	/* allocated once, reused */
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static bool slot_key_ok;

/* qs_slot: a slot index, or one of these */
#define QS_SLOT_NONE	(-1)	/* not claimed yet: the first queueing claims one */
#define QS_SLOT_FULL	(-2)	/* none free or reclaimable (or the claim failed): spin on trylock */
#define QS_SLOT_GONE	(-3)	/* given back by our TLS destructor: spin on trylock from now on */
static __thread int qs_slot = QS_SLOT_NONE;
static __thread struct qs_node *qs_nodes;
static __thread unsigned qs_depth;		/* nodes in use by this thread (signal-handler nesting) */

/*
 * A thread whose claim found no slot (QS_SLOT_FULL) claims again once a slot was given back since
 * (slot_returns moved), or after qs_full_wait fallbacks to trylock spinning without that (a slot
 * leaked by a dead thread gives no signal: only slot_reclaim() finds it, a scan that took 45-119 ms
 * with 16383 live slot holders in the re-review), doubling from FULL_RETRY_FALLBACKS after each
 * such claim up to FULL_RETRY_MAX. Until stop 36 such a thread never claimed again: it spun on
 * trylock, unfair, for the rest of its life while other threads got slots (the hostile review's
 * reproducer).
 *
 * Signal handlers of this thread may queue (they get the next node). qs_claiming is set while
 * slot_claim() runs: a handler that interrupts it neither claims nor queues (it spins on trylock),
 * and slot_claim() gives up at once when a handler that ran just before it claimed a slot; qs_nodes
 * is stored before qs_slot, so a handler that sees a slot sees its nodes. The signal fences order
 * these for the compiler (a handler runs on this thread: no other ordering is needed). The re-review
 * placed a signal in each of the two windows with gdb: a NULL node (crash) and a second slot.
 */
#define FULL_RETRY_FALLBACKS 4096
#define FULL_RETRY_MAX (1u << 20)
static _Atomic uint32_t slot_returns;	/* slot_give_back() calls, mod 2^32 */
static __thread uint32_t qs_full_returns;	/* slot_returns before our last claim that found none */
static __thread uint32_t qs_full_fallbacks;	/* fallbacks since */
static __thread uint32_t qs_full_wait;		/* fallbacks before the next claim without a return */
static __thread volatile sig_atomic_t qs_claiming;

/* The half-way pending handover (0,1,0 -> 0,0,1) takes a few instructions: wait this long for it. */
#define PENDING_LOOPS 512

#define OWNER(epoch, gen, tid) \
	(((uint64_t)((epoch) & 0xffffu) << 48) | ((uint64_t)((gen) & 0xffffu) << 32) | (uint32_t)(tid))
#define OWNER_EPOCH(o)	((uint32_t)((o) >> 48))
#define OWNER_GEN(o)	((uint32_t)((o) >> 32) & 0xffffu)
#define OWNER_TID(o)	((uint32_t)(o))

static _Atomic uint64_t slot_owner[LK_QSPIN_MAX_THREADS];	/* (epoch, generation, tid); tid 0 = free */
static _Atomic uint32_t slot_epoch;	/* bumped (mod 2^16) in each fork child */

static uint32_t epoch_now(void)
{
	/* relaxed: written only by a fork child's atfork handler, while that child is single-threaded */
	return atomic_load_explicit(&slot_epoch, memory_order_relaxed) & 0xffffu;
}

static uint32_t qs_gettid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Gives `slot` back: owned -> free. Called by its owner only (the key destructor, a failed claim). */
static void slot_give_back(unsigned slot)
{
	/* relaxed: while the slot is owned only its owner writes the word (reclaimers need a dead owner) */
	uint64_t o = atomic_load_explicit(&slot_owner[slot], memory_order_relaxed);

	/* relaxed: ordered before the bit's release below, which the next claimer acquires */
	atomic_store_explicit(&slot_owner[slot], OWNER(OWNER_EPOCH(o), OWNER_GEN(o), 0), memory_order_relaxed);
	/*
	 * release: our last use of our nodes (inside the slow path) and the owner word happen-before the
	 * next owner's claim of the slot (acquire fetch_or in slot_take_free), which then reinitialises
	 * them.
	 */
	atomic_fetch_and_explicit(&slot_map[slot / 64], ~(1ull << (slot % 64)), memory_order_release);
	/* release: pairs with the acquire load in claim_again(): a thread that sees the count move
	 * then sees the cleared bit */
	atomic_fetch_add_explicit(&slot_returns, 1, memory_order_release);
}

/*
 * The slot key's destructor, run in the exiting thread. Another thread may claim the slot (and reuse
 * its nodes) as soon as the bit is clear, so this thread must never queue on them again: a later
 * TLS destructor of ours that takes a contended qspinlock spins on trylock instead (QS_SLOT_GONE;
 * re-claiming a slot here could register our destructor too late, see the top of this file).
 */
static void slot_release(void *arg)
{
	unsigned slot = (unsigned)(uintptr_t)arg - 1;

	if (qs_slot == (int)slot) {
		qs_slot = QS_SLOT_GONE;
		qs_nodes = NULL;
	}
	slot_give_back(slot);
}

/*
 * fork child: a new epoch (the parent's threads' slots are never reclaimed here), and the forking
 * thread (the only one now) keeps its slot under its new tid.
 */
static void slot_atfork_child(void)
{
	/* relaxed everywhere: the child is single-threaded while atfork handlers run */
	uint32_t e = (epoch_now() + 1) & 0xffffu;

	atomic_store_explicit(&slot_epoch, e, memory_order_relaxed);
	if (qs_slot >= 0) {
		uint64_t o = atomic_load_explicit(&slot_owner[qs_slot], memory_order_relaxed);

		atomic_store_explicit(&slot_owner[qs_slot], OWNER(e, OWNER_GEN(o) + 1, qs_gettid()),
				      memory_order_relaxed);
	}
}

static void slot_key_create(void)
{
	slot_key_ok = pthread_key_create(&slot_key, slot_release) == 0;
	pthread_atfork(NULL, NULL, slot_atfork_child);	/* before any owner word holds a tid */
}

/* free -> owned by `me`: the lowest free slot, or -1 when every bit is set. */
static int slot_take_free(uint32_t me)
{
	for (unsigned w = 0; w < SLOT_WORDS; w++) {
		/* relaxed: a hint where a free bit is; the fetch_or decides */
		uint64_t m = atomic_load_explicit(&slot_map[w], memory_order_relaxed);

		while (~m) {
			unsigned b = (unsigned)__builtin_ctzll(~m);
			unsigned slot = w * 64 + b;

			if (slot >= LK_QSPIN_MAX_THREADS)
				break;
			/* acquire: pairs with the release fetch_and in slot_give_back() of the last owner */
			m = atomic_fetch_or_explicit(&slot_map[w], 1ull << b, memory_order_acquire);
			if (m & (1ull << b))
				continue;	/* lost the race for this bit; m is fresh */
			/* relaxed: the bit makes us the only writer (reclaimers skip tid 0) */
			uint64_t o = atomic_load_explicit(&slot_owner[slot], memory_order_relaxed);

			atomic_store_explicit(&slot_owner[slot], OWNER(epoch_now(), OWNER_GEN(o) + 1, me),
					      memory_order_relaxed);
			return (int)slot;
		}
	}
	return -1;
}

/* Whether no thread `tid` exists in this process any more (signal 0: an existence check only). */
static bool owner_gone(uint32_t tid)
{
	return syscall(SYS_tgkill, (long)getpid(), (long)tid, 0L) == -1 && errno == ESRCH;
}

/*
 * owned by a dead thread of this process (this epoch) -> owned by `me`: a slot whose owner exited
 * without its key destructor (its first queueing was in its last destructor round). Only when no bit
 * is free, so the cost (a system call per slot examined: 45-119 ms for 16383 live holders) is paid
 * only by a thread that would otherwise fall back to trylock spinning, at its first claim and at
 * each retry (see qs_full_wait). Returns the slot, or -1.
 */
static __attribute__((cold)) int slot_reclaim(uint32_t me)
{
	uint32_t epoch = epoch_now();

	for (unsigned slot = 0; slot < LK_QSPIN_MAX_THREADS; slot++) {
		/*
		 * acquire: pairs with nothing formal. The dead owner's last use of its nodes ended before
		 * it exited (nodes are used only inside the slow path) and the kernel's exit path orders
		 * that before tgkill() can report it gone; C11 has no word for it, the release of a
		 * normal give-back (which a dead owner never ran) is what the acquire would pair with.
		 */
		uint64_t o = atomic_load_explicit(&slot_owner[slot], memory_order_acquire);
		uint32_t tid = OWNER_TID(o);

		if (tid == 0 || tid == me || OWNER_EPOCH(o) != epoch || !owner_gone(tid))
			continue;
		/* acquire: as above. Fails if the slot was given back (tid 0) or taken meanwhile (g+1) */
		if (atomic_compare_exchange_strong_explicit(&slot_owner[slot], &o,
							    OWNER(epoch, OWNER_GEN(o) + 1, me),
							    memory_order_acquire, memory_order_relaxed))
			return (int)slot;
	}
	return -1;
}

static __attribute__((cold)) void slot_claim(void)
{
	int saved_errno = errno;	/* a lock call does not change errno (tgkill may) */
	uint32_t me;
	int slot;

	LK_TEST_HOOK("qspin.claim_enter", NULL);	/* test builds only: before the flag (a handler may claim) */
	qs_claiming = 1;		/* a signal handler that queues meanwhile neither claims nor queues */
	/* seq_cst signal fence: the flag is set before we look at qs_slot (a handler of this thread) */
	atomic_signal_fence(memory_order_seq_cst);
	if (qs_slot >= 0)		/* a handler that ran before the flag claimed one: ours now */
		goto out;
	pthread_once(&slot_once, slot_key_create);
	qs_slot = QS_SLOT_FULL;		/* what we are, unless this claim succeeds */
	qs_full_fallbacks = 0;
	qs_full_wait = !qs_full_wait ? FULL_RETRY_FALLBACKS :
		       qs_full_wait < FULL_RETRY_MAX ? 2 * qs_full_wait : FULL_RETRY_MAX;
	/* acquire: pairs with the release in slot_give_back(); read before the scan, so that a slot
	 * given back during it makes the next queueing claim again */
	qs_full_returns = atomic_load_explicit(&slot_returns, memory_order_acquire);
	if (!slot_key_ok)
		goto out;
	me = qs_gettid();
	slot = -2;
	LK_TEST_HOOK("qspin.claim", &slot);	/* test builds only: a test may set -1, "no slot found" */
	if (slot == -2) {
		slot = slot_take_free(me);
		if (slot < 0)
			slot = slot_reclaim(me);
	}
	if (slot < 0)
		goto out;
	/* relaxed: only the slot's owner (we, now) writes the entry */
	struct qs_node *n = atomic_load_explicit(&slot_nodes[slot], memory_order_relaxed);

	if (!n) {
		n = aligned_alloc(64, 64);
		if (!n) {
			slot_give_back((unsigned)slot);
			goto out;
		}
		/*
		 * release: the allocation is visible to a thread that decodes our tail; pairs with the
		 * acquire load in decode_tail() (the tail itself is also published by the acq_rel tail
		 * exchange).
		 */
		atomic_store_explicit(&slot_nodes[slot], n, memory_order_release);
	}
	/*
	 * Our destructor gives the slot back at thread exit - unless this is the thread's last
	 * destructor round and our key comes before the running one: then it never runs, and once we
	 * are gone slot_reclaim() takes the slot back.
	 */
	if (pthread_setspecific(slot_key, (void *)(uintptr_t)(slot + 1))) {
		slot_give_back((unsigned)slot);
		goto out;
	}
	qs_nodes = n;
	/* release signal fence: a handler of this thread that sees the slot sees its nodes */
	atomic_signal_fence(memory_order_release);
	qs_slot = slot;
out:
	/* seq_cst signal fence: everything above is done before a handler may claim or queue again */
	atomic_signal_fence(memory_order_seq_cst);
	qs_claiming = 0;
	errno = saved_errno;
}

/* Whether this thread, about to queue without a slot, should claim one now (see slot_returns). */
static inline bool claim_again(void)
{
	if (qs_slot == QS_SLOT_NONE)
		return !qs_claiming;
	if (qs_slot != QS_SLOT_FULL || qs_claiming)
		return false;
	/* acquire: pairs with the release in slot_give_back() */
	return atomic_load_explicit(&slot_returns, memory_order_acquire) != qs_full_returns ||
	       ++qs_full_fallbacks >= qs_full_wait;
}

static inline uint32_t encode_tail(unsigned slot, unsigned idx)
{
	return ((slot + 1) << LK_QSPIN_TAIL_SLOT_SHIFT) | (idx << LK_QSPIN_TAIL_IDX_SHIFT);
}

static inline struct qs_node *decode_tail(uint32_t tail)
{
	unsigned slot = (tail >> LK_QSPIN_TAIL_SLOT_SHIFT) - 1;
	unsigned idx = (tail >> LK_QSPIN_TAIL_IDX_SHIFT) & 3;

	/* acquire: pairs with the release store in slot_claim() */
	return atomic_load_explicit(&slot_nodes[slot], memory_order_acquire) + idx;
}

/* No node available: spin on trylock (unfair, but correct). */
static __attribute__((cold)) void spin_trylock(struct lk_qspinlock *l)
{
	unsigned spins = 0;

	LK_TEST_HOOK("qspin.fallback", l);	/* test builds only: no node, spinning on trylock */
	while (lk_qspin_trylock(l))
		lk_spin_wait(&spins);
}

/* Replace the tail field, keep pending and locked: p,*,* -> tail,*,*. Returns the old word. */
static inline uint32_t xchg_tail(struct lk_qspinlock *l, uint32_t tail)
{
	/* relaxed: the cas below validates the value */
	uint32_t old = atomic_load_explicit(&l->val, memory_order_relaxed);

	/*
	 * acq_rel: release publishes our node's initialisation to the thread that will queue behind us
	 * (it decodes our tail from this value and writes node->next); acquire lets us read the node of
	 * the previous tail, published the same way by its owner.
	 */
	while (!atomic_compare_exchange_weak_explicit(&l->val, &old, (old & ~LK_QSPIN_TAIL_MASK) | tail,
						      memory_order_acq_rel, memory_order_relaxed))
		;
	return old;
}

__attribute__((noinline)) void lk_qspin_lock_slow(struct lk_qspinlock *l, uint32_t val)
{
	struct qs_node *node, *next;
	unsigned spins = 0, idx;
	uint32_t tail, old;

	/* 0,1,0: a pending waiter is between seeing locked == 0 and setting it; let it finish */
	if (val == LK_QSPIN_PENDING) {
		for (int i = 0; i < PENDING_LOOPS; i++) {
			/* relaxed: only decides which path to take */
			val = atomic_load_explicit(&l->val, memory_order_relaxed);
			if (val != LK_QSPIN_PENDING)
				break;
			lk_cpu_relax();
		}
	}
	/* somebody pends or queues already: queue behind them */
	if (val & ~LK_QSPIN_LOCKED_MASK)
		goto queue;

	/*
	 * 0,0,* -> 0,1,*: become the pending waiter.
	 * acquire: if locked was already 0 we may own the lock below without another acquire;
	 * pairs with the release fetch_and in lk_qspin_unlock().
	 */
	val = atomic_fetch_or_explicit(&l->val, LK_QSPIN_PENDING, memory_order_acquire);
	if (val & ~LK_QSPIN_LOCKED_MASK) {
		/* pending or tail appeared meanwhile: undo our pending bit if we set it. *,1,* -> *,0,* */
		if (!(val & LK_QSPIN_PENDING_MASK))
			/* relaxed: we never owned anything through this bit */
			atomic_fetch_and_explicit(&l->val, ~LK_QSPIN_PENDING, memory_order_relaxed);
		goto queue;
	}
	/* we are the pending waiter: wait for the owner to go. *,1,1 -> *,1,0 */
	if (val & LK_QSPIN_LOCKED_MASK) {
		/* acquire: pairs with the release fetch_and in lk_qspin_unlock() */
		while (atomic_load_explicit(&l->val, memory_order_acquire) & LK_QSPIN_LOCKED_MASK)
			lk_spin_wait(&spins);
	}
	/* take it: *,1,0 -> *,0,1. relaxed: the acquire load (or fetch_or) above already synchronised */
	atomic_fetch_add_explicit(&l->val, LK_QSPIN_LOCKED - LK_QSPIN_PENDING, memory_order_relaxed);
	return;

queue:
	if (__builtin_expect(qs_slot < 0, 0) && claim_again())
		slot_claim();
	/* qs_claiming: we are a signal handler that interrupted slot_claim(); its slot may be half set */
	if (qs_slot < 0 || qs_claiming || qs_depth >= LK_QSPIN_MAX_NODES) {
		spin_trylock(l);
		return;
	}
	idx = qs_depth++;
	node = qs_nodes + idx;
	tail = encode_tail((unsigned)qs_slot, idx);
	/* relaxed: published by the acq_rel tail exchange below */
	atomic_store_explicit(&node->locked, 0, memory_order_relaxed);
	atomic_store_explicit(&node->next, NULL, memory_order_relaxed);

	/* the lock may have been released while we set up: one more try before queueing */
	if (lk_qspin_trylock(l) == 0)
		goto release;

	old = xchg_tail(l, tail);
	LK_TEST_HOOK("qspin.queued", (uintptr_t)tail);	/* test builds only: our tail is published */
	next = NULL;
	if (old & LK_QSPIN_TAIL_MASK) {
		struct qs_node *prev = decode_tail(old & LK_QSPIN_TAIL_MASK);

		/* release: pairs with the acquire load of node->next by prev when it becomes head */
		atomic_store_explicit(&prev->next, node, memory_order_release);
		/* acquire: pairs with the release store of locked = 1 by prev (head handover) */
		while (!atomic_load_explicit(&node->locked, memory_order_acquire))
			lk_spin_wait(&spins);
		spins = 0;
	}

	/* we are the head: wait for owner and pending waiter to go. *,x,y -> *,0,0 */
	/* acquire: pairs with the release fetch_and in lk_qspin_unlock() of the last owner */
	while ((val = atomic_load_explicit(&l->val, memory_order_acquire)) &
	       (LK_QSPIN_LOCKED_MASK | LK_QSPIN_PENDING_MASK))
		lk_spin_wait(&spins);

	/* last in the queue: n,0,0 -> 0,0,1. relaxed: the acquire load above synchronised with the owner */
	if ((val & LK_QSPIN_TAIL_MASK) == tail &&
	    atomic_compare_exchange_strong_explicit(&l->val, &val, LK_QSPIN_LOCKED, memory_order_relaxed,
						    memory_order_relaxed))
		goto release;
	/*
	 * Somebody queued behind us, or set pending transiently (it will see our tail, undo pending
	 * and queue behind us): either way a successor will link in. *,*,0 -> *,*,1.
	 * relaxed: only the head may set locked while tail != 0, and it already synchronised above.
	 */
	atomic_fetch_or_explicit(&l->val, LK_QSPIN_LOCKED, memory_order_relaxed);
	/* acquire: pairs with the release store of node->next by the successor */
	while (!(next = atomic_load_explicit(&node->next, memory_order_acquire)))
		lk_spin_wait(&spins);
	/* release: our writes (node reuse included) happen-before the successor runs as head */
	atomic_store_explicit(&next->locked, 1, memory_order_release);
release:
	qs_depth--;
}
