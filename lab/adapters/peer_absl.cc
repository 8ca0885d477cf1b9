/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/peer_absl.cc - Abseil's absl::Mutex (Debian libabsl-dev) behind C entry points;
 * lab/adapters/peer_ops.c turns them into lab_lock_ops (lab.h is C-only: <stdatomic.h>).
 *
 * Compiled to nothing unless cmake/peers.cmake found absl::synchronization and this is not a
 * sanitizer build (LAB_HAVE_ABSL).
 *
 * Layout: each lab lock is one zeroed, 64-byte-aligned block of LAB_PEER_STATE bytes; absl::Mutex
 * (one intptr_t word: reader count / writer / waiter-queue pointer and flag bits) is constructed in
 * place at offset 0 by init and destroyed in place by destroy.
 *
 *	UNLOCKED --Lock()/TryLock() ok--> HELD --Unlock()--> UNLOCKED (wakes a queued waiter if any)
 *
 * absl::Mutex spins briefly on contention, then queues the thread on a per-mutex list and blocks it
 * on a futex (absl's PerThreadSem); it is not FIFO (a running thread may barge). Ordering is absl's
 * own: Lock()/TryLock() end with an acquire CAS that pairs with Unlock()'s release CAS. The adapter
 * uses absl's defaults: no deadlock detection or invariant debugging is enabled (those are debug-build
 * features of absl and cost extra bookkeeping per acquisition).
 */
#ifndef LAB_HAVE_ABSL
#define LAB_HAVE_ABSL 0
#endif

#if LAB_HAVE_ABSL

#include <cerrno>
#include <new>

#include <absl/synchronization/mutex.h>

#include "peer_cxx.h"

static_assert(sizeof(absl::Mutex) <= LAB_PEER_STATE && alignof(absl::Mutex) <= LAB_PEER_ALIGN,
	      "absl::Mutex does not fit the lab's lock block");

static inline absl::Mutex *mu(void *l)
{
	return static_cast<absl::Mutex *>(l);
}

extern "C" int lab_absl_init(void *l)
{
	new (l) absl::Mutex();
	return 0;
}

extern "C" void lab_absl_destroy(void *l)
{
	mu(l)->~Mutex();
}

extern "C" void lab_absl_lock(void *l)
{
	mu(l)->Lock();
}

extern "C" int lab_absl_trylock(void *l)
{
	return mu(l)->TryLock() ? 0 : EBUSY;
}

extern "C" void lab_absl_unlock(void *l)
{
	mu(l)->Unlock();
}

#endif /* LAB_HAVE_ABSL */
