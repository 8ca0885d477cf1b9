/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/peer_ck.c - Concurrency Kit's spinlocks (libck-dev, <ck_spinlock.h>) as lab locks:
 * ck_mcs (ck_spinlock_mcs), ck_ticket (ck_spinlock_ticket), ck_fas (ck_spinlock_fas).
 *
 * Compiled to nothing unless cmake/peers.cmake found <ck_spinlock.h> and this is not a sanitizer
 * build (LAB_HAVE_CK). CK's spinlocks are header-only inline code: nothing is linked.
 *
 * Layout: each lab lock is one zeroed, 64-byte-aligned block holding the CK object at offset 0.
 *
 *	ck_ticket:  [ u64 value: next ticket (high 32) | now serving (low 32) ]   x86-64 variant
 *	ck_fas:     [ unsigned value: 0 free, 1 held ]  test-and-test-and-set, unfair
 *	ck_mcs:     [ ck_spinlock_mcs_t tail ]  NULL = free; else the last queued node
 *
 * MCS needs a queue node per acquisition, owned by the waiter/holder until its unlock. CK leaves
 * the node to the caller; the lab's lock()/unlock() verbs have nowhere to put it, so each thread
 * keeps LAB_CK_NODES nodes in thread-local storage, each tagged with the lock it is queued on:
 *
 *	ck_slots[] (per thread)     lock == NULL: free slot
 *	+------+-----------------+  lock == l   : this thread waits for or holds l with this node
 *	| lock | mcs node        |
 *	+------+-----------------+
 *
 *	free --lock(l)/trylock ok--> tagged l (queued, then holding) --unlock(l)--> free
 *
 * Restriction (documented in docs/peers.md): a thread may hold at most LAB_CK_NODES ck_mcs locks at
 * once, and must unlock from the thread that locked; a violation prints why and aborts, since
 * carrying on would corrupt the queue. The slot table is private to its thread: plain accesses, no
 * atomics. All memory ordering lives inside CK: its lock paths end in ck_pr_fence_lock() (acquire,
 * pairs with the previous holder's ck_pr_fence_unlock()), its unlock paths begin with
 * ck_pr_fence_unlock() (release, pairs with the next holder's ck_pr_fence_lock()).
 */
#include "lab.h"

#ifndef LAB_HAVE_CK
#define LAB_HAVE_CK 0
#endif

#if LAB_HAVE_CK

#include <errno.h>
#include <stdlib.h>

#include <ck_spinlock.h>

/* ---- ck_ticket ------------------------------------------------------------------------------- */

static int ck_ticket_init(void *l)
{
	ck_spinlock_ticket_init(l);
	return 0;
}

static void ck_ticket_lock(void *l)
{
	ck_spinlock_ticket_lock(l);
}

static int ck_ticket_trylock(void *l)
{
	return ck_spinlock_ticket_trylock(l) ? 0 : EBUSY;
}

static void ck_ticket_unlock(void *l)
{
	ck_spinlock_ticket_unlock(l);
}

const struct lab_lock_ops lab_ck_ticket_ops = {
	.size = LAB_CACHELINE,
	.init = ck_ticket_init,
	.lock = ck_ticket_lock,
	.trylock = ck_ticket_trylock,
	.unlock = ck_ticket_unlock,
	.flags = LAB_LOCK_SPINS | LAB_LOCK_FIFO,
};

/* ---- ck_fas ---------------------------------------------------------------------------------- */

static int ck_fas_init(void *l)
{
	ck_spinlock_fas_init(l);
	return 0;
}

static void ck_fas_lock(void *l)
{
	ck_spinlock_fas_lock(l);
}

static int ck_fas_trylock(void *l)
{
	return ck_spinlock_fas_trylock(l) ? 0 : EBUSY;
}

static void ck_fas_unlock(void *l)
{
	ck_spinlock_fas_unlock(l);
}

const struct lab_lock_ops lab_ck_fas_ops = {
	.size = LAB_CACHELINE,
	.init = ck_fas_init,
	.lock = ck_fas_lock,
	.trylock = ck_fas_trylock,
	.unlock = ck_fas_unlock,
	.flags = LAB_LOCK_SPINS,
};

/* ---- ck_mcs ---------------------------------------------------------------------------------- */

#define LAB_CK_NODES 8

struct ck_slot {
	void *lock;				/* the lock this node is queued on, NULL = free */
	ck_spinlock_mcs_context_t node;
};

/* Thread-private: only the owning thread reads or writes its slots (CK writes node fields). */
static __thread struct ck_slot ck_slots[LAB_CK_NODES];

static __attribute__((noreturn, cold)) void ck_misuse(const char *what)
{
	fprintf(stderr, "locklab: ck_mcs: %s (restriction of the lab adapter, see docs/peers.md)\n",
		what);
	abort();
}

static struct ck_slot *ck_slot_get(void *l)
{
	for (int i = 0; i < LAB_CK_NODES; i++) {
		if (!ck_slots[i].lock) {
			ck_slots[i].lock = l;
			return &ck_slots[i];
		}
	}
	ck_misuse("one thread holds or waits for more than 8 ck_mcs locks");
}

static struct ck_slot *ck_slot_find(void *l)
{
	for (int i = 0; i < LAB_CK_NODES; i++)
		if (ck_slots[i].lock == l)
			return &ck_slots[i];
	ck_misuse("unlock of a lock this thread does not hold");
}

static int ck_mcs_init(void *l)
{
	ck_spinlock_mcs_init(l);
	return 0;
}

static void ck_mcs_lock(void *l)
{
	struct ck_slot *s = ck_slot_get(l);

	ck_spinlock_mcs_lock(l, &s->node);
}

static int ck_mcs_trylock(void *l)
{
	struct ck_slot *s = ck_slot_get(l);

	if (ck_spinlock_mcs_trylock(l, &s->node))
		return 0;
	/* Not queued: the CAS on the tail failed, so no other thread ever saw this node. */
	s->lock = NULL;
	return EBUSY;
}

static void ck_mcs_unlock(void *l)
{
	struct ck_slot *s = ck_slot_find(l);

	ck_spinlock_mcs_unlock(l, &s->node);
	/*
	 * The successor (if any) was handed the lock through its own node, and our node left the
	 * queue inside ck_spinlock_mcs_unlock: free to reuse.
	 */
	s->lock = NULL;
}

const struct lab_lock_ops lab_ck_mcs_ops = {
	.size = LAB_CACHELINE,
	.init = ck_mcs_init,
	.lock = ck_mcs_lock,
	.trylock = ck_mcs_trylock,
	.unlock = ck_mcs_unlock,
	.flags = LAB_LOCK_SPINS | LAB_LOCK_FIFO | LAB_LOCK_THREAD_NODES,
};

#endif /* LAB_HAVE_CK */
