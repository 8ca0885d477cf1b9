/* SPDX-License-Identifier: MIT */
/*
 * locklab/spin_mcs.h - MCS queue spinlock (Mellor-Crummey & Scott, 1991).
 *
 * The lock is one pointer: the tail of a queue of waiter nodes, NULL when free. Each thread brings its
 * own node (on its stack, or lk_spin_mcs_lock_tls() uses a per-thread one) and spins on *its own*
 * node's `locked` flag, so a handover touches exactly one remote line (the successor's node) instead
 * of every waiter's (ticket) - O(1) traffic per release.
 *
 *	lock:   node.next = NULL, node.locked = 0
 *	        prev = xchg(tail, &node)             prev == NULL: lock was free, we own it
 *	        else prev->next = &node; spin until node.locked
 *	unlock: next = node.next
 *	        if next == NULL: cas(tail, &node -> NULL) succeeds: queue empty, done
 *	                         else a successor is linking itself in: wait for node.next
 *	                         (tail == NULL instead: the lock is not held, EPERM)
 *	        node.next = NULL; next->locked = 1   hand over; the node leaves with next == NULL
 *
 *	tail: NULL --A--> &A --B--> &B (A.next=&B) --A unlock--> B.locked=1 --B unlock--> cas &B->NULL
 *
 * Invariants: the holder's node is the head of the queue; every node in the queue except the tail has
 * (or is about to have) its `next` set; a node may be reused only after its owner's unlock returned;
 * a node that is not in any queue has next == NULL (lock sets it, every unlock leaves it so: the
 * contended unlock clears it before the handover store, its only extra store; the uncontended path is
 * the kernel's and CK's load + CAS). FIFO: a preempted waiter stalls everybody behind it
 * (LAB_LOCK_FIFO).
 *
 * Misuse (the node records neither its lock nor whether it is held, so detection rests on the tail
 * and on next == NULL outside a queue):
 *   - unlock of a lock nobody holds (tail NULL) returns EPERM and changes nothing, with any node
 *     that is not queued on or holding another lock (see the last item), including a repeated
 *     unlock with the node of the last holder;
 *   - a repeated unlock with a released node while another thread holds the lock writes nothing and
 *     returns EPERM once it sees the lock free; until then it spins (forever if the lock never looks
 *     free, e.g. when the caller itself holds it again through another node);
 *   - NOT detected: unlocking with a node that is queued on or holds ANOTHER lock (if that node has
 *     a successor there, the successor is handed that lock), and unlocking by a thread that is not
 *     the holder but passes the holder's node (that is the holder's unlock).
 * The per-thread node wrappers (lk_spin_mcs_*_tls) pick the node themselves from a table of the locks
 * this thread holds through them, so an unlock of a lock not in it returns EPERM at once.
 */
#ifndef LOCKLAB_SPIN_MCS_H
#define LOCKLAB_SPIN_MCS_H

#include <errno.h>
#include "locklab/atomic-internal.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct lk_mcs_node {
	LK_ATOMIC(struct lk_mcs_node *) next;
	LK_ATOMIC(uint32_t) locked;	/* set to 1 by the predecessor when it hands the lock over */
} __attribute__((aligned(64)));	/* one line per node: the waiter spins on it alone */

struct lk_spin_mcs {
	LK_ATOMIC(struct lk_mcs_node *) tail;
};

#define LK_SPIN_MCS_INIT { NULL }

static inline void lk_spin_mcs_init(struct lk_spin_mcs *l)
{
	/* relaxed: initialisation, published by whatever hands `l` to other threads */
	atomic_store_explicit(&l->tail, NULL, memory_order_relaxed);
}

void lk_spin_mcs_lock_slow(struct lk_spin_mcs *l, struct lk_mcs_node *node, struct lk_mcs_node *prev);
int lk_spin_mcs_unlock_slow(struct lk_spin_mcs *l, struct lk_mcs_node *node);

/*
 * Acquires the lock using `node` (owned by the caller until the matching unlock returns). ACQUIRE:
 * pairs with the previous holder's unlock (either its handover store or its tail CAS).
 */
static inline void lk_spin_mcs_lock(struct lk_spin_mcs *l, struct lk_mcs_node *node)
{
	struct lk_mcs_node *prev;

	/* relaxed: published to the predecessor by the release exchange below */
	atomic_store_explicit(&node->next, NULL, memory_order_relaxed);
	atomic_store_explicit(&node->locked, 0, memory_order_relaxed);
	/*
	 * acq_rel: release publishes the node initialisation to the predecessor that will write
	 * node->locked; acquire pairs with the release CAS in unlock when prev == NULL (lock was free).
	 */
	prev = atomic_exchange_explicit(&l->tail, node, memory_order_acq_rel);
	if (__builtin_expect(prev == NULL, 1))
		return;
	lk_spin_mcs_lock_slow(l, node, prev);
}

/* 0 with the lock held (ACQUIRE) using `node`, or EBUSY when anybody holds it. Never spins. */
static inline int lk_spin_mcs_trylock(struct lk_spin_mcs *l, struct lk_mcs_node *node)
{
	struct lk_mcs_node *expect = NULL;

	atomic_store_explicit(&node->next, NULL, memory_order_relaxed);	/* relaxed: as in lock */
	/* acq_rel: as the exchange in lk_spin_mcs_lock(); only succeeds on a free lock. NULL -> node */
	return atomic_compare_exchange_strong_explicit(&l->tail, &expect, node, memory_order_acq_rel,
						       memory_order_relaxed) ? 0 : EBUSY;
}

/*
 * Releases the lock held with `node`. RELEASE. Returns 0, or EPERM when the lock is not held (a
 * repeated unlock while another thread holds it returns EPERM once the lock is seen free; see
 * "Misuse" above for what cannot be detected).
 */
static inline int lk_spin_mcs_unlock(struct lk_spin_mcs *l, struct lk_mcs_node *node)
{
	struct lk_mcs_node *expect = node;

	/* relaxed: only picks fast or slow path; the slow path re-reads `next` with acquire */
	if (__builtin_expect(atomic_load_explicit(&node->next, memory_order_relaxed) == NULL, 1) &&
	    /* release: pairs with the acquire exchange/CAS of the next locker that finds NULL */
	    atomic_compare_exchange_strong_explicit(&l->tail, &expect, NULL, memory_order_release,
						    memory_order_relaxed))
		return 0;
	return lk_spin_mcs_unlock_slow(l, node);
}

/*
 * Per-thread node convenience: the node comes from a small per-thread table (LK_SPIN_MCS_TLS_DEPTH
 * MCS locks held at once). lock returns 0, EDEADLK if this thread already holds `l` through these
 * calls, or ENOMEM when the table is full (nothing is locked then); trylock adds EBUSY; unlock
 * returns EPERM when this thread does not hold `l` through these calls. Ordering as above.
 */
#define LK_SPIN_MCS_TLS_DEPTH 4
int lk_spin_mcs_lock_tls(struct lk_spin_mcs *l);
int lk_spin_mcs_trylock_tls(struct lk_spin_mcs *l);
int lk_spin_mcs_unlock_tls(struct lk_spin_mcs *l);

static inline bool lk_spin_mcs_is_locked(struct lk_spin_mcs *l)
{
	/* relaxed: a snapshot that orders nothing */
	return atomic_load_explicit(&l->tail, memory_order_relaxed) != NULL;
}

#ifdef __cplusplus
}
#endif
#endif /* LOCKLAB_SPIN_MCS_H */
