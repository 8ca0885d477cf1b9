/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/spinlocks.c - locklab's four spinlocks as registry entries of opstype `lock` (family
 * `spinlock`): lab_spin_ttas_ops, lab_spin_ticket_ops, lab_spin_mcs_ops, lab_qspinlock_ops.
 *
 * Each state block is the lock itself (one line allocated by the caller). The MCS entry takes its queue
 * node from the per-thread table of lk_spin_mcs_lock_tls(), so a thread can hold up to
 * LK_SPIN_MCS_TLS_DEPTH MCS locks at once through this adapter. An unlock that the lock rejects
 * (EPERM: the lab released a lock it did not hold) is a harness bug: it aborts with a message rather
 * than letting a broken measurement continue.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "locklab/qspinlock.h"
#include "locklab/spin_mcs.h"
#include "locklab/spin_ticket.h"
#include "locklab/spin_ttas.h"

static __attribute__((noreturn, cold)) void misuse(const char *what, int err)
{
	fprintf(stderr, "locklab: %s: %s\n", what, strerror(err));
	abort();
}

static int ttas_init(void *l) { lk_spin_ttas_init(l); return 0; }
static void ttas_lock(void *l) { lk_spin_ttas_lock(l); }
static int ttas_trylock(void *l) { return lk_spin_ttas_trylock(l); }
static void ttas_unlock(void *l)
{
	int err = lk_spin_ttas_unlock(l);

	if (err)
		misuse("spin_ttas unlock", err);
}

static int ticket_init(void *l) { lk_spin_ticket_init(l); return 0; }
static void ticket_lock(void *l) { lk_spin_ticket_lock(l); }
static int ticket_trylock(void *l) { return lk_spin_ticket_trylock(l); }
static void ticket_unlock(void *l)
{
	int err = lk_spin_ticket_unlock(l);

	if (err)
		misuse("spin_ticket unlock", err);
}

static int mcs_init(void *l) { lk_spin_mcs_init(l); return 0; }
static void mcs_lock(void *l)
{
	int err = lk_spin_mcs_lock_tls(l);

	if (err)
		misuse("spin_mcs lock (per-thread node table)", err);
}
static int mcs_trylock(void *l)
{
	int err = lk_spin_mcs_trylock_tls(l);

	if (err && err != EBUSY)
		misuse("spin_mcs trylock (per-thread node table)", err);
	return err;
}
static void mcs_unlock(void *l)
{
	int err = lk_spin_mcs_unlock_tls(l);

	if (err)
		misuse("spin_mcs unlock", err);
}

static int qspin_init(void *l) { lk_qspin_init(l); return 0; }
static void qspin_lock(void *l) { lk_qspin_lock(l); }
static int qspin_trylock(void *l) { return lk_qspin_trylock(l); }
static void qspin_unlock(void *l)
{
	int err = lk_qspin_unlock(l);

	if (err)
		misuse("qspinlock unlock", err);
}

const struct lab_lock_ops lab_spin_ttas_ops = {
	.size = sizeof(struct lk_spin_ttas),
	.init = ttas_init,
	.lock = ttas_lock,
	.trylock = ttas_trylock,
	.unlock = ttas_unlock,
	.flags = LAB_LOCK_SPINS,
};

const struct lab_lock_ops lab_spin_ticket_ops = {
	.size = sizeof(struct lk_spin_ticket),
	.init = ticket_init,
	.lock = ticket_lock,
	.trylock = ticket_trylock,
	.unlock = ticket_unlock,
	.flags = LAB_LOCK_SPINS | LAB_LOCK_FIFO,
};

const struct lab_lock_ops lab_spin_mcs_ops = {
	.size = sizeof(struct lk_spin_mcs),
	.init = mcs_init,
	.lock = mcs_lock,
	.trylock = mcs_trylock,
	.unlock = mcs_unlock,
	.flags = LAB_LOCK_SPINS | LAB_LOCK_FIFO | LAB_LOCK_THREAD_NODES,
};

const struct lab_lock_ops lab_qspinlock_ops = {
	.size = sizeof(struct lk_qspinlock),
	.init = qspin_init,
	.lock = qspin_lock,
	.trylock = qspin_trylock,
	.unlock = qspin_unlock,
	.flags = LAB_LOCK_SPINS | LAB_LOCK_FIFO,
};
