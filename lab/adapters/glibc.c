/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/glibc.c - glibc's pthread mutexes as baselines: what programs use today.
 *
 * Data layout: the state block is one pthread_mutex_t (40 bytes on x86-64 glibc), nothing else; its
 * lock word is glibc's own (0 free, 1 locked, 2 locked with waiters for the normal and adaptive kinds;
 * the owner's TID plus FUTEX_WAITERS/FUTEX_OWNER_DIED bits for the PI kind).
 *
 *   glibc_normal    PTHREAD_MUTEX_NORMAL attributes (the default mutex): a CAS fast path, then
 *                   FUTEX_WAIT/FUTEX_WAKE. No spinning.
 *   glibc_adaptive  PTHREAD_MUTEX_ADAPTIVE_NP: spins a bounded number of trylocks (glibc.mutex.spin_count
 *                   tunable, default 100, adapted per mutex) before sleeping like the normal kind. It
 *                   spins whether or not the owner is running.
 *   glibc_pi        PTHREAD_PRIO_INHERIT: the word holds the owner's TID; a contended lock calls
 *                   FUTEX_LOCK_PI and the kernel queues the waiter on an rt_mutex, boosts the owner and
 *                   (rtmutex adaptive spin-wait, Linux 5.15+) spins in the kernel while the owner is on
 *                   a CPU. Every contended unlock is a FUTEX_UNLOCK_PI system call that hands the lock
 *                   to the top waiter.
 *
 * Ordering: pthread_mutex_lock/trylock acquire and pthread_mutex_unlock releases (POSIX 4.12 "memory
 * synchronization"); TSan intercepts all three, so sanitizer builds see the real happens-before edges.
 *
 * Errors: initialisation failures are returned as errno values (e.g. ENOTSUP where the PI protocol is
 * unsupported). lock/unlock cannot fail for a correctly used mutex of these kinds; if they do, the
 * adapter prints the error and aborts, since continuing would silently measure a broken lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"

static int glibc_init_kind(void *l, int type, int protocol)
{
	pthread_mutexattr_t a;
	int err;

	err = pthread_mutexattr_init(&a);
	if (err)
		return err;
	err = pthread_mutexattr_settype(&a, type);
	if (!err)
		err = pthread_mutexattr_setprotocol(&a, protocol);
	if (!err)
		err = pthread_mutex_init(l, &a);
	pthread_mutexattr_destroy(&a);
	return err;
}

static int glibc_normal_init(void *l)
{
	return glibc_init_kind(l, PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_NONE);
}

static int glibc_adaptive_init(void *l)
{
	return glibc_init_kind(l, PTHREAD_MUTEX_ADAPTIVE_NP, PTHREAD_PRIO_NONE);
}

static int glibc_pi_init(void *l)
{
	return glibc_init_kind(l, PTHREAD_MUTEX_NORMAL, PTHREAD_PRIO_INHERIT);
}

static void glibc_destroy(void *l)
{
	pthread_mutex_destroy(l);
}

static __attribute__((noreturn, cold)) void glibc_fail(const char *what, int err)
{
	fprintf(stderr, "locklab-bench: %s failed: %s\n", what, strerror(err));
	abort();
}

static void glibc_lock(void *l)
{
	int err = pthread_mutex_lock(l);

	if (__builtin_expect(err, 0))
		glibc_fail("pthread_mutex_lock", err);
}

static int glibc_trylock(void *l)
{
	int err = pthread_mutex_trylock(l);

	if (err == 0 || err == EBUSY)
		return err;
	glibc_fail("pthread_mutex_trylock", err);
}

static void glibc_unlock(void *l)
{
	int err = pthread_mutex_unlock(l);

	if (__builtin_expect(err, 0))
		glibc_fail("pthread_mutex_unlock", err);
}

#define GLIBC_OPS(sym, initfn)				\
	const struct lab_lock_ops sym = {		\
		.size = sizeof(pthread_mutex_t),	\
		.init = initfn,				\
		.destroy = glibc_destroy,		\
		.lock = glibc_lock,			\
		.trylock = glibc_trylock,		\
		.unlock = glibc_unlock,			\
		.flags = LAB_LOCK_PTHREAD,		\
	}

GLIBC_OPS(lab_glibc_normal_ops, glibc_normal_init);
GLIBC_OPS(lab_glibc_adaptive_ops, glibc_adaptive_init);
GLIBC_OPS(lab_glibc_pi_ops, glibc_pi_init);
