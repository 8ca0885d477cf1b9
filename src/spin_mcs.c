/* SPDX-License-Identifier: MIT */
/*
 * src/spin_mcs.c - MCS lock slow paths and the per-thread node table (the queue layout, invariants and
 * fast paths are in include/locklab/spin_mcs.h).
 *
 * Waiter:   linked behind prev:   prev->next = node (release)   ... spin on node->locked (acquire)
 * Unlocker: successor present:    node->next = NULL, then next->locked = 1 (release)
 *           successor linking in: tail != node but node->next still NULL: wait for the link, then hand
 *                                 over (the window between a waiter's tail xchg and its prev->next store)
 *           not held (misuse):    tail == NULL, seen before or while waiting for a link: EPERM
 *
 * Every unlock leaves node->next == NULL: the uncontended one found it NULL and nobody could link in
 * (the tail CAS succeeded), the contended one clears it before handing over. So a repeated unlock
 * with the same node can never reach a successor's node: it fails the tail CAS (tail != node) and
 * waits here until it sees the tail NULL, then returns EPERM.
 */
#include <errno.h>
#include <stddef.h>

#include "locklab/relax.h"
#include "locklab/spin_mcs.h"

__attribute__((noinline)) void lk_spin_mcs_lock_slow(struct lk_spin_mcs *l, struct lk_mcs_node *node,
						    struct lk_mcs_node *prev)
{
	unsigned spins = 0;

	(void)l;
	/*
	 * release: publishes our node's initialisation (next = NULL, locked = 0) to the predecessor,
	 * which reads prev->next with acquire in lk_spin_mcs_unlock_slow() before writing node->locked.
	 */
	atomic_store_explicit(&prev->next, node, memory_order_release);
	/* acquire: pairs with the release store of locked = 1 by the predecessor's unlock */
	while (!atomic_load_explicit(&node->locked, memory_order_acquire))
		lk_spin_wait(&spins);
}

__attribute__((noinline)) int lk_spin_mcs_unlock_slow(struct lk_spin_mcs *l, struct lk_mcs_node *node)
{
	struct lk_mcs_node *next;
	unsigned spins = 0;

	/* acquire: pairs with the release store of prev->next in the successor's lk_spin_mcs_lock_slow() */
	next = atomic_load_explicit(&node->next, memory_order_acquire);
	while (!next) {
		/*
		 * relaxed: NULL can only mean "not held" (misuse): a held lock's tail is never NULL, and
		 * coherence keeps the holder from reading a NULL older than its own exchange. The check
		 * repeats while we wait: a node whose holder released it already (a repeated unlock, which
		 * finds next == NULL, see below) waits here until it sees the lock free, never for a link
		 * that will not come.
		 */
		if (atomic_load_explicit(&l->tail, memory_order_relaxed) == NULL)
			return EPERM;
		/* tail moved past us: a successor exchanged the tail and is about to link in */
		lk_spin_wait(&spins);
		next = atomic_load_explicit(&node->next, memory_order_acquire);	/* acquire: as above */
	}
	/*
	 * The successor linked in (it never touches our node again) and nobody else writes node->next
	 * until our next lock: clear it, so that the node leaves every unlock with next == NULL. A
	 * repeated unlock with it then finds no successor to hand over to (it returns EPERM above)
	 * instead of storing locked = 1 into the old successor's node, which may by now be queued on
	 * another lock. relaxed: our own node, read next only by ourselves.
	 */
	atomic_store_explicit(&node->next, NULL, memory_order_relaxed);
	/* release: our critical section happens-before the successor's (its acquire load of locked) */
	atomic_store_explicit(&next->locked, 1, memory_order_release);
	return 0;
}

/* ---- per-thread nodes ---------------------------------------------------------------------------- */

struct mcs_tls {
	struct lk_mcs_node node[LK_SPIN_MCS_TLS_DEPTH];
	struct lk_spin_mcs *lock[LK_SPIN_MCS_TLS_DEPTH];	/* NULL = node free */
};

static __thread struct mcs_tls mcs_tls;

static int mcs_tls_get(struct lk_spin_mcs *l)
{
	int free_idx = -1;

	for (int i = 0; i < LK_SPIN_MCS_TLS_DEPTH; i++) {
		if (mcs_tls.lock[i] == l)
			return -EDEADLK;
		if (!mcs_tls.lock[i] && free_idx < 0)
			free_idx = i;
	}
	return free_idx < 0 ? -ENOMEM : free_idx;
}

int lk_spin_mcs_lock_tls(struct lk_spin_mcs *l)
{
	int i = mcs_tls_get(l);

	if (i < 0)
		return -i;
	mcs_tls.lock[i] = l;
	lk_spin_mcs_lock(l, &mcs_tls.node[i]);
	return 0;
}

int lk_spin_mcs_trylock_tls(struct lk_spin_mcs *l)
{
	int i = mcs_tls_get(l);

	if (i < 0)
		return -i;
	if (lk_spin_mcs_trylock(l, &mcs_tls.node[i]))
		return EBUSY;
	mcs_tls.lock[i] = l;
	return 0;
}

int lk_spin_mcs_unlock_tls(struct lk_spin_mcs *l)
{
	for (int i = 0; i < LK_SPIN_MCS_TLS_DEPTH; i++) {
		if (mcs_tls.lock[i] == l) {
			int err = lk_spin_mcs_unlock(l, &mcs_tls.node[i]);

			mcs_tls.lock[i] = NULL;
			return err;
		}
	}
	return EPERM;
}
